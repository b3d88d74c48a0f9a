"""The stand-ins in shims/ beside the packages that look at the modules they
replace (shims/README.md), in the interpreter the end-to-end tests train with.

pandas imports pyarrow when it can and reads pyarrow.__version__; torch's
datapipes import pandas (FilterIterDataPipe: WeNet's pipeline filters). With
shims/ first on sys.path, as the trainers put it, and the stand-in imported
first or pandas first: pandas imports, pandas itself judges the stand-in a
pyarrow it cannot use (pandas.compat.pa_version_under1p01,
import_optional_dependency), torch's filter keeps what a plain Python filter
keeps, and pyarrow.parquet is still the stand-in CosyVoice's parquet_opener
reads through.

And CosyVoice's own tokenizer (cosyvoice.tokenizer.tokenizer.get_qwen_tokenizer,
upstream's, unmodified, on the stand-ins for transformers, whisper and tiktoken)
gives, on the Qwen2 files of ../shared/fixtures/tokenizers/qwen2, the ids
Hugging Face's tokenizer gives (truth.jsonl: `ids` for version cosyvoice2,
`ids_cv3` for cosyvoice3), as a tensor the way CosyVoice2Tokenizer.encode reads
it; that part is skipped (a note) without ../shared/third_party/cosyvoice or the
fixtures.

SKIP (exit 77) without torch for ES_TORCH_PYTHON (default /usr/bin/python3);
without pandas there, the pyarrow part is left out (a note).
"""
import os
import subprocess
import sys

SRC = os.environ.get("ES_SOURCE_ROOT", os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
TORCH_PYTHON = os.environ.get("ES_TORCH_PYTHON", "/usr/bin/python3")
SHIMS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "shims")
SHARED = os.path.normpath(os.path.join(SRC, "..", "shared"))
COSYVOICE = os.path.join(SHARED, "third_party", "cosyvoice")
TOKENIZERS = os.path.join(SHARED, "fixtures", "tokenizers")

CHECK = r"""
import sys
sys.path[:0] = [SHIMS]
if FIRST == "stand-in":
    import pyarrow.parquet
import pandas
from pandas.compat import pa_version_under1p01
from pandas.compat._optional import import_optional_dependency
from torch.utils.data.datapipes.iter import IterableWrapper
import pyarrow.parquet as pq
kept = list(IterableWrapper(range(10)).filter(lambda x: x % 3 != 0))
try:  # what read_parquet asks: raises when pandas cannot use the pyarrow it finds
    import_optional_dependency("pyarrow")
    usable = True
except ImportError:
    usable = False
print(repr((pa_version_under1p01, usable,
            pq.__file__.startswith(SHIMS), kept, len(pandas.DataFrame({"a": [1, 2]})))))
"""

TOKENIZE = r"""
import json, sys
sys.path[:0] = [SHIMS, COSYVOICE]
from cosyvoice.tokenizer.tokenizer import get_qwen_tokenizer
tokenizers = {v: get_qwen_tokenizer(token_path=TOKENIZERS + "/qwen2", skip_special_tokens=True, version=v)
              for v in ("cosyvoice2", "cosyvoice3")}
wrong = 0
with open(TOKENIZERS + "/truth.jsonl", encoding="utf-8") as f:
    for n, line in enumerate(f, 1):
        rec = json.loads(line)
        for version, key in (("cosyvoice2", "ids"), ("cosyvoice3", "ids_cv3")):
            got = tokenizers[version].encode(rec["text"], allowed_special="all")
            if got != rec[key]:
                wrong += 1
                print(f"truth.jsonl:{n} ({rec['id']}, {version}): got {got[:12]}, want {rec[key][:12]}")
print(repr((n, wrong)))
"""


def check_cosyvoice_tokenizer(env):
    if not os.path.isdir(COSYVOICE) or not os.path.isfile(os.path.join(TOKENIZERS, "truth.jsonl")):
        print(f"note: {COSYVOICE} or {TOKENIZERS} is absent: CosyVoice's tokenizer not checked")
        return False
    code = f"SHIMS = {SHIMS!r}\nCOSYVOICE = {COSYVOICE!r}\nTOKENIZERS = {TOKENIZERS!r}\n" + TOKENIZE
    r = subprocess.run([TORCH_PYTHON, "-c", code], capture_output=True, text=True, env=env, cwd=SRC)
    if r.returncode != 0:
        sys.exit(f"FAILED (CosyVoice's tokenizer on the stand-ins):\n{r.stderr[-4000:]}")
    lines, wrong = eval(r.stdout.strip().splitlines()[-1])
    assert wrong == 0 and lines == 715, r.stdout[-4000:]
    print(f"ok: get_qwen_tokenizer on the stand-ins gives truth.jsonl's ids ({lines} texts, cosyvoice2 and 3)")
    return True


def check_pyarrow(env):
    want = (True, False, True, [x for x in range(10) if x % 3 != 0], 2)
    for first in ("stand-in", "pandas"):
        code = f"SHIMS = {SHIMS!r}\nFIRST = {first!r}\n" + CHECK
        r = subprocess.run([TORCH_PYTHON, "-c", code], capture_output=True, text=True, env=env, cwd=SRC)
        if r.returncode != 0:
            sys.exit(f"FAILED ({first} imported first):\n{r.stderr[-4000:]}")
        got = eval(r.stdout.strip().splitlines()[-1])
        assert got == want, f"{first} first: got {got}, want {want}"
        print(f"ok: {first} imported first")


def main():
    probe = subprocess.run([TORCH_PYTHON, "-c", "import torch"], capture_output=True, text=True)
    if probe.returncode != 0:
        print(f"SKIP: {TORCH_PYTHON} lacks torch: {probe.stderr.strip().splitlines()[-1:]}")
        sys.exit(77)
    env = dict(os.environ, PYTHONPATH=os.path.join(SRC, "python"))
    ran = check_cosyvoice_tokenizer(env)
    probe = subprocess.run([TORCH_PYTHON, "-c", "import pandas"], capture_output=True, text=True)
    if probe.returncode == 0:
        check_pyarrow(env)
    elif not ran:
        print(f"SKIP: {TORCH_PYTHON} lacks pandas, and CosyVoice's files are absent")
        sys.exit(77)
    else:
        print(f"note: {TORCH_PYTHON} lacks pandas: the pyarrow stand-in beside pandas not checked")

if __name__ == "__main__":
    main()
