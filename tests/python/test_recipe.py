"""--recipe FILE / recipe=: the training recipe's own yaml as the settings.

Expected values come from the upstream yamls in ../shared/third_party read with
Python's yaml loader (PyYAML) and hyperpyyaml's rules written out here (!ref,
!name:), and from the upstream processor functions' own defaults (read from
processor.py with ast, not imported: they need torch). SKIP without them.
"""
import ast
import functools
import json
import os
import shutil
import subprocess
import tempfile
import unittest

import equishard
from equishard.loaders import PlanDir, cosyvoice
from test_binding import CLI, CORPUS, ROOT

try:
    import yaml
except ImportError:  # python3-yaml
    yaml = None

THIRD = os.path.join(ROOT, "..", "shared", "third_party")
CV = os.path.join(THIRD, "cosyvoice")
WENET = os.path.join(THIRD, "wenet")
CV_YAMLS = {v: os.path.join(CV, "examples", "libritts", v, "conf", v + ".yaml")
            for v in ("cosyvoice", "cosyvoice2", "cosyvoice3")}
WENET_YAMLS = {v: os.path.join(WENET, "examples", v, "s0", "conf", "train_conformer.yaml")
               for v in ("aishell", "librispeech")}
QWEN = os.path.join(ROOT, "..", "shared", "fixtures", "tokenizers", "qwen2")


# ---- the oracle: hyperpyyaml's reading, on PyYAML ------------------------------------

class Ref(str):
    """!ref text, resolved against the top level (hyperpyyaml)."""


class Fn(dict):
    """A !name:/!new:/!apply: node: the function's dotted name and its keywords."""

    def __init__(self, name, kw):
        super().__init__(kw)
        self.name = name


def _loader():
    class L(yaml.SafeLoader):
        pass

    def fn(loader, suffix, node):
        kw = loader.construct_mapping(node, deep=True) if isinstance(node, yaml.MappingNode) else {}
        return Fn(suffix, kw)
    for tag in ("!name:", "!new:", "!apply:"):
        L.add_multi_constructor(tag, fn)
    L.add_constructor("!ref", lambda loader, node: Ref(loader.construct_scalar(node)))
    return L


def _arith(text):
    """hyperpyyaml evaluates a substituted reference string when it is arithmetic."""
    def ev(n):
        if isinstance(n, ast.Expression):
            return ev(n.body)
        if isinstance(n, ast.Constant) and isinstance(n.value, (int, float)):
            return n.value
        if isinstance(n, ast.BinOp):
            ops = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b,
                   ast.Mult: lambda a, b: a * b, ast.Div: lambda a, b: a / b}
            return ops[type(n.op)](ev(n.left), ev(n.right))
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub):
            return -ev(n.operand)
        raise ValueError(text)
    try:
        return ev(ast.parse(text, mode="eval"))
    except (SyntaxError, ValueError, KeyError):
        return text


def read_yaml(path, overrides=None):
    with open(path, encoding="utf-8") as f:
        top = yaml.load(f, Loader=_loader())
    top.update(overrides or {})

    def resolve(v):
        if isinstance(v, Ref):
            s = v.strip()
            if s.startswith("<") and s.endswith(">") and s.count("<") == 1:
                return resolve(top[s[1:-1]])
            out = s
            while "<" in out:
                a = out.index("<")
                b = out.index(">", a)
                out = out[:a] + str(resolve(top[out[a + 1:b]])) + out[b + 1:]
            return _arith(out)
        if isinstance(v, Fn):
            return Fn(v.name, {k: resolve(x) for k, x in v.items()})
        if isinstance(v, dict):
            return {k: resolve(x) for k, x in v.items()}
        if isinstance(v, list):
            return [resolve(x) for x in v]
        return v
    return {k: resolve(v) for k, v in top.items()}


def functions(path, names):
    """The named functions of an upstream module, defined from its source (ast)
    without running its imports: their signatures, hence their defaults."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    defs = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in names]
    scope = {}
    exec(compile(ast.Module(body=defs, type_ignores=[]), path, "exec"), scope)
    return {n: scope[n] for n in names}


def defaults(func):
    import inspect
    return {k: p.default for k, p in inspect.signature(func).parameters.items()
            if p.default is not inspect.Parameter.empty}


def speeds_default(path):
    """processor.speed_perturb's `speeds = [...]` when none are given."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "speed_perturb")
    for n in ast.walk(fn):
        if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "speeds":
            return ast.literal_eval(n.value)
    raise AssertionError("speed_perturb has no default speeds")


