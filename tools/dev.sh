#!/usr/bin/env bash
# One entry point for a fresh Debian machine (README.md):
#
#   tools/dev.sh setup  install dependencies (apt-get), build, and build the
#                       Python wheel build/dist/equishard-*.whl (libequishard.so
#                       and the equishard command inside)
#   tools/dev.sh install
#                       pip-install that wheel into $PYTHON (e.g.
#                       PYTHON=/usr/bin/python3, the interpreter with torch;
#                       --user when that is not a venv and you are not root),
#                       or, unset, into a venv in build/venv
#   tools/dev.sh demo   install dependencies, build, build the Python wheel
#                       (libequishard.so inside) and pip-install it into a venv,
#                       build/venv (checked with pip show and an import), then
#                       on data-samples/: measure, simulate CosyVoice's split
#                       beside equishard's, write a plan, and reshard the
#                       CosyVoice parquet files; every output in build/demo/
#   tools/dev.sh test   install dependencies, build with -Dwerror=true (a new
#                       warning fails CI), run every test against the build
#                       tree (nothing is installed system-wide: the tests
#                       load build/src/libequishard.so and python/equishard,
#                       and the wheel test and the end-to-end tests pip-install
#                       the wheel into venvs of their own): the unit, CLI and
#                       Python suites,
#                       CosyVoice's own training loop on 4 ranks under
#                       torchrun, and WeNet's (tests/e2e), the same suites under ASan+UBSan
#                       (with the Python binding's leak check), and each
#                       fuzzer for a bounded time (FUZZ_SECONDS, default 15;
#                       CI must stay under 25 minutes); hyparquet (the parquet
#                       reshard tests' independent reader) and hyparquet-writer
#                       (the CosyVoice end-to-end corpus's writer) come from
#                       npm into build-npm/
#
# PYTHON=/usr/bin/python3 tools/dev.sh demo: install the wheel into that
# interpreter (the one with torch) instead of a venv of the python3 on PATH.
#
# Installing needs root (apt-get); as another user, set ES_NO_INSTALL=1 once the
# packages in DEPS are there.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

DEPS=(build-essential clang meson ninja-build pkg-config python3
      libarchive-dev libzstd-dev zstd libsnappy-dev zlib1g-dev libxxhash-dev libjansson-dev libsndfile1-dev libutf8proc-dev libyaml-dev
      check libomp-dev sox libopenmpi-dev openmpi-bin
      xxhash # xxhsum: the tests' independent check of plan.json's input digests
      chromium librsvg2-bin # the HTML report rendered (tests/cli/test_cli_report_browser.sh)
      # the Python package's install (pip, the wheel's build backend) and the end-to-end
      # tests: CosyVoice's and WeNet's own training loops under real torch (tests/e2e)
      python3-pip python3-venv python3-setuptools python3-mesonpy
      python3-torch python3-torchaudio libopenblas0-openmp)
export PATH="/usr/local/cuda/bin:$PATH"

