#!/usr/bin/env python3
"""Generate WeNet-style tar shards of synthetic speech-sized WAV members.

    gen_tar_shards.py N_SHARDS UTTS_PER_SHARD OUTDIR [--seed S] [--zeros]
                      [--rate HZ] [--median-s S]

Writes OUTDIR/shards_000000000.tar ... and OUTDIR/data.list (absolute shard
paths, one per line). Per key the members are `key.txt` (a random sentence,
UTF-8, no trailing newline) then `key.wav` (16 kHz mono PCM16 unless --rate,
canonical 44-byte header). Durations are log-normal like LibriTTS utterances
(median ~4.8 s unless --median-s, mean ~1.16x the median), clipped to 0.5-20 s;
`--rate 8000 --median-s 1.2` gives small members (~24 KB a clip). The PCM payload is cheap noise
sliced from a fixed pool (or zeros with --zeros): it exists for I/O and
parsing speed, not realism. Output is deterministic for a given seed.
"""

import argparse
import io
import math
import os
import random
import struct
import sys
import tarfile

RATE = 16000
MU = math.log(4.8)      # log-normal: median 4.8 s, mean exp(mu + s^2/2) ~ 5.6 s
SIGMA = 0.55
MIN_S, MAX_S = 0.5, 20.0

WORDS = ("the a of and to in is was that it for on with as his at by had "
         "from they this but be not are one have which you were her all she "
         "there would their we him been has when who will more no if out so "
         "said what up its about into than them can only other new some time "
         "could these two may then do first any my now such like our over man "
         "me even most made after also did many before must through back years "
         "where much your way well down should because each just those people "
         "how too little state good very make world still own see men work long "
         "get here between both life being under never day same another know "
         "while last might us great old year off come since against go came "
         "right used take three river garden window morning silver harbour "
         "lantern meadow kettle winter station bridge pocket whistle").split()


def wav_header(nframes, rate):
    data = nframes * 2
    return struct.pack("<4sI4s4sIHHIIHH4sI", b"RIFF", 36 + data, b"WAVE",
                       b"fmt ", 16, 1, 1, rate, rate * 2, 2, 16, b"data", data)


def tar_add(tf, name, payload):
    ti = tarfile.TarInfo(name)
    ti.size = len(payload)
    ti.mtime = 0
    ti.mode = 0o644
    ti.uid = ti.gid = 0
    ti.uname = ti.gname = ""
    tf.addfile(ti, io.BytesIO(payload))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("n_shards", type=int)
    ap.add_argument("utts_per_shard", type=int)
    ap.add_argument("outdir")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--zeros", action="store_true", help="all-zero PCM instead of noise")
    ap.add_argument("--rate", type=int, default=RATE, help="sample rate (default 16000)")
    ap.add_argument("--median-s", type=float, default=None,
                    help="median duration in seconds (default 4.8)")
    args = ap.parse_args()
    rate = args.rate
    mu = MU if args.median_s is None else math.log(args.median_s)

    rng = random.Random(args.seed)
    pool_frames = int(MAX_S * rate) * 2
    if args.zeros:
        pool = bytes(pool_frames * 2)
    else:
        # quiet-ish noise: low byte random, high byte in a small range
        raw = bytearray(rng.randbytes(pool_frames * 2))
        raw[1::2] = bytes(b & 0x0F for b in raw[1::2])
        pool = bytes(raw)

    os.makedirs(args.outdir, exist_ok=True)
    outdir = os.path.abspath(args.outdir)
    paths = []
    total_s = 0.0
    for s in range(args.n_shards):
        path = os.path.join(outdir, "shards_%09d.tar" % s)
        with open(path, "wb") as f, \
                tarfile.open(fileobj=f, mode="w", format=tarfile.GNU_FORMAT) as tf:
            for u in range(args.utts_per_shard):
                key = "B%05d_%06d" % (s, u)
                dur = min(MAX_S, max(MIN_S, rng.lognormvariate(mu, SIGMA)))
                nframes = int(dur * rate)
                total_s += nframes / rate
                nwords = max(1, int(dur * 2.6))
                text = " ".join(rng.choice(WORDS) for _ in range(nwords)).capitalize() + "."
                off = 2 * rng.randrange(0, pool_frames - nframes + 1)
                tar_add(tf, key + ".txt", text.encode("utf-8"))
                tar_add(tf, key + ".wav", wav_header(nframes, rate) + pool[off:off + 2 * nframes])
        paths.append(path)
    with open(os.path.join(outdir, "data.list"), "w") as f:
        f.write("".join(p + "\n" for p in paths))
    n = args.n_shards * args.utts_per_shard
    print("wrote %d shards, %d utterances, %.2f h of audio (mean %.2f s) to %s"
          % (args.n_shards, n, total_s / 3600, total_s / max(n, 1), outdir),
          file=sys.stderr)


if __name__ == "__main__":
    main()
