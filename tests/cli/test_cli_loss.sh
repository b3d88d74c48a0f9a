#!/usr/bin/env bash
# CLI tests for inputs that must never be lost without a word nor hang the run:
# over-long lines and running out of memory in lists, FIFOs among the inputs,
# non-UTF-8 bytes in JSON outputs, failures to start threads or to write. Every
# input is made here; each section names the promise it guards (docs/RELIABILITY.md).
set -u
BIN=$1
FIX=$ES_FIXTURES
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$HERE/lib.sh"
cd "$FIX/corpus_a" || exit 1
# a plain build can run under an address-space limit (an ASan build reserves
# terabytes of shadow memory: none there)
asan=$(ldd "$BIN" | grep -c libasan)

# ---- a line longer than 1 MiB in a list is refused with its file and line ------
#      (getline's ENOMEM was read as the end of the file: a shorter list, exit 0)
mkdir -p "$WORK/long/kaldi"
long=$(python3 -c 'print("k" * ((1 << 20) + 1))')
sed "s#^\([^ ]*\) #\1 $PWD/#" kaldi/wav.scp >"$WORK/long/kaldi/wav.scp"
cp kaldi/utt2spk "$WORK/long/kaldi/"
{ head -1 kaldi/text; echo "A01_0002 $long"; tail -n +3 kaldi/text; } >"$WORK/long/kaldi/text"
expect_exit 2 "$BIN" measure -q "$WORK/long/kaldi"
[[ $(cat "$WORK/err") == "equishard measure: $WORK/long/kaldi/text: line 2: longer than 1048576 bytes, the most a line may be" ]] ||
    fail "Kaldi text line of 1 MiB + 1: $(head -c 300 "$WORK/err")"
{ head -2 raw.list; printf '{"key": "x", "wav": "wav/A01/A01_0001.wav", "txt": "%s"}\n' "$long"; } >"$WORK/long/raw.list"
expect_exit 2 "$BIN" measure -q "$WORK/long/raw.list"
grep -q "raw.list: line 3: longer than 1048576 bytes" "$WORK/err" || fail "raw list: $(head -c 300 "$WORK/err")"
# a 2 GiB wav.scp of NULs (sparse) under a 1 GiB address-space limit: the first
# line is refused at 1 MiB, never read until memory runs out (that was exit 0 and
# an empty table)
mkdir -p "$WORK/long/zero"
truncate -s 2G "$WORK/long/zero/wav.scp"
if [[ $asan == 0 ]]; then
    expect_exit 2 bash -c 'ulimit -v 1048576; exec "$@"' _ "$BIN" measure -q "$WORK/long/zero"
    grep -q "zero/wav.scp: line 1: longer than 1048576 bytes" "$WORK/err" || fail "2 GiB wav.scp: $(head -c 300 "$WORK/err")"
fi

# ---- a FIFO among the inputs is refused without blocking: every file of a Kaldi
#      dir, a list given to plan (the sniff for a cost table opened it), a step
#      log, a cost model, --utt2spk (each hung, waiting for a writer)
mkdir -p "$WORK/fifo/kaldi"
sed "s#^\([^ ]*\) #\1 $PWD/#" kaldi/wav.scp >"$WORK/fifo/kaldi/wav.scp"
cp kaldi/text kaldi/utt2spk "$WORK/fifo/kaldi/"
expect_exit 0 "$BIN" measure -q -o "$WORK/fifo/costs.tsv" "$WORK/fifo/kaldi"
for f in wav.scp text utt2spk segments; do
    rm -rf "$WORK/fifo/k"; cp -r "$WORK/fifo/kaldi" "$WORK/fifo/k"
    rm -f "$WORK/fifo/k/$f"; mkfifo "$WORK/fifo/k/$f"
    expect_exit 2 timeout 20 "$BIN" measure -q "$WORK/fifo/k"
    [[ $(cat "$WORK/err") == "equishard measure: $WORK/fifo/k/$f: cannot open: not a regular file" ]] ||
        fail "Kaldi $f as a FIFO: $(head -c 300 "$WORK/err")"
done
mkfifo "$WORK/fifo/p"
for args in "plan -q -k 2 -o $WORK/fifo/out $WORK/fifo/p" "simulate -q -l wenet -k 2 $WORK/fifo/p" \
            "calibrate --steps $WORK/fifo/p $WORK/fifo/costs.tsv" \
            "plan -q -k 2 --cost-model $WORK/fifo/p -o $WORK/fifo/out $WORK/fifo/costs.tsv" \
            "validate -q --utt-emb kaldi/utt2embedding.pt --utt2spk $WORK/fifo/p $WORK/fifo/kaldi"; do
    # shellcheck disable=SC2086
    expect_exit 2 timeout 20 "$BIN" $args
    grep -q "$WORK/fifo/p: .*not a regular file" "$WORK/err" || fail "$args: $(head -c 300 "$WORK/err")"
done

