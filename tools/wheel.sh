#!/usr/bin/env bash
# Builds the Python wheel (pyproject.toml: the equishard package with
# libequishard.so inside it, and the CLI) into OUTDIR and prints its path.
#
#   tools/wheel.sh OUTDIR [BUILDDIR]
#
# BUILDDIR (default build-wheel) is meson-python's build folder, kept between
# runs so that a rebuild compiles only what changed; builds into one BUILDDIR
# wait for each other (the tests build in parallel). WHEEL_PYTHON is the
# interpreter that runs the build, one with meson-python (default
# /usr/bin/python3 with Debian's python3-mesonpy); the wheel it makes,
# py3-none-<platform>, installs into any CPython 3.8+ on this machine:
#
#   python3 -m venv env && env/bin/pip install --no-index OUTDIR/equishard-*.whl
#
# Exit 2 when WHEEL_PYTHON has no meson-python, 1 when the build fails (its log
# on stderr).
set -euo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
[[ $# -ge 1 && $# -le 2 ]] || { echo "usage: tools/wheel.sh OUTDIR [BUILDDIR]" >&2; exit 2; }
mkdir -p "$1"
outdir=$(cd "$1" && pwd)
builddir=${2:-$src/build-wheel}
mkdir -p "$(dirname "$builddir")"
builddir=$(cd "$(dirname "$builddir")" && pwd)/$(basename "$builddir")
py=${WHEEL_PYTHON:-/usr/bin/python3}
if ! "$py" -c 'import mesonpy' 2>/dev/null; then
    echo "wheel.sh: $py has no meson-python to build the wheel (Debian: apt-get install python3-mesonpy; or set WHEEL_PYTHON)" >&2
    exit 2
fi
tmp=$(mktemp -d "$outdir/.wheel.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
log=$tmp/log
# pip builds in the source folder (meson-python's build folder is BUILDDIR);
# no index, no cache: everything it needs is installed
if ! flock "$builddir.lock" "$py" -m pip wheel --no-build-isolation --no-deps --no-index --no-cache-dir \
        -w "$tmp" --config-settings=builddir="$builddir" "$src" >"$log" 2>&1; then
    tail -40 "$log" >&2
    echo "wheel.sh: building the wheel failed (above: the end of pip's log)" >&2
    exit 1
fi
whl=$(cd "$tmp" && ls equishard-*.whl)
mv -f "$tmp/$whl" "$outdir/$whl" # a rename: the wheel appears whole
echo "$outdir/$whl"
