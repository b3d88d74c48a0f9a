"""The Python binding against independent sources: the corpus's soxi truth
(tests/fixtures/corpus_a/truth.tsv), the files and JSON the CLI writes for the
same inputs, and matrices with planted bad rows.

Run by meson (tests/meson.build: EQUISHARD_LIB, PYTHONPATH, ES_BUILD_ROOT,
ES_FIXTURES); by hand: PYTHONPATH=python python3 -m unittest discover tests/python
"""
import array
import ctypes
import gc
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import unittest

import equishard

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.environ.get("ES_SOURCE_ROOT", os.path.join(HERE, "..", ".."))
BUILD = os.environ.get("ES_BUILD_ROOT", os.path.join(ROOT, "build"))
CORPUS = os.path.join(os.environ.get("ES_FIXTURES", os.path.join(ROOT, "tests", "fixtures")),
                      "corpus_a")
CLI = os.environ.get("EQUISHARD_CLI", os.path.join(BUILD, "tools", "equishard", "equishard"))
SHARDS = os.path.join(CORPUS, "shards", "shards.list")


def cli(*args, cwd=None):
    return subprocess.run([CLI, *args], check=True, capture_output=True, text=True, cwd=cwd).stdout


def truth():
    with open(os.path.join(CORPUS, "truth.tsv"), encoding="utf-8") as f:
        head = f.readline().rstrip("\n").split("\t")
        return {r["key"]: r for r in (dict(zip(head, line.rstrip("\n").split("\t"))) for line in f)}


class Base(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="es-py-")
        self.addCleanup(shutil.rmtree, self.tmp)

    def assert_same_files(self, mine, theirs):
        """Both folders hold the same file names, each with the same bytes."""
        self.assertEqual(sorted(os.listdir(mine)), sorted(os.listdir(theirs)))
        for name in os.listdir(theirs):
            with open(os.path.join(mine, name), "rb") as a, open(os.path.join(theirs, name), "rb") as b:
                self.assertEqual(a.read(), b.read(), name)

    def costs(self):
        """The shard corpus measured by the binding, and the same table as a file."""
        table = equishard.measure([SHARDS], root=CORPUS)
        self.addCleanup(table.close)
        path = os.path.join(self.tmp, "costs.tsv")
        table.write(path)
        return table, path


