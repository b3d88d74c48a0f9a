#!/usr/bin/env bash
# CLI tests for hostile use ("nothing lost, nothing overwritten, nobody let in"):
# odd output targets, permissions under a strict umask, damaged and hostile
# inputs. Every input is made here; each section names the finding it guards.
set -u
BIN=$1
FIX=$ES_FIXTURES
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$FIX/corpus_a" || exit 1
mode() { stat -c %a "$1"; }

# A plan to report on, and a simulate/validate input.
expect_exit 0 "$BIN" plan -q -k 2 -o "$WORK/plan" shards/shards.list

# ---- 1. -o onto a device, a FIFO, a symlink; "-" is standard output ----------
# A symlink to /dev/null: written through, the link and /dev/null stay what they are.
ln -s /dev/null "$WORK/null-link"
expect_exit 0 "$BIN" measure -q -o "$WORK/null-link" shards/shards.list
[[ -L $WORK/null-link ]] || fail "measure -o LINK-to-/dev/null replaced the link"
[[ -c /dev/null ]] || fail "/dev/null is no longer a character device"
# A FIFO: its reader gets the table; the FIFO is still a FIFO.
for cmd in "measure -q -o" "simulate -q --loader cosyvoice --world-size 2 -o" "validate -q --utt-emb kaldi/utt2embedding.pt --json"; do
    rm -f "$WORK/fifo" "$WORK/fifo.out"; mkfifo "$WORK/fifo"
    timeout 20 cat "$WORK/fifo" >"$WORK/fifo.out" &
    reader=$!
    # shellcheck disable=SC2086
    expect_exit 0 timeout 20 "$BIN" $cmd "$WORK/fifo" kaldi
    wait $reader
    [[ -p $WORK/fifo ]] || fail "$cmd FIFO: the FIFO was replaced"
    [[ -s $WORK/fifo.out ]] || fail "$cmd FIFO: the reader got nothing"
    kill $reader 2>/dev/null
done
# A symlink to an old output: the target is replaced, the link kept.
echo old >"$WORK/target.tsv"
ln -s target.tsv "$WORK/link.tsv"
expect_exit 0 "$BIN" measure -q -o "$WORK/link.tsv" shards/shards.list
[[ -L $WORK/link.tsv ]] || fail "measure -o LINK: the link was replaced"
head -1 "$WORK/target.tsv" | grep -q '^#\|^key\|shard' || fail "measure -o LINK: target not rewritten: $(head -1 "$WORK/target.tsv")"
# "-": standard output, for every -o/--json/--svg.
expect_exit 0 "$BIN" simulate -q --loader cosyvoice --world-size 2 -o - kaldi
grep -q '"epochs"' "$WORK/out" || fail "simulate -o - wrote no JSON to stdout"
[[ -e ./- ]] && { fail "simulate -o - created a file named '-'"; rm -f ./-; }
expect_exit 0 "$BIN" validate -q --utt-emb kaldi/utt2embedding.pt --json - kaldi
grep -q '"findings"' "$WORK/out" || fail "validate --json - wrote no JSON to stdout"
[[ -e ./- ]] && { fail "validate --json - created a file named '-'"; rm -f ./-; }
expect_exit 0 "$BIN" report "$WORK/plan" --svg -
grep -q '<svg' "$WORK/out" || fail "report --svg - wrote no chart to stdout"
[[ -e ./- ]] && { fail "report --svg - created a file named '-'"; rm -f ./-; }
# report --svg honours the umask like every other output, and keeps a symlink.
(umask 022 && "$BIN" report "$WORK/plan" --svg "$WORK/chart.svg" >/dev/null) || fail "report --svg"
[[ $(mode "$WORK/chart.svg") == 644 ]] || fail "report --svg under umask 022: mode $(mode "$WORK/chart.svg")"
ln -s chart.svg "$WORK/chart-link.svg"
"$BIN" report "$WORK/plan" --svg "$WORK/chart-link.svg" >/dev/null || fail "report --svg LINK"
[[ -L $WORK/chart-link.svg ]] || fail "report --svg LINK: the link was replaced"
ls "$WORK" | grep -q '\.tmp\.' && fail "temporary files left: $(ls "$WORK")"

# ---- 3. OUTDIRs honour the umask (and so would a leftover OUTDIR.tmp.*) -------
(umask 077 && "$BIN" plan -q -k 2 -o "$WORK/p077" shards/shards.list) || fail "plan under umask 077"
[[ $(mode "$WORK/p077") == 700 ]] || fail "plan OUTDIR under umask 077: mode $(mode "$WORK/p077")"
[[ $(mode "$WORK/p077/plan.json") == 600 ]] || fail "plan.json under umask 077: mode $(mode "$WORK/p077/plan.json")"
(umask 077 && "$BIN" plan -q -k 2 --mode reshard --min-length 0 -o "$WORK/r077" shards/shards.list) ||
    fail "reshard under umask 077"
