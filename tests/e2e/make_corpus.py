"""The end-to-end corpus: uneven utterances in uneven CosyVoice parquet files.

Writes, under OUTDIR, make_parquet_list.py's layout: parquet/parquet_00000000N.tar
(written by hyparquet-writer through write_parquet.mjs, not by equishard),
utt2parquet_N.json / spk2parquet_N.json (json.dump(indent=2, ensure_ascii=False),
as that script writes them), data.list, utt2data.list, spk2data.list; and
truth.json: every utterance's key, file, samples and whether CosyVoice's filter
keeps it (from the numbers this script chose, not from equishard).

Lengths are drawn so that a few utterances are shorter than the recipe's 1 s
minimum (filtered) and the files differ a lot in size and total duration: the
recipe's own split then gives ranks unequal work.

usage: make_corpus.py OUTDIR NODE_MODULES [--seed S] [--scale N]
"""
import argparse
import array
import json
import math
import os
import random
import subprocess
import wave

SAMPLE_RATE = 16000
EMB_DIM = 16
FILE_SIZES = [8, 50, 12, 45, 60, 5, 30, 40, 20, 30, 20, 20]  # utterances per file: uneven on purpose
WORDS = "the of and to in a is that for it as was with be by on not he this are or his".split()


def signal(rng, seconds=12):
    """A tone with noise, 16-bit: utterances are slices of it (fast to make)."""
    f0 = rng.uniform(90, 250)
    return array.array("h", (int(32767 * (0.3 * math.sin(2 * math.pi * f0 * i / SAMPLE_RATE)
                                          + rng.uniform(-0.05, 0.05)))
                             for i in range(seconds * SAMPLE_RATE)))


def write_wav(path, samples, base, rng):
    start = rng.randrange(len(base) - samples)
    with wave.open(path, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(SAMPLE_RATE)
        w.writeframes(base[start:start + samples].tobytes())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir")
    ap.add_argument("node_modules", type=os.path.abspath)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--scale", type=int, default=1, help="utterances per file times this (benchmarks)")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    out = os.path.abspath(args.outdir)
    os.makedirs(os.path.join(out, "wav"), exist_ok=True)
    os.makedirs(os.path.join(out, "parquet"), exist_ok=True)
    base = signal(rng)
    spk_emb = {f"spk{s}": [rng.uniform(-1, 1) for _ in range(EMB_DIM)] for s in range(6)}
    truth, data_list, utt2data, spk2data = [], [], {}, {}
    n = 0
    for i, size in enumerate(s * args.scale for s in FILE_SIZES):
        rows = []
        # files get a typical length of their own: some hold mostly long audio
        typical = rng.choice([1.6, 2.5, 4.0, 6.0])
        for _ in range(size):
            key = f"utt{n:05d}"
            seconds = 0.6 if n % 41 == 3 else min(9.5, max(1.05, rng.lognormvariate(math.log(typical), 0.45)))
            samples = int(seconds * SAMPLE_RATE)
            wav = os.path.join(out, "wav", key + ".wav")
            write_wav(wav, samples, base, rng)
            spk = f"spk{rng.randrange(6)}"
            text = " ".join(rng.choice(WORDS) for _ in range(max(1, int(seconds * 2.5))))
            rows.append(dict(utt=key, wav=wav, text=text, spk=spk,
                             utt_embedding=[rng.uniform(-1, 1) for _ in range(EMB_DIM)],
                             spk_embedding=spk_emb[spk],
                             speech_token=[rng.randrange(4096) for _ in range(max(1, int(seconds * 25)))]))
            truth.append(dict(key=key, file=i, samples=samples,
                              kept=samples / SAMPLE_RATE * 100 >= 100))  # filter: min_length 100
            n += 1
        pq = os.path.join(out, "parquet", f"parquet_{i:09d}.tar")
        rows_json = os.path.join(out, f"rows-{i}.json")
        with open(rows_json, "w") as f:
            json.dump(rows, f)
        subprocess.run(["node", os.path.join(os.path.dirname(__file__), "write_parquet.mjs"), rows_json, pq],
                       env=dict(os.environ, NODE_PATH=args.node_modules), check=True)
        os.remove(rows_json)
        u2p = os.path.join(out, "parquet", f"utt2parquet_{i:09d}.json")
        s2p = os.path.join(out, "parquet", f"spk2parquet_{i:09d}.json")
        with open(u2p, "w") as f:
            json.dump({r["utt"]: pq for r in rows}, f, ensure_ascii=False, indent=2)
        with open(s2p, "w") as f:
            json.dump({s: pq for s in sorted({r["spk"] for r in rows})}, f, ensure_ascii=False, indent=2)
        data_list.append(pq)
        utt2data[i], spk2data[i] = u2p, s2p
    for name, lines in (("data.list", data_list), ("utt2data.list", utt2data.values()),
                        ("spk2data.list", spk2data.values())):
        with open(os.path.join(out, "parquet", name), "w", encoding="utf8") as f:
            f.write("".join(line + "\n" for line in lines))
    with open(os.path.join(out, "truth.json"), "w") as f:
        json.dump(truth, f)


if __name__ == "__main__":
    main()
