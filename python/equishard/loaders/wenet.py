"""WeNet's `Dataset(...)` over an equishard plan: the one import a recipe changes.

    # wenet/utils/init_dataset.py
    from equishard.loaders.wenet import Dataset    # was: from wenet.dataset.dataset import Dataset

and EQUISHARD_PLAN=OUTDIR in the environment (or `plan=OUTDIR`). Same arguments
(data_type, data_list_file, tokenizer, conf, partition), same conf keys, same
per-utterance processors from the recipe's wenet.dataset.processor:

- a **batch** plan (`equishard plan --mode batch --frame-rate 100 ...`): every
  rank trains exactly the planned batches, the same count on every rank, each
  kept utterance once per epoch (a remainder-padding repeat aside). The source
  (WenetTarShardDatasetSource: the shard list, its shuffle, the split by rank
  and worker, tar_file_and_group) is replaced by one that fetches each planned
  batch's utterances by [shard, pos] through libequishard's row reader and
  yields the dicts tar_file_and_group yields ({"file_name", "tar_file_name",
  "key", "txt", "wav", other members}); for raw lists (data_type "raw",
  WenetRawDatasetSource + parse_json) it yields what parse_json makes of the
  planned line (pos is the line's index in the list; each worker reads the lists
  it needs once). Then WeNet's pipeline as
  wenet/dataset/dataset.py builds it from conf: decode_wav (errors logged and
  skipped, as map_ignore_error does), singal_channel, parse_speaker, tokenize,
  filter, resample, speed_perturb, compute_fbank / compute_mfcc /
  compute_log_mel_spectrogram, spec_aug, spec_sub, spec_trim, detect_language,
  detect_task. `shuffle` and `sort` are left out (they would reorder planned
  batches) and the batch stage is replaced by one that hands each planned batch
  intact to processor.padding. Each new iteration (a new epoch: DataLoader
  workers are persistent in WeNet's recipe, so set_epoch does not reach them)
  and `set_epoch(e)` give their own batches (PlanDir.epoch_batches);
  `set_epoch(e, step=s)` (or $EQUISHARD_RESUME=E:S) resumes an epoch at a step
  on the workers' next iteration (with no set_epoch, as WeNet's train.py: on
  their first), and a job of another world size or worker
  count has the epoch planned again for it (resume.py).
  The conf's filter and batch settings must be the plan's, and its features'
  frame rate the plan's --frame-rate: a difference is an error before the first
  batch; a planned batch that the pipeline empties is an error at that batch
  (the ranks' step counts would no longer agree).
  A shard whose size or modification time moved since it was measured
  (costs.tsv.zst's shard_size, shard_mtime) is an error when a worker first
  opens it, and so is a rank file that is not as plan wrote it. A plan
  without text-token counts is refused when the recipe's filter drops on
  tokens (plan with --symbol-table).
- a **shard** plan: WeNet's own pipeline (upstream's Dataset, unchanged) over
  a source that reads this rank's and worker's planned shards
  (equishard.loaders.ShardList, then the list shuffle, repeat, parse_url,
  tar_file_and_group and prefetch of WenetTarShardDatasetSource; for raw lists
  the planned lines, then WenetRawDatasetSource's shuffle and repeat, and
  upstream's parse_json). Pair it with equishard.loaders.equal_steps in the
  executor loop.
- partition=False (the cross-validation set): upstream's Dataset, unchanged.
  partition=True without a plan is an error.

torch and WeNet are needed to iterate (WeNet's processors run on torch); `processor=` stands in for
wenet.dataset.processor (tests). The library is loaded when a batch plan's
Dataset is made (it reads costs.tsv.zst once, before the workers fork) and in
the DataLoader workers on their first batch.
"""
import functools
import logging
import math
import os

from . import PLAN_ENV, PlanDir, ShardList, _IterableDataset, _IterDataPipe, distributed_info, worker_info
from .fetch import RowFetcher, fetch_batches
from .regroup import Trail, regroup, tag, watch
from .resume import ForwardsEpoch, Resume
from .stages import check_filter, check_token_counts, keyword_defaults, stage_name

