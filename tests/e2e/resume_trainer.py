"""One rank of CosyVoice's own training loop, stopped and resumed (test_resume_e2e.py).

cosyvoice_trainer.py's loop (its pipeline, stand-ins and tiny model, copied
here so that this test does not depend on that file's options), on
equishard.loaders.cosyvoice.Dataset and a batch plan, with what a preempted job
and its restart need:

  --stop-after S     after S steps of the first epoch, every rank stops before
                     its next step and waits (the test then SIGKILLs the job);
                     each step is logged to OUT/steps-rank-R.jsonl as it is
                     trained, so what was trained survives the kill
  --start-epoch E    bin/train.py's resume: its loop starts at the checkpoint's
                     epoch + 1 (EQUISHARD_RESUME tells the Dataset where)

Upstream's Executor.train_one_epoc and cosyvoice_join run unmodified (from
../shared/third_party/cosyvoice); Executor.cv is left out. Writes
OUT/rank-R.json: per set_epoch, the keys of every trained step, the steps and
the join failures.
"""
import argparse
import datetime
import faulthandler
import json
import os
import sys
import time
import types

HERE = os.path.dirname(os.path.abspath(__file__))


def parse_args():
    ap = argparse.ArgumentParser()
    ap.add_argument("--recipe", required=True)
    ap.add_argument("--data-list", required=True)
    ap.add_argument("--start-epoch", type=int, default=0)
    ap.add_argument("--epochs", type=int, default=2, help="bin/train.py's max_epoch")
    ap.add_argument("--stop-after", type=int, default=None)
    ap.add_argument("--timeout", type=int, default=10)
    ap.add_argument("--num-workers", type=int, default=2)
    ap.add_argument("--out", required=True)
    ap.add_argument("--watchdog", type=int, default=240)
    return ap.parse_args()


args = parse_args()
sys.path[:0] = [os.path.join(HERE, "shims"), args.recipe]
tensorboard = types.ModuleType("torch.utils.tensorboard")  # stand-in: no tensorboard package
tensorboard.SummaryWriter = None
sys.modules["torch.utils.tensorboard"] = tensorboard

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch.utils.data import DataLoader  # noqa: E402

import cosyvoice_pipeline  # noqa: E402
from cosyvoice.utils import executor as executor_module  # noqa: E402
from cosyvoice.utils import train_utils  # noqa: E402

from equishard.loaders.cosyvoice import Dataset  # noqa: E402  the changed import

torch.set_num_threads(1)


class CharTokenizer:
    """Stand-in for get_qwen_tokenizer(): one token per code point."""

    def encode(self, text, allowed_special=None):
        return [ord(c) for c in text]


def pipeline():
    """cosyvoice_trainer.py's CosyVoice 2 data_pipeline, tokenizing by character."""
    return cosyvoice_pipeline.pipeline(CharTokenizer)


TRAINED = []  # this epoch's steps: the utts of each
STATE = {"epoch": None, "first": True, "log": None}


class TinyModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(80, 80)
        self.out = torch.nn.Linear(80, 1)

    def forward(self, batch, device):
        if STATE["first"] and args.stop_after is not None and len(TRAINED) == args.stop_after:
            STATE["log"].flush()
            time.sleep(10 ** 6)  # preempted here: the test kills the job
        TRAINED.append(list(batch["utts"]))
        STATE["log"].write(json.dumps({"epoch": STATE["epoch"], "utts": TRAINED[-1]}) + "\n")
        STATE["log"].flush()
        h = torch.tanh(self.proj(batch["speech_feat"]))
        return {"loss": self.out(h).pow(2).mean()}


JOINS = []
_upstream_join = train_utils.cosyvoice_join


def observed_join(group_join, info_dict):
    broke = _upstream_join(group_join, info_dict)
    JOINS.append(bool(broke))
    return broke


executor_module.cosyvoice_join = observed_join


def main():
    faulthandler.dump_traceback_later(args.watchdog, exit=True)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    os.makedirs(args.out, exist_ok=True)
    STATE["log"] = open(os.path.join(args.out, f"steps-rank-{rank}.jsonl"), "a")
    torch.manual_seed(0)
    model = torch.nn.parallel.DistributedDataParallel(TinyModel())
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0)
    train_dataset = Dataset(args.data_list, data_pipeline=pipeline(), mode="train", gan=False,
                            dpo=False, shuffle=True, partition=True)
    train_loader = DataLoader(train_dataset, batch_size=None, pin_memory=False,
                              num_workers=args.num_workers, prefetch_factor=2)
    executor = executor_module.Executor()
    executor.cv = lambda *a, **k: None
    info_dict = dict(train_engine="torch_ddp", dtype="fp32", accum_grad=1, grad_clip=5,
                     log_interval=100, save_per_step=-1, max_epoch=args.epochs)
    epochs = []
    for epoch in range(args.start_epoch, args.epochs):  # bin/train.py's loop
        executor.epoch = STATE["epoch"] = epoch
        train_dataset.set_epoch(epoch)
        dist.barrier()
        group_join = dist.new_group(backend="gloo", timeout=datetime.timedelta(seconds=args.timeout))
        del TRAINED[:], JOINS[:]
        executor.train_one_epoc(model, optimizer, scheduler, train_loader, None, None, info_dict,
                                None, group_join)
        STATE["first"] = False
        epochs.append(dict(set_epoch=epoch, steps=len(TRAINED), utts=list(TRAINED),
                           join_failures=sum(JOINS)))
        dist.destroy_process_group(group_join)
    with open(os.path.join(args.out, f"rank-{rank}.json"), "w") as f:
        json.dump(dict(rank=rank, epochs=epochs), f)
    dist.destroy_process_group()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # as cosyvoice_trainer.py: no teardown of the workers' queues


if __name__ == "__main__":
    main()
