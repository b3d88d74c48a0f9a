#!/usr/bin/env python3
"""The drop-in loaders against the recipes' own pipelines: one epoch of a torch
DataLoader (2 workers, no model), utterances a second and time to the first batch.

    python3 tools/bench/bench_loaders.py cosyvoice|wenet [--utts 20000] [--files 20]
        [--rounds 3] [--dir /tmp/es-bench-loaders]

cosyvoice  own: CosyVoice's Dataset (DataList, parquet_opener, tokenize, filter,
           resample, compute_fbank, parse_embedding, shuffle, sort, batch,
           padding: cosyvoice2.yaml's data_pipeline with tests/e2e's stand-ins);
           drop-in: equishard.loaders.cosyvoice.Dataset on a batch plan of the
           same corpus (the same stages, rows fetched by [shard, pos]).
wenet      own: WeNet's Dataset (WenetTarShardDatasetSource, tar_file_and_group,
           decode_wav ... compute_fbank, spec_aug, shuffle, sort, batch,
           padding; tests/e2e's dataset_conf); drop-in: equishard.loaders.wenet.Dataset.

The recipes' code is read in place from ../shared/third_party (upstream's, as
tests/e2e runs it, with tests/e2e/shims); exit 77 (SKIP) without it or without
torch for ES_TORCH_PYTHON (default /usr/bin/python3). pyarrow is not installable
here: CosyVoice's parquet_opener runs on tests/e2e/shims/pyarrow, which reads
each file front to back through equishard.RowReader (64 rows a call, as
iter_batches(64)), so the parquet decoding is the same library on both sides.

The corpus (generated once under --dir, reused): CosyVoice parquet written by
hyparquet-writer (tests/e2e/write_parquet.mjs, one row group a file, 192-d
embeddings, 25 Hz speech tokens), or WeNet tar shards written by Python's
tarfile (txt then wav members); 16 kHz PCM16 audio, log-normal durations
(median 2.5 s). The batch plan: `equishard plan --mode batch --world-size 1
--workers 2`, with the recipe's yaml (CosyVoice) or tests/e2e's conf (WeNet).

Each epoch runs in a fresh process (both sides pay the same imports and worker
forks); the clock starts before the Dataset is made (the drop-in reads the
plan's costs.tsv.zst there). Rounds interleave the two loaders, in alternating
order, from the page cache (every file read beforehand) and from a cold cache
(posix_fadvise(POSIX_FADV_DONTNEED) on every file of the corpus and the plan
before the run). Reported: median utterances/s and first-batch seconds per
loader and cache state, and the drop-in's ratio (median, and its range over
the rounds).

Environment: EQUISHARD (the CLI, default build/tools/equishard/equishard),
EQUISHARD_LIB (default build/src/libequishard.so), NODE_MODULES (hyparquet-writer;
default build-npm/node_modules), ES_TORCH_PYTHON.
"""
import argparse
import io
import json
import math
import os
import random
import statistics
import subprocess
import sys
import tarfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARED = os.path.normpath(os.path.join(ROOT, "..", "shared"))
RECIPES = {"cosyvoice": os.path.join(SHARED, "third_party", "cosyvoice"),
           "wenet": os.path.join(SHARED, "third_party", "wenet")}
E2E = os.path.join(ROOT, "tests", "e2e")
SHIMS = os.path.join(E2E, "shims")
QWEN2 = os.path.join(SHARED, "fixtures", "tokenizers", "qwen2")
YAML = os.path.join(RECIPES["cosyvoice"], "examples", "libritts", "cosyvoice2", "conf", "cosyvoice2.yaml")
CLI = os.environ.get("EQUISHARD", os.path.join(ROOT, "build", "tools", "equishard", "equishard"))
LIB = os.environ.get("EQUISHARD_LIB", os.path.join(ROOT, "build", "src", "libequishard.so"))
NODE_MODULES = os.environ.get("NODE_MODULES", os.path.join(ROOT, "build-npm", "node_modules"))
TORCH_PYTHON = os.environ.get("ES_TORCH_PYTHON", "/usr/bin/python3")
WORKERS = 2