AUDIO_FORMAT_SETS = {"flac", "mp3", "m4a", "ogg", "opus", "wav", "wma"}  # processor.AUDIO_FORMAT_SETS
def _wenet_processor():
    from wenet.dataset import processor
    return processor


def check_conf(plan, conf, processor):
    """Refuses a dataset_conf whose filter, batch or frame-rate settings are not
    the plan's: the plan would then not be what this loader trains."""
    params = plan.settings
    where = plan.outdir
    filter_settings = {**keyword_defaults(processor.filter), **conf.get("filter_conf", {})}
    check_filter(plan, filter_settings, "filter_conf")
    check_token_counts(plan, filter_settings, "filter_conf", "--symbol-table")
    feats = conf.get("feats_type", "fbank")
    if feats in ("fbank", "mfcc"):
        shift = {**keyword_defaults(getattr(processor, "compute_" + feats)),
                 **conf.get(feats + "_conf", {})}.get("frame_shift", 10)
        rate = 1000.0 / float(shift)
    else:
        c = {**keyword_defaults(processor.compute_log_mel_spectrogram),
             **conf.get("log_mel_spectrogram_conf", {})}
        rate = conf.get("resample_conf", {}).get("resample_rate", 16000) / float(c.get("hop_length", 160))
    planned_rate = params["frame_rate"]
    if not math.isclose(rate, planned_rate, rel_tol=1e-6):
        raise ValueError(f"{where}: the recipe's features come at {rate:g} frames a second, the plan "
                         f"counted {planned_rate:g} (plan with --frame-rate {rate:g})")
    batch_conf = conf.get("batch_conf", {})
    kind = batch_conf.get("batch_type", "static")
    if kind == "static":
        got = batch_conf.get("batch_size", 16)
        if got != params["batch_size"]:
            raise ValueError(f"{where}: the recipe batches {got} utterances (static), the plan "
                             + (f"{params['batch_size']}" if params["batch_size"] else
                                f"dynamically (max_frames_in_batch={params['max_frames_in_batch']})"))
    elif kind == "dynamic":
        got = batch_conf.get("max_frames_in_batch", 12000)
        if params["batch_size"] or got != params["max_frames_in_batch"]:
            raise ValueError(f"{where}: the recipe batches dynamically with max_frames_in_batch={got}, "
                             f"the plan with max_frames_in_batch={params['max_frames_in_batch']}, "
                             f"batch_size={params['batch_size']}")
    else:
        raise ValueError(f"{where}: batch_type {kind!r} has no planned equivalent (plan static "
                         "--batch-size or dynamic --max-frames-in-batch batches)")


def tar_example(row, file_name, line):
    """The dict tar_file_and_group yields for one utterance's members
    (equishard.RowReader's tar row: {"key", suffix -> bytes}), or None when
    its txt is not UTF-8 (upstream logs and drops such an utterance)."""
    example = {"file_name": file_name, "tar_file_name": line}
    for name, value in row.items():
        if name == "key":
            continue
        if name == "txt":
            try:
                example["txt"] = value.decode("utf8").strip()
            except UnicodeDecodeError:
                logging.warning("error to parse %s.txt", row["key"])
                return None
        elif name in AUDIO_FORMAT_SETS:
            example["wav"] = value
        else:
            example[name] = value
    example["key"] = row["key"]
    return example


