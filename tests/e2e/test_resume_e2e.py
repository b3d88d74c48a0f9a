"""A CosyVoice job on a batch plan, killed mid-epoch and restarted, on as many and on fewer ranks.

With real torch, CosyVoice's own Executor.train_one_epoc and cosyvoice_join
(resume_trainer.py, launched as torchrun launches it), the corpus of
make_corpus.py and equishard's batch plan for 4 ranks x 2 DataLoader workers:

1. the job trains S steps of epoch 0 and is killed (SIGKILL of torchrun and
   every rank and worker, as a preemption does);
2. it is restarted as CosyVoice's bin/train.py restarts from a checkpoint of
   epoch 0 (its loop from epoch 1, max_epoch raised by one) with
   EQUISHARD_RESUME=0:S, (a) on 4 ranks and (b) on 3 ranks.

Asserted, against the plan's own rank files read with json: the killed job
trained exactly steps < S of every rank's batches.jsonl; (a) trains exactly
steps S.. of each rank's file, in order; (b) trains every kept utterance the
first S steps did not, once (a batch repeated whole by the remainder padding
aside), and none that they did; every rank of each run trains the same number of
steps and no join fails; the next epoch trains every kept utterance on the new
world size. Keeps its run time in build/e2e-resume.md.

SKIP (exit 77) as test_cosyvoice_e2e.py: without ../shared/third_party/cosyvoice,
without torch for ES_TORCH_PYTHON, or without node + hyparquet-writer. It runs
the checkout's python/ over the build's library (the wheel's route is
test_cosyvoice_e2e.py's).
"""
import collections
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

