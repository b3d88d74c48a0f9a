"""The binding's calls: measure, plan, simulate, validate, validate_tensor.

Conventions (the header's, carried over):
- every nonzero es_status raises Error (.status is its name, .message es_errmsg);
- each call makes and frees its own es_context;
- objects that hold a C handle (CostTable, Plan, SimulateResult, ValidateResult)
  free it on close(), at the end of a `with` block, or when garbage-collected;
- settings are keyword arguments named as the header's settings fields
  (es_plan_settings, es_cost_model, ...); enum fields take their names as strings.
"""
import array
import collections.abc
import ctypes
import ctypes.util
import dataclasses
import os
from ctypes import byref, c_char_p, c_int32, c_size_t, c_void_p

from . import _ffi
from ._ffi import lib

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


def _bytes(s):
    return None if s is None else (s if isinstance(s, bytes) else str(s).encode("utf-8", "surrogateescape"))


def _path_list(items):
    """A path or an iterable of paths as a list of str/bytes (read once)."""
    if isinstance(items, (str, bytes, os.PathLike)):
        return [os.fspath(items)]
    return [os.fspath(i) for i in items]


def _strings(items):
    """A C array of char* for a list of paths (the array keeps them alive)."""
    items = _path_list(items)
    arr = (c_char_p * max(len(items), 1))(*[_bytes(i) for i in items])
    return arr, len(items)


class _Context:
    """One es_context for one call: `with _Context() as ctx: ctx.check(rc)`."""

    def __enter__(self):
        self.ptr = lib().es_context_new()
        if not self.ptr:
            raise MemoryError("es_context_new")
        return self

    def check(self, rc):
        if rc != 0:
            raise Error(rc, _str(lib().es_errmsg(self.ptr)))

    def __exit__(self, *exc):
        lib().es_context_free(self.ptr)


def _record(name, struct, extra=()):
    """A frozen dataclass with the ctypes structure's fields (strings decoded) plus extra."""
    fields = [(f, object) for f, _ in struct._fields_] + [(f, object) for f in extra]
    return dataclasses.make_dataclass(name, fields, frozen=True)


def _values(s, **extra):
    out = {}
    for f, t in s._fields_:
        v = getattr(s, f)
        out[f] = _str(v) if t is c_char_p else v
    out.update(extra)
    return out


_MODEL_PATHS = {}  # cost_model= paths: settings (and plans made with them) point at these bytes


def _apply(settings, kwargs):
    """Sets header-named settings (and their cost-model fields) from kwargs."""
    names = {f for f, _ in settings._fields_} - {"reserved"}
    model_names = {f for f, _ in _ffi.CostModel._fields_} - {"reserved"} if "model" in names else set()
    if "cost_model" in kwargs and model_names:  # first: the other fields given override it
        kwargs = dict(kwargs)
        path = _bytes(os.fspath(kwargs.pop("cost_model")))
        path = _MODEL_PATHS.setdefault(path, path)  # model.source points into it, for good
        with _Context() as ctx:
            ctx.check(lib().es_cost_model_read(ctx.ptr, path, byref(settings.model)))
    for k, v in kwargs.items():
        if k in ENUMS and isinstance(v, str):
            if v not in ENUMS[k]:
                raise ValueError(f"{k}: {v!r} is not one of {sorted(ENUMS[k])}")
            v = ENUMS[k][v]
        if isinstance(v, str):
            v = _bytes(v)
        if k in names and k != "model":
            setattr(settings, k, v)
        elif k in model_names:
            setattr(settings.model, k, v)
        else:
            raise TypeError(f"unknown setting {k!r}")
    return settings


