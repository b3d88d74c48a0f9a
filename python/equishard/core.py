"""The binding's calls: measure, plan, simulate, validate, validate_tensor.

Conventions (the header's, carried over):
- every nonzero es_status raises Error (.status is its name, .message es_errmsg);
- each call makes and frees its own es_context;
- objects that hold a C handle (CostTable, Plan, SimulateResult, ValidateResult)
  free it on close(), at the end of a `with` block, or when garbage-collected;
- settings are keyword arguments named as the header's settings fields
  (es_plan_settings, es_cost_model, ...); enum fields take their names as strings;
- every argument goes through _args first: a value the C type cannot hold
  exactly raises TypeError/ValueError naming the parameter, before any C call;
- each object that holds a C handle has a lock that every C call on that handle
  (close() included) holds: one object shared by threads is used by one at a time.
"""
import array
import collections.abc
import contextlib
import ctypes
import ctypes.util
import dataclasses
import itertools
import os
import threading
from ctypes import byref, c_char_p, c_int32, c_size_t, c_void_p

import typing

from . import _args, _ffi
from ._ffi import lib
from ._signature import PathArg, defaults_of, lib_defaults, settings_api

if typing.TYPE_CHECKING:
    from .recipe import Recipe
    from .text import Tokenizer

class _Enums(collections.abc.Mapping):
    """{field: {name: value}} for every named enum of the library (es_enum_field,
    es_enum_name: "mode", "remainder", "compress", "loader", "device", "on_error",
    "check", "dtype", "kind"), read on first use so that importing needs no library."""

    def __init__(self):
        self._table = None

    def _load(self):
        if self._table is None:
            L, table, e = lib(), {}, 0
            while L.es_enum_field(e):
                table[_str(L.es_enum_field(e))] = {_str(L.es_enum_name(e, v)): v
                                                   for v in range(L.es_enum_size(e))}
                e += 1
            self._table = table
        return self._table

    def __getitem__(self, field):
        return self._load()[field]

    def __iter__(self):
        return iter(self._load())

    def __len__(self):
        return len(self._load())

    def name(self, field, value):
        """The name of an enum value, or None when it has none."""
        return next((n for n, v in self[field].items() if v == value), None)


ENUMS = _Enums()


class Error(Exception):
    """A call into libequishard failed: .code (es_status value), .status (its
    name, e.g. "ES_ERR_FORMAT") and .message (es_errmsg: file, member/row, problem)."""

    def __init__(self, code, message):
        self.code = code
        self.status = _str(lib().es_status_name(code))
        self.message = message
        super().__init__(f"{self.status}: {message}")


def _str(b):
    return None if b is None else b.decode("utf-8", "surrogateescape")


def _strings(items, name="inputs"):
    """A C array of char* for a list of paths (the array keeps them alive)."""
    items = _args.paths(name, items)
    arr = (c_char_p * max(len(items), 1))(*items)
    return arr, len(items)


class _Context:
    """One es_context for one call: `with _Context() as ctx: ctx.check(rc)`.
    The library reads no environment: the EQUISHARD_* settings docs/USAGE.md
    lists are mapped from os.environ here, as the command line maps its own."""

    def __enter__(self):
        self.ptr = lib().es_context_new()
        if not self.ptr:
            raise MemoryError("es_context_new")
        # as the command line takes them: unset or anything but "0" on; a
        # CPU_ISA too long the best
        for name in ("huge_pages", "pages_ahead", "direct_io", "cpu_isa"):
            value = os.environ.get("EQUISHARD_" + name.upper())
            lib().es_context_set(self.ptr, name.encode(), None if value is None else os.fsencode(value))
        return self

    def check(self, rc):
        if rc != 0:
            raise Error(rc, _str(lib().es_errmsg(self.ptr)))

    def __exit__(self, *exc):
        lib().es_context_free(self.ptr)


def _listed(fn, end):
    """[fn(0), fn(1), ...] up to the first that returns `end` (the header's "past
    the last": NULL, ES_NO_ROW)."""
    out = []
    while True:
        v = fn(len(out))
        if v == end:
            return out
        out.append(v)


# struct fields the records leave out: the objects carry them as attributes of
# their own (Plan.token_note, SimulateResult.token_note, ValidateResult.token_note)
_NOT_RECORDED = frozenset({"token_note"})


def _record(name, struct, extra=()):
    """A frozen dataclass with the ctypes structure's fields (strings decoded) plus extra."""
    fields = [(f, object) for f, _ in struct._fields_ if f not in _NOT_RECORDED]
    fields += [(f, object) for f in extra]
    return dataclasses.make_dataclass(name, fields, frozen=True)


def _values(s, **extra):
    out = {}
    for f, t in s._fields_:
        if f in _NOT_RECORDED:
            continue
        v = getattr(s, f)
        out[f] = _str(v) if t is c_char_p else v
    out.update(extra)
    return out


_MODEL_PATHS = {}  # cost_model= paths: settings (and plans made with them) point at these bytes


def _apply(settings, kwargs, owner=None):
    """Sets header-named settings (and their cost-model fields) from kwargs, each
    value converted for its field's C type by _args.field (TypeError/ValueError
    naming the field; enum fields by name or value)."""
    fields = {f: t for f, t in settings._fields_ if f != "reserved"}
    model = {f: t for f, t in _ffi.CostModel._fields_
             if f not in ("reserved", "source", "source_digest")} if "model" in fields else {}
    if "cost_model" in kwargs and model:  # first: the other fields given override it
        kwargs = dict(kwargs)
        path = _args.path(f"{owner}: cost_model" if owner else "cost_model", kwargs.pop("cost_model"))
        path = _MODEL_PATHS.setdefault(path, path)  # model.source points into it, for good
        with _Context() as ctx:
            ctx.check(lib().es_cost_model_read(ctx.ptr, path, byref(settings.model)))
    for k, v in kwargs.items():
        if k in fields and k != "model" and fields[k] is not c_void_p and k != "progress":
            setattr(settings, k, _args.field(owner, k, fields[k], v, ENUMS))
        elif k in model:
            setattr(settings.model, k, _args.field(owner, k, model[k], v, ENUMS))
        else:
            raise TypeError(f"{owner + ': ' if owner else ''}unknown setting {k!r}")
    return settings


class _Handle:
    """Owns one C object; freed once, by close(), `with`, or garbage collection.
    Every C call on the handle is made inside `with self._use() as p:`, which
    holds the object's lock and raises ValueError once it is closed; close()
    takes the same lock, so a close from another thread waits for the call in
    progress instead of freeing what it is using, and two threads sharing one
    object take turns (the C objects are not safe for concurrent calls)."""
    _free = None

    def __init__(self, ptr):
        self._lock = threading.RLock()
        self._ptr = ptr

    @contextlib.contextmanager
    def _use(self):
        with self._lock:
            if not self._ptr:
                raise ValueError(f"{type(self).__name__} is closed")
            yield self._ptr

    @property
    def _p(self):
        if not self._ptr:
            raise ValueError(f"{type(self).__name__} is closed")
        return self._ptr

    def close(self):
        lock = getattr(self, "_lock", None)
        if lock is None:  # __init__ never ran to the end
            return
        with lock:
            ptr, self._ptr = self._ptr, None
            if ptr:
                getattr(lib(), self._free)(ptr)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown: the library may be gone
            pass


