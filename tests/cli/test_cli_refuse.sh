#!/usr/bin/env bash
# What a new user's first runs meet: set-ups that used to give damaged results
# at exit 0 are refused with exit 2 and one line that says the fix.
# 1. a plan that leaves a rank or a worker empty; 2. an output that is one of
# the inputs; 3. a plan from a table whose shard files moved or changed;
# 4. listed paths that do not resolve; 5. lists of a kind equishard does not read.
set -u
BIN=$1
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

C=$WORK/corpus
cp -r "$ES_FIXTURES/corpus_a" "$C"
cd "$C" || exit 1
shards=$(grep -c . shards/shards.list)   # 4: the list's own count

one_line() { # what: stderr is exactly one line
    [[ $(wc -l <"$WORK/err") == 1 ]] || fail "$1: not one line: $(cat "$WORK/err")"
}
has() { # what text: stderr contains text
    grep -qF -- "$2" "$WORK/err" || fail "$1: no '$2' in: $(cat "$WORK/err")"
}

# 1. empty ranks or workers. Shard mode with fewer shards than slots used to
#    write empty rank lists and print "retention 0.00%" at exit 0.
expect_exit 2 "$BIN" plan -q -k 4 -w 2 -o "$WORK/p1" shards/shards.list
one_line "shards < slots"
has "shards < slots" "plan: $shards shards for $((4 * 2)) rank×worker slots (4 ranks × 2 workers)"
has "shards < slots" "use --mode batch (or reshard)"
[[ ! -e $WORK/p1 ]] || fail "shards < slots: OUTDIR written"
expect_exit 2 "$BIN" plan -q -k $((shards + 1)) -o "$WORK/p1" shards/shards.list
has "ranks > shards" "$shards shards for $((shards + 1)) rank×worker slots"
# a raw list in shard mode: its entries are the units; reshard does not take them
expect_exit 2 "$BIN" plan -q -k 64 -w 2 --min-length 0 -o "$WORK/p1" raw.list
has "raw list" "list entries for 128 rank×worker slots"
has "raw list" ": use --mode batch"
grep -qF "reshard" "$WORK/err" && fail "raw list: reshard offered for raw-list entries"
# batch mode: every worker takes the steps in turn, so fewer steps than workers
# leave some with none
expect_exit 2 "$BIN" plan -q -k 1 -w 64 --mode batch -o "$WORK/p1" shards/shards.list
one_line "batch, workers > steps"
has "batch, workers > steps" "for 64 workers a rank, so some workers would get none: use fewer workers"
# what fits is planned as before
expect_exit 0 "$BIN" plan -q -k 2 -w 2 -o "$WORK/p1" shards/shards.list
expect_exit 0 "$BIN" plan -q -k 4 -w 2 --mode batch -o "$WORK/p1b" shards/shards.list

# 2. an output that is one of the inputs, by file identity: refused before
#    anything is written, the input unchanged. `measure -o LIST LIST` used to
#    replace the list with the table.
cp shards/shards.list "$WORK/list.orig"
expect_exit 2 "$BIN" measure -q -o shards/shards.list shards/shards.list
one_line "measure -o its input"
has "measure -o its input" "equishard measure: output shards/shards.list is the input shards/shards.list"
cmp -s shards/shards.list "$WORK/list.orig" || fail "measure -o its input: the list changed"
ln shards/shards.list "$WORK/hard.list"                     # another name, the same file
expect_exit 2 "$BIN" measure -q -o "$WORK/hard.list" shards/shards.list
has "measure -o a hard link" "is the input shards/shards.list"
cmp -s shards/shards.list "$WORK/list.orig" || fail "measure -o a hard link: the list changed"
ln -s "$C/shards/shards.list" "$WORK/link.list"             # a symbolic link to it
expect_exit 2 "$BIN" measure -q -o "$WORK/link.list" shards/shards.list
cmp -s shards/shards.list "$WORK/list.orig" || fail "measure -o a symlink: the list changed"
expect_exit 0 "$BIN" measure -q -o "$WORK/costs.tsv" shards/shards.list   # a new file: fine
cp "$WORK/costs.tsv" "$WORK/costs.orig"
expect_exit 2 "$BIN" measure -q --speech-tokens "$WORK/costs.tsv" -o "$WORK/costs.tsv" shards/shards.list
has "measure -o its --speech-tokens" "is the input $WORK/costs.tsv"
cp -r kaldi "$WORK/kaldi"
expect_exit 2 "$BIN" plan -q -k 1 -o "$WORK/kaldi" "$WORK/kaldi"
has "plan -o its Kaldi dir" "equishard plan: output $WORK/kaldi is the input $WORK/kaldi"
diff -r kaldi "$WORK/kaldi" >/dev/null || fail "plan -o its Kaldi dir: the folder changed"
expect_exit 2 "$BIN" simulate --loader cosyvoice -k 2 -o "$WORK/costs.tsv" "$WORK/costs.tsv"
has "simulate -o its table" "equishard simulate: output $WORK/costs.tsv is the input"
expect_exit 2 "$BIN" validate --json "$WORK/costs.tsv" --costs "$WORK/costs.tsv"
has "validate --json its table" "equishard validate: output $WORK/costs.tsv is the input"
printf '{"step": 0, "rank": 0, "time": 1.0}\n' >"$WORK/steps.jsonl"
cp "$WORK/steps.jsonl" "$WORK/steps.orig"
expect_exit 2 "$BIN" calibrate --steps "$WORK/steps.jsonl" -o "$WORK/steps.jsonl" "$WORK/costs.tsv"
has "calibrate -o its log" "equishard calibrate: output $WORK/steps.jsonl is the input"
cmp -s "$WORK/steps.jsonl" "$WORK/steps.orig" || fail "calibrate -o its log: the log changed"
expect_exit 2 "$BIN" report --svg "$WORK/p1/plan.json" "$WORK/p1"
has "report --svg its plan.json" "equishard report: output $WORK/p1/plan.json is the input"
cmp -s "$WORK/costs.tsv" "$WORK/costs.orig" || fail "outputs: the table changed"

