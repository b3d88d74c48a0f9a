"""The user's install route: the wheel into a fresh venv, without network.

tools/wheel.sh builds the wheel (pyproject.toml, meson-python); for each
interpreter here (the python3 that runs this test, the one on PATH, and
Debian's /usr/bin/python3 when it is another) a fresh `python -m venv` gets it
with `pip install --no-index`. Then, from another folder and with
EQUISHARD_LIB naming a library that does not exist (the wheel's own must win):
`pip show equishard` names the venv, `import equishard` comes from the venv,
equishard.version() is the header's ES_VERSION_*, and the libequishard.so the
process mapped (/proc/self/maps) lies inside the venv; the `equishard` command
pip put in the venv's bin/ runs; `pip uninstall -y equishard` removes all of it.

The wheel's name and files are checked against independent sources: the
platform tag is sysconfig's platform (PEP 425), the Python files are those
under python/equishard/ in the checkout.

Not a unittest module (run.sh runs those over the build tree): meson runs it
as the `python_wheel` test. SKIP (exit 77) without an interpreter that has
meson-python to build the wheel (Debian: python3-mesonpy).
"""
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import zipfile

SRC = os.environ.get("ES_SOURCE_ROOT", os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
BUILD = os.environ.get("ES_BUILD_ROOT", os.path.join(SRC, "build"))
CODE = r"""
import json, os, equishard
v = equishard.version()
maps = [line.split()[-1] for line in open("/proc/self/maps") if "libequishard" in line]
print(json.dumps({"file": equishard.__file__, "version": v, "maps": sorted(set(maps))}))
"""


def run(cmd, ok=True, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if ok and r.returncode != 0:
        sys.exit(f"FAILED ({r.returncode}): {' '.join(cmd)}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    return r


def header_version():
    with open(os.path.join(SRC, "include", "equishard", "equishard.h")) as f:
        text = f.read()
    parts = [re.search(rf"#define ES_VERSION_{p} (\d+)\n", text).group(1) for p in ("MAJOR", "MINOR", "PATCH")]
    return ".".join(parts)


def build_wheel(out):
    r = run([os.path.join(SRC, "tools", "wheel.sh"), out, os.path.join(BUILD, "python-wheel")], ok=False)
    if r.returncode == 2 and "meson-python" in r.stderr:
        print(f"SKIP: {r.stderr.strip()}")
        sys.exit(77)
    if r.returncode != 0:
        sys.exit(f"FAILED: tools/wheel.sh\n{r.stdout}\n{r.stderr}")
    return r.stdout.strip()


def check_wheel(whl, version):
    platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    want = f"equishard-{version}-py3-none-{platform}.whl"
    assert os.path.basename(whl) == want, f"wheel named {os.path.basename(whl)}, not {want}"
    pkg = os.path.join(SRC, "python")
    sources = {os.path.relpath(os.path.join(d, f), pkg) for d, _, files in os.walk(pkg)
               for f in files if f.endswith(".py") or f == "py.typed"}
    data = f"equishard-{version}.data/"
    with zipfile.ZipFile(whl) as z:
        names = set(z.namelist())
    carried = {n[len(data + "purelib/"):] for n in names if n.startswith(data + "purelib/")}
    want_files = sources | {"equishard/libequishard.so"}
    assert carried == want_files, f"wheel carries {sorted(carried ^ want_files)} differently from python/"
    assert data + "scripts/equishard" in names, "the wheel lacks the equishard command"


def interpreters():
    seen, found = set(), []
    for py in (sys.executable, shutil.which("python3"), "/usr/bin/python3"):
        if not py or not os.path.exists(py):
            continue
        real = run([py, "-c", "import os, sys; print(os.path.realpath(sys.executable))"]).stdout.strip()
        if real not in seen:
            seen.add(real)
            found.append(py)
    return found


def install_and_use(py, whl, work, version):
    venv = os.path.join(work, "venv")
    run([py, "-m", "venv", venv])
    vpy, vpip = os.path.join(venv, "bin", "python"), [os.path.join(venv, "bin", "python"), "-m", "pip"]
    run(vpip + ["install", "-q", "--no-index", "--no-deps", whl])
    site = run([vpy, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip()
    show = run(vpip + ["show", "equishard"]).stdout
    fields = dict(line.split(": ", 1) for line in show.splitlines() if ": " in line)
    assert fields.get("Name") == "equishard" and fields.get("Version") == version, show
    assert os.path.realpath(fields["Location"]) == os.path.realpath(site), show

    elsewhere = os.path.join(work, "elsewhere")  # not the checkout: nothing found by accident
    os.makedirs(elsewhere)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "EQUISHARD_LIBRARY")}
    env["EQUISHARD_LIB"] = os.path.join(work, "no-such-libequishard.so")
    got = json.loads(run([vpy, "-c", CODE], cwd=elsewhere, env=env).stdout)
    venv_real = os.path.realpath(venv) + os.sep
    assert os.path.realpath(got["file"]).startswith(venv_real), f"import equishard found {got['file']}"
    assert got["version"] == version, f"equishard.version() {got['version']}, header {version}"
    assert got["maps"] and all(os.path.realpath(p).startswith(venv_real) for p in got["maps"]), \
        f"libequishard mapped from {got['maps']}, not from {venv}"
    cli = run([os.path.join(venv, "bin", "equishard"), "--version"], cwd=elsewhere, env=env).stdout
    assert cli.split() == ["equishard", version], cli

    run(vpip + ["uninstall", "-y", "-q", "equishard"])
    left = [p for p in (os.path.join(site, "equishard"), os.path.join(venv, "bin", "equishard")) if os.path.exists(p)]
    assert not left, f"pip uninstall left {left}"
    assert run(vpip + ["show", "equishard"], ok=False).returncode != 0, "pip show still finds equishard"


def main():
    version = header_version()
    with tempfile.TemporaryDirectory(prefix="es-wheel-") as tmp:
        whl = build_wheel(os.path.join(tmp, "dist"))
        check_wheel(whl, version)
        for i, py in enumerate(interpreters()):
            work = os.path.join(tmp, f"py{i}")
            os.makedirs(work)
            install_and_use(py, whl, work, version)
            print(f"ok: {py}: pip install, show, import, version, uninstall")


if __name__ == "__main__":
    main()
