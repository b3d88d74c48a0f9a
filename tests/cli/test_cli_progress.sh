#!/usr/bin/env bash
# The progress line and the summary line (tools/equishard/cli_progress.c):
# on a terminal (a pty made by python's pty module) the line is painted with its
# unit, percent and rate, then cleared; on a pipe only the summary comes, and
# with --quiet nothing; a SIGINT's message starts a line of its own. The
# summary's counts are checked against python's tarfile, os.stat, the wave
# module and the FLAC STREAMINFO header, never against equishard; plan's
# build and write lines against python reading the table and the rank files;
# validate's against os.stat and python reading the .npy header and the pickle.
BIN=$1
. "$(dirname "$0")/lib.sh"
cd "$ES_SOURCE_ROOT/data-samples" || exit 1

# run_pty OUT CMD...: CMD on a new pty (stdin, stdout, stderr); everything it
# printed into OUT; exit status as the shell gives it. SIGINT after
# $PTY_SIGINT_AFTER seconds when set.
run_pty() {
    local out=$1; shift
    python3 - "$out" "$@" <<'PY'
import os, pty, signal, sys, time
out, argv = sys.argv[1], sys.argv[2:]
pid, fd = pty.fork()
if pid == 0:
    os.execv(argv[0], argv)
after = os.environ.get("PTY_SIGINT_AFTER")
if after:
    time.sleep(float(after))
    os.kill(pid, signal.SIGINT)
data = b""
while True:
    try:
        chunk = os.read(fd, 65536)
    except OSError:
        break
    if not chunk:
        break
    data += chunk
_, status = os.waitpid(pid, 0)
open(out, "wb").write(data)
sys.exit(os.waitstatus_to_exitcode(status) & 0xff)
PY
}

# The expected summary from independent readers (samples_truth.py): rows,
# shards, audio seconds from the headers, bytes (tar members' sizes, or
# os.stat of a raw list's files).
expect_summary() { # shards|raw OUTPUT
    python3 - "$1" "$2" <<'PY'
import os, sys
sys.path.insert(0, os.environ["ES_SOURCE_ROOT"] + "/tests/cli")
from samples_truth import raw_rows, shard_rows
kind, output = sys.argv[1], sys.argv[2]
rows = shard_rows() if kind == "shards" else raw_rows()
nbytes = sum(r["bytes"] for r in rows)
secs = sum(r["samples"] / r["rate"] for r in rows)
shards = len({r["shard"] for r in rows})
rows = len(rows)

def group(n):
    return f"{n:,}".replace(",", " ")

def size(b):
    if b < 1000:
        return f"{b} B"
    v, units = b / 1000, ["kB", "MB", "GB", "TB", "PB"]
    u = 0
    while v >= 999.95 and u + 1 < len(units):
        v, u = v / 1000, u + 1
    return f"{v:.1f} {units[u]}"

audio = f"{secs / 3600:.1f} h" if secs >= 3600 else f"{secs:.1f} s"
print(f"equishard measure: measured {group(rows)} utterance{'s' * (rows != 1)} in "
      f"{group(shards)} shard{'s' * (shards != 1)} ({audio} of audio, {size(nbytes)}) "
      f"in TIME s -> {output}")
PY
}

# the summary with its time replaced by TIME
summary_of() { sed -E 's/ in [0-9]+\.[0-9] s( -> |$)/ in TIME s\1/' "$1"; }

# ---- 1. a pipe: the summary alone, exact
want=$(expect_summary shards "$WORK/c.tsv")
expect_exit 0 "$BIN" measure -j 1 -o "$WORK/c.tsv" shards/data.list
[[ $(summary_of "$WORK/err") == "$want" ]] || fail "pipe: stderr is '$(cat "$WORK/err")', want '$want'"
want=$(expect_summary raw "standard output")
expect_exit 0 "$BIN" measure raw.list
[[ $(summary_of "$WORK/err") == "$want" ]] || fail "raw list: stderr is '$(cat "$WORK/err")', want '$want'"
grep -q $'\r' "$WORK/err" && fail "a pipe got a progress line"

# ---- 2. --quiet: nothing at all
expect_exit 0 "$BIN" measure -q -o "$WORK/c.tsv" shards/data.list
[[ -s $WORK/err ]] && fail "--quiet printed: $(cat "$WORK/err")"

