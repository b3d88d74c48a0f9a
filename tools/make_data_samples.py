#!/usr/bin/env python3
"""Build data-samples/: a small, deterministic speech corpus for the README demo.

Needs python3 (stdlib only), espeak-ng, sox/soxi and zstd on PATH.

    python3 tools/make_data_samples.py [OUTDIR]      # default: data-samples

The output is reproducible byte-for-byte for the same tool versions: espeak-ng
is deterministic for identical arguments, sox runs with -R (repeatable dither),
tar members carry fixed metadata, and zstd runs single-threaded at a fixed level.
Every path written into the lists is relative to OUTDIR.
"""

import io
import json
import os
import random
import shutil
import subprocess
import sys
import tarfile
import tempfile

# speaker id -> (espeak-ng voice, pitch 0-99, speed words/min, description)
SPEAKERS = {
    "S01": ("en-us+m3", 40, 185, "American English, male variant m3, low pitch"),
    "S02": ("en-gb+f2", 65, 200, "British English, female variant f2, high pitch, fast"),
    "S03": ("en-gb-scotland+m1", 30, 160, "Scottish English, male variant m1, slow"),
    "S04": ("cmn+f3", 55, 210, "Mandarin Chinese, female variant f3"),
}

# (key, transcript, format). Formats:
#   wav16    16 kHz mono PCM16 WAV (sox -R ... rate 16000)
#   wav22    22050 Hz mono PCM16 WAV exactly as espeak-ng writes it
#   flac16   16 kHz mono 16-bit FLAC
#   wav16b24 16 kHz mono 24-bit WAV
#   wav16st  16 kHz stereo PCM16 WAV (the mono voice copied to both channels)
# All sentences were written for this corpus.
UTTERANCES = [
    ("S01_0001", "Yes, fine.", "wav16"),
    ("S01_0002", "The kettle is on.", "wav16"),
    ("S01_0003", "Seven green buttons.", "wav22"),
    ("S01_0004", "Turn left here.", "wav16"),
    ("S01_0005", "Not yet.", "wav16"),
    ("S01_0006", "The tape was too short.", "wav16st"),
    ("S02_0001", "Good morning.", "wav16"),
    ("S02_0002", "A boat drifted past.", "wav16"),
    ("S02_0003", "Thank you.", "wav16"),
    ("S02_0004", "Her bicycle has a squeaky wheel.", "flac16"),
    ("S02_0005", "We planted onions, carrots and a row of sunflowers along the "
                 "fence, then waited three weeks for the first green shoots "
                 "and watered them every evening.", "wav16"),
    ("S02_0006", "Maybe later.", "wav16"),
    ("S03_0001", "Right then.", "wav16"),
    ("S03_0002", "Steep hill.", "wav22"),
    ("S03_0003", "Bring a warm jumper.", "wav16"),
    ("S03_0004", "Nine.", "wav16"),
    ("S03_0005", "The ferry leaves at four.", "wav16b24"),
    ("S03_0006", "If the train is late, we walk.",
     "wav16"),
    ("S04_0001", "你好。", "wav16"),
    ("S04_0002", "去公园。", "flac16"),
    ("S04_0003", "谢谢。", "wav16"),
    ("S04_0004", "请开窗。", "wav16"),
    ("S04_0005", "很好。", "wav22"),
    ("S04_0006", "明天七点在车站见，别忘了带伞。", "wav16"),
]

SHARD_SIZES = [12, 8, 4]          # deliberately uneven
SHUFFLE_SEED = 20240601           # fixed order of utterances across shards


def run(cmd):
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)


def soxi(path, flag):
    out = subprocess.run(["soxi", flag, path], check=True,
                         capture_output=True, text=True).stdout
    return int(float(out.strip()))


def synth(key, text, fmt, tmpdir, outdir):
    spk = key.split("_")[0]
    voice, pitch, speed, _ = SPEAKERS[spk]
    raw = os.path.join(tmpdir, key + ".espeak.wav")
    subprocess.run(["espeak-ng", "-v", voice, "-p", str(pitch), "-s", str(speed),
                    "-w", raw, text], check=True)
    ext = "flac" if fmt == "flac16" else "wav"
    rel = "wav/%s/%s.%s" % (spk, key, ext)
    dst = os.path.join(outdir, rel)
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    # Converted files get espeak-ng's ~0.3 s trailing silence cut to 0.1 s
    # (keeps the corpus small); the 22050 Hz files are left exactly as written.
    trim = ["reverse", "silence", "1", "0.01", "0.1%", "reverse", "pad", "0", "0.1"]
    if fmt == "wav22":
        shutil.copyfile(raw, dst)
    elif fmt in ("wav16", "flac16"):
        run(["sox", "-R", raw, "-b", "16", dst] + trim + ["gain", "-1", "rate", "16000"])
    elif fmt == "wav16b24":
        run(["sox", "-R", raw, "-b", "24", dst] + trim + ["gain", "-1", "rate", "16000"])
    elif fmt == "wav16st":
        run(["sox", "-R", raw, "-b", "16", dst] + trim +
            ["remix", "1", "1", "gain", "-1", "rate", "16000"])
    else:
        raise ValueError(fmt)
    return rel


