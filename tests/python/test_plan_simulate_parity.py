"""equishard.plan/simulate/describe(...) and the CLI give the same result.

A pipeline written in Python must produce the plan the CLI produces: every case
runs `equishard plan -o OUTDIR` and Plan.write(OUTDIR) with the same inputs and
settings (the same OUTDIR path, from the same working folder, so that paths the
plan records agree) and compares the two folders byte for byte; simulate's
`--json` against SimulateResult.write_json, describe's `--json` against
describe()'s dict; what the CLI refuses (exit 2) the binding refuses
(ValueError, or equishard.Error carrying the line the CLI prints). The expected
value of every comparison is the other front end's output, not a number
either produced alone.
"""
import contextlib
import filecmp
import json
import os
import shutil
import subprocess
import tempfile
import unittest

import equishard
from test_binding import CLI, CORPUS, ROOT

SHARED = os.path.join(ROOT, "..", "shared")
QWEN = os.path.join(SHARED, "fixtures", "tokenizers", "qwen2")
CV2_YAML = os.path.join(SHARED, "third_party", "cosyvoice", "examples", "libritts", "cosyvoice2",
                        "conf", "cosyvoice2.yaml")
KALDI = os.path.join(CORPUS, "kaldi")


@contextlib.contextmanager
def cwd(path):
    old = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


def same_tree(test, a, b):
    """Every file of a and b, byte for byte (names too)."""
    cmp = filecmp.dircmp(a, b)
    test.assertEqual((cmp.left_only, cmp.right_only), ([], []), (a, b))
    for name in cmp.common_files:
        with open(os.path.join(a, name), "rb") as x, open(os.path.join(b, name), "rb") as y:
            test.assertEqual(x.read(), y.read(), name)
    for d in cmp.common_dirs:
        same_tree(test, os.path.join(a, d), os.path.join(b, d))


class PlanSimulateParityTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="es-parity-plan-")
        cls.costs = os.path.join(cls.tmp, "costs.tsv")  # rows name shards relative to CORPUS
        subprocess.run([CLI, "measure", "-q", "-o", cls.costs, "shards/shards.list"], cwd=CORPUS,
                       check=True)
        cls.pq_costs = os.path.join(cls.tmp, "pq.tsv")
        subprocess.run([CLI, "measure", "-q", "-o", cls.pq_costs, "parquet/data.list"],
                       cwd=CORPUS, check=True)
        cls.bad = os.path.join(cls.tmp, "bad.list")
        with open(cls.bad, "w") as f:
            f.write(os.path.join(CORPUS, "shards", "shards_000000000.tar") + "\n")
            f.write(os.path.join(cls.tmp, "missing.tar") + "\n")
        cls.n = 0

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def outdir(self):
        type(self).n += 1
        return os.path.join(self.tmp, f"out{self.n}")

    def assert_same_plan(self, cli_args, inputs, *args, where=CORPUS, **kwargs):
        """`equishard plan ARGS -o OUT INPUTS` and plan(inputs, ...).write(OUT)."""
        out = self.outdir()
        run = subprocess.run([CLI, "plan", "-q", *cli_args, "-o", out, *inputs], cwd=where,
                             capture_output=True, text=True)
        self.assertEqual(run.returncode, 0, run.stderr)
        os.rename(out, out + ".cli")
        with cwd(where), equishard.plan(list(inputs), *args, **kwargs) as p:
            p.write(out)
        same_tree(self, out + ".cli", out)
        with open(os.path.join(out, "plan.json"), encoding="utf-8") as f:
            return out, json.load(f)

    def test_plan_shard_batch_reshard(self):
        _, j = self.assert_same_plan(["-k", "2", "-w", "2"], ["shards/shards.list"], 2, workers=2)
        self.assertEqual(j["parameters"]["mode"], "shard")
        _, j = self.assert_same_plan(["-k", "3", "-w", "2", "--mode", "batch",
                                      "--max-frames-in-batch", "1200"], ["raw.list"], 3,
                                     workers=2, mode="batch", max_frames_in_batch=1200)
        self.assertEqual(j["parameters"]["mode"], "batch")
        self.assert_same_plan(["-k", "2", "--mode", "batch", "--remainder", "carry", "--seed", "7",
                               "--epoch", "2", "--min-length", "0", "--max-length", "1000",
                               "--batch-size", "3", "--sort-size", "4"], ["parquet/data.list"],
                              2, mode="batch", remainder="carry", seed=7, epoch=2, min_length=0,
                              max_length=1000, batch_size=3, sort_size=4)
        self.assert_same_plan(["-k", "2", "-w", "2", "--mode", "reshard", "--compress", "zstd",
                               "--min-length", "0"], ["shards/shards.list"], 2, workers=2,
                              mode="reshard", compress="zstd", min_length=0)

    def test_plan_cost_model_and_measure_flags(self):
        self.assert_same_plan(["-k", "2", "--mode", "batch", "--w-text", "0.5", "--w-overhead",
                               "10", "--frame-rate", "75", "--w-batch", "3", "--threads", "1"],
                              ["shards/shards.list"], 2, mode="batch", w_text=0.5, w_overhead=10,
                              frame_rate=75, w_batch=3, threads=1)
        self.assert_same_plan(["-k", "1", "--on-error", "skip", "--hash"], [self.bad], 1,
                              on_error="skip", hash=True)

    def test_plan_root_reaches_the_lists_measured(self):
        """--root: where a list's relative entries are read (measure) and where
        reshard reads the shards; plan(root=) sets both, from another folder."""
        lst = os.path.join(CORPUS, "shards", "shards.list")
        self.assert_same_plan(["-k", "2", "--root", CORPUS], [lst], 2, root=CORPUS,
                              where=self.tmp)
        self.assert_same_plan(["-k", "2", "--mode", "reshard", "--shards-per-worker", "3",
                               "--root", CORPUS], [self.costs], 2, mode="reshard",
                              shards_per_worker=3, root=CORPUS, where=self.tmp)

    def test_plan_a_cost_table_object(self):
        out = self.outdir()
        run = subprocess.run([CLI, "plan", "-q", "-k", "2", "-o", out, self.costs], cwd=CORPUS,
                             capture_output=True, text=True)
        self.assertEqual(run.returncode, 0, run.stderr)
        os.rename(out, out + ".cli")
        with cwd(CORPUS), equishard.CostTable.read(self.costs) as t, equishard.plan(t, 2) as p:
            p.write(out, inputs=[self.costs])
        same_tree(self, out + ".cli", out)

    @unittest.skipUnless(os.path.exists(os.path.join(QWEN, "vocab.json")), "no Qwen2 fixture")
    def test_plan_tokenizer_and_speech_tokens(self):
        with equishard.Tokenizer(QWEN) as tok:
            _, j = self.assert_same_plan(["-k", "2", "--mode", "batch", "--tokenizer", QWEN,
                                          "--token-max-length", "12"], ["parquet/data.list"], 2,
                                         mode="batch", tokenizer=tok, token_max_length=12)
        self.assertGreater(j["metrics"]["filtered"]["too_many_tokens"], 0)
        tokens = os.path.join(KALDI, "utt2speech_token.pt")
        self.assert_same_plan(["-k", "2", "--speech-tokens", tokens, "--require-speech-token",
                               "--root", CORPUS], [KALDI], 2, speech_tokens=tokens,
                              require_speech_token=1, root=CORPUS)

    @unittest.skipUnless(os.path.exists(CV2_YAML), "no upstream CosyVoice recipe")
    def test_plan_and_simulate_with_a_recipe(self):
        self.assert_same_plan(["-k", "2", "-w", "2", "--mode", "batch", "--recipe", CV2_YAML,
                               "--max-length", "7000"], [self.pq_costs], 2, workers=2,
                              mode="batch", recipe=CV2_YAML, max_length=7000)
        self.assert_same_simulate(["--recipe", CV2_YAML, "-k", "2"], [self.pq_costs],
                                  recipe=CV2_YAML, world_size=2)

    # ---- measure ----------------------------------------------------------------

    def assert_same_table(self, cli_args, inputs, where=CORPUS, **kwargs):
        out = os.path.join(self.tmp, "m.tsv")
        run = subprocess.run([CLI, "measure", "-q", *cli_args, "-o", out + ".cli", *inputs],
                             cwd=where, capture_output=True, text=True)
        self.assertEqual(run.returncode, 0, run.stderr)
        with cwd(where), equishard.measure(list(inputs), **kwargs) as t:
            t.write(out)
        with open(out, "rb") as a, open(out + ".cli", "rb") as b:
            self.assertEqual(a.read(), b.read())

    def test_measure_tables(self):
        self.assert_same_table(["--hash", "-j", "1"], ["shards/shards.list", "raw.list"],
                               hash=True, threads=1)
        self.assert_same_table(["--root", CORPUS, "--on-error", "skip"],
                               [os.path.join(CORPUS, "shards", "shards.list"), self.bad],
                               where=self.tmp, root=CORPUS, on_error="skip")
        emb, spk = (os.path.join(KALDI, n) for n in ("utt2embedding.pt", "spk2embedding.pt"))
        tokens = os.path.join(KALDI, "utt2speech_token.pt")
        self.assert_same_table(["--utt-emb", emb, "--spk-emb", spk, "--speech-tokens", tokens],
                               ["kaldi"], utt_emb=emb, spk_emb=spk, speech_tokens=tokens)

    # ---- simulate ---------------------------------------------------------------

    def assert_same_simulate(self, cli_args, inputs, where=CORPUS, **kwargs):
        out = os.path.join(self.tmp, "sim.json")
        run = subprocess.run([CLI, "simulate", "-q", *cli_args, "--json", *inputs], cwd=where,
                             capture_output=True)
        self.assertEqual(run.returncode, 0, run.stderr)
        with cwd(where), equishard.simulate(list(inputs) or None, **kwargs) as s:
            s.write_json(out)
        with open(out, "rb") as f:
            self.assertEqual(f.read(), run.stdout)
        return json.loads(run.stdout)

    def test_simulate_json(self):
        L = ["shards/shards.list"]
        self.assert_same_simulate(["--loader", "cosyvoice", "-k", "2", "-w", "2", "-e", "0:3",
                                   "--seed", "5"], L, loader="cosyvoice", world_size=2,
                                  workers=2, epochs=(0, 3), seed=5)
        self.assert_same_simulate(["--loader", "wenet", "-k", "2", "-w", "2", "--batch-size", "4"],
                                  L, loader="wenet", world_size=2, workers=2, batch_size=4)
        self.assert_same_simulate(["--loader", "cosyvoice", "-k", "2", "--no-list-shuffle",
                                   "--no-partition", "--no-plan", "--shuffle-size", "0",
                                   "--min-length", "0", "--trials", "3"], L, loader="cosyvoice",
                                  world_size=2, list_shuffle=0, partition=0, plan_side=0,
                                  shuffle_size=0, min_length=0, trials=3)
        self.assert_same_simulate(["--loader", "wenet", "-k", "4", "--root", CORPUS],
                                  [os.path.join(CORPUS, "raw.list")], where=self.tmp,
                                  loader="wenet", world_size=4, root=CORPUS)

    def test_simulate_workers_0_is_1(self):
        """--workers 0 reads as 1 (no DataLoader workers): workers=0 too."""
        j = self.assert_same_simulate(["--loader", "cosyvoice", "-k", "2", "-w", "0"],
                                      ["shards/shards.list"], loader="cosyvoice", world_size=2,
                                      workers=0)
        self.assertEqual(j["parameters"]["workers"], 1)

    def test_simulate_a_plan_without_inputs(self):
        """--plan OUTDIR with no inputs replays plan.json's inputs (shard) or
        OUTDIR/data.list (reshard); simulate(plan=...) without a table too."""
        for args in (["-k", "2", "-w", "2"], ["-k", "2", "--mode", "reshard", "--min-length", "0"]):
            out = self.outdir()
            subprocess.run([CLI, "plan", "-q", *args, "-o", out, "shards/shards.list"],
                           cwd=CORPUS, check=True, capture_output=True)
            self.assert_same_simulate(["--loader", "cosyvoice", "--plan", out, "-e", "0:1"], [],
                                      loader="cosyvoice", plan=out, epochs=2)

    def test_describe_json(self):
        run = subprocess.run([CLI, "describe", "--json", "--min-length", "0", "--root", CORPUS,
                              os.path.join(CORPUS, "shards", "shards.list")], cwd=self.tmp,
                             capture_output=True, text=True)
        self.assertEqual(run.returncode, 0, run.stderr)
        with cwd(self.tmp):
            got = equishard.describe([os.path.join(CORPUS, "shards", "shards.list")],
                                     min_length=0, root=CORPUS)
        self.assertEqual(got, json.loads(run.stdout))

    # ---- refusals ---------------------------------------------------------------

    def assert_same_refusal(self, command, cli_args, call, where=CORPUS, names=None):
        """The CLI exits 2; the call raises ValueError, or equishard.Error whose
        message is the CLI's line (after "equishard[ command]: "). names: a
        value the CLI's option parser refuses before any library call ("bad
        value 'X' for --flag: ..."); the binding's message names the parameter."""
        run = subprocess.run([CLI, command, "-q", *cli_args], cwd=where, capture_output=True,
                             text=True)
        self.assertEqual(run.returncode, 2, (cli_args, run.stderr))
        with cwd(where), self.assertRaises((ValueError, equishard.Error)) as e:
            call()
        if names is not None:
            self.assertIn("bad value", run.stderr)
            self.assertIn(names, str(e.exception))
        elif isinstance(e.exception, equishard.Error):
            line = run.stderr.strip().splitlines()[0]
            self.assertTrue(line.endswith(e.exception.message), (line, e.exception.message))

    def test_refusals_match(self):
        out = os.path.join(self.tmp, "refused")
        L = ["shards/shards.list"]
        for cli_args, kwargs in (
                (["-k", "4", "-w", "2"], dict(world_size=4, workers=2)),
                (["-k", "2", "--min-length", "1e9"], dict(world_size=2, min_length=1e9)),
                (["-k", "2", "--mode", "reshard", "--compress", "snappy"],
                 dict(world_size=2, mode="reshard", compress="snappy")),
                (["-k", "1", "-w", "64", "--mode", "batch"],
                 dict(world_size=1, workers=64, mode="batch"))):
            with self.subTest(cli_args):
                def call(kwargs=kwargs):
                    with equishard.plan(L, **kwargs) as p:
                        p.write(out)
                self.assert_same_refusal("plan", [*cli_args, "-o", out, *L], call)
        self.assert_same_refusal("plan", ["-k", "2", "--mode", "reshard", "-o", out, "raw.list"],
                                 lambda: equishard.plan(["raw.list"], 2, mode="reshard").write(out))
        self.assert_same_refusal("plan", ["-k", "2", "-o", out, "missing.list"],
                                 lambda: equishard.plan(["missing.list"], 2))
        self.assertFalse(os.path.exists(out))
        for cli_args, kwargs, name in ((["--epochs", "3:1"], dict(epochs=(3, 1)), "epoch_first"),
                                       (["--trials", "0"], dict(trials=0), "trials"),
                                       (["-k", "0"], dict(world_size=0), "world_size")):
            with self.subTest(cli_args):
                args = ["--loader", "cosyvoice", "-k", "2", *cli_args, *L]
                self.assert_same_refusal(
                    "simulate", args,
                    lambda kwargs=kwargs: equishard.simulate(L, **dict(dict(world_size=2),
                                                                       **kwargs)), names=name)


if __name__ == "__main__":
    unittest.main()
