"""equishard.calibrate, cost_model= and equishard.loaders.step_log (docs/COST_MODEL.md).

Step times are made up here from corpus_a's truth.tsv (soxi's sample counts,
not equishard's) by a known formula and Python's seeded random; calibrate must
give the formula back. The step log is read back as plain JSON lines."""
import json
import os
import random
import re
import time
import unittest
from unittest import mock

import equishard
from equishard import loaders
from equishard.calibrate import read_model, term_names
from test_binding import CORPUS, Base, truth

A, B, C = 1e-4, 4e-7, 0.03  # seconds per padded frame, per padded frame², per batch


def write_log(path, seed=3, steps=300, noise=0.01):
    rows = list(truth().values())
    rng = random.Random(seed)
    with open(path, "w") as f:
        for step in range(steps):
            batch = rng.sample(rows, rng.randint(1, 10))
            longest = max(int(r["num_samples"]) * 50 // int(r["sample_rate"]) for r in batch)
            n = len(batch)
            t = (A * n * longest + B * n * longest ** 2 + C) * (1 + rng.gauss(0, noise))
            f.write(json.dumps({"rank": step % 2, "step": step // 2, "keys": [r["key"] for r in batch],
                                "seconds": t, "ignored": {"x": 1}}) + "\n")


class CalibrateTest(Base):
    def setUp(self):
        super().setUp()
        self.table = equishard.measure([os.path.join(CORPUS, "kaldi")], root=CORPUS)
        self.addCleanup(self.table.close)
        self.log = os.path.join(self.tmp, "steps.jsonl")
        write_log(self.log)

    def test_recovers_the_formula(self):
        with equishard.calibrate(self.table, [self.log]) as cal:
            w = cal.weights
            for name, true in (("w_frames", A), ("w_frames_sq", B), ("w_batch", C)):
                self.assertAlmostEqual(w[name] / true, 1, delta=0.05, msg=(name, w[name]))
            self.assertLess(cal.info.median_error, 0.05)
            self.assertEqual(cal.info.steps_read, 300)
            self.assertEqual(cal.info.warmup_dropped, 6)
            self.assertEqual([t.name for t in cal.terms], term_names())
            self.assertEqual(term_names()[-1], "w_batch")
            out = os.path.join(self.tmp, "model.json")
            cal.write_json(out, inputs=[])
            model = read_model(out)
        self.assertEqual(model["w_frames_sq"], w["w_frames_sq"])
        self.assertEqual(model["source"], out)
        with open(out) as f:
            doc = json.load(f)
        self.assertEqual(doc["format"], "equishard-cost-model v1")
        self.assertEqual(doc["provenance"]["logs"][0]["lines"], 300)

    def test_terms_restrict_the_fit(self):
        with equishard.calibrate(self.table, self.log, terms=["frames", "batch"]) as cal:
            self.assertEqual(cal.weights["w_frames_sq"], 0)
            self.assertFalse(cal.terms[1].fitted)
        with self.assertRaisesRegex(ValueError, "cubic"):
            equishard.calibrate(self.table, self.log, terms=["cubic"])

    def test_refusals_name_file_and_line(self):
        bad = os.path.join(self.tmp, "bad.jsonl")
        with open(bad, "w") as f:
            f.write('{"rank": 0, "step": 0, "keys": ["no-such-key"], "seconds": 1}\n')
        with self.assertRaisesRegex(equishard.Error, r"bad.jsonl:1: key 'no-such-key' is not in the cost table"):
            equishard.calibrate(self.table, bad)

    def test_a_fit_worse_than_the_mean_is_refused_unless_allowed(self):
        """One step of 1e-20 s drags the relative fit to ~0: the held-out R² is
        negative, an error naming it, unless allow_negative_r2."""
        tiny = os.path.join(self.tmp, "tiny.jsonl")
        with open(self.log) as f, open(tiny, "w") as out:
            for i, line in enumerate(f):
                d = json.loads(line)
                out.write(json.dumps({**d, "seconds": 1e-20 if i == 10 else d["seconds"]}) + "\n")
        with self.assertRaisesRegex(equishard.Error, r"held-out R\^2 is -[0-9.]+: .*1e-20 to"):
            equishard.calibrate(self.table, tiny)
        with equishard.calibrate(self.table, tiny, allow_negative_r2=True) as cal:
            self.assertLess(cal.info.r2_held_out, 0)

    def test_keys_as_the_step_log_writes_them_and_ambiguous_keys(self):
        """Keys that are not UTF-8 reach the step log as json.dumps writes a
        surrogateescape string (\\udcXX; an astral character as a surrogate
        pair whose low half is \\udc80): calibrate joins them to the table's
        bytes. A key the table names twice is refused where a step uses it,
        naming both rows."""
        import io
        import subprocess
        import tarfile
        from equishard.loaders.step_log import _Writer
        from test_binding import CLI
        keys = ["caf\udce9", "ok-\u00e9", "\udced\udca0\udc80", "plain", "x\U0001f080y", "twice"]
        rows = [truth()[f"A01_{i:04d}"] for i in range(1, len(keys) + 1)]
        shards = [os.path.join(self.tmp, "a.tar"), os.path.join(self.tmp, "b.tar")]
        for path, members in ((shards[0], list(zip(keys, rows))), (shards[1], [("twice", rows[0])])):
            with tarfile.open(path, "w", format=tarfile.USTAR_FORMAT, encoding="utf-8",
                              errors="surrogateescape") as t:
                for key, row in members:
                    with open(os.path.join(CORPUS, row["path"]), "rb") as f:
                        wav = f.read()
                    for name, data in ((key + ".txt", b"some words"), (key + ".wav", wav)):
                        info = tarfile.TarInfo(name)
                        info.size = len(data)
                        t.addfile(info, io.BytesIO(data))
        listing = os.path.join(self.tmp, "data.list")
        with open(listing, "w") as f:
            f.write("".join(s + "\n" for s in shards))
        costs = os.path.join(self.tmp, "costs.tsv")
        subprocess.run([CLI, "measure", "-q", "-o", costs, listing], check=True)
        frames = {k: int(r["num_samples"]) * 50 // int(r["sample_rate"]) for k, r in zip(keys, rows)}
        logdir = os.path.join(self.tmp, "log")
        log = _Writer(logdir, 0)  # the loaders' own step log writes the lines
        rng = random.Random(5)
        for _ in range(200):
            batch = rng.sample(keys[:5], rng.randint(1, 5))
            t = (A * len(batch) * max(frames[k] for k in batch) + C) * (1 + rng.gauss(0, 0.005))
            log.write({"keys": batch}, t, t)
        log.file.close()
        with open(log.path) as f:
            text = f.read()
        self.assertIn('"caf\\udce9"', text)
        self.assertIn('"x\\ud83c\\udc80y"', text)
        with equishard.calibrate(costs, [log.path], terms=["frames", "batch"]) as cal:
            self.assertEqual(cal.info.steps_read, 200)
            self.assertAlmostEqual(cal.weights["w_frames"] / A, 1, delta=0.05)
        twice = os.path.join(self.tmp, "twice.jsonl")
        with open(twice, "w") as f:
            f.write(json.dumps({"rank": 0, "step": 0, "keys": ["plain", "twice"], "seconds": 1}) + "\n")
        with self.assertRaisesRegex(equishard.Error, re.escape(
                f"twice.jsonl:1: key 'twice' names two rows of the cost table ({shards[0]} pos 5 and "
                f"{shards[1]} pos 0)")):
            equishard.calibrate(costs, [twice])

    def test_cost_model_for_plan_and_simulate(self):
        out = os.path.join(self.tmp, "model.json")
        with equishard.calibrate(self.table, self.log) as cal:
            cal.write_json(out)
            w = cal.weights
        with equishard.plan(self.table, world_size=2, mode="batch", cost_model=out, min_length=0) as p:
            for b in p.batches(0):
                self.assertGreater(b.cost, w["w_batch"])  # seconds, not frames
            plan_dir = os.path.join(self.tmp, "plan")
            p.write(plan_dir)
        with open(os.path.join(plan_dir, "plan.json")) as f:
            cm = json.load(f)["parameters"]["cost_model"]
        self.assertEqual(cm["source"]["path"], out)
        # keywords after the model override it
        with equishard.plan(self.table, world_size=2, mode="batch", cost_model=out, w_batch=0,
                            min_length=0) as p:
            self.assertLess(p.batches(0)[0].cost, w["w_batch"] + 1e9)
        sim = equishard.simulate(self.table, world_size=2, cost_model=out, min_length=0)
        st = sim.epochs[0].step_time
        self.assertGreaterEqual(st["straggler"], 1)
        self.assertEqual(len(st["ranks"]), 2)
        self.assertGreaterEqual(st["epoch_seconds"], st["ideal_seconds"])
        sim.close()
        with equishard.validate(self.table, cost_model=out, min_length=0, world_size=2) as v:
            self.assertEqual(v.counts["filtered"], 0)
        with self.assertRaisesRegex(equishard.Error, "not a cost model|not JSON"):
            equishard.plan(self.table, world_size=2, cost_model=self.log)


def read_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


class StepLogTest(Base):
    def batches(self):
        for i in range(5):
            yield {"utts": [f"u{i}", f"v{i}"], "speech_feat": _Shape((2, 10 + i, 80))}

    def test_logs_each_step_in_the_training_process(self):
        logged = loaders.step_log(list(self.batches()), os.path.join(self.tmp, "log"))
        for _ in logged:
            time.sleep(0.01)  # the trainer's step
        lines = read_jsonl(os.path.join(self.tmp, "log", "steps-rank-00000.jsonl"))
        self.assertEqual([x["step"] for x in lines], [0, 1, 2, 3, 4])
        self.assertEqual(lines[2]["keys"], ["u2", "v2"])
        self.assertEqual(lines[2]["shape"], {"speech_feat": [2, 12, 80]})
        self.assertTrue(all(x["seconds"] >= 0.009 and x["rank"] == 0 for x in lines), lines)

    def test_equal_steps_logs_with_the_environment(self):
        folder = os.path.join(self.tmp, "env")
        with mock.patch.dict(os.environ, {"EQUISHARD_STEP_LOG": folder, "RANK": "3"}):
            n = sum(1 for _ in loaders.equal_steps(list(self.batches())))
            n += sum(1 for _ in loaders.equal_steps(list(self.batches())))  # a second epoch appends
        lines = read_jsonl(os.path.join(folder, "steps-rank-00003.jsonl"))
        self.assertEqual(n, 10)
        self.assertEqual([x["step"] for x in lines], list(range(10)))
        self.assertEqual({x["epoch"] for x in lines}, {0, 1})

    def test_off_without_a_folder(self):
        with mock.patch.dict(os.environ, {}, clear=False):
            os.environ.pop("EQUISHARD_STEP_LOG", None)
            self.assertEqual(len(list(loaders.step_log(list(self.batches())))), 5)
        self.assertEqual(os.listdir(self.tmp), [])


class _Shape:
    """A tensor's .shape, without torch."""

    def __init__(self, shape):
        self.shape = shape


if __name__ == "__main__":
    unittest.main()
