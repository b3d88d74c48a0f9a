"""equal_steps: every rank ends the epoch at the same step, with no barrier timeout.

Shard and reshard plans balance *work*, but a recipe's per-worker shuffle buffer
and dynamic batching still leave ranks a few batches apart; the rank that runs
dry first leaves the others waiting in the recipe's join (CosyVoice's
`cosyvoice_join`, WeNet's `wenet_join`) until its timeout, every epoch. Wrap the
training loop's DataLoader and they never wait there:

    for batch_idx, batch_dict in enumerate(equal_steps(train_data_loader)):

Before each step every rank takes its next batch (prefetching one), then the
ranks agree with one all_reduce (MIN) of a single int, on a gloo group of its
own, whether all still have one; the moment any rank has none, all stop together. The batches left over on
the other ranks are not trained this epoch (at most the spread of batch counts
per rank; `steps` and `left_over` say what happened). Without an initialized
torch.distributed, the loader is passed through unchanged.

With EQUISHARD_STEP_LOG=DIR set, every step is also logged for `equishard
calibrate` (step_log.py): the time from handing out a batch to the trainer's
next request, measured here in the training process, before the all_reduce
that waits for the other ranks.
"""
from .resume import first_step
from .step_log import open_log, timed


_OWN_GROUP = []  # the gloo group equal_steps agrees on, made once per process


def _own_group():
    """A gloo group of all ranks, for equal_steps' flag alone: its collectives
    never interleave with DDP's on the default group (nor with model.join()'s
    shadowing of them), it has the default (long) timeout, and the flag stays
    on the CPU whatever the training backend is. Made the first time, which is
    the same moment on every rank (new_group is collective)."""
    import torch.distributed as dist
    if not _OWN_GROUP:
        _OWN_GROUP.append(dist.new_group(backend="gloo"))
    return _OWN_GROUP[0]


class equal_steps:
    """Iterates `loader` as long as every rank still has a batch.
    group: the ranks that must agree (default: all, through a gloo group of
    equal_steps' own); a group passed in is used as it is (on an NCCL group the
    flag lives on the current CUDA device). step_log: a folder for the step
    log (default $EQUISHARD_STEP_LOG; neither: no log). After the loop: .steps (the
    epoch's step reached: its first step, 0 unless a batch plan's epoch was
    resumed (resume.py), plus the batches yielded) and .left_over (whether this
    rank still had a batch when another ran dry)."""

    def __init__(self, loader, group=None, step_log=None):
        self.loader, self.group, self.step_log = loader, group, step_log
        self.steps, self.left_over = 0, False

    def __len__(self):
        return len(self.loader)

    def __iter__(self):
        return timed(self._batches(), open_log(self.step_log))

    def _batches(self):
        self.steps, self.left_over = first_step(), False
        it = iter(self.loader)
        try:
            import torch
            import torch.distributed as dist
        except ImportError:  # no torch: no torch.distributed to agree over
            dist = None
        if dist is None or not (dist.is_available() and dist.is_initialized()):
            for batch in it:
                self.steps += 1
                yield batch
            return
        group = self.group if self.group is not None else _own_group()
        device = "cpu"
        if dist.get_backend(group) == "nccl":
            device = torch.device("cuda", torch.cuda.current_device())
        flag = torch.zeros(1, dtype=torch.int32, device=device)
        while True:
            try:
                batch, have = next(it), 1
            except StopIteration:
                batch, have = None, 0
            flag.fill_(have)
            dist.all_reduce(flag, op=dist.ReduceOp.MIN, group=group)
            if int(flag.item()) == 0:
                self.left_over = bool(have)
                return
            self.steps += 1
            yield batch
