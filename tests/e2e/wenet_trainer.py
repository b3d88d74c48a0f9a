"""One rank of WeNet's own training loop, as wenet/bin/train.py runs it, on CPU.

Launched by torchrun (python -m torch.distributed.run): RANK, WORLD_SIZE,
LOCAL_RANK and the rendezvous come from the environment, as in the recipe.
What runs is upstream's, unmodified, from ../shared/third_party/wenet:
`Dataset` (wenet/dataset/dataset.py: WenetTarShardDatasetSource, the
processors, shuffle, sort, batching) built by train_utils.init_dataset_and_dataloader
(persistent DataLoader workers, as the recipe), `Executor.train` (executor.py: the
step loop inside DDP's model.join(), batch_forward/backward,
update_parameter_and_lr) and `wenet_join` (train_utils.py). The per-epoch loop
of bin/train.py (`dist.barrier(); group_join = dist.new_group(gloo, timeout);
executor.train(...); destroy_process_group(group_join)`) is written out below.

wenet_join does nothing under torch_ddp (DDP's model.join() absorbs uneven
inputs: a rank that ran dry shadows the others' all-reduces until they finish)
and calls dist.monitored_barrier on group_join under deepspeed (a rank that ran
dry makes the others fail the barrier after the timeout and break: their
remaining batches are skipped). --join picks which of the two this run sees:
  ddp       the recipe's default, torch_ddp: wenet_join returns at once
  barrier   wenet_join as under deepspeed (train_engine "deepspeed" in the
            dict it is given; deepspeed itself is not installable here), with
            the model still under DDP's model.join()

What the variants change, and nothing else:
  --dataset equishard   the one import (wenet/utils/init_dataset.py):
                        equishard.loaders.wenet.Dataset (EQUISHARD_PLAN names the plan)
  --equal-steps         the one loop line: enumerate(equal_steps(train_data_loader))

A preempted job and its restart (test_wenet_resume_e2e.py):
  --stop-after S        the first epoch this process trains stops before its
                        step S + 1 and waits (the test then SIGKILLs the job);
                        each step's keys go to OUT/steps-rank-R.jsonl as it is
                        trained, so what was trained survives the kill

Stand-ins, each for something not installable here (shims/README.md): the
modules in shims/ (wenet's own modules the shared copy leaves out, langid,
librosa, tensorboardX, deepspeed) and shims/torch_compat.py (torch 2.0's
datapipes sharding module; torch.distributed.fsdp, which does not import on
Python 3.11). Executor.cv (cross-validation and checkpoints) is not run. The
model is tiny, its step cost grows with the padded frames.

Writes OUT/rank-R.json: per epoch, the utterance keys of every trained step,
the steps, each wenet_join call's result and seconds, and the seconds between
this rank's last step and the end of the epoch (its wait in the join).
"""
import argparse
import datetime
import faulthandler
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def parse_args():
    ap = argparse.ArgumentParser()
    ap.add_argument("--recipe", required=True, help="third_party/wenet")
    ap.add_argument("--data-list", required=True)
    ap.add_argument("--data-type", choices=("shard", "raw"), default="shard")
    ap.add_argument("--units", required=True)
    ap.add_argument("--conf", required=True, help="dataset_conf as JSON")
    ap.add_argument("--dataset", choices=("wenet", "equishard"), default="wenet")
    ap.add_argument("--equal-steps", action="store_true")
    ap.add_argument("--join", choices=("ddp", "barrier"), default="ddp")
    ap.add_argument("--epochs", type=int, default=2, help="the yaml's max_epoch")
    ap.add_argument("--stop-after", type=int, default=None)
    ap.add_argument("--timeout", type=int, default=5, help="the recipe's --timeout (group_join), s")
    ap.add_argument("--num-workers", type=int, default=2)
    ap.add_argument("--out", required=True)
    return ap.parse_args()


args = parse_args()
sys.path[:0] = [os.path.join(HERE, "shims"), args.recipe]
import torch_compat  # noqa: E402

torch_compat.install()

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

from wenet.text.char_tokenizer import CharTokenizer  # noqa: E402
from wenet.utils import executor as executor_module  # noqa: E402
from wenet.utils import init_dataset as init_dataset_module  # noqa: E402
from wenet.utils import train_utils  # noqa: E402

