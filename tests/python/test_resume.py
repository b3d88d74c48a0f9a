"""Batch plans resumed at a step and resized (equishard.loaders: PlanDir.epoch_batches,
the Datasets' set_epoch(e, step=s), state_dict, $EQUISHARD_RESUME; the CLI's
plan --resume-from). Expected values come from the written rank files, read with
Python's json: the keys of steps < s, the kept keys, the steps a rank."""
import collections
import functools
import json
import os
import shutil
import subprocess
import tempfile
import unittest
from unittest import mock

from equishard.loaders import PlanDir, cosyvoice, equal_steps, resume, step_log, step_log_module, wenet
from test_binding import CLI, CORPUS
import test_cosyvoice_loader
import test_wenet_loader
from test_cosyvoice_loader import UNITS

K, W = 2, 2


def pipeline():
    """test_cosyvoice_loader's stand-in pipeline, batching as the plan below does."""
    p = test_cosyvoice_loader.pipeline()
    p[5] = functools.partial(test_cosyvoice_loader.batch, batch_type="dynamic",
                             max_frames_in_batch=600)
    return p


def read_lines(outdir, rank):
    with open(os.path.join(outdir, f"rank-{rank:05d}.batches.jsonl")) as f:
        return [json.loads(line) for line in f]


def round_robin(per_worker):
    """The order a DataLoader takes its workers' batches in: worker 0's first,
    worker 1's first, ..., then the second of each (exhausted workers skipped)."""
    out, its = [], [iter(b) for b in per_worker]
    while its:
        for it in list(its):
            try:
                out.append(next(it))
            except StopIteration:
                its.remove(it)
    return out


class ResumeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="es-resume-")
        cls.plan = os.path.join(cls.tmp, "batch")
        subprocess.run([CLI, "plan", "-q", "--mode", "batch", "--world-size", str(K), "--workers",
                        str(W), "--min-length", "10", "--max-frames-in-batch", "600",
                        "--symbol-table", UNITS, "-o", cls.plan, "parquet/data.list"],
                       cwd=CORPUS, check=True, stdout=subprocess.DEVNULL)
        cls.lines = {r: read_lines(cls.plan, r) for r in range(K)}
        cls.steps = len(cls.lines[0])
        cls.kept = {k for r in range(K) for b in cls.lines[r] for k in b["keys"]}

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def tearDown(self):
        resume.reset()  # the position is the process's: the other suites start from none

    def trained_before(self, step):
        return {k for r in range(K) for b in self.lines[r] if b["step"] < step for k in b["keys"]}

    def test_the_plan_has_steps_to_resume_in(self):
        self.assertGreaterEqual(self.steps, 6)
        self.assertTrue(all(len(self.lines[r]) == self.steps for r in range(K)))

    def test_resume_same_world_starts_at_step_s_in_dataloader_order(self):
        plan = PlanDir(self.plan)
        for s in (1, 3, self.steps - 1, self.steps):
            for r in range(K):
                per_worker = [plan.epoch_batches(r, w, -1, step=s) for w in range(W)]
                got = round_robin(per_worker)
                self.assertEqual([b["keys"] for b in got], [b["keys"] for b in self.lines[r][s:]])
                self.assertEqual([b["step"] for b in got], list(range(s, self.steps)))
                if got:  # the DataLoader's first batch is step s
                    self.assertEqual(per_worker[0][0]["step"], s)

    def test_resume_at_step_0_is_the_plan_unchanged(self):
        plan = PlanDir(self.plan)
        for r in range(K):
            for w in range(W):
                self.assertEqual(plan.epoch_batches(r, w, -1, step=0),
                                 [b for b in self.lines[r] if b["worker"] == w])

    def test_a_step_past_the_epoch_is_refused(self):
        with self.assertRaisesRegex(ValueError, f"at step {self.steps + 1}, but it has {self.steps} steps"):
            PlanDir(self.plan).epoch_batches(0, 0, -1, step=self.steps + 1)

    def test_the_first_s_steps_are_not_read(self):
        s = 3
        fetched = []
        real = cosyvoice.RowFetcher.fetch

        def fetch(self_, items):
            fetched.extend(tuple(i) for i in items)
            return real(self_, items)
        with mock.patch.dict(os.environ, RANK="0", WORLD_SIZE=str(K)), \
                mock.patch.object(cosyvoice.RowFetcher, "fetch", fetch):
            d = cosyvoice.Dataset(os.path.join(CORPUS, "parquet", "data.list"),
                                  pipeline(), plan=self.plan, root=CORPUS)
            d.set_epoch(0, step=s)
            got = []
            for w in range(W):
                with mock.patch.object(cosyvoice, "worker_info", return_value=(w, W)):
                    got.append([b["utts"] for b in d])
        self.assertEqual(round_robin(got), [b["keys"] for b in self.lines[0][s:]])
        skipped = {tuple(i) for b in self.lines[0][:s] for i in b["items"]}
        later = {tuple(i) for b in self.lines[0][s:] for i in b["items"]}
        self.assertEqual(set(fetched), later)
        self.assertFalse((skipped - later) & set(fetched))

    def resized(self, epoch, step, world, workers=1):
        plan = PlanDir(self.plan)
        return {r: plan.epoch_batches(r, None, epoch, step=step, world_size=world, workers=workers)
                for r in range(world)}

    def test_resized_resume_plans_exactly_the_rest_with_equal_steps(self):
        s = 3
        for world, workers in ((3, 1), (1, 2), (3, 2)):
            ranks = self.resized(0, s, world, workers)
            counts = {len(b) for b in ranks.values()}
            self.assertEqual(len(counts), 1, (world, counts))  # equal steps on every rank
            n = counts.pop()
            first = [b for bs in ranks.values() for b in bs if not b["repeat"]]
            keys = collections.Counter(k for b in first for k in b["keys"])
            self.assertEqual(set(keys), self.kept - self.trained_before(s))
            self.assertEqual(max(keys.values()), 1)
            for bs in ranks.values():
                self.assertEqual([b["step"] for b in bs], list(range(s, s + n)))
                self.assertEqual([b["worker"] for b in bs], [i % workers for i in range(n)])
                for b in bs:  # padding copies repeat a batch of the remainder, nothing else
                    self.assertTrue(set(b["keys"]) <= self.kept - self.trained_before(s))

    def test_resized_from_step_0_and_the_next_epoch_are_whole_plans(self):
        for epoch, step in ((0, 0), (1, 0)):
            ranks = self.resized(epoch, step, 3)
            self.assertEqual(len({len(b) for b in ranks.values()}), 1)
            self.assertEqual({k for bs in ranks.values() for b in bs for k in b["keys"]}, self.kept)

    def test_resuming_after_the_last_step_resized_trains_nothing(self):
        self.assertEqual(self.resized(0, self.steps, 3), {0: [], 1: [], 2: []})

    def test_env_resume_applies_to_the_first_set_epoch_and_shifts_the_rest(self):
        with mock.patch.dict(os.environ, RANK="0", WORLD_SIZE=str(K), EQUISHARD_RESUME="0:4"):
            d = cosyvoice.Dataset(os.path.join(CORPUS, "parquet", "data.list"),
                                  pipeline(), plan=self.plan, root=CORPUS)
            src = d
            while not isinstance(src, cosyvoice.PlannedUtterances):
                src = src.source
            d.set_epoch(1)  # CosyVoice's train.py: the checkpoint's epoch + 1
            self.assertEqual((src.epoch, src.step), (0, 4))
            self.assertEqual(d.state_dict(), {"epoch": 0, "step": 4})
            d.set_epoch(2)
            self.assertEqual((src.epoch, src.step), (1, 0))

    def test_state_dict_round_trip_and_step_count(self):
        with mock.patch.dict(os.environ, RANK="0", WORLD_SIZE=str(K)):
            d = cosyvoice.Dataset(os.path.join(CORPUS, "parquet", "data.list"),
                                  pipeline(), plan=self.plan, root=CORPUS)
            d.set_epoch(0, step=2)
            loop = equal_steps(range(3))  # no torch.distributed: passed through, counted
            self.assertEqual(list(loop), [0, 1, 2])
            self.assertEqual(loop.steps, 5)
            self.assertEqual(d.state_dict(), {"epoch": 0, "step": 5})
            d2 = cosyvoice.Dataset(os.path.join(CORPUS, "parquet", "data.list"),
                                   pipeline(), plan=self.plan, root=CORPUS)
            d2.load_state_dict(d.state_dict())
            d2.set_epoch(0)
            self.assertEqual(d2.state_dict(), {"epoch": 0, "step": 5})

    def test_the_step_log_goes_on_from_the_resumed_step(self):
        tmp = tempfile.mkdtemp(dir=self.tmp)
        with mock.patch.dict(os.environ, RANK="0", WORLD_SIZE=str(K)):
            d = cosyvoice.Dataset(os.path.join(CORPUS, "parquet", "data.list"), pipeline(),
                                  plan=self.plan, root=CORPUS)
            d.set_epoch(1, step=3)
            batches = [{"utts": [f"u{i}"]} for i in range(2)]
            self.assertEqual(list(step_log(batches, tmp)), batches)
            step_log_module.close_all()
        with open(os.path.join(tmp, "steps-rank-00000.jsonl")) as f:
            lines = [json.loads(line) for line in f]
        self.assertEqual([(x["epoch"], x["step"], x["keys"]) for x in lines],
                         [(1, 3, ["u0"]), (1, 4, ["u1"])])

    def cli(self, *args):
        return subprocess.run([CLI, "plan", *args], cwd=CORPUS, capture_output=True, text=True)

    def test_cli_resume_from_writes_the_drop_ins_plan(self):
        s, new = 3, os.path.join(self.tmp, "resumed")
        r = self.cli("--resume-from", self.plan, "--step", str(s), "--world-size", "3", "-o", new)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(os.path.join(new, "plan.json")) as f:
            info = json.load(f)
        self.assertEqual((info["parameters"]["world_size"], info["parameters"]["workers"]), (3, W))
        self.assertEqual(info["metrics"]["left_out"], len(self.trained_before(s)))
        in_memory = self.resized(0, s, 3, W)
        keys = collections.Counter()
        for rank in range(3):
            lines = read_lines(new, rank)
            fields = [(b["step"], b["worker"], b["keys"], b["items"], b.get("repeat", False))
                      for b in lines]
            self.assertEqual(fields, [(b["step"] - s, b["worker"], b["keys"], b["items"], b["repeat"])
                                      for b in in_memory[rank]])
            keys.update(k for b in lines if not b.get("repeat") for k in b["keys"])
        self.assertEqual(set(keys), self.kept - self.trained_before(s))
        self.assertEqual(max(keys.values()), 1)
        # its next epoch, as the drop-ins rebuild it from NEWDIR: whole, for 3 ranks
        nxt = PlanDir(new)
        self.assertEqual({k for rank in range(3) for b in nxt.epoch_batches(rank, None, 1)
                          for k in b["keys"]}, self.kept)

    def test_cli_resume_from_another_epoch_is_the_drop_ins_too(self):
        new = os.path.join(self.tmp, "resumed-epoch-1")
        r = self.cli("--resume-from", self.plan, "--epoch", "1", "--step", "2", "--world-size", "3",
                     "--workers", "1", "-o", new)
        self.assertEqual(r.returncode, 0, r.stderr)
        in_memory = self.resized(1, 2, 3, 1)
        for rank in range(3):
            self.assertEqual([(b["step"], b["worker"], b["keys"], b["items"]) for b in read_lines(new, rank)],
                             [(b["step"] - 2, b["worker"], b["keys"], b["items"]) for b in in_memory[rank]])

    def test_cli_resume_from_refuses_bad_requests(self):
        new = os.path.join(self.tmp, "refused")
        for args, message in (
                (["--resume-from", self.plan, "--step", str(self.steps + 1), "--world-size", "3"],
                 f"--step {self.steps + 1}: epoch 0 of the plan has {self.steps} steps a rank"),
                (["--resume-from", self.plan, "--step", str(self.steps), "--world-size", "3"],
                 f"--step {self.steps}: the last step of epoch 0: nothing of it is left"),
                (["--resume-from", self.plan, "--world-size", "3", "parquet/data.list"],
                 "takes --world-size and -o NEWDIR, and no inputs"),
                (["--step", "2", "--world-size", "3", "parquet/data.list"],
                 "--step goes with --resume-from"),
                (["--resume-from", os.path.join(self.tmp, "none"), "--world-size", "3"],
                 "none/plan.json")):
            r = self.cli(*args, "-o", new)
            self.assertEqual(r.returncode, 2, (args, r.stderr))
            self.assertIn(message, r.stderr.splitlines()[0])
            self.assertFalse(os.path.exists(new))
        shard = os.path.join(self.tmp, "shard")
        subprocess.run([CLI, "plan", "-q", "--world-size", "1", "--min-length", "10", "-o", shard,
                        "parquet/data.list"], cwd=CORPUS, check=True, stdout=subprocess.DEVNULL)
        r = self.cli("--resume-from", shard, "--world-size", "1", "-o", new)
        self.assertEqual(r.returncode, 2)
        self.assertIn("a shard plan: --resume-from needs a batch plan", r.stderr)

    def test_bad_resume_text_is_refused(self):
        for text in ("3", "a:1", "1:-2", "1:2:3"):
            with self.assertRaisesRegex(ValueError, "EQUISHARD_RESUME=.*expected EPOCH:STEP"):
                resume.parse(text)