FILTER = ("min_length", "max_length", "token_min_length", "token_max_length",
          "min_output_input_ratio", "max_output_input_ratio")
CV_FUNCS = ("parquet_opener", "tokenize", "filter", "resample", "truncate", "compute_fbank",
            "compute_whisper_fbank", "compute_f0", "parse_embedding", "shuffle", "sort", "batch",
            "padding")


def cosyvoice_expected(path, overrides=None):
    """What CosyVoice's train.py runs: data_pipeline's stages, each its
    processor function with the yaml's keywords over the function's defaults."""
    proc = functions(os.path.join(CV, "cosyvoice", "dataset", "processor.py"), CV_FUNCS)
    top = read_yaml(path, overrides)
    stages = {f.name.rsplit(".", 1)[1]: f for f in top["data_pipeline"]}
    kw = {n: {**defaults(proc[n]), **stages[n]} for n in stages if n in proc}
    b = kw["batch"]
    fe = kw["compute_fbank"]["feat_extractor"]
    tok = kw["tokenize"]["get_tokenizer"]
    return dict(
        loader="cosyvoice", filter={k: kw["filter"][k] for k in FILTER},
        shuffle_size=kw["shuffle"]["shuffle_size"] if "shuffle" in kw else 0,
        sort_size=kw["sort"]["sort_size"] if "sort" in kw else 0,
        batch_size=b["batch_size"] if b["batch_type"] == "static" else 0,
        max_frames_in_batch=b["max_frames_in_batch"] if b["batch_type"] == "dynamic" else 0,
        sample_rate=kw["resample"]["resample_rate"],
        frame_rate=fe["sampling_rate"] / fe["hop_size"],
        tokenizer_function=tok.name, token_path=tok.get("token_path"),
        version=tok.get("version", "cosyvoice2") if tok.name.endswith("get_qwen_tokenizer") else None,
        allowed_special=kw["tokenize"]["allowed_special"])


def wenet_expected(path):
    """What WeNet's dataset.py reads from dataset_conf (conf.get and its defaults)."""
    processor = os.path.join(WENET, "wenet", "dataset", "processor.py")
    proc = functions(processor, ("filter", "compute_fbank"))
    top = read_yaml(path)
    conf = top["dataset_conf"]
    filt = {**defaults(proc["filter"]), **conf.get("filter_conf", {})}
    b = conf.get("batch_conf", {})
    kind = b.get("batch_type", "static")
    shift = {**defaults(proc["compute_fbank"]), **conf.get("fbank_conf", {})}["frame_shift"]
    speeds = speeds_default(processor) if conf.get("speed_perturb", False) else [0]
    tc = top.get("tokenizer_conf", {})
    return dict(
        loader="wenet", filter={k: filt[k] for k in FILTER},
        shuffle_size=conf["shuffle_conf"]["shuffle_size"] if conf.get("shuffle", True) else 0,
        sort_size=conf["sort_conf"]["sort_size"] if conf.get("sort", True) else 0,
        batch_size=b.get("batch_size", 16) if kind == "static" else 0,
        max_frames_in_batch=b.get("max_frames_in_batch", 12000) if kind == "dynamic" else 0,
        sample_rate=conf.get("resample_conf", {}).get("resample_rate", 16000),
        frame_rate=1000.0 / shift, speed_min=min(speeds), speed_max=max(speeds),
        symbol_table=tc.get("symbol_table_path") if top.get("tokenizer") == "char" else None,
        split_with_space=bool(tc.get("split_with_space", False)))


def xxh3(path):
    out = subprocess.run(["xxhsum", "-H3", path], check=True, capture_output=True, text=True).stdout
    return out.rsplit("=", 1)[1].strip()


def have(*paths):
    return yaml is not None and all(os.path.exists(p) for p in paths)


@unittest.skipUnless(have(*CV_YAMLS.values(), *WENET_YAMLS.values()),
                     "no upstream recipes in ../shared/third_party, or no python3-yaml")