[[ $(mode "$WORK/r077") == 700 ]] || fail "reshard OUTDIR under umask 077: mode $(mode "$WORK/r077")"
[[ $(mode "$WORK/r077/shards_000000000.tar") == 600 ]] || fail "reshard shard under umask 077"
(umask 022 && "$BIN" plan -q -k 2 -o "$WORK/p022" shards/shards.list) || fail "plan under umask 022"
[[ $(mode "$WORK/p022") == 755 ]] || fail "plan OUTDIR under umask 022: mode $(mode "$WORK/p022")"
(umask 077 && "$BIN" measure -q -o "$WORK/m077.tsv" shards/shards.list) || fail "measure under umask 077"
[[ $(mode "$WORK/m077.tsv") == 600 ]] || fail "measure -o under umask 077: mode $(mode "$WORK/m077.tsv")"

# ---- 13. plan -o LINK, LINK a symlink to an earlier plan: the plan it points to
#      is replaced, the link kept (it was refused as "not an equishard output folder")
ln -s p022 "$WORK/plan-link"
expect_exit 0 "$BIN" plan -q -k 3 -o "$WORK/plan-link" shards/shards.list
[[ -L $WORK/plan-link ]] || fail "plan -o LINK: the link was replaced"
grep -q '"world_size": 3' "$WORK/p022/plan.json" || fail "plan -o LINK: the target is not the new plan"
ls "$WORK" | grep -q '\.tmp\.' && fail "temporary files left: $(ls "$WORK")"

# ---- 4. a damaged tar header in the middle of a shard: a corrupt shard --------
mkdir -p "$WORK/t4"
cp shards/shards_000000000.tar shards/shards_000000001.tar "$WORK/t4/"
printf '%s\n' "$WORK/t4/shards_000000000.tar" "$WORK/t4/shards_000000001.tar" >"$WORK/t4/data.list"
expect_exit 0 "$BIN" measure -q -o "$WORK/t4/costs.tsv" "$WORK/t4/data.list"
python3 - "$WORK/t4/shards_000000000.tar" <<'PY' || fail "damaging the tar"
import sys, tarfile
path = sys.argv[1]
offset = tarfile.open(path).getmembers()[4].offset   # a .txt header mid-shard
b = bytearray(open(path, "rb").read())
b[offset + 148:offset + 156] = b"9999999\0"             # its checksum
open(path, "wb").write(b)
PY
expect_exit 2 "$BIN" measure -q "$WORK/t4/data.list"
grep -q 'shards_000000000.tar: damaged tar header' "$WORK/err" || fail "damaged header message: $(cat "$WORK/err")"
expect_exit 0 "$BIN" measure -q --on-error skip "$WORK/t4/data.list"
grep -q 'shards_000000000.tar' "$WORK/out" && fail "--on-error skip kept rows of the damaged shard"
grep -q 'damaged tar header' "$WORK/err" || fail "--on-error skip did not list the damaged shard"
expect_exit 2 "$BIN" plan -q -k 2 --mode reshard --min-length 0 -o "$WORK/t4/r" "$WORK/t4/costs.tsv"
grep -q 'shards_000000000.tar' "$WORK/err" || fail "reshard damaged header message: $(cat "$WORK/err")"
[[ -e $WORK/t4/r ]] && fail "reshard wrote an OUTDIR from a damaged shard"

# ---- 12. a FIFO or /dev/zero as audio: refused with its path, never read ------
mkdir -p "$WORK/t12/kaldi"
mkfifo "$WORK/t12/fifo.wav"
printf '{"key": "a", "wav": "%s", "txt": "x"}\n' "$WORK/t12/fifo.wav" >"$WORK/t12/fifo.list"
printf '{"key": "b", "wav": "/dev/zero", "txt": "x"}\n' >"$WORK/t12/zero.list"
for args in "$WORK/t12/fifo.list" "--hash $WORK/t12/fifo.list" "$WORK/t12/zero.list" "--hash $WORK/t12/zero.list"; do
    # shellcheck disable=SC2086
    expect_exit 2 timeout 20 "$BIN" measure -q $args
    grep -q 'not a regular file' "$WORK/err" || fail "measure $args: $(cat "$WORK/err")"