sys.path.insert(0, E2E)
# tests/e2e's 16 kHz WAVs: slices of one tone with noise a corpus
from make_wenet_corpus import SAMPLE_RATE as RATE, signal, wav_bytes  # noqa: E402
EMB_DIM = 192
WORDS = "the of and to in a is that for it as was with be by on not he this are or his".split()
# tests/e2e/test_wenet_e2e.py's dataset_conf (the own side's; the drop-in's is the same)
WENET_MAX_FRAMES = 4000
WENET_CONF = {
    "filter_conf": {"max_length": 1000, "min_length": 50, "token_max_length": 200, "token_min_length": 1},
    "resample_conf": {"resample_rate": 16000},
    "speed_perturb": False, "feats_type": "fbank",
    "fbank_conf": {"num_mel_bins": 80, "frame_shift": 10, "frame_length": 25, "dither": 0.1},
    "spec_aug": True, "spec_aug_conf": {"num_t_mask": 2, "num_f_mask": 2, "max_t": 50, "max_f": 10},
    "shuffle": True, "shuffle_conf": {"shuffle_size": 1500},
    "sort": True, "sort_conf": {"sort_size": 500},
    "batch_conf": {"batch_type": "dynamic", "max_frames_in_batch": WENET_MAX_FRAMES},
}
WENET_PLAN = ["--frame-rate", "100", "--min-length", "50", "--max-length", "1000",
              "--max-frames-in-batch", str(WENET_MAX_FRAMES)]


def skip(why):
    print(f"SKIP: {why}")
    sys.exit(77)


# ---------------------------------------------------------------- the corpus

def utterances(rng, n):
    """(key, seconds, text) for n utterances: log-normal, median 2.5 s, 1.05-9.5 s
    (inside both recipes' length filters)."""
    for i in range(n):
        seconds = min(9.5, max(1.05, rng.lognormvariate(math.log(2.5), 0.45)))
        text = " ".join(rng.choice(WORDS) for _ in range(max(1, int(seconds * 2.5))))
        yield f"utt{i:06d}", seconds, text


