#!/usr/bin/env bash
# CLI tests for `equishard report` and `simulate --html`: the HTML report's
# numbers against independent sources (report_check.py: plan.json and the
# simulation's JSON through Python's json, histogram bins and speaker minutes
# recomputed from the cost table), the SVG's axes and zoom (xml.etree), same
# inputs same bytes, and the outputs' refusals and exit codes. The browser's
# view of the same pages is test_cli_report_browser.sh.
set -u
BIN=$1
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
CHECK=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/report_check.py

# data-samples: 24 utterances of 4 speakers in 3 uneven shards; --min-length 10
# keeps them all, so the ranks and the join have something to show.
cd "$ES_SOURCE_ROOT/data-samples" || exit 1
expect_exit 0 "$BIN" measure -q shards/data.list -o "$WORK/costs.tsv"
expect_exit 0 "$BIN" plan -q "$WORK/costs.tsv" -k 2 --min-length 10 -o "$WORK/plan"
expect_exit 1 "$BIN" validate -q --world-size 2 --json "$WORK/val.json" shards/data.list
# the split report replays: the recipe's own, with the plan's settings, epoch 0
expect_exit 0 "$BIN" simulate --loader cosyvoice -k 2 --min-length 10 --json "$WORK/costs.tsv"
cp "$WORK/out" "$WORK/sim.json"

# 1. report --html: every number against plan.json, the simulation and the table
expect_exit 0 "$BIN" report "$WORK/plan" --html "$WORK/r.html" --validate "$WORK/val.json"
python3 "$CHECK" report "$WORK/r.html" "$WORK/costs.tsv" "$WORK/plan/plan.json" \
    "$WORK/sim.json" "$WORK/val.json" || fail "report --html: numbers"
