"""Planned batches through a recipe's per-utterance stages and back.

A batch-mode source yields a planned batch one utterance at a time, each sample
tagged with its batch (tag); the recipe's per-utterance processors (tokenize,
filter, resample, features, ...) pass the samples on; regroup, in place of the
recipe's batch stage, hands each planned batch on whole, in plan order. Shared
by equishard.loaders.cosyvoice and equishard.loaders.wenet.

A planned batch that arrives empty is an error naming the stage that dropped
its utterances: the source starts a Trail per iteration and puts it in each
sample's tag; watch, after each stage, notes which batches came out of it;
regroup asks the trail for the first stage a missing batch did not come out of.
"""
import logging

BATCH_KEY = "_equishard_batch"  # (index in this worker's batch sequence, planned size)


# why a stage may drop every utterance of a batch, by the recipe function's name
_CAUSES = {
    "source": "their rows were not what the recipe's opener yields (see the warnings logged above)",
    "filter": "the recipe's filter dropped what the plan kept: its tokenizer counts other text "
              "tokens than the plan did (measure with --tokenizer, the recipe's, and re-plan), or a "
              "stage before it changed the lengths",
    "decode_wav": "it failed on each of them (see the warnings logged above)",
}


class Trail:
    """The batch indices that came out of each stage of one iteration, kept
    for the batches regroup has not finished (pruned as it goes)."""

    def __init__(self):
        self.stages = {}  # position (-1: the source) -> (name, set of batch indices)

    def saw(self, position, name, index):
        self.stages.setdefault(position, (name, set()))[1].add(index)

    def prune(self, below):
        for _, seen in self.stages.values():
            for i in [i for i in seen if i < below]:
                seen.discard(i)

    def lost_at(self, index):
        """The name of the first stage that passed on none of batch `index`."""
        for position in sorted(self.stages):
            name, seen = self.stages[position]
            if index not in seen:
                return name
        return None


def tag(sample, index, size, trail=None):
    """Marks `sample` as one of the `size` utterances of this worker's batch
    `index` (and, with a trail, notes that the source passed it on)."""
    if trail is None:
        sample[BATCH_KEY] = (index, size)
        return sample
    trail.saw(-1, "source", index)
    sample[BATCH_KEY] = (index, size, trail)
    return sample


def watch(data, position, name):
    """Passes `data` (a stage's output) on, noting each tagged sample's batch
    in its trail as having come out of stage `name` at `position`."""
    for sample in data:
        mark = sample.get(BATCH_KEY) if isinstance(sample, dict) else None
        if mark is not None and len(mark) > 2:
            mark[2].saw(position, name, mark[0])
        yield sample


def _lost(expected, trail):
    stage = trail.lost_at(expected) if trail is not None else None
    where = (f"in the pipeline's {stage} stage ({_CAUSES.get(stage, 'it passed none of them on')})"
             if stage else "in the pipeline (a stage dropped them)")
    return RuntimeError(f"equishard: planned batch {expected} of this worker lost all its utterances "
                        f"{where}; the ranks' step counts would differ")


def regroup(data):
    """The tagged samples as lists, one per planned batch, in plan order. A
    sample the pipeline dropped (its filter disagreeing with the plan's) is
    reported; a planned batch that arrives empty is an error, and so is a
    sample that lost its tag: this rank would train fewer steps than the others."""
    buf, current, planned, expected, trail = [], None, 0, 0, None
    for sample in data:
        mark = sample.pop(BATCH_KEY, None)
        if mark is None:
            raise RuntimeError("equishard: a pipeline stage before batch replaced the sample dict and "
                               "lost its planned batch; stages must pass the sample on")
        index, size = mark[:2]
        if index != current:
            if buf:
                yield _complete(buf, current, planned)
            if index != expected:
                raise _lost(expected, mark[2] if len(mark) > 2 else None)
            if len(mark) > 2:
                mark[2].prune(index)
            buf, current, planned, expected = [], index, size, index + 1
        buf.append(sample)
        trail = mark[2] if len(mark) > 2 else None
    if buf:
        yield _complete(buf, current, planned)
    if trail is not None:  # the last batches, lost with nothing after them to tell
        name, seen = trail.stages.get(-1, ("source", set()))
        missing = sorted(i for i in seen if i >= expected)
        if missing:
            raise _lost(missing[0], trail)


def _complete(buf, index, planned):
    if len(buf) != planned:
        logging.warning("equishard: planned batch %d of this worker: %d of its %d utterances "
                        "were dropped by the pipeline", index, planned - len(buf), planned)
    return buf