class MeasureTest(Base):
    def test_rows_equal_soxi_truth(self):
        want = truth()
        for lists in ([SHARDS], [os.path.join(CORPUS, "kaldi")]):
            with equishard.measure(lists, root=CORPUS, threads=2) as t:
                self.assertEqual(len(t), 60)
                self.assertEqual(sorted(r.key for r in t), sorted(want))
                for r in t:
                    w = want[r.key]
                    self.assertEqual((r.sample_rate, r.channels, r.samples),
                                     (int(w["sample_rate"]), int(w["channels"]), int(w["num_samples"])), r.key)
                    self.assertEqual(r.text_len, int(w["text_chars"]), r.key)
                    self.assertIn("audio", r.flag_names)
                if "kaldi" in lists[0]:
                    self.assertEqual({r.key: r.spk for r in t}, {k: w["spk"] for k, w in want.items()})

    def test_write_read_round_trip_and_cli_bytes(self):
        table, path = self.costs()
        back = equishard.CostTable.read(path)
        self.assertEqual(list(back), list(table))
        self.assertEqual(back[-1], table[59])
        with self.assertRaises(IndexError):
            back[60]
        back.close()
        with self.assertRaises(ValueError):
            len(back)  # closed
        mine = os.path.join(self.tmp, "cli.tsv")
        cli("measure", "--quiet", "--root", CORPUS, "-o", mine, SHARDS)
        with open(path, "rb") as a, open(mine, "rb") as b:
            self.assertEqual(a.read(), b.read())
        # hashed and compressed: the same bytes as `measure --hash -o x.tsv.zst`
        hashed, mine = os.path.join(self.tmp, "h.tsv.zst"), os.path.join(self.tmp, "cli-h.tsv.zst")
        with equishard.measure(SHARDS, root=CORPUS, hash=True) as t:
            self.assertTrue(all("hashed" in r.flag_names and r.hash for r in t))
            self.assertEqual(len({r.hash for r in t}), 60)
            t.write(hashed)
        cli("measure", "--quiet", "--hash", "--root", CORPUS, "-o", mine, SHARDS)
        with open(hashed, "rb") as a, open(mine, "rb") as b:
            self.assertEqual(a.read(), b.read())

    def test_errors_are_exceptions_with_status_and_message(self):
        with self.assertRaises(equishard.Error) as e:
            equishard.measure([os.path.join(self.tmp, "missing.list")])
        self.assertEqual(e.exception.status, "ES_ERR_IO")
        self.assertIn("missing.list", e.exception.message)
        table, _ = self.costs()
        with self.assertRaises(equishard.Error) as e:
            equishard.plan(table, world_size=0)
        self.assertEqual(e.exception.status, "ES_ERR_USAGE")
        with open(SHARDS) as f:  # the shards the list names
            n = sum(1 for line in f if line.strip())
        with self.assertRaises(equishard.Error) as e:  # an empty rank or worker
            equishard.plan(table, world_size=n, workers=2)
        self.assertEqual(e.exception.status, "ES_ERR_USAGE")
        self.assertIn(f"{n} shards for {2 * n} rank×worker slots", e.exception.message)
        with self.assertRaises(TypeError):
            equishard.plan(table, world_size=2, no_such_setting=1)

    def test_skip_lists_bad_shards(self):
        bad = os.path.join(self.tmp, "bad.list")
        with open(bad, "w") as f:
            f.write(os.path.join(CORPUS, "shards", "shards_000000000.tar") + "\n")
            f.write(os.path.join(self.tmp, "gone.tar") + "\n")
        with equishard.measure([bad], on_error="skip") as t:
            self.assertEqual(len(t), 16)
            self.assertEqual(len(t.skips), 1)
            self.assertIn("gone.tar", t.skips[0])