class _Handle:
    """Owns one C object; freed once, by close(), `with`, or garbage collection."""
    _free = None

    def __init__(self, ptr):
        self._ptr = ptr

    @property
    def _p(self):
        if not self._ptr:
            raise ValueError(f"{type(self).__name__} is closed")
        return self._ptr

    def close(self):
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
CostRow.__doc__ = "One es_cost_row: key, shard, pos, sample_rate, ... (DESIGN.md §4)."


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
        out = c_void_p()
        with _Context() as ctx:
            ctx.check(lib().es_cost_table_read(ctx.ptr, _bytes(path), byref(out)))
        return cls(out.value)

    def write(self, path):
        """TSV, zstd-compressed when path ends in .zst; atomic (es_cost_table_write)."""
        with _Context() as ctx:
            ctx.check(lib().es_cost_table_write(ctx.ptr, self._p, _bytes(path)))

    def compress_ahead(self):
        """es_cost_table_compress_ahead: starts compressing the table, as a batch
        plan's costs.tsv.zst, on a thread of its own, so that Plan.write finds it
        done instead of compressing it then (what `equishard plan --mode batch`
        does while it builds the plan). Costs another core and about a seventh
        of the table's size in memory until the table is closed: call it only
        when a batch plan of this table will be written."""
        with _Context() as ctx:
            ctx.check(lib().es_cost_table_compress_ahead(ctx.ptr, self._p))

    def __len__(self):
        return lib().es_cost_table_size(self._p)

    def __getitem__(self, i):
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(i)
        row = _ffi.CostRow()
        lib().es_cost_table_row(self._p, i, byref(row))
        return CostRow(**_values(row))

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    @property
    def skips(self):
        """Lines "FILE: MEMBER: PROBLEM" that on_error="skip" left out."""
        L = lib()
        return [_str(L.es_cost_table_skip(self._p, i)) for i in range(L.es_cost_table_skip_count(self._p))]

    def shard_file(self, shard):
        """(size, mtime_ns) of the shard file as measure found it (the table's
        shard_size and shard_mtime), or None when the table does not record it
        (raw-list and Kaldi rows, older tables)."""
        size, sec, ns = ctypes.c_uint64(), ctypes.c_int64(), ctypes.c_uint32()
        if not lib().es_cost_table_shard_file(self._p, _bytes(shard), byref(size), byref(sec),
                                             byref(ns)):
            return None
        return size.value, sec.value * 1_000_000_000 + ns.value

    def close(self):
        self._closing = True
        if not self._pins:
            super().close()

    def _pin(self):
        self._p  # raises when closed
        self._pins += 1

    def _unpin(self):
        self._pins -= 1
        if self._closing and not self._pins:
            super().close()


def _table_from(fn, inputs, threads, root, on_error, hash, tokenizer=None):
    s = _ffi.MeasureSettings()
    lib().es_measure_defaults(byref(s))
    _apply(s, dict(threads=threads, root=root, on_error=on_error, hash=int(bool(hash))))
    if tokenizer is not None:  # an equishard.Tokenizer, alive for the call
        if tokenizer._ptr is None:
            raise ValueError("Tokenizer is closed")
        s.tokenizer = tokenizer._ptr
    arr, n = _strings(inputs)
    out = c_void_p()
    with _Context() as ctx:
        ctx.check(fn(ctx.ptr, byref(s), arr, n, byref(out)))
    return CostTable(out.value)


def measure(lists, threads=0, root=None, on_error="fail", hash=False, tokenizer=None):
    """es_measure over shard lists, shards, raw lists or Kaldi dirs -> CostTable;
    with tokenizer (an equishard.Tokenizer) every row's text_tokens is counted."""
    return _table_from(lib().es_measure, lists, threads, root, on_error, hash, tokenizer)


def load(inputs, threads=0, root=None, on_error="fail", hash=False, tokenizer=None):
    """es_load_inputs: cost tables are read, anything else measured -> CostTable."""
    return _table_from(lib().es_load_inputs, inputs, threads, root, on_error, hash, tokenizer)


def _table(t):
    """A CostTable and whether we made it (from paths)."""
    return (t, False) if isinstance(t, CostTable) else (load(t), True)


def _paths(t):
    """The paths a table is loaded from, as given (plan.json's "inputs"); [] for a CostTable."""
    return [] if isinstance(t, CostTable) else _path_list(t)


def _filtered(count_fn, handle):
    L = lib()
    return {_str(L.es_filter_reason_name_at(i)): count_fn(handle, i)
            for i in range(1, L.es_filter_reason_count())}


# ---- plan ----------------------------------------------------------------------