# ---- 3. a terminal: the line with unit, percent and rate, cleared, then the summary
run_pty "$WORK/tty" "$BIN" measure -j 1 -o "$WORK/c.tsv" shards/data.list || fail "pty run: exit $?"
python3 - "$WORK/tty" "$(expect_summary shards "$WORK/c.tsv")" <<'PY' || fail "terminal output: $(cat -v "$WORK/tty")"
import re, sys
out = open(sys.argv[1], "rb").read().decode()
want = sys.argv[2]
# the first callback paints (1 of 3), the last always does (3 of 3)
assert re.search(r"\rmeasure: 1 / 3 shards   33%  [0-9 ]+ shards/s  ETA \d+:\d\d\x1b\[K", out), out
assert re.search(r"\rmeasure: 3 / 3 shards  100%  [0-9 ]+ shards/s\x1b\[K", out), out
# cleared before the summary, which is the line a pipe gets
tail = out.split("\r\x1b[K")[-1]
assert re.sub(r" in \d+\.\d s -> ", " in TIME s -> ", tail).rstrip("\r\n") == want, tail
PY
run_pty "$WORK/tty" "$BIN" measure -q -j 1 -o "$WORK/c.tsv" shards/data.list || fail "pty -q: exit $?"
[[ -s $WORK/tty ]] && fail "--quiet on a terminal printed: $(cat -v "$WORK/tty")"

# ---- 4. Ctrl-C while the line is up: the line is cleared, the message on its own line
for _ in $(seq 100000); do echo "$PWD/shards/shards_000000000.tar"; done >"$WORK/long.list"
PTY_SIGINT_AFTER=0.5 run_pty "$WORK/tty" "$BIN" measure -j 1 -o "$WORK/long.tsv" "$WORK/long.list"
python3 - "$WORK/tty" <<'PY' || fail "SIGINT output: $(cat -v "$WORK/tty" | tail -c 300)"
import sys
out = open(sys.argv[1], "rb").read().decode()
assert "\rmeasure: " in out, "no progress line before the signal"
assert "\r\x1b[Kequishard measure: interrupted; temporary outputs removed" in out, out[-300:]
PY
compgen -G "$WORK/long.tsv*" >/dev/null && fail "SIGINT left $(compgen -G "$WORK/long.tsv*")"

# ---- 5. plan measuring a list says what it measured too (no arrow: not its output)
expect_exit 0 "$BIN" plan -k 2 -o "$WORK/p" shards/data.list
want=$(expect_summary shards x | sed -e 's/ -> x$//' -e 's/^equishard measure:/equishard plan:/')
grep -qxF "$want" <(summary_of "$WORK/err") || fail "plan: no summary '$want' in $(cat "$WORK/err")"
expect_exit 0 "$BIN" plan -q -k 2 -o "$WORK/p" shards/data.list
[[ -s $WORK/err ]] && fail "plan -q printed: $(cat "$WORK/err")"

# validate and describe measuring lists say so too; -q drops it
for cmd in validate describe; do
    "$BIN" $cmd shards/data.list >/dev/null 2>"$WORK/err"
    want=$(expect_summary shards x | sed -e 's/ -> x$//' -e "s/^equishard measure:/equishard $cmd:/")
    grep -qxF "$want" <(summary_of "$WORK/err") || fail "$cmd: no summary '$want' in $(cat "$WORK/err")"
    "$BIN" $cmd -q shards/data.list >/dev/null 2>"$WORK/err"
    grep -q measured "$WORK/err" && fail "$cmd -q: $(cat "$WORK/err")"
done

# ---- 6. plan --mode reshard: the copy's own line on a terminal, one step per
#      source read and per new shard written and read back (one pass here: the
#      3 tar sources, then the new shards OUTDIR/data.list names)
run_pty "$WORK/tty" "$BIN" plan --mode reshard -k 2 -o "$WORK/rs" shards/data.list \
    || fail "reshard on a pty: exit $?"
n=$(( $(wc -l <shards/data.list) + $(wc -l <"$WORK/rs/data.list") ))
grep -qa $'\rreshard: 1 / '"$n"' shards ' "$WORK/tty" || fail "reshard: no first step of $n: $(cat -v "$WORK/tty")"
grep -qa $'\rreshard: '"$n / $n"' shards  100%' "$WORK/tty" || fail "reshard: no last step: $(cat -v "$WORK/tty")"
# parquet, written column by column: a step per column and source, then per file
run_pty "$WORK/tty" "$BIN" plan --mode reshard -k 2 -o "$WORK/rp" parquet/data.list \
    || fail "parquet reshard on a pty: exit $?"
python3 - "$WORK/tty" "$(wc -l <"$WORK/rp/data.list")" <<'PY' || fail "parquet reshard: $(cat -v "$WORK/tty")"
import re, sys
out, new = open(sys.argv[1], "rb").read().decode(), int(sys.argv[2])
steps = [(int(d.replace(" ", "")), int(t.replace(" ", "")))
         for d, t in re.findall(r"\rreshard: ([\d ]+?) / ([\d ]+?) shards", out)]
