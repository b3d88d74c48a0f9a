"""es_plan_dir_open, the one reader of a plan OUTDIR, against Python's json
reading the same plan.json: OUTDIRs of every mode written by the CLI, and its
refusals (a newer schema, a truncated file, a rank file missing), each one line
naming the file."""
import json
import os
import shutil
import subprocess
import tempfile
import unittest

from equishard import core, loaders
from test_binding import CLI, ROOT

SAMPLES = os.path.join(ROOT, "data-samples")


class PlanDirTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="es-plandir-")
        cls.dirs = {}
        for mode, k, w, src in (("shard", 2, 1, "shards/data.list"), ("shard", 1, 2, "raw.list"),
                                ("batch", 2, 1, "shards/data.list"),
                                ("reshard", 2, 1, "parquet/data.list")):
            out = os.path.join(cls.tmp, f"{mode}-{k}-{w}-{src.split('/')[0]}")
            subprocess.run([CLI, "plan", "-q", "--mode", mode, "-k", str(k), "-w", str(w),
                            "--min-length", "10", "--seed", "5", "-o", out, src], cwd=SAMPLES,
                           check=True, stdout=subprocess.DEVNULL)
            cls.dirs[out] = mode

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def test_every_mode_as_json_reads_it(self):
        for out, mode in self.dirs.items():
            with self.subTest(out=out):
                with open(os.path.join(out, "plan.json"), encoding="utf-8") as f:
                    doc = json.load(f)
                p, m = doc["parameters"], doc["metrics"]
                d = core.read_plan_dir(out, check_files=True)
                self.assertEqual(d.format, doc["format"])
                self.assertEqual(d.equishard, doc["equishard"])
                self.assertEqual((d.mode, d.world_size, d.workers), (p["mode"], p["world_size"], p["workers"]))
                self.assertEqual((d.seed, d.epoch), (p["seed"] % 2**64, p["epoch"]))
                self.assertEqual(d.inputs, [(i["path"], int(i["xxh3"], 16)) for i in doc["inputs"]])
                for key in ("imbalance", "lower_bound", "lower_bound_gap", "step_straggler",
                            "retention", "batch_spread", "total_batches", "steps", "kept", "method"):
                    self.assertEqual(getattr(d.metrics, key), m[key], key)
                self.assertEqual(d.metrics.filtered_by_reason, m["filtered"])
                self.assertEqual(d.metrics.remainder_batches, m["remainder"]["batches"])
                self.assertEqual((d.unreadable_shards, d.unreadable_utterances),
                                 (m["unreadable"]["shards"], m["unreadable"]["utterances"]))
                self.assertEqual(d.has_reshard, int("reshard" in m))
                # what the loaders compare with the running recipe (PlanDir reads no JSON)
                tt = doc.get("text_tokens") or {}
                self.assertEqual((d.token_count, d.rows_without_tokens),
                                 (tt.get("count", "text_tokens"), tt.get("rows_without", 0)))
                self.assertEqual(d.recipe, (p.get("recipe") or {}).get("path") or "")
                strip = lambda r: {k: r[k] for k in ("cost", "utterances", "frames", "batches")}
                self.assertEqual([vars(r) for r in d.ranks], [strip(r) for r in doc["ranks"]])
                self.assertEqual([[vars(w) for w in ws] for ws in d.workers_loads],
                                 [[strip(w) for w in r["workers"]] for r in doc["ranks"]])
                names = sorted(os.path.basename(f) for f in d.files.values())
                want = sorted(f for f in os.listdir(out) if f.startswith("rank-"))
                self.assertEqual(names, want)  # the files the CLI wrote, no more
                self.assertTrue(all(os.path.dirname(f) == out for f in d.files.values()))

    def test_recipe_path_and_token_counts(self):
        """parameters.recipe.path and text_tokens as the loaders' PlanDir gets them
        (its "plan with --recipe" hint, its token-count refusal), from a plan.json
        that records a recipe."""
        src = next(o for o, m in self.dirs.items() if m == "batch")
        out = os.path.join(self.tmp, "with-recipe")
        shutil.copytree(src, out)
        path = os.path.join(out, "plan.json")
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        doc["parameters"]["recipe"] = {"path": "conf/cosyvoice2.yaml", "digest": "xxh3-64:0123456789abcdef",
                                       "loader": "cosyvoice", "speed_perturb": None}
        doc["text_tokens"].update(count="text_tokens", rows_without=7)
        with open(path, "w", encoding="utf-8") as f:
            json.dump(doc, f)
        p = loaders.PlanDir(out)
        self.assertEqual((p.recipe, p.token_count, p.rows_without_tokens),
                         ("conf/cosyvoice2.yaml", "text_tokens", 7))
        self.assertEqual(p.settings["batch_size"], doc["parameters"]["batch_size"])
        self.assertEqual(p.settings["min_length"], doc["parameters"]["filter"]["min_length"])

    def test_plan_settings_are_plan_jsons_parameters(self):
        """PlanDir.plan_settings (the loaders' rebuild of an epoch) from the reader
        equals plan.json's parameters as json reads them."""
        for out, mode in self.dirs.items():
            if mode == "reshard":
                continue
            with self.subTest(out=out):
                with open(os.path.join(out, "plan.json"), encoding="utf-8") as f:
                    p = json.load(f)["parameters"]
                want = dict(world_size=p["world_size"], workers=p["workers"], mode=p["mode"])
                want.update({k: v for k, v in p["cost_model"].items() if k != "source"})
                want.update(p["filter"], require_speech_token=int(p["filter"]["require_speech_token"]))
                want.update({k: p[k] for k in ("max_frames_in_batch", "batch_size", "sort_size",
                                               "remainder")}, seed=p["seed"] % 2**64)
                self.assertEqual(loaders.PlanDir(out).plan_settings(), want)

    def test_input_path_not_utf8(self):
        """An input whose name is not UTF-8 (written \\udcXX) is read back as its
        bytes: simulate --plan replays the plan from it."""
        work = tempfile.mkdtemp(dir=self.tmp)
        for name in sorted(os.listdir(os.path.join(SAMPLES, "shards"))):
            if name.endswith(".tar"):
                shutil.copy(os.path.join(SAMPLES, "shards", name), work)
        lst = os.path.join(os.fsencode(work), b"l\xe9st.list")
        with open(lst, "w") as f:
            f.writelines(n + "\n" for n in sorted(os.listdir(work)) if n.endswith(".tar"))
        subprocess.run([CLI, "plan", "-q", "-k", "2", "--min-length", "10", "-o", "p", lst],
                       cwd=work, check=True, stdout=subprocess.DEVNULL)
        d = core.read_plan_dir(os.path.join(work, "p"))
        self.assertEqual([os.fsencode(p) for p, _ in d.inputs], [lst])
        r = subprocess.run([CLI, "simulate", "-q", "--loader", "cosyvoice", "--plan", "p"],
                           cwd=work, capture_output=True, text=True)
        self.assertEqual((r.returncode, r.stderr), (0, ""))
        self.assertIn("list: 3 entries, 24 utterances", r.stdout)

    def copy(self, mode):
        src = next(o for o, m in self.dirs.items() if m == mode)
        dst = tempfile.mkdtemp(dir=self.tmp)
        shutil.rmtree(dst)
        shutil.copytree(src, dst)
        return dst

    def refused(self, out, line):
        with self.assertRaises(core.Error) as e:
            core.read_plan_dir(out, check_files=True)
        self.assertEqual(e.exception.message, line)
        with self.assertRaises(ValueError) as e:  # the loaders' PlanDir says the same
            loaders.PlanDir(out)
        self.assertEqual(str(e.exception), line)
        r = subprocess.run([CLI, "simulate", "--loader", "cosyvoice", "--plan", out],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 2)
        self.assertEqual(r.stderr, f"equishard simulate: {line}\n")

    def test_newer_schema_refused(self):
        out = self.copy("shard")
        path = os.path.join(out, "plan.json")
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        doc["format"] = 2
        with open(path, "w", encoding="utf-8") as f:
            json.dump(doc, f)
        self.refused(out, f"{path}: schema version 2 is newer than this equishard (1); upgrade")
        r = subprocess.run([CLI, "report", out], capture_output=True, text=True)
        self.assertEqual((r.returncode, r.stderr), (2, f"equishard report: {path}: schema "
                                                       "version 2 is newer than this equishard (1); upgrade\n"))

    def test_truncated_refused(self):
        out = self.copy("shard")
        path = os.path.join(out, "plan.json")
        with open(path, "rb") as f:
            text = f.read()
        with open(path, "wb") as f:
            f.write(text[: len(text) // 2])
        try:
            json.loads(text[: len(text) // 2])
        except json.JSONDecodeError:
            pass
        else:
            self.fail("half a plan.json is JSON")
        with self.assertRaises(core.Error) as e:
            core.read_plan_dir(out)
        self.assertEqual(e.exception.status, "ES_ERR_FORMAT")
        self.assertTrue(e.exception.message.startswith(f"{path}: line "), e.exception.message)
        self.assertNotIn("\n", e.exception.message)

    def test_missing_rank_file_refused(self):
        for mode, name in (("shard", "rank-00001.worker-0.list"), ("batch", "rank-00001.batches.jsonl")):
            with self.subTest(mode=mode):
                out = self.copy(mode)
                os.remove(os.path.join(out, name))
                core.read_plan_dir(out)  # plan.json alone is whole
                with self.assertRaises(core.Error) as e:
                    core.read_plan_dir(out, check_files=True)
                self.assertTrue(e.exception.message.startswith(f"{os.path.join(out, name)}: missing ("),
                                e.exception.message)
                with self.assertRaises(ValueError):
                    loaders.PlanDir(out)
        out = self.copy("shard")
        os.remove(os.path.join(out, "rank-00001.worker-0.list"))
        r = subprocess.run([CLI, "simulate", "-q", "--loader", "cosyvoice", "--plan", out],
                           capture_output=True, text=True, cwd=SAMPLES)
        self.assertEqual(r.returncode, 2)
        self.assertEqual(len(r.stderr.splitlines()), 1, r.stderr)
        self.assertIn(os.path.join(out, "rank-00001.worker-0.list") + ": missing", r.stderr)


if __name__ == "__main__":
    unittest.main()
