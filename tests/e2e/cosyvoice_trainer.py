"""One rank of CosyVoice's own training loop, as bin/train.py runs it, on CPU.

Launched by torchrun (python -m torch.distributed.run): RANK, WORLD_SIZE,
LOCAL_RANK and the rendezvous come from the environment, as in the recipe.
What runs is upstream's, unmodified, from ../shared/third_party/cosyvoice:
`Dataset` and its `Processor` chain (dataset.py), the processors
(processor.py: parquet_opener, tokenize, filter, resample, compute_fbank,
parse_embedding, shuffle, sort, batch, padding), `Executor.train_one_epoc`
(executor.py: the step loop, DDP's model.join, the epoch-end dist.barrier) and
`cosyvoice_join` (train_utils.py: the per-step monitored_barrier on a gloo
group with the recipe's timeout). The recipe's per-epoch loop (train.py's
`for epoch ...: set_epoch; barrier; new_group; train_one_epoc`) is written out
below, as it is there.

What the variants change, and nothing else:
  --dataset equishard   the one import: equishard.loaders.cosyvoice.Dataset
                        (EQUISHARD_PLAN names the plan)
  --equal-steps         the one loop line: enumerate(equal_steps(train_data_loader))

Stand-ins, each for something not installable here (shims/README.md): the
modules in shims/ (transformers' AutoTokenizer among them: upstream's
get_qwen_tokenizer runs on the Qwen2 files of --qwen-pretrain-path through
equishard's tokenizer, the ids `equishard measure --recipe` counts);
torch.utils.tensorboard (no tensorboard package); matcha's mel_spectrogram by a
band-energy feature with the same frame count (hop 320 at 16 kHz: 50 frames a
second, as CosyVoice 2's hop 480 at 24 kHz); Executor.cv (cross-validation and
checkpoint saving: not what is measured). The model is tiny, its step cost
grows with the padded frames. Audio stays at 16 kHz (resample_rate 16000) and
compute_whisper_fbank (whisper) is left out of the pipeline.

Writes OUT/rank-R.json: per epoch, the utterance keys of every trained step,
the steps, and each cosyvoice_join call's result and seconds; with
--equal-steps also `batches`, how many batches this rank's loader had in all
(after the epoch, the batches equal_steps left over are counted by draining
the same DataLoader iterator), which simulate --plan predicts.
"""
import argparse
import datetime
import faulthandler
import functools
import json
import os
import sys
import time
import types

HERE = os.path.dirname(os.path.abspath(__file__))


def parse_args():
    ap = argparse.ArgumentParser()
    ap.add_argument("--recipe", required=True, help="third_party/cosyvoice")
    ap.add_argument("--data-list", required=True)
    ap.add_argument("--qwen-pretrain-path", required=True,
                    help="train.py's --qwen_pretrain_path: the folder of Qwen2's vocab.json, merges.txt")
    ap.add_argument("--dataset", choices=("cosyvoice", "equishard"), default="cosyvoice")
    ap.add_argument("--equal-steps", action="store_true")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--timeout", type=int, default=5, help="the recipe's --timeout (join), s")
    ap.add_argument("--num-workers", type=int, default=2)
    ap.add_argument("--out", required=True)
    ap.add_argument("--watchdog", type=int, default=240, help="seconds before a hung rank dumps its stacks and exits")
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
from cosyvoice.tokenizer.tokenizer import get_qwen_tokenizer  # noqa: E402
from cosyvoice.utils import executor as executor_module  # noqa: E402
from cosyvoice.utils import train_utils  # noqa: E402

if args.dataset == "equishard":
    from equishard.loaders.cosyvoice import Dataset  # noqa: E402  the changed import
else:
    from cosyvoice.dataset.dataset import Dataset  # noqa: E402
from equishard.loaders import equal_steps  # noqa: E402

torch.set_num_threads(1)  # 4 ranks x 3 processes on a 2-core machine


