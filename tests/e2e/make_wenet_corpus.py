"""The WeNet end-to-end corpus: uneven utterances in uneven WeNet tar shards.

Writes, under OUTDIR, what WeNet's tools/make_shard_list.py makes: shards/
shards_00000000N.tar, each utterance a KEY.txt and a KEY.wav member (Python's
tarfile and wave, not equishard), and data.list (one shard path a line); the same
utterances as a WeNet raw list, raw.list ({"key", "wav", "txt"} a line, the wav
files under raw/, as tools/make_raw_list.py writes it); units.txt,
the character symbol table (<blank> 0, <unk> 1, the characters, '▁' for a space,
<sos/eos> last, as tools/text2token.py and the recipes' dict); and truth.json:
every utterance's key, shard, samples, transcript and whether WeNet's filter
with the test's filter_conf keeps it (from the numbers this script chose, not from equishard).

Shards differ a lot in utterance count and typical length, and a few
utterances are shorter than min_length (filtered): WeNet's own split of the
shard list (element i to rank/worker i % (ranks x workers)) then gives ranks
very unequal work.

usage: make_wenet_corpus.py OUTDIR [--seed S]
"""
import argparse
import array
import io
import json
import math
import os
import random
import tarfile
import wave

SAMPLE_RATE = 16000
SHARD_SIZES = [6, 60, 10, 40, 80, 4, 25, 55, 18, 35, 12, 70, 8, 30]  # uneven on purpose
WORDS = "the of and to in a is that for it as was with be by on not he this are or his".split()
MIN_LENGTH, MAX_LENGTH = 50, 1000  # the test's filter_conf (10 ms frames)


def signal(rng, seconds=12):
    """A tone with noise, 16-bit: utterances are slices of it (fast to make)."""
    f0 = rng.uniform(90, 250)
    return array.array("h", (int(32767 * (0.3 * math.sin(2 * math.pi * f0 * i / SAMPLE_RATE)
                                          + rng.uniform(-0.05, 0.05)))
                             for i in range(seconds * SAMPLE_RATE)))


def wav_bytes(samples, base, rng):
    start = rng.randrange(len(base) - samples)
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(SAMPLE_RATE)
        w.writeframes(base[start:start + samples].tobytes())
    return out.getvalue()


def add(tar, name, data):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir")
    ap.add_argument("--seed", type=int, default=11)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    out = os.path.abspath(args.outdir)
    os.makedirs(os.path.join(out, "shards"), exist_ok=True)
    os.makedirs(os.path.join(out, "raw"), exist_ok=True)
    raw_list = []
    base = signal(rng)
    truth, data_list, chars = [], [], set()
    n = 0
    for i, size in enumerate(SHARD_SIZES):
        path = os.path.join(out, "shards", f"shards_{i:09d}.tar")
        typical = rng.choice([1.5, 2.5, 4.0, 6.0])  # some shards hold mostly long audio
        with tarfile.open(path, "w") as tar:
            for _ in range(size):
                key = f"utt{n:05d}"
                seconds = 0.3 if n % 37 == 5 else min(9.5, max(0.8, rng.lognormvariate(math.log(typical), 0.45)))
                samples = int(seconds * SAMPLE_RATE)
                text = " ".join(rng.choice(WORDS) for _ in range(max(1, int(seconds * 2.5))))
                chars.update(text)
                add(tar, key + ".txt", text.encode("utf8"))  # make_shard_list.py: txt before wav
                wav = wav_bytes(samples, base, rng)
                add(tar, key + ".wav", wav)
                wav_path = os.path.join(out, "raw", key + ".wav")
                with open(wav_path, "wb") as f:
                    f.write(wav)
                raw_list.append(json.dumps(dict(key=key, wav=wav_path, txt=text), ensure_ascii=False))
                frames = samples / SAMPLE_RATE * 100
                truth.append(dict(key=key, shard=i, samples=samples, text=text,
                                  kept=MIN_LENGTH <= frames <= MAX_LENGTH))
                n += 1
        data_list.append(path)
    with open(os.path.join(out, "data.list"), "w", encoding="utf8") as f:
        f.write("".join(p + "\n" for p in data_list))
    with open(os.path.join(out, "raw.list"), "w", encoding="utf8") as f:
        f.write("".join(line + "\n" for line in raw_list))
    units = ["<blank>", "<unk>"] + sorted("▁" if c == " " else c for c in chars) + ["<sos/eos>"]
    with open(os.path.join(out, "units.txt"), "w", encoding="utf8") as f:
        f.write("".join(f"{u} {i}\n" for i, u in enumerate(units)))
    with open(os.path.join(out, "truth.json"), "w") as f:
        json.dump(truth, f)


if __name__ == "__main__":
    main()