# 3. a table whose shard files moved or changed since measuring: every mode
#    refuses it (reshard did already), counting them and naming the first in
#    table order, before OUTDIR is touched
expect_exit 0 "$BIN" measure -q -o costs.tsv shards/shards.list
cp -p shards/shards_000000002.tar "$WORK/s2.tar"
head -c 512 /dev/zero >>shards/shards_000000002.tar              # longer: changed
touch -d '2001-02-03 04:05:06' shards/shards_000000003.tar      # the same bytes, another time
want_size=$(stat -c %s shards/shards_000000002.tar)
for mode in shard batch; do
    expect_exit 2 "$BIN" plan -q -k 2 --mode "$mode" -o "$WORK/p3" costs.tsv
    one_line "changed shards, $mode"
    has "changed shards, $mode" "shards/shards_000000002.tar: $want_size bytes, $((want_size - 512)) when measured"
    has "changed shards, $mode" "(2 of the table's $shards shard files moved or changed)"
    has "changed shards, $mode" "give --root DIR"
    [[ ! -e $WORK/p3 ]] || fail "changed shards, $mode: OUTDIR written"
done
cp -p "$WORK/s2.tar" shards/shards_000000002.tar
expect_exit 2 "$BIN" plan -q -k 2 -o "$WORK/p3" costs.tsv
has "touched shard" "shards/shards_000000003.tar: modified at 981173106.000000000"
has "touched shard" "(1 of the table's $shards shard files moved or changed)"
expect_exit 0 "$BIN" measure -q -o costs.tsv shards/shards.list      # measured again: fine
expect_exit 0 "$BIN" plan -q -k 2 -o "$WORK/p3" costs.tsv
# the table's relative paths seen from another folder: moved, unless --root says where
expect_exit 2 env -C "$WORK" "$BIN" plan -q -k 2 -o "$WORK/p4" "$C/costs.tsv"
has "another folder" "shards/shards_000000000.tar: not found (moved or deleted)"
has "another folder" "($shards of the table's $shards shard files moved or changed)"
has "another folder" "relative paths resolve against the current directory; give --root DIR"
expect_exit 0 env -C "$WORK" "$BIN" plan -q -k 2 --root "$C" -o "$WORK/p4" "$C/costs.tsv"
cmp -s "$WORK/p3/rank-00000.list" "$WORK/p4/rank-00000.list" || fail "--root: another plan"

# 4. a listed path that is not where the list is read from
expect_exit 2 env -C "$WORK" "$BIN" measure -q "$C/shards/shards.list"
one_line "list from another folder"
has "list from another folder" "$C/shards/shards.list: line 1: shards/shards_000000000.tar not found"
has "list from another folder" "relative paths resolve against the current directory; give --root DIR"
expect_exit 0 env -C "$WORK" "$BIN" measure -q --root "$C" "$C/shards/shards.list"
expect_exit 2 env -C "$WORK" "$BIN" measure -q --root /nonexistent "$C/shards/shards.list"
has "--root elsewhere" "relative paths resolve against --root /nonexistent, not the current directory"
# a later entry missing: the shard's own line says the same
printf 'shards/shards_000000000.tar\nshards/gone.tar\n' >"$WORK/two.list"
expect_exit 2 "$BIN" measure -q "$WORK/two.list"
has "a later entry" "shards/gone.tar: cannot open: No such file or directory (relative paths resolve against the current directory; give --root DIR"
# a raw list's audio
expect_exit 2 env -C "$WORK" "$BIN" measure -q "$C/raw.list"
has "raw list's audio" "cannot open audio"
has "raw list's audio" "(relative paths resolve against the current directory; give --root DIR"

# 5. lists of another kind: named, with what is read
python3 - "$WORK/nemo.json" <<'PY'
import json, sys
with open(sys.argv[1], "w") as f:
    for i in range(3):  # NeMo's manifest: one JSON object a line
        f.write(json.dumps({"audio_filepath": f"wav/u{i}.wav", "duration": 1.5, "text": "hi"}) + "\n")
PY
expect_exit 2 "$BIN" measure -q "$WORK/nemo.json"
one_line "NeMo manifest"
has "NeMo manifest" "$WORK/nemo.json: line 1: a JSON object without \"key\" and \"wav\" (\"audio_filepath\": a NeMo manifest) is not a WeNet raw list"
has "NeMo manifest" "WeNet raw lists (JSON lines with \"key\" and \"wav\") and Kaldi data directories"
expect_exit 2 "$BIN" plan -q -k 1 --on-error skip -o "$WORK/p5" "$WORK/nemo.json"
has "NeMo manifest, --on-error skip" "is not a WeNet raw list"
printf 'path,duration,text\nwav/u0.wav,1.5,hi\n' >"$WORK/train.csv"
expect_exit 2 "$BIN" measure -q "$WORK/train.csv"
one_line "CSV"
has "CSV" "$WORK/train.csv: line 1: path,duration,text not found: read as a shard list (one path a line)"
has "CSV" "if it is not a shard list: equishard reads cost tables"

exit $((failures > 0))