done
printf 'u1 %s\nu2 /dev/zero\n' "$WORK/t12/fifo.wav" >"$WORK/t12/kaldi/wav.scp"
printf 'u1 a\nu2 b\n' >"$WORK/t12/kaldi/text"
printf 'u1 s\nu2 s\n' >"$WORK/t12/kaldi/utt2spk"
expect_exit 0 timeout 20 "$BIN" measure -q --on-error skip "$WORK/t12/kaldi"
[[ $(grep -c 'not a regular file' "$WORK/err") == 2 ]] || fail "wav.scp FIFO and /dev/zero: $(cat "$WORK/err")"
grep -q "fifo.wav" "$WORK/err" && grep -q "/dev/zero" "$WORK/err" || fail "the refused paths are not named"
printf '%s\n' "$WORK/t12/fifo.wav" >"$WORK/t12/shards.list"    # a FIFO as a shard
expect_exit 2 timeout 20 "$BIN" measure -q "$WORK/t12/shards.list"
grep -q 'fifo.wav.*not a regular file' "$WORK/err" || fail "FIFO shard: $(cat "$WORK/err")"
expect_exit 2 timeout 20 "$BIN" tokenize -t "$WORK/t12/fifo.wav" /dev/null  # a FIFO as tokenizer.json
grep -q 'fifo.wav: not a regular file' "$WORK/err" || fail "tokenize FIFO: $(cat "$WORK/err")"
for opt in --utt-emb --spk-emb; do                               # a FIFO as an embedding source
    expect_exit 2 timeout 20 "$BIN" validate "$opt" "$WORK/t12/fifo.wav" "$WORK/t12/fifo.list"
    grep -q 'fifo.wav: cannot open: not a regular file' "$WORK/err" || fail "validate $opt FIFO: $(cat "$WORK/err")"
done

# ---- 13. a line break in a path is refused for rank lists and data.list ------
mkdir -p "$WORK/t13"
nl_shard="$WORK/t13/a"$'\n'"b.tar"
cp shards/shards_000000000.tar "$nl_shard"
expect_exit 2 "$BIN" plan -q -k 1 -o "$WORK/t13/p" "$nl_shard"
grep -q 'a\\nb.tar: a path with a line break' "$WORK/err" || fail "newline shard path: $(cat "$WORK/err")"
[[ $(wc -l <"$WORK/err") == 1 ]] || fail "newline shard path: the message is not one line"
[[ -e $WORK/t13/p ]] && fail "plan wrote rank lists with a line break in a path"
expect_exit 2 "$BIN" plan -q -k 1 --mode reshard --min-length 0 -o "$WORK/t13/r"$'\n'"x" shards/shards.list
grep -q 'line break cannot go into data.list' "$WORK/err" || fail "newline OUTDIR: $(cat "$WORK/err")"

# ---- 14. validate on a parquet list validates its embedding columns; nothing
#      to validate is exit 2; --root applies inside --utt-emb/--spk-emb lists
expect_exit 0 "$BIN" validate -q --json "$WORK/pq.json" parquet/data.list
grep -q 'validated 60 utterance and 6 speaker' "$WORK/out" || fail "parquet LIST alone: $(head -1 "$WORK/out")"
python3 -c 'import json, sys; s = json.load(open(sys.argv[1]))["summary"]
assert (s["utt_embeddings"], s["spk_embeddings"]) == (60, 6), s' "$WORK/pq.json" || fail "parquet LIST JSON"
mkdir -p "$WORK/t14/empty"
: >"$WORK/t14/empty/wav.scp"; : >"$WORK/t14/empty/text"; : >"$WORK/t14/empty/utt2spk"
expect_exit 2 "$BIN" validate -q "$WORK/t14/empty"
grep -q 'nothing to validate' "$WORK/err" || fail "nothing to validate: $(cat "$WORK/err")"
(cd .. && "$BIN" validate -q --root corpus_a --utt-emb corpus_a/parquet/data.list \
    --spk-emb corpus_a/parquet/data.list >"$WORK/out" 2>"$WORK/err") || fail "--root with --utt-emb: $(cat "$WORK/err")"
grep -q 'validated 60 utterance and 6 speaker' "$WORK/out" || fail "--root with --utt-emb: $(head -1 "$WORK/out")"

# ---- 2. reshard never writes two utterances of one key next to each other ---
#      (the last of one shard and the first of the next share a key "dup")
mkdir -p "$WORK/t2"
python3 - "$WORK/t2" "$PWD/wav/A01" <<'PY' || fail "making the duplicate-key shards"
import io, os, sys, tarfile
out, wavs = sys.argv[1], sorted(os.listdir(sys.argv[2]))
def add(t, name, data):
    info = tarfile.TarInfo(name); info.size = len(data); t.addfile(info, io.BytesIO(data))
def shard(path, keys, wav_files):
    with tarfile.open(path, "w", format=tarfile.USTAR_FORMAT) as t:
        for key, w in zip(keys, wav_files):
            add(t, key + ".txt", b"some words here")
            add(t, key + ".wav", open(os.path.join(sys.argv[2], w), "rb").read())
shard(os.path.join(out, "a.tar"), ["u1", "dup"], wavs[0:2])
shard(os.path.join(out, "b.tar"), ["dup", "u3"], wavs[2:4])
open(os.path.join(out, "data.list"), "w").write("a.tar\nb.tar\n")
PY
expect_exit 0 "$BIN" measure -q --root "$WORK/t2" -o "$WORK/t2/costs.tsv" "$WORK/t2/data.list"
expect_exit 2 "$BIN" plan -q -k 1 --mode reshard --min-length 0 --root "$WORK/t2" -o "$WORK/t2/r" "$WORK/t2/costs.tsv"
grep -q '1 pair(s) of utterances with one key would be adjacent.*first: dup (a.tar pos 1, and b.tar pos 0)' "$WORK/err" ||
    fail "reshard adjacent duplicate key: $(cat "$WORK/err")"
