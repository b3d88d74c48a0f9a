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
import collections
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from test_cosyvoice_e2e import require
from test_resume_e2e import BUILD, CLI, LIB, SRC, TORCH_PYTHON, fail_with_log, free_port, logged_steps, run
from test_wenet_e2e import CONF, PLAN_ARGS, RECIPE, TIMEOUT, WORKERS, WORLD

HERE = os.path.dirname(os.path.abspath(__file__))
SMALLER, EPOCHS = 3, 2


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


def check_run(name, ranks, world):
    assert len(ranks) == world
    for e in range(EPOCHS):  # the rest of epoch 0, then epoch 1
        steps = [r["epochs"][e]["steps"] for r in ranks]
        assert len(set(steps)) == 1 and steps[0] > 0, f"{name}, epoch {e}: steps {steps}"
        failures = sum(r["epochs"][e]["join_failures"] for r in ranks)
        assert failures == 0, f"{name}, epoch {e}: {failures} wenet_join failure(s)"


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
    lines = []
    for r in range(WORLD):
        with open(os.path.join(plan, f"rank-{r:05d}.batches.jsonl")) as f:
            lines.append([json.loads(line) for line in f])
    steps = len(lines[0])
    assert steps >= 6, f"the plan has {steps} steps a rank: too few to stop in the middle"
    assert {k for rank in lines for b in rank for k in b["keys"]} == kept
    stop = steps // 2

    killed = killed_run(work, corpus, plan, stop)
    for r in range(WORLD):  # the killed job trained exactly the plan's steps < S, in order
        assert [sorted(s["utts"]) for s in killed[r]] == [sorted(b["keys"]) for b in lines[r][:stop]], \
            f"rank {r}"  # (sorted: WeNet's padding orders a batch by length)
    before = collections.Counter(k for r in range(WORLD) for s in killed[r] for k in s["utts"])

    same, _ = resumed_run(work, corpus, "same", WORLD, plan, stop)
    check_run("4 ranks", same, WORLD)
    for r in range(WORLD):  # exactly the plan's steps S.., in order
        assert [sorted(u) for u in same[r]["epochs"][0]["utts"]] == \
            [sorted(b["keys"]) for b in lines[r][stop:]], f"rank {r}"

    smaller, log = resumed_run(work, corpus, "smaller", SMALLER, plan, stop)
    check_run("3 ranks", smaller, SMALLER)
    assert "running 3 x 2: epoch 0 planned again" in log, "no log line said the job was re-planned"
    rest = [tuple(step) for r in smaller for step in r["epochs"][0]["utts"]]
    after = collections.Counter(k for step in rest for k in step)
    assert set(before) | set(after) == kept, "a kept utterance was not trained in epoch 0"
    assert not set(before) & set(after), "an utterance trained before the kill was trained again"
    batches = collections.Counter(frozenset(step) for step in rest)
    for k, n in after.items():  # twice only as part of a batch the padding repeated whole
        assert n == 1 or (n == 2 and any(k in b and c == 2 for b, c in batches.items())), (k, n)
    for name, ranks in (("4 ranks", same), ("3 ranks", smaller)):  # the next epoch: whole
        trained = {k for r in ranks for step in r["epochs"][1]["utts"] for k in step}
        assert trained == kept, f"{name}, epoch 1: {len(trained)} of {len(kept)} kept trained"
    seconds = time.monotonic() - started
    report = (f"| resume e2e | steps a rank (4 ranks) | stopped after | steps after resume: 4 ranks; "
              f"3 ranks | epoch 1 steps: 4; 3 ranks | seconds |\n|---|---|---|---|---|---|\n"
              f"| WeNet, batch plan | {steps} | {stop} | {same[0]['epochs'][0]['steps']}; "
              f"{smaller[0]['epochs'][0]['steps']} | {same[0]['epochs'][1]['steps']}; "
              f"{smaller[0]['epochs'][1]['steps']} | {seconds:.0f} |\n")
    with open(os.path.join(BUILD, "e2e-wenet-resume.md"), "w") as f:
        f.write(report)
    print(report)
    shutil.rmtree(work)
    print("1 passed, 0 failed")


if __name__ == "__main__":
    main()