def tar_add(tf, name, data):
    ti = tarfile.TarInfo(name)
    ti.size = len(data)
    ti.mtime = 0
    ti.mode = 0o644
    ti.uid = ti.gid = 0
    ti.uname = ti.gname = ""
    ti.type = tarfile.REGTYPE
    tf.addfile(ti, io.BytesIO(data))


def write_text(path, lines):
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for line in lines:
            f.write(line + "\n")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    default_out = os.path.join(os.path.dirname(here), "data-samples")
    outdir = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else default_out)
    assert sum(SHARD_SIZES) == len(UTTERANCES)

    # Only the generated parts are removed; README.md is rewritten below.
    os.makedirs(outdir, exist_ok=True)
    for sub in ("wav", "shards", "shards-zst", "kaldi"):
        shutil.rmtree(os.path.join(outdir, sub), ignore_errors=True)
    for f in ("raw.list", "truth.tsv"):
        if os.path.exists(os.path.join(outdir, f)):
            os.remove(os.path.join(outdir, f))

    utts = []   # dicts, in key order
    with tempfile.TemporaryDirectory() as tmpdir:
        for key, text, fmt in UTTERANCES:
            assert "\n" not in text and text == text.strip()
            rel = synth(key, text, fmt, tmpdir, outdir)
            path = os.path.join(outdir, rel)
            utts.append({
                "key": key, "spk": key.split("_")[0], "txt": text, "path": rel,
                "rate": soxi(path, "-r"), "channels": soxi(path, "-c"),
                "samples": soxi(path, "-s"),
            })
    utts.sort(key=lambda u: u["key"])

    # --- WeNet tar shards (plain and zstd) --------------------------------
    order = list(utts)
    random.Random(SHUFFLE_SEED).shuffle(order)
    shard_dir = os.path.join(outdir, "shards")
    zst_dir = os.path.join(outdir, "shards-zst")
    os.makedirs(shard_dir)
    os.makedirs(zst_dir)
    tar_list, zst_list = [], []
    pos = 0
    for i, n in enumerate(SHARD_SIZES):
        name = "shards_%09d.tar" % i
        tar_path = os.path.join(shard_dir, name)
        with tarfile.open(tar_path, "w", format=tarfile.USTAR_FORMAT) as tf:
            for u in order[pos:pos + n]:
                ext = u["path"].rsplit(".", 1)[1]
                with open(os.path.join(outdir, u["path"]), "rb") as f:
                    tar_add(tf, "%s.%s" % (u["key"], ext), f.read())
                tar_add(tf, u["key"] + ".txt", u["txt"].encode("utf-8"))
                tar_add(tf, u["key"] + ".spk", u["spk"].encode("utf-8"))
        pos += n
        run(["zstd", "-q", "-19", "--no-progress", "-T1", "-f", tar_path,
             "-o", os.path.join(zst_dir, name + ".zst")])
        tar_list.append("shards/" + name)
        zst_list.append("shards-zst/" + name + ".zst")
    write_text(os.path.join(shard_dir, "data.list"), tar_list)
    write_text(os.path.join(zst_dir, "data.list"), zst_list)

    # --- WeNet raw list ---------------------------------------------------
    write_text(os.path.join(outdir, "raw.list"),
               [json.dumps({"key": u["key"], "wav": u["path"], "txt": u["txt"]},
                           ensure_ascii=False) for u in utts])

    # --- Kaldi data dir ---------------------------------------------------
    kdir = os.path.join(outdir, "kaldi")
    os.makedirs(kdir)
    write_text(os.path.join(kdir, "wav.scp"), ["%s %s" % (u["key"], u["path"]) for u in utts])
    write_text(os.path.join(kdir, "text"), ["%s %s" % (u["key"], u["txt"]) for u in utts])
    write_text(os.path.join(kdir, "utt2spk"), ["%s %s" % (u["key"], u["spk"]) for u in utts])
    spk2utt = {}
    for u in utts:
        spk2utt.setdefault(u["spk"], []).append(u["key"])
    write_text(os.path.join(kdir, "spk2utt"),
               ["%s %s" % (s, " ".join(ks)) for s, ks in sorted(spk2utt.items())])

    # --- ground truth -----------------------------------------------------
    write_text(os.path.join(outdir, "truth.tsv"),
               ["key\tspk\tsample_rate\tchannels\tnum_samples\ttext_chars\tpath"] +
               ["%s\t%s\t%d\t%d\t%d\t%d\t%s" % (u["key"], u["spk"], u["rate"],
                                                u["channels"], u["samples"],
                                                len(u["txt"]), u["path"])
                for u in utts])

    # --- README -----------------------------------------------------------
    write_readme(outdir, utts, order)