class PlanTest(Base):
    def read(self, *parts):
        with open(os.path.join(*parts), encoding="utf-8") as f:
            return f.read()

    def test_shard_mode_lists_equal_cli_files(self):
        table, path = self.costs()
        outdir = os.path.join(self.tmp, "cli-plan")
        # the table's shard paths are relative to CORPUS (measured with root=CORPUS)
        cli("plan", "--world-size", "2", "--workers", "2", "--min-length", "10", "--root", CORPUS,
            "-o", outdir, path)
        with equishard.plan(table, world_size=2, workers=2, min_length=10, root=CORPUS) as p:
            for r in range(2):
                self.assertEqual("".join(s + "\n" for s in p.shards(r)),
                                 self.read(outdir, f"rank-{r:05d}.list"))
                for w in range(2):
                    self.assertEqual("".join(s + "\n" for s in p.shards(r, w)),
                                     self.read(outdir, f"rank-{r:05d}.worker-{w}.list"))
            doc = json.loads(self.read(outdir, "plan.json"))
            m = doc["metrics"]
            self.assertAlmostEqual(p.metrics.imbalance, m["imbalance"], places=5)
            self.assertEqual((p.metrics.kept, p.metrics.method), (m["kept"], m["method"]))
            self.assertEqual(p.metrics.filtered_by_reason, m["filtered"])
            self.assertEqual([(l.utterances, l.frames, l.batches) for l in p.loads],
                             [(r["utterances"], r["frames"], r["batches"]) for r in doc["ranks"]])
            self.assertEqual(p.batches(0), [])
            mine = os.path.join(self.tmp, "py-plan")
            p.write(mine, inputs=[path])
            for name in os.listdir(outdir):
                if name != "plan.json":
                    self.assertEqual(self.read(mine, name), self.read(outdir, name), name)

    def test_batch_mode_batches_equal_cli_jsonl(self):
        table, path = self.costs()
        outdir = os.path.join(self.tmp, "cli-batch")
        cli("plan", "--world-size", "2", "--workers", "2", "--mode", "batch", "--min-length", "10",
            "--remainder", "carry", "--seed", "3", "--root", CORPUS, "-o", outdir, path)
        p = equishard.plan(path, world_size=2, workers=2, mode="batch", min_length=10,
                           remainder="carry", seed=3, root=CORPUS)  # a path: loaded, owned by the plan
        for r in range(2):
            want = [json.loads(line) for line in self.read(outdir, f"rank-{r:05d}.batches.jsonl").splitlines()]
            got = p.batches(r)
            self.assertEqual(len(got), len(want))
            for b, w in zip(got, want):
                self.assertEqual((b.step, b.worker, b.frames, b.keys), (w["step"], w["worker"], w["frames"], w["keys"]))
                self.assertEqual([list(i) for i in b.items], w["items"])
                self.assertAlmostEqual(b.cost, w["cost"], delta=abs(w["cost"]) * 1e-5)
        rem = [r.key for r in p.remainder()]
        if rem:
            self.assertEqual(rem, [l.split("\t")[0] for l in self.read(outdir, "remainder.tsv").splitlines()[1:]])
        self.assertEqual(p.metrics.remainder_utterances, len(rem))
        self.assertEqual(p.shards(0), [])
        # written without inputs=: plan.json names the path the plan was loaded
        # from, as the CLI's does, so the whole OUTDIR is the CLI's byte for byte
        mine = os.path.join(self.tmp, "py-batch")
        p.write(mine)
        self.assert_same_files(mine, outdir)
        self.assertEqual([i["path"] for i in json.loads(self.read(mine, "plan.json"))["inputs"]], [path])
        p.close()
        p.close()  # twice is fine

    def test_compressed_ahead_batch_plan_is_the_cli_outdir(self):
        """CostTable.compress_ahead, as the CLI's batch mode does: costs.tsv.zst and
        every other file the CLI's, byte for byte; a table closed while its
        compression may still run is fine (es_cost_table_free waits for it)."""
        _, path = self.costs()
        outdir = os.path.join(self.tmp, "cli-batch")
        cli("plan", "--world-size", "2", "--mode", "batch", "--min-length", "10", "--root", CORPUS,
            "-o", outdir, path)
        with equishard.load([path]) as t:
            t.compress_ahead()
            t.compress_ahead()  # once is enough; again changes nothing
            mine = os.path.join(self.tmp, "py-batch")
            with equishard.plan(t, world_size=2, mode="batch", min_length=10, root=CORPUS) as p:
                p.write(mine, inputs=[path])
        self.assert_same_files(mine, outdir)
        equishard.load([path]).compress_ahead()  # dropped at once, thread or not
        gc.collect()
        closed = equishard.load([path])
        closed.close()
        with self.assertRaises(ValueError):
            closed.compress_ahead()

    def test_table_outlives_its_plans(self):
        table = equishard.measure([SHARDS], root=CORPUS)
        p = equishard.plan(table, world_size=2)
        table.close()  # deferred: the plan still borrows it
        self.assertEqual(len(p.shards(0)) + len(p.shards(1)), 4)
        p.close()
        with self.assertRaises(ValueError):
            len(table)


class SimulateTest(Base):
    def test_metrics_equal_cli_json(self):
        table, path = self.costs()
        doc = json.loads(cli("simulate", "--loader", "cosyvoice", "--world-size", "2", "--workers", "2",
                             "--epochs", "0:2", "--min-length", "10", "--json", path))
        with equishard.simulate(table, "cosyvoice", world_size=2, workers=2, epochs=3, min_length=10) as r:
            self.assertEqual((r.input.entries, r.input.utterances, r.input.kept, r.input.frames),
                             tuple(doc["input"][k] for k in ("entries", "utterances", "kept", "frames")))
            self.assertEqual(len(r.epochs), 3)
            for e, w in zip(r.epochs, doc["epochs"]):
                self.assertEqual(e.epoch, w["epoch"])
                self.assertAlmostEqual(e.min_batches, w["min_batches"], places=5)
                self.assertAlmostEqual(e.retention, w["retention"], places=5)
                for rank, wr in zip(e.ranks, w["ranks"]):
                    self.assertEqual(rank.shards, wr["shards"])
                    self.assertEqual((rank.utterances, rank.frames), (wr["utterances"], wr["frames"]))
                    self.assertAlmostEqual(rank.batches, wr["batches"], places=5)
                    self.assertEqual([x.frames for x in rank.workers], [x["frames"] for x in wr["workers"]])
            for sp in r.plans:
                want = doc["plan"][sp.mode]
                self.assertTrue(sp.available)
                self.assertAlmostEqual(sp.metrics.imbalance, want["imbalance"], places=5)
                self.assertEqual([l.batches for l in sp.ranks], [x["batches"] for x in want["ranks"]])
            mine = os.path.join(self.tmp, "sim.json")
            r.write_json(mine)
            with open(mine) as f:
                self.assertEqual(json.load(f)["epochs"], doc["epochs"])