SRC = os.environ.get("ES_SOURCE_ROOT", os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
BUILD = os.environ.get("ES_BUILD_ROOT", os.path.join(SRC, "build"))
CLI = os.environ.get("EQUISHARD_CLI", os.path.join(BUILD, "tools", "equishard", "equishard"))
LIB = os.environ.get("EQUISHARD_LIB", os.path.join(BUILD, "src", "libequishard.so"))
RECIPE = os.path.normpath(os.path.join(SRC, "..", "shared", "third_party", "cosyvoice"))
TORCH_PYTHON = os.environ.get("ES_TORCH_PYTHON", "/usr/bin/python3")
NODE_MODULES = os.environ.get("ES_NODE_MODULES", os.path.join(SRC, "build-npm", "node_modules"))
HERE = os.path.dirname(os.path.abspath(__file__))
WORLD, SMALLER, WORKERS, TIMEOUT = 4, 3, 2, 10
CHAR_UNITS = os.path.join(SRC, "tests", "data", "char_units.txt")
PLAN_ARGS = ["--world-size", str(WORLD), "--workers", str(WORKERS), "--max-length", "6000",
             "--symbol-table", CHAR_UNITS]


def skip(why):
    print(f"SKIP: {why}")
    sys.exit(77)


def require():
    if not os.path.isdir(RECIPE):
        skip(f"{RECIPE} is absent (CosyVoice's upstream files, ../shared/third_party)")
    if not shutil.which(TORCH_PYTHON) or subprocess.run(
            [TORCH_PYTHON, "-c", "import torch, torchaudio"], capture_output=True).returncode != 0:
        skip(f"{TORCH_PYTHON} has no torch/torchaudio (apt-get install python3-torch python3-torchaudio)")
    if not shutil.which("node") or not os.path.isdir(os.path.join(NODE_MODULES, "hyparquet-writer")):
        skip("node or hyparquet-writer (build-npm/) is missing: tools/dev.sh test installs them")


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        sys.exit(f"FAILED: {' '.join(map(str, cmd))}\n{r.stdout[-4000:]}\n{r.stderr[-8000:]}")
    return r.stdout


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def torchrun(work, name, world, trainer_args, env_extra):
    """The trainer on `world` ranks as torchrun launches them, in a session of its
    own (so the whole job can be killed): (Popen, OUT folder, log file)."""
    out = os.path.join(work, "runs", name)
    env = {k: v for k, v in os.environ.items() if not k.startswith("EQUISHARD_")}
    env.update(PYTHONPATH=os.path.join(SRC, "python"), EQUISHARD_LIB=LIB, OMP_NUM_THREADS="1",
               **env_extra)
    # --redirects/--tee 2: see test_cosyvoice_e2e.py (torch 1.13 on Python 3.11)
    cmd = [TORCH_PYTHON, "-m", "torch.distributed.run", "--redirects", "2", "--tee", "2",
           "--log_dir", os.path.join(work, "torchrun-logs", name),
           "--nnodes", "1", "--nproc_per_node", str(world),
           "--master_addr", "127.0.0.1", "--master_port", str(free_port()),
           os.path.join(HERE, "resume_trainer.py"), "--recipe", RECIPE, "--timeout", str(TIMEOUT),
           "--num-workers", str(WORKERS), *trainer_args, "--out", out]
    log = open(os.path.join(work, f"{name}.log"), "w+")
    return subprocess.Popen(cmd, env=env, cwd=work, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True), out, log


def logged_steps(out, rank):
    try:
        with open(os.path.join(out, f"steps-rank-{rank}.jsonl")) as f:
            return [json.loads(line) for line in f if line.endswith("\n")]
    except FileNotFoundError:
        return []


def fail_with_log(log, what):
    log.seek(0)
    sys.exit(f"FAILED: {what}\n{log.read()[-12000:]}")


def killed_run(work, data_list, plan, stop_after):
    """Trains stop_after steps of epoch 0 on WORLD ranks, then SIGKILLs the job."""
    proc, out, log = torchrun(work, "killed", WORLD, ["--data-list", data_list, "--epochs", "2",
                                                     "--stop-after", str(stop_after)],
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


def resumed_run(work, name, world, data_list, plan, stop_after):
    """bin/train.py restarted from a checkpoint of epoch 0: its loop from epoch 1,
    max_epoch raised by one, EQUISHARD_RESUME=0:S."""
    proc, out, log = torchrun(work, name, world, ["--data-list", data_list, "--start-epoch", "1",
                                                  "--epochs", "3"],
                              {"EQUISHARD_PLAN": plan, "EQUISHARD_RESUME": f"0:{stop_after}"})
    try:
        rc = proc.wait(timeout=400)
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


def check_run(name, ranks, world, join="join"):
    for e in range(2):  # the rest of epoch 0 (set_epoch(1)), then epoch 1 (set_epoch(2))
        steps = [r["epochs"][e]["steps"] for r in ranks]
        assert len(set(steps)) == 1 and steps[0] > 0, f"{name}, epoch {e}: steps {steps}"
        failures = sum(r["epochs"][e]["join_failures"] for r in ranks)
        assert failures == 0, f"{name}, epoch {e}: {failures} {join} failure(s)"
    assert len(ranks) == world


def planned_batches(plan, kept, world=WORLD):
    """Each rank's batches.jsonl lines; the plan must cover `kept` and have
    steps enough to stop in the middle."""
    lines = []
    for r in range(world):
        with open(os.path.join(plan, f"rank-{r:05d}.batches.jsonl")) as f:
            lines.append([json.loads(line) for line in f])
    steps = len(lines[0])
    assert steps >= 6, f"the plan has {steps} steps a rank: too few to stop in the middle"
    assert {k for rank in lines for b in rank for k in b["keys"]} == kept
    return lines


def check_killed(killed, lines, stop):
    """The killed job trained exactly the plan's steps < S, in order; the
    utterances it trained, counted."""
    for r in range(len(lines)):  # (sorted: the recipes' padding orders a batch by length)
        assert [sorted(s["utts"]) for s in killed[r]] == [sorted(b["keys"]) for b in lines[r][:stop]], \
            f"rank {r}"
    return collections.Counter(k for r in range(len(lines)) for s in killed[r] for k in s["utts"])


def check_resumed(lines, stop, kept, before, same, smaller, smaller_log, join="join",
                  workers=WORKERS):
    """The restart on the plan's ranks (one `lines` each) trains the plan's
    steps S.. exactly; the one on SMALLER ranks re-plans and trains every
    remaining kept utterance once (padding repeats aside) and none the killed
    job trained; both then train the whole corpus in the next epoch."""
    world = len(lines)
    check_run(f"{world} ranks", same, world, join)
    for r in range(world):  # exactly the plan's steps S.., in order
        assert [sorted(u) for u in same[r]["epochs"][0]["utts"]] == \
            [sorted(b["keys"]) for b in lines[r][stop:]], f"rank {r}"
    check_run(f"{SMALLER} ranks", smaller, SMALLER, join)
    assert f"running {SMALLER} x {workers}: epoch 0 planned again" in smaller_log, \
        "no log line said the job was re-planned"
    rest = [tuple(step) for r in smaller for step in r["epochs"][0]["utts"]]
    after = collections.Counter(k for step in rest for k in step)
    assert set(before) | set(after) == kept, "a kept utterance was not trained in epoch 0"
    assert not set(before) & set(after), "an utterance trained before the kill was trained again"
    batches = collections.Counter(frozenset(step) for step in rest)
    for k, n in after.items():  # twice only as part of a batch the padding repeated whole
        assert n == 1 or (n == 2 and any(k in b and c == 2 for b, c in batches.items())), (k, n)
    for name, ranks in ((f"{world} ranks", same), (f"{SMALLER} ranks", smaller)):  # the next epoch: whole
        trained = {k for r in ranks for step in r["epochs"][1]["utts"] for k in step}
        assert trained == kept, f"{name}, epoch 1: {len(trained)} of {len(kept)} kept trained"


def write_report(recipe, name, steps, stop, same, smaller, started):
    """The run's table, printed and written to BUILD/name."""
    world, fewer = len(same), len(smaller)
    report = (f"| resume e2e | steps a rank ({world} ranks) | stopped after | steps after resume: "
              f"{world} ranks; {fewer} ranks | epoch 1 steps: {world}; {fewer} ranks | seconds |\n"
              f"|---|---|---|---|---|---|\n"
              f"| {recipe}, batch plan | {steps} | {stop} | {same[0]['epochs'][0]['steps']}; "
              f"{smaller[0]['epochs'][0]['steps']} | {same[0]['epochs'][1]['steps']}; "
              f"{smaller[0]['epochs'][1]['steps']} | {time.monotonic() - started:.0f} |\n")
    with open(os.path.join(BUILD, name), "w") as f:
        f.write(report)
    print(report)


def main():
    require()
    started = time.monotonic()
    work = tempfile.mkdtemp(prefix="e2e-resume-", dir=BUILD)
    corpus = os.path.join(work, "corpus")
    run([sys.executable, os.path.join(HERE, "make_corpus.py"), corpus, NODE_MODULES])
    with open(os.path.join(corpus, "truth.json")) as f:
        kept = {t["key"] for t in json.load(f) if t["kept"]}
    data_list = os.path.join(corpus, "parquet", "data.list")
    plan = os.path.join(work, "batch")
    run([CLI, "plan", *PLAN_ARGS, "--mode", "batch", "-o", plan, data_list])
    lines = planned_batches(plan, kept)
    steps, stop = len(lines[0]), len(lines[0]) // 2

    before = check_killed(killed_run(work, data_list, plan, stop), lines, stop)
    same, _ = resumed_run(work, "same", WORLD, data_list, plan, stop)
    smaller, log = resumed_run(work, "smaller", SMALLER, data_list, plan, stop)
    check_resumed(lines, stop, kept, before, same, smaller, log)
    write_report("CosyVoice", "e2e-resume.md", steps, stop, same, smaller, started)
    shutil.rmtree(work)
    print("1 passed, 0 failed")


if __name__ == "__main__":
    main()