total = steps[-1][1]
# 2 sources: total = columns x 2 + new files
assert steps[-1] == (total, total) and (total - new) % 2 == 0 and total - new >= 2 * 3, steps
assert [d for d, _ in steps] == sorted(d for d, _ in steps), steps
PY
# a pipe gets none of it
expect_exit 0 "$BIN" plan -q --mode reshard -k 2 -o "$WORK/rs" shards/data.list
[[ -s $WORK/err ]] && fail "reshard -q on a pipe printed: $(cat "$WORK/err")"

# ---- 7. plan --mode batch on a generated table: the table's line in bytes
#      (its size from os.stat), the build's in row passes (4 × the table's
#      rows), then the rank files' line in rows, each
#      rising to its total and cleared; the stdout summary's counts; -q and a
#      pipe get no line. Expected numbers from python reading the table and the
#      rank files, never from equishard.
python3 - "$WORK/big.tsv" <<'PY'
import random, sys
rnd = random.Random(5)
with open(sys.argv[1], "w") as f:
    f.write("#equishard-costs v1\nkey\tshard\tpos\tsample_rate\tchannels\tsamples\t"
            "audio_bytes\ttext_len\tspeech_tokens\tspk\tflags\thash\n")
    for i in range(400000):
        samples = rnd.randrange(16000 * 2, 16000 * 14)
        f.write(f"u{i:07d}\tshards/s{i // 1000:05d}.tar\t{i % 1000}\t16000\t1\t{samples}\t"
                f"{2 * samples}\t20\t0\tspk{i // 50}\taudio,text\t-\n")
PY
run_pty "$WORK/tty" "$BIN" plan --mode batch -k 4 -o "$WORK/pb" "$WORK/big.tsv" \
    || fail "batch plan on a pty: exit $?"
python3 - "$WORK/tty" "$WORK/big.tsv" "$WORK/pb" <<'PY' || fail "batch plan: $(cat -v "$WORK/tty" | head -c 2000)"
import glob, json, os, re, sys
out = open(sys.argv[1], "rb").read().decode()
rows = sum(1 for l in open(sys.argv[2]) if l.strip() and not l.startswith(("#", "key\t")))
batch_rows, keys = 0, set()
for path in glob.glob(sys.argv[3] + "/rank-*.batches.jsonl"):
    for line in open(path):
        b = json.loads(line)
        batch_rows += len(b["keys"])
        keys.update(b["keys"])
def steps(what, unit):
    return [(int(d.replace(" ", "")), int(t.replace(" ", "")))
            for d, t in re.findall(r"\r" + what + r": ([\d ]+?) / ([\d ]+?) " + unit + r" ", out)]
for what, unit, total in (("read", "bytes", os.stat(sys.argv[2]).st_size),
                          ("plan", "row passes", 4 * rows), ("write", "rows", batch_rows)):
    s = steps(what, unit)
    # painted at least twice (the first call, the last), rising, one total, ending at it
    assert len(s) >= 2 and {t for _, t in s} == {total} and s[-1][0] == total, (what, s, total)
    assert [d for d, _ in s] == sorted(d for d, _ in s), (what, s)
    assert re.search("\r" + what + ": [^\r]*\x1b\\[K\r\x1b\\[K", out), what + ": not cleared"
# the table's line first, the build's, then the write's
assert out.index("\rread: ") < out.index("\rplan: ") < out.index("\rwrite: "), out[:300]
text = out.split("\r\x1b[K")[-1].replace("\r\n", "\n")
assert text.startswith(f"batch mode: 4 ranks x 1 workers, {len(keys)} utterances planned, "
                       f"{rows - len(keys)} filtered\n"), text[:200]
assert text.rstrip("\n").endswith("wrote " + sys.argv[3]), text[-200:]
PY
run_pty "$WORK/tty" "$BIN" plan -q --mode batch -k 4 -o "$WORK/pb" "$WORK/big.tsv" \
    || fail "batch plan -q on a pty: exit $?"
grep -qa $'\r[a-z]*:' "$WORK/tty" && fail "plan -q on a terminal painted a line: $(cat -v "$WORK/tty" | head -c 300)"
"$BIN" plan --mode batch -k 4 -o "$WORK/pb" "$WORK/big.tsv" >"$WORK/out" 2>"$WORK/err" \
    || fail "batch plan on a pipe: exit $?"
[[ -s $WORK/err ]] && fail "batch plan on a pipe printed on stderr: $(cat -v "$WORK/err" | head -c 300)"

