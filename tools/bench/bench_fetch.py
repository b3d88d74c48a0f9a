"""Planned-batch fetching vs reading the same parquet files front to back.

A batch plan's DataLoader worker fetches each batch's rows by [shard, pos]
(equishard.loaders.fetch.RowFetcher over equishard.RowReader): a batch holds rows
of many files, and the reader skips the row groups and pages it does not need.
CosyVoice's parquet_opener instead streams each file of its list front to back
(pyarrow's iter_batches(64)). pyarrow is not installable here, so the baseline
is that same front-to-back read through the same reader (64 rows a call, every
row, every file in list order): the ratio isolates what random access costs.

    python3 tools/bench/bench_fetch.py [SCALE]   (default 3: 1020 utterances, ~100 MB)

Environment: EQUISHARD (the CLI, default build/tools/equishard/equishard), the
library as the binding finds it (EQUISHARD_LIB or the build tree), PYTHONPATH
with python/, NODE_MODULES (build-npm/node_modules: hyparquet-writer writes the
corpus), REPEAT (rounds, default 5; best of each is reported, rounds
interleaved so both see the same machine).

Also reported: the first batch's latency in a worker of epoch 1 (the plan
rebuilt from OUTDIR/costs.tsv.zst, the files opened, the rows read).
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
import equishard  # noqa: E402
from equishard.loaders import PlanDir  # noqa: E402
from equishard.loaders.fetch import RowFetcher, fetch_batches  # noqa: E402

CLI = os.environ.get("EQUISHARD", os.path.join(ROOT, "build", "tools", "equishard", "equishard"))
NODE_MODULES = os.environ.get("NODE_MODULES", os.path.join(ROOT, "build-npm", "node_modules"))
REPEAT = int(os.environ.get("REPEAT", "5"))


def sequential(files):
    rows = 0
    for path in files:
        with equishard.RowReader(path) as r:
            n = r.num_rows
            for start in range(0, n, 64):
                rows += len(r.read(range(start, min(n, start + 64))))
    return rows


def planned(plan, world, workers, lookahead):
    rows = 0
    for rank in range(world):
        for worker in range(workers):
            fetcher = RowFetcher()  # one per DataLoader worker
            for _, got in fetch_batches(fetcher, plan.epoch_batches(rank, worker, 0), lookahead):
                rows += len(got)
            fetcher.close()
    return rows


def first_batch(outdir):
    start = time.perf_counter()
    plan = PlanDir(outdir)
    b = plan.epoch_batches(0, 0, 1)[0]
    fetcher = RowFetcher()
    fetcher.fetch(b["items"])
    fetcher.close()
    return time.perf_counter() - start


def main():
    scale = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    work = tempfile.mkdtemp(prefix="bench-fetch-")
    try:
        run(work, scale)
    finally:
        shutil.rmtree(work)


def run(work, scale):
    subprocess.run([sys.executable, os.path.join(ROOT, "tests", "e2e", "make_corpus.py"), work, NODE_MODULES,
                    "--scale", str(scale)], check=True)
    data_list = os.path.join(work, "parquet", "data.list")
    files = [line.strip() for line in open(data_list)]
    outdir = os.path.join(work, "plan")
    subprocess.run([CLI, "plan", "-q", "--mode", "batch", "--world-size", "4", "--workers", "2",
                    "--max-length", "6000", "-o", outdir, data_list], check=True, stdout=subprocess.DEVNULL)
    plan = PlanDir(outdir)
    size = sum(os.path.getsize(f) for f in files)
    variants = {"sequential": lambda: sequential(files),
                "planned, batch by batch": lambda: planned(plan, 4, 2, 1),
                "planned, 8 batches a read": lambda: planned(plan, 4, 2, 8)}
    best = dict.fromkeys(list(variants) + ["first batch (epoch 1)"], 1e9)
    counts = {}
    for _ in range(REPEAT):
        for name, fn in variants.items():
            t = time.perf_counter()
            counts[name] = fn()
            best[name] = min(best[name], time.perf_counter() - t)
        best["first batch (epoch 1)"] = min(best["first batch (epoch 1)"], first_batch(outdir))
    print(f"{len(files)} files, {size / 1e6:.1f} MB, {counts['sequential']} rows read front to back, "
          f"{counts['planned, batch by batch']} planned rows (the filter's drops and padding repeats "
          f"make the difference); best of {REPEAT}")
    for name in variants:
        print(f"  {name:26s} {best[name]:.3f} s  {counts[name] / best[name]:8.0f} rows/s  "
              f"{best[name] / best['sequential'] * counts['sequential'] / counts[name]:.2f}x sequential's time a row")
    print(f"  first batch of a worker in epoch 1: {best['first batch (epoch 1)'] * 1000:.0f} ms")


if __name__ == "__main__":
    main()
