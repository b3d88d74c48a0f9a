#!/usr/bin/env bash
# CLI tests for `equishard simulate`: the JSON contract checked by Python's json
# module against a Python replay of the loaders' samplers (their lines below),
# the utterance and retention sums, byte-identical repeats, table and list inputs
# agreeing, the readable table, and exit codes.
set -u
BIN=$1
FIX=$ES_FIXTURES
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# check_json LIST JSON: the ranks' shards are the sampler's (CosyVoice:
# DistributedSampler.sample; WeNet: i % (K*W) == w*K + r), the utterances sum to
# the kept total when no entry is repeated, retention <= 1 and = K*min/total.
cat >"$WORK/check.py" <<'EOF'
import json, math, random, sys
def check(list_path, json_path, errors):
  lists = [line.strip() for line in open(list_path) if line.strip()]   # read_lists
  doc = json.load(open(json_path))
  p = doc["parameters"]
  K, W, loader = p["world_size"], p["workers"], p["loader"]
  def cosyvoice(epoch, rank):
      data = list(range(len(lists)))
      if p["partition"]:
          if p["list_shuffle"]:
              random.Random(epoch).shuffle(data)
          if len(data) < K:
              data = data * math.ceil(K / len(data))
              data = data[:K]
          data = data[rank::K]
      return data
  def wenet(epoch, rank):
      return [i for i in range(len(lists)) if i % K == rank]
  assert len(doc["epochs"]) == p["epochs"][1] - p["epochs"][0] + 1
  for ep in doc["epochs"]:
      e = ep["epoch"]
      ranks = ep["ranks"]
      if [r["rank"] for r in ranks] != list(range(K)):
          errors.append("epoch %d: ranks %r" % (e, [r["rank"] for r in ranks]))
      for r in ranks:
          want = [lists[i] for i in (cosyvoice if loader == "cosyvoice" else wenet)(e, r["rank"])]
          if r["shards"] != want:
              errors.append("epoch %d rank %d: shards %r, sampler gives %r" % (e, r["rank"], r["shards"], want))
          for key in ("utterances", "frames", "batches"):
              if key not in r:
                  errors.append("rank without %s" % key)
      total = sum(r["batches"] for r in ranks)
      if abs(total - ep["total_batches"]) > 1e-4:
          errors.append("epoch %d: total %r vs sum %r" % (e, ep["total_batches"], total))
      if abs(min(r["batches"] for r in ranks) - ep["min_batches"]) > 1e-4 and doc["parameters"]["trials"] == 1:
          errors.append("epoch %d: min_batches %r" % (e, ep["min_batches"]))
      if not (0 <= ep["retention"] <= 1 + 1e-9):
          errors.append("epoch %d: retention %r" % (e, ep["retention"]))
      if total > 0 and abs(ep["retention"] - K * ep["min_batches"] / total) > 1e-5:
          errors.append("epoch %d: retention %r != K*min/total %r" % (e, ep["retention"], K * ep["min_batches"] / total))
      if p["partition"] and len(lists) >= K * W and sum(r["utterances"] for r in ranks) != doc["input"]["kept"]:
          errors.append("epoch %d: utterances sum %d != kept %d" % (e, sum(r["utterances"] for r in ranks), doc["input"]["kept"]))
      if sum(doc["input"]["filtered"].values()) + doc["input"]["kept"] != doc["input"]["utterances"]:
          errors.append("kept + filtered != utterances")
      for r in ranks:
          if len(r["workers"]) != W or abs(sum(w["batches"] for w in r["workers"]) - r["batches"]) > 1e-4:
              errors.append("epoch %d rank %d: workers do not add up" % (e, r["rank"]))
  for mode in ("shard", "batch"):
      if mode not in doc["plan"]:
          errors.append("plan side lacks %s" % mode)

failed = 0
for line in open(sys.argv[1]):
    list_path, json_path, label = line.rstrip("\n").split("\t")
    errors = []
    try:
        check(list_path, json_path, errors)
    except Exception as ex:
        errors.append("%s: %r" % (type(ex).__name__, ex))
    for e in errors[:5]:
        print("FAIL: %s: %s" % (label, e))
    failed += bool(errors)
sys.exit(1 if failed else 0)
EOF
# (queued: python runs once at the end, over every JSON)
n_checks=0
check_json() {
    n_checks=$((n_checks + 1))
    cp "$2" "$WORK/check-$n_checks.json"
    printf '%s\t%s\t%s\n' "$PWD/$1" "$WORK/check-$n_checks.json" "$3" >>"$WORK/checks.tsv"
}

# 1. data-samples (3 uneven shards: 12/8/4 utterances), K = 2 and 3, several epochs
cd "$ES_SOURCE_ROOT/data-samples" || exit 1
for k in 2 3; do
    for w in 1 2; do
        expect_exit 0 "$BIN" simulate -q --loader cosyvoice --world-size $k --workers $w --epochs -1:3 --json shards/data.list
        cp "$WORK/out" "$WORK/ds-$k-$w.json"
        check_json shards/data.list "$WORK/ds-$k-$w.json" "data-samples cosyvoice K=$k W=$w"
        expect_exit 0 "$BIN" simulate -q --loader wenet --world-size $k --workers $w --json shards/data.list
        check_json shards/data.list "$WORK/out" "data-samples wenet K=$k W=$w"
    done