class ValidateTest(Base):
    def test_sources_equal_cli_json(self):
        kaldi = os.path.join(CORPUS, "kaldi")
        args = dict(utt_emb=os.path.join(kaldi, "utt2embedding.pt"),
                    spk_emb=os.path.join(kaldi, "spk2embedding.pt"), device="cpu")
        report = os.path.join(self.tmp, "v.json")
        subprocess.run([CLI, "validate", "--device", "cpu", "--utt-emb", args["utt_emb"], "--spk-emb",
                        args["spk_emb"], "--world-size", "2", "--root", CORPUS, "--json", report, kaldi], capture_output=True)
        with open(report) as f:
            doc = json.load(f)
        with equishard.validate([kaldi], root=CORPUS, world_size=2, **args) as v:
            self.assertEqual(v.info.utt_rows, 60)
            self.assertEqual(v.info.spk_rows, 6)
            self.assertEqual(v.counts["missing_utt_emb"], 0)
            self.assertGreater(v.counts["filtered"], 0)  # CosyVoice 2's 1 s minimum
            self.assertEqual(v.counts, {k: doc["counts"][k] for k in v.counts})
            self.assertEqual(len(v.findings), sum(v.counts.values()))


class ValidateTensorTest(Base):
    N, D = 12, 16

    def matrix(self):
        """Unit rows in distinct directions, then NaN in row 2, zero row 5, row 7 at norm 40."""
        m = array.array("f", [0.0] * (self.N * self.D))
        for i in range(self.N):
            for j in range(self.D):
                m[i * self.D + j] = math.cos(0.3 * (i + 1) * (j + 1)) / math.sqrt(self.D / 2)
        m[2 * self.D + 3] = float("nan")
        for j in range(self.D):
            m[5 * self.D + j] = 0.0
            m[7 * self.D + j] *= 40
        return m

    def test_planted_rows_found_exactly(self):
        m = self.matrix()
        keys = [f"u{i}" for i in range(self.N)]
        with equishard.validate_tensor(m, self.N, self.D, keys=keys, min_cosine=-2) as v:
            self.assertEqual(v.rows("nan"), [2])
            self.assertEqual(v.rows("zero_norm"), [5])
            self.assertEqual(v.rows("abnormal_norm"), [7])
            self.assertEqual([f.key for f in v.findings if f.check == "nan"], ["u2"])
            self.assertEqual(v.info.device, "cpu")
            self.assertEqual(v.info.utt_rows, self.N)
        # the same buffer through a ctypes array over its address; wrong expected dim
        raw = (ctypes.c_float * len(m)).from_address(m.buffer_info()[0])
        with equishard.validate_tensor(raw, self.N, self.D, expected_dim=192) as v:
            self.assertEqual(v.rows("wrong_dim"), list(range(self.N)))
            self.assertEqual(v.counts["nan"], 0)  # wrong_dim rows get no other check

    def test_speakers_and_duplicates(self):
        m = self.matrix()
        m[9 * self.D:10 * self.D] = m[8 * self.D:9 * self.D]  # row 9 repeats row 8
        spk = [0] * 6 + [1] * 6
        with equishard.validate_tensor(m, self.N, self.D, speakers=spk, min_cosine=-2) as v:
            dup = [f for f in v.findings if f.check == "duplicate_vector"]
            self.assertEqual([(f.row, f.other_row) for f in dup], [(9, 8)])

    def test_cuda_without_a_device_is_an_error(self):
        with equishard.validate_tensor(self.matrix(), self.N, self.D, device="auto") as v:
            if v.info.device == "cuda":
                self.skipTest("a CUDA device is present: device memory is the GPU check's")
        with self.assertRaises(equishard.Error) as e:
            equishard.validate_tensor(self.matrix(), self.N, self.D, device="cuda")
        self.assertEqual(e.exception.status, "ES_ERR_UNSUPPORTED")