# ---- the cost table -----------------------------------------------------------

CostRow = _record("CostRow", _ffi.CostRow)
CostRow.flag_names = property(lambda r: [_str(lib().es_flag_name(b)) for b in range(32)
                                         if r.flags >> b & 1 and lib().es_flag_name(b)])
CostRow.__doc__ = "One es_cost_row: key, shard, pos, sample_rate, ... (docs/COST_TABLE.md)."


class CostTable(_Handle):
    """An es_cost_table: len(), rows by index or iteration (CostRow), skips,
    write(path), CostTable.read(path). Plans built on it keep it alive."""
    _free = "es_cost_table_free"

    def __init__(self, ptr):
        super().__init__(ptr)
        self._pins = 0  # plans that borrow the table
        self._closing = False

    @classmethod
    def read(cls, path):
        b = _args.path("CostTable.read: path", path)
        out = c_void_p()
        with _Context() as ctx:
            ctx.check(lib().es_cost_table_read(ctx.ptr, b, byref(out)))
        return cls(out.value)

    def write(self, path):
        """TSV, zstd-compressed when path ends in .zst; atomic (es_cost_table_write)."""
        b = _args.path("CostTable.write: path", path)
        with self._use() as p, _Context() as ctx:
            ctx.check(lib().es_cost_table_write(ctx.ptr, p, b))

    def compress_ahead(self):
        """es_cost_table_compress_ahead: starts compressing the table, as a batch
        plan's costs.tsv.zst, on a thread of its own, so that Plan.write finds it
        done instead of compressing it then (what `equishard plan --mode batch`
        does while it builds the plan). Costs another core and about a seventh
        of the table's size in memory until the table is closed: call it only
        when a batch plan of this table will be written."""
        with self._use() as p, _Context() as ctx:
            ctx.check(lib().es_cost_table_compress_ahead(ctx.ptr, p))

    def __len__(self):
        with self._use() as p:
            return lib().es_cost_table_size(p)

    def __getitem__(self, i):
        i = _args.integer("CostTable index", i, _args.INT64)
        with self._use() as p:
            n = lib().es_cost_table_size(p)
            if i < 0:
                i += n
            if not 0 <= i < n:
                raise IndexError(i)
            row = _ffi.CostRow()
            lib().es_cost_table_row(p, i, byref(row))
            return CostRow(**_values(row))

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    @property
    def skips(self):
        """Lines "FILE: MEMBER: PROBLEM" that on_error="skip" left out."""
        L = lib()
        with self._use() as p:
            return [_str(s) for s in _listed(lambda i: L.es_cost_table_skip(p, i), None)]

    def shard_file(self, shard):
        """(size, mtime_ns) of the shard file as measure found it (the table's
        shard_size and shard_mtime), or None when the table does not record it
        (raw-list and Kaldi rows, older tables)."""
        size, sec, ns = ctypes.c_uint64(), ctypes.c_int64(), ctypes.c_uint32()
        name = _args.path("CostTable.shard_file: shard", shard)
        with self._use() as p:
            if not lib().es_cost_table_shard_file(p, name, byref(size), byref(sec), byref(ns)):
                return None
        return size.value, sec.value * 1_000_000_000 + ns.value

    def close(self):
        with self._lock:
            self._closing = True
            if not self._pins:
                super().close()

    def _pin(self):
        with self._use():  # raises when closed
            self._pins += 1

    def _unpin(self):
        with self._lock:
            self._pins -= 1
            if self._closing and not self._pins:
                super().close()


def _table_from(fn, owner, inputs, threads, root, on_error, hash, tokenizer=None):
    s = _ffi.MeasureSettings()
    lib().es_measure_defaults(byref(s))
    _apply(s, dict(threads=threads, root=root, on_error=on_error, hash=_args.flag(f"{owner}: hash", hash)),
           owner)
    from .text import Tokenizer  # (text imports this module)
    if tokenizer is not None and not isinstance(tokenizer, Tokenizer):
        raise TypeError(f"{owner}: tokenizer: expected an equishard.Tokenizer or None, got "
                        f"{type(tokenizer).__name__}")
    arr, n = _strings(inputs, f"{owner}: inputs")
    out = c_void_p()
    # the tokenizer, if any, is held (alive, and used by this call alone) throughout
    with (tokenizer._use() if tokenizer is not None else contextlib.nullcontext(None)) as tok, \
            _Context() as ctx:
        s.tokenizer = tok
        ctx.check(fn(ctx.ptr, byref(s), arr, n, byref(out)))
    return CostTable(out.value)


_MEASURE_GROUPS = [("es_measure_settings", _ffi.MeasureSettings, {})]
_measure_defaults = defaults_of(lib_defaults((_ffi.MeasureSettings, "es_measure_defaults", ())))
Paths = typing.Union[PathArg, typing.Iterable[PathArg]]


@settings_api(_MEASURE_GROUPS, _measure_defaults, cost_model=False)
def measure(lists: Paths, threads: int = 0, root: typing.Optional[PathArg] = None,
            on_error: typing.Union[str, int] = "fail", hash: typing.Union[bool, int] = False,
            tokenizer: "typing.Optional[Tokenizer]" = None,
            recipe: "typing.Union[None, Recipe, PathArg]" = None, *,
            utt_emb: typing.Optional[PathArg] = None, spk_emb: typing.Optional[PathArg] = None,
            utt_keys: typing.Optional[PathArg] = None, spk_keys: typing.Optional[PathArg] = None,
            speech_tokens: typing.Optional[PathArg] = None) -> "CostTable":
    """es_measure over shard lists, shards, raw lists or Kaldi dirs -> CostTable;
    with tokenizer (an equishard.Tokenizer) every row's text_tokens is counted;
    recipe (an equishard.Recipe or its yaml's path): its tokenizer, when none is given.
    threads 0: every core (`equishard measure -j`); on_error "fail" or "skip".
    utt_emb/spk_emb (with utt_keys/spk_keys for .npy; root also resolves
    inside their lists): the rows' utt_emb/spk_emb flags
    (es_cost_table_mark_embeddings, --utt-emb/--spk-emb); speech_tokens:
    utt2speech_token.pt's counts (--speech-tokens)."""
    lists = _args.paths("measure: lists", lists)
    tokenizer = _recipe.tokenizer_for(_recipe.as_recipe(recipe), lists, tokenizer)
    src = _apply(_ffi.EmbSources(), {k: v for k, v in (("utt_emb", utt_emb), ("spk_emb", spk_emb),
                                                       ("utt_keys", utt_keys),
                                                       ("spk_keys", spk_keys), ("root", root))
                                     if v is not None}, "measure")
    tokens = _args.path("measure: speech_tokens", speech_tokens, optional=True)
    table = _table_from(lib().es_measure, "measure", lists, threads, root, on_error, hash,
                        tokenizer)
    try:
        with table._use() as t, _Context() as ctx:
            if src.utt_emb or src.spk_emb:  # before the speech tokens, as the CLI
                ctx.check(lib().es_cost_table_mark_embeddings(ctx.ptr, t, byref(src)))
            if tokens is not None:
                ctx.check(lib().es_cost_table_set_speech_tokens(ctx.ptr, t, tokens, None))
    except BaseException:
        table.close()
        raise
    return table


