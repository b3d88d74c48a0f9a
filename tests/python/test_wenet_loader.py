"""equishard.loaders.wenet without torch or WeNet: the Dataset drop-in's
pipeline (WeNet's stages from conf, shuffle and sort left out, the batch stage
replaced), its source of planned tar utterances, per-epoch batches across
persistent workers, and the checks that make misuse loud. (tests/e2e runs it
inside WeNet's real loop.)"""
import json
import os
import shutil
import subprocess
import tempfile
import types
import unittest
from unittest import mock

from equishard.loaders import regroup, wenet
from test_binding import CLI, CORPUS

SHARDS = os.path.join(CORPUS, "shards", "shards.list")


# stand-ins with the names and keyword defaults of wenet/dataset/processor.py's functions
def decode_wav(sample):
    assert isinstance(sample["wav"], bytes)
    sample["wav"] = len(sample["wav"])  # WeNet: a tensor; here the byte count
    sample["sample_rate"] = 16000
    return sample


def singal_channel(sample, channel=0):
    return sample


def tokenize(sample, tokenizer):
    sample["label"] = tokenizer(sample["txt"])
    return sample


def filter(sample, max_length=10240, min_length=10, token_max_length=200, token_min_length=1,
           min_output_input_ratio=0.0005, max_output_input_ratio=1):
    return True


def resample(sample, resample_rate=16000):
    return sample


def speed_perturb(sample, speeds=None):
    return sample


def compute_fbank(sample, num_mel_bins=23, frame_length=25, frame_shift=10, dither=0.0,
                  window_type="povey"):
    sample["feat"] = sample["wav"]
    return sample


def compute_mfcc(sample, num_mel_bins=23, frame_length=25, frame_shift=10, dither=0.0,
                 num_ceps=40, high_freq=0.0, low_freq=20.0):
    return compute_fbank(sample)


def compute_log_mel_spectrogram(sample, n_fft=400, hop_length=160, num_mel_bins=80, padding=0,
                                pad_or_trim=False, max_duration=30):
    return compute_fbank(sample)


def spec_aug(sample, num_t_mask=2, num_f_mask=2, max_t=50, max_f=10, max_w=80):
    return sample


def spec_sub(sample, max_t=20, num_t_sub=3):
    return sample


def spec_trim(sample, max_t=20):
    return sample


def detect_language(sample, limited_langs):
    sample["lang"] = limited_langs[0]
    return sample


def detect_task(sample):
    sample["task"] = "transcribe"
    return sample


def padding(data):
    assert isinstance(data, list)
    return {"keys": [s["key"] for s in data], "tar": [s["tar_file_name"] for s in data],
            "samples": data}


def parse_json(elem):  # upstream's, as it is (wenet/dataset/processor.py)
    line = elem['line']
    obj = json.loads(line)
    obj['file_name'] = elem['file_name']
    return dict(obj)


def decode_wav_path(sample):  # raw lists: "wav" is a path (relative to CORPUS here)
    sample["path"] = sample["wav"]
    return decode_wav(dict(sample, wav=open(os.path.join(CORPUS, sample["wav"]), "rb").read()))


def padding_raw(data):
    return {"keys": [s["key"] for s in data], "samples": data}


PROCESSOR = types.SimpleNamespace(**{f.__name__: f for f in (
    decode_wav, singal_channel, tokenize, filter, resample, speed_perturb, compute_fbank,
    compute_mfcc, compute_log_mel_spectrogram, spec_aug, spec_sub, spec_trim, detect_language,
    detect_task, padding, parse_json)})
# WeNet's processor.filter defaults, fbank at 10 ms (100 frames a second), dynamic batches;
# labels counted as CharTokenizer does with a table of <blank> and <unk> only (one a code point)
UNITS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "char_units.txt")
PLAN_ARGS = ["--frame-rate", "100", "--min-length", "10", "--max-length", "10240",
             "--max-frames-in-batch", "3000", "--symbol-table", UNITS]