PlanMetrics = _record("PlanMetrics", _ffi.PlanMetrics, extra=("filtered_by_reason",))
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
        self.metrics = PlanMetrics(**_values(s, filtered_by_reason=_filtered(lib().es_plan_filtered, ptr)))
        self.token_note = _str(lib().es_plan_token_note(ptr))

    def close(self):
        had = self._ptr
        super().close()
        if had:
            self.table._unpin()
            if self._owns_table:
                self.table.close()

    def _load(self, fn, *args):
        out = _ffi.PlanLoad()
        if fn(self._p, *args, byref(out)) != 0:
            raise IndexError(args)
        return Load(**_values(out))

    @property
    def loads(self):
        """Per rank: Load(cost, utterances, frames, batches)."""
        return [self._load(lib().es_plan_rank_load, r) for r in range(self.world_size)]

    @property
    def worker_loads(self):
        return [[self._load(lib().es_plan_worker_load, r, w) for w in range(self.workers)]
                for r in range(self.world_size)]

    def shards(self, rank, worker=None):
        """Shard mode: rank-R.list's lines (worker None: the workers interleaved)
        or rank-R.worker-W.list's, in plan order, as es_plan_write writes them."""
        w = _ffi.ALL_WORKERS if worker is None else worker
        L, entry = lib(), c_char_p()
        out = []
        with _Context() as ctx:
            for i in range(L.es_plan_rank_shard_count(self._p, rank, w)):
                ctx.check(L.es_plan_rank_shard(ctx.ptr, self._p, rank, w, i, byref(entry)))
                out.append(_str(entry.value))
        return out

    def batches(self, rank, worker=None):
        """Batch mode: rank's batches in step order (rank-R.batches.jsonl); with
        worker, only those that DataLoader worker yields (step mod W)."""
        L, b, row = lib(), _ffi.PlanBatch(), _ffi.CostRow()
        table, shards = self.table._p, {}  # shard paths repeat: decode each once
        out = []
        for i in range(L.es_plan_batch_count(self._p, rank)):
            L.es_plan_batch_info(self._p, rank, i, byref(b))
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
            out.append(Batch(b.step, b.worker, b.cost, b.frames, b.longest, bool(b.repeat), rows,
                             keys, items))
        return out

    def remainder(self):
        """Batch mode, remainder drop/carry: the CostRows left out (remainder.tsv)."""
        L = lib()
        return [self.table[L.es_plan_remainder_row(self._p, i)]
                for i in range(L.es_plan_remainder_count(self._p))]

    @property
    def reshard_info(self):
        out = _ffi.ReshardInfo()
        return ReshardInfo(**_values(out)) if lib().es_plan_reshard_info_get(self._p, byref(out)) == 0 else None

    def write(self, outdir, inputs=None):
        """es_plan_write: OUTDIR with plan.json and the rank files (docs/PLAN.md);
        inputs are the files the table came from (hashed into plan.json); by
        default the paths plan() loaded the table from, as the CLI records them."""
        arr, n = _strings(self._inputs if inputs is None else inputs)
        with _Context() as ctx:
            ctx.check(lib().es_plan_write(ctx.ptr, self._p, _bytes(outdir), arr, n))


def plan(table, world_size, workers=1, mode="shard", **settings):
    """es_plan_build. table: a CostTable, or paths (cost tables or lists, as the
    CLI's COSTS | LIST...). settings: es_plan_settings / es_cost_model fields,
    e.g. max_frames_in_batch=2000, remainder="carry", seed=1, min_length=10."""
    s = _ffi.PlanSettings()
    lib().es_plan_defaults(byref(s))
    _apply(s, dict(settings, world_size=world_size, workers=workers, mode=mode))
    inputs = _paths(table)  # (a generator of paths is read once, here)
    table, owns = _table(table if isinstance(table, CostTable) else inputs)
    out = c_void_p()
    try:
        with _Context() as ctx:
            ctx.check(lib().es_plan_build(ctx.ptr, byref(s), table._p, byref(out)))
    except BaseException:
        if owns:
            table.close()
        raise
    return Plan(out.value, table, owns, s.world_size, s.workers, mode, inputs)


# ---- simulate -------------------------------------------------------------------

SimulateInput = _record("SimulateInput", _ffi.SimulateInput, extra=("filtered",))
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
        self.input = SimulateInput(**_values(inp, filtered=_filtered(L.es_simulate_filtered, ptr)))
        # "" unless rows lacked text token counts (the note the CLI prints)
        self.token_note = _str(L.es_simulate_token_note(ptr))
        self.epochs = [self._epoch(e, world_size, workers) for e in range(L.es_simulate_epoch_count(ptr))]
        self.plans = []
        for i in range(L.es_simulate_plan_count(ptr)):
            sp, load = _ffi.SimulatePlan(), _ffi.PlanLoad()
            L.es_simulate_plan_info(ptr, i, byref(sp))
            ranks = []
            for r in range(world_size if sp.available else 0):
                L.es_simulate_plan_rank(ptr, i, r, byref(load))
                ranks.append(Load(**_values(load)))
            v = _values(sp, ranks=ranks)
            v["metrics"] = PlanMetrics(**_values(sp.metrics, filtered_by_reason=None))
            self.plans.append(SimulatePlan(**v))

    def _epoch(self, e, world_size, workers):
        L, ep, rk = lib(), _ffi.SimulateEpoch(), _ffi.SimulateRank()
        L.es_simulate_epoch_info(self._ptr, e, byref(ep))
        ranks = []
        for r in range(world_size):
            ws = []
            for w in range(workers):
                L.es_simulate_worker_info(self._ptr, e, r, w, byref(rk))
                ws.append(SimulateRank(**_values(rk, shards=None, workers=None)))
            L.es_simulate_rank_info(self._ptr, e, r, byref(rk))
            shards = [_str(L.es_simulate_rank_shard(self._ptr, e, r, i)) for i in range(rk.n_shards)]
            ranks.append(SimulateRank(**_values(rk, shards=shards, workers=ws)))
        st = _ffi.SimulateStepTime()
        per_rank = (ctypes.c_double * max(world_size, 1))()
        L.es_simulate_step_time_info(self._ptr, e, byref(st), per_rank)
        step_time = dict(_values(st), ranks=list(per_rank)[:world_size])
        return SimulateEpoch(**_values(ep, ranks=ranks, step_time=step_time))

    def write_json(self, path):
        """The JSON of `equishard simulate --json` (docs/SIMULATE.md)."""
        with _Context() as ctx:
            ctx.check(lib().es_simulate_write_json(ctx.ptr, self._p, _bytes(path)))