@settings_api(_MEASURE_GROUPS, _measure_defaults, cost_model=False)
def load(inputs: Paths, threads: int = 0, root: typing.Optional[PathArg] = None,
         on_error: typing.Union[str, int] = "fail", hash: typing.Union[bool, int] = False,
         tokenizer: "typing.Optional[Tokenizer]" = None,
         recipe: "typing.Union[None, Recipe, PathArg]" = None) -> "CostTable":
    """es_load_inputs: cost tables are read, anything else measured -> CostTable."""
    inputs = _args.paths("load: inputs", inputs)
    tokenizer = _recipe.tokenizer_for(_recipe.as_recipe(recipe), inputs, tokenizer)
    return _table_from(lib().es_load_inputs, "load", inputs, threads, root, on_error, hash,
                       tokenizer)


def _table(t, owner="table", recipe=None, measure=None, speech_tokens=None):
    """A CostTable and whether we made it (from paths, measured with the measure
    settings given: threads, root, on_error, hash, tokenizer, as the CLI's
    measure flags); speech_tokens (the CLI's --speech-tokens) set on it either way."""
    tokens = _args.path(f"{owner}: speech_tokens", speech_tokens, optional=True)
    owns = not isinstance(t, CostTable)
    if owns:
        t = load(_args.paths(f"{owner}: table", t), recipe=recipe, **(measure or {}))
    if tokens is not None:
        try:
            with t._use() as p, _Context() as ctx:
                ctx.check(lib().es_cost_table_set_speech_tokens(ctx.ptr, p, tokens, None))
        except BaseException:
            if owns:
                t.close()
            raise
    return t, owns


def _measure_args(threads, root, on_error, hash, tokenizer):
    """load()'s settings for a call that measures lists on the way (plan, simulate, describe)."""
    return dict(threads=threads, root=root, on_error=on_error, hash=hash, tokenizer=tokenizer)


def _paths(t, owner="table"):
    """The paths a table is loaded from, as given (plan.json's "inputs"); [] for a CostTable."""
    return [] if isinstance(t, CostTable) else _args.paths(f"{owner}: table", t)


def _filtered(counts):
    """{reason: count} of a filtered-by-reason array (es_plan_metrics.filtered_by_reason,
    es_simulate_input.filtered), reason 0 (kept) left out."""
    L = lib()
    return {_str(L.es_enum_name(_ffi.ENUM_FILTER_REASON, i)): counts[i]
            for i in range(1, L.es_enum_size(_ffi.ENUM_FILTER_REASON))}


# ---- plan ----------------------------------------------------------------------

PlanMetrics = _record("PlanMetrics", _ffi.PlanMetrics)  # filtered_by_reason: a dict
Load = _record("Load", _ffi.PlanLoad)
ReshardInfo = _record("ReshardInfo", _ffi.ReshardInfo)


@dataclasses.dataclass(frozen=True)
class Batch:
    """One line of rank-R.batches.jsonl: step, worker, cost, frames, the longest
    utterance's frames, whether it is a padding repeat, table rows, keys, items."""
    step: int
    worker: int
    cost: float
    frames: int
    longest: int
    repeat: bool
    rows: tuple
    keys: list
    items: list  # [(shard, pos), ...]


class Plan(_Handle):
    """An es_plan. Shard mode: shards(rank, worker=None); batch mode: batches(rank);
    metrics, loads, worker_loads, remainder(), reshard_info, write(outdir)."""
    _free = "es_plan_free"

    def __init__(self, ptr, table, owns_table, world_size, workers, mode, inputs=()):
        super().__init__(ptr)
        self.table, self._owns_table = table, owns_table
        self._inputs = list(inputs)
        self.world_size, self.workers, self.mode = world_size, workers, mode
        table._pin()
        s = _ffi.PlanMetrics()
        lib().es_plan_get_metrics(ptr, byref(s))
        self.metrics = PlanMetrics(**_values(s, filtered_by_reason=_filtered(s.filtered_by_reason)))
        self.token_note = _str(s.token_note)

    def close(self):
        with self._lock:
            had = self._ptr
            super().close()
        if had:
            self.table._unpin()
            if self._owns_table:
                self.table.close()

    def _rank(self, name, rank):
        return _args.integer(f"Plan.{name}: rank", rank, (0, self.world_size - 1))

    def _worker(self, name, worker):
        return _args.integer(f"Plan.{name}: worker", worker, (0, max(self.workers, 1) - 1))

    def _load(self, fn, *args):
        out = _ffi.PlanLoad()
        with self._use() as p:
            if fn(p, *args, byref(out)) != 0:
                raise IndexError(args)
        return Load(**_values(out))

    @property
    def loads(self):
        """Per rank: Load(cost, utterances, frames, batches)."""
        return [self._load(lib().es_plan_rank_load, r, -1) for r in range(self.world_size)]

    @property
    def worker_loads(self):
        return [[self._load(lib().es_plan_rank_load, r, w) for w in range(self.workers)]
                for r in range(self.world_size)]

    def shards(self, rank, worker=None):
        """Shard mode: rank-R.list's lines (worker None: the workers interleaved)
        or rank-R.worker-W.list's, in plan order, as es_plan_write writes them.
        A rank outside 0..world_size-1 (or worker outside 0..workers-1) raises
        ValueError."""
        rank = self._rank("shards", rank)
        w = _ffi.ALL_WORKERS if worker is None else self._worker("shards", worker)
        L, entry = lib(), c_char_p()
        out = []
        with self._use() as p, _Context() as ctx:
            for i in range(L.es_plan_rank_shard_count(p, rank, w)):
                ctx.check(L.es_plan_rank_shard(ctx.ptr, p, rank, w, i, byref(entry)))
                out.append(_str(entry.value))
        return out

    def batches(self, rank, worker=None):
        """Batch mode: rank's batches in step order (rank-R.batches.jsonl); with
        worker, only those that DataLoader worker yields (step mod W)."""
        rank = self._rank("batches", rank)
        if worker is not None:
            worker = self._worker("batches", worker)
        L, b, row = lib(), _ffi.PlanBatch(), _ffi.CostRow()
        shards = {}  # shard paths repeat: decode each once
        out = []
        with self._use() as p:
            table = self.table._p  # pinned by this plan: alive while it is
            for i in range(L.es_plan_batch_count(p, rank)):
                L.es_plan_batch_info(p, rank, i, byref(b))
                if worker is not None and b.worker != worker:
                    continue
                rows = tuple(b.rows[j] for j in range(b.n_rows))
                keys, items = [], []
                for r in rows:  # key, shard and pos only: a loader needs no more
                    L.es_cost_table_row(table, r, byref(row))
                    keys.append(_str(row.key))
                    shard = shards.get(row.shard)
                    if shard is None:
                        shard = shards[row.shard] = _str(row.shard)
                    items.append((shard, row.pos))
                out.append(Batch(b.step, b.worker, b.cost, b.frames, b.longest, bool(b.repeat),
                                 rows, keys, items))
        return out

    def remainder(self):
        """Batch mode, remainder drop/carry: the CostRows left out (remainder.tsv)."""
        L = lib()
        with self._use() as p:
            rows = _listed(lambda i: L.es_plan_remainder_row(p, i), _ffi.NO_ROW)
        return [self.table[r] for r in rows]

    @property
    def reshard_info(self):
        out = _ffi.ReshardInfo()
        with self._use() as p:
            return ReshardInfo(**_values(out)) if lib().es_plan_reshard_info_get(p, byref(out)) == 0 else None

    def write(self, outdir, inputs=None):
        """es_plan_write: OUTDIR with plan.json and the rank files (docs/PLAN.md);
        inputs are the files the table came from (hashed into plan.json); by
        default the paths plan() loaded the table from, as the CLI records them."""
        out = _args.path("Plan.write: outdir", outdir)
        arr, n = _strings(self._inputs if inputs is None else inputs, "Plan.write: inputs")
        with self._use() as p, _Context() as ctx:
            ctx.check(lib().es_plan_write(ctx.ptr, p, out, arr, n))