class PlannedUtterances(_IterableDataset):
    """The source of a batch plan: this rank's and worker's planned batches of
    the epoch, one tar_file_and_group dict at a time, in batch order, each
    tagged with the batch it belongs to (read by planned_batches)."""

    def __init__(self, plan, data_list_file, root=None, cycle=1, lookahead=8, data_type="shard",
                 parse_json=None):
        self.plan, self.file_name, self.root = plan, data_list_file, root
        if plan.has_table():  # read here, once, before the DataLoader forks its workers:
            plan.table()      # they check each shard they open against it (check_shard)
        self.data_type, self.parse_json = data_type, parse_json
        self.cycle, self.lookahead = max(1, int(cycle)), lookahead
        self.epoch = None  # set_epoch's; None: the plan's own epoch
        self.step = 0      # set_epoch's step: where the first iteration after it starts
        self._since = 0    # iterations since then (persistent workers never see set_epoch)
        self.resume = Resume()

    def set_epoch(self, epoch, step=0):
        """Epoch `epoch` from step `step` (resume.py: a pending resume from
        $EQUISHARD_RESUME or load_state_dict applies here)."""
        self.epoch, self.step = self.resume.set_epoch(epoch, step)
        self._since = 0

    def state_dict(self):
        return self.resume.state_dict()

    def load_state_dict(self, state):
        self.resume.load(state)

    def next_epochs(self):
        """The epochs the next iteration trains (cycle of them), and counts them."""
        if self.epoch is None and not self._since:
            # The first iteration with no set_epoch before it: WeNet's bin/train.py
            # never calls set_epoch, so a pending resume ($EQUISHARD_RESUME,
            # load_state_dict) applies here, in each worker's copy (persistent
            # workers: their first iteration only; later ones count on from it).
            self.set_epoch(self.plan.epoch)
        first = (self.plan.epoch if self.epoch is None else self.epoch) + self._since
        self._since += self.cycle
        return list(range(first, first + self.cycle))

    def __iter__(self):
        rank, world = distributed_info()
        worker, workers = worker_info()
        epochs = self.next_epochs()
        step = self.step if self._since == self.cycle else 0  # the first iteration since set_epoch
        batches = [b for i, e in enumerate(epochs)
                   for b in self.plan.epoch_batches(rank, worker, e, step if i == 0 else 0, world,
                                                    max(workers, 1))]
        if self.data_type == "raw":
            yield from self._raw(batches)
            return
        fetcher = RowFetcher(self.root, check=self.plan.check_shard)
        trail = Trail()  # which stage a batch lost in the pipeline did not come out of
        try:
            for index, (b, rows) in enumerate(fetch_batches(fetcher, batches, self.lookahead)):
                for (shard, pos), key, row in zip(b["items"], b["keys"], rows):
                    if row.get("key") != key:
                        raise ValueError(f"{shard}: utterance {pos} is {row.get('key')!r}, the plan has "
                                         f"{key!r} there (the data changed after planning: re-plan)")
                    sample = tar_example(row, self.file_name, shard)
                    if sample is not None:
                        yield tag(sample, index, len(b["items"]), trail)
        finally:
            fetcher.close()


    def _raw(self, batches):
        """Raw lists: each planned line through the recipe's parse_json."""
        lists, trail = {}, Trail()
        for index, b in enumerate(batches):
            for (path, pos), key in zip(b["items"], b["keys"]):
                if path not in lists:
                    lists[path] = list_lines(os.path.join(self.root or "", path))
                lines = lists[path]
                sample = None
                if pos < len(lines):
                    sample = self.parse_json({"file_name": self.file_name, "line": lines[pos]})
                if sample is None or sample.get("key") != key:
                    raise ValueError(f"{path}: line {pos + 1} is not utterance {key!r} (the list "
                                     "changed after planning: re-plan)")
                yield tag(sample, index, len(b["items"]), trail)


def list_lines(path):
    """A raw list's lines as equishard measured them: split at "\n" (a "\r"
    before it dropped), blank lines counted, so that a row's pos indexes them."""
    with open(path, "rb") as f:
        data = f.read()
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return [(ln[:-1] if ln.endswith(b"\r") else ln).decode("utf8") for ln in lines]


def planned_batches(data, wrapper):
    """Replaces WeNet's batch stage: hands each planned batch, as the list of its
    samples in plan order (regroup), to `wrapper` (processor.padding)."""
    for batch in regroup(data):
        yield wrapper(batch)


def _map(data, fn):
    for sample in data:
        yield fn(sample)