[[ -e $WORK/t2/r ]] && fail "reshard wrote shards with adjacent duplicate keys"

# ---- 6. duplicate (shard, pos) rows, and one shard listed twice: refused -----
#      (batch mode planned such an utterance twice; reshard said "write failed: (null)")
expect_exit 0 "$BIN" measure -q -o "$WORK/t6.tsv" shards/shards.list
{ cat "$WORK/t6.tsv"; tail -n +3 "$WORK/t6.tsv" | head -5; } >"$WORK/t6-overlap.tsv"
for mode in shard batch reshard; do
    expect_exit 2 "$BIN" plan -q -k 2 --mode $mode --min-length 0 -o "$WORK/t6-$mode" "$WORK/t6-overlap.tsv"
    grep -q 'shards/shards_000000000.tar: pos 0 (A01_0001) is in the table twice (rows 1 and 61; 5 duplicate' "$WORK/err" ||
        fail "$mode: duplicate rows: $(cat "$WORK/err")"
    grep -q '(null)' "$WORK/err" && fail "$mode: (null) in the message"
done
printf 'shards/shards_000000000.tar\nshards/shards_000000001.tar\nshards/shards_000000000.tar\n' >"$WORK/t6.list"
expect_exit 2 "$BIN" plan -q -k 2 -o "$WORK/t6-list" --root . "$WORK/t6.list"
grep -q 'is in the table twice' "$WORK/err" || fail "shard listed twice: $(cat "$WORK/err")"

# ---- 7. non-UTF-8 keys in rank-*.batches.jsonl: escaped as \udcXX, which
#      Python's json.loads and .encode("utf-8", "surrogateescape") turn back
#      into the key's bytes (as tarfile decodes member names); the same for a
#      shard's name (with a quote and a backslash too) in the items
mkdir -p "$WORK/t7"
python3 - "$WORK/t7" "$PWD/wav/A01" <<'PY' || fail "making the non-UTF-8 shard"
import io, os, sys, tarfile
out, wavs = sys.argv[1], sorted(os.listdir(sys.argv[2]))
keys = ["caf\udce9", "ok-\u00e9", "q\"b\\s", "\udced\udca0\udc80", "trunc\udce4\udcb8"]
shards = [b"a.tar", b'b"\\\xe9.tar']   # the second: a quote, a backslash, a non-UTF-8 byte
for shard, part in zip(shards, (keys, ["plain-1", "plain-2"])):
    with tarfile.open(os.path.join(os.fsencode(out), shard), "w", format=tarfile.USTAR_FORMAT,
                      encoding="utf-8", errors="surrogateescape") as t:
        for key, w in zip(part, wavs):
            for name, data in ((key + ".txt", b"some words here"),
                               (key + ".wav", open(os.path.join(sys.argv[2], w), "rb").read())):
                info = tarfile.TarInfo(name); info.size = len(data); t.addfile(info, io.BytesIO(data))