@settings_api([("es_plan_settings", _ffi.PlanSettings, {})],
              defaults_of(lib_defaults((_ffi.PlanSettings, "es_plan_defaults", ()))))
def plan(table: "typing.Union[CostTable, Paths]", world_size: int, workers: int = 1,
         mode: typing.Union[str, int] = "shard",
         recipe: "typing.Union[None, Recipe, PathArg]" = None,
         leave_out: typing.Optional[typing.Iterable[int]] = None, *,
         root: typing.Optional[PathArg] = None, threads: int = 0,
         on_error: typing.Union[str, int] = "fail", hash: typing.Union[bool, int] = False,
         tokenizer: "typing.Optional[Tokenizer]" = None,
         speech_tokens: typing.Optional[PathArg] = None, **settings) -> "Plan":
    """es_plan_build: what `equishard plan` does. table: a CostTable, or paths
    (cost tables or lists, as the CLI's COSTS | LIST...), measured with threads,
    root, on_error, hash and tokenizer (the CLI's -j, --root, --on-error,
    --hash, --tokenizer/--symbol-table as an equishard.Tokenizer); root is also
    where reshard reads the shards (es_plan_settings.root, as --root);
    speech_tokens: --speech-tokens. settings: es_plan_settings / es_cost_model
    fields, e.g. max_frames_in_batch=2000, remainder="carry", seed=1,
    min_length=10; recipe (an equishard.Recipe or its yaml's path): its
    settings first, which settings override; plan.json records it. leave_out:
    table row indices to plan as if absent (es_plan_build_subset: a resumed
    epoch's trained rows); batches' rows still index the whole table."""
    s = _ffi.PlanSettings()
    lib().es_plan_defaults(byref(s))
    recipe = _recipe.as_recipe(recipe)
    given = dict(settings, world_size=world_size, workers=workers, mode=mode)
    if root is not None:
        given["root"] = root
    _apply(_recipe.apply(recipe, "plan", s), given, "plan")
    inputs = _paths(table, "plan")  # (a generator of paths is read once, here)
    table, owns = _table(table if isinstance(table, CostTable) else inputs, "plan", recipe,
                         _measure_args(threads, root, on_error, hash, tokenizer), speech_tokens)
    out = c_void_p()
    try:
        mask = None
        if leave_out is not None:
            marks = bytearray(len(table))
            for i in leave_out:
                if not 0 <= i < len(marks):
                    raise IndexError(f"plan: leave_out row {i} is not in the table's {len(marks)} rows")
                marks[i] = 1
            mask = bytes(marks)
        with table._use() as t, _Context() as ctx:
            ctx.check(lib().es_plan_build_subset(ctx.ptr, byref(s), t, mask, byref(out)))
    except BaseException:
        if owns:
            table.close()
        raise
    p = Plan(out.value, table, owns, s.world_size, s.workers, ENUMS.name("mode", s.mode), inputs)
    p._recipe = recipe  # es_plan_settings.recipe is borrowed: alive while the plan is
    p._settings = s  # the plan borrows s.root's bytes: they live as long as it
    return p


# ---- simulate -------------------------------------------------------------------

SimulateInput = _record("SimulateInput", _ffi.SimulateInput)  # filtered: a dict
SimulateRank = _record("SimulateRank", _ffi.SimulateRank, extra=("shards", "workers"))
SimulateEpoch = _record("SimulateEpoch", _ffi.SimulateEpoch, extra=("ranks", "step_time"))
SimulatePlan = _record("SimulatePlan", _ffi.SimulatePlan, extra=("ranks",))


class SimulateResult(_Handle):
    """es_simulate's result, read into Python objects: input (SimulateInput),
    epochs (SimulateEpoch with ranks, each with its shards and workers) and
    plans (the plan side by side: shard and batch mode); write_json(path)."""
    _free = "es_simulate_result_free"

    def __init__(self, ptr, world_size, workers):
        super().__init__(ptr)
        L = lib()
        inp = _ffi.SimulateInput()
        L.es_simulate_input_info(ptr, byref(inp))
        self.input = SimulateInput(**_values(inp, filtered=_filtered(inp.filtered)))
        # "" unless rows lacked text token counts (the note the CLI prints)
        self.token_note = _str(inp.token_note)
        self.epochs = [self._epoch(e, world_size, workers) for e in range(L.es_simulate_epoch_count(ptr))]
        self.plans = []
        sp, load = _ffi.SimulatePlan(), _ffi.PlanLoad()
        for i in itertools.count():
            if L.es_simulate_plan_info(ptr, i, byref(sp)) != 0:  # past the last
                break
            ranks = []
            for r in range(world_size if sp.available else 0):
                L.es_simulate_plan_rank(ptr, i, r, byref(load))
                ranks.append(Load(**_values(load)))
            v = _values(sp, ranks=ranks)
            v["metrics"] = PlanMetrics(**_values(sp.metrics, filtered_by_reason=None))
            self.plans.append(SimulatePlan(**v))

    def _epoch(self, e, world_size, workers):
        L, ep, rk = lib(), _ffi.SimulateEpoch(), _ffi.SimulateRank()
        p = self._ptr  # (called from __init__ only: nobody else has the object yet)
        L.es_simulate_epoch_info(p, e, byref(ep))
        ranks = []
        for r in range(world_size):
            ws = []
            for w in range(workers):
                L.es_simulate_rank_info(p, e, r, w, byref(rk))
                ws.append(SimulateRank(**_values(rk, shards=None, workers=None)))
            L.es_simulate_rank_info(p, e, r, -1, byref(rk))
            shards = [_str(L.es_simulate_rank_shard(p, e, r, i)) for i in range(rk.n_shards)]
            ranks.append(SimulateRank(**_values(rk, shards=shards, workers=ws)))
        st = _ffi.SimulateStepTime()
        per_rank = (ctypes.c_double * max(world_size, 1))()
        L.es_simulate_step_time_info(p, e, byref(st), per_rank)
        step_time = dict(_values(st), ranks=list(per_rank)[:world_size])
        return SimulateEpoch(**_values(ep, ranks=ranks, step_time=step_time))

    def write_json(self, path):
        """The JSON of `equishard simulate --json` (docs/SIMULATE.md)."""
        b = _args.path("SimulateResult.write_json: path", path)
        with self._use() as p, _Context() as ctx:
            ctx.check(lib().es_simulate_write_json(ctx.ptr, p, b))


