"""Synthetic trainers' step logs for test_cli_calibrate.sh.

Reads a cost table (TSV, as `equishard measure` writes it) with the csv module
and writes what a trainer whose step time is a known function would log:

    seconds = a·n·L + b·n·L² + c,   L = the batch's longest, in frames (50 a second)

times (1 + N(0, noise)), from Python's own seeded `random` (not equishard's). The
first 3 steps of each rank are 4× slower (warm-up) and one step in 80 is 3×
slower (a pause) — what calibrate must leave out. usage:
gen_steps.py COSTS OUTDIR A B C [--seed S] [--ranks R] [--steps N] [--noise X]
"""
import argparse
import csv
import json
import os
import random

ap = argparse.ArgumentParser()
ap.add_argument("costs")
ap.add_argument("outdir")
ap.add_argument("a", type=float)
ap.add_argument("b", type=float)
ap.add_argument("c", type=float)
ap.add_argument("--seed", type=int, default=1)
ap.add_argument("--ranks", type=int, default=4)
ap.add_argument("--steps", type=int, default=250)
ap.add_argument("--noise", type=float, default=0.02)
args = ap.parse_args()

with open(args.costs, newline="") as f:
    lines = [r for r in csv.reader(f, delimiter="\t") if r and not r[0].startswith("#")]
rows = [dict(zip(lines[0], r)) for r in lines[1:]]
rng = random.Random(args.seed)
os.makedirs(args.outdir, exist_ok=True)
for rank in range(args.ranks):
    with open(os.path.join(args.outdir, f"steps-rank-{rank:05d}.jsonl"), "w") as out:
        for step in range(args.steps):
            batch = rng.sample(rows, rng.randint(1, 12))
            longest = max(int(r["samples"]) * 50 // int(r["sample_rate"]) for r in batch)
            n = len(batch)
            t = (args.a * n * longest + args.b * n * longest ** 2 + args.c) * (1 + rng.gauss(0, args.noise))
            if step < 3:
                t *= 4
            elif rng.random() < 1 / 80:
                t *= 3
            out.write(json.dumps({"rank": rank, "step": step, "keys": [r["key"] for r in batch],
                                  "seconds": t, "shape": {"speech_feat": [n, longest, 80]}}) + "\n")