open(os.path.join(out, "data.list"), "wb").write(b"".join(s + b"\n" for s in shards))
PY
expect_exit 0 "$BIN" measure -q --root "$WORK/t7" -o "$WORK/t7/costs.tsv" "$WORK/t7/data.list"
expect_exit 0 "$BIN" plan -q -k 1 --mode batch --min-length 0 --root "$WORK/t7" -o "$WORK/t7/p" "$WORK/t7/costs.tsv"
python3 - "$WORK/t7" <<'PY' || fail "batches.jsonl with non-UTF-8 keys: $(cat "$WORK/t7/p/rank-00000.batches.jsonl")"
import json, os, sys, tarfile
d = sys.argv[1]
want, want_items = [], set()
for shard in (b"a.tar", b'b"\\\xe9.tar'):
    with tarfile.open(os.path.join(os.fsencode(d), shard)) as t:   # tarfile's own decoding: surrogateescape
        for i, m in enumerate(t.getmembers()):   # .txt and .wav: utterance i // 2
            want.append(m.name.rsplit(".", 1)[0])
            want_items.add((shard, i // 2))
want = sorted(set(want))
with open(os.path.join(d, "p", "rank-00000.batches.jsonl"), encoding="utf-8") as f:  # strict
    lines = [json.loads(line) for line in f]
got = sorted(k for b in lines for k in b["keys"])
assert got == want, (got, want)
for k in got:
    k.encode("utf-8", "surrogateescape")   # every key turns back into its bytes
items = {(s.encode("utf-8", "surrogateescape"), pos) for b in lines for s, pos in b["items"]}
assert items == want_items, (items, want_items)
PY

# ---- 8. SIGINT/SIGTERM during reshard removes OUTDIR.tmp.*; a later run removes
#      the temporary folders killed runs left (ours only: the marker, a dead pid)
#      EQUISHARD_TEST_PAUSE_MS (test-only) sleeps after each file made in the
#      temporary folder, so the run is interrupted mid-way, every time.
mkdir -p "$WORK/t8"
reshard8() { "$BIN" plan -q -k 2 --mode reshard --min-length 0 -o "$WORK/t8/r" shards/shards.list; }
expect_exit 0 reshard8
old8=$(cat "$WORK/t8/r/plan.json")
tmp8() { compgen -G "$WORK/t8/r.tmp.*"; }
interrupt8() { # signal expected-exit
    set -m # a background job of a script otherwise starts with SIGINT ignored
    EQUISHARD_TEST_PAUSE_MS=300 "$BIN" plan -q -k 2 --mode reshard --min-length 0 \
        -o "$WORK/t8/r" shards/shards.list >"$WORK/out" 2>"$WORK/err" &
    local pid=$! got
    set +m
    for _ in $(seq 200); do compgen -G "$WORK/t8/r.tmp.*/shards_*" >/dev/null && break; sleep 0.05; done
    compgen -G "$WORK/t8/r.tmp.*/shards_*" >/dev/null || fail "$1: the reshard wrote no shard to interrupt"
    kill -s "$1" $pid
    wait $pid; got=$?
    [[ $got == "$2" ]] || fail "$1 during reshard: exit $got, expected $2 ($(cat "$WORK/err"))"
}
for sig in INT:130 TERM:143; do
    interrupt8 "${sig%:*}" "${sig#*:}"
    tmp8 >/dev/null && fail "SIG${sig%:*} during reshard left $(tmp8)"
    grep -q 'interrupted; temporary outputs removed' "$WORK/err" || fail "SIG${sig%:*}: $(cat "$WORK/err")"
    [[ $(cat "$WORK/t8/r/plan.json") == "$old8" ]] || fail "SIG${sig%:*}: the previous OUTDIR changed"
done
interrupt8 KILL 137 # no handler runs: the folder stays, with the marker
left8=$(tmp8)
[[ -f $left8/.equishard-tmp ]] || fail "SIGKILL: no marker in the temporary folder: $left8"
mkdir "$WORK/t8/r.tmp.notour" && : >"$WORK/t8/r.tmp.notour/x"   # no marker: not ours
mkdir "$WORK/t8/r.tmp.live01" && printf 'equishard temporary folder\npid %s\nhost %s\n' $$ "$(hostname)" \
    >"$WORK/t8/r.tmp.live01/.equishard-tmp"                         # a running process's
expect_exit 0 reshard8
grep -q "removed $left8, left by an interrupted run (pid [0-9]*)" "$WORK/err" || fail "stale folder: $(cat "$WORK/err")"
[[ -e $left8 ]] && fail "the stale temporary folder $left8 is still there"
[[ -e $WORK/t8/r.tmp.notour/x && -e $WORK/t8/r.tmp.live01 ]] || fail "removed a temporary folder not ours to remove"
[[ -e $WORK/t8/r/.equishard-tmp ]] && fail "the marker went into OUTDIR"
grep -c removed "$WORK/err" | grep -qx 1 || fail "removed more than the stale folder: $(cat "$WORK/err")"
rm -rf "$WORK/t8/r.tmp.notour" "$WORK/t8/r.tmp.live01"
# measure -o FILE: SIGINT removes FILE.tmp.*
set -m
EQUISHARD_TEST_PAUSE_MS=3000 "$BIN" measure -q -o "$WORK/t8/costs.tsv" shards/shards.list 2>/dev/null &
pid8=$!
set +m
for _ in $(seq 200); do compgen -G "$WORK/t8/costs.tsv.tmp.*" >/dev/null && break; sleep 0.05; done
compgen -G "$WORK/t8/costs.tsv.tmp.*" >/dev/null || fail "measure -o wrote no temporary file to interrupt"
kill -INT $pid8; wait $pid8
compgen -G "$WORK/t8/costs.tsv*" >/dev/null && fail "SIGINT during measure -o left $(compgen -G "$WORK/t8/costs.tsv*")"

# ---- 9. a small .pt that decodes to a huge pickle: refused with one line, exit 2
#      (a deflated run of MEMOIZE grew the memo past 8 GB; a deflated run of
#      numbers would fill memory with values): made here with zipfile and opcodes
mkdir -p "$WORK/t9"
python3 - "$WORK/t9" <<'PY' || fail "making the .pt bombs"
import os, sys, zipfile
def bomb(name, head, unit, tail, total):
    with zipfile.ZipFile(os.path.join(sys.argv[1], name), "w", zipfile.ZIP_DEFLATED) as z:
        with z.open("archive/data.pkl", "w", force_zip64=True) as f:
            f.write(head)
            chunk = unit * ((1 << 20) // len(unit))
            for _ in range(total // len(chunk)):
                f.write(chunk)
            f.write(tail)
bomb("memoize.pt", b"\x80\x02}", b"\x94", b".", 400 << 20)
bomb("numbers.pt", b"\x80\x02}X\x01\x00\x00\x00a]", b"(" + b"K\x00" * 1000 + b"e", b"s.", 200 << 20)
PY
[[ $(stat -c %s "$WORK/t9/memoize.pt") -lt 500000 ]] || fail "the MEMOIZE bomb is not small: $(stat -c %s "$WORK/t9/memoize.pt")"
# a plain build runs under a 2 GiB address-space limit, so running out of memory
# is exit 3 at once (an ASan build reserves terabytes of shadow memory: no limit)
limit=$(ldd "$BIN" | grep -q libasan || echo "ulimit -v 2097152;")
for case in "memoize:byte 4: more memo entries than objects (1)" \
            "numbers:byte [0-9]*: decompresses to more than 64 times the [0-9]*-byte file"; do
    pt=${case%%:*}
    expect_exit 2 bash -c "$limit"' exec "$@"' _ "$BIN" validate -q --utt-emb "$WORK/t9/$pt.pt" kaldi
    [[ $(wc -l <"$WORK/err") == 1 ]] || fail "$pt.pt: not one line: $(head -c 600 "$WORK/err")"
    grep -q "$pt.pt: archive/data.pkl: ${case#*:}" "$WORK/err" || fail "$pt.pt bomb: $(head -c 600 "$WORK/err")"
done

# ---- 10. hard-link members (u2.txt linking to u1.txt) read as Python's tarfile
#      reads them; reshard writes them as regular members
mkdir -p "$WORK/t10"
python3 - "$WORK/t10" "$PWD/wav/A01" <<'PY' || fail "making the hard-link shards"
import io, os, sys, tarfile
out, wavs = sys.argv[1], sorted(os.listdir(sys.argv[2]))
def add(t, name, data=None, link=None):
    info = tarfile.TarInfo(name)
    if link is None:
        info.size = len(data); t.addfile(info, io.BytesIO(data))
    else:
        info.type, info.linkname = tarfile.LNKTYPE, link; t.addfile(info)
wav = [open(os.path.join(sys.argv[2], w), "rb").read() for w in wavs[:3]]
with tarfile.open(os.path.join(out, "a.tar"), "w", format=tarfile.USTAR_FORMAT) as t:
    add(t, "u1.txt", b"the first words"); add(t, "u1.wav", wav[0])
    add(t, "u2.txt", link="u1.txt"); add(t, "u2.wav", link="./u1.wav")   # normpath'd by tarfile
    add(t, "u3.txt", b"other words here, longer"); add(t, "u3.wav", wav[1])
    add(t, "u4.txt", link="u2.txt"); add(t, "u4.wav", wav[2])          # a link to a link
with tarfile.open(os.path.join(out, "dangling.tar"), "w", format=tarfile.USTAR_FORMAT) as t:
    add(t, "v1.txt", link="v0.txt"); add(t, "v1.wav", wav[0])
open(os.path.join(out, "data.list"), "w").write("a.tar\n")
PY
expect_exit 0 "$BIN" measure -q --root "$WORK/t10" -o "$WORK/t10/costs.tsv" "$WORK/t10/data.list"
python3 - "$WORK/t10" <<'PY' || fail "hard links measured unlike tarfile: $(cat "$WORK/t10/costs.tsv")"
import os, sys, tarfile
d = sys.argv[1]
want = {}
with tarfile.open(os.path.join(d, "a.tar"), "r:*") as t:   # random access: links resolved
    for m in t:
        key, suffix = m.name.rsplit(".", 1)
        data = t.extractfile(m).read()
        row = want.setdefault(key, {})
        if suffix == "txt":
            row["text_len"] = str(len(data.decode().strip()))
        else:
            row["audio_bytes"] = str(len(data))
rows = [l.rstrip("\n").split("\t") for l in open(os.path.join(d, "costs.tsv")) if not l.startswith("#")]
head, rows = rows[0], rows[1:]
got = {r[0]: {"text_len": r[head.index("text_len")], "audio_bytes": r[head.index("audio_bytes")]} for r in rows}
assert got == want, (got, want)
PY
expect_exit 0 "$BIN" plan -q -k 1 --mode reshard --min-length 0 --root "$WORK/t10" -o "$WORK/t10/r" "$WORK/t10/costs.tsv"
[[ -e $WORK/t10/r/filtered.tsv ]] && fail "reshard filtered hard-link members: $(cat "$WORK/t10/r/filtered.tsv")"
python3 - "$WORK/t10" <<'PY' || fail "reshard's hard-link members"
import glob, os, sys, tarfile
d = sys.argv[1]
with tarfile.open(os.path.join(d, "a.tar"), "r:*") as t:
    want = {m.name: t.extractfile(m).read() for m in t}
got = {}
for path in glob.glob(os.path.join(d, "r", "shards_*.tar")):
    with tarfile.open(path, "r|*") as t:              # WeNet's stream mode: no links allowed
        for m in t:
            assert m.isreg(), (m.name, m.type)
            got[m.name] = t.extractfile(m).read()
assert got == want, sorted(set(got) ^ set(want)) or [k for k in got if got[k] != want[k]]
PY
printf 'dangling.tar\n' >"$WORK/t10/dangling.list"
expect_exit 2 "$BIN" measure -q --root "$WORK/t10" "$WORK/t10/dangling.list"
grep -q 'dangling.tar: member v1.txt: a hard link to v0.txt, which no member before it is named' "$WORK/err" ||
    fail "dangling hard link: $(cat "$WORK/err")"

# ---- 11. --on-error skip: what was left out goes to filtered.tsv (reason
#      unreadable) and plan.json, in every mode, not only to stderr
mkdir -p "$WORK/t11"
python3 - "$WORK/t11" "$PWD/wav/A01" <<'PY' || fail "making the shards with problems"
import io, os, sys, tarfile
out, wavs = sys.argv[1], sorted(os.listdir(sys.argv[2]))
def add(t, name, data):
    info = tarfile.TarInfo(name); info.size = len(data); t.addfile(info, io.BytesIO(data))
wav = [open(os.path.join(sys.argv[2], w), "rb").read() for w in wavs[:4]]
with tarfile.open(os.path.join(out, "a.tar"), "w", format=tarfile.USTAR_FORMAT) as t:
    add(t, "u1.txt", b"some words"); add(t, "u1.wav", wav[0])
    add(t, "u2.txt", b"no audio for this one")                 # an unreadable utterance
    add(t, "u3.txt", b"more words"); add(t, "u3.wav", wav[1])
with tarfile.open(os.path.join(out, "b.tar"), "w", format=tarfile.USTAR_FORMAT) as t:
    add(t, "v1.txt", b"words"); add(t, "v1.wav", wav[2])
open(os.path.join(out, "bad.tar"), "wb").write(b"\x28\xb5\x2f\xfd" + b"\0" * 600)  # no shard at all
open(os.path.join(out, "data.list"), "w").write("a.tar\nbad.tar\nb.tar\n")
PY
for mode in shard batch reshard; do
    expect_exit 0 "$BIN" plan -q -k 1 --mode $mode --min-length 0 --on-error skip --root "$WORK/t11" \
        -o "$WORK/t11/$mode" "$WORK/t11/data.list"
    printf 'u2\ta.tar\t1\tunreadable\n\tbad.tar\t\tunreadable\n' >"$WORK/t11/want"
    grep -q unreadable "$WORK/t11/$mode/filtered.tsv" 2>/dev/null &&
        diff <(grep unreadable "$WORK/t11/$mode/filtered.tsv") "$WORK/t11/want" >/dev/null ||
        fail "$mode: filtered.tsv: $(cat "$WORK/t11/$mode/filtered.tsv" 2>&1)"
    python3 -c 'import json, sys; m = json.load(open(sys.argv[1]))["metrics"]
assert m["unreadable"] == {"shards": 1, "utterances": 1}, m.get("unreadable")' "$WORK/t11/$mode/plan.json" ||
        fail "$mode: plan.json does not count what was left out"
done

# ---- 5. reshard refuses inputs that changed after measuring, not only by key:
#      a shard file whose size or mtime moved (recorded by measure); longer
#      audio, another text, a removed member (tar); audio_data or text of
#      another size than the table says (parquet: the table edited instead)
mkdir -p "$WORK/t5"
make5() { # variant: the shard as measured, or changed after
    python3 - "$WORK/t5/a.tar" "$PWD/wav/A01" "$1" <<'PY'
import io, os, sys, tarfile
path, wavs, variant = sys.argv[1], sorted(os.listdir(sys.argv[2])), sys.argv[3]
wav = [open(os.path.join(sys.argv[2], w), "rb").read() for w in wavs[:3]]
members = [("u1.txt", b"some words"), ("u1.wav", wav[0]), ("u2.txt", b"other words"),
           ("u2.wav", wav[1])]
if variant == "audio":
    members[3] = ("u2.wav", wav[2])          # another recording, another size
elif variant == "text":
    members[2] = ("u2.txt", b"other words, and more")
elif variant == "removed":
    del members[2]                           # u2.txt gone
with tarfile.open(path, "w", format=tarfile.USTAR_FORMAT) as t:
    for name, data in members:
        info = tarfile.TarInfo(name); info.size = len(data); t.addfile(info, io.BytesIO(data))
PY
}
make5 measured || fail "making the shard"
[[ $(stat -c %s wav/A01/$(ls wav/A01 | sed -n 2p)) != $(stat -c %s wav/A01/$(ls wav/A01 | sed -n 3p)) ]] ||
    fail "test set-up: the two recordings have one size"
printf 'a.tar\n' >"$WORK/t5/data.list"
expect_exit 0 "$BIN" measure -q --root "$WORK/t5" -o "$WORK/t5/costs.tsv" "$WORK/t5/data.list"
# the shard file itself: its size and mtime are in the table
head -2 "$WORK/t5/costs.tsv" | tail -1 | grep -q 'hash	shard_size	shard_mtime$' ||
    fail "no shard_size/shard_mtime columns: $(head -2 "$WORK/t5/costs.tsv")"
cp -p "$WORK/t5/a.tar" "$WORK/t5/a.tar.orig"
touch -d '2001-02-03 04:05:06' "$WORK/t5/a.tar"                 # the same bytes, another time
expect_exit 2 "$BIN" plan -q -k 1 --mode reshard --min-length 0 --root "$WORK/t5" -o "$WORK/t5/r" "$WORK/t5/costs.tsv"
grep -q "a.tar: modified at 981173106.000000000, [0-9]*.[0-9]* when measured: the shard changed since it was measured" "$WORK/err" ||
    fail "reshard of a touched shard: $(cat "$WORK/err")"
cp -p "$WORK/t5/a.tar.orig" "$WORK/t5/a.tar" && head -c 1024 /dev/zero >>"$WORK/t5/a.tar"   # a longer file
expect_exit 2 "$BIN" plan -q -k 1 --mode reshard --min-length 0 --root "$WORK/t5" -o "$WORK/t5/r" "$WORK/t5/costs.tsv"
grep -q "a.tar: [0-9]* bytes, [0-9]* when measured: the shard changed" "$WORK/err" ||
    fail "reshard of a longer shard: $(cat "$WORK/err")"
cp -p "$WORK/t5/a.tar.orig" "$WORK/t5/a.tar"
expect_exit 0 "$BIN" plan -q -k 1 --mode reshard --min-length 0 --root "$WORK/t5" -o "$WORK/t5/r" "$WORK/t5/costs.tsv"
rm -rf "$WORK/t5/r"
# the content, against a table without those columns (as v1 tables before them)
cut -f1-12 "$WORK/t5/costs.tsv" >"$WORK/t5/costs-v1.tsv"
for change in "audio:member u2.wav: [0-9]* bytes, [0-9]* when measured" \
              "text:member u2.txt: a text of 21 characters, 11 when measured" \
              "removed:utterance u2 has no text member, it had when measured"; do
    make5 "${change%%:*}" || fail "changing the shard"
    expect_exit 2 "$BIN" plan -q -k 1 --mode reshard --min-length 0 --root "$WORK/t5" -o "$WORK/t5/r" "$WORK/t5/costs-v1.tsv"
    grep -q "a.tar: ${change#*:}: the shard changed since it was measured" "$WORK/err" ||
        fail "reshard of a changed shard (${change%%:*}): $(cat "$WORK/err")"
    [[ -e $WORK/t5/r ]] && fail "reshard wrote an OUTDIR from a changed shard (${change%%:*})"
done
expect_exit 0 "$BIN" measure -q -o "$WORK/t5/pq.tsv" parquet/data.list
for col in audio_bytes text_len; do
    awk -F'\t' -v OFS='\t' -v col=$col 'NR == 2 { for (i = 1; i <= NF; i++) if ($i == col) c = i }
        NR == 3 { $c = $c + 1 } { print }' "$WORK/t5/pq.tsv" >"$WORK/t5/pq-$col.tsv"
    expect_exit 2 "$BIN" plan -q -k 1 --mode reshard --min-length 0 -o "$WORK/t5/pq-r" "$WORK/t5/pq-$col.tsv"
    grep -q "parquet_000000000.tar: row 0 (.*): .* when measured: the file changed since it was measured" "$WORK/err" ||
        fail "parquet reshard, $col edited: $(cat "$WORK/err")"
done

# ---- 15. input and tokenizer paths that are not UTF-8: plan.json says them ----
# as batches.jsonl does (\udcXX, Python's surrogateescape), never dropped, never
# "out of memory".
mkdir -p "$WORK/t15"
list15="$WORK/t15/$(printf 'l\xe9st\xff.list')"
cp shards/shards.list "$list15"
tok15=
for d in "$ES_SOURCE_ROOT/../shared/fixtures/tokenizers/qwen2" "$ES_SOURCE_ROOT/shared/fixtures/tokenizers/qwen2"; do
    [[ -d $d ]] && { tok15="$WORK/t15/$(printf 't\xe9k')"; ln -s "$d" "$tok15"; break; }
done
expect_exit 0 "$BIN" plan -q -k 2 ${tok15:+--tokenizer "$tok15"} -o "$WORK/t15/p" "$list15"
python3 - "$WORK/t15/p/plan.json" "$list15" "$tok15" <<'PY' || fail "plan.json paths not UTF-8: $(head -12 "$WORK/t15/p/plan.json")"
import json, os, sys
text = open(sys.argv[1], "rb").read().decode("utf-8")     # UTF-8 throughout
p = json.loads(text)
want = os.fsencode(sys.argv[2])
assert [i["path"].encode("utf-8", "surrogateescape") for i in p["inputs"]] == [want], p["inputs"]
assert "\\udce9" in text and "\\udcff" in text, text[:300]
if sys.argv[3]:
    assert p["text_tokens"]["tokenizer"]["path"].encode("utf-8", "surrogateescape") == os.fsencode(sys.argv[3])
PY

exit $((failures > 0))