def _epochs(epochs):
    """simulate's epochs: n (0..n-1) or (first, last) -> (first, last)."""
    if isinstance(epochs, (tuple, list)):
        if len(epochs) != 2:
            raise ValueError(f"simulate: epochs: expected (first, last), got {len(epochs)} values")
        first, last = (_args.integer(f"simulate: epochs[{i}]", e, _args.INT64)
                       for i, e in enumerate(epochs))
        return first, last
    n = _args.integer("simulate: epochs", epochs, (1, _args.INT64[1]))
    return 0, n - 1


_SIM_DEFAULTS = defaults_of(lib_defaults((_ffi.SimulateSettings, "es_simulate_defaults", (0,))))


PlanDirInfo = _record("PlanDirInfo", _ffi.PlanDirInfo,
                      extra=("inputs", "metrics", "ranks", "workers_loads", "files", "settings",
                             "token_count"))

# es_plan_dir_settings' fields a plan is rebuilt from (plan --resume-from takes the same)
_REBUILD_MODEL = ("frame_rate", "w_frames", "w_text", "w_speech_tokens", "w_frames_sq",
                  "w_missing_emb", "w_overhead", "w_batch", "min_length", "max_length",
                  "token_min_length", "token_max_length", "min_output_input_ratio",
                  "max_output_input_ratio", "require_speech_token")


def read_plan_dir(outdir, check_files=False):
    """A plan OUTDIR through es_plan_dir_open, the one reader of plan.json
    (docs/PLAN.md): PlanDirInfo with es_plan_dir_info's fields (mode as its
    name), inputs [(path, xxh3)], metrics (PlanMetrics), ranks [Load],
    workers_loads [[Load] a rank], files {(rank, worker or None): path} (shard:
    the rank and worker lists; batch: rank-R.batches.jsonl), settings (the
    equishard.plan() keyword arguments that rebuild it: mode, ranks, workers,
    cost model and filter, batching, remainder, seed). Error (one line
    naming the file) for a plan.json that is missing, corrupt, truncated or of
    a newer schema, and with check_files for a rank file that is missing;
    token_count: "text_tokens" or "text_len", what the token filters counted."""
    L = lib()
    with _Context() as ctx:
        d = c_void_p()
        ctx.check(L.es_plan_dir_open(ctx.ptr, _args.path("outdir", outdir), byref(d)))
        try:
            if check_files:
                ctx.check(L.es_plan_dir_check_files(ctx.ptr, d))
            info, m = _ffi.PlanDirInfo(), _ffi.PlanMetrics()
            L.es_plan_dir_get_info(d, byref(info))
            L.es_plan_dir_metrics(d, byref(m))
            digest = ctypes.c_uint64()
            inputs = [(_str(L.es_plan_dir_input(d, i, byref(digest))), digest.value)
                      for i in range(info.n_inputs)]
            ranks, workers = [], []
            for r in range(info.n_ranks):
                load = _ffi.PlanLoad()
                L.es_plan_dir_rank_load(d, r, -1, byref(load))
                ranks.append(Load(**_values(load)))
                row = []
                for w in range(info.workers):
                    L.es_plan_dir_rank_load(d, r, w, byref(load))
                    row.append(Load(**_values(load)))
                workers.append(row)
            files = {}
            for r in range(info.world_size):
                for w in [None, *range(info.workers)]:
                    f = L.es_plan_dir_rank_file(d, r, -1 if w is None else w)
                    if f is not None:
                        files[(r, w)] = _str(f)
            metrics = PlanMetrics(**_values(m, filtered_by_reason=_filtered(m.filtered_by_reason)))
            ps = _ffi.PlanSettings()
            L.es_plan_dir_settings(d, byref(ps))
            settings = dict(world_size=ps.world_size, workers=ps.workers,
                            mode=ENUMS.name("mode", ps.mode),
                            **{k: getattr(ps.model, k) for k in _REBUILD_MODEL},
                            max_frames_in_batch=ps.max_frames_in_batch, batch_size=ps.batch_size,
                            sort_size=ps.sort_size, remainder=ENUMS.name("remainder", ps.remainder),
                            seed=ps.seed)
            # text_tokens.count: what the token filters counted
            token_count = "text_len" if ps.model.token_chars else "text_tokens"
            values = _values(info, inputs=inputs, metrics=metrics, ranks=ranks,
                             workers_loads=workers, files=files, settings=settings,
                             token_count=token_count)
            values["mode"] = ENUMS.name("mode", info.mode)
            return PlanDirInfo(**values)
        finally:
            L.es_plan_dir_free(d)


def _plan_inputs(plan_dir, mode):
    """The inputs of a plan replay given none (`equishard simulate --plan OUTDIR`
    with no inputs, cmd_simulate.c plan_inputs): a reshard plan's
    OUTDIR/data.list; a shard plan's plan.json "inputs", each readable from here."""
    d = os.fsdecode(plan_dir)
    if mode == ENUMS["mode"]["reshard"]:
        return [os.path.join(d, "data.list")]
    path = os.path.join(d, "plan.json")
    inputs = [i for i, _ in read_plan_dir(plan_dir).inputs]
    for i in inputs:
        if not isinstance(i, str) or not os.access(i, os.R_OK):
            raise ValueError(f"simulate: {path}: planned input {i or '(none)'} is not readable "
                             "from here: give the cost table or lists the plan was made from")
    if not inputs:
        raise ValueError(f"simulate: {path} names no inputs: give the data it was planned from")
    return inputs


@settings_api([("es_simulate_settings", _ffi.SimulateSettings,
                dict(epoch_first="epochs", epoch_last="epochs", plan_dir="plan"))], _SIM_DEFAULTS,
              note="defaults of the cosyvoice loader (wenet's: frame_rate 100, min_length 0)")
