#!/usr/bin/env bash
# CLI tests for `equishard calibrate` and `--cost-model` (docs/COST_MODEL.md).
# 1. Two synthetic trainers (gen_steps.py: Python's seeded random over a real
#    measured table, corpus_a's Kaldi dir), attention-like (quadratic term
#    dominant) and convolution-like (no quadratic term), with 2 % noise,
#    warm-up and pauses: calibrate recovers a, b and c within 5 % (a term that
#    is 0 gets under 1 % of the time) and predicts held-out steps within 5 %
#    median error.
# 2. plan/simulate/validate --cost-model: plan.json records path and digest,
#    batch costs are the model's seconds; simulate predicts step time per rank.
# 3. Refusals: one line, exit 2.
set -u
BIN=$1
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CORPUS=$ES_FIXTURES/corpus_a
[[ -d $CORPUS/kaldi ]] || { echo "SKIP: $CORPUS absent"; exit 77; }
"$BIN" measure -q --root "$CORPUS" -o "$WORK/costs.tsv" "$CORPUS/kaldi" || { echo "FAIL: measure"; exit 1; }

# 1. the synthetic trainers
check_fit() { # name model.json a b c
    python3 - "$@" <<'PY' || fail "$1: $(cat "$WORK/why")"
import json, sys
name, path, a, b, c = sys.argv[1], sys.argv[2], *map(float, sys.argv[3:])
m = json.load(open(path))
w, fit = m["weights"], m["fit"]
share = {t["name"]: t["share"] for t in fit["terms"]}
why = []
for key, true in (("w_frames", a), ("w_frames_sq", b), ("w_batch", c)):
    if true == 0:
        if share[key] >= 0.01:
            why.append(f"{key} is 0 but takes {share[key]:.2%} of the time")
    elif abs(w[key] / true - 1) > 0.05:
        why.append(f"{key} {w[key]:.4g}, true {true:.4g} ({w[key] / true - 1:+.1%})")
if fit["held_out_median_error"] > 0.05:
    why.append(f"held-out median error {fit['held_out_median_error']:.2%}")
if fit["outliers_dropped"] < 1 or fit["warmup_dropped"] != 12:
    why.append(f"dropped {fit['warmup_dropped']} warm-up, {fit['outliers_dropped']} outliers")
print(f"{name}: " + ", ".join(f"{k} {w[k]:.4g}" for k in ("w_frames", "w_frames_sq", "w_batch"))
      + f"; held-out median {fit['held_out_median_error']:.2%}, p95 {fit['held_out_p95_error']:.2%}")
open(sys.argv[2] + ".why", "w").write("; ".join(why))
sys.exit(1 if why else 0)
PY
    cp "$2.why" "$WORK/why" 2>/dev/null
}
python3 "$HERE/gen_steps.py" "$WORK/costs.tsv" "$WORK/attn" 5e-5 5e-7 0.02 --seed 1
expect_exit 0 "$BIN" calibrate --steps "$WORK/attn" "$WORK/costs.tsv" -o "$WORK/attn.json"
grep -q "held-out relative error" "$WORK/out" || fail "no report: $(cat "$WORK/out")"
check_fit attention "$WORK/attn.json" 5e-5 5e-7 0.02
python3 "$HERE/gen_steps.py" "$WORK/costs.tsv" "$WORK/conv" 4e-4 0 0.05 --seed 2
expect_exit 0 "$BIN" calibrate -q --steps "$WORK/conv" "$WORK/costs.tsv" -o "$WORK/conv.json"
check_fit convolution "$WORK/conv.json" 4e-4 0 0.05
# same logs, same bytes; logs given one by one (a glob) work as a folder does
"$BIN" calibrate -q --steps "$WORK"/conv/*.jsonl "$WORK/costs.tsv" -o "$WORK/conv2.json" || fail "glob"
python3 -c "import json,sys; a,b=(json.load(open(p)) for p in sys.argv[1:]); sys.exit(a['weights']!=b['weights'])" \
    "$WORK/conv.json" "$WORK/conv2.json" || fail "the same logs gave other weights"

# 2. --cost-model
expect_exit 0 "$BIN" plan -q --world-size 2 --mode batch --min-length 0 --cost-model "$WORK/attn.json" \
    -o "$WORK/plan" "$WORK/costs.tsv"
python3 - "$WORK/plan" "$WORK/attn.json" "$WORK/costs.tsv" <<'PY' || fail "plan.json"
import csv, json, os, sys
lines = [r for r in csv.reader(open(sys.argv[3]), delimiter="\t") if r and not r[0].startswith("#")]
frames = {r[0]: int(r[5]) * 50 // int(r[3]) for r in lines[1:]}  # key, samples, sample_rate
text = {r[0]: int(r[7]) for r in lines[1:]}
plan = json.load(open(os.path.join(sys.argv[1], "plan.json")))
m = json.load(open(sys.argv[2]))
cm = plan["parameters"]["cost_model"]
assert cm["source"]["path"] == sys.argv[2], cm
assert cm["source"]["digest"].startswith("xxh3-64:") and len(cm["source"]["digest"]) == 24, cm
for k, v in m["weights"].items():
    assert abs(cm[k] - v) <= 1e-9 * max(abs(v), 1e-30), (k, cm[k], v)
w = m["weights"]
for r in range(2):
    for line in open(os.path.join(sys.argv[1], f"rank-{r:05d}.batches.jsonl")):
        b = json.loads(line)
        n, L = len(b["keys"]), max(frames[k] for k in b["keys"])
        T = max(text[k] for k in b["keys"])  # padded as the loader pads: n x the longest
        want = (w["w_frames"] * n * L + w["w_frames_sq"] * n * L * L + w["w_text"] * n * T
                + w["w_overhead"] * n + w["w_batch"])  # no speech tokens, no embeddings known
        assert abs(b["cost"] / want - 1) < 1e-5, (b["cost"], want)
PY
expect_exit 0 "$BIN" simulate --loader cosyvoice --world-size 2 --min-length 0 --cost-model "$WORK/attn.json" \
    --json --quiet "$WORK/costs.tsv"
python3 - "$WORK/out" <<'PY' || fail "simulate --cost-model: $(head -c 300 "$WORK/out")"
import json, sys
sim = json.load(open(sys.argv[1]))
assert sim["parameters"]["cost_model"]["source"]["digest"].startswith("xxh3-64:")
st = sim["epochs"][0]["step_time"]
assert st["unit"] == "seconds" and st["straggler"] >= 1 and len(st["ranks"]) == 2, st
assert st["epoch_seconds"] >= st["ideal_seconds"] > 0, st
PY
expect_exit 0 "$BIN" validate -q --cost-model "$WORK/attn.json" --min-length 0 "$WORK/costs.tsv"
expect_exit 2 "$BIN" plan -q --world-size 2 --cost-model "$WORK/costs.tsv" -o "$WORK/p2" "$WORK/costs.tsv"
grep -q "costs.tsv:1: not JSON" "$WORK/err" || fail "bad model: $(cat "$WORK/err")"

# 3. refusals: exit 2, one line
one_line() { # what expected-text
    [[ $(wc -l <"$WORK/err") == 1 ]] && grep -q -- "$2" "$WORK/err" || fail "$1: $(cat "$WORK/err")"
}
key=$(awk -F'\t' 'NR == 3 { print $1 }' "$WORK/costs.tsv")
printf '{"rank": 0, "step": 0, "keys": ["%s"], "seconds": 1}\n{"rank": 0, "step": 1, "seconds": 1}\n' "$key" >"$WORK/nokeys.jsonl"
expect_exit 2 "$BIN" calibrate --steps "$WORK/nokeys.jsonl" "$WORK/costs.tsv"
one_line "no keys" 'nokeys.jsonl:2: missing "keys"'
printf '{"rank": 0, "step": 0, "keys": ["nope"], "seconds": 1}\n' >"$WORK/unknown.jsonl"
expect_exit 2 "$BIN" calibrate --steps "$WORK/unknown.jsonl" "$WORK/costs.tsv"
one_line "unknown key" "unknown.jsonl:1: key 'nope' is not in the cost table"
head -5 "$WORK/attn/steps-rank-00000.jsonl" >"$WORK/few.jsonl"
expect_exit 2 "$BIN" calibrate --steps "$WORK/few.jsonl" "$WORK/costs.tsv"
one_line "too few" "too few steps"
python3 -c "
import json, sys
for i, l in enumerate(open(sys.argv[1])):
    d = json.loads(l); d['seconds'] = 0.25; print(json.dumps(d))" "$WORK/attn/steps-rank-00000.jsonl" >"$WORK/flat.jsonl"
expect_exit 2 "$BIN" calibrate --steps "$WORK/flat.jsonl" "$WORK/costs.tsv"
one_line "all equal" "degenerate log: every step took 0.25 s"
expect_exit 2 "$BIN" calibrate "$WORK/costs.tsv"
grep -q -- "--steps LOG and a cost table" "$WORK/err" || fail "no --steps: $(head -2 "$WORK/err")"
expect_exit 2 "$BIN" calibrate --steps "$WORK/attn" --terms frames,cubic "$WORK/costs.tsv"
grep -q "bad value 'frames,cubic'" "$WORK/err" || fail "bad --terms: $(cat "$WORK/err")"
mkdir -p "$WORK/empty"
expect_exit 2 "$BIN" calibrate --steps "$WORK/empty" "$WORK/costs.tsv"
one_line "empty folder" "no \*.jsonl step logs"
expect_exit 2 "$BIN" calibrate --steps "$WORK/attn" --time-field cpu_seconds "$WORK/costs.tsv"
one_line "time field" 'missing "cpu_seconds"'

# 4. models that are none: refused with the value named, exit 2 (not written,
#    not planned with; before, "imbalance 0.0000%" or "out of memory", exit 3)
python3 - "$WORK" <<'PY'
import json, os, sys
work = sys.argv[1]
m = json.load(open(os.path.join(work, "attn.json")))
for name, weights in (("zero", {k: 0.0 for k in m["weights"]}), ("huge", {**m["weights"], "w_frames": 1e308})):
    json.dump({**m, "weights": weights}, open(os.path.join(work, name + ".json"), "w"))
lines = [json.loads(l) for l in open(os.path.join(work, "attn", "steps-rank-00000.jsonl"))]
with open(os.path.join(work, "tiny.jsonl"), "w") as f:  # one step of 1e-20 s
    for i, d in enumerate(lines):
        f.write(json.dumps({**d, "seconds": 1e-20 if i == 10 else d["seconds"]}) + "\n")
with open(os.path.join(work, "e300.jsonl"), "w") as f:  # every time x 1e300
    for d in lines:
        f.write(json.dumps({**d, "seconds": d["seconds"] * 1e300}) + "\n")
PY
expect_exit 2 "$BIN" plan -q --world-size 2 --mode batch --cost-model "$WORK/zero.json" -o "$WORK/pz" "$WORK/costs.tsv"
one_line "all-zero model" "zero.json: every weight is 0"
[[ ! -e $WORK/pz ]] || fail "all-zero model: a plan was written"
expect_exit 2 "$BIN" plan -q --world-size 2 --mode batch --cost-model "$WORK/huge.json" -o "$WORK/ph" "$WORK/costs.tsv"
one_line "weight 1e308" "huge.json: weights.w_frames is 1e+308, above 1e+30"
expect_exit 2 "$BIN" simulate --loader cosyvoice --world-size 2 --min-length 0 --cost-model "$WORK/zero.json" \
    --json --quiet "$WORK/costs.tsv"
one_line "all-zero model (simulate)" "zero.json: every weight is 0"
# the same weights given as flags (or through the Python binding's settings) are
# checked by the library's plan and simulate, not only when read from a model file
expect_exit 2 "$BIN" plan -q --world-size 2 --mode batch --w-frames 1e308 -o "$WORK/pf" "$WORK/costs.tsv"
one_line "--w-frames 1e308" "plan: w_frames is 1e+308, above 1e+30"
[[ ! -e $WORK/pf ]] || fail "--w-frames 1e308: a plan was written"
expect_exit 2 "$BIN" plan -q --world-size 2 --mode batch --w-frames 0 -o "$WORK/pf" "$WORK/costs.tsv"
one_line "--w-frames 0 (all weights 0)" "plan: every weight is 0"
expect_exit 2 "$BIN" simulate --loader cosyvoice --world-size 2 --w-frames 0 --json --quiet "$WORK/costs.tsv"
one_line "--w-frames 0 (simulate)" "simulate: every weight is 0"
expect_exit 2 "$BIN" calibrate -q --steps "$WORK/tiny.jsonl" "$WORK/costs.tsv" -o "$WORK/tiny.json"
one_line "a 1e-20 s step" "held-out R^2 is -[0-9.]*: .*step times 1e-20 to .*--allow-negative-r2"
[[ ! -e $WORK/tiny.json ]] || fail "negative R^2: model.json written"
r2=$(sed 's/.*held-out R^2 is \(-[0-9.]*\):.*/\1/' "$WORK/err")
expect_exit 0 "$BIN" calibrate -q --allow-negative-r2 --steps "$WORK/tiny.jsonl" "$WORK/costs.tsv" -o "$WORK/tiny.json"
python3 -c "import json, sys; r = json.load(open(sys.argv[1]))['fit']['r2_held_out']; sys.exit(not (r < 0 and '%.4f' % r == sys.argv[2]))" \
    "$WORK/tiny.json" "$r2" || fail "--allow-negative-r2: r2_held_out is not the refused $r2"
expect_exit 2 "$BIN" calibrate -q --steps "$WORK/e300.jsonl" "$WORK/costs.tsv" -o "$WORK/e300.json"
one_line "times x 1e300" "calibrate: the fit's .* is -*nan: the step times are out of range (.*e+2[89][0-9] to .*e+300 s)"
[[ ! -e $WORK/e300.json ]] || fail "times x 1e300: model.json written"

[[ $failures == 0 ]] && echo "calibrate: all passed" || { echo "$failures failure(s)"; exit 1; }