def simulate(table, loader="cosyvoice", world_size=None, workers=None, epochs=1, plan=None,
             **settings):
    """es_simulate: the loader's own split replayed. epochs: n (epochs 0..n-1) or
    (first, last) inclusive. settings: es_simulate_settings / es_cost_model fields
    over the loader's defaults (es_simulate_defaults), e.g. min_length=10, trials=8.
    plan: a plan OUTDIR whose settings come first (es_simulate_settings_from_plan;
    world_size, workers and settings given override them); a shard plan is
    replayed as equishard.loaders feed it, a reshard plan is simulated on the
    table of its data.list (pass that table), a batch plan is refused (equal
    steps by construction)."""
    first, last = (0, epochs - 1) if isinstance(epochs, int) else epochs
    s = _ffi.SimulateSettings()
    lib().es_simulate_defaults(byref(s), ENUMS["loader"][loader])
    if plan is not None:
        mode = _ffi.c_enum()
        with _Context() as ctx:
            ctx.check(lib().es_simulate_settings_from_plan(ctx.ptr, byref(s), _bytes(plan),
                                                           byref(mode)))
        if mode.value == ENUMS["mode"]["batch"]:
            raise ValueError(f"{plan}: a batch plan trains the same steps on every rank by "
                             "construction; nothing to simulate")
        s.plan_side = 0
        if s.plan_dir:  # held by the structure, not by the call's temporary
            s.plan_dir = _bytes(plan)
    given = {k: v for k, v in (("world_size", world_size), ("workers", workers)) if v is not None}
    if plan is None:
        given = dict(dict(world_size=1, workers=1), **given)
    _apply(s, dict(settings, epoch_first=first, epoch_last=last, **given))
    table, owns = _table(table)
    out = c_void_p()
    try:
        with _Context() as ctx:
            ctx.check(lib().es_simulate(ctx.ptr, byref(s), table._p, byref(out)))
    finally:
        if owns:
            table.close()
    return SimulateResult(out.value, s.world_size, max(s.workers, 1))


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
        for i in range(L.es_validate_finding_count(ptr)):
            L.es_validate_finding(ptr, i, byref(f))
            self.findings.append(Finding(names[f.check], ENUMS.name("kind", f.kind), _str(f.key), row(f.row),
                                         f.value, _str(f.other), row(f.other_row)))
        info = _ffi.ValidateInfo()
        L.es_validate_result_info(ptr, byref(info))
        v = _values(info)
        v["device"] = ENUMS.name("device", info.device)
        self.info = ValidateInfo(**v)
        # after the data checks: "" unless rows lacked text token counts
        self.token_note = _str(L.es_validate_token_note(ptr))

    def rows(self, check, kind="utt"):
        """Rows (matrix or source entry ordinals) the check found, in order."""
        return [f.row for f in self.findings if f.check == check and f.kind == kind and f.row is not None]

    def write_json(self, path):
        """The report of `equishard validate --json` (docs/VALIDATE.md)."""
        with _Context() as ctx:
            ctx.check(lib().es_validate_write_json(ctx.ptr, self._p, _bytes(path)))


_SOURCE_FIELDS = {f for f, _ in _ffi.EmbSources._fields_}
_VALIDATE_FIELDS = {f for f, _ in _ffi.ValidateSettings._fields_} - {"reserved"}


def _validate_settings(settings):
    s = _ffi.ValidateSettings()
    lib().es_validate_defaults(byref(s))
    return _apply(s, {k: v for k, v in settings.items() if k in _VALIDATE_FIELDS})


