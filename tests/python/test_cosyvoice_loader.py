"""equishard.loaders.cosyvoice without torch: the Dataset drop-in's pipeline
surgery, its source of planned rows, the planned_batch stage, and the checks
that make misuse loud. (tests/e2e runs it inside CosyVoice's real loop.)"""
import functools
import json
import os
import shutil
import subprocess
import tempfile
import unittest
from unittest import mock

from equishard.loaders import cosyvoice, regroup
from test_binding import CLI, CORPUS

# a symbol table of <blank> and <unk> only: --symbol-table then counts one text
# token per code point, as the tokenize stand-in below makes them
UNITS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "char_units.txt")


# stand-ins with the names of CosyVoice's processors (the drop-in goes by name)
def parquet_opener(data, mode="train"):
    raise AssertionError("a batch plan must not reach the opener")


def tokenize(data, mode="train"):
    for sample in data:
        sample["text_token"] = [ord(c) for c in sample["text"]]
        yield sample


def filter(data, max_length=10240, min_length=10, token_max_length=200, token_min_length=1,
           min_output_input_ratio=0.0005, max_output_input_ratio=1, mode="train"):
    yield from data


def shuffle(data, shuffle_size=10000, mode="train"):
    raise AssertionError("shuffle must be left out")


def sort(data, sort_size=500, mode="train"):
    raise AssertionError("sort must be left out")


def batch(data, batch_type="static", batch_size=16, max_frames_in_batch=12000, mode="train"):
    raise AssertionError("batch must be replaced")


def padding(data, use_spk_embedding, mode="train", gan=False, dpo=False):
    for b in data:
        yield {"utts": [s["utt"] for s in b], "src": [s["src"] for s in b]}


def pipeline(**filter_kw):
    p = functools.partial
    return [p(parquet_opener), p(tokenize), p(filter, **{"max_length": 40960, "min_length": 10, **filter_kw}),
            p(shuffle, shuffle_size=1000), p(sort, sort_size=500),
            p(batch, batch_type="dynamic", max_frames_in_batch=2000), p(padding, use_spk_embedding=False)]


class CosyVoiceDatasetTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="es-cv-")
        cls.plan = os.path.join(cls.tmp, "batch")
        subprocess.run([CLI, "plan", "-q", "--mode", "batch", "--world-size", "2", "--min-length", "10",
                        "--symbol-table", UNITS, "-o", cls.plan, "parquet/data.list"], cwd=CORPUS, check=True, stdout=subprocess.DEVNULL)
        cls.lines = {r: [json.loads(l) for l in open(os.path.join(cls.plan, f"rank-{r:05d}.batches.jsonl"))]
                     for r in range(2)}

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def dataset(self, rank, pipe=None, **kw):
        with mock.patch.dict(os.environ, RANK=str(rank), WORLD_SIZE="2"):
            return cosyvoice.Dataset(os.path.join(CORPUS, "parquet", "data.list"), pipe or pipeline(),
                                     plan=self.plan, root=CORPUS, **kw)

    def test_batch_plan_reaches_padding_batch_by_batch(self):
        for rank in range(2):
            d = self.dataset(rank)
            with mock.patch.dict(os.environ, RANK=str(rank), WORLD_SIZE="2"):
                got = list(d)
            self.assertEqual([b["utts"] for b in got], [l["keys"] for l in self.lines[rank]])
            self.assertEqual([b["src"] for b in got], [[i[0] for i in l["items"]] for l in self.lines[rank]])
            self.assertTrue(got)

    def test_pipeline_surgery_keeps_every_other_stage(self):
        d = self.dataset(0)
        names = []
        while isinstance(d, cosyvoice.Processor):
            names.append(cosyvoice.stage_name(d.f))
            d = d.source
        self.assertEqual(names[::-1], ["tokenize", "filter", "planned_batch", "padding"])
        self.assertIsInstance(d, cosyvoice.PlannedUtterances)

    def test_recipe_settings_other_than_the_plans_are_refused(self):
        with self.assertRaisesRegex(ValueError, "filter has min_length=100.*made with 10.0"):
            self.dataset(0, pipeline(min_length=100))
        pipe = pipeline()
        pipe[5] = functools.partial(batch, batch_type="dynamic", max_frames_in_batch=12000)
        with self.assertRaisesRegex(ValueError, "max_frames_in_batch=12000.*max_frames_in_batch=2000"):
            self.dataset(0, pipe)
        with self.assertRaisesRegex(ValueError, "starts with tokenize"):
            self.dataset(0, pipeline()[1:])

    def test_no_plan_with_partition_is_an_error(self):
        with mock.patch.dict(os.environ, {}, clear=False):
            os.environ.pop("EQUISHARD_PLAN", None)
            with self.assertRaisesRegex(ValueError, "no plan OUTDIR"):
                cosyvoice.Dataset(os.path.join(CORPUS, "parquet", "data.list"), pipeline())

    def test_a_planned_batch_emptied_by_the_pipeline_is_an_error(self):
        def samples(sizes, drop):
            for index, size in enumerate(sizes):
                for k in range(size):
                    if (index, k) not in drop:
                        yield {"utt": f"{index}-{k}", regroup.BATCH_KEY: (index, size)}
        got = list(cosyvoice.planned_batch(samples([2, 3, 1], drop=set())))
        self.assertEqual([[s["utt"] for s in b] for b in got], [["0-0", "0-1"], ["1-0", "1-1", "1-2"], ["2-0"]])
        with self.assertLogs(level="WARNING") as logs:
            got = list(cosyvoice.planned_batch(samples([2, 3], drop={(1, 1)})))
        self.assertEqual([len(b) for b in got], [2, 2])
        self.assertIn("1 of its 3 utterances", logs.output[0])
        with self.assertRaisesRegex(RuntimeError, "planned batch 1 of this worker lost all"):
            list(cosyvoice.planned_batch(samples([2, 1, 2], drop={(1, 0)})))

    def test_a_plan_without_text_token_counts_is_refused(self):
        """The recipe's filter drops on text tokens; a plan made without
        counting them kept every utterance unfiltered: refused before the
        first batch, naming how many lack a count and the option that counts."""
        plan = os.path.join(self.tmp, "uncounted")
        subprocess.run([CLI, "plan", "-q", "--mode", "batch", "--world-size", "2", "--min-length", "10",
                        "-o", plan, "parquet/data.list"], cwd=CORPUS, check=True, stdout=subprocess.DEVNULL)
        with open(os.path.join(CORPUS, "truth.tsv"), encoding="utf-8") as f:
            head = f.readline().rstrip("\n").split("\t")
            with_text = sum(1 for line in f if line.split("\t")[head.index("text_chars")] != "0")
        with mock.patch.dict(os.environ, RANK="0", WORLD_SIZE="2"), self.assertRaisesRegex(
                ValueError, f"{plan}: {with_text} utterance\\(s\\) have no text-token count in the plan, "
                "and the recipe's filter drops utterances on their tokens \\(token_min_length=1, "
                "token_max_length=200, min_output_input_ratio=0.0005, max_output_input_ratio=1\\).*"
                "re-measure with --recipe \\(the training yaml\\) or --tokenizer"):
            cosyvoice.Dataset(os.path.join(CORPUS, "parquet", "data.list"), pipeline(), plan=plan,
                              root=CORPUS)

    def test_a_batch_lost_in_the_pipeline_names_the_stage(self):
        """The error names the stage that dropped every utterance of a planned
        batch and its likely cause; the last batch lost is an error too."""
        def dropping(name, drop):
            def stage(data, max_length=10240, min_length=10, token_max_length=200, token_min_length=1,
                      min_output_input_ratio=0.0005, max_output_input_ratio=1, mode="train"):
                for sample in data:
                    if sample["utt"] not in drop:
                        yield sample
            stage.__name__ = name
            return stage
        lines = self.lines[0]
        self.assertGreaterEqual(len(lines), 3)
        for name, index, cause in (("filter", 1, "measure with --tokenizer"),
                                   ("tokenize", 1, "it passed none of them on"),
                                   ("filter", len(lines) - 1, "measure with --tokenizer")):
            pipe = pipeline()
            at = 2 if name == "filter" else 1
            pipe[at] = functools.partial(dropping(name, set(lines[index]["keys"])),
                                         **pipe[at].keywords)
            d = self.dataset(0, pipe)
            with self.subTest(name=name, index=index), \
                    mock.patch.dict(os.environ, RANK="0", WORLD_SIZE="2"), \
                    self.assertRaisesRegex(RuntimeError, f"planned batch {index} of this worker lost all its "
                                           f"utterances in the pipeline's {name} stage \\(.*{cause}"):
                list(d)

    def test_a_row_that_is_not_the_planned_key_is_an_error(self):
        """The data changed after planning: the fetched row names another key."""
        tmp = os.path.join(self.tmp, "moved")
        shutil.copytree(self.plan, tmp)
        path = os.path.join(tmp, "rank-00000.batches.jsonl")
        lines = [json.loads(l) for l in open(path)]
        lines[0]["keys"][0] = "not-this-key"
        with open(path, "w") as f:
            f.write("".join(json.dumps(l) + "\n" for l in lines))
        with mock.patch.dict(os.environ, RANK="0", WORLD_SIZE="2"):
            d = cosyvoice.Dataset(os.path.join(CORPUS, "parquet", "data.list"), pipeline(), plan=tmp, root=CORPUS)
            with self.assertRaisesRegex(ValueError, "the plan has 'not-this-key' there"):
                list(d)


if __name__ == "__main__":
    unittest.main()