def _map_ignore_error(data, fn):
    """MapperIgnoreErrorDataPipe: a failing sample is logged and skipped."""
    for sample in data:
        try:
            out = fn(sample)
        except Exception as ex:  # noqa: BLE001  (upstream catches everything too)
            logging.warning(str(ex))
            continue
        yield out


def _filter(data, fn):
    for sample in data:
        if fn(sample):
            yield sample


_KINDS = {"map": _map, "map_ignore_error": _map_ignore_error, "filter": _filter,
          "planned_batches": planned_batches}


class Pipeline(ForwardsEpoch, _IterableDataset):
    """A source and WeNet's stages, as dataset.py chains them: `stages` is a
    list of (kind, function), kind one of map, map_ignore_error, filter,
    planned_batches (function: the batch wrapper, processor.padding)."""

    def __init__(self, source, stages):
        self.source, self.stages = source, stages

    def __iter__(self):
        data = iter(self.source)
        for position, (kind, fn) in enumerate(self.stages):
            data = _KINDS[kind](data, fn)
            if kind != "planned_batches":  # a batch emptied here is named as lost here
                data = watch(data, position, stage_name(fn))
        return data


def planned_stages(tokenizer, conf, processor):
    """wenet/dataset/dataset.py's stages after the source, from conf, with
    shuffle and sort left out and the batch stage replaced."""
    from functools import partial
    stages = [("map_ignore_error", processor.decode_wav),
              ("map", partial(processor.singal_channel, **conf.get("singal_channel_conf", {})))]
    speaker_conf = conf.get("speaker_conf", None)
    if speaker_conf is not None:
        assert "speaker_table_path" in speaker_conf
        from wenet.utils.file_utils import read_symbol_table
        speaker_table = read_symbol_table(speaker_conf["speaker_table_path"])
        stages.append(("map", partial(processor.parse_speaker, speaker_dict=speaker_table)))
    if tokenizer is not None:
        stages.append(("map", partial(processor.tokenize, tokenizer=tokenizer)))
    stages.append(("filter", partial(processor.filter, **conf.get("filter_conf", {}))))
    stages.append(("map", partial(processor.resample, **conf.get("resample_conf", {}))))
    if conf.get("speed_perturb", False):
        stages.append(("map", partial(processor.speed_perturb)))
    feats_type = conf.get("feats_type", "fbank")
    assert feats_type in ["fbank", "mfcc", "log_mel_spectrogram"]
    if feats_type == "fbank":
        stages.append(("map", partial(processor.compute_fbank, **conf.get("fbank_conf", {}))))
    elif feats_type == "mfcc":
        stages.append(("map", partial(processor.compute_mfcc, **conf.get("mfcc_conf", {}))))
    else:
        stages.append(("map", partial(processor.compute_log_mel_spectrogram,
                                      **conf.get("log_mel_spectrogram_conf", {}))))
    if conf.get("spec_aug", True):
        stages.append(("map", partial(processor.spec_aug, **conf.get("spec_aug_conf", {}))))
    if conf.get("spec_sub", False):
        stages.append(("map", partial(processor.spec_sub, **conf.get("spec_sub_conf", {}))))
    if conf.get("spec_trim", False):
        stages.append(("map", partial(processor.spec_trim, **conf.get("spec_trim_conf", {}))))
    language_conf = conf.get("language_conf", {"limited_langs": ["zh", "en"]})
    stages.append(("map", partial(processor.detect_language, **language_conf)))
    stages.append(("map", processor.detect_task))
    # shuffle and sort: left out; batch: each planned batch, intact, to padding
    stages.append(("planned_batches", processor.padding))
    return stages


class PlannedShardSource(_IterDataPipe):
    """WenetTarShardDatasetSource over a shard plan: same arguments and stages,
    this rank's and worker's planned shards (ShardList) instead of
    TextLineDataPipe(filenames).shard(partition); the list shuffle (seeded per
    epoch by the DataLoader's shared seed, as upstream's) reorders them."""

    def __init__(self, filenames, prefetch=500, partition=True, shuffle=False, shuffle_size=10000,
                 cycle=1, plan=None):
        super().__init__()
        from wenet.dataset import datapipes  # noqa: F401  registers tar_file_and_group, ...
        from wenet.dataset.processor import parse_url
        self.dp = _planned_lines(plan, filenames, partition, shuffle, shuffle_size, cycle)
        self.dp = self.dp.map_ignore_error(parse_url).tar_file_and_group().prefetch(prefetch)

    def __iter__(self):
        for d in self.dp:
            yield d