# ---- JSON outputs say keys and paths that are not UTF-8 as \udcXX (Python's
#      surrogateescape), never "out of memory" (validate --json, exit 3), null
#      (calibrate's model.json) or a dropped value (simulate --json's plan)
J=$WORK/json
mkdir -p "$J/kl" "$J/plan-$(printf '\xe9')"
printf 'caf\xe9 %s/wav/A01/A01_0001.wav\n' "$PWD" >"$J/kl/wav.scp"
printf 'caf\xe9 A01\n' >"$J/kl/utt2spk"
expect_exit 1 "$BIN" validate -q --utt-emb kaldi/utt2embedding.pt --json "$J/v.json" "$J/kl"
python3 - "$J/v.json" <<'PY' || fail "validate --json with a latin-1 key: $(head -c 300 "$WORK/err")"
import json, sys
d = json.load(open(sys.argv[1], encoding="utf-8"))
keys = {f["key"].encode("utf-8", "surrogateescape") for f in d["findings"] if f["check"] == "missing_utt_emb"}
assert keys == {b"caf\xe9"}, keys
PY
P=$J/plan-$(printf '\xe9')
expect_exit 0 "$BIN" plan -q -k 2 -o "$P" shards/shards.list
expect_exit 0 "$BIN" simulate -q -l wenet --plan "$P" -o "$J/sim.json"
python3 - "$J/sim.json" "$P" <<'PY' || fail "simulate --json with a latin-1 plan path: $(head -c 300 "$WORK/err")"
import json, os, sys
d = json.load(open(sys.argv[1], encoding="utf-8"))
assert d["parameters"]["plan"].encode("utf-8", "surrogateescape") == os.fsencode(sys.argv[2]), d["parameters"].get("plan")
PY
expect_exit 0 "$BIN" measure -q -o "$J/costs.tsv" shards/shards.list
S=$J/steps-$(printf '\xe9')
python3 "$HERE/gen_steps.py" "$J/costs.tsv" "$S" 5e-5 5e-7 0.02 --seed 1 >/dev/null
expect_exit 0 "$BIN" calibrate -q --steps "$S" "$J/costs.tsv" -o "$J/model.json"
python3 - "$J/model.json" "$S" <<'PY' || fail "calibrate's model.json with a latin-1 log path: $(head -c 300 "$WORK/err")"
import json, os, sys
d = json.load(open(sys.argv[1], encoding="utf-8"))
paths = [os.path.dirname(l["path"].encode("utf-8", "surrogateescape")) for l in d["provenance"]["logs"]]
assert paths and all(p == os.fsencode(sys.argv[2]) for p in paths), paths
PY

# ---- threads that cannot be created (libgomp ends the process with exit 1, the
#      code for "validate found problems"): exit 3 with a line, no FILE.tmp.* left.
#      16 threads of 64 MiB stacks cannot fit under a 150 MB address-space limit.
if [[ $asan == 0 ]]; then
    T=$WORK/threads
    mkdir -p "$T"
    run_limited() { OMP_NUM_THREADS=16 OMP_STACKSIZE=64M bash -c 'ulimit -v 150000; exec "$@"' _ "$@"; }
    expect_exit 3 run_limited "$BIN" measure -q -o "$T/m.tsv" shards/shards.list
    grep -q "^equishard: ended by a library it uses" "$WORK/err" || fail "threads, measure -o: $(head -c 300 "$WORK/err")"
    expect_exit 3 run_limited "$BIN" validate -q --utt-emb kaldi/utt2embedding.pt --json "$T/v.json" kaldi
    grep -q "^equishard: ended by a library it uses" "$WORK/err" || fail "threads, validate: $(head -c 300 "$WORK/err")"
    [[ -z $(ls -A "$T") ]] || fail "left behind: $(ls -A "$T")"
fi

# ---- a full disk names the output and the cause: "OUTDIR/NAME: ... No space
#      left on device" (tar and parquet reshard said "write failed: Write error" or
#      "write failed" with the shard's bare name). validate --json onto /dev/full
#      anywhere; reshard onto a 1 MiB tmpfs where this process may mount one (root
#      in CI), else skipped with a note.
expect_exit 2 "$BIN" validate -q --utt-emb kaldi/utt2embedding.pt --json /dev/full kaldi
[[ $(tail -1 "$WORK/err") == "equishard validate: /dev/full: write failed: No space left on device" ]] ||
    fail "validate --json /dev/full: $(head -c 300 "$WORK/err")"
