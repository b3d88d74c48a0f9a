"""equishard.loaders without torch (and with a stand-in torch module in a child
process): each rank and worker gets exactly its plan's entries, in plan order,
as the CLI's OUTDIR lists them."""
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import unittest
from unittest import mock

import equishard
from equishard import loaders
from test_binding import CLI, CORPUS, SHARDS

PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(equishard.__file__)))


def read_lines(path):
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f]


class LoadersTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="es-loaders-")
        cls.lists = read_lines(SHARDS)
        cls.shard = os.path.join(cls.tmp, "shard")
        cls.batch = os.path.join(cls.tmp, "batch")
        cls.raw = os.path.join(cls.tmp, "raw")
        for out, args in ((cls.shard, []), (cls.batch, ["--mode", "batch"]), (cls.raw, [])):
            subprocess.run([CLI, "plan", "--world-size", "2", "--workers", "2", "--min-length", "10",
                            *args, "-o", out, "raw.list" if out == cls.raw else "shards/shards.list"],
                           cwd=CORPUS, check=True, stdout=subprocess.DEVNULL)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def test_a_seed_past_2_63_comes_back_whole(self):
        """plan.json writes the seed as a signed 64-bit integer; the loaders'
        re-plan of later epochs must use the seed given, not a negative one."""
        seed = (1 << 63) + 5
        out = os.path.join(self.tmp, "seed")
        subprocess.run([CLI, "plan", "-q", "--world-size", "2", "--workers", "2", "--min-length", "10",
                        "--mode", "batch", "--seed", str(seed), "-o", out, "shards/shards.list"],
                       cwd=CORPUS, check=True, stdout=subprocess.DEVNULL)
        with open(os.path.join(out, "plan.json"), encoding="utf-8") as f:
            self.assertEqual(json.load(f)["parameters"]["seed"], seed - (1 << 64))  # as written
        settings = loaders.PlanDir(out).plan_settings()
        self.assertEqual(settings["seed"], seed)
        table = equishard.CostTable.read(os.path.join(out, "costs.tsv.zst"))
        with equishard.plan(table, root=CORPUS, **settings) as again:  # the epoch rebuild's call
            self.assertEqual(again.metrics.kept, len(table))

    def test_import_does_not_need_torch_or_the_library(self):
        self.assertNotIn("torch", sys.modules)
        self.assertIs(loaders.DataList.__mro__[1], object)

    def test_cosyvoice_datalist_gives_each_worker_its_planned_shards(self):
        seen = []
        for rank in range(2):
            for worker in range(2):
                d = loaders.DataList(self.lists, plan=self.shard, rank=rank, world_size=2,
                                     worker_id=worker, num_workers=2)
                d.set_epoch(3)
                got = list(d)
                want = read_lines(os.path.join(self.shard, f"rank-{rank:05d}.worker-{worker}.list"))
                self.assertEqual([x["src"] for x in got], want)
                self.assertTrue(want)
                self.assertEqual({(x["rank"], x["world_size"], x["worker_id"], x["num_workers"]) for x in got},
                                 {(rank, 2, worker, 2)})
                seen += want
        self.assertEqual(sorted(seen), sorted(self.lists))  # every shard once

    def test_rank_from_environment_and_plan_from_env_or_lists(self):
        env = {"RANK": "1", "WORLD_SIZE": "2", loaders.PLAN_ENV: self.shard}
        with mock.patch.dict(os.environ, env):
            got = [x["src"] for x in loaders.DataList(self.lists, worker_id=1, num_workers=2)]
        self.assertEqual(got, read_lines(os.path.join(self.shard, "rank-00001.worker-1.list")))
        with mock.patch.dict(os.environ, {"RANK": "0", "WORLD_SIZE": "2"}):
            got = [x["src"] for x in loaders.DataList(self.shard, num_workers=2)]  # the OUTDIR as lists
        self.assertEqual(got, read_lines(os.path.join(self.shard, "rank-00000.worker-0.list")))

    def test_mismatched_jobs_and_other_data_are_refused(self):
        with mock.patch.dict(os.environ, {"RANK": "0", "WORLD_SIZE": "4"}):
            with self.assertRaisesRegex(ValueError, "world size 2"):
                list(loaders.DataList(self.lists, plan=self.shard, num_workers=2))
        with self.assertRaisesRegex(ValueError, "num_workers=1"):
            list(loaders.DataList(self.lists, plan=self.shard, rank=0, world_size=2))
        with self.assertRaisesRegex(ValueError, "not in the data list"):
            list(loaders.DataList(self.lists[:1], plan=self.shard, rank=0, world_size=2,
                                  worker_id=0, num_workers=2))

    def test_shuffle_reorders_each_workers_entries_per_epoch(self):
        """shuffle=True: each worker reads its own planned entries (the balance)
        in an order of the epoch's (random.Random(epoch)), the same on every call."""
        def entries(epoch, shuffle=True):
            d = loaders.DataList(self.raw, shuffle=shuffle, plan=self.raw, rank=1, world_size=2,
                                 worker_id=0, num_workers=2)
            d.set_epoch(epoch)
            return [x["src"] for x in d]
        planned = read_lines(os.path.join(self.raw, "rank-00001.worker-0.list"))
        self.assertGreater(len(planned), 5)
        self.assertEqual(entries(1, shuffle=False), planned)
        for epoch in (0, 1):
            self.assertEqual(sorted(entries(epoch)), sorted(planned))
            self.assertEqual(entries(epoch), entries(epoch))
        self.assertNotEqual(entries(0), entries(1))

    def test_simulate_plan_replays_what_each_worker_reads(self):
        """simulate --plan OUTDIR: per epoch, every rank's and worker's entries are
        exactly what DataList (with set_epoch, Python's random) hands that worker;
        raw-list plans too (lines named by their key). The CLI and the binding agree."""
        for plan, key_of in ((self.shard, lambda e: e), (self.raw, lambda e: json.loads(e)["key"])):
            doc = json.loads(subprocess.run(
                [CLI, "simulate", "--loader", "cosyvoice", "--plan", plan, "--epochs", "0:2",
                 "--shuffle-size", "0", "--json", "--quiet"],
                cwd=CORPUS, check=True, capture_output=True, text=True).stdout)  # plan.json's inputs
            self.assertEqual(doc["parameters"]["plan"], plan)
            self.assertEqual((doc["parameters"]["world_size"], doc["parameters"]["workers"]), (2, 2))
            self.assertEqual(doc["parameters"]["filter"]["min_length"], 10)  # plan.json's, not the default
            for ep in doc["epochs"]:
                for rank in ep["ranks"]:
                    for w in rank["workers"]:
                        d = loaders.DataList(plan, plan=plan, rank=rank["rank"], world_size=2,
                                             worker_id=w["worker"], num_workers=2)
                        d.set_epoch(ep["epoch"])
                        self.assertEqual(w["shards"], [key_of(x["src"]) for x in d],
                                         (plan, ep["epoch"], rank["rank"], w["worker"]))
            if plan == self.raw:  # a raw list's order differs by epoch: the shuffle is replayed
                self.assertNotEqual(doc["epochs"][0]["ranks"][1]["workers"][0]["shards"],
                                    doc["epochs"][1]["ranks"][1]["workers"][0]["shards"])
        wenet = json.loads(subprocess.run(  # WeNet's ShardList: plan order, every epoch
            [CLI, "simulate", "--loader", "wenet", "--plan", self.raw, "--epochs", "0:1",
             "--shuffle-size", "0", "--json", "--quiet"],
            cwd=CORPUS, check=True, capture_output=True, text=True).stdout)
        for ep in wenet["epochs"]:
            for rank in ep["ranks"]:
                for w in rank["workers"]:
                    got = loaders.ShardList(self.raw, rank=rank["rank"], world_size=2,
                                            worker_id=w["worker"], num_workers=2)
                    self.assertEqual(w["shards"], [json.loads(x["line"])["key"] for x in got])
        table = equishard.load(os.path.join(CORPUS, "raw.list"), root=CORPUS)
        with equishard.simulate(table, "cosyvoice", epochs=(0, 2), plan=self.raw,
                                shuffle_size=0) as r:
            self.assertEqual([e.min_batches for e in r.epochs],
                             [ep["min_batches"] for ep in doc["epochs"]])

    def test_simulate_plan_refuses_what_it_cannot_replay(self):
        def sim(*args, cwd=CORPUS):
            return subprocess.run([CLI, "simulate", "--loader", "cosyvoice", *args],
                                  cwd=cwd, capture_output=True, text=True)
        p = sim("--plan", self.shard, "--world-size", "3")
        self.assertEqual(p.returncode, 2)
        self.assertIn("planned for 2 rank(s) x 2 worker(s), simulating 3 x 2", p.stderr)
        p = sim("--plan", self.shard, "raw.list")
        self.assertEqual(p.returncode, 2)
        self.assertIn("rank-00000.worker-0.list: line 1: entry", p.stderr)
        p = sim("--plan", self.shard, cwd=self.tmp)  # plan.json's relative inputs are elsewhere
        self.assertEqual(p.returncode, 2)
        self.assertIn("is not readable from here", p.stderr)
        p = sim("--plan", os.path.join(self.tmp, "none"))
        self.assertEqual(p.returncode, 2)
        self.assertIn("plan.json", p.stderr)
        p = sim("--plan", self.batch)  # equal steps by construction
        self.assertEqual(p.returncode, 0, p.stderr)
        steps = json.load(open(os.path.join(self.batch, "plan.json")))["metrics"]["steps"]
        self.assertIn(f"every rank trains {steps} step(s) each epoch", p.stdout)
        with self.assertRaisesRegex(ValueError, "batch plan"):
            equishard.simulate(equishard.load(SHARDS, root=CORPUS), plan=self.batch)

    def test_partition_false_is_cosyvoices_own_split(self):
        d = loaders.DataList(self.lists, partition=False, worker_id=1, num_workers=2)
        self.assertEqual([x["src"] for x in d], self.lists[1::2])

    def test_datalist_refuses_a_batch_plan(self):
        """CosyVoice's parquet_opener swallows a bad entry with a warning; a batch
        plan fed to it must fail at once, not train zero steps."""
        with self.assertRaisesRegex(ValueError, "batch plan.*equishard.loaders.cosyvoice.Dataset"):
            loaders.DataList(self.lists, plan=self.batch, rank=0, world_size=2, worker_id=0,
                             num_workers=2)

    def test_epoch_batches_replan_from_the_outdir(self):
        """Epoch 0 is the written file; the plan rebuilt for epoch 0 from
        costs.tsv.zst equals it; later epochs have their own batches, each
        planned utterance once per epoch."""
        d = loaders.PlanDir(self.batch)
        settings = d.plan_settings()
        import equishard
        for rank in range(2):
            lines = [json.loads(l) for l in read_lines(os.path.join(self.batch, f"rank-{rank:05d}.batches.jsonl"))]
            merged = []
            for worker in range(2):
                got = d.epoch_batches(rank, worker, 0)
                self.assertTrue(all(b["worker"] == worker for b in got))
                merged += got
            # the DataLoader takes batches from its workers in turn: step order again
            self.assertEqual(sorted(merged, key=lambda b: b["step"]), lines)
            with equishard.plan(equishard.CostTable.read(d.table_path()), epoch=0, **settings) as p:
                self.assertEqual([(b.step, b.worker, b.keys, [list(i) for i in b.items]) for b in p.batches(rank)],
                                 [(b["step"], b["worker"], b["keys"], b["items"]) for b in lines])

        def keysets(epoch):
            return [frozenset(b["keys"]) for r in range(2) for w in range(2)
                    for b in d.epoch_batches(r, w, epoch) if not b.get("repeat")]
        e0, e1 = keysets(0), keysets(1)
        self.assertEqual(sorted(k for b in e0 for k in b), sorted(k for b in e1 for k in b))
        self.assertEqual(len({k for b in e1 for k in b}), sum(len(b) for b in e1))  # each once
        self.assertNotEqual(set(e0), set(e1))  # epoch 1 trains other batch compositions
        self.assertEqual(keysets(1), keysets(1))  # the same on every rank, every call

    def test_non_utf8_keys_round_trip_through_batches_jsonl(self):
        """A key that is not UTF-8 (tar names are bytes) is written to batches.jsonl as
        \\udcXX escapes: the file stays UTF-8 JSON, the loaders read the key as
        tarfile decodes the member name (surrogateescape), match it against the
        row the library reads, and a re-planned epoch gives the same strings."""
        import io
        import tarfile
        d = os.path.join(self.tmp, "non-utf8")
        os.mkdir(d)
        keys = ["caf\udce9", "ok-\u00e9", "\udced\udca0\udc80", "plain"]
        wavs = sorted(os.listdir(os.path.join(CORPUS, "wav", "A01")))
        with tarfile.open(os.path.join(d, "a.tar"), "w", format=tarfile.USTAR_FORMAT,
                          encoding="utf-8", errors="surrogateescape") as t:
            for key, w in zip(keys, wavs):
                with open(os.path.join(CORPUS, "wav", "A01", w), "rb") as f:
                    wav = f.read()
                for name, data in ((key + ".txt", b"some words"), (key + ".wav", wav)):
                    info = tarfile.TarInfo(name)
                    info.size = len(data)
                    t.addfile(info, io.BytesIO(data))
        with open(os.path.join(d, "data.list"), "w") as f:
            f.write(os.path.join(d, "a.tar") + "\n")
        out = os.path.join(d, "plan")
        subprocess.run([CLI, "measure", "-q", "-o", os.path.join(d, "costs.tsv"), os.path.join(d, "data.list")],
                       check=True)
        subprocess.run([CLI, "plan", "-q", "--mode", "batch", "--world-size", "1", "--workers", "1",
                        "--min-length", "0", "-o", out, os.path.join(d, "costs.tsv")],
                       check=True, stdout=subprocess.DEVNULL)
        plan = loaders.PlanDir(out)
        self.assertEqual(sorted(k for b in plan.batches(0) for k in b["keys"]), sorted(keys))
        self.assertEqual(sorted(k for b in plan.epoch_batches(0, 0, 1) for k in b["keys"]), sorted(keys))
        from equishard.loaders import cosyvoice
        got = [x.get("utt", x.get("key")) for x in cosyvoice.PlannedUtterances(plan)]
        self.assertEqual(sorted(got), sorted(keys))  # each row matched its planned key

    def test_edited_batches_jsonl_is_refused_naming_file_and_line(self):
        """A hand-edited or truncated rank-R.batches.jsonl is refused with
        file:line and the problem, before any batch: keys and items of different
        lengths would be zipped short, a worker out of range skipped (the ranks'
        step counts would differ)."""
        path = os.path.join(self.batch, "rank-00000.batches.jsonl")
        lines = read_lines(path)
        self.assertGreaterEqual(len(lines), 2)
        first = json.loads(lines[0])

        def edit(line_no, change):
            d = os.path.join(self.tmp, "edited")
            shutil.rmtree(d, ignore_errors=True)
            shutil.copytree(self.batch, d)
            new = list(lines)
            new[line_no - 1] = change(json.loads(lines[line_no - 1]))
            with open(os.path.join(d, "rank-00000.batches.jsonl"), "w", encoding="utf-8") as f:
                f.write("".join(l + "\n" for l in new if l is not None))
            return loaders.PlanDir(d), os.path.join(d, "rank-00000.batches.jsonl")

        def changed(**kw):
            return lambda b: json.dumps({**b, **kw})
        cases = [
            (1, changed(items=first["items"][:-1]),
             f":1: {len(first['keys'])} keys but {len(first['items']) - 1} items"),
            (1, changed(keys=first["keys"] + ["extra"]), f":1: {len(first['keys']) + 1} keys but"),
            (1, changed(worker=2), ':1: "worker" is 2, not one of the plan\'s 2 worker'),
            (1, changed(worker=-1), ':1: "worker" is -1'),
            (1, changed(worker="0"), ":1: \"worker\" is '0'"),
            (2, changed(step=0), ':2: "step" is 0, expected 1'),
            (1, changed(items=[[s, -1] for s, _ in first["items"]]), ":1: items[0]'s pos is -1"),
            (1, changed(items=[[s, 1.5] for s, _ in first["items"]]), ":1: items[0]'s pos is 1.5"),
            (1, changed(items=[[p] for p, _ in first["items"]]), ":1: items[0] is"),
            (1, changed(keys=[1] * len(first["keys"])), ':1: "keys" is not a non-empty list of strings'),
            (2, lambda b: json.dumps(b)[:20], ":2: not JSON"),
            (2, lambda b: "[]", ":2: not a JSON object"),
            (len(lines), lambda b: None, f": {len(lines) - 1} batches, plan.json says rank 0 has {len(lines)}"),
        ]
        for line_no, change, want in cases:
            plan, edited = edit(line_no, change)
            with self.subTest(want=want):
                with self.assertRaises(ValueError) as cm:
                    plan.batches(0, 0)
                self.assertIn(edited + want, str(cm.exception))
        self.assertEqual(len(loaders.PlanDir(self.batch).batches(0)), len(lines))  # the original reads

    def test_a_shard_changed_after_planning_is_refused(self):
        """A shard rebuilt after planning with the same keys (longer audio) is
        refused when a worker opens it, naming the file, its size now and when
        measured (costs.tsv.zst's shard_size); one only touched, naming both
        times (shard_mtime); the unchanged plan trains every key."""
        import tarfile
        from equishard.loaders import cosyvoice, wenet
        d = os.path.join(self.tmp, "changed")
        shutil.rmtree(d, ignore_errors=True)
        shutil.copytree(os.path.join(CORPUS, "shards"), os.path.join(d, "shards"))
        subprocess.run([CLI, "plan", "-q", "--mode", "batch", "--world-size", "1", "--workers", "1",
                        "--min-length", "0", "-o", "plan", "shards/shards.list"],
                       cwd=d, check=True, stdout=subprocess.DEVNULL)
        plan = loaders.PlanDir(os.path.join(d, "plan"))
        keys = sorted(k for b in plan.batches(0) for k in b["keys"])
        got = sorted(x["key"] for x in wenet.PlannedUtterances(plan, "data.list", root=d))
        self.assertEqual(got, keys)
        shard = os.path.join(d, "shards", "shards_000000001.tar")
        before = os.stat(shard)
        with open(shard, "rb") as f:
            original = f.read()
        with tarfile.open(shard) as t:  # the same members, each .wav ten times longer
            members = [(m, t.extractfile(m).read()) for m in t.getmembers()]
        with tarfile.open(shard, "w", format=tarfile.USTAR_FORMAT) as t:
            for m, data in members:
                data = data * 10 if m.name.endswith(".wav") else data
                m.size = len(data)
                t.addfile(m, io.BytesIO(data))
        rebuilt = os.path.getsize(shard)
        self.assertNotEqual(rebuilt, before.st_size)
        for make in (lambda: cosyvoice.PlannedUtterances(loaders.PlanDir(plan.outdir), root=d),
                     lambda: wenet.PlannedUtterances(loaders.PlanDir(plan.outdir), "data.list", root=d)):
            with self.assertRaises(ValueError) as cm:
                list(make())
            self.assertEqual(str(cm.exception).split(" (")[0],
                             f"{shard}: {rebuilt} bytes, {before.st_size} when measured: the shard "
                             "changed since the plan was made")
        with open(shard, "wb") as f:  # the old bytes, a new time
            f.write(original)
        now = os.stat(shard).st_mtime_ns
        self.assertNotEqual(now, before.st_mtime_ns)

        def t(ns):
            return f"{ns // 10**9}.{ns % 10**9:09d}"
        with self.assertRaisesRegex(ValueError, re.escape(
                f"{shard}: modified at {t(now)}, {t(before.st_mtime_ns)} when measured")):
            list(cosyvoice.PlannedUtterances(loaders.PlanDir(plan.outdir), root=d))
        os.utime(shard, ns=(before.st_atime_ns, before.st_mtime_ns))  # restored: trains again
        got = sorted(x["key"] for x in cosyvoice.PlannedUtterances(loaders.PlanDir(plan.outdir), root=d))
        self.assertEqual(got, keys)

    def test_wenet_shard_list_yields_file_name_and_line(self):
        for plan in (self.shard, self.raw):
            for rank in range(2):
                path = os.path.join(plan, f"rank-{rank:05d}.worker-0.list")
                got = list(loaders.ShardList(plan, rank=rank, world_size=2, worker_id=0, num_workers=2))
                self.assertEqual(got, [{"file_name": path, "line": l} for l in read_lines(path)])
        raw_lines = set(read_lines(os.path.join(CORPUS, "raw.list")))
        got = list(loaders.ShardList(self.raw, partition=False, rank=0, world_size=2, worker_id=1, num_workers=2))
        self.assertTrue(got and all(x["line"] in raw_lines for x in got))  # the JSON lines as written
        with self.assertRaisesRegex(ValueError, "batch mode"):
            loaders.ShardList(self.batch)

    def test_with_a_torch_stand_in(self):
        """torch.distributed and get_worker_info() are asked when torch is importable."""
        fake = os.path.join(self.tmp, "fake")
        os.makedirs(os.path.join(fake, "torch", "utils"), exist_ok=True)
        files = {
            "torch/__init__.py": "",
            "torch/utils/__init__.py": "",
            "torch/utils/data.py": """
                import types
                class IterableDataset: pass
                class IterDataPipe(IterableDataset): pass
                def get_worker_info(): return types.SimpleNamespace(id=1, num_workers=2)
            """,
            "torch/distributed.py": """
                def is_available(): return True
                def is_initialized(): return True
                def get_rank(): return 1
                def get_world_size(): return 2
            """,
        }
        for name, text in files.items():
            with open(os.path.join(fake, name), "w") as f:
                f.write(textwrap.dedent(text))
        code = ("import json, sys; from equishard import loaders; "
                "d = loaders.DataList(sys.argv[1], plan=sys.argv[2]); "
                "assert isinstance(d, loaders._torch_data.IterableDataset); "
                "print(json.dumps([x['src'] for x in d]))")
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([fake, PYTHON_DIR]), RANK="0", WORLD_SIZE="9")
        out = subprocess.run([sys.executable, "-c", code, SHARDS, self.shard], env=env, check=True,
                             capture_output=True, text=True, cwd=CORPUS).stdout
        # SHARDS is read as a path, not a list: no membership check; rank 1 worker 1 from "torch"
        self.assertEqual(json.loads(out), read_lines(os.path.join(self.shard, "rank-00001.worker-1.list")))


if __name__ == "__main__":
    unittest.main()
