"""equal_steps: every rank ends the epoch at the same step, with no barrier timeout.

Shard and reshard plans balance *work*, but a recipe's per-worker shuffle buffer
and dynamic batching still leave ranks a few batches apart; the rank that runs
dry first leaves the others waiting in the recipe's join (CosyVoice's
`cosyvoice_join`, WeNet's `wenet_join`) until its timeout, every epoch. Wrap the
training loop's DataLoader and they never wait there:

    for batch_idx, batch_dict in enumerate(equal_steps(train_data_loader, group_join)):

Before each step every rank takes its next batch (prefetching one), then the
ranks agree with one all_reduce (MIN) of a single int whether all still have
one; the moment any rank has none, all stop together. The batches left over on
the other ranks are not trained this epoch (at most the spread of batch counts
per rank; `steps` and `left_over` say what happened). Without an initialized
torch.distributed, the loader is passed through unchanged.
"""


class equal_steps:
    """Iterates `loader` as long as every rank of `group` still has a batch.
    group: a torch.distributed process group (default: the world). On an NCCL
    group the flag lives on the current CUDA device, elsewhere on the CPU.
    After the loop: .steps (batches yielded) and .left_over (whether this rank
    still had a batch when another ran dry)."""

    def __init__(self, loader, group=None):
        self.loader, self.group = loader, group
        self.steps, self.left_over = 0, False

    def __len__(self):
        return len(self.loader)

    def __iter__(self):
        import torch
        import torch.distributed as dist
        self.steps, self.left_over = 0, False
        it = iter(self.loader)
        if not (dist.is_available() and dist.is_initialized()):
            for batch in it:
                self.steps += 1
                yield batch
            return
        device = "cpu"
        if dist.get_backend(self.group) == "nccl":
            device = torch.device("cuda", torch.cuda.current_device())
        flag = torch.zeros(1, dtype=torch.int32, device=device)
        while True:
            try:
                batch, have = next(it), 1
            except StopIteration:
                batch, have = None, 0
            flag.fill_(have)
            dist.all_reduce(flag, op=dist.ReduceOp.MIN, group=self.group)
            if int(flag.item()) == 0:
                self.left_over = bool(have)
                return
            self.steps += 1
            yield batch