SMALL=$WORK/small
mkdir -p "$SMALL"
if mount -t tmpfs -o size=1M tmpfs "$SMALL" 2>/dev/null; then
    trap 'umount "$SMALL"; rm -rf "$WORK"' EXIT
    for args in "-o $SMALL/tar shards/shards.list" "--compress gzip -o $SMALL/gz shards/shards.list" \
                "-o $SMALL/pq parquet/parquet_000000000.tar parquet/parquet_000000001.tar"; do
        # shellcheck disable=SC2086
        expect_exit 2 "$BIN" plan -q -k 2 --mode reshard $args
        out=${args#*-o }; out=${out%% *}
        grep -q "^equishard plan: $out/[a-z_0-9.]*tar[.gz]*: .*No space left on device$" "$WORK/err" ||
            fail "reshard $args on a full disk: $(head -c 300 "$WORK/err")"
        [[ -z $(ls -A "$SMALL") ]] || fail "reshard $args left: $(ls -A "$SMALL")"
    done
else
    echo "note: cannot mount a tmpfs here (not root?): reshard on a full disk not tested"
fi

# ---- two plans into one OUTDIR that does not exist yet: the first to rename its
#      folder wins, whole; the other says another run got there first (it said
#      "Directory not empty"). EQUISHARD_TEST_COMMIT_PAUSE_MS (test-only) holds
#      run A between finding OUTDIR missing and its rename; B runs in between.
R=$WORK/race
mkdir -p "$R"
EQUISHARD_TEST_COMMIT_PAUSE_MS=3000 "$BIN" plan -q -k 2 -o "$R/out" shards/shards.list >"$R/a.out" 2>"$R/a.err" &
apid=$!
for _ in $(seq 200); do   # A is in its pause once its folder has lost the marker
    tmp=$(ls -d "$R"/out.tmp.* 2>/dev/null | head -1)
    [[ -n $tmp && -f $tmp/plan.json && ! -e $tmp/.equishard-tmp ]] && break
    sleep 0.02
done
expect_exit 0 "$BIN" plan -q -k 2 --seed 7 -o "$R/out" shards/shards.list
wait $apid
arc=$?
[[ $arc == 2 ]] || fail "the later run: exit $arc, expected 2"
[[ $(cat "$R/a.err") == "equishard plan: $R/out: another run put its output folder in place first, while this one was being written; that one was kept and this run's plan was not written" ]] ||
    fail "the later run's message: $(cat "$R/a.err")"
python3 -c 'import json, sys; assert json.load(open(sys.argv[1]))["parameters"]["seed"] == 7' "$R/out/plan.json" ||
    fail "OUTDIR is not the winner's plan"
[[ -z $(ls -d "$R"/out.tmp.* 2>/dev/null) ]] || fail "left: $(ls -d "$R"/out.tmp.*)"

# ---- a tokenizer whose ids are not what they claim: an added token without an
#      integer "id" (it became id 0), a vocab id of 2^28 (2 GB and a 34 MB cache)
#      are refused in one line, exit 2. Needs ../shared/fixtures/tokenizers.
TOK=$ES_SOURCE_ROOT/../shared/fixtures/tokenizers
if [[ -f $TOK/qwen3-json/tokenizer.json && -f $TOK/qwen2/vocab.json ]]; then
    K=$WORK/tok
    mkdir -p "$K/missing" "$K/quoted" "$K/big" "$K/bigjson"
    export EQUISHARD_CACHE_DIR=$K/cache
    python3 - "$TOK" "$K" <<'PY' || fail "making the tokenizers"
import json, shutil, sys
tok, out = sys.argv[1], sys.argv[2]
t = json.load(open(f"{tok}/qwen3-json/tokenizer.json", encoding="utf-8"))
del t["added_tokens"][1]["id"]
open(f"{out}/missing/tokenizer.json", "w", encoding="utf-8").write(json.dumps(t))
t = json.load(open(f"{tok}/qwen3-json/tokenizer.json", encoding="utf-8"))
t["added_tokens"][1]["id"] = str(t["added_tokens"][1]["id"])
open(f"{out}/quoted/tokenizer.json", "w", encoding="utf-8").write(json.dumps(t))
t = json.load(open(f"{tok}/qwen3-json/tokenizer.json", encoding="utf-8"))
t["model"]["vocab"]["\u00e9big"] = 1 << 28
open(f"{out}/bigjson/tokenizer.json", "w", encoding="utf-8").write(json.dumps(t))
v = json.load(open(f"{tok}/qwen2/vocab.json", encoding="utf-8"))
v["\u00e9big"] = 1 << 28
open(f"{out}/big/vocab.json", "w", encoding="utf-8").write(json.dumps(v))
shutil.copy(f"{tok}/qwen2/merges.txt", f"{out}/big/merges.txt")
PY
    limit=$([[ $asan == 0 ]] && echo "ulimit -v 1048576;")
    for c in "missing:added_tokens\[1\]: \"id\" is missing, not an integer" \
             "quoted:added_tokens\[1\]: \"id\" is another type, not an integer" \
             "big:byte [0-9]*: id 268435456 is beyond the vocab's [0-9]* entries" \
             "bigjson:model.vocab: '.*big': id 268435456 is beyond the vocab's 151644 entries"; do
        d=${c%%:*}
        expect_exit 2 bash -c "$limit"' exec "$@"' _ "$BIN" tokenize -t "$K/$d" - <<<"hello"
        [[ $(wc -l <"$WORK/err") == 1 ]] && grep -q "$K/$d/[a-z.]*json: ${c#*:}" "$WORK/err" ||
            fail "tokenizer $d: $(head -c 300 "$WORK/err")"
    done
    unset EQUISHARD_CACHE_DIR
else
    echo "note: $TOK absent: tokenizer ids not tested"
fi

exit $((failures > 0))
