"""CosyVoice's `Dataset(...)` over an equishard plan: the one import a recipe changes.

    # cosyvoice/utils/train_utils.py
    from equishard.loaders.cosyvoice import Dataset    # was: from cosyvoice.dataset.dataset import Dataset

and EQUISHARD_PLAN=OUTDIR in the environment (or `plan=OUTDIR`). Same arguments,
same pipeline from the recipe's yaml, same batches handed to `padding`:

- a **batch** plan (`equishard plan --mode batch`): every rank trains exactly the
  planned batches, the same count on every rank, each kept utterance once per
  epoch (a remainder-padding repeat aside). The list stage and `parquet_opener`
  are replaced by a source that fetches each planned batch's rows by
  [shard, pos] through libequishard (not whole files); `shuffle` and `sort` are
  left out (they would reorder planned batches), and `batch` is replaced by a
  stage that hands each planned batch on intact. Every other stage (tokenize,
  filter, resample, compute_fbank, parse_embedding, ...) runs as the yaml lists
  it. `set_epoch(e)` gives epoch e its own batches (PlanDir.epoch_batches);
  `set_epoch(e, step=s)` (or $EQUISHARD_RESUME=E:S) resumes an epoch at a step,
  and a job of another world size or worker count has the epoch planned again
  for it (resume.py, docs/PYTHON.md "Resuming and resizing").
  The recipe's filter and batch settings must be the plan's: a difference is an
  error before the first batch, and a planned batch that the pipeline empties
  is an error at that batch (the ranks' step counts would no longer agree).
  A shard whose size or modification time moved since it was measured
  (costs.tsv.zst's shard_size, shard_mtime) is an error when a worker first
  opens it, and so is a rank file that is not as plan wrote it. A plan
  without text-token counts is refused when the recipe's filter drops on
  tokens (plan with --tokenizer).
- a **shard** plan: CosyVoice's own pipeline over equishard.loaders.DataList
  (this rank's and worker's planned shards, reshuffled per epoch).
- partition=False (CosyVoice's cross-validation set): CosyVoice's own split of
  data_list_file, unchanged. partition=True without a plan is an error.

torch is needed (CosyVoice's pipeline runs on it); the library is loaded when a
batch plan's Dataset is made (it reads costs.tsv.zst once, before the workers
fork) and in the DataLoader workers on their first batch.
"""
import functools
import os

from . import DataList, PlanDir, PLAN_ENV, _IterableDataset, distributed_info, worker_info
from .fetch import RowFetcher, fetch_batches
from .regroup import Trail, regroup, tag, watch
from .resume import ForwardsEpoch, Resume
from .stages import check_filter, check_token_counts, replan_hint, stage_name, stage_settings

# stages that must not see planned batches: the list opener (replaced by the
# fetching source) and the reordering buffers (left out)
_OPENERS = ("parquet_opener",)
_REORDERING = ("shuffle", "sort")


def read_lists(list_file):
    """cosyvoice.utils.file_utils.read_lists: the file's lines, stripped."""
    with open(list_file, "r", encoding="utf8") as fin:
        return [line.strip() for line in fin]


class Processor(ForwardsEpoch, _IterableDataset):
    """cosyvoice.dataset.dataset.Processor: one pipeline stage over its source."""

    def __init__(self, source, f, *args, **kw):
        assert callable(f)
        self.source, self.f, self.args, self.kw = source, f, args, kw

    def __iter__(self):
        return self.f(iter(self.source), *self.args, **self.kw)


def check_pipeline(plan, pipeline):
    """Refuses a pipeline whose filter or batch settings are not the plan's: the
    plan would then not be what this loader trains."""
    params = plan.settings
    names = [stage_name(f) for f in pipeline]
    if "batch" not in names or "padding" not in names:
        raise ValueError(f"{plan.outdir}: a batch plan needs the pipeline's batch and padding "
                         f"stages (found {names})")
    if names[0] not in _OPENERS:
        raise ValueError(f"{plan.outdir}: a batch plan replaces the pipeline's opener "
                         f"({' or '.join(_OPENERS)}); this pipeline starts with {names[0]}")
    for f in pipeline:
        if stage_name(f) == "filter":
            check_filter(plan, stage_settings(f), "filter")
            check_token_counts(plan, stage_settings(f), "filter", "--tokenizer")
        if stage_name(f) == "batch":
            settings = stage_settings(f)
            kind = settings.get("batch_type") or "static"
            if kind == "dynamic":
                got, want = settings.get("max_frames_in_batch"), params["max_frames_in_batch"]
                if params["batch_size"] or got != want:
                    raise ValueError(f"{plan.outdir}: the recipe batches dynamically with "
                                     f"max_frames_in_batch={got}, the plan with "
                                     f"max_frames_in_batch={want}, batch_size={params['batch_size']} "
                                     f"({replan_hint(plan)})")
            elif settings.get("batch_size") != params["batch_size"]:
                raise ValueError(f"{plan.outdir}: the recipe batches {settings.get('batch_size')} "
                                 f"utterances (static), the plan {params['batch_size'] or 'dynamically'} "
                                 f"({replan_hint(plan)})")