def simulate(table: "typing.Union[None, CostTable, Paths]" = None,
             loader: typing.Union[None, str, int] = None,
             world_size: typing.Optional[int] = None, workers: typing.Optional[int] = None,
             epochs: typing.Union[int, typing.Tuple[int, int]] = 1,
             plan: typing.Optional[PathArg] = None,
             recipe: "typing.Union[None, Recipe, PathArg]" = None, *,
             threads: int = 0, root: typing.Optional[PathArg] = None,
             on_error: typing.Union[str, int] = "fail", hash: typing.Union[bool, int] = False,
             tokenizer: "typing.Optional[Tokenizer]" = None,
             speech_tokens: typing.Optional[PathArg] = None,
             **settings) -> "SimulateResult":
    """es_simulate: the loader's own split replayed, as `equishard simulate`. table:
    a CostTable or paths, measured with threads, root, on_error, hash, tokenizer
    (the CLI's measure flags); speech_tokens: --speech-tokens. epochs: n (epochs
    0..n-1) or (first, last) inclusive. settings: es_simulate_settings /
    es_cost_model fields over the loader's defaults (es_simulate_defaults), e.g.
    min_length=10, trials=8. plan: a plan OUTDIR whose settings come first
    (es_simulate_settings_from_plan; world_size, workers and settings given
    override them); a shard plan is replayed as equishard.loaders feed it (table
    None: plan.json's inputs), a reshard plan is simulated on the table of its
    data.list (table None: OUTDIR/data.list), a batch plan is refused (equal
    steps by construction). loader: "cosyvoice" (default) or "wenet"; recipe (an
    equishard.Recipe or its yaml's path): its loader and settings, over the
    plan's, under settings given. world_size defaults to 1 without a plan (the
    CLI requires --world-size)."""
    first, last = _epochs(epochs)
    recipe = _recipe.as_recipe(recipe)
    loader = _recipe.loader_of(recipe, loader)
    s = _ffi.SimulateSettings()
    lib().es_simulate_defaults(byref(s), _args.enum("simulate: loader", loader, ENUMS["loader"]))
    if plan is not None:
        plan_path = _args.path("simulate: plan", plan)
        mode = _ffi.c_enum()
        with _Context() as ctx:
            ctx.check(lib().es_simulate_settings_from_plan(ctx.ptr, byref(s), plan_path,
                                                           byref(mode)))
        if mode.value == ENUMS["mode"]["batch"]:
            raise ValueError(f"{plan}: a batch plan trains the same steps on every rank by "
                             "construction; nothing to simulate")
        s.plan_side = 0
        if s.plan_dir:  # held by the structure, not by the call's temporary
            s.plan_dir = plan_path
    elif table is None:
        raise ValueError("simulate: give a table (a CostTable or paths) or plan=")
    if workers is not None:  # 0 is 1, as --workers 0 (one process, no DataLoader workers)
        workers = _args.integer("simulate: workers", workers, _args.UINT32) or 1
    given = {k: v for k, v in (("world_size", world_size), ("workers", workers)) if v is not None}
    if plan is None:
        given = dict(dict(world_size=1, workers=1), **given)
    _apply(_recipe.apply(recipe, "simulate", s),
           dict(settings, epoch_first=first, epoch_last=last, **given), "simulate")
    if table is None:
        table = _plan_inputs(plan_path, mode.value)
    table, owns = _table(table, "simulate", recipe,
                         _measure_args(threads, root, on_error, hash, tokenizer), speech_tokens)
    out = c_void_p()
    try:
        with table._use() as t, _Context() as ctx:
            ctx.check(lib().es_simulate(ctx.ptr, byref(s), t, byref(out)))
    finally:
        if owns:
            table.close()
    return SimulateResult(out.value, s.world_size, max(s.workers, 1))


# ---- describe ------------------------------------------------------------------

@settings_api([], _SIM_DEFAULTS,
              note="defaults of the cosyvoice loader (wenet's: frame_rate 100, min_length 0)")
def describe(table: "typing.Union[CostTable, Paths]",
             loader: typing.Union[None, str, int] = None,
             recipe: "typing.Union[None, Recipe, PathArg]" = None, *,
             threads: int = 0, root: typing.Optional[PathArg] = None,
             on_error: typing.Union[str, int] = "fail", hash: typing.Union[bool, int] = False,
             tokenizer: "typing.Optional[Tokenizer]" = None,
             speech_tokens: typing.Optional[PathArg] = None, **settings) -> dict:
    """es_describe_json as a dict: what `equishard describe --json` prints for the
    same inputs (docs/DESCRIBE.md has the keys). table: a CostTable, or paths
    (cost tables or lists, measured as the CLI's COSTS | LIST... with threads,
    root, on_error, hash, tokenizer: its measure flags; speech_tokens:
    --speech-tokens). The filter is the loader's ("cosyvoice" default, or the
    recipe's), the recipe's over it, then settings: es_cost_model's fields
    (min_length=10, ...; cost_model= a model.json)."""
    import json
    recipe = _recipe.as_recipe(recipe)
    loader = _recipe.loader_of(recipe, loader)
    s = _ffi.SimulateSettings()
    lib().es_simulate_defaults(byref(s), _args.enum("describe: loader", loader, ENUMS["loader"]))
    _recipe.apply(recipe, "simulate", s)
    model_fields = {f for f, _ in _ffi.CostModel._fields_}
    for k in settings:  # the filter's fields only: nothing else here has a meaning
        if (k not in model_fields and k != "cost_model") or \
                k in ("reserved", "source", "source_digest"):
            raise TypeError(f"describe: unknown setting {k!r}")
    _apply(s, settings, "describe")
    table, owns = _table(table, "describe", recipe,
                         _measure_args(threads, root, on_error, hash, tokenizer), speech_tokens)
    out = c_void_p()
    try:
        with table._use() as t, _Context() as ctx:
            ctx.check(lib().es_describe_json(ctx.ptr, t, s.loader, byref(s.model), byref(out)))
    finally:
        if owns:
            table.close()
    try:
        return json.loads(ctypes.string_at(out.value).decode("utf-8"))
    finally:
        lib().es_free(out.value)


# ---- validate ------------------------------------------------------------------

ValidateInfo = _record("ValidateInfo", _ffi.ValidateInfo)


@dataclasses.dataclass(frozen=True)
class Finding:
    """One es_finding; row and other_row are None for ES_NO_ROW."""
    check: str
    kind: str
    key: str
    row: object
    value: float
    other: object
    other_row: object


class ValidateResult(_Handle):
    """Findings of es_validate*: counts {check: n} (every check), findings
    (Finding, ordered by check, kind, row/key), rows(check), info, write_json(path)."""
    _free = "es_validate_result_free"

    def __init__(self, ptr):
        super().__init__(ptr)
        L, f = lib(), _ffi.Finding()
        names = list(ENUMS["check"])
        self.counts = {name: L.es_validate_count(ptr, i) for i, name in enumerate(names)}
        self.findings = []
        row = lambda r: None if r == _ffi.NO_ROW else r  # noqa: E731
        for i in range(L.es_validate_count(ptr, -1)):
            L.es_validate_finding(ptr, i, byref(f))
            self.findings.append(Finding(names[f.check], ENUMS.name("kind", f.kind), _str(f.key), row(f.row),
                                         f.value, _str(f.other), row(f.other_row)))
        info = _ffi.ValidateInfo()
        L.es_validate_result_info(ptr, byref(info))
        v = _values(info)
        v["device"] = ENUMS.name("device", info.device)
        self.info = ValidateInfo(**v)
        # after the data checks: "" unless rows lacked text token counts
        self.token_note = _str(info.token_note)

    def rows(self, check, kind="utt"):
        """Rows (matrix or source entry ordinals) the check found, in order."""
        return [f.row for f in self.findings if f.check == check and f.kind == kind and f.row is not None]

    def write_json(self, path):
        """The report of `equishard validate --json` (docs/VALIDATE.md)."""
        b = _args.path("ValidateResult.write_json: path", path)
        with self._use() as p, _Context() as ctx:
            ctx.check(lib().es_validate_write_json(ctx.ptr, p, b))


