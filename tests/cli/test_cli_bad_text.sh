#!/usr/bin/env bash
# CLI tests for transcripts that are not UTF-8 (flag bad_text): WeNet's
# tar reader skips such an utterance (txt.decode('utf8') raises; valid=False),
# so measure flags it bad_text (text_len 0, no text_tokens) instead of counting
# its bytes, and every filter drops it under its own reason: plan.json,
# reshard's filtered.tsv, simulate, validate's filtered check. A parquet text
# value the same. A raw list line or a Kaldi text line that is not UTF-8 is no
# dropped utterance: WeNet reads the list, CosyVoice's data prep the text file,
# as UTF-8 and fails, so measure says so, exit 2.
set -u
BIN=$1
A=$ES_FIXTURES/corpus_a
TOK=$ES_SOURCE_ROOT/../shared/fixtures/tokenizers
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$WORK" || exit 1
cp "$A/wav/A01/A01_0001.wav" a.wav

# a tar shard: u1 "Yes.", u2's .txt is Latin-1 (b"caf\xe9"), u3 "Yes." (2 ids in truth.jsonl; not the last
# member: WeNet yields the last utterance of a shard without checking valid)
python3 - <<'PY'
import io, tarfile
wav = open('a.wav', 'rb').read()
with tarfile.open('s.tar', 'w', format=tarfile.USTAR_FORMAT) as t:
    for key, txt in (('u1', b'Yes.'), ('u2', b'caf\xe9'), ('u3', b'Yes.')):
        for name, data in ((key + '.txt', txt), (key + '.wav', wav)):
            ti = tarfile.TarInfo(name)
            ti.size, ti.mtime = len(data), 0
            t.addfile(ti, io.BytesIO(data))
PY

# 1. measure: the flag, text_len 0 (not 4 bytes-as-characters)
expect_exit 0 "$BIN" measure -o c.tsv s.tar
cut -f1,8,11 c.tsv | tail -3 >got
printf 'u1\t4\taudio,text\nu2\t0\taudio,text,bad_text\nu3\t4\taudio,text\n' >want
cmp -s got want || fail "measure: $(cat got)"
if [[ -d $TOK/qwen2 ]]; then
    expect_exit 0 "$BIN" measure --tokenizer "$TOK/qwen2" -o ct.tsv s.tar
    [[ $(awk -F'\t' 'NR > 3 { print $1 "=" $NF }' ct.tsv | tr '\n' ' ') == "u1=2 u2=- u3=2 " ]] \
        || fail "text_tokens: $(awk -F'\t' 'NR > 3 { print $1 "=" $NF }' ct.tsv)"
fi

# 2. plan (shard and reshard), simulate, validate: dropped as bad_text, the others kept
expect_exit 0 "$BIN" plan -k 1 --min-length 0 -o planned c.tsv
python3 -c "
import json, sys
m = json.load(open('planned/plan.json'))['metrics']
assert m['filtered']['bad_text'] == 1 and sum(m['filtered'].values()) == 1, m['filtered']
assert m['kept'] == 2, m['kept']
" || fail "plan.json: $(head -c 400 planned/plan.json)"
expect_exit 0 "$BIN" plan -k 1 --mode reshard --min-length 0 -o re c.tsv
printf 'key\tshard\tpos\treason\nu2\ts.tar\t1\tbad_text\n' >want
cmp -s re/filtered.tsv want || fail "filtered.tsv: $(cat re/filtered.tsv)"
expect_exit 0 "$BIN" simulate --loader wenet -k 1 --no-plan c.tsv
grep -q "3 utterances, 2 kept .*filtered: bad_text 1$" out || fail "simulate: $(sed -n 2p out)"
expect_exit 0 "$BIN" validate --loader wenet --costs c.tsv --json v.json
grep -q "^filtered  *1   u2 (bad_text)$" out || fail "validate: $(grep filtered out)"
python3 -c "
import json
s = json.load(open('v.json'))['summary']['filtered']
assert s['bad_text'] == 1 and sum(s.values()) == 1, s
" || fail "validate json"

# 3. a Kaldi text line that is not UTF-8: no dropped utterance either, the data
# prep (make_parquet_list.py: open(text)) fails on it; one line, exit 2
mkdir kaldi
printf 'k1 %s/a.wav\nk2 %s/a.wav\n' "$WORK" "$WORK" >kaldi/wav.scp
printf 'k1 hello\nk2 caf\xe9\n' >kaldi/text
printf 'k1 s\nk2 s\n' >kaldi/utt2spk
expect_exit 2 "$BIN" measure -o k.tsv kaldi
[[ $(cat err) == "equishard measure: kaldi: entry 1 (k2): transcript in text is not valid UTF-8 (CosyVoice's make_parquet_list.py reads the file as UTF-8 and fails: UnicodeDecodeError)" ]] \
    || fail "kaldi: $(cat err)"

# 4. parquet: corpus A's first shard with 'Yes.' (A01_0001's text, stored as a raw
# snappy literal) made b'Y\xffs.', which pyarrow refuses as a string: that row
# only is bad_text, the other 15 are as before
python3 - "$A/parquet/parquet_000000000.tar" <<'PY'
import sys
d = bytearray(open(sys.argv[1], 'rb').read())
at = d.find(b'Yes.')
assert at > 0
d[at + 1] = 0xFF
open('bad.parquet', 'wb').write(d)
PY
expect_exit 0 "$BIN" measure -o pq.tsv bad.parquet
expect_exit 0 "$BIN" measure -o pq_good.tsv "$A/parquet/parquet_000000000.tar"
[[ $(awk -F'\t' 'NR > 2 && $11 ~ /bad_text/ { print $1 "=" $8 }' pq.tsv) == "A01_0001=0" ]] \
    || fail "parquet bad_text: $(cut -f1,8,11 pq.tsv | head -4)"
[[ $(cut -f1,8 pq.tsv | tail -15) == "$(cut -f1,8 pq_good.tsv | tail -15)" && $(wc -l <pq.tsv) == 18 ]] \
    || fail "parquet: other rows changed"

# 5. a raw list line that is not UTF-8: one line naming file, line and byte; exit 2
printf '{"key": "r1", "wav": "a.wav", "txt": "ok"}\n{"key": "r2", "wav": "a.wav", "txt": "caf\xe9"}\n' >raw.list
expect_exit 2 "$BIN" measure -o r.tsv raw.list
[[ $(cat err) == "equishard measure: raw.list: line 2 (): byte 41: not valid UTF-8 (WeNet's loader fails reading this list with UnicodeDecodeError)" ]] \
    || fail "raw list: $(cat err)"
[[ ! -e r.tsv ]] || fail "raw list: a table was written"

exit $((failures > 0))