CONF = {"filter_conf": {}, "fbank_conf": {"num_mel_bins": 80}, "shuffle": True,
        "shuffle_conf": {"shuffle_size": 1500}, "sort": True, "sort_conf": {"sort_size": 500},
        "batch_conf": {"batch_type": "dynamic", "max_frames_in_batch": 3000}}


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


class WeNetDatasetTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="es-wenet-")
        cls.plan = os.path.join(cls.tmp, "batch")
        subprocess.run([CLI, "plan", "-q", "--mode", "batch", "--world-size", "2", *PLAN_ARGS,
                        "-o", cls.plan, "shards/shards.list"], cwd=CORPUS, check=True,
                       stdout=subprocess.DEVNULL)
        cls.lines = {r: read_jsonl(os.path.join(cls.plan, f"rank-{r:05d}.batches.jsonl"))
                     for r in range(2)}

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def dataset(self, rank, conf=None, tokenizer=None, plan=None, **kw):
        with mock.patch.dict(os.environ, RANK=str(rank), WORLD_SIZE="2"):
            return wenet.Dataset("shard", SHARDS, tokenizer, conf or CONF, plan=plan or self.plan,
                                 root=CORPUS, processor=PROCESSOR, **kw)

    def batches(self, d, rank):
        with mock.patch.dict(os.environ, RANK=str(rank), WORLD_SIZE="2"):
            return list(d)

    def test_batch_plan_reaches_padding_batch_by_batch(self):
        for rank in range(2):
            got = self.batches(self.dataset(rank), rank)
            self.assertTrue(got)
            self.assertEqual([b["keys"] for b in got], [l["keys"] for l in self.lines[rank]])
            self.assertEqual([b["tar"] for b in got], [[i[0] for i in l["items"]] for l in self.lines[rank]])

    def test_samples_are_what_tar_file_and_group_yields(self):
        d = self.dataset(0, tokenizer=lambda text: [ord(c) for c in text])
        sample = self.batches(d, 0)[0]["samples"][0]
        self.assertEqual(sample["file_name"], SHARDS)
        self.assertTrue(sample["tar_file_name"].startswith("shards/shards_"))
        self.assertIsInstance(sample["txt"], str)
        self.assertEqual(sample["txt"], sample["txt"].strip())
        self.assertEqual(sample["label"], [ord(c) for c in sample["txt"]])
        self.assertEqual(set(sample) - {"label", "sample_rate", "feat", "lang", "task"},
                         {"file_name", "tar_file_name", "key", "txt", "wav"})
        self.assertGreater(sample["feat"], 44)  # decode_wav saw the wav member's bytes
        self.assertEqual((sample["lang"], sample["task"]), ("zh", "transcribe"))
        self.assertNotIn(regroup.BATCH_KEY, sample)

    def test_tar_example(self):
        row = {"key": "u1", "txt": b" hello \n", "flac": b"fLaC", "spk": b"S1"}
        self.assertEqual(wenet.tar_example(row, "data.list", "a.tar"),
                         {"file_name": "data.list", "tar_file_name": "a.tar", "key": "u1",
                          "txt": "hello", "wav": b"fLaC", "spk": b"S1"})
        with self.assertLogs(level="WARNING"):
            self.assertIsNone(wenet.tar_example({"key": "u2", "txt": b"\xff\xfe"}, "l", "a.tar"))

    def test_stages_follow_conf_without_shuffle_sort_or_batch(self):
        d = self.dataset(0, tokenizer=str.split)
        names = [wenet.stage_name(f) for _, f in d.stages]
        self.assertEqual(names, ["decode_wav", "singal_channel", "tokenize", "filter", "resample",
                                 "compute_fbank", "spec_aug", "detect_language", "detect_task", "padding"])
        self.assertEqual(d.stages[0][0], "map_ignore_error")
        self.assertEqual(d.stages[-1][0], "planned_batches")
        self.assertIsInstance(d.source, wenet.PlannedUtterances)
        conf = dict(CONF, speed_perturb=True, spec_aug=False, spec_sub=True, spec_trim=True,
                    feats_type="mfcc", language_conf={"limited_langs": ["en"]})
        names = [wenet.stage_name(f) for _, f in self.dataset(0, conf).stages]
        self.assertEqual(names, ["decode_wav", "singal_channel", "filter", "resample", "speed_perturb",
                                 "compute_mfcc", "spec_sub", "spec_trim", "detect_language",
                                 "detect_task", "padding"])

    def test_a_failing_decode_is_skipped_as_map_ignore_error_does(self):
        def broken(sample):
            if sample["key"] == self.lines[0][0]["keys"][0]:
                raise RuntimeError("cannot decode")
            return decode_wav(sample)
        proc = types.SimpleNamespace(**dict(vars(PROCESSOR), decode_wav=broken))
        with mock.patch.dict(os.environ, RANK="0", WORLD_SIZE="2"):
            d = wenet.Dataset("shard", SHARDS, None, CONF, plan=self.plan, root=CORPUS, processor=proc)
            with self.assertLogs(level="WARNING") as logs:
                got = list(d)
        self.assertIn("cannot decode", logs.output[0])
        self.assertEqual(got[0]["keys"], self.lines[0][0]["keys"][1:])

    def test_recipe_settings_other_than_the_plans_are_refused(self):
        bad = [
            (dict(CONF, filter_conf={"min_length": 0}), "filter_conf has min_length=0.*made with 10"),
            (dict(CONF, filter_conf={"token_max_length": 100}), "token_max_length=100.*made with 200"),
            (dict(CONF, fbank_conf={"frame_shift": 20}), "50 frames a second.*--frame-rate 50"),
            (dict(CONF, batch_conf={"batch_type": "dynamic"}), "max_frames_in_batch=12000.*max_frames_in_batch=3000"),
            (dict(CONF, batch_conf={"batch_type": "static", "batch_size": 16}), "16 utterances \\(static\\)"),
            (dict(CONF, batch_conf={"batch_type": "bucket", "bucket_boundaries": [500],
                                    "bucket_batch_sizes": [8, 4]}), "bucket.*no planned equivalent"),
        ]
        for conf, message in bad:
            with self.subTest(message), self.assertRaisesRegex(ValueError, message):
                self.dataset(0, conf)

    def test_no_plan_is_refused(self):
        with mock.patch.dict(os.environ, {}, clear=False):
            os.environ.pop("EQUISHARD_PLAN", None)
            with self.assertRaisesRegex(ValueError, "no plan OUTDIR"):
                wenet.Dataset("shard", SHARDS, None, CONF, processor=PROCESSOR)

    def test_raw_list_batch_plan_reaches_padding_through_parse_json(self):
        """data_type "raw": each planned line, as upstream's parse_json makes it
        ({"key", "wav", "txt", ..., "file_name"}), batch by batch in plan order."""
        raw = os.path.join(CORPUS, "raw.list")
        plan = os.path.join(self.tmp, "raw-batch")
        subprocess.run([CLI, "plan", "-q", "--mode", "batch", "--world-size", "2", *PLAN_ARGS,
                        "-o", plan, "raw.list"], cwd=CORPUS, check=True, stdout=subprocess.DEVNULL)
        by_key = {}
        with open(raw, encoding="utf8") as f:
            for line in f:
                by_key[json.loads(line)["key"]] = json.loads(line)
        proc = types.SimpleNamespace(**dict(vars(PROCESSOR), decode_wav=decode_wav_path,
                                            padding=padding_raw))
        for rank in range(2):
            with mock.patch.dict(os.environ, RANK=str(rank), WORLD_SIZE="2"):
                d = wenet.Dataset("raw", raw, None, CONF, plan=plan, root=CORPUS, processor=proc)
                got = list(d)
            want = read_jsonl(os.path.join(plan, f"rank-{rank:05d}.batches.jsonl"))
            self.assertTrue(want)
            self.assertEqual([b["keys"] for b in got], [b["keys"] for b in want])
            for batch in got:
                for sample in batch["samples"]:
                    self.assertEqual(sample["file_name"], raw)
                    self.assertEqual(sample["txt"], by_key[sample["key"]]["txt"])
                    self.assertEqual(sample["path"], by_key[sample["key"]]["wav"])

    def test_list_lines_index_rows_as_measure_counts_them(self):
        """CRLF endings and blank lines: list_lines(path)[pos] is the row's line."""
        path = os.path.join(self.tmp, "crlf.list")
        with open(os.path.join(CORPUS, "raw.list"), encoding="utf8") as f:
            lines = [ln.rstrip("\n") for ln in f][:6]
        with open(path, "wb") as f:
            f.write(("\r\n".join(lines[:3]) + "\r\n\n" + "\n".join(lines[3:]) + "\n").encode())
        costs = os.path.join(self.tmp, "crlf.tsv")
        subprocess.run([CLI, "measure", "-q", "--root", CORPUS, "-o", costs, path], check=True)
        got = wenet.list_lines(path)
        with open(costs, encoding="utf8") as f:
            rows = [ln.rstrip("\n").split("\t") for ln in f if not ln.startswith("#")]
        header = rows.pop(0)
        self.assertEqual(len(rows), 6)
        for row in rows:
            pos, key = int(row[header.index("pos")]), row[header.index("key")]
            self.assertEqual(json.loads(got[pos])["key"], key)
        self.assertEqual(got[3], "")  # the blank line keeps its place

    def test_a_planned_batch_emptied_by_the_pipeline_is_an_error(self):
        def samples(sizes, drop):
            for index, size in enumerate(sizes):
                for k in range(size):
                    if (index, k) not in drop:
                        yield {"key": f"{index}-{k}", regroup.BATCH_KEY: (index, size)}
        keys = lambda data: [s["key"] for s in data]  # noqa: E731
        got = list(wenet.planned_batches(samples([2, 3, 1], drop=set()), keys))
        self.assertEqual(got, [["0-0", "0-1"], ["1-0", "1-1", "1-2"], ["2-0"]])
        with self.assertLogs(level="WARNING") as logs:
            got = list(wenet.planned_batches(samples([2, 3], drop={(1, 1)}), keys))
        self.assertEqual([len(b) for b in got], [2, 2])
        self.assertIn("1 of its 3 utterances", logs.output[0])
        with self.assertRaisesRegex(RuntimeError, "planned batch 1 of this worker lost all"):
            list(wenet.planned_batches(samples([2, 1, 2], drop={(1, 0)}), keys))

    def test_a_plan_without_label_counts_is_refused(self):
        """WeNet's filter drops on the label's length; a plan whose rows lack
        text-token counts (no --symbol-table) is refused before the first batch."""
        plan = os.path.join(self.tmp, "uncounted")
        subprocess.run([CLI, "plan", "-q", "--mode", "batch", "--world-size", "2", *PLAN_ARGS[:-2],
                        "-o", plan, "shards/shards.list"], cwd=CORPUS, check=True, stdout=subprocess.DEVNULL)
        with open(os.path.join(CORPUS, "truth.tsv"), encoding="utf-8") as f:
            head = f.readline().rstrip("\n").split("\t")
            with_text = sum(1 for line in f if line.split("\t")[head.index("text_chars")] != "0")
        with self.assertRaisesRegex(ValueError, f"{plan}: {with_text} utterance\\(s\\) have no text-token count.*"
                                    "filter_conf drops .*token_max_length=200.*--symbol-table"):
            self.dataset(0, plan=plan)

    def test_a_batch_lost_in_the_pipeline_names_the_stage(self):
        """WeNet's filter (a filter stage) or decode_wav (map_ignore_error)
        dropping every utterance of a planned batch: the error names it."""
        drop = set(self.lines[0][1]["keys"])

        def dropping_filter(sample, max_length=10240, min_length=10, token_max_length=200,
                            token_min_length=1, min_output_input_ratio=0.0005,
                            max_output_input_ratio=1):
            return sample["key"] not in drop
        dropping_filter.__name__ = "filter"

        def failing_decode_wav(sample):
            if sample["key"] in drop:
                raise ValueError(f"cannot decode {sample['key']}")
            return decode_wav(sample)
        failing_decode_wav.__name__ = "decode_wav"
        for stage, fn, cause in (("filter", dropping_filter, "measure with --tokenizer"),
                                 ("decode_wav", failing_decode_wav, "see the warnings logged above")):
            processor = types.SimpleNamespace(**{**vars(PROCESSOR), stage: fn})
            with mock.patch.dict(os.environ, RANK="0", WORLD_SIZE="2"):
                d = wenet.Dataset("shard", SHARDS, None, CONF, plan=self.plan, root=CORPUS,
                                  processor=processor)
            with self.subTest(stage=stage), mock.patch("logging.warning"), \
                    self.assertRaisesRegex(RuntimeError, "planned batch 1 of this worker lost all its "
                                           f"utterances in the pipeline's {stage} stage \\(.*{cause}"):
                self.batches(d, 0)

    def test_every_iteration_is_a_new_epoch_and_set_epoch_resets(self):
        """WeNet's DataLoader workers are persistent: set_epoch never reaches
        their copy, so each new iteration trains the next epoch's plan."""
        d = self.dataset(0)
        epoch0 = [b["keys"] for b in self.batches(d, 0)]
        epoch1 = [b["keys"] for b in self.batches(d, 0)]
        self.assertEqual(epoch0, [l["keys"] for l in self.lines[0]])
        self.assertNotEqual(epoch1, epoch0)
        with mock.patch.dict(os.environ, RANK="0", WORLD_SIZE="2"):
            self.assertEqual(epoch1, [b["keys"] for b in wenet.PlanDir(self.plan).epoch_batches(0, 0, 1)])
        d.set_epoch(1)
        self.assertEqual([b["keys"] for b in self.batches(d, 0)], epoch1)
        d.set_epoch(0)
        self.assertEqual([b["keys"] for b in self.batches(d, 0)], epoch0)
        both = self.dataset(0, dict(CONF, cycle=2))  # cycle: epochs one after another
        self.assertEqual([b["keys"] for b in self.batches(both, 0)], epoch0 + epoch1)

    def test_every_rank_trains_the_same_steps_and_each_kept_utterance_once(self):
        keys = [k for r in range(2) for b in self.batches(self.dataset(r), r) for k in b["keys"]]
        with open(os.path.join(self.plan, "plan.json"), encoding="utf-8") as f:
            info = json.load(f)
        steps = {len(self.batches(self.dataset(r), r)) for r in range(2)}
        self.assertEqual(steps, {info["metrics"]["steps"]})
        self.assertEqual(len(set(keys)), info["metrics"]["kept"])
        self.assertEqual(len(keys) - len(set(keys)), info["metrics"]["remainder"]["utterances"])

    def test_a_row_that_is_not_the_planned_key_is_an_error(self):
        tmp = os.path.join(self.tmp, "moved")
        shutil.copytree(self.plan, tmp)
        path = os.path.join(tmp, "rank-00000.batches.jsonl")
        lines = read_jsonl(path)
        lines[0]["keys"][0] = "not-this-key"
        with open(path, "w") as f:
            f.write("".join(json.dumps(l) + "\n" for l in lines))
        d = self.dataset(0, plan=tmp)
        with self.assertRaisesRegex(ValueError, "the plan has 'not-this-key' there"):
            self.batches(d, 0)


if __name__ == "__main__":
    unittest.main()