class GilTest(Base):
    def test_a_long_call_lets_other_threads_run(self):
        """ctypes.CDLL releases the GIL around foreign calls (docs/PYTHON.md): while
        one thread is inside a long library call (Tokenizer.count of a text sized
        to take about a second), the main thread keeps running Python. Held, the
        main thread would stop for the whole call: the longest gap between its
        loop's iterations would be the call's length. (This test once blocked a
        thread in open() on a FIFO named as an embedding source; such a source is
        now refused without blocking, as audio and shards are.) Run in a child
        with a timeout."""
        units = os.path.join(self.tmp, "units.txt")
        with open(units, "w", encoding="utf-8") as f:
            f.write("<blank> 0\n<unk> 1\na 2\nb 3\n")
        code = textwrap.dedent("""
            import sys, threading, time, equishard
            tok = equishard.Tokenizer(symbol_table=sys.argv[1])
            text = "ab" * 200000
            t0 = time.perf_counter()
            tok.count(text)
            scale = max(1, int(1.0 / max(time.perf_counter() - t0, 1e-4)))
            text = text * scale            # about one second of library time
            looping = threading.Event()
            done = threading.Event()
            span = []
            def run():
                looping.wait()    # the main thread is in its loop before the call starts
                time.sleep(0.05)
                t = time.perf_counter()
                tok.count(text)
                span.append(time.perf_counter() - t)
                done.set()
            th = threading.Thread(target=run)
            th.start()
            last, gap = time.perf_counter(), 0.0
            looping.set()
            while not done.is_set():
                now = time.perf_counter()
                gap, last = max(gap, now - last), now
            th.join()
            print(span[0], gap)
            assert span[0] > 0.3, "the call was too short to tell: %.3f s" % span[0]
            assert gap < span[0] / 2, "the main thread stopped %.3f s of a %.3f s call" % (gap, span[0])
        """)
        subprocess.run([sys.executable, "-c", code, units], check=True, timeout=120)


class RepeatedCallsTest(Base):
    """Every call many times, objects closed or dropped: what the leak check
    (tests/python/leak_check.sh, ASan build) runs to find unfreed C objects."""
    ROUNDS = int(os.environ.get("ES_PY_ROUNDS", "5"))

    def test_repeated_calls_free_everything(self):
        _, path = self.costs()
        m = ValidateTensorTest.matrix(ValidateTensorTest())
        for i in range(self.ROUNDS):
            t = equishard.CostTable.read(path)
            with equishard.plan(t, world_size=2, workers=2) as p:
                p.shards(1, 0)
            b = equishard.plan(t, world_size=3, mode="batch", remainder="drop")
            b.batches(2)
            del b  # dropped, not closed: __del__ frees it and unpins the table
            equishard.simulate(t, world_size=2, epochs=2)  # never closed
            self.assertEqual(equishard.describe(t)["utterances"], len(t))  # its text freed
            equishard.validate_tensor(m, 12, 16, keys=[str(k) for k in range(12)])
            with self.assertRaises(equishard.Error):
                equishard.plan(t, world_size=2, mode="reshard", compress="zstd").write(self.tmp + "/x/y")
            t.close()
        equishard.validate([os.path.join(CORPUS, "kaldi")], root=CORPUS,
                           utt_emb=os.path.join(CORPUS, "kaldi", "utt2embedding.pt"))
        gc.collect()


if __name__ == "__main__":
    unittest.main()
