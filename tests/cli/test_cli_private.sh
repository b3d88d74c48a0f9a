#!/usr/bin/env bash
# Files equishard keeps for itself in folders other users can write: the
# tokenizer cache and the step log (docs/RELIABILITY.md, "own files in shared
# folders"). Two users, made with setpriv: an attacker (uid 64002) plants links,
# FIFOs, hard links and forged caches where a victim (root, or uid 64001) will
# look. Needs root, setpriv, xxhsum and ../shared/fixtures/tokenizers: SKIP (77)
# otherwise.
set -u
BIN=$1
TOK=$ES_SOURCE_ROOT/../shared/fixtures/tokenizers/qwen2
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
[[ $(id -u) == 0 ]] || { echo "SKIP: needs root to act as two users"; exit 77; }
command -v setpriv >/dev/null && command -v xxhsum >/dev/null || { echo "SKIP: no setpriv/xxhsum"; exit 77; }
[[ -f $TOK/vocab.json ]] || { echo "SKIP: $TOK absent"; exit 77; }
VICTIM=64001 ATTACKER=64002
as() { local uid=$1; shift; setpriv --reuid="$uid" --regid="$uid" --clear-groups "$@"; }
# the users must reach the binary, its library and the tokenizer
as $VICTIM test -x "$BIN" -a -r "$TOK/vocab.json" || { echo "SKIP: $BIN not reachable by another user"; exit 77; }
chmod 755 "$WORK" # the other users reach their folders through it
D=$WORK/shared
mkdir -m 755 "$D"

# The ids without any cache: what every run below must print.
echo "hi there" | EQUISHARD_CACHE_DIR=off "$BIN" tokenize -t "$TOK" >"$WORK/want" || fail "no-cache run"
# The cache's file name for this tokenizer, and a valid cache, from a private run.
mkdir -m 700 "$WORK/scratch"
echo "hi there" | EQUISHARD_CACHE_DIR="$WORK/scratch" "$BIN" tokenize -t "$TOK" >/dev/null
NAME=$(cd "$WORK/scratch" && ls tokenizer-*.bin)
[[ -n $NAME ]] || { fail "no cache file written into a private folder"; exit 1; }

# forged CACHE OUT: a valid cache with the byte ids of 'h' and ' ' swapped and
# re-sealed (its checksum made right again): what another user can write.
forge() {
    python3 - "$1" "$2" <<'PY'
import struct, subprocess, sys
data = bytearray(open(sys.argv[1], 'rb').read())
at = 40                                   # the header: magic, 4 words, body length and hash
n = struct.unpack_from('<Q', data, at)[0]
at += 8 + n * 64 + 16                     # the files' stats, the specials' and model digests
at += 8 + struct.unpack_from('<Q', data, at)[0]  # the files string
ids = list(struct.unpack_from('<256I', data, at))
ids[ord('h')], ids[ord(' ')] = ids[ord(' ')], ids[ord('h')]
struct.pack_into('<256I', data, at, *ids)
open(sys.argv[2] + '.body', 'wb').write(data[40:])
h = subprocess.run(['xxhsum', '-H3', sys.argv[2] + '.body'], capture_output=True, text=True, check=True)
struct.pack_into('<Q', data, 32, int(h.stdout.split()[-1], 16))
open(sys.argv[2], 'wb').write(data)
PY
}
forge "$WORK/scratch/$NAME" "$WORK/forged"
chmod 644 "$WORK/forged"
# the forged file really gives other ids when trusted (else the tests below prove nothing)
mkdir -m 700 "$WORK/trusted" && cp "$WORK/forged" "$WORK/trusted/$NAME"
echo "hi there" | EQUISHARD_CACHE_DIR="$WORK/trusted" "$BIN" tokenize -t "$TOK" >"$WORK/forged-ids"
cmp -s "$WORK/forged-ids" "$WORK/want" && fail "the forged cache gives the right ids: the test cannot tell"

tokenize_as() { # uid cache-dir: tokenizes "hi there", fails unless the ids are HF's
    echo "hi there" | EQUISHARD_CACHE_DIR=$2 timeout 20 setpriv --reuid="$1" --regid="$1" \
        --clear-groups "$BIN" tokenize -t "$TOK" >"$WORK/got" 2>"$WORK/err"
    local rc=$?
    [[ $rc == 0 ]] || fail "uid $1, cache $2: exit $rc ($(head -c 200 "$WORK/err"))"
    cmp -s "$WORK/got" "$WORK/want" || fail "uid $1, cache $2: ids $(cat "$WORK/got"), want $(cat "$WORK/want")"
}

# 1. root's sticky /tmp-like folder; the attacker links the cache's name to a
#    file of root's: the run replaces the link, never the file behind it.
S=$D/sticky && mkdir -m 1777 "$S"
echo precious >"$D/precious" && chmod 644 "$D/precious"
as $ATTACKER ln -s "$D/precious" "$S/$NAME"
tokenize_as 0 "$S"
[[ $(cat "$D/precious") == precious ]] || fail "1: the link's target was replaced"
[[ -f $S/$NAME && ! -L $S/$NAME && $(stat -c %u "$S/$NAME") == 0 ]] ||
    fail "1: the cache is not root's own file: $(ls -l "$S/$NAME")"