def write_readme(outdir, utts, order):
    total_s = sum(u["samples"] / u["rate"] for u in utts)
    spk_lines = "\n".join("| %s | `%s` | %d | %d | %s |" % (s, v, p, w, d)
                          for s, (v, p, w, d) in SPEAKERS.items())
    shard_lines = []
    pos = 0
    for i, n in enumerate(SHARD_SIZES):
        part = order[pos:pos + n]
        dur = sum(u["samples"] / u["rate"] for u in part)
        shard_lines.append("| `shards/shards_%09d.tar` | %d | %.2f s |" % (i, n, dur))
        pos += n
    shard_lines = "\n".join(shard_lines)
    odd = "\n".join("- `%s`: %s" % (u["path"], desc) for u, desc in (
        (next(x for x in utts if x["key"] == k), d) for k, d in (
            ("S01_0003", "22050 Hz PCM16, exactly as espeak-ng writes it"),
            ("S03_0002", "22050 Hz PCM16, exactly as espeak-ng writes it"),
            ("S04_0005", "22050 Hz PCM16, exactly as espeak-ng writes it"),
            ("S02_0004", "FLAC, 16 kHz 16-bit"),
            ("S04_0002", "FLAC, 16 kHz 16-bit"),
            ("S03_0005", "24-bit WAV, 16 kHz (WAVE_FORMAT_EXTENSIBLE, with a `fact` chunk)"),
            ("S01_0006", "stereo PCM16, 16 kHz (same signal in both channels)"))))
    text = """# data-samples

A small, real speech corpus for the equishard README demo and for tests:
%(n)d utterances (%(total).1f s of audio) of espeak-ng synthetic speech from
4 speakers, in every input layout equishard reads. All sentences were written
for this corpus; no third-party text or audio is included.

Generated by `tools/make_data_samples.py` (python3 stdlib + espeak-ng + sox +
zstd). Regenerate from the repository root with

    python3 tools/make_data_samples.py

The output is byte-for-byte reproducible for the same espeak-ng / sox / zstd
versions (espeak-ng is deterministic, sox runs with `-R`, tar metadata is fixed:
mtime 0, uid/gid 0, empty user/group names, mode 0644, USTAR format; zstd runs
single-threaded). Files converted to 16 kHz have espeak-ng's trailing silence
cut to 0.1 s and 1 dB of headroom added; the 22050 Hz files are untouched.

**Every path inside the lists is relative to `data-samples/`.** Run commands
from this folder, or pass `--root data-samples` from the repository root.

## Speakers

| id | espeak-ng voice | pitch | speed (wpm) | notes |
|----|-----------------|-------|-------------|-------|
%(spk)s

## Layout

| path | what |
|------|------|
| `wav/<spk>/<key>.wav` / `.flac` | the audio; mostly 16 kHz mono PCM16 |
| `shards/shards_00000000{0,1,2}.tar` | WeNet tar shards; per key: `key.wav` (or `key.flac`), `key.txt` (UTF-8, no trailing newline), `key.spk` |
| `shards/data.list` | the shard paths, one per line (`shards/shards_000000000.tar`, ...) |
| `shards-zst/*.tar.zst`, `shards-zst/data.list` | the same shards compressed with `zstd -19` |
| `raw.list` | WeNet raw list: JSON lines `{"key", "wav", "txt"}` (UTF-8, not ASCII-escaped) |
| `kaldi/{wav.scp,text,utt2spk,spk2utt}` | Kaldi data dir, sorted by key |
| `truth.tsv` | ground truth per utterance: key, spk, sample_rate, channels, num_samples (per channel, from `soxi`), text_chars (Unicode code points), path |

The shards are deliberately uneven; utterances are assigned in a fixed
shuffled order:

| shard | utterances | audio |
|-------|-----------:|------:|
%(shards)s

Files that are not 16 kHz mono PCM16 WAV (to exercise the readers):

%(odd)s
""" % {"n": len(utts), "total": total_s, "spk": spk_lines, "shards": shard_lines,
       "odd": odd}
    with open(os.path.join(outdir, "README.md"), "w", encoding="utf-8", newline="\n") as f:
        f.write(text)


if __name__ == "__main__":
    main()
