#!/usr/bin/env python3
"""A batch plan written from Python, with and without CostTable.compress_ahead
(the library call from a data-prep script, against what the CLI does).

    PYTHONPATH=python EQUISHARD_LIB=build/src/libequishard.so \\
        python3 tools/bench/bench_plan_python.py TABLE [ROUNDS] [K] [W]

Each round runs both variants, each in a fresh interpreter (alternating which goes
first, as the machine is shared): load the table, (compress_ahead), plan
mode="batch", write OUTDIR. Prints each run's load, plan and write seconds and
the whole, the median over rounds of the ratio plain / ahead of the whole, and
checks that both OUTDIRs are byte-identical. TABLE: for example
build/tools/bench/gen_costs 10000000 1000 /tmp/c10m.tsv. OUTDIRs go to $TMPDIR.
"""
import filecmp
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

ONE_RUN = r"""
import sys, time
import equishard
table, k, w, out, ahead = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5] == "1"
t0 = time.perf_counter()
t = equishard.load([table])
if ahead:
    t.compress_ahead()
t1 = time.perf_counter()
p = equishard.plan(t, world_size=k, workers=w, mode="batch")
t2 = time.perf_counter()
p.write(out, inputs=[table])
t3 = time.perf_counter()
print(f"{t1 - t0:.3f} {t2 - t1:.3f} {t3 - t2:.3f} {t3 - t0:.3f}")
"""


def run(table, k, w, out, ahead):
    got = subprocess.run([sys.executable, "-c", ONE_RUN, table, str(k), str(w), out,
                          "1" if ahead else "0"], check=True, capture_output=True, text=True)
    return [float(x) for x in got.stdout.split()]


def same_tree(a, b):
    cmp = filecmp.dircmp(a, b)
    if cmp.left_only or cmp.right_only:
        return False
    return all(filecmp.cmp(os.path.join(a, f), os.path.join(b, f), shallow=False)
               for f in cmp.common_files)


def main():
    table = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    k = int(sys.argv[3]) if len(sys.argv) > 3 else 1024
    w = int(sys.argv[4]) if len(sys.argv) > 4 else 4
    tmp = tempfile.mkdtemp(prefix="bench-plan-python-")
    try:
        ratios = []
        for r in range(rounds):
            order = (False, True) if r % 2 == 0 else (True, False)
            times = {}
            for ahead in order:
                times[ahead] = run(table, k, w, os.path.join(tmp, "ahead" if ahead else "plain"), ahead)
            for ahead in (False, True):
                load, build, write, whole = times[ahead]
                print(f"round {r + 1} {'compress_ahead' if ahead else 'plain         '}: load {load:.2f} s  "
                      f"plan {build:.2f} s  write {write:.2f} s  whole {whole:.2f} s")
            ratios.append(times[False][3] / times[True][3])
            if not same_tree(os.path.join(tmp, "plain"), os.path.join(tmp, "ahead")):
                sys.exit("OUTDIRs differ")
        print(f"median plain / compress_ahead over {rounds} rounds: {statistics.median(ratios):.2f} "
              f"(range {min(ratios):.2f}-{max(ratios):.2f}); OUTDIRs identical")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
