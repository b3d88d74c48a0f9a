"""Planned batches through a recipe's per-utterance stages and back.

A batch-mode source yields a planned batch one utterance at a time, each sample
tagged with its batch (tag); the recipe's per-utterance processors (tokenize,
filter, resample, features, ...) pass the samples on; regroup, in place of the
recipe's batch stage, hands each planned batch on whole, in plan order. Shared
by equishard.loaders.cosyvoice and equishard.loaders.wenet.
"""
import logging

BATCH_KEY = "_equishard_batch"  # (index in this worker's batch sequence, planned size)


def tag(sample, index, size):
    """Marks `sample` as one of the `size` utterances of this worker's batch `index`."""
    sample[BATCH_KEY] = (index, size)
    return sample


def regroup(data):
    """The tagged samples as lists, one per planned batch, in plan order. A
    sample the pipeline dropped (its filter disagreeing with the plan's) is
    reported; a planned batch that arrives empty is an error, and so is a
    sample that lost its tag: this rank would train fewer steps than the others."""
    buf, current, planned, expected = [], None, 0, 0
    for sample in data:
        mark = sample.pop(BATCH_KEY, None)
        if mark is None:
            raise RuntimeError("equishard: a pipeline stage before batch replaced the sample dict and "
                               "lost its planned batch; stages must pass the sample on")
        index, size = mark
        if index != current:
            if buf:
                yield _complete(buf, current, planned)
            if index != expected:
                raise RuntimeError(f"equishard: planned batch {expected} of this worker lost all its "
                                   "utterances in the pipeline (a stage dropped them); the ranks' "
                                   "step counts would differ")
            buf, current, planned, expected = [], index, size, index + 1
        buf.append(sample)
    if buf:
        yield _complete(buf, current, planned)


def _complete(buf, index, planned):
    if len(buf) != planned:
        logging.warning("equishard: planned batch %d of this worker: %d of its %d utterances "
                        "were dropped by the pipeline", index, planned - len(buf), planned)
    return buf