# same inputs, same bytes; written atomically under the umask like every output
"$BIN" report "$WORK/plan" --html "$WORK/r2.html" --validate "$WORK/val.json" >/dev/null
cmp -s "$WORK/r.html" "$WORK/r2.html" || fail "report --html: two runs differ"
(umask 027 && "$BIN" report "$WORK/plan" --html "$WORK/r3.html" >/dev/null) || fail "report --html r3"
[[ $(stat -c %a "$WORK/r3.html") == 640 ]] || fail "report --html under umask 027: $(stat -c %a "$WORK/r3.html")"
ls "$WORK"/.r3.html* "$WORK"/*.tmp* >/dev/null 2>&1 && fail "report --html left a temporary file"
expect_exit 0 "$BIN" report "$WORK/plan" --html -
grep -q '^<!DOCTYPE html>' "$WORK/out" || fail "report --html - wrote no page to stdout"
# self-contained: the only address is SVG's namespace
grep -o 'https\?://[^"]*' "$WORK/r.html" | sort -u | grep -vqx 'http://www.w3.org/2000/svg' \
    && fail "report --html names an address: $(grep -o 'https\?://[^"]*' "$WORK/r.html" | sort -u)"

# 2. simulate --html: two epochs, both plans side by side, validate's findings
expect_exit 0 "$BIN" simulate --loader cosyvoice -k 2 --min-length 10 --epochs 0:1 --json \
    -o "$WORK/sim2.json" --html "$WORK/s.html" --validate "$WORK/val.json" "$WORK/costs.tsv"
python3 "$CHECK" simulate "$WORK/s.html" "$WORK/costs.tsv" - "$WORK/sim2.json" \
    "$WORK/val.json" || fail "simulate --html: numbers"
grep -q 'id="chart-batches-1"' "$WORK/s.html" || fail "simulate --html: no chart of epoch 1"
"$BIN" simulate --loader cosyvoice -k 2 --min-length 10 --epochs 0:1 --html "$WORK/s2.html" \
    --validate "$WORK/val.json" "$WORK/costs.tsv" >/dev/null
cmp -s "$WORK/s.html" "$WORK/s2.html" || fail "simulate --html: two runs differ"
# with --plan: the plan replayed as the loaders feed it, plan.json's cost chart
expect_exit 0 "$BIN" simulate --loader cosyvoice --plan "$WORK/plan" -o "$WORK/sp.json" \
    --html "$WORK/sp.html"
python3 "$CHECK" simulate "$WORK/sp.html" "$WORK/costs.tsv" "$WORK/plan/plan.json" \
    "$WORK/sp.json" - || fail "simulate --plan --html: numbers"
grep -q "id=\"headline\">the plan $WORK/plan as the loaders feed it" "$WORK/sp.html" \
    || fail "simulate --plan --html: the headline does not name the plan"

# 3. a batch plan: its own costs.tsv.zst is the table
expect_exit 0 "$BIN" plan -q "$WORK/costs.tsv" -k 2 --mode batch --min-length 10 -o "$WORK/bplan"
expect_exit 0 "$BIN" report "$WORK/bplan" --html "$WORK/b.html"
python3 "$CHECK" report "$WORK/b.html" "$WORK/costs.tsv" "$WORK/bplan/plan.json" \
    "$WORK/sim.json" - || fail "report --html of a batch plan"

# 4. inputs not readable from here: the page shows what plan.json has and says why
cp -r "$WORK/plan" "$WORK/moved"
python3 - "$WORK/moved/plan.json" <<'EOF'
import json, sys
p = json.load(open(sys.argv[1])); p["inputs"][0]["path"] = "/nonexistent/costs.tsv"
json.dump(p, open(sys.argv[1], "w"))
EOF
expect_exit 0 "$BIN" report "$WORK/moved" --html "$WORK/m.html"
grep -q 'not readable from here' "$WORK/err" || fail "unreadable inputs: no line on stderr"
grep -q 'Not simulated: planned input /nonexistent/costs.tsv' "$WORK/m.html" \
    || fail "unreadable inputs: the page does not say why"
grep -q 'id="chart-cost"' "$WORK/m.html" || fail "unreadable inputs: no cost chart"

# 5. refusals: bad --validate JSON, an output that is an input; nothing written
printf '{"counts": ' >"$WORK/bad.json"
expect_exit 2 "$BIN" report "$WORK/plan" --html "$WORK/x.html" --validate "$WORK/bad.json"
[[ $(wc -l <"$WORK/err") == 1 ]] && grep -q "bad.json: line 1" "$WORK/err" \
    || fail "bad --validate: $(cat "$WORK/err")"
[[ -e $WORK/x.html ]] && fail "bad --validate wrote the page"
expect_exit 2 "$BIN" report "$WORK/plan" --html "$WORK/plan/plan.json"
expect_exit 2 "$BIN" simulate --loader cosyvoice -k 2 --html "$WORK/costs.tsv" "$WORK/costs.tsv"
expect_exit 2 "$BIN" report "$WORK/plan" --html "$WORK/x.html" --loader nope
expect_exit 2 "$BIN" simulate --loader cosyvoice --plan "$WORK/bplan" --html "$WORK/x.html"
grep -q "batch plan, nothing to replay" "$WORK/err" || fail "simulate --plan BATCH --html: $(cat "$WORK/err")"
[[ -e $WORK/x.html ]] && fail "refused runs wrote the page"

# 6. a table of many speakers and speech tokens (written here, seeded): the
# top and bottom speakers, the speech-token histogram, 4 ranks x 2 workers
python3 - "$WORK/many.tsv" <<'EOF'
import random, sys
rnd = random.Random(7)
with open(sys.argv[1], "w") as f:
    f.write("#equishard-costs v1\nkey\tshard\tpos\tsample_rate\tchannels\tsamples\t"
            "audio_bytes\ttext_len\tspeech_tokens\tspk\tflags\thash\n")
    for i in range(600):
        sec = rnd.uniform(0.3, 25) if i % 50 else 40.0
        spk = "spk%02d" % (i % 25 if i % 7 else i % 3)
        f.write("u%04d\tshard%d.tar\t%d\t16000\t1\t%d\t%d\t%d\t%d\t%s\taudio,text\t-\n" % (
            i, i // 75, i % 75, int(sec * 16000), int(sec * 32000) + 44, rnd.randint(1, 300),
            int(sec * 25) if i % 11 else 0, spk))
EOF
expect_exit 0 "$BIN" simulate --loader cosyvoice -k 4 -w 2 --min-length 50 --max-length 2000 \
    -o "$WORK/many.json" --html "$WORK/many.html" "$WORK/many.tsv"
python3 "$CHECK" simulate "$WORK/many.html" "$WORK/many.tsv" - "$WORK/many.json" - \
    || fail "simulate --html of many speakers"
grep -q 'id="chart-speakers-bottom"' "$WORK/many.html" || fail "no bottom speakers chart"
grep -q 'id="chart-speech-tokens"' "$WORK/many.html" || fail "no speech-token chart"

# 7. report --svg: axes with values, labelled lines, the zoom stated; a 0.1 %
# difference is more than 20 px (plan.json written here: ranks 1000 and 1001)
expect_exit 0 "$BIN" report "$WORK/plan" --svg "$WORK/c.svg"
mkdir -p "$WORK/tiny"
python3 - "$WORK/tiny/plan.json" <<'EOF'
import json, sys
ranks = [{"rank": k, "cost": c, "utterances": 1, "frames": int(c), "batches": 1}
         for k, c in enumerate([1000.0, 1001.0, 1000.5, 999.5])]
json.dump({"parameters": {"mode": "shard", "world_size": 4, "workers": 1,
                          "cost_model": {"w_frames": 1.0, "source": None}},
           "metrics": {"imbalance": 0.0005, "lower_bound": 1000.25, "filtered": {}},
           "ranks": ranks}, open(sys.argv[1], "w"))
EOF
expect_exit 0 "$BIN" report "$WORK/tiny" --svg "$WORK/tiny.svg"
python3 - "$WORK/c.svg" "$WORK/plan/plan.json" "$WORK/tiny.svg" <<'EOF' || fail "report --svg"
import json, sys, xml.etree.ElementTree as ET
NS = "{http://www.w3.org/2000/svg}"
def parts(path):
    root = ET.parse(path).getroot()
    cls = lambda e: e.get("class", "").split()
    texts = lambda c: [t.text for t in root.iter(NS + "text") if c in cls(t)]
    axis = lambda a: [t.text for g in root.iter(NS + "g") if "axis" in cls(g) and a in cls(g)
                      for t in g.iter(NS + "text") if "tick" in cls(t)]
    bars = [e for e in root.iter(NS + "rect") if "bar" in cls(e)]
    return root, texts, axis, bars
plan = json.load(open(sys.argv[2]))
root, texts, axis, bars = parts(sys.argv[1])
cost = [r["cost"] for r in plan["ranks"]]
mean = sum(cost) / len(cost)
assert [float(b.get("data-value")) for b in bars] == cost, bars
assert texts("title") and texts("title")[0].startswith("Cost per rank"), texts("title")
assert axis("x") == [str(k) for k in range(len(cost))], axis("x")
assert len(axis("y")) >= 3 and all(t.endswith(" %") for t in axis("y")), axis("y")
assert len(texts("axis-label")) == 2, texts("axis-label")
labels = texts("ref-label")
assert f"mean {mean:.1f}" in labels and f"lower bound {plan['metrics']['lower_bound']:.1f}" in labels, labels
root, texts, axis, bars = parts(sys.argv[3])
assert texts("note")[0].startswith("y axis from 99.5 % to 100.5 % of the mean (1000.2 feature frames)"), texts("note")
assert axis("y") == ["99.50 %", "99.75 %", "100.00 %", "100.25 %", "100.50 %"], axis("y")
h = [float(b.get("height")) for b in bars]
assert h[1] - h[0] > 20, h   # 1001 against 1000: 0.1 %
ys = sorted(float(t.get("y")) for t in root.iter(NS + "text") if "ref-label" in t.get("class", ""))
assert ys[1] - ys[0] >= 12, ys  # mean 1000.25 and bound 1000.25: labels apart
EOF

exit $((failures > 0))