if args.dataset == "equishard":
    from equishard.loaders.wenet import Dataset  # noqa: E402  the changed import
    init_dataset_module.Dataset = Dataset
from equishard.loaders import equal_steps  # noqa: E402

torch.set_num_threads(1)  # 4 ranks x 3 processes on a 2-core machine

TRAINED = []  # the keys of every step this rank trained, in order
STOP = {"first": True, "log": None}  # --stop-after: in the first epoch; the steps log


class TinyModel(torch.nn.Module):
    """Cost grows with the padded frames (batch x longest x 80 x 80)."""

    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(80, 80)
        self.out = torch.nn.Linear(80, 1)

    def forward(self, batch, device):
        if STOP["log"] is not None:
            if STOP["first"] and len(TRAINED) == args.stop_after:
                time.sleep(10 ** 6)  # preempted here: the test kills the job
            STOP["log"].write(json.dumps({"utts": list(batch["keys"])}) + "\n")
            STOP["log"].flush()
        TRAINED.append(list(batch["keys"]))
        h = torch.tanh(self.proj(batch["feats"]))
        return {"loss": self.out(h).pow(2).mean()}


JOINS = []       # (seconds, broke) of every wenet_join call
LAST_STEP = []   # monotonic time at the end of each step
_upstream_join = train_utils.wenet_join
_upstream_update = train_utils.update_parameter_and_lr


def observed_join(group_join, info_dict):
    """Calls upstream's wenet_join (as under deepspeed with --join barrier) and
    notes its result and duration."""
    if args.join == "barrier":
        info_dict = dict(info_dict, train_engine="deepspeed")
    start = time.monotonic()
    broke = _upstream_join(group_join, info_dict)
    JOINS.append((time.monotonic() - start, bool(broke)))
    return broke


def observed_update(*a, **k):
    out = _upstream_update(*a, **k)
    LAST_STEP.append(time.monotonic())
    return out


executor_module.wenet_join = observed_join
executor_module.update_parameter_and_lr = observed_update


def main():
    dist.init_process_group("gloo")  # train_utils.init_distributed, torch_ddp on CPU
    rank = dist.get_rank()
    if args.stop_after is not None:
        os.makedirs(args.out, exist_ok=True)
        STOP["log"] = open(os.path.join(args.out, f"steps-rank-{rank}.jsonl"), "a")
    torch.manual_seed(777)
    with open(args.conf) as f:
        dataset_conf = json.load(f)
    configs = dict(dataset_conf=dataset_conf, train_engine="torch_ddp", dtype="fp32", accum_grad=1,
                   grad_clip=5, log_interval=1000, max_epoch=args.epochs, model_dir=args.out)
    tokenizer = CharTokenizer(args.units, non_lang_syms=None, split_with_space=False)
    ds_args = argparse.Namespace(data_type=args.data_type, train_data=args.data_list, cv_data=args.data_list,
                                 pin_memory=False, num_workers=args.num_workers, prefetch=2)
    train_dataset, _, train_loader, _ = train_utils.init_dataset_and_dataloader(ds_args, configs, tokenizer)
    model = torch.nn.parallel.DistributedDataParallel(TinyModel())
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0)
    executor = executor_module.Executor()
    epochs = []
    for epoch in range(args.epochs):  # bin/train.py's loop
        configs["epoch"] = epoch
        dist.barrier()
        group_join = dist.new_group(backend="gloo", timeout=datetime.timedelta(seconds=args.timeout))
        loader = equal_steps(train_loader) if args.equal_steps else train_loader
        del TRAINED[:], JOINS[:], LAST_STEP[:]
        start = time.monotonic()
        executor.train(model, optimizer, scheduler, loader, None, None, configs, None, group_join)
        end = time.monotonic()
        epochs.append(dict(steps=len(TRAINED), utts=list(TRAINED),
                           join_failures=sum(b for _, b in JOINS),
                           join_seconds_max=max((s for s, _ in JOINS), default=0.0),
                           tail_wait=end - (LAST_STEP[-1] if LAST_STEP else start),
                           seconds=end - start))
        STOP["first"] = False
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
    faulthandler.dump_traceback_later(240, exit=True)  # a hung rank shows where
    main()
