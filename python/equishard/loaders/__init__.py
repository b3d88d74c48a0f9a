"""Drop-ins for the training loaders' list stage that read an equishard plan OUTDIR.

`equishard plan -o OUTDIR` (or Plan.write) writes plan.json and, per rank,
rank-00000.worker-0.list (shard mode) or rank-00000.batches.jsonl (batch mode);
docs/PLAN.md describes them. The classes here hand each rank and DataLoader worker
exactly its planned entries, in plan order, where the loaders would split the list
by position themselves:

- DataList: CosyVoice's cosyvoice/dataset/dataset.py DataList (same arguments,
  same yielded dicts: {"src", "rank", "world_size", "worker_id", "num_workers"}),
  for shard-mode plans.
- equishard.loaders.cosyvoice.Dataset: CosyVoice's Dataset(...) for batch-mode
  plans (planned batches fetched row by row, new batches every epoch).
- equishard.loaders.wenet.Dataset: WeNet's Dataset(...) (wenet/dataset/dataset.py)
  for batch plans (planned batches through WeNet's processors to padding) and
  shard plans (ShardList under WeNet's own pipeline).
- equishard.loaders.steps.equal_steps: ends every rank's epoch at the same step
  (shard and reshard plans, or no plan at all).
- equishard.loaders.step_log: logs every step's keys and time in the training
  process (EQUISHARD_STEP_LOG=DIR; equal_steps does too) for `equishard calibrate`.
  The Datasets cannot: they run in DataLoader workers, which never see a step.
- equishard.loaders.resume: a batch plan's epoch resumed at a step (set_epoch(e,
  step=s), state_dict, EQUISHARD_RESUME=E:S), and re-planned for a job of another
  world size (PlanDir.epoch_batches).
- ShardList: WeNet's TextLineDataPipe(...).shard(partition) in
  wenet/dataset/datapipes.py (yields {"file_name", "line"}).

Rank and world size come from torch.distributed when it is initialized, else from
the arguments, else the RANK / WORLD_SIZE environment variables (torchrun sets
them); the worker from torch.utils.data.get_worker_info() inside a DataLoader
worker, else the arguments. torch is optional: without it the classes are plain iterables and take
rank/worker from the environment and arguments. libequishard is loaded only
where it must be, on first use: reading a batch plan's costs.tsv.zst (the
shards' recorded sizes and times, and per-epoch plans), fetching planned rows.
"""
import json
import logging
import math
import os
import random

try:  # the loaders' base classes when torch is there, so DataLoader and the
    import torch.utils.data as _torch_data  # datapipes' functional API accept us
    _IterableDataset = _torch_data.IterableDataset
    _IterDataPipe = getattr(_torch_data, "IterDataPipe", _IterableDataset)
except ImportError:
    _torch_data = None
    _IterableDataset = _IterDataPipe = object

PLAN_ENV = "EQUISHARD_PLAN"
_log = logging.getLogger("equishard")


def distributed_info(rank=None, world_size=None):
    """(rank, world_size): torch.distributed if initialized, else the arguments,
    else $RANK / $WORLD_SIZE, else (0, 1)."""
    try:
        import torch.distributed as dist
        if dist.is_available() and dist.is_initialized():
            return dist.get_rank(), dist.get_world_size()
    except ImportError:
        pass
    if rank is None:
        rank = int(os.environ.get("RANK", 0))
    if world_size is None:
        world_size = int(os.environ.get("WORLD_SIZE", 1))
    return rank, world_size


def worker_info(worker_id=None, num_workers=None):
    """(worker_id, num_workers): torch's get_worker_info() inside a DataLoader
    worker, else the arguments, else (0, 1)."""
    if _torch_data is not None:
        info = _torch_data.get_worker_info()
        if info is not None:
            return info.id, info.num_workers
    return (worker_id or 0), (num_workers or 1)