def pipeline():
    """CosyVoice 2's data_pipeline with the recipe's Qwen2 tokenizer."""
    return cosyvoice_pipeline.pipeline(functools.partial(
        get_qwen_tokenizer, token_path=args.qwen_pretrain_path, skip_special_tokens=True))


TRAINED = []  # the utts of every step this rank trained, in order


class TinyModel(torch.nn.Module):
    """Cost grows with the padded frames (batch x longest x 80 x 80)."""

    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(80, 80)
        self.out = torch.nn.Linear(80, 1)

    def forward(self, batch, device):
        TRAINED.append(list(batch["utts"]))
        h = torch.tanh(self.proj(batch["speech_feat"]))
        return {"loss": self.out(h).pow(2).mean()}


JOINS = []  # (seconds, broke) of every cosyvoice_join call
_upstream_join = train_utils.cosyvoice_join


def observed_join(group_join, info_dict):
    """Calls upstream's cosyvoice_join and notes its result and duration."""
    start = time.monotonic()
    broke = _upstream_join(group_join, info_dict)
    JOINS.append((time.monotonic() - start, bool(broke)))
    return broke


executor_module.cosyvoice_join = observed_join


class Drainable:
    """The DataLoader, keeping the iterator equal_steps takes from it, so the
    batches left over when another rank ran dry can be counted afterwards."""

    def __init__(self, loader):
        self.loader, self.it = loader, None

    def __len__(self):
        return len(self.loader)

    def __iter__(self):
        self.it = iter(self.loader)
        return self.it

    def rest(self):
        return sum(1 for _ in self.it)


def main():
    faulthandler.dump_traceback_later(args.watchdog, exit=True)  # a hang shows where
    dist.init_process_group("gloo")  # train.py's init_distributed, torch_ddp on CPU
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = torch.nn.parallel.DistributedDataParallel(TinyModel())
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0)
    # train_utils.init_dataset_and_dataloader, train side
    train_dataset = Dataset(args.data_list, data_pipeline=pipeline(), mode="train", gan=False,
                            dpo=False, shuffle=True, partition=True)
    train_loader = DataLoader(train_dataset, batch_size=None, pin_memory=False,
                              num_workers=args.num_workers, prefetch_factor=2)
    executor = executor_module.Executor()
    executor.cv = lambda *a, **k: None  # stand-in: no cross-validation / checkpoint
    info_dict = dict(train_engine="torch_ddp", dtype="fp32", accum_grad=1, grad_clip=5,
                     log_interval=100, save_per_step=-1, max_epoch=args.epochs)
    epochs = []
    for epoch in range(args.epochs):  # bin/train.py's loop
        executor.epoch = epoch
        train_dataset.set_epoch(epoch)
        dist.barrier()
        group_join = dist.new_group(backend="gloo", timeout=datetime.timedelta(seconds=args.timeout))
        drainable = Drainable(train_loader)
        loader = equal_steps(drainable) if args.equal_steps else train_loader
        del TRAINED[:], JOINS[:]
        start = time.monotonic()
        executor.train_one_epoc(model, optimizer, scheduler, loader, None, None, info_dict, None,
                                group_join)
        epochs.append(dict(steps=len(TRAINED), utts=list(TRAINED),
                           join_failures=sum(b for _, b in JOINS),
                           join_seconds_max=max((s for s, _ in JOINS), default=0.0),
                           seconds=time.monotonic() - start))
        if args.equal_steps:  # its own batches: those trained, the one prefetched, the rest
            epochs[-1]["batches"] = loader.steps + loader.left_over + drainable.rest()
        dist.destroy_process_group(group_join)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, f"rank-{rank}.json"), "w") as f:
        json.dump(dict(rank=rank, epochs=epochs), f)
    dist.destroy_process_group()
    # Leave here, without unwinding: under load, torch 1.13 has hung a rank in the
    # teardown of main()'s objects (DataLoader workers' queues, gloo's threads)
    # after its results were written; the watchdog's dumps showed no Python frame
    # below the module's. Nothing is left to flush but the streams.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