done
# a rank that reads the 4-utterance shard gets fewer batches than the 12-utterance one
python3 - "$WORK/ds-2-1.json" <<'EOF' || fail "data-samples K=2: expected unequal ranks"
import json, sys
d = json.load(open(sys.argv[1]))
assert any(len({r["batches"] for r in ep["ranks"]}) > 1 or ep["retention"] < 1 for ep in d["epochs"])
EOF

# 2. byte-identical repeats; -o FILE holds what --json prints; seeds matter only
#    through the shuffle buffer
expect_exit 0 "$BIN" simulate -q --loader cosyvoice -k 2 -w 2 -e 0:3 --seed 5 --json -o "$WORK/o.json" shards/data.list
cp "$WORK/out" "$WORK/a.json"
expect_exit 0 "$BIN" simulate -q --loader cosyvoice -k 2 -w 2 -e 0:3 --seed 5 --json shards/data.list
cmp -s "$WORK/out" "$WORK/a.json" || fail "same seed, different JSON"
cmp -s "$WORK/o.json" "$WORK/a.json" || fail "-o FILE differs from --json"
ls "$WORK" | grep -q '\.tmp\.' && fail "temporary file left behind"

# 3. a cost table gives what its list gives
expect_exit 0 "$BIN" measure -q -o "$WORK/costs.tsv" shards/data.list
expect_exit 0 "$BIN" simulate -q --loader cosyvoice -k 2 -w 2 -e 0:3 --seed 5 --json "$WORK/costs.tsv"
cmp -s "$WORK/out" "$WORK/a.json" || fail "cost table and list inputs differ"

# 4. the readable table
expect_exit 0 "$BIN" simulate -q --loader cosyvoice --world-size 2 shards/data.list
grep -q 'join cut' "$WORK/out" && grep -q 'retention' "$WORK/out" || fail "table: $(head -5 "$WORK/out")"
grep -q 'equishard plan --mode shard' "$WORK/out" || fail "table lacks the plan side by side"
grep -q 'shards/' "$WORK/out" && fail "table should not list shard paths"

# 5. corpus A (4 shards of 15), from its folder as the recipes run
cd "$FIX/corpus_a" || exit 1
for k in 2 3 4 5; do
    expect_exit 0 "$BIN" simulate -q --loader cosyvoice --world-size $k --epochs 0:4 --json shards/shards.list
    check_json shards/shards.list "$WORK/out" "corpus_a cosyvoice K=$k"
    expect_exit 0 "$BIN" simulate -q --loader cosyvoice --world-size $k --workers 3 --shuffle-size 0 --json shards/shards.list
    check_json shards/shards.list "$WORK/out" "corpus_a cosyvoice K=$k W=3"
    expect_exit 0 "$BIN" simulate -q --loader wenet --world-size $k --workers 2 --batch-size 4 --json shards/shards.list
    check_json shards/shards.list "$WORK/out" "corpus_a wenet K=$k W=2"
done
expect_exit 0 "$BIN" simulate -q --loader cosyvoice --world-size 2 --no-list-shuffle --json shards/shards.list
check_json shards/shards.list "$WORK/out" "corpus_a --no-list-shuffle"
expect_exit 0 "$BIN" simulate -q --loader cosyvoice --world-size 2 --no-partition --json shards/shards.list
check_json shards/shards.list "$WORK/out" "corpus_a --no-partition"
# raw list: every line is an entry, named by its key
expect_exit 0 "$BIN" simulate -q --loader wenet --world-size 4 --json raw.list
python3 - "$WORK/out" <<'EOF' || fail "raw list entries"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["input"]["entries"] == d["input"]["utterances"] == 60, d["input"]
assert all(len(r["shards"]) == 15 for r in d["epochs"][0]["ranks"])
EOF

# 6. usage and input errors exit 2 with one line
expect_exit 2 "$BIN" simulate --world-size 2 shards/shards.list
expect_exit 2 "$BIN" simulate --loader cosyvoice shards/shards.list
expect_exit 2 "$BIN" simulate --loader pytorch --world-size 2 shards/shards.list
expect_exit 2 "$BIN" simulate --loader cosyvoice --world-size 0 shards/shards.list
expect_exit 2 "$BIN" simulate --loader cosyvoice --world-size 2 --epochs 3:1 shards/shards.list
expect_exit 2 "$BIN" simulate --loader cosyvoice --world-size 2 --trials 0 shards/shards.list
expect_exit 2 "$BIN" simulate --loader cosyvoice --world-size 2
expect_exit 2 "$BIN" simulate -q --loader cosyvoice --world-size 2 "$WORK/missing.list"
[[ $(wc -l <"$WORK/err") == 1 ]] || fail "error is not one line: $(cat "$WORK/err")"
grep -q 'missing.list' "$WORK/err" || fail "error does not name the list"
expect_exit 0 "$BIN" simulate --help
grep -q -- '--loader' "$WORK/out" || fail "--help text"

python3 "$WORK/check.py" "$WORK/checks.tsv" || failures=$((failures + 1))
[[ $(wc -l <"$WORK/checks.tsv") == "$n_checks" && $n_checks -gt 20 ]] || fail "JSON checks not queued"

if ((failures)); then
    echo "$failures failure(s)"
    exit 1
fi
echo "all CLI simulate tests passed"
