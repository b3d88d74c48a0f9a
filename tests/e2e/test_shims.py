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

SKIP (exit 77) without torch or pandas for ES_TORCH_PYTHON (default
/usr/bin/python3).
"""
import os
import subprocess
import sys

SRC = os.environ.get("ES_SOURCE_ROOT", os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
TORCH_PYTHON = os.environ.get("ES_TORCH_PYTHON", "/usr/bin/python3")
SHIMS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "shims")

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


def main():
    probe = subprocess.run([TORCH_PYTHON, "-c", "import torch, pandas"], capture_output=True, text=True)
    if probe.returncode != 0:
        print(f"SKIP: {TORCH_PYTHON} lacks torch or pandas: {probe.stderr.strip().splitlines()[-1:]}")
        sys.exit(77)
    env = dict(os.environ, PYTHONPATH=os.path.join(SRC, "python"))
    want = (True, False, True, [x for x in range(10) if x % 3 != 0], 2)
    for first in ("stand-in", "pandas"):
        code = f"SHIMS = {SHIMS!r}\nFIRST = {first!r}\n" + CHECK
        r = subprocess.run([TORCH_PYTHON, "-c", code], capture_output=True, text=True, env=env, cwd=SRC)
        if r.returncode != 0:
            sys.exit(f"FAILED ({first} imported first):\n{r.stderr[-4000:]}")
        got = eval(r.stdout.strip().splitlines()[-1])
        assert got == want, f"{first} first: got {got}, want {want}"
        print(f"ok: {first} imported first")


if __name__ == "__main__":
    main()
