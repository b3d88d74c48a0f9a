#!/usr/bin/env bash
# The GPU checks in one go, for a machine with an NVIDIA GPU (minutes, not hours):
# build with CUDA, run the GPU test suite (GPU vs CPU on the same inputs), the
# validator suites and CLI tests, `validate --device cuda` against `--device cpu`
# on the fixtures, then the GPU benchmark; print a summary. Needs what
# tools/dev.sh installs, plus nvcc (PATH or /usr/local/cuda/bin).
#
#   tools/gpu_check.sh            BUILD=build-gpu GPU_GIB=8 CPU_GIB=1 by default
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export PATH="/usr/local/cuda/bin:$PATH"
BUILD=${BUILD:-build-gpu}
LOGS=$BUILD/gpu-check
summary=()
failed=0
step() { # name command...: runs, logs, records PASS/FAIL
    local name=$1; shift
    local t0=$SECONDS
    if "$@" >"$LOGS/$name.log" 2>&1; then
        summary+=("PASS  $name ($((SECONDS - t0)) s)")
    else
        summary+=("FAIL  $name ($((SECONDS - t0)) s): see $LOGS/$name.log")
        failed=1
    fi
}

nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null || echo "nvidia-smi: not available"
[[ -d $BUILD ]] || meson setup "$BUILD" -Dcuda=enabled -Dbuildtype=release >/dev/null || exit 2
mkdir -p "$LOGS"
step build ninja -C "$BUILD" tests/test_validate_cuda tests/test_validate tests/test_validate_kernel \
    tests/test_validate_sources tools/bench/bench_validate tools/equishard/equishard
step tests meson test -C "$BUILD" --no-rebuild --print-errorlogs \
    validate_cuda validate validate_kernel validate_sources cli_validate
# the CUDA suite must have run, not skipped
grep -q 'validate_cuda / validate_cuda *OK' "$LOGS/tests.log" \
    || { summary+=("FAIL  validate_cuda did not pass: $(grep -m1 'validate_cuda / validate_cuda' "$LOGS/tests.log")"); failed=1; }

fixtures=tests/fixtures/corpus_a/kaldi
same_findings() {
    local exe=$BUILD/tools/equishard/equishard
    for dev in cpu cuda; do
        "$exe" validate -q --device $dev --utt-emb $fixtures/utt2embedding.pt \
            --spk-emb $fixtures/spk2embedding.pt --utt2spk $fixtures/utt2spk --min-cosine 0.9 \
            --json "$LOGS/fixture-$dev.json"
        [[ $? -le 1 ]] || return 1
    done
    python3 - "$LOGS/fixture-cpu.json" "$LOGS/fixture-cuda.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
assert b["summary"]["device"] == "cuda", b["summary"]
key = lambda f: (f["check"], f["kind"], f["key"])
assert [key(f) for f in a["findings"]] == [key(f) for f in b["findings"]], "findings differ"
for x, y in zip(a["findings"], b["findings"]):
    if isinstance(x.get("value"), float):
        assert abs(x["value"] - y["value"]) <= 1e-5 * max(1, abs(x["value"])), (x, y)
print(len(a["findings"]), "findings, cpu == cuda")
PY
}
step cli_cuda_vs_cpu same_findings
step bench "$BUILD/tools/bench/bench_validate" --cpu-gib "${CPU_GIB:-1}" --gpu-gib "${GPU_GIB:-8}" --repeat 5 --grouped

echo
echo "== gpu_check summary =="
printf '%s\n' "${summary[@]}"
grep -h '^gpu:\|^cpu:\|^RESULT' "$LOGS/bench.log" 2>/dev/null
exit $failed