class RecipeReadTest(unittest.TestCase):
    def check_common(self, info, want):
        self.assertEqual(info.loader_name, want["loader"])
        for k in FILTER:
            self.assertAlmostEqual(getattr(info.model, k), want["filter"][k], msg=k)
        for k in ("shuffle_size", "sort_size", "batch_size", "max_frames_in_batch", "sample_rate"):
            self.assertEqual(getattr(info, k), want[k], k)
        self.assertAlmostEqual(info.model.frame_rate, want["frame_rate"])

    def test_cosyvoice_recipes(self):
        for name, path in CV_YAMLS.items():
            with self.subTest(name):
                want = cosyvoice_expected(path)
                r = equishard.Recipe(path)
                self.check_common(r.info, want)
                self.assertEqual(r.info.allowed_special, want["allowed_special"])
                if want["version"] is None:  # CosyVoice 1: whisper's tokenizer
                    self.assertIn(want["tokenizer_function"], r.info.tokenizer_note)
                    self.assertFalse(r.info.tokenizer_unresolved)
                else:  # token_path is <qwen_pretrain_path>, '' until train.py sets it
                    self.assertEqual(want["token_path"], "")
                    self.assertEqual(r.info.specials, want["version"])
                    self.assertTrue(r.info.tokenizer_unresolved)
                    self.assertIn("--set qwen_pretrain_path=", r.info.tokenizer_note)
                    over = {"qwen_pretrain_path": "/models/CosyVoice-BlankEN"}
                    want = cosyvoice_expected(path, over)
                    r = equishard.Recipe(path, sets=over)
                    self.assertEqual(r.info.tokenizer, want["token_path"])
                    self.assertFalse(r.info.tokenizer_unresolved)

    def test_wenet_recipes(self):
        for name, path in WENET_YAMLS.items():
            with self.subTest(name):
                want = wenet_expected(path)
                info = equishard.Recipe(path).info
                self.check_common(info, want)
                self.assertEqual((info.speed_min, info.speed_max),
                                 (want["speed_min"], want["speed_max"]))
                self.assertEqual(info.symbol_table, want["symbol_table"])
                self.assertEqual(bool(info.split_with_space), want["split_with_space"])
                self.assertEqual(info.model.require_speech_token, 0)

    def test_references_and_arithmetic(self):
        tmp = tempfile.mkdtemp(prefix="es-recipe-")
        self.addCleanup(shutil.rmtree, tmp)
        path = os.path.join(tmp, "r.yaml")
        with open(path, "w", encoding="utf-8") as f:
            f.write("base: 3000\nratio: 2\nlo: !ref <floor>\nfloor: 25\nrate: 16000\nhop: 320\n"
                    "filter: !name:cosyvoice.dataset.processor.filter\n"
                    "    max_length: !ref <base> * <ratio> + 1\n"
                    "    min_length: !ref <lo>\n"
                    "fe: !name:matcha.utils.audio.mel_spectrogram\n"
                    "    sampling_rate: !ref <rate>\n    hop_size: !ref <hop>\n"
                    "batch: !name:cosyvoice.dataset.processor.batch\n"
                    "    batch_type: !ref <kind>\n    max_frames_in_batch: !ref (<base> - 999) // 2\n"
                    "kind: dynamic\n"
                    "data_pipeline: [!ref <filter>,\n"
                    "    !name:cosyvoice.dataset.processor.compute_fbank {feat_extractor: !ref <fe>},\n"
                    "    !ref <batch>]\n")
        info = equishard.Recipe(path).info
        top = read_yaml(path)
        self.assertEqual(info.model.max_length, top["filter"]["max_length"])   # 6001
        self.assertEqual(info.model.min_length, top["filter"]["min_length"])   # 25
        self.assertEqual(info.model.frame_rate, top["fe"]["sampling_rate"] / top["fe"]["hop_size"])
        self.assertEqual(info.max_frames_in_batch, (3000 - 999) // 2)  # floor division
        self.assertEqual((info.shuffle_size, info.sort_size), (0, 0))  # no such stages
        r = equishard.Recipe(path, sets=["base=5000"])
        self.assertEqual(r.info.model.max_length, read_yaml(path, {"base": 5000})["filter"]["max_length"])


def run(*args, cwd=None):
    return subprocess.run([CLI, *args], capture_output=True, text=True, cwd=cwd)


@unittest.skipUnless(have(*CV_YAMLS.values(), *WENET_YAMLS.values()),
                     "no upstream recipes in ../shared/third_party, or no python3-yaml")
class RecipeCliTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="es-recipe-cli-")
        cls.costs = os.path.join(cls.tmp, "costs.tsv")
        subprocess.run([CLI, "measure", "-q", "-o", cls.costs, "parquet/data.list"], cwd=CORPUS,
                       check=True)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def plan(self, *args, name="plan"):
        out = os.path.join(self.tmp, name)
        p = run("plan", "--world-size", "2", "--workers", "2", "--mode", "batch", "-o", out,
                "--root", CORPUS, *args, self.costs)
        self.assertEqual(p.returncode, 0, p.stderr)
        return out

    def test_plan_records_the_recipe_and_takes_its_settings(self):
        for path, want in [(p, cosyvoice_expected(p)) for p in CV_YAMLS.values()] + \
                          [(p, wenet_expected(p)) for p in WENET_YAMLS.values()]:
            with self.subTest(path):
                with open(os.path.join(self.plan("--recipe", path), "plan.json"), encoding="utf-8") as f:
                    params = json.load(f)["parameters"]
                for k in FILTER:
                    self.assertAlmostEqual(params["filter"][k], want["filter"][k], msg=k)
                self.assertEqual(params["batch_size"], want["batch_size"])
                if want["max_frames_in_batch"]:
                    self.assertEqual(params["max_frames_in_batch"], want["max_frames_in_batch"])
                self.assertEqual(params["sort_size"], want["sort_size"])
                self.assertAlmostEqual(params["cost_model"]["frame_rate"], want["frame_rate"])
                rec = params["recipe"]
                self.assertEqual((rec["path"], rec["digest"], rec["loader"]),
                                 (path, "xxh3-64:" + xxh3(path), want["loader"]))
                perturb = want.get("speed_max", 0) > 0
                self.assertEqual(rec["speed_perturb"],
                                 {"min": want["speed_min"], "max": want["speed_max"]} if perturb else None)

    def test_flags_override_the_recipe_wherever_they_stand(self):
        for args in (["--max-length", "7000", "--recipe", CV_YAMLS["cosyvoice2"]],
                     ["--recipe", CV_YAMLS["cosyvoice2"], "--max-length", "7000"]):
            with open(os.path.join(self.plan(*args), "plan.json"), encoding="utf-8") as f:
                params = json.load(f)["parameters"]
            self.assertEqual(params["filter"]["max_length"], 7000)
            self.assertEqual(params["filter"]["min_length"],
                             cosyvoice_expected(CV_YAMLS["cosyvoice2"])["filter"]["min_length"])

    def test_without_a_recipe_plan_json_says_null(self):
        with open(os.path.join(self.plan(), "plan.json"), encoding="utf-8") as f:
            self.assertIsNone(json.load(f)["parameters"]["recipe"])

    def test_simulate_takes_the_loader_and_buffers(self):
        path = WENET_YAMLS["aishell"]
        want = wenet_expected(path)
        out = os.path.join(self.tmp, "sim.json")
        p = run("simulate", "--recipe", path, "-k", "2", "-o", out, self.costs)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(out, encoding="utf-8") as f:
            params = json.load(f)["parameters"]
        self.assertEqual(params["loader"], "wenet")
        self.assertEqual((params["shuffle_size"], params["sort_size"], params["batch_size"]),
                         (want["shuffle_size"], want["sort_size"], want["batch_size"]))
        p = run("simulate", "--recipe", path, "--loader", "cosyvoice", "-k", "2", self.costs)
        self.assertEqual(p.returncode, 2)
        self.assertIn("is a wenet recipe", p.stderr)

    def test_problems_are_one_line_exit_2(self):
        bad = os.path.join(self.tmp, "bad.yaml")
        with open(bad, "w", encoding="utf-8") as f:
            f.write("a: 1\nfilter: !name:x.filter\n    max_length: [1, 2]\n"
                    "data_pipeline: [!ref <filter>]\n")
        notyaml = os.path.join(self.tmp, "notyaml.yaml")
        with open(notyaml, "w", encoding="utf-8") as f:
            f.write("a: [1, 2\nb: 3\n")
        cv2 = CV_YAMLS["cosyvoice2"]
        cases = [
            # the tokenizer the recipe leaves to train.py, needed to measure a list
            (["plan", "-k", "2", "--recipe", cv2, "-o", os.path.join(self.tmp, "x"),
              "parquet/data.list"], f"{cv2}:", "--set qwen_pretrain_path="),
            (["plan", "-k", "2", "--set", "a=1", "-o", os.path.join(self.tmp, "x"), self.costs],
             "--set", "give --recipe"),
            (["plan", "-k", "2", "--recipe", cv2, "--set", "nothere=1", "-o",
              os.path.join(self.tmp, "x"), self.costs], cv2, "no top-level nothere"),
            (["plan", "-k", "2", "--recipe", bad, "-o", os.path.join(self.tmp, "x"), self.costs],
             f"{bad}:3: filter.max_length", "not a number"),
            (["plan", "-k", "2", "--recipe", notyaml, "-o", os.path.join(self.tmp, "x"), self.costs],
             f"{notyaml}:", "not yaml"),
            (["measure", "--recipe", os.path.join(self.tmp, "none.yaml"), "parquet/data.list"],
             "none.yaml", "No such file"),
        ]
        for args, where, what in cases:
            with self.subTest(args):
                p = run(*args, cwd=CORPUS)
                self.assertEqual(p.returncode, 2, p.stderr)
                lines = p.stderr.strip().splitlines()
                self.assertEqual(len(lines), 1, p.stderr)
                self.assertIn(where, lines[0])
                self.assertIn(what, lines[0])
                self.assertFalse(os.path.exists(os.path.join(self.tmp, "x")))

    @unittest.skipUnless(os.path.isdir(QWEN), "no Qwen2 tokenizer fixture")
    def test_measure_counts_with_the_recipes_tokenizer(self):
        cv3 = CV_YAMLS["cosyvoice3"]
        p = run("measure", "-q", "--recipe", cv3, "--set", f"qwen_pretrain_path={QWEN}",
                "parquet/data.list", cwd=CORPUS)
        self.assertEqual(p.returncode, 0, p.stderr)
        q = run("measure", "-q", "--tokenizer", QWEN, "--specials", "cosyvoice3", "parquet/data.list",
                cwd=CORPUS)
        self.assertEqual(p.stdout, q.stdout)  # the recipe's version: CosyVoice 3's specials


