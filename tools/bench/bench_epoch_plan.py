"""What a DataLoader worker pays to get its batches of a new epoch.

equishard.loaders rebuilds a batch plan for every epoch other than the written
one, in every rank's workers: read OUTDIR/costs.tsv.zst (once per training
process, before the workers fork), plan, take this worker's batches. This
times each part on a synthetic table (lognormal lengths, 1000 rows a shard).

    python3 tools/bench/bench_epoch_plan.py [ROWS] [RANKS] [WORKERS]   (default 1000000 8 4)

Environment: EQUISHARD (the CLI; default build/tools/equishard/equishard),
the library as the binding finds it, REPEAT (default 3; best reported).
"""
import os
import shutil
import random
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
from equishard import core  # noqa: E402
from equishard.loaders import PlanDir  # noqa: E402

CLI = os.environ.get("EQUISHARD", os.path.join(ROOT, "build", "tools", "equishard", "equishard"))
REPEAT = int(os.environ.get("REPEAT", "3"))


def main():
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else 1000000
    ranks = int(sys.argv[2]) if len(sys.argv) > 2 else 8
    workers = int(sys.argv[3]) if len(sys.argv) > 3 else 4
    work = tempfile.mkdtemp(prefix="bench-epoch-")
    try:
        run(work, rows, ranks, workers)
    finally:
        shutil.rmtree(work)


def run(work, rows, ranks, workers):
    table = os.path.join(work, "costs.tsv")
    rng = random.Random(1)
    with open(table, "w") as f:
        f.write("#equishard-costs v1\nkey\tshard\tpos\tsample_rate\tchannels\tsamples\taudio_bytes\t"
                "text_len\tspeech_tokens\tspk\tflags\thash\n")
        for i in range(rows):
            f.write(f"u{i:08d}\tdata/parquet_{i // 1000:09d}.tar\t{i % 1000}\t16000\t1\t"
                    f"{int(rng.lognormvariate(10.8, 0.5))}\t1000\t{rng.randrange(5, 150)}\t"
                    f"{rng.randrange(20, 300)}\tspk{i % 500}\taudio,text,utt_emb,spk_emb\t-\n")
    outdir = os.path.join(work, "plan")
    subprocess.run([CLI, "plan", "-q", "--mode", "batch", "--world-size", str(ranks), "--workers", str(workers),
                    "--max-length", "6000", "-o", outdir, table], check=True, stdout=subprocess.DEVNULL)
    best = {"read costs.tsv.zst": 1e9, "plan the epoch": 1e9, "the worker's batches": 1e9}
    for _ in range(REPEAT):
        d = PlanDir(outdir)
        t0 = time.perf_counter()
        tab = d.table()
        t1 = time.perf_counter()
        with core.plan(tab, epoch=1, **d.plan_settings()) as p:
            t2 = time.perf_counter()
            n = len(p.batches(0, 0))
            t3 = time.perf_counter()
        tab.close()
        for k, v in zip(best, (t1 - t0, t2 - t1, t3 - t2)):
            best[k] = min(best[k], v)
    print(f"{rows} utterances, {ranks} ranks x {workers} workers ({n} batches for rank 0 worker 0); best of {REPEAT}")
    for k, v in best.items():
        print(f"  {k:24s} {v:6.2f} s")
    wait = best["plan the epoch"] + best["the worker's batches"]
    print(f"  a worker's first batch of a new epoch waits {wait:.2f} s "
          f"(+ {best['read costs.tsv.zst']:.2f} s once per training process, before the workers fork)")


if __name__ == "__main__":
    main()