# 4. a FIFO at the name: no load waits on it, and the store replaces it.
rm -f "$S/$NAME" && as $ATTACKER mkfifo -m 666 "$S/$NAME"
tokenize_as 0 "$S"
[[ -f $S/$NAME && ! -p $S/$NAME ]] || fail "4: the FIFO is still there"

# 2. a forged cache in the victim's own sticky folder, written by the attacker
#    (the name was free): not read; the victim's run puts its own in its place.
V=$D/victim-sticky && mkdir -m 1777 "$V" && chown $VICTIM "$V"
as $ATTACKER cp "$WORK/forged" "$V/$NAME"
tokenize_as $VICTIM "$V"
[[ $(stat -c %u "$V/$NAME") == "$VICTIM" ]] || fail "2: the attacker's file was kept"

# 2/3. a folder of the attacker's holding a forged cache: neither read nor written,
#    by the victim or by root (a cache file can be mapped only when it is the
#    user's own, so nobody else can truncate it under a run).
A=$D/attacker && mkdir -m 755 "$A" && chown $ATTACKER "$A"
as $ATTACKER cp "$WORK/forged" "$A/$NAME"
tokenize_as $VICTIM "$A"
tokenize_as 0 "$A"
[[ $(ls "$A") == "$NAME" && $(stat -c %u "$A/$NAME") == "$ATTACKER" ]] || fail "2: root wrote into another user's folder: $(ls -l "$A")"

# a folder of the victim's that others can write (not sticky): not used at all.
W=$D/victim-open && mkdir "$W" && chmod 777 "$W" && chown $VICTIM "$W"
as $ATTACKER cp "$WORK/forged" "$W/$NAME"
tokenize_as $VICTIM "$W"
[[ $(ls "$W") == "$NAME" && $(stat -c %u "$W/$NAME") == "$ATTACKER" ]] || fail "open folder was written"
rm -f "$W/$NAME"
tokenize_as $VICTIM "$W"
[[ -z $(ls "$W") ]] || fail "a folder others can write got a cache: $(ls "$W")"

# a private folder that does not exist yet is made 0700.
tokenize_as 0 "$D/new/cache"
[[ $(stat -c %a "$D/new/cache") == 700 && -f $D/new/cache/$NAME ]] || fail "new folder: $(stat -c %a "$D/new/cache")"

# 5. the step log: a link, a FIFO, a hard link or the attacker's file at the
#    log's name, and an attacker's folder, are refused before the first step;
#    the file behind them is untouched and nothing waits.
step_log() { # uid dir: appends one step as rank 0
    timeout 20 setpriv --reuid="$1" --regid="$1" --clear-groups env PYTHONPATH="$ES_SOURCE_ROOT/python" \
        python3 -c '
import sys
from equishard.loaders import step_log
for _ in step_log([{"keys": ["u1"]}], sys.argv[1]):
    pass
' "$2" >"$WORK/out" 2>"$WORK/err"
}
LOG=steps-rank-00000.jsonl
L=$D/steps && mkdir -m 1777 "$L"
as $ATTACKER ln -s "$D/precious" "$L/$LOG"
step_log 0 "$L"; rc=$?
[[ $rc == 1 ]] && grep -q "StepLogError: $L/$LOG: is a symbolic link" "$WORK/err" || fail "5 link: exit $rc: $(tail -1 "$WORK/err")"
[[ $(cat "$D/precious") == precious ]] || fail "5: the step log wrote through a link"
rm "$L/$LOG" && as $ATTACKER mkfifo -m 666 "$L/$LOG"
step_log 0 "$L"; rc=$?
[[ $rc == 1 ]] && grep -q "$LOG: is a FIFO" "$WORK/err" || fail "5 fifo: exit $rc: $(tail -1 "$WORK/err")"
rm "$L/$LOG" && as $ATTACKER touch "$L/$LOG"
step_log 0 "$L"; rc=$?
[[ $rc == 1 ]] && grep -q "$LOG: belongs to another user" "$WORK/err" || fail "5 foreign: exit $rc: $(tail -1 "$WORK/err")"
rm "$L/$LOG" && ln "$D/precious" "$L/$LOG"
step_log 0 "$L"; rc=$?
[[ $rc == 1 ]] && grep -q "$LOG: has another name too" "$WORK/err" || fail "5 hard link: exit $rc: $(tail -1 "$WORK/err")"
[[ $(cat "$D/precious") == precious ]] || fail "5: the step log wrote through a hard link"
step_log $VICTIM "$A"; rc=$?
[[ $rc == 1 ]] && grep -q "folder is another user's" "$WORK/err" || fail "5 folder: exit $rc: $(tail -1 "$WORK/err")"
# and the user's own folder takes the log, one line per step
rm "$L/$LOG"
step_log 0 "$L" || fail "5: own log: $(tail -1 "$WORK/err")"
[[ $(wc -l <"$L/$LOG") == 1 && $(stat -c %u "$L/$LOG") == 0 ]] || fail "5: own log not written"

((failures == 0)) || exit 1
echo "all private-file checks passed"