# ---- 8. validate: the sources' line in bytes (the files' sizes from os.stat),
#      rising to its total and cleared, then the summary, whose counts and
#      dimension are python's reading of the .npy header and of the pickle; a
#      pipe gets the summary alone, -q nothing.
python3 - "$WORK/emb.npy" "$WORK/utt2spk" "$WORK/emb.pkl" <<'PY'
import array, pickle, random, struct, sys
n, d = 40000, 192
rnd = random.Random(9)
base = array.array("f", [rnd.uniform(0.5, 1.0) for _ in range(d)])
hdr = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }" % (n, d)
hdr += " " * ((64 - (10 + len(hdr) + 1) % 64) % 64) + "\n"
with open(sys.argv[1], "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode())
    for i in range(n):
        row = array.array("f", base)
        row[i % d] += (i // d + 1) * 1e-3  # every row its own, all of one norm
        f.write(row.tobytes())
with open(sys.argv[2], "w") as f:
    f.writelines(f"u{i:06d} spk{i // 100}\n" for i in range(n))
vals = base.tolist()
with open(sys.argv[3], "wb") as f:  # a plain pickle: CosyVoice's dict of str -> list
    pickle.dump({f"u{i:06d}": vals[:i % d] + [vals[i % d] + i * 1e-3] + vals[i % d + 1:]
                 for i in range(12000)}, f, protocol=4)
PY
# expect_validate FILE... : the summary python expects for the embeddings in
# the first FILE (.npy or pickle), with TIME for the time
expect_validate() {
    python3 - "$@" <<'PY'
import ast, pickle, sys
path = sys.argv[1]
head = open(path, "rb").read(10)
if head[:6] == b"\x93NUMPY":
    n = int.from_bytes(head[8:10], "little")
    rows, dim = ast.literal_eval(open(path, "rb").read(10 + n)[10:].decode())["shape"]
else:
    d = pickle.load(open(path, "rb"))
    rows, dim = len(d), len(next(iter(d.values())))
print(f"equishard validate: validated {rows:,} utterance and 0 speaker embeddings "
      f"(dim {dim}) in TIME s -> {sys.argv[2]}".replace(",", " "))
PY
}
check_validate_tty() { # TTY_OUTPUT SUMMARY FILES...
    python3 - "$@" <<'PY'
import os, re, sys
out, want, files = open(sys.argv[1], "rb").read().decode(), sys.argv[2], sys.argv[3:]
total = sum(os.stat(f).st_size for f in files)
s = [(int(d.replace(" ", "")), int(t.replace(" ", "")))
     for d, t in re.findall(r"\rvalidate: ([\d ]+?) / ([\d ]+?) bytes ", out)]
assert len(s) >= 2 and {t for _, t in s} == {total} and s[-1][0] == total, (s, total)
assert [d for d, _ in s] == sorted(d for d, _ in s), s
tail = out.split("\r\x1b[K")[-1]
first = re.sub(r" in \d+\.\d s -> ", " in TIME s -> ", tail.split("\r\n")[0])
assert first == want, (first, want)
PY
}
run_pty "$WORK/tty" "$BIN" validate --utt-emb "$WORK/emb.npy" --utt-keys "$WORK/utt2spk" \
    --utt2spk "$WORK/utt2spk" --json "$WORK/v.json" || fail "validate .npy on a pty: exit $?"
check_validate_tty "$WORK/tty" "$(expect_validate "$WORK/emb.npy" "$WORK/v.json")" \
    "$WORK/emb.npy" "$WORK/utt2spk" "$WORK/utt2spk" || fail "validate .npy: $(cat -v "$WORK/tty" | head -c 1500)"
run_pty "$WORK/tty" "$BIN" validate --utt-emb "$WORK/emb.pkl" --json "$WORK/v.json" \
    || fail "validate pickle on a pty: exit $?"
check_validate_tty "$WORK/tty" "$(expect_validate "$WORK/emb.pkl" "$WORK/v.json")" \
    "$WORK/emb.pkl" || fail "validate pickle: $(cat -v "$WORK/tty" | head -c 1500)"
expect_exit 0 "$BIN" validate --utt-emb "$WORK/emb.pkl" --json "$WORK/v.json"
want=$(expect_validate "$WORK/emb.pkl" "$WORK/v.json")
[[ $(summary_of "$WORK/err") == "$want" ]] || fail "validate on a pipe: stderr is '$(cat -v "$WORK/err")', want '$want'"
want=$(expect_validate "$WORK/emb.pkl" x | sed 's/ -> x$//')
expect_exit 0 "$BIN" validate --utt-emb "$WORK/emb.pkl"
[[ $(summary_of "$WORK/err") == "$want" ]] || fail "validate without --json: '$(cat -v "$WORK/err")', want '$want'"
run_pty "$WORK/tty" "$BIN" validate -q --utt-emb "$WORK/emb.pkl" --json "$WORK/v.json" \
    || fail "validate -q on a pty: exit $?"
grep -qa -e $'\rvalidate:' -e 'equishard validate:' "$WORK/tty" && fail "validate -q printed: $(cat -v "$WORK/tty" | head -c 300)"

[[ $failures == 0 ]] && echo "ok" || exit 1