if __name__ == "__main__":
    unittest.main()


class WeNetResumeTest(unittest.TestCase):
    """equishard.loaders.wenet.Dataset resumed and resized (its stand-in processors
    from test_wenet_loader): persistent workers take the step on their first
    iteration only, and the next iteration is the next epoch, whole."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="es-resume-wenet-")
        cls.plan = os.path.join(cls.tmp, "batch")
        subprocess.run([CLI, "plan", "-q", "--mode", "batch", "--world-size", "2",
                        *test_wenet_loader.PLAN_ARGS, "--max-frames-in-batch", "1000",
                        "-o", cls.plan, "shards/shards.list"], cwd=CORPUS, check=True,
                       stdout=subprocess.DEVNULL)
        cls.lines = {r: read_lines(cls.plan, r) for r in range(2)}
        cls.kept = {k for r in range(2) for b in cls.lines[r] for k in b["keys"]}

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def tearDown(self):
        resume.reset()

    def batches(self, rank, world, epoch, step):
        conf = dict(test_wenet_loader.CONF,
                    batch_conf={"batch_type": "dynamic", "max_frames_in_batch": 1000})
        with mock.patch.dict(os.environ, RANK=str(rank), WORLD_SIZE=str(world)):
            d = wenet.Dataset("shard", test_wenet_loader.SHARDS, None, conf, plan=self.plan,
                              root=CORPUS, processor=test_wenet_loader.PROCESSOR)
            d.set_epoch(epoch, step=step)
            return [[b["keys"] for b in d] for _ in range(2)]  # two iterations: persistent workers

    def test_resume_then_the_next_epoch_whole(self):
        s = 2
        self.assertGreater(len(self.lines[0]), s)
        for r in range(2):
            first, second = self.batches(r, 2, 0, s)
            self.assertEqual(first, [b["keys"] for b in self.lines[r][s:]])
            self.assertEqual(second, [b["keys"] for b in PlanDir(self.plan).epoch_batches(r, None, 1)])

    def test_resume_from_the_environment_without_set_epoch(self):
        """WeNet's bin/train.py never calls set_epoch: $EQUISHARD_RESUME applies to
        the first iteration (each persistent worker's), the next is epoch 1 whole."""
        s = 3
        conf = dict(test_wenet_loader.CONF,
                    batch_conf={"batch_type": "dynamic", "max_frames_in_batch": 1000})
        for r in range(2):
            with mock.patch.dict(os.environ, RANK=str(r), WORLD_SIZE="2", EQUISHARD_RESUME=f"0:{s}"), \
                    self.assertLogs("equishard", "WARNING"):
                d = wenet.Dataset("shard", test_wenet_loader.SHARDS, None, conf, plan=self.plan,
                                  root=CORPUS, processor=test_wenet_loader.PROCESSOR)
                first, second = [[b["keys"] for b in d] for _ in range(2)]
            self.assertEqual(first, [b["keys"] for b in self.lines[r][s:]])
            self.assertEqual(second, [b["keys"] for b in PlanDir(self.plan).epoch_batches(r, None, 1)])

    def test_resized_resume_trains_the_rest_once(self):
        s = 2
        before = {k for r in range(2) for b in self.lines[r][:s] for k in b["keys"]}
        runs = [self.batches(r, 3, 0, s) for r in range(3)]
        self.assertEqual(len({len(first) for first, _ in runs}), 1)
        after = collections.Counter(k for first, _ in runs for b in first for k in b)
        self.assertEqual(set(after), self.kept - before)
        self.assertEqual({k for _, second in runs for b in second for k in b}, self.kept)
