# Sourced by the MPI benchmarks (bench_mpi.sh, bench_mpi_reshard.sh), with
# REPEAT and PY set: `rounds` times commands in interleaved rounds, `q` quotes
# one word for the command strings it runs.
# rounds CMD...: one untimed warm-up run of every command (each must succeed),
# then REPEAT rounds that run every command once in turn, so that all commands
# see the same (shared, busy) machine; prints the best seconds per command.
rounds() {
    "$PY" - "$REPEAT" "$@" <<'EOF'
import subprocess, sys, time
reps, cmds = int(sys.argv[1]), sys.argv[2:]
def once(cmd):
    t = time.perf_counter()
    r = subprocess.run(["bash", "-c", cmd], stdout=subprocess.DEVNULL)
    dt = time.perf_counter() - t
    if r.returncode != 0:
        sys.exit("command failed (rc %d): %s" % (r.returncode, cmd))
    return dt
for c in cmds:
    once(c)
best = [float("inf")] * len(cmds)
for _ in range(reps):
    for i, c in enumerate(cmds):
        best[i] = min(best[i], once(c))
print("\n".join("%.4f" % b for b in best))
EOF
}

q() { printf '%q' "$1"; }