class PlanDir:
    """A plan OUTDIR: plan.json's parameters and the rank files."""

    def __init__(self, outdir):
        from .. import core  # es_plan_dir_open: the one reader of plan.json
        self.outdir = os.fspath(outdir)
        try:  # plan.json missing, corrupt, truncated, of a newer schema, or a rank
            # file its mode and ranks name missing (reshard plans have none): one line
            d = core.read_plan_dir(self.outdir, check_files=True)
        except core.Error as e:
            raise ValueError(e.message) from None
        self.mode, self.world_size, self.workers = d.mode, d.world_size, d.workers
        if self.mode not in ("shard", "batch"):
            raise ValueError(f"{self.outdir}: a {self.mode} plan has no rank lists; train on "
                             "its data.list with the loader's own split")
        self._epoch, self._files, self._settings = d.epoch, d.files, d.settings
        self._rank_batches = [r.batches for r in d.ranks]
        # what the loaders compare with the running recipe, as the reader gives it:
        # the filter, batching and frame rate the plan was made with (settings), the
        # recipe it was made from and the rows its token filters could not judge
        self.settings = dict(d.settings)
        self.recipe = d.recipe
        self.token_count, self.rows_without_tokens = d.token_count, d.rows_without_tokens

    def check(self, rank, world_size, worker_id, num_workers):
        """Refuses a job whose ranks or workers differ from the plan's."""
        if world_size != self.world_size or not 0 <= rank < world_size:
            raise ValueError(f"{self.outdir}: planned for world size {self.world_size}, "
                             f"running rank {rank} of {world_size}")
        if max(num_workers, 1) != self.workers:
            raise ValueError(f"{self.outdir}: planned for {self.workers} DataLoader workers a "
                             f"rank, running with num_workers={num_workers}")

    def list_path(self, rank, worker=None):
        path = self._files.get((rank, worker)) if self.mode == "shard" else None
        if path is None:
            name = f"rank-{rank:05d}.list" if worker is None else f"rank-{rank:05d}.worker-{worker}.list"
            path = os.path.join(self.outdir, name)
        return path

    def entries(self, rank, worker=None):
        """Shard mode: the lines of rank-R.worker-W.list (worker None: rank-R.list)."""
        with open(self.list_path(rank, worker), encoding="utf-8") as f:
            return [line.rstrip("\n") for line in f]

    def batches(self, rank, worker=None):
        """Batch mode: rank-R.batches.jsonl's batches in step order (worker: only
        those that worker yields, step mod W)."""
        path = self._files.get((rank, None)) or os.path.join(self.outdir, f"rank-{rank:05d}.batches.jsonl")
        with open(path, encoding="utf-8") as f:
            out = [self._batch_line(path, n, line) for n, line in enumerate(f, 1)]
        planned = self._planned_batches(rank)
        if planned is not None and len(out) != planned:
            raise ValueError(f"{path}: {len(out)} batches, plan.json says rank {rank} has {planned} "
                             "(a truncated or edited file: write the plan again)")
        return out if worker is None else [b for b in out if b["worker"] == worker]

    def _planned_batches(self, rank):
        """plan.json's batch count of `rank`, or None when it records none."""
        return self._rank_batches[rank] if 0 <= rank < len(self._rank_batches) else None

    def _batch_line(self, path, n, line):
        """Line n of a batches.jsonl, checked: a hand-edited or damaged line would
        otherwise be trained short (keys and items zipped to the shorter) or not
        at all (a worker out of range), and the ranks' step counts would differ."""
        def bad(what):
            return ValueError(f"{path}:{n}: {what} (a hand-edited or damaged plan: write it again)")

        def whole(v):
            return isinstance(v, int) and not isinstance(v, bool)
        try:
            b = json.loads(line)
        except ValueError as e:
            raise bad(f"not JSON: {e}") from None
        if not isinstance(b, dict):
            raise bad("not a JSON object")
        if not whole(b.get("step")) or b["step"] != n - 1:
            raise bad(f"\"step\" is {b.get('step')!r}, expected {n - 1} (one batch a line, in step order)")
        if not whole(b.get("worker")) or not 0 <= b["worker"] < self.workers:
            raise bad(f"\"worker\" is {b.get('worker')!r}, not one of the plan's {self.workers} "
                      "worker(s)")
        keys, items = b.get("keys"), b.get("items")
        if not isinstance(keys, list) or not keys or not all(isinstance(k, str) for k in keys):
            raise bad("\"keys\" is not a non-empty list of strings")
        if not isinstance(items, list):
            raise bad("\"items\" is not a list")
        if len(items) != len(keys):
            raise bad(f"{len(keys)} keys but {len(items)} items")
        for i, item in enumerate(items):
            if (not isinstance(item, list) or len(item) != 2 or not isinstance(item[0], str)
                    or not item[0]):
                raise bad(f"items[{i}] is {item!r}, not [shard, pos]")
            if not whole(item[1]) or item[1] < 0:
                raise bad(f"items[{i}]'s pos is {item[1]!r}, not a whole number >= 0")
        if "repeat" in b and not isinstance(b["repeat"], bool):
            raise bad(f"\"repeat\" is {b['repeat']!r}, not true or false")
        return b

    @property
    def epoch(self):
        """The epoch the written rank files are for (plan.json's parameters)."""
        return self._epoch

    def epoch_batches(self, rank, worker, epoch, step=0, world_size=None, workers=None):
        """Batch mode: this rank's and worker's batches of `epoch`, as dicts like
        batches()'s lines ({"step", "worker", "keys", "items", "repeat"}). The
        written files when epoch is the plan's (or < 0: set_epoch never called);
        else the plan rebuilt from OUTDIR/costs.tsv.zst with plan.json's
        parameters and this epoch: every rank computes the same plan, without
        communication, and each epoch has its own batches (docs/PLAN.md).

        step: resume the epoch there: the first `step` planned steps are left
        out (not read), and the rest are handed to the DataLoader workers in
        turn from worker 0 ("worker" = (step - first step) mod W), so that the
        DataLoader's first batch is step `step`. world_size, workers: the
        running job's, when not the plan's: the epoch is planned again for
        them (resized(); the same in every rank and worker)."""
        K = self.world_size if world_size is None else world_size
        W = self.workers if workers is None else max(workers, 1)
        if not 0 <= rank < K:
            raise ValueError(f"{self.outdir}: rank {rank} of a world of {K}")
        e = self.epoch if epoch < 0 else epoch
        if (K, W) == (self.world_size, self.workers):
            every = self.batches(rank) if e == self.epoch else self._rebuilt(e, rank)
            if not 0 <= step <= len(every):
                raise ValueError(f"{self.outdir}: resuming epoch {e} at step {step}, but it has "
                                 f"{len(every)} steps a rank")
            if step == 0:
                return every if worker is None else [b for b in every if b["worker"] == worker]
            out = every[step:]
        else:
            self._worker = worker or 0
            out = self.resized(rank, e, step, K, W)
        out = [dict(b, worker=(b["step"] - step) % W) for b in out]
        return out if worker is None else [b for b in out if b["worker"] == worker]

    def _plan(self, epoch, leave_out=None, **override):
        """The library's plan of `epoch` with plan.json's parameters (and `override`)."""
        from .. import core  # the library is needed only from here on
        return core.plan(self.table(), epoch=epoch, leave_out=leave_out,
                         **dict(self.plan_settings(), **override))

    @staticmethod
    def _dicts(batches, first=0):
        return [dict(step=b.step + first, worker=b.worker, keys=b.keys,
                     items=[list(i) for i in b.items], repeat=b.repeat) for b in batches]

    def _rebuilt(self, epoch, rank):
        with self._plan(epoch) as p:
            return self._dicts(p.batches(rank))

    def trained_rows(self, epoch, step):
        """The table rows the plan's first `step` steps of `epoch` train, on
        every rank (the plan's world size and workers), and its steps a rank."""
        rows = set()
        steps = 0
        with self._plan(epoch) as p:
            for r in range(self.world_size):
                batches = p.batches(r)
                steps = len(batches)
                for b in batches:
                    if b.step < step:
                        rows.update(b.rows)
        if step > steps:
            raise ValueError(f"{self.outdir}: resuming epoch {epoch} at step {step}, but it has "
                             f"{steps} steps a rank")
        return rows, steps

    def resized(self, rank, epoch, step, world_size, workers):
        """Batch mode, a job of world_size ranks and `workers` DataLoader workers
        that the plan was not made for: rank's batches of `epoch` planned again
        for them from costs.tsv.zst and plan.json's parameters. From step 0: the
        whole epoch. Resumed at `step`: the utterances the plan's first `step`
        steps trained (on the plan's ranks) are left out and the rest is planned
        (es_plan_build_subset), its steps numbered on from `step`. Every rank and
        worker computes the same, without communication; cached per process."""
        cache = self.__dict__.setdefault("_resized", {})
        key = (epoch, step, world_size, workers, rank)
        if key not in cache:
            left_out, steps = self.trained_rows(epoch, step) if step else (None, None)
            if steps is not None and step == steps:
                cache[key] = []  # the epoch was trained to its end
            else:
                with self._plan(epoch, left_out, world_size=world_size, workers=workers) as p:
                    cache[key] = self._dicts(p.batches(rank), step)
            if rank == 0 and self.__dict__.get("_worker", 0) == 0:  # one line a job
                _log.warning("%s: planned for %d rank(s) x %d worker(s), running %d x %d: epoch %d "
                             "planned again for them from costs.tsv.zst%s", self.outdir,
                             self.world_size, self.workers, world_size, workers, epoch,
                             f" (resumed at step {step}: the {len(left_out)} utterance(s) its first "
                             f"{step} steps trained left out)" if step else "")
        return cache[key]

    def table(self):
        """OUTDIR/costs.tsv.zst as an equishard.CostTable, read once. Loaded in
        the training process before the DataLoader forks its workers
        (PlannedUtterances.set_epoch), the workers share it instead of each
        reading it again (about 1 s per million utterances)."""
        if getattr(self, "_table", None) is None:
            from .. import core
            self._table = core.CostTable.read(self.table_path())
        return self._table

    def __getstate__(self):  # a spawned worker reads the table itself
        state = dict(self.__dict__)
        state.pop("_table", None)
        return state

    def has_table(self):
        return os.path.exists(os.path.join(self.outdir, "costs.tsv.zst"))

    def check_shard(self, shard, path):
        """Refuses shard file `path` (the plan's `shard`) when its size or
        modification time moved since measure recorded them in costs.tsv.zst
        (shard_size, shard_mtime): a shard rebuilt with the same keys would
        otherwise be trained without a word on a plan balanced for other audio.
        Once per shard and process; nothing to check without the table (a plan
        before 0.2) or where the table records no file (raw lists, Kaldi)."""
        checked = self.__dict__.setdefault("_checked", set())
        if shard in checked or not self.has_table():
            return
        was = self.table().shard_file(shard)
        checked.add(shard)
        if was is None:
            return
        st = os.stat(path)
        size, mtime = was
        if st.st_size != size:
            raise ValueError(f"{path}: {st.st_size} bytes, {size} when measured: the shard changed "
                             "since the plan was made (measure it again and re-plan)")
        if st.st_mtime_ns != mtime:
            raise ValueError(f"{path}: modified at {_ns_time(st.st_mtime_ns)}, {_ns_time(mtime)} "
                             "when measured: the shard changed since the plan was made (measure "
                             "it again and re-plan, or restore its time if only that moved)")

    def table_path(self):
        path = os.path.join(self.outdir, "costs.tsv.zst")
        if not os.path.exists(path):
            raise ValueError(f"{self.outdir}: no costs.tsv.zst: per-epoch batches need a batch "
                             "plan written by equishard 0.2 or later (re-run equishard plan)")
        return path

    def plan_settings(self):
        """plan.json's parameters as equishard.plan() keyword arguments (es_plan_dir_settings:
        the fields `plan --resume-from` rebuilds the plan from too)."""
        return dict(self._settings)