class PlannedRawSource(_IterDataPipe):
    """WenetRawDatasetSource over a shard plan of a raw list: this rank's and
    worker's planned lines (ShardList: {"file_name", "line"}), the list shuffle
    and repeat as upstream's; parse_json follows in upstream's Dataset."""

    def __init__(self, filenames, prefetch=500, partition=True, shuffle=False, shuffle_size=10000,
                 cycle=1, plan=None):
        super().__init__()
        self.dp = _planned_lines(plan, filenames, partition, shuffle, shuffle_size,
                                 cycle).prefetch(prefetch)

    def __iter__(self):
        for d in self.dp:
            yield d


def _planned_lines(plan, filenames, partition, shuffle, shuffle_size, cycle):
    """The start both WeNet sources share: this rank's and worker's planned
    entries (ShardList), then upstream's list shuffle and repeat."""
    _check_entries(plan, filenames)
    dp = ShardList(plan.outdir, partition=partition)
    if shuffle:
        dp = dp.shuffle(buffer_size=shuffle_size)
    return dp.repeat(cycle)


def _check_entries(plan, data_list_file):
    with open(data_list_file, encoding="utf8") as f:
        known = {line.strip() for line in f}
    for r in range(plan.world_size):
        for w in range(plan.workers):
            for e in plan.entries(r, w):
                if e not in known:
                    raise ValueError(f"{plan.outdir}: planned shard {e!r} is not in {data_list_file} "
                                     "(a plan of other data?)")


def Dataset(data_type, data_list_file, tokenizer=None, conf=None, partition=True, plan=None,
            root=None, processor=None):
    """wenet.dataset.dataset.Dataset, reading an equishard plan (module doc).
    plan: the OUTDIR (default $EQUISHARD_PLAN); root: what relative shard paths
    in a batch plan resolve against (default: the current directory);
    processor: stands in for wenet.dataset.processor."""
    assert conf is not None
    assert data_type in ["raw", "shard"]
    plan = plan or os.environ.get(PLAN_ENV)
    if not partition:  # the cv set: every rank reads all of it, WeNet's own way
        from wenet.dataset import dataset as upstream
        return upstream.Dataset(data_type, data_list_file, tokenizer, conf, partition)
    if not plan:
        raise ValueError(f"equishard.loaders.wenet.Dataset: no plan OUTDIR for {data_list_file}: "
                         f"pass plan= or set ${PLAN_ENV}")
    planned = PlanDir(plan)
    if planned.mode == "shard":
        from wenet.dataset import dataset as upstream
        saved = upstream.WenetTarShardDatasetSource, upstream.WenetRawDatasetSource
        upstream.WenetTarShardDatasetSource = functools.partial(PlannedShardSource, plan=planned)
        upstream.WenetRawDatasetSource = functools.partial(PlannedRawSource, plan=planned)
        try:
            return upstream.Dataset(data_type, data_list_file, tokenizer, conf, partition)
        finally:
            upstream.WenetTarShardDatasetSource, upstream.WenetRawDatasetSource = saved
    processor = processor or _wenet_processor()
    check_conf(planned, conf, processor)
    source = PlannedUtterances(planned, data_list_file, root, cycle=conf.get("cycle", 1),
                               data_type=data_type, parse_json=processor.parse_json)
    return Pipeline(source, planned_stages(tokenizer, conf, processor))


__all__ = ["Dataset", "PlannedUtterances", "PlannedRawSource", "PlannedShardSource", "Pipeline",
           "planned_batches", "planned_stages", "check_conf", "tar_example", "list_lines",
           "stage_name"]