_SOURCE_FIELDS = {f for f, _ in _ffi.EmbSources._fields_}
_VALIDATE_FIELDS = {f for f, _ in _ffi.ValidateSettings._fields_} - {"reserved"}


def _validate_settings(settings, owner):
    s = _ffi.ValidateSettings()
    lib().es_validate_defaults(byref(s))
    return _apply(s, {k: v for k, v in settings.items() if k in _VALIDATE_FIELDS}, owner)


def _embedded_sources(src, inputs, table):
    """Without utt_emb/spk_emb, a list whose files carry the embeddings
    (CosyVoice parquet's utt_embedding/spk_embedding columns: the reader flags
    the rows) is its own source; with no embeddings and no utterances there is
    nothing to check (refused, not reported clean). The rule of `equishard
    validate LIST` (tools/equishard/cmd_validate.c, embeddings_from_list): the
    two must find the same sources, tests/python/test_validate_parity.py."""
    if src.utt_emb or src.spk_emb:
        return
    L, row, flags = lib(), _ffi.CostRow(), 0
    n = L.es_cost_table_size(table)
    for i in range(n):
        L.es_cost_table_row(table, i, byref(row))
        flags |= row.flags
    bit = {_str(L.es_flag_name(b)): 1 << b for b in range(32) if L.es_flag_name(b)}
    utt_flag, spk_flag = bit["utt_emb"], bit["spk_emb"]  # ES_FLAG_UTT_EMB, ES_FLAG_SPK_EMB
    if flags & (utt_flag | spk_flag):
        if len(inputs) != 1:
            raise ValueError("validate: the lists' files carry embeddings; give one list (or "
                             "utt_emb=/spk_emb=) to validate them")
        if flags & utt_flag:
            src.utt_emb = inputs[0]
        if flags & spk_flag:
            src.spk_emb = inputs[0]
    elif n == 0 and L.es_cost_table_skip(table, 0) is None:
        raise ValueError("validate: nothing to validate: no embeddings (utt_emb=/spk_emb=, or "
                         "embedding columns in the lists) and no utterances")


@settings_api([("es_emb_sources", _ffi.EmbSources, {}),
               ("es_validate_settings", _ffi.ValidateSettings, {}),
               ("es_validate_data_settings", _ffi.ValidateDataSettings, {})],
              defaults_of(lib_defaults((_ffi.EmbSources, None, ()),
                                       (_ffi.ValidateSettings, "es_validate_defaults", ()),
                                       (_ffi.ValidateDataSettings, "es_validate_data_defaults",
                                        ()),
                                       (_ffi.SimulateSettings, "es_simulate_defaults", (0,)))),
              note="the cost model's: the cosyvoice loader's")
def validate(lists: "typing.Union[None, CostTable, Paths]" = None,
             root: typing.Optional[PathArg] = None, on_error: typing.Union[str, int] = "skip",
             hash: typing.Union[bool, int] = True,
             tokenizer: "typing.Optional[Tokenizer]" = None,
             speech_tokens: typing.Optional[PathArg] = None,
             recipe: "typing.Union[None, Recipe, PathArg]" = None,
             **settings) -> "ValidateResult":
    """What `equishard validate [LIST]` does, with its defaults: `lists` (a
    CostTable, as --costs, or cost tables / lists, measured with hashes, problems
    skipped and reported as `unreadable` findings) names the utterances; the
    embedding sources are utt_emb, utt_keys, spk_emb, spk_keys, utt2spk (paths)
    or, given none, the list's own embedding columns (CosyVoice parquet); then
    es_validate_data's loader-model checks over the table. hash=False is
    --no-hash, speech_tokens= is --speech-tokens, threads= is -j.
    settings: es_emb_sources, es_validate_settings (device, dim, min_cosine, ...)
    and es_validate_data_settings (+ cost model: world_size, loader, min_length,
    ...) fields; recipe (an equishard.Recipe or its yaml's path): its loader and
    filter, which settings override. -> ValidateResult; write_json(path) writes
    the CLI's --json."""
    src = _apply(_ffi.EmbSources(), {k: v for k, v in settings.items() if k in _SOURCE_FIELDS},
                 "validate")
    if root is not None and src.root is None:
        src.root = _args.path("validate: root", root)  # also inside parquet lists named by utt_emb/spk_emb
    if (src.utt_keys and not src.utt_emb) or (src.spk_keys and not src.spk_emb):
        raise ValueError("validate: utt_keys/spk_keys go with utt_emb/spk_emb")
    s = _validate_settings(settings, "validate")
    data = _ffi.ValidateDataSettings()
    lib().es_validate_data_defaults(byref(data))
    # the loader's recipe gives the cost model's defaults; the fields given override them
    recipe = _recipe.as_recipe(recipe)
    loader = _recipe.loader_of(recipe, settings.pop("loader", None)) if recipe is not None \
        else settings.get("loader", data.loader)
    sim = _ffi.SimulateSettings()
    lib().es_simulate_defaults(byref(sim), _args.enum("validate: loader", loader, ENUMS["loader"]))
    data.model = sim.model
    _recipe.apply(recipe, "validate_data", data)
    if "workers" in settings:  # 0 is 1, as --workers 0
        settings["workers"] = _args.integer("validate: workers", settings["workers"],
                                            _args.UINT32) or 1
    _apply(data, {k: v for k, v in settings.items()
                  if k not in _SOURCE_FIELDS and k not in _VALIDATE_FIELDS}, "validate")
    tokens = _args.path("validate: speech_tokens", speech_tokens, optional=True)
    if lists is None and not src.utt_emb and not src.spk_emb:
        raise ValueError("validate: nothing to validate: give utt_emb=/spk_emb= and/or lists")
    if lists is None and (data.world_size or tokens):
        raise ValueError("validate: world_size and speech_tokens need lists (the utterances)")
    table, owns, inputs = None, False, None
    if isinstance(lists, CostTable):
        table = lists
    elif lists is not None:
        inputs = _args.paths("validate: lists", lists)
        table = load(inputs, threads=s.threads, root=root, on_error=on_error, hash=hash,
                     tokenizer=tokenizer, recipe=recipe)
        owns = True
    out = c_void_p()
    try:
        with (table._use() if table is not None else contextlib.nullcontext(None)) as t, \
                _Context() as ctx:
            if tokens is not None:
                ctx.check(lib().es_cost_table_set_speech_tokens(ctx.ptr, t, tokens, None))
            if inputs is not None:
                _embedded_sources(src, inputs, t)
            ctx.check(lib().es_validate(ctx.ptr, byref(s), byref(src), t, byref(out)))
            if t is not None:
                rc = lib().es_validate_data(ctx.ptr, byref(data), t, out)
                if rc != 0:
                    lib().es_validate_result_free(out)
                ctx.check(rc)
    finally:
        if owns:
            table.close()
    return ValidateResult(out.value)


