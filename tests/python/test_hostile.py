"""Hostile arguments and threads never crash the interpreter.

Every public call is made with wrong types, values past its C type's range
(2**32 + 2, 2**64, -1), NaN, infinities, None, and str/bytes/os.PathLike where
a path goes: each call must work or raise TypeError, ValueError or
equishard.Error, never let ctypes truncate the value or take an int for a
pointer. The calls run in a child interpreter with faulthandler on, so a
segfault fails the test (naming the call and its traceback) instead of killing
the test runner. The property part draws its calls with random.Random from a
fixed seed (ES_HOSTILE_SEED overrides it; hypothesis is not a dependency).

Threads: an object shared by two threads gives each the answers it gives one
thread alone, and close() from another thread during a call waits for it.
"""
import itertools
import json
import os
import random
import subprocess
import sys
import tempfile
import textwrap
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.environ.get("ES_SOURCE_ROOT", os.path.join(HERE, "..", ".."))
FIX = os.environ.get("ES_FIXTURES", os.path.join(ROOT, "tests", "fixtures"))
QWEN = os.path.join(ROOT, "..", "shared", "fixtures", "tokenizers", "qwen2")

# The child's fixtures: every object a case may call a method of.
SETUP = textwrap.dedent("""
    import array, ctypes, math, os, pathlib, sys, faulthandler
    faulthandler.enable()
    import equishard
    from equishard.calibrate import read_model
    from test_calibrate import write_log
    FIX = os.environ["ES_FIXTURES"]
    ROOT = os.environ["ES_SOURCE_ROOT"]
    CORPUS = os.path.join(FIX, "corpus_a")
    SHARDS = os.path.join(CORPUS, "shards", "shards.list")
    KALDI = os.path.join(CORPUS, "kaldi")
    UTT_PT = os.path.join(KALDI, "utt2embedding.pt")
    PQ = os.path.join(ROOT, "data-samples", "parquet", "parquet_000000000.tar")
    QWEN = %r
    t = equishard.measure([KALDI], root=CORPUS)
    COSTS = os.path.abspath("costs.tsv")
    t.write(COSTS)
    LOG = os.path.abspath("steps.jsonl")
    write_log(LOG)
    p = equishard.plan(t, world_size=2, workers=2)
    pb = equishard.plan(t, world_size=2, mode="batch", max_frames_in_batch=4000)
    sim = equishard.simulate(t, world_size=2)
    val = equishard.validate(utt_emb=UTT_PT)
    m = array.array("f", [1.0] * (12 * 16))
    tok = equishard.Tokenizer(QWEN) if os.path.isdir(QWEN) else None
    rr = equishard.RowReader(PQ)
    cal = equishard.calibrate(t, [LOG])
    MODEL = os.path.abspath("model.json")
    cal.write_json(MODEL)
    UNITS = os.path.abspath("units.txt")
    with open(UNITS, "w") as f:
        f.write("<blank> 0\\n<unk> 1\\na 2\\nb 3\\n<sos/eos> 4\\n")
    def symbols_tokenizer(**kw):  # Tokenizer's WeNet form, keyword by keyword
        return equishard.Tokenizer(**kw)
    class FakeTensor:  # torch.Tensor's side of the protocol (torch is not a dependency)
        def __init__(self, a):
            self.a = a
        def data_ptr(self):
            return self.a.buffer_info()[0]
        def numel(self):
            return len(self.a)
        def element_size(self):
            return self.a.itemsize
        def is_contiguous(self):
            return True
    nan, inf = float("nan"), float("inf")
""") % QWEN

# The child: reads [[label, expression], ...] as JSON on stdin, evaluates each
# in SETUP's namespace and prints one JSON line per call before and after it.
CHILD = SETUP + textwrap.dedent("""
    import json
    cases = json.load(sys.stdin)
    for i, (label, expr) in enumerate(cases):
        print(json.dumps(["start", i]), flush=True)
        try:
            r = eval(expr)
            close = getattr(r, "close", None)
            if close and r is not t and r is not p:
                close()
            out = "ok"
        except equishard.Error as e:
            out = "Error: " + str(e)[:200]
        except Exception as e:
            out = type(e).__name__ + ": " + str(e)[:200]
        print(json.dumps(["end", i, out]), flush=True)
""")