def _ns_time(ns):
    """A file time in nanoseconds as SECONDS.NNNNNNNNN (the table's shard_mtime)."""
    return f"{ns // 1_000_000_000}.{ns % 1_000_000_000:09d}"


def _plan_dir(plan, lists):
    plan = plan or os.environ.get(PLAN_ENV)
    if plan is None and isinstance(lists, (str, os.PathLike)) and os.path.isdir(lists):
        plan = lists
    if plan is None:
        raise ValueError(f"no plan OUTDIR: pass plan= or set ${PLAN_ENV}")
    return PlanDir(plan)


class DataList(_IterableDataset):
    """CosyVoice's DataList over a plan: `DataList(lists, shuffle, partition)`
    with the plan OUTDIR from `plan=`, $EQUISHARD_PLAN, or `lists` itself when it
    is that folder. Yields this rank's and worker's entries in plan order as
    {"src": entry, "rank", "world_size", "worker_id", "num_workers"}; in batch
    mode one dict a batch, {"src": None, "batch": {"step", "keys", "items", ...}, ...}.

    The plan fixes which entries each rank and worker reads; with `shuffle`
    (CosyVoice's per-epoch list shuffle) each worker reads its own entries in
    a per-epoch order (random.Random(epoch), as CosyVoice's DistributedSampler
    seeds it), so the balance holds every epoch. A batch-mode plan is refused:
    CosyVoice's parquet_opener cannot read planned batches (use
    equishard.loaders.cosyvoice.Dataset).
    partition=False keeps CosyVoice's own behaviour (every rank reads all of
    `lists`, split by worker), which its cross-validation set uses. When `lists`
    is a list, every planned shard must be in it (a plan of other data fails)."""

    def __init__(self, lists, shuffle=True, partition=True, plan=None, rank=None,
                 world_size=None, worker_id=None, num_workers=None):
        self.lists = lists
        self.shuffle, self.partition = shuffle, partition
        self.plan = _plan_dir(plan, lists) if partition else None
        if self.plan is not None and self.plan.mode == "batch":
            raise ValueError(f"{self.plan.outdir} is a batch plan: DataList yields shard "
                             "entries for the recipe's opener, which cannot read planned "
                             "batches; use equishard.loaders.cosyvoice.Dataset")
        self.epoch = -1
        self._rank, self._world = rank, world_size
        self._worker, self._workers = worker_id, num_workers

    def set_epoch(self, epoch, step=0):
        if step:
            raise ValueError("DataList: resuming at a step needs a batch plan (a shard plan's "
                             "steps are not fixed in advance)")
        self.epoch = epoch

    def sampler_info(self):
        rank, world = distributed_info(self._rank, self._world)
        worker, workers = worker_info(self._worker, self._workers)
        return dict(rank=rank, world_size=world, worker_id=worker, num_workers=workers)

    def _entries(self, info):
        if self.plan is None:  # CosyVoice's partition=False: all of lists, by worker
            idx = list(range(len(self.lists)))
            if len(idx) < info["num_workers"]:
                idx = (idx * math.ceil(info["num_workers"] / len(idx)))[:info["num_workers"]]
            return [self.lists[i] for i in idx[info["worker_id"]::info["num_workers"]]]
        self.plan.check(**info)
        entries = self.plan.entries(info["rank"], info["worker_id"])
        if not isinstance(self.lists, (str, os.PathLike)):
            known = set(self.lists)
            missing = [e for e in entries if e not in known]
            if missing:
                raise ValueError(f"{self.plan.outdir}: planned entry {missing[0]!r} is not in "
                                 "the data list (a plan of other data?)")
        return entries

    def __iter__(self):
        info = self.sampler_info()
        entries = self._entries(info)
        if self.plan is not None and self.shuffle and self.epoch >= 0:
            random.Random(self.epoch).shuffle(entries)
        for entry in entries:
            yield dict(src=entry, **info)


