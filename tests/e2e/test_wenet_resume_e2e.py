"""A WeNet job on a batch plan, killed mid-epoch and restarted, on as many and on fewer ranks.

With real torch, WeNet's own loop as test_wenet_e2e.py runs it
(wenet_trainer.py: init_dataset_and_dataloader's persistent DataLoader
workers, Executor.train inside DDP's model.join(), wenet_join as under
deepspeed, a monitored_barrier on group_join), the corpus of
make_wenet_corpus.py and equishard's batch plan for 4 ranks x 2 workers:

1. the job trains S steps of epoch 0 and is killed (SIGKILL of torchrun and
   every rank and worker, as a preemption does);
2. it is restarted as WeNet's bin/train.py restarts when no epoch finished
   (from exp/init.pt, or no checkpoint: its loop from epoch 0, max_epoch
   unchanged; the yaml and the loop never call set_epoch) with
   EQUISHARD_RESUME=0:S, (a) on 4 ranks and (b) on 3 ranks.

Asserted, against the plan's own rank files read with json and the corpus's
truth.json: the killed job trained exactly steps < S of every rank's
batches.jsonl; (a) trains exactly steps S.. of each rank's file, in order;
(b) trains every kept utterance the first S steps did not, once (a batch
repeated whole by the remainder padding aside), and none that they did;
every rank of each run trains the same number of steps and no wenet_join
fails; the next epoch (the persistent workers' second iteration) trains
every kept utterance. Keeps its run time in build/e2e-wenet-resume.md.

SKIP (exit 77) as test_wenet_e2e.py: without ../shared/third_party/wenet or
without torch/torchaudio for ES_TORCH_PYTHON. It runs the checkout's python/
over the build's library (the wheel's route is test_wenet_e2e.py's).
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from test_cosyvoice_e2e import require
from test_resume_e2e import (BUILD, CLI, LIB, SMALLER, SRC, TORCH_PYTHON, check_killed, check_resumed,
                             fail_with_log, free_port, logged_steps, planned_batches, run, write_report)
from test_wenet_e2e import CONF, PLAN_ARGS, RECIPE, TIMEOUT, WORKERS, WORLD

HERE = os.path.dirname(os.path.abspath(__file__))
EPOCHS = 2


def torchrun(work, corpus, name, world, trainer_args, env_extra):
    """wenet_trainer.py on `world` ranks as torchrun launches them, wenet_join as
    under deepspeed, in a session of its own (so the whole job can be killed):
    (Popen, OUT folder, log file)."""
    out = os.path.join(work, "runs", name)
    env = {k: v for k, v in os.environ.items() if not k.startswith("EQUISHARD_")}
    env.update(PYTHONPATH=os.path.join(SRC, "python"), EQUISHARD_LIB=LIB, OMP_NUM_THREADS="1",
               **env_extra)
    # --redirects/--tee 2: see test_cosyvoice_e2e.py (torch 1.13 on Python 3.11)
    cmd = [TORCH_PYTHON, "-m", "torch.distributed.run", "--redirects", "2", "--tee", "2",
           "--log_dir", os.path.join(work, "torchrun-logs", name),
           "--nnodes", "1", "--nproc_per_node", str(world),
           "--master_addr", "127.0.0.1", "--master_port", str(free_port()),
           os.path.join(HERE, "wenet_trainer.py"), "--recipe", RECIPE,
           "--data-list", os.path.join(corpus, "data.list"), "--data-type", "shard",
           "--units", os.path.join(corpus, "units.txt"), "--conf", os.path.join(work, "conf.json"),
           "--dataset", "equishard", "--join", "barrier", "--epochs", str(EPOCHS),
           "--timeout", str(TIMEOUT), "--num-workers", str(WORKERS), *trainer_args, "--out", out]
    log = open(os.path.join(work, f"{name}.log"), "w+")
    return subprocess.Popen(cmd, env=env, cwd=work, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True), out, log


def killed_run(work, corpus, plan, stop_after):
    """Trains stop_after steps of epoch 0 on WORLD ranks, then SIGKILLs the job."""
    proc, out, log = torchrun(work, corpus, "killed", WORLD, ["--stop-after", str(stop_after)],
                              {"EQUISHARD_PLAN": plan})
    deadline = time.monotonic() + 300
    while not all(len(logged_steps(out, r)) >= stop_after for r in range(WORLD)):
        if proc.poll() is not None or time.monotonic() > deadline:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
            fail_with_log(log, f"the job did not reach step {stop_after}")
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)  # the whole job: torchrun, ranks, DataLoader workers
    proc.wait()
    return [logged_steps(out, r) for r in range(WORLD)]


def resumed_run(work, corpus, name, world, plan, stop_after):
    """bin/train.py restarted with no finished epoch (its loop from epoch 0),
    EQUISHARD_RESUME=0:S."""
    proc, out, log = torchrun(work, corpus, name, world, [],
                              {"EQUISHARD_PLAN": plan, "EQUISHARD_RESUME": f"0:{stop_after}"})
    try:
        rc = proc.wait(timeout=300)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        fail_with_log(log, f"{name}: timed out")
    if rc != 0:
        fail_with_log(log, f"{name}: exit {rc}")
    ranks = []
    for r in range(world):
        with open(os.path.join(out, f"rank-{r}.json")) as f:
            ranks.append(json.load(f))
    log.seek(0)
    return ranks, log.read()


def main():
    require(RECIPE, "WeNet", parquet=False)
    started = time.monotonic()
    work = tempfile.mkdtemp(prefix="e2e-wenet-resume-", dir=BUILD)
    corpus = os.path.join(work, "corpus")
    run([sys.executable, os.path.join(HERE, "make_wenet_corpus.py"), corpus])
    with open(os.path.join(corpus, "truth.json")) as f:
        kept = {t["key"] for t in json.load(f) if t["kept"]}
    with open(os.path.join(work, "conf.json"), "w") as f:
        json.dump(CONF, f)
    plan = os.path.join(work, "batch")
    run([CLI, "plan", "-q", *PLAN_ARGS, "--symbol-table", os.path.join(corpus, "units.txt"),
         "--mode", "batch", "-o", plan, os.path.join(corpus, "data.list")])
    lines = planned_batches(plan, kept, WORLD)
    steps, stop = len(lines[0]), len(lines[0]) // 2

    before = check_killed(killed_run(work, corpus, plan, stop), lines, stop)
    same, _ = resumed_run(work, corpus, "same", WORLD, plan, stop)
    smaller, log = resumed_run(work, corpus, "smaller", SMALLER, plan, stop)
    check_resumed(lines, stop, kept, before, same, smaller, log, join="wenet_join",
                  workers=WORKERS)
    write_report("WeNet", "e2e-wenet-resume.md", steps, stop, same, smaller, started)
    shutil.rmtree(work)
    print("1 passed, 0 failed")


if __name__ == "__main__":
    main()