def run_child(cases, timeout=600):
    """[(label, expr)] -> {label: outcome}; a crash or a hang fails, naming the call."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([HERE, env.get("PYTHONPATH", "")])
    env["ES_FIXTURES"], env["ES_SOURCE_ROOT"] = FIX, ROOT
    with tempfile.TemporaryDirectory(prefix="es-hostile-") as cwd:
        proc = subprocess.run([sys.executable, "-X", "faulthandler", "-c", CHILD], cwd=cwd, env=env,
                              input=json.dumps(cases), capture_output=True, text=True,
                              timeout=timeout)
    out, started = {}, None
    for line in proc.stdout.splitlines():
        rec = json.loads(line)
        if rec[0] == "start":
            started = rec[1]
        else:
            out[cases[rec[1]][0]] = rec[2]
            started = None
    if proc.returncode != 0 or started is not None:
        where = cases[started][1] if started is not None else "(after the last call)"
        raise AssertionError(f"the interpreter died (exit {proc.returncode}) in {where}\n"
                             f"{proc.stderr[-4000:]}")
    return out


def allowed(outcome, extra=()):
    return outcome.split(":")[0] in ("ok", "Error", "TypeError", "ValueError", *extra)


class RegressionTest(unittest.TestCase):
    """The crashes and silent truncations a hostile review found, one by one."""

    CASES = [
        # a string setting given an int was stored as a char * (an address)
        ("measure root=5", "equishard.measure([SHARDS], root=5)", "TypeError"),
        ("load root=4096", "equishard.load([SHARDS], root=4096)", "TypeError"),
        ("validate utt_emb=5", "equishard.validate(utt_emb=5)", "TypeError"),
        ("calibrate time_field=7", "equishard.calibrate(t, [LOG], time_field=7)", "TypeError"),
        ("simulate plan_dir", "equishard.simulate(t, plan_dir=12345)", "TypeError"),
        ("plan root=1", "equishard.plan(t, 2, root=1)", "TypeError"),
        # validate_tensor read past a buffer n x dim x itemsize claims
        ("tensor past the buffer", "equishard.validate_tensor(array.array('f', [1.0] * 8), 10**7, 192)",
         "ValueError"),
        ("tensor ctypes too small", "equishard.validate_tensor((ctypes.c_float * 15)(), 4, 4)",
         "ValueError"),
        ("tensor float32 needs 4 bytes", "equishard.validate_tensor(bytearray(12 * 16 * 2), 12, "
         "16, dtype='float16') and equishard.validate_tensor(bytearray(12 * 16 * 2), 12, 16)",
         "ValueError"),
        ("tensor torch too small", "equishard.validate_tensor(FakeTensor(array.array('f', [1.0] * 8)), "
         "10**7, 192)", "ValueError"),
        ("tensor torch", "equishard.validate_tensor(FakeTensor(m), 12, 16).info.utt_rows == 12 or 1/0",
         "ok"),
        ("tensor int on the host", "equishard.validate_tensor(5, 12, 16)", "TypeError"),
        ("tensor bytes-like speakers", "equishard.validate_tensor(m, 12, 16, speakers=b'ab')",
         "TypeError"),
        # ctypes truncated or wrapped
        ("world_size 2**32+2", "equishard.plan(t, world_size=2**32 + 2)", "ValueError"),
        ("max_frames -1", "equishard.plan(t, 2, mode='batch', max_frames_in_batch=-1)", "ValueError"),
        ("shards 2**32", "p.shards(2**32)", "ValueError"),
        ("shards -1", "p.shards(-1)", "ValueError"),
        ("shards worker 2", "p.shards(0, 2)", "ValueError"),
        ("batches rank 2", "pb.batches(2)", "ValueError"),
        ("min_length nan", "equishard.plan(t, 2, min_length=nan)", "ValueError"),
        ("max_length inf", "equishard.simulate(t, max_length=inf)", "ValueError"),
        ("seed 2**64", "equishard.plan(t, 2, seed=2**64)", "ValueError"),
        ("threads float", "equishard.measure([SHARDS], threads=1.5)", "TypeError"),
        ("mode int", "equishard.plan(t, 2, mode=7)", "ValueError"),
        ("epochs -1", "equishard.simulate(t, epochs=-1)", "ValueError"),
        ("positions -1", "rr.read([-1])", "ValueError"),
        ("positions 2**64", "rr.read([2**64])", "ValueError"),
        ("columns str", "rr.read([0], 'utt')", "TypeError"),
        ("path NUL", "equishard.CostTable.read('costs\\0.tsv')", "ValueError"),
        ("lists int", "equishard.measure(5)", "TypeError"),
        ("lists of ints", "equishard.measure([5])", "TypeError"),
    ]
    TOKENIZER_CASES = [
        ("encode 5", "tok.encode(5)", "TypeError"),       # was five NUL bytes
        ("encode ints", "tok.encode([104, 105])", "TypeError"),  # was "hi"
        ("count 5", "tok.count(5)", "TypeError"),
        ("specials int", "equishard.Tokenizer(QWEN, specials=3)", "TypeError"),
        # bytes and PathLike name the folder (b'/path' was looked for as "b'/path'")
        ("bytes path", "equishard.Tokenizer(os.fsencode(QWEN)).path == QWEN or 1/0", "ok"),
        ("PathLike path", "equishard.Tokenizer(pathlib.Path(QWEN)).vocab_size == 151663 or 1/0", "ok"),
    ]

    def test_each_is_refused_by_name(self):
        cases = self.CASES + (self.TOKENIZER_CASES if os.path.isdir(QWEN) else [])
        got = run_child([(label, expr) for label, expr, _ in cases])
        want = {label: kind for label, _, kind in cases}
        self.assertEqual({k: v.split(":")[0] for k, v in got.items()}, want, got)
        # the message names the parameter
        self.assertIn("root", got["measure root=5"])
        self.assertIn("world_size", got["world_size 2**32+2"])
        self.assertIn("rank", got["shards -1"])
        self.assertIn("min_length", got["min_length nan"])


# The property part: every public call, its valid arguments, and the hostile
# values each parameter is given in turn, then several at once.
class _Path(os.PathLike):  # a PathLike that is not pathlib's
    def __init__(self, p):
        self.p = p

    def __fspath__(self):
        return self.p


HOSTILE = ["None", "5", "-1", "2**32 + 2", "2**64", "-(2**63) - 1", "0.5", "nan", "inf", "-inf",
           "True", "''", "'nonexistent'", "b'nonexistent'", "pathlib.Path('nonexistent')",
           "'a\\0b'", "[]", "[5]", "['x', 3]", "{}", "object()", "1j", "b'\\xff\\xfe'",
           "bytearray(b'x')", "array.array('f', [1.0])"]

# call template -> {parameter: a valid value}: keyword calls, so each can be replaced.
SPECS = {
    "equishard.measure": dict(lists="[SHARDS]", threads="1", root="CORPUS", on_error="'skip'",
                              hash="False", tokenizer="None"),
    "equishard.load": dict(inputs="[COSTS]", threads="1", root="None", on_error="'fail'"),
    "equishard.CostTable.read": dict(path="COSTS"),
    "t.write": dict(path="'out.tsv'"),
    "t.__getitem__": dict(i="0"),
    "equishard.plan": dict(table="t", world_size="2", workers="1", mode="'batch'",
                           max_frames_in_batch="4000", min_length="10", seed="1",
                           remainder="'drop'", epoch="0", w_frames="1.0", sort_size="500",
                           token_max_length="200", require_speech_token="0"),
    "p.shards": dict(rank="0", worker="None"),
    "pb.batches": dict(rank="1", worker="0"),
    "p.write": dict(outdir="'plan'", inputs="None"),
    "equishard.simulate": dict(table="t", loader="'wenet'", cost_model="MODEL", world_size="2",
                               workers="1",
                               epochs="1", plan="None", trials="1", seed="0", shuffle_size="100",
                               list_shuffle="False"),
    "sim.write_json": dict(path="'sim.json'"),
    "equishard.validate": dict(lists="None", root="None", utt_emb="UTT_PT", utt_keys="None",
                               spk_emb="None", utt2spk="None", dim="192", min_cosine="0.5",
                               zero_norm="1e-6", device="'cpu'", duplicates="1", threads="1",
                               on_error="'skip'", hash="True", speech_tokens="None",
                               world_size="0", loader="'cosyvoice'", max_imbalance="0.05"),
    "val.write_json": dict(path="'val.json'"),
    "equishard.validate_tensor": dict(data="m", n="12", dim="16", device="'cpu'", stream="0",
                                      dtype="'float32'", keys="None", speakers="None",
                                      n_speakers="None", spk_data="None", spk_n="0",
                                      expected_dim="None", min_cosine="0.5"),
    "equishard.calibrate": dict(table="t", logs="[LOG]", warmup="0", holdout_every="5",
                                outlier_mads="5.0", terms="None", time_field="'seconds'",
                                frame_rate="50"),
    "cal.write_json": dict(path="'model2.json'", inputs="['costs.tsv']"),
    "read_model": dict(path="MODEL"),
    "equishard.RowReader": dict(path="PQ"),
    "rr.read": dict(positions="[0, 3]", columns="['utt']"),
    "equishard.read_rows": dict(path="PQ", positions="[1]", columns="None"),
    "equishard.parquet_num_rows": dict(path="PQ"),
    "equishard.Tokenizer": dict(path="QWEN", specials="'cosyvoice2'"),
    "tok.encode": dict(text="'hello'"),
    "tok.count": dict(text="'hello'"),
    "symbols_tokenizer": dict(symbol_table="UNITS", non_lang_syms="None", split_with_space="False"),
}
NEEDS_TOKENIZER = ("equishard.Tokenizer", "tok.encode", "tok.count")
# values the C type holds that the library would honour at length (4e9 epochs)
SLOW = {("equishard.simulate", "epochs"): {"2**32 + 2"}}


def call(fn, args):
    if fn == "t.__getitem__":
        return f"t[{args['i']}]"
    return fn + "(" + ", ".join(f"{k}={v}" for k, v in args.items()) + ")"


def hostile_cases(seed, combos=12):
    rnd = random.Random(seed)
    cases = []
    for fn, valid in SPECS.items():
        if fn in NEEDS_TOKENIZER and not os.path.isdir(QWEN):
            continue
        cases.append((f"{fn} valid", call(fn, valid)))
        for name, value in itertools.product(valid, HOSTILE):
            if value not in SLOW.get((fn, name), ()):
                cases.append((f"{fn} {name}={value}", call(fn, dict(valid, **{name: value}))))
        for j in range(combos):  # several hostile at once
            names = rnd.sample(sorted(valid), min(len(valid), rnd.randint(2, 4)))
            args = dict(valid)
            for name in names:
                args[name] = rnd.choice([v for v in HOSTILE if v not in SLOW.get((fn, name), ())])
            cases.append((f"{fn} combo {j}: {sorted(names)}", call(fn, args)))
    return cases


class PropertyTest(unittest.TestCase):
    def test_every_public_call_with_hostile_values(self):
        seed = int(os.environ.get("ES_HOSTILE_SEED", "20261207"))
        cases = hostile_cases(seed)
        got = run_child(cases)
        self.assertEqual(len(got), len(cases))
        bad = {label: outcome for label, outcome in got.items()
               if not allowed(outcome, ("IndexError",) if label.startswith("t.__getitem__") else ())}
        self.assertEqual(bad, {}, f"seed {seed}")
        # every valid call works (the hostile outcomes are not all refusals of a broken fixture)
        self.assertEqual({k: v for k, v in got.items() if k.endswith(" valid") and v != "ok"}, {})


def run_script(code):
    """Runs SETUP + code in a child interpreter (faulthandler on); its output."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([HERE, env.get("PYTHONPATH", "")])
    env["ES_FIXTURES"], env["ES_SOURCE_ROOT"] = FIX, ROOT
    with tempfile.TemporaryDirectory(prefix="es-threads-") as cwd:
        proc = subprocess.run([sys.executable, "-X", "faulthandler", "-c", SETUP + textwrap.dedent(code)],
                              cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise AssertionError(f"exit {proc.returncode}\n{proc.stderr[-4000:]}")
    return proc.stdout


@unittest.skipUnless(os.path.isdir(QWEN), "no tokenizer fixtures")
class ThreadTest(unittest.TestCase):
    SHARED = """
        import threading
        texts = ["Hello world, " * 400, "你好，世界。" * 400, "CosyVoice 2 tokens " * 400]
        want = [tok.encode(x) for x in texts]
        rows_want = {i: rr.read([i])[0] for i in range(4)}
        bad = []
        def work(k):
            for j in range(300):
                try:
                    if USE == "tokenizer" and tok.encode(texts[(j + k) % 3]) != want[(j + k) % 3]:
                        bad.append("wrong ids")
                    if USE == "reader" and rr.read([(j + k) % 4])[0] != rows_want[(j + k) % 4]:
                        bad.append("wrong row")
                except equishard.Error as e:
                    bad.append(str(e))
        ts = [threading.Thread(target=work, args=(k,)) for k in range(3)]
        [x.start() for x in ts]
        [x.join() for x in ts]
        print(len(bad), sorted(set(bad))[:3])
    """

    def test_shared_tokenizer_gives_each_thread_its_ids(self):
        self.assertEqual(run_script("USE = 'tokenizer'\n" + textwrap.dedent(self.SHARED)), "0 []\n")

    def test_shared_row_reader_gives_each_thread_its_rows(self):
        self.assertEqual(run_script("USE = 'reader'\n" + textwrap.dedent(self.SHARED)), "0 []\n")

    def test_close_from_another_thread_waits_for_the_call(self):
        out = run_script("""
            import threading, time
            for obj, call in ((tok, lambda: tok.count("x" * 20_000_000)),
                              (rr, lambda: rr.read(list(range(16)) * 300))):
                started, result = threading.Event(), []
                def run():
                    started.set()
                    try:
                        result.append(len(call()) if obj is rr else call())
                    except ValueError:  # close() came first
                        result.append("closed")
                th = threading.Thread(target=run)
                th.start()
                started.wait()
                time.sleep(0.01)  # (inside the call, most runs)
                obj.close()
                th.join()
                assert len(result) == 1 and (result[0] == "closed" or result[0] > 1000), result
                try:
                    call()
                    raise SystemExit("a closed object was used")
                except ValueError:
                    pass
            print("ok")
        """)
        self.assertEqual(out, "ok\n")


if __name__ == "__main__":
    unittest.main()