def sync_dir(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def make_cosyvoice(out, n_utts, n_files, rng):
    os.makedirs(os.path.join(out, "parquet"), exist_ok=True)
    tmp = os.path.join(out, "wav-tmp")
    os.makedirs(tmp, exist_ok=True)
    base = signal(rng)
    spk_emb = {f"spk{s}": [rng.uniform(-1, 1) for _ in range(EMB_DIM)] for s in range(20)}
    utts = list(utterances(rng, n_utts))
    per = -(-n_utts // n_files)
    paths = []
    for i in range(n_files):
        rows = []
        for key, seconds, text in utts[i * per:(i + 1) * per]:
            wav = os.path.join(tmp, key + ".wav")
            with open(wav, "wb") as f:
                f.write(wav_bytes(int(seconds * RATE), base, rng))
            spk = f"spk{rng.randrange(20)}"
            rows.append(dict(utt=key, wav=wav, text=text, spk=spk,
                             utt_embedding=[rng.uniform(-1, 1) for _ in range(EMB_DIM)],
                             spk_embedding=spk_emb[spk],
                             speech_token=[rng.randrange(6561) for _ in range(int(seconds * 25))]))
        rows_json = os.path.join(tmp, "rows.json")
        with open(rows_json, "w") as f:
            json.dump(rows, f)
        path = os.path.join(out, "parquet", f"parquet_{i:09d}.tar")
        subprocess.run(["node", os.path.join(ROOT, "tests", "e2e", "write_parquet.mjs"), rows_json, path],
                       check=True, env=dict(os.environ, NODE_PATH=NODE_MODULES))
        for r in rows:
            os.unlink(r["wav"])
        paths.append(path)
        print(f"  {path}: {len(rows)} rows", file=sys.stderr)
    os.unlink(rows_json)
    os.rmdir(tmp)
    return paths


def make_wenet(out, n_utts, n_files, rng):
    os.makedirs(os.path.join(out, "shards"), exist_ok=True)
    base = signal(rng)
    utts = list(utterances(rng, n_utts))
    per = -(-n_utts // n_files)
    paths, chars = [], set()
    for i in range(n_files):
        path = os.path.join(out, "shards", f"shards_{i:09d}.tar")
        with tarfile.open(path + ".part", "w") as tar:
            for key, seconds, text in utts[i * per:(i + 1) * per]:
                chars.update(text)
                for name, data in ((key + ".txt", text.encode()),  # make_shard_list.py: txt, then wav
                                   (key + ".wav", wav_bytes(int(seconds * RATE), base, rng))):
                    info = tarfile.TarInfo(name)
                    info.size = len(data)
                    tar.addfile(info, io.BytesIO(data))
        os.rename(path + ".part", path)
        paths.append(path)
    units = ["<blank>", "<unk>"] + sorted("▁" if c == " " else c for c in chars) + ["<sos/eos>"]
    with open(os.path.join(out, "units.txt"), "w", encoding="utf8") as f:
        f.write("".join(f"{u} {i}\n" for i, u in enumerate(units)))
    return paths


def corpus(fmt, top, n_utts, n_files):
    """The corpus folder (made once): data.list, the shards, plan/ (a batch plan)."""
    out = os.path.join(top, f"{fmt}-{n_utts}x{n_files}")
    if os.path.exists(os.path.join(out, "plan", "plan.json")):
        return out
    print(f"making {out} ...", file=sys.stderr)
    os.makedirs(out, exist_ok=True)
    rng = random.Random(20240607)
    paths = (make_cosyvoice if fmt == "cosyvoice" else make_wenet)(out, n_utts, n_files, rng)
    with open(os.path.join(out, "data.list"), "w") as f:
        f.write("".join(p + "\n" for p in paths))
    if fmt == "cosyvoice":
        args = ["--recipe", YAML, "--set", f"qwen_pretrain_path={QWEN2}"]
    else:
        args = WENET_PLAN + ["--symbol-table", os.path.join(out, "units.txt")]
    subprocess.run([CLI, "plan", "-q", *args, "--mode", "batch", "--world-size", "1",
                    "--workers", str(WORKERS), "-o", os.path.join(out, "plan"),
                    os.path.join(out, "data.list")], check=True, stdout=subprocess.DEVNULL)
    os.sync()  # dirty pages are not dropped by POSIX_FADV_DONTNEED
    return out


def corpus_files(out):
    for d, _, names in os.walk(out):
        for n in names:
            yield os.path.join(d, n)


def drop_cache(out):
    for path in corpus_files(out):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fdatasync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def warm_cache(out):
    for path in corpus_files(out):
        with open(path, "rb", buffering=0) as f:
            while f.read(1 << 20):
                pass


# ---------------------------------------------------------------- one epoch (child)

def cosyvoice_epoch(side, out):
    import functools
    import types
    sys.modules["torch.utils.tensorboard"] = types.ModuleType("torch.utils.tensorboard")
    import torch
    from torch.utils.data import DataLoader
    from cosyvoice.tokenizer.tokenizer import get_qwen_tokenizer
    torch.set_num_threads(1)

    import cosyvoice_pipeline  # tests/e2e's, as cosyvoice_trainer.py builds it
    pipeline = cosyvoice_pipeline.pipeline(
        functools.partial(get_qwen_tokenizer, token_path=QWEN2, skip_special_tokens=True))
    start = time.monotonic()
    if side == "own":
        from cosyvoice.dataset.dataset import Dataset
        ds = Dataset(os.path.join(out, "data.list"), data_pipeline=pipeline, mode="train", shuffle=True,
                     partition=True)
    else:
        from equishard.loaders.cosyvoice import Dataset
        ds = Dataset(os.path.join(out, "data.list"), data_pipeline=pipeline, mode="train", shuffle=True,
                     partition=True, plan=os.path.join(out, "plan"))
    ds.set_epoch(0)
    loader = DataLoader(ds, batch_size=None, pin_memory=False, num_workers=WORKERS, prefetch_factor=2)
    return run_epoch(loader, start, lambda b: len(b["utts"]))


def wenet_epoch(side, out):
    import torch_compat
    torch_compat.install()
    import torch
    from torch.utils.data import DataLoader
    from wenet.text.char_tokenizer import CharTokenizer
    torch.set_num_threads(1)
    tokenizer = CharTokenizer(os.path.join(out, "units.txt"), non_lang_syms=None, split_with_space=False)
    start = time.monotonic()
    if side == "own":
        from wenet.dataset.dataset import Dataset
        ds = Dataset("shard", os.path.join(out, "data.list"), tokenizer, dict(WENET_CONF), True)
    else:
        from equishard.loaders.wenet import Dataset
        ds = Dataset("shard", os.path.join(out, "data.list"), tokenizer, dict(WENET_CONF), True,
                     plan=os.path.join(out, "plan"))
    # wenet/utils/train_utils.py's loader (persistent workers: one epoch here)
    loader = DataLoader(ds, batch_size=None, pin_memory=False, num_workers=WORKERS, prefetch_factor=2,
                        persistent_workers=True, generator=torch.Generator().manual_seed(777))
    return run_epoch(loader, start, lambda b: len(b["keys"]))


def run_epoch(loader, start, size):
    first, utts, batches = None, 0, 0
    for b in loader:
        if first is None:
            first = time.monotonic() - start
        utts += size(b)
        batches += 1
    return dict(seconds=time.monotonic() - start, first=first, utts=utts, batches=batches)


def child(fmt, side, out):
    sys.path[:0] = [os.path.join(ROOT, "python"), SHIMS, RECIPES[fmt]]  # E2E: at import
    result = (cosyvoice_epoch if fmt == "cosyvoice" else wenet_epoch)(side, out)
    print(json.dumps(result))
    sys.stdout.flush()
    os._exit(0)  # no teardown of the workers' queues (tests/e2e's trainers do the same)


# ---------------------------------------------------------------- rounds (parent)

def epoch(fmt, side, out):
    env = dict(os.environ, EQUISHARD_LIB=LIB, OMP_NUM_THREADS="1", PYTHONPATH="")
    r = subprocess.run([TORCH_PYTHON, os.path.abspath(__file__), "--epoch", fmt, side, out],
                       capture_output=True, text=True, env=env, cwd=out)
    if r.returncode != 0:
        sys.exit(f"FAILED: {fmt} {side}\n{r.stdout[-3000:]}\n{r.stderr[-6000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--epoch":
        child(*sys.argv[2:5])
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("format", choices=("cosyvoice", "wenet"))
    ap.add_argument("--utts", type=int, default=20000)
    ap.add_argument("--files", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--dir", default="/tmp/es-bench-loaders")
    ap.add_argument("--states", default="warm,cold")
    args = ap.parse_args()
    if not os.path.isdir(RECIPES[args.format]):
        skip(f"no {RECIPES[args.format]}")
    if subprocess.run([TORCH_PYTHON, "-c", "import torch, torchaudio"], capture_output=True).returncode:
        skip(f"no torch/torchaudio for {TORCH_PYTHON}")
    out = corpus(args.format, args.dir, args.utts, args.files)
    if args.rounds < 1:
        return  # the corpus and its plan only
    sides = ("own", "equishard")
    results = {(st, s): [] for st in args.states.split(",") for s in sides}
    for r in range(args.rounds):
        for state in args.states.split(","):
            for side in (sides if r % 2 == 0 else sides[::-1]):
                (drop_cache if state == "cold" else warm_cache)(out)
                res = epoch(args.format, side, out)
                results[(state, side)].append(res)
                print(f"round {r} {state:4} {side:9} {res['utts']} utts in {res['seconds']:.2f} s "
                      f"({res['utts'] / res['seconds']:.0f}/s), first batch {res['first']:.3f} s, "
                      f"{res['batches']} batches", file=sys.stderr)
    print(f"{args.format}: {args.utts} utterances in {args.files} files, {WORKERS} workers, "
          f"{args.rounds} rounds, load {os.getloadavg()[0]:.1f}")
    for state in args.states.split(","):
        rate = {s: [x["utts"] / x["seconds"] for x in results[(state, s)]] for s in sides}
        first = {s: [x["first"] for x in results[(state, s)]] for s in sides}
        ratios = [e / o for o, e in zip(rate["own"], rate["equishard"])]
        for s in sides:
            print(f"  {state:4} {s:9} {statistics.median(rate[s]):7.0f} utts/s "
                  f"(runs {min(rate[s]):.0f}-{max(rate[s]):.0f}), first batch "
                  f"{statistics.median(first[s]):.3f} s (max {max(first[s]):.3f})")
        print(f"  {state:4} drop-in / own: {statistics.median(ratios):.2f}x "
              f"(rounds {min(ratios):.2f}-{max(ratios):.2f})")


if __name__ == "__main__":
    main()
