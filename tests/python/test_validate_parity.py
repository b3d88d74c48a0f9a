"""equishard.validate(...) and `equishard validate` give the same report.

A CI gate written in Python must fail on the data the CLI fails on: every case
runs the CLI with --json FILE and the binding with the same inputs, and the two
JSON reports must be equal field by field (settings, summary, counts, every
finding). The planted defects come from code that is not equishard's: the
recipe-layout .pt files of tests/validate_cases.py (Python's pickle/zipfile) and
CosyVoice parquet shards written by plain_parquet.py (struct), whose expected
findings are the defects planted, not what either front end reports.
"""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest

import equishard

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.environ.get("ES_SOURCE_ROOT", os.path.join(HERE, "..", ".."))
BUILD = os.environ.get("ES_BUILD_ROOT", os.path.join(ROOT, "build"))
FIX = os.environ.get("ES_FIXTURES", os.path.join(ROOT, "tests", "fixtures"))
CORPUS = os.path.join(FIX, "corpus_a")
KALDI = os.path.join(CORPUS, "kaldi")
SAMPLES = os.path.join(ROOT, "data-samples")
CLI = os.environ.get("EQUISHARD_CLI", os.path.join(BUILD, "tools", "equishard", "equishard"))

sys.path[:0] = [os.path.join(ROOT, "tests"), HERE]
import validate_cases  # noqa: E402  (the recipe's .pt layout, stdlib only)
import plain_parquet  # noqa: E402

# The defects planted in the parquet list, and the findings each must give.
NAN_KEY, ZERO_KEY = "A01_0001", "A04_0004"
RELABELLED = {"A01_0003": "A02", "A02_0004": "A03", "A03_0005": "A05", "A05_0006": "A06"}


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def kaldi_file(name):
    out = {}
    with open(os.path.join(KALDI, name), encoding="utf-8") as f:
        for line in f:
            k, _, v = line.rstrip("\n").partition(" ")
            out[k] = v
    return out


def write_planted_parquet(out):
    """Corpus A as CosyVoice parquet (2 files of 30 rows, data.list with
    absolute paths) with a NaN, a zero vector and 4 utterances under the wrong
    speaker; spk_embedding per row is the float32 mean of its (labelled)
    speaker's usable utterances, as extract_embedding.py computes it."""
    utt = validate_cases.load_pt(os.path.join(KALDI, "utt2embedding.pt"))
    spk_of, text, wav = kaldi_file("utt2spk"), kaldi_file("text"), kaldi_file("wav.scp")
    utt[NAN_KEY][17] = float("nan")
    utt[ZERO_KEY] = [0.0] * 192
    spk_of.update(RELABELLED)
    spk = {}
    for s in sorted(set(spk_of.values())):
        rows = [v for k, v in utt.items() if spk_of[k] == s and all(x == x for x in v)]
        spk[s] = [f32(sum(col) / len(rows)) for col in zip(*rows)]
    keys = sorted(wav)
    rows = []
    for k in keys:
        with open(os.path.join(CORPUS, wav[k]), "rb") as f:
            audio = f.read()
        rows.append(dict(utt=k, wav=wav[k], audio_data=audio, text=text[k], spk=spk_of[k],
                         utt_embedding=utt[k], spk_embedding=spk[spk_of[k]]))
    columns = [("utt", "utf8"), ("wav", "utf8"), ("audio_data", "bytes"), ("text", "utf8"),
               ("spk", "utf8"), ("utt_embedding", "doubles"), ("spk_embedding", "doubles")]
    os.makedirs(out, exist_ok=True)
    paths = []
    for i in range(2):
        paths.append(os.path.join(out, "parquet_%09d.tar" % i))
        plain_parquet.write(paths[-1], rows[30 * i:30 * (i + 1)], columns)
    with open(os.path.join(out, "data.list"), "w") as f:
        f.writelines(p + "\n" for p in paths)
    return os.path.join(out, "data.list")


class ValidateParityTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="es-parity-")
        cls.parquet = write_planted_parquet(os.path.join(cls.tmp, "pq"))
        cls.plant = os.path.join(cls.tmp, "plant")
        validate_cases.plant(KALDI, cls.plant)
        # Kaldi dir with one utterance more: missing embedding, duplicate audio
        k2 = os.path.join(cls.tmp, "k2")
        os.makedirs(k2)
        shutil.copy(os.path.join(KALDI, "text"), k2)
        with open(os.path.join(k2, "utt2spk"), "w") as f:
            with open(os.path.join(KALDI, "utt2spk")) as src:
                f.write(src.read() + "A01_9999 A01\n")
        with open(os.path.join(k2, "wav.scp"), "w") as f:
            f.writelines(f"{k} {os.path.join(CORPUS, v)}\n" for k, v in kaldi_file("wav.scp").items())
            f.write(f"A01_9999 {os.path.join(CORPUS, 'wav', 'A01', 'A01_0001.wav')}\n")
        cls.k2 = k2
        cls.bad_list = os.path.join(cls.tmp, "bad.list")
        with open(cls.bad_list, "w") as f:
            f.write(os.path.join(CORPUS, "shards", "shards_000000000.tar") + "\n")
            f.write(os.path.join(cls.tmp, "missing.tar") + "\n")
        cls.costs = os.path.join(cls.tmp, "costs.tsv")
        subprocess.run([CLI, "measure", "-q", "--hash", "-o", cls.costs, k2], check=True)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def both(self, cli_args, lists=None, **kwargs):
        """The CLI's --json report and the binding's write_json report, parsed."""
        mine, theirs = (os.path.join(self.tmp, n) for n in ("py.json", "cli.json"))
        for p in (mine, theirs):
            if os.path.exists(p):
                os.remove(p)
        run = subprocess.run([CLI, "validate", "-q", "--device", "cpu", "--json", theirs, *cli_args],
                             capture_output=True, text=True)
        self.assertIn(run.returncode, (0, 1), run.stderr)
        with equishard.validate(lists, device="cpu", **kwargs) as v:
            v.write_json(mine)
            counts = v.counts
        with open(mine) as a, open(theirs) as b:
            py, cli = json.load(a), json.load(b)
        self.assertEqual(counts, py["counts"])
        return py, cli

    def assert_same(self, cli_args, lists=None, **kwargs):
        py, cli = self.both(cli_args, lists, **kwargs)
        self.assertEqual(sorted(py), sorted(cli))
        for field in cli:  # field by field: a difference names its part of the report
            self.assertEqual(py[field], cli[field], field)
        return py

    def test_parquet_list_embeddings_found_as_the_cli_finds_them(self):
        r = self.assert_same([self.parquet], [self.parquet])
        c = r["counts"]
        got = {check: sorted(f["key"] for f in r["findings"] if f["check"] == check)
               for check in ("nan", "zero_norm", "far_from_centroid")}
        self.assertEqual(got, {"nan": [NAN_KEY], "zero_norm": [ZERO_KEY],
                               "far_from_centroid": sorted(RELABELLED)})
        self.assertEqual({k: v for k, v in c.items() if k not in ("filtered",) and v},
                         {"nan": 1, "zero_norm": 1, "far_from_centroid": 4})
        self.assertEqual((r["summary"]["utt_embeddings"], r["summary"]["spk_embeddings"]), (60, 6))

    def test_fixture_parquet_list_with_root(self):
        data_list = os.path.join(CORPUS, "parquet", "data.list")
        r = self.assert_same(["--root", CORPUS, data_list], [data_list], root=CORPUS)
        self.assertEqual((r["summary"]["utt_embeddings"], r["summary"]["spk_embeddings"]), (60, 6))

    def test_recipe_pt_files_with_planted_defects(self):
        P = self.plant
        args = dict(utt_emb=os.path.join(P, "utt2embedding.pt"),
                    spk_emb=os.path.join(P, "spk2embedding.pt"), utt2spk=os.path.join(P, "utt2spk"))
        r = self.assert_same(["--utt-emb", args["utt_emb"], "--spk-emb", args["spk_emb"],
                              "--utt2spk", args["utt2spk"], "--root", CORPUS, KALDI], [KALDI],
                             root=CORPUS, **args)
        with open(os.path.join(P, "expected.tsv")) as f:
            want = sorted(line.split("\t")[0] for line in f)
        self.assertEqual(sorted(f["check"] for f in r["findings"] if f["check"] != "filtered"), want)

    def test_sources_without_a_list(self):
        self.assert_same(["--utt-emb", os.path.join(KALDI, "utt2embedding.pt"), "--utt2spk",
                          os.path.join(KALDI, "utt2spk"), "--min-cosine", "0.9"],
                         utt_emb=os.path.join(KALDI, "utt2embedding.pt"),
                         utt2spk=os.path.join(KALDI, "utt2spk"), min_cosine=0.9)

    def test_list_hashed_and_problems_skipped_by_default(self):
        emb = os.path.join(KALDI, "utt2embedding.pt")
        r = self.assert_same(["--utt-emb", emb, self.k2], [self.k2], utt_emb=emb)
        self.assertEqual((r["counts"]["missing_utt_emb"], r["counts"]["duplicate_audio"]), (1, 1))
        r = self.assert_same(["--utt-emb", emb, "--no-hash", self.k2], [self.k2], utt_emb=emb,
                             hash=False)
        self.assertEqual(r["counts"]["duplicate_audio"], 0)
        r = self.assert_same([self.bad_list], [self.bad_list])
        self.assertEqual(r["counts"]["unreadable"], 1)

    def test_speech_tokens(self):
        tokens = os.path.join(KALDI, "utt2speech_token.pt")
        emb = os.path.join(KALDI, "utt2embedding.pt")
        # a Kaldi dir has no speech tokens: without the .pt, the filter drops every row
        r = self.assert_same(["--utt-emb", emb, "--speech-tokens", tokens, "--root", CORPUS,
                              "--require-speech-token", KALDI], [KALDI], utt_emb=emb,
                             speech_tokens=tokens, root=CORPUS, require_speech_token=1)
        self.assertLess(r["counts"]["filtered"], 60)
        r = self.assert_same(["--utt-emb", emb, "--root", CORPUS, "--require-speech-token",
                              KALDI], [KALDI], utt_emb=emb, root=CORPUS, require_speech_token=1)
        self.assertEqual(r["counts"]["filtered"], 60)

    def test_cost_table(self):
        emb = os.path.join(KALDI, "utt2embedding.pt")
        with equishard.CostTable.read(self.costs) as t:
            self.assert_same(["--utt-emb", emb, "--costs", self.costs], t, utt_emb=emb)
        self.assert_same(["--utt-emb", emb, self.costs], [self.costs], utt_emb=emb)

    def test_loader_data_checks(self):
        data_list = os.path.join(SAMPLES, "shards", "data.list")
        r = self.assert_same(["--root", SAMPLES, "--world-size", "2", data_list], [data_list],
                             root=SAMPLES, world_size=2)
        self.assertEqual(r["counts"]["imbalance"], 1)
        self.assert_same(["--root", SAMPLES, "--world-size", "2", "--loader", "wenet", "--workers",
                          "2", data_list], [data_list], root=SAMPLES, world_size=2, loader="wenet",
                         workers=2)
        # --workers 0 reads as 1 (no DataLoader workers): workers=0 too
        self.assert_same(["--root", SAMPLES, "--world-size", "2", "--workers", "0", data_list],
                         [data_list], root=SAMPLES, world_size=2, workers=0)
        self.assert_same(["--root", SAMPLES, "--min-length", "0", "--max-imbalance", "1",
                          data_list], [data_list], root=SAMPLES, min_length=0, max_imbalance=1)

    def test_refusals_match(self):
        """What the CLI refuses (exit 2) the binding refuses (ValueError, or
        equishard.Error where the library refuses it)."""
        empty = os.path.join(self.tmp, "empty.list")
        open(empty, "w").close()
        for cli_args, lists, kwargs in (([], None, {}),
                                        ([empty], [empty], {}),
                                        ([self.parquet, self.parquet], [self.parquet] * 2, {})):
            run = subprocess.run([CLI, "validate", "-q", *cli_args], capture_output=True)
            self.assertEqual(run.returncode, 2, cli_args)
            with self.assertRaises((ValueError, equishard.Error)):
                equishard.validate(lists, **kwargs)


if __name__ == "__main__":
    unittest.main()