def validate(lists=None, root=None, on_error="fail", **settings):
    """What `equishard validate` does: es_validate over the embedding sources
    (utt_emb, utt_keys, spk_emb, spk_keys, utt2spk: paths) against the
    utterances of `lists` (a CostTable, or cost tables / lists to load with root
    and on_error), then es_validate_data's loader-model checks over that table.
    settings: es_emb_sources, es_validate_settings (device, dim, min_cosine, ...)
    and es_validate_data_settings (+ cost model: world_size, loader, min_length,
    ...) fields. -> ValidateResult."""
    src = _apply(_ffi.EmbSources(), {k: v for k, v in settings.items() if k in _SOURCE_FIELDS})
    if root is not None and src.root is None:
        src.root = _bytes(root)  # also inside parquet lists named by utt_emb/spk_emb
    s = _validate_settings(settings)
    data = _ffi.ValidateDataSettings()
    lib().es_validate_data_defaults(byref(data))
    _apply(data, {k: v for k, v in settings.items()
                  if k not in _SOURCE_FIELDS and k not in _VALIDATE_FIELDS})
    table, owns = (None, False)
    if lists is not None:
        table, owns = (lists, False) if isinstance(lists, CostTable) else (
            load(lists, root=root, on_error=on_error), True)
    out = c_void_p()
    try:
        with _Context() as ctx:
            ctx.check(lib().es_validate(ctx.ptr, byref(s), byref(src),
                                        None if table is None else table._p, byref(out)))
            if table is not None:
                rc = lib().es_validate_data(ctx.ptr, byref(data), table._p, out)
                if rc != 0:
                    lib().es_validate_result_free(out)
                ctx.check(rc)
    finally:
        if owns:
            table.close()
    return ValidateResult(out.value)


def _address(buf):
    """The address of a buffer: an int, numpy (.ctypes.data), torch (.data_ptr()),
    array.array, or a ctypes object."""
    if isinstance(buf, int):
        return buf
    if hasattr(buf, "data_ptr"):
        return buf.data_ptr()
    if isinstance(buf, array.array):
        return buf.buffer_info()[0]
    if isinstance(buf, ctypes._SimpleCData) or isinstance(buf, (ctypes.Array, ctypes.Structure)):
        return ctypes.addressof(buf)
    if hasattr(buf, "ctypes"):
        return buf.ctypes.data
    raise TypeError(f"cannot take the address of {type(buf).__name__}")


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


def validate_tensor(data, n, dim, device="cpu", stream=0, dtype="float32", keys=None,
                    speakers=None, n_speakers=None, spk_data=None, spk_n=0, spk_keys=None,
                    expected_dim=None, **settings):
    """Validates an n x dim row-major embedding matrix the caller holds (see
    _address: numpy arr, torch tensor, array('f'), ctypes array, or an address).
    device "cpu"/"auto": host memory (es_validate_host); "cuda": device memory
    (es_validate_device; `stream` is synchronized first). speakers: per row the
    speaker index (-1 none); spk_data: the speaker matrix (spk_n rows). The matrix
    must stay alive and unchanged during the call. -> ValidateResult; .rows(check)
    gives the offending row indices."""
    s = _validate_settings(settings)
    unknown = set(settings) - _VALIDATE_FIELDS
    if unknown:
        raise TypeError(f"unknown settings {sorted(unknown)}")
    s.dim = dim if expected_dim is None else expected_dim
    s.device = ENUMS["device"]["cpu" if device == "cpu" else "auto"]
    key_arrays = []

    def matrix(buf, rows, names):
        m = _ffi.EmbMatrix(_address(buf), ENUMS["dtype"][dtype], rows, dim, None)
        if names is not None:
            if len(names) != rows:
                raise ValueError(f"{len(names)} keys for {rows} rows")
            arr = (c_char_p * rows)(*[_bytes(k) for k in names])
            key_arrays.append(arr)
            m.keys = ctypes.cast(arr, _ffi.STRS)
        return m

    utt = matrix(data, n, keys)
    spk = matrix(spk_data, spk_n, spk_keys) if spk_data is not None else None
    spks = None
    if speakers is not None:
        ids = (c_int32 * max(n, 1))(*speakers)
        known = n_speakers if n_speakers is not None else max(max(speakers, default=-1) + 1, spk_n)
        spks = _ffi.EmbSpeakers(ids, known)
    if device == "cuda" and stream:
        _sync_stream(stream)
    fn = lib().es_validate_device if device == "cuda" else lib().es_validate_host
    out = c_void_p()
    with _Context() as ctx:
        ctx.check(fn(ctx.ptr, byref(s), byref(utt), spk and byref(spk), spks and byref(spks),
                     byref(out)))
    return ValidateResult(out.value)