install_deps() {
    [[ -n "${ES_NO_INSTALL:-}" ]] && return
    local missing=()
    for p in "${DEPS[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
    ((${#missing[@]})) || return 0
    if [[ $(id -u) != 0 ]]; then
        echo "dev.sh: need root to install: ${missing[*]} (or set ES_NO_INSTALL=1)" >&2
        exit 2
    fi
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

# The parquet reshard tests read equishard's output with hyparquet, an independent
# reader from the npm registry: a test-only dependency, kept in build-npm/.
NPM_TEST_DEPS=(hyparquet@1.33.0 hyparquet-compressors@1.1.2 hyparquet-writer@0.17.0)

install_npm_deps() {
    [[ -d build-npm/node_modules/hyparquet-writer ]] && return
    if ! command -v npm >/dev/null; then
        if [[ -n "${ES_NO_INSTALL:-}" || $(id -u) != 0 ]]; then
            echo "dev.sh: no npm: the hyparquet checks of the reshard tests will be skipped" >&2
            return
        fi
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nodejs npm
    fi
    npm install --prefix build-npm --no-audit --no-fund --loglevel=error "${NPM_TEST_DEPS[@]}"
}

build() { # dir [meson options...]
    local dir=$1; shift
    # a folder without build.ninja is a setup that failed earlier: start afresh
    if [[ ! -f $dir/build.ninja ]]; then
        rm -rf "$dir"
        meson setup "$dir" "$@" >"$dir.setup.log" || { cat "$dir.setup.log"; exit 1; }
    elif (($#)); then
        # an existing folder gets the options too (e.g. werror for CI)
        meson configure "$dir" "$@" >"$dir.setup.log" || { cat "$dir.setup.log"; exit 1; }
    fi
    ninja -C "$dir"
}

# The interpreter the Python package is installed into: unset, a venv of the
# python3 on PATH in build/venv; set, that interpreter, e.g. PYTHON=/usr/bin/python3
# (the one that trains, with torch).
PYTHON=${PYTHON:-}

install_python() { # the wheel (tools/wheel.sh) with pip: `import equishard`, `equishard` on PATH
    local whl py=$PYTHON
    whl=$(tools/wheel.sh build/dist build/python-wheel)
    # --force-reinstall: a rebuilt wheel of the same version replaces the installed one
    local pip_flags=(--quiet --no-index --no-deps --force-reinstall)
    if [[ -z $py ]]; then
        [[ -x build/venv/bin/python ]] || python3 -m venv build/venv
        py=$PWD/build/venv/bin/python
    elif "$py" -c 'import os, sys, sysconfig; sys.exit(sys.prefix != sys.base_prefix or not os.path.exists(os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED")))'; then
        # Debian's own python3 refuses pip installs outside a venv (PEP 668) unless told
        pip_flags+=(--break-system-packages)
    fi
    if [[ -n $py && $(id -u) != 0 ]] && "$py" -c 'import sys; sys.exit(sys.prefix != sys.base_prefix)'; then
        pip_flags+=(--user) # not root and not a venv: the user's own site-packages
    fi
    "$py" -m pip install "${pip_flags[@]}" "$whl"
    "$py" -m pip show equishard | grep -E '^(Name|Version|Location):'
    (cd / && "$py" -c 'import equishard, equishard._ffi as f; print("import equishard:", equishard.__file__, "library", equishard.version(), "from", f.lib()._name)')
}

fuzz() {
    local seconds=${FUZZ_SECONDS:-15}
    local dir=build-fuzz
    if [[ ! -f $dir/build.ninja ]]; then
        rm -rf "$dir"
        CC=clang meson setup "$dir" -Dtests=disabled -Dfuzz=enabled -Db_lundef=false -Dwerror=true \
            >"$dir.setup.log" || { cat "$dir.setup.log"; exit 1; }
    fi
    ninja -C "$dir"
    # fuzz_tokenizer loads the real tokenizer: its cache in the build folder, not ~/.cache
    export EQUISHARD_CACHE_DIR="$PWD/$dir/tokenizer-cache"
    for exe in "$dir"/tests/fuzz/fuzz_*; do
        [[ -x $exe && -f $exe ]] || continue
        local name=${exe##*/fuzz_}
        local seeds=tests/fuzz/corpus/$name
        [[ -d $seeds ]] || seeds=tests/fuzz/corpus/${name%%_*} # parquet_write: parquet's
        local work
        work=$(mktemp -d)
        local extra=()
        if [[ $name == audio_probe ]]; then # real-world recordings too (see tools/fuzz.sh)
            mkdir -p "$work/real"
            find tests/fixtures/real -type f \( -name '*.wav' -o -name '*.flac' \) -size -64k \
                -exec cp -t "$work/real" {} +
            extra=("$work/real")
        fi
        echo "fuzzing $name for ${seconds}s"
        # undefined behaviour is a finding too, not a line in the log
        UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
        "$exe" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
            -artifact_prefix="$work/" "$work" "$seeds" "${extra[@]}" 2>"$work/log" \
            || { tail -40 "$work/log"; echo "fuzzer $name found a crash: $work"; exit 1; }
        grep -E '^(#[0-9]+ +DONE|Done)' "$work/log" | tail -1 || true
        rm -rf "$work"
    done
}

case "${1:-}" in
setup)
    install_deps
    build build
    echo "built build/tools/equishard/equishard; the wheel: $(tools/wheel.sh build/dist build/python-wheel)"
    ;;
install)
    install_python
    ;;
demo)
    install_deps
    build build
    install_python
    # the outputs stay in the checkout's build folder; the CLI reads the
    # sample's lists from data-samples/, where their paths are relative to
    mkdir -p build/demo
    cd data-samples
    es=../build/tools/equishard/equishard out=../build/demo
    $es measure -o $out/costs.tsv shards/data.list
    echo "wrote build/demo/costs.tsv ($(($(wc -l <$out/costs.tsv) - 2)) utterances); the first rows:"
    tail -n +2 $out/costs.tsv | head -6 | column -t -s $'\t'
    echo
    # the sample's utterances are short: keep those under CosyVoice 2's 1 s minimum
    $es simulate --loader cosyvoice --world-size 2 --workers 2 --min-length 10 $out/costs.tsv
    echo
    # 3 shards cannot fill 2 ranks x 2 workers whole: batch mode, with batches
    # small enough (400 frames) that the 34 s sample gives every worker some
    $es plan --mode batch --world-size 2 --workers 2 --min-length 10 --max-frames-in-batch 400 \
        -o $out/plan $out/costs.tsv
    echo
    echo "CosyVoice parquet (make_parquet_list.py's layout) rewritten into 2x2 equal-cost files:"
    $es plan --world-size 2 --workers 2 --min-length 10 --mode reshard -o $out/plan-parquet parquet/data.list
    ;;
test)
    install_deps
    install_npm_deps
    build build -Dwerror=true
    meson test -C build --print-errorlogs
    build build-asan -Db_sanitize=address,undefined -Dbuildtype=debug -Dwerror=true
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
        meson test -C build-asan --print-errorlogs
    fuzz
    echo "all tests passed"
    ;;
*)
    sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