@unittest.skipUnless(have(CV_YAMLS["cosyvoice2"], os.path.join(CV, "cosyvoice", "dataset", "processor.py")),
                     "no upstream CosyVoice recipe in ../shared/third_party, or no python3-yaml")
class RecipePlanLoaderTest(unittest.TestCase):
    """`plan --recipe cosyvoice2.yaml` makes a plan that
    equishard.loaders.cosyvoice.Dataset accepts for that recipe's pipeline; the
    README's plan without it (equishard's defaults) is refused."""

    def pipeline(self):
        """data_pipeline as hyperpyyaml builds it: each !name: stage a
        functools.partial of the upstream processor function."""
        proc = functions(os.path.join(CV, "cosyvoice", "dataset", "processor.py"), CV_FUNCS)
        top = read_yaml(CV_YAMLS["cosyvoice2"])
        return [functools.partial(proc[f.name.rsplit(".", 1)[1]], **f) for f in top["data_pipeline"]]

    def test_the_loader_accepts_the_recipes_plan(self):
        tmp = tempfile.mkdtemp(prefix="es-recipe-loader-")
        self.addCleanup(shutil.rmtree, tmp)
        costs = os.path.join(tmp, "costs.tsv")
        # counted with the recipe's tokenizer: the loader refuses a plan without the
        # text-token counts its filter bounds
        subprocess.run([CLI, "measure", "-q", "--recipe", CV_YAMLS["cosyvoice2"], "--set",
                        f"qwen_pretrain_path={QWEN}", "-o", costs, "parquet/data.list"],
                       cwd=CORPUS, check=True)
        base = ["plan", "--mode", "batch", "--world-size", "2", "--workers", "2", "--root", CORPUS]
        with_recipe = os.path.join(tmp, "with")
        p = run(*base, "--recipe", CV_YAMLS["cosyvoice2"], "-o", with_recipe, costs)
        self.assertEqual(p.returncode, 0, p.stderr)
        cosyvoice.check_pipeline(PlanDir(with_recipe), self.pipeline())  # accepted
        without = os.path.join(tmp, "without")
        p = run(*base, "-o", without, costs)
        self.assertEqual(p.returncode, 0, p.stderr)
        with self.assertRaisesRegex(ValueError, "max_length=6000.*made with 40960.*--recipe"):
            cosyvoice.check_pipeline(PlanDir(without), self.pipeline())

    def test_python_plan_takes_the_recipe_too(self):
        tmp = tempfile.mkdtemp(prefix="es-recipe-py-")
        self.addCleanup(shutil.rmtree, tmp)
        recipe = equishard.Recipe(CV_YAMLS["cosyvoice2"], sets={"qwen_pretrain_path": QWEN})
        table = equishard.measure(os.path.join(CORPUS, "parquet", "data.list"), root=CORPUS,
                                  recipe=recipe)
        with equishard.plan(table, world_size=2, workers=2, mode="batch", recipe=recipe,
                            root=CORPUS) as p:
            p.write(tmp)
        cosyvoice.check_pipeline(PlanDir(tmp), self.pipeline())


if __name__ == "__main__":
    unittest.main()
