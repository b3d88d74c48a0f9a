"""One rank of a training loop whose step cost is quadratic in the padded length.

CosyVoice's own data pipeline (upstream processors, as cosyvoice_trainer.py runs
them, with the same stand-ins from shims/) behind equishard.loaders.cosyvoice.Dataset
on a batch plan (EQUISHARD_PLAN), a DataLoader with its workers, and
equishard.loaders.equal_steps around it, which logs every step (--step-log DIR:
EQUISHARD_STEP_LOG) in this, the training, process.

The model is attention over the padded speech features: scores (B, T, T), so a
step costs about B × T² (what a CosyVoice LLM or flow's attention costs), plus
a per-frame projection and a per-step constant. Each rank trains its own copy
(no DDP all-reduce inside the step), and equal_steps' per-step agreement keeps
the ranks in lock-step as a synchronous trainer would: the logged time of a
step is the rank's own compute, and max/mean over the ranks at a step is the
straggler a DDP all-reduce would make every rank wait for.

Writes OUT/rank-R.json: steps per epoch.
"""
import argparse
import faulthandler
import json
import os
import sys
import types

HERE = os.path.dirname(os.path.abspath(__file__))

ap = argparse.ArgumentParser()
ap.add_argument("--recipe", required=True)
ap.add_argument("--data-list", required=True)
ap.add_argument("--epochs", type=int, default=2)
ap.add_argument("--num-workers", type=int, default=1)
ap.add_argument("--step-log", required=True)
ap.add_argument("--out", required=True)
ap.add_argument("--watchdog", type=int, default=240)
args = ap.parse_args()
sys.path[:0] = [os.path.join(HERE, "shims"), args.recipe]
tensorboard = types.ModuleType("torch.utils.tensorboard")
tensorboard.SummaryWriter = None
sys.modules["torch.utils.tensorboard"] = tensorboard

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch.utils.data import DataLoader  # noqa: E402

import cosyvoice_pipeline  # noqa: E402
from equishard.loaders import equal_steps  # noqa: E402
from equishard.loaders.cosyvoice import Dataset  # noqa: E402

torch.set_num_threads(1)


class CharTokenizer:
    def encode(self, text, allowed_special=None):
        return [ord(c) for c in text]


def pipeline():
    """cosyvoice_trainer.py's CosyVoice 2 data_pipeline, tokenizing by character."""
    return cosyvoice_pipeline.pipeline(CharTokenizer)


class Attention(torch.nn.Module):
    """Self-attention over the padded frames: B × T × T scores, in 4 layers."""

    def __init__(self, dim=128, layers=4):
        super().__init__()
        self.proj = torch.nn.Linear(80, dim)
        self.out = torch.nn.Linear(dim, 1)
        self.layers = layers

    def forward(self, feat):
        h = self.proj(feat)
        for _ in range(self.layers):
            a = torch.softmax(h @ h.transpose(1, 2) / h.size(-1) ** 0.5, dim=-1)
            h = torch.tanh(a @ h)
        return self.out(h).pow(2).mean()


def main():
    faulthandler.dump_traceback_later(args.watchdog, exit=True)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = Attention()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    dataset = Dataset(args.data_list, data_pipeline=pipeline(), mode="train", gan=False, dpo=False,
                      shuffle=True, partition=True)
    loader = DataLoader(dataset, batch_size=None, pin_memory=False, num_workers=args.num_workers,
                        prefetch_factor=2)
    epochs = []
    for epoch in range(args.epochs):
        dataset.set_epoch(epoch)
        dist.barrier()
        steps = equal_steps(loader, step_log=args.step_log)
        for batch in steps:
            loss = model(batch["speech_feat"])
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
        epochs.append(dict(steps=steps.steps))
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, f"rank-{rank}.json"), "w") as f:
        json.dump(dict(rank=rank, epochs=epochs), f)
    dist.barrier()
    dist.destroy_process_group()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # as cosyvoice_trainer.py: no teardown of the loader's workers


if __name__ == "__main__":
    main()