def _address(buf, name, device):
    """The address and size in bytes of a buffer: a buffer-protocol object
    (array.array, numpy, bytearray, ctypes arrays), a torch tensor
    (.data_ptr(), .numel() x .element_size()) or, on device="cuda" only, a
    device pointer (int; size None: CUDA refuses a bad one with an error, where
    a bad host address would crash the interpreter). A buffer must be
    C-contiguous."""
    if isinstance(buf, bool):
        raise TypeError(f"{name}: expected a buffer, got bool")
    if isinstance(buf, int):
        if device != "cuda":
            raise TypeError(f"{name}: an int is taken only as a CUDA device pointer; wrap host "
                            "memory as (ctypes.c_float * count).from_address(address)")
        return _args.integer(name, buf, (1, _args.SIZE[1])), None
    if hasattr(buf, "data_ptr") and hasattr(buf, "element_size"):  # torch (CUDA ones too)
        if hasattr(buf, "is_contiguous") and not buf.is_contiguous():
            raise ValueError(f"{name}: the tensor is not contiguous")
        return buf.data_ptr(), buf.numel() * buf.element_size()
    try:
        view = memoryview(buf)
    except TypeError:
        raise TypeError(f"{name}: expected a buffer (array, numpy, ctypes array, torch tensor), "
                        f"got {type(buf).__name__}") from None
    with view:
        if not view.c_contiguous:
            raise ValueError(f"{name}: the buffer is not C-contiguous")
        size, readonly = view.nbytes, view.readonly
    if isinstance(buf, array.array):
        return buf.buffer_info()[0], size
    if hasattr(buf, "__array_interface__") and hasattr(buf, "ctypes"):  # numpy
        return buf.ctypes.data, size
    if isinstance(buf, (ctypes._SimpleCData, ctypes.Array, ctypes.Structure)):
        return ctypes.addressof(buf), size
    if readonly:
        raise TypeError(f"{name}: a read-only {type(buf).__name__} has no address ctypes can "
                        "take; pass an array.array, numpy array or bytearray")
    if size == 0:
        return None, 0
    return ctypes.addressof(ctypes.c_char.from_buffer(buf)), size


def _sync_stream(stream):
    """cudaStreamSynchronize(stream): the library copies on the legacy default
    stream, which does not wait for non-blocking streams (torch's side streams)."""
    for name in (None, "libcudart.so", ctypes.util.find_library("cudart")):
        try:
            fn = ctypes.CDLL(name).cudaStreamSynchronize
        except (OSError, AttributeError, TypeError):
            continue
        fn.argtypes, fn.restype = [c_void_p], ctypes.c_int
        if fn(stream) != 0:
            raise Error(-2, f"cudaStreamSynchronize({stream:#x}) failed")
        return
    raise Error(-4, "stream given but no CUDA runtime (cudaStreamSynchronize) is loaded")


_ITEMSIZE = {"float32": 4, "float16": 2, "bfloat16": 2}


def validate_tensor(data, n, dim, device="cpu", stream=0, dtype="float32", keys=None,
                    speakers=None, n_speakers=None, spk_data=None, spk_n=0, spk_keys=None,
                    expected_dim=None, **settings):
    """Validates an n x dim row-major embedding matrix the caller holds (see
    _address: numpy arr, torch tensor, array('f'), ctypes array; with
    device="cuda" also a device pointer as an int). A buffer smaller than
    n x dim x the dtype's size raises ValueError.
    device "cpu"/"auto": host memory (es_validate_matrices); "cuda": device memory
    (es_validate_matrices with device_memory 1; `stream` is synchronized first). speakers: per row the
    speaker index (-1 none); spk_data: the speaker matrix (spk_n rows). The matrix
    must stay alive and unchanged during the call. -> ValidateResult; .rows(check)
    gives the offending row indices."""
    owner = "validate_tensor"
    unknown = set(settings) - _VALIDATE_FIELDS
    if unknown:
        raise TypeError(f"{owner}: unknown settings {sorted(unknown)}")
    s = _validate_settings(settings, owner)
    if device not in ("cpu", "auto", "cuda"):
        raise ValueError(f"{owner}: device: {device!r} is not one of ['auto', 'cpu', 'cuda']")
    code = _args.enum(f"{owner}: dtype", dtype, ENUMS["dtype"])
    itemsize = _ITEMSIZE[ENUMS.name("dtype", code)]
    n = _args.integer(f"{owner}: n", n, _args.UINT32)
    dim = _args.integer(f"{owner}: dim", dim, _args.UINT32)
    s.dim = dim if expected_dim is None else _args.integer(f"{owner}: expected_dim", expected_dim)
    s.device = ENUMS["device"]["cpu" if device == "cpu" else "auto"]
    stream = _args.integer(f"{owner}: stream", stream, _args.SIZE)
    key_arrays = []

    def matrix(buf, rows, names, label):
        addr, size = _address(buf, f"{owner}: {label}", device)
        need = rows * dim * itemsize
        if size is not None and size < need:
            raise ValueError(f"{owner}: {label}: {size} bytes hold fewer than {rows} x {dim} "
                             f"{ENUMS.name('dtype', code)} values ({need} bytes)")
        m = _ffi.EmbMatrix(addr, code, rows, dim, None)
        if names is not None:
            names = _args.texts(f"{owner}: {label} keys", names)
            if len(names) != rows:
                raise ValueError(f"{owner}: {len(names)} keys for {rows} rows")
            arr = (c_char_p * max(rows, 1))(*names)
            key_arrays.append(arr)
            m.keys = ctypes.cast(arr, _ffi.STRS)
        return m

    utt = matrix(data, n, keys, "data")
    spk = None
    if spk_data is not None:
        spk_n = _args.integer(f"{owner}: spk_n", spk_n, _args.UINT32)
        spk = matrix(spk_data, spk_n, spk_keys, "spk_data")
    spks = None
    if speakers is not None:
        if isinstance(speakers, (str, bytes)):
            raise TypeError(f"{owner}: speakers: expected a sequence of ints, got "
                            f"{type(speakers).__name__}")
        try:
            ids_list = [_args.integer(f"{owner}: speakers[{i}]", x, (-1, _args.INT32[1]))
                        for i, x in enumerate(speakers)]
        except TypeError as e:
            if "speakers[" in str(e):
                raise
            raise TypeError(f"{owner}: speakers: expected a sequence of ints") from None
        if len(ids_list) != n:
            raise ValueError(f"{owner}: speakers: {len(ids_list)} ids for {n} rows")
        known = (max(max(ids_list, default=-1) + 1, spk_n) if n_speakers is None
                 else _args.integer(f"{owner}: n_speakers", n_speakers, _args.UINT32))
        if ids_list and max(ids_list) >= known:
            raise ValueError(f"{owner}: speakers: id {max(ids_list)} is not below n_speakers {known}")
        ids = (c_int32 * max(n, 1))(*ids_list)
        spks = _ffi.EmbSpeakers(ids, known)
    if device == "cuda" and stream:
        _sync_stream(stream)
    out = c_void_p()
    with _Context() as ctx:
        ctx.check(lib().es_validate_matrices(ctx.ptr, byref(s), byref(utt), spk and byref(spk),
                                             spks and byref(spks), int(device == "cuda"),
                                             byref(out)))
    return ValidateResult(out.value)


from . import recipe as _recipe  # noqa: E402 (recipe= of the functions above; it builds on this module)