class ShardList(_IterDataPipe):
    """WeNet's list stage, `TextLineDataPipe(filenames).shard(partition)`, over a
    plan: yields {"file_name": the rank list, "line": entry} for this rank's and
    worker's entries in plan order (shard mode), so `.map_ignore_error(parse_url)
    .tar_file_and_group()` (shards) or the raw-list parsing follow unchanged.
    `plan` is the OUTDIR (or $EQUISHARD_PLAN when None)."""

    def __init__(self, plan=None, partition=True, rank=None, world_size=None, worker_id=None,
                 num_workers=None):
        self.plan = _plan_dir(plan, None)
        if self.plan.mode != "shard":
            raise ValueError(f"{self.plan.outdir}: ShardList reads shard-mode plans; "
                             "this one is in batch mode")
        self.partition = partition
        self.epoch = -1
        self._args = (rank, world_size, worker_id, num_workers)

    def set_epoch(self, epoch):
        self.epoch = epoch

    def __iter__(self):
        rank, world = distributed_info(*self._args[:2])
        worker, workers = worker_info(*self._args[2:])
        self.plan.check(rank, world, worker, workers)
        ranks = [rank] if self.partition else range(self.plan.world_size)
        for r in ranks:  # partition=False: every rank reads every rank's list
            path = self.plan.list_path(r, worker)
            for line in self.plan.entries(r, worker):
                yield {"file_name": path, "line": line}
from .steps import equal_steps  # noqa: E402  (torch is imported on first use)
from . import step_log as step_log_module  # noqa: E402
from .step_log import step_log, StepLogError  # noqa: E402