class PlannedUtterances(_IterableDataset):
    """The source of a batch plan: this rank's and worker's planned batches of
    the epoch, one utterance dict at a time, in batch order, each dict what
    parquet_opener would yield for that row ({"src", "rank", ..., columns}) plus
    the batch it belongs to (read by planned_batch)."""

    def __init__(self, plan, root=None, lookahead=8):
        self.plan, self.root, self.lookahead = plan, root, lookahead
        if plan.has_table():  # read here, once, before the DataLoader forks its workers:
            plan.table()      # they check each shard they open against it (check_shard)
        self.epoch, self.step = -1, 0
        self.resume = Resume()

    def set_epoch(self, epoch, step=0):
        """Epoch `epoch` from step `step` (resume.py: a pending resume from
        $EQUISHARD_RESUME or load_state_dict applies here)."""
        self.epoch, self.step = self.resume.set_epoch(epoch, step)
        if (self.epoch >= 0 and self.epoch != self.plan.epoch or self.step
                or distributed_info()[1] != self.plan.world_size):  # planned again in the workers:
            self.plan.table()  # the table read here, once, before the DataLoader forks them

    def state_dict(self):
        return self.resume.state_dict()

    def load_state_dict(self, state):
        self.resume.load(state)

    def __iter__(self):
        rank, world = distributed_info()
        worker, workers = worker_info()
        info = dict(rank=rank, world_size=world, worker_id=worker, num_workers=workers)
        batches = self.plan.epoch_batches(rank, worker, self.epoch, self.step, world,
                                          max(workers, 1))
        fetcher = RowFetcher(self.root, check=self.plan.check_shard)
        trail = Trail()  # which stage a batch lost in the pipeline did not come out of
        try:
            for index, (b, rows) in enumerate(fetch_batches(fetcher, batches, self.lookahead)):
                for (shard, pos), key, row in zip(b["items"], b["keys"], rows):
                    found = row.get("utt", row.get("key"))
                    if found != key:
                        raise ValueError(f"{shard}: row {pos} is {found!r}, the plan has {key!r} "
                                         "there (the data changed after planning: re-plan)")
                    sample = dict(src=shard, **info)
                    sample.update(row)
                    yield tag(sample, index, len(b["items"]), trail)
        finally:
            fetcher.close()


def planned_batch(data, mode="train", **_settings):
    """Replaces CosyVoice's batch stage: hands on each planned batch as the list
    of its samples, in plan order (regroup). The recipe's own batch settings
    were checked against the plan (check_pipeline)."""
    return regroup(data)


def _watched(f, position, name):
    """Stage f, its output watched (regroup.watch): a planned batch it empties
    is named as lost there."""
    def stage(data, *args, **kw):
        return watch(f(data, *args, **kw), position, name)
    stage.__name__ = name  # stage_name() still names the recipe's function
    return stage


def _batch_mode_pipeline(plan, pipeline):
    check_pipeline(plan, pipeline)
    out, batched = [], False
    for f in pipeline:
        name = stage_name(f)
        if name in _OPENERS or name in _REORDERING:
            continue
        batched |= name == "batch"
        out.append(planned_batch if name == "batch" else f if batched else
                   _watched(f, len(out), name))
    return out


def Dataset(data_list_file, data_pipeline, mode="train", gan=False, dpo=False, shuffle=True,
            partition=True, plan=None, root=None):
    """cosyvoice.dataset.dataset.Dataset, reading an equishard plan (module doc).
    plan: the OUTDIR (default $EQUISHARD_PLAN); root: what relative shard paths
    in the plan resolve against (default: the current directory)."""
    plan = plan or os.environ.get(PLAN_ENV)
    pipeline = list(data_pipeline)
    for i in range(1, len(pipeline)):  # CosyVoice's own adjustments, as its Dataset makes them
        if stage_name(pipeline[i]) == "compute_fbank" and gan is True:
            pipeline[i] = functools.partial(pipeline[i], token_mel_ratio=0)
        if stage_name(pipeline[i]) == "padding":
            pipeline[i] = functools.partial(pipeline[i], gan=gan, dpo=dpo)
    if partition and not plan:
        raise ValueError(f"equishard.loaders.cosyvoice.Dataset: no plan OUTDIR for {data_list_file}: "
                         f"pass plan= or set ${PLAN_ENV}")
    planned = PlanDir(plan) if partition else None
    if planned is not None and planned.mode == "batch":
        dataset = PlannedUtterances(planned, root)
        pipeline = _batch_mode_pipeline(planned, pipeline)
    elif planned is not None:
        dataset = DataList(read_lists(data_list_file), shuffle=shuffle, partition=True,
                           plan=planned.outdir)
    else:
        dataset = DataList(read_lists(data_list_file), shuffle=shuffle, partition=False)
    for func in pipeline:
        dataset = Processor(dataset, func, mode=mode)
    return dataset
