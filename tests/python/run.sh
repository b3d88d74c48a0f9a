#!/bin/sh
# Runs the Python suites (unittest) over $EQUISHARD_LIB.
#
# When that library is an ASan build (build-asan: -Db_sanitize=address,undefined)
# it is also the leak check: Python is not instrumented, so the ASan runtime is
# preloaded, LeakSanitizer reports what is still allocated at exit, and the
# repeated-call test runs every binding call 20 times (objects closed, dropped,
# failing midway). malloc_context_size=2 keeps only the allocating function, so
# lsan.supp can set aside what the interpreter itself allocates (it frees little
# at exit) without hiding an allocation made inside libequishard or its libraries.
#
# usage: run.sh PYTHON TESTDIR
set -eu
python=$("$1" -c 'import sys; print(sys.executable)') # the interpreter, not a shim script
testdir=$2
asan=$(ldd "$EQUISHARD_LIB" | awk '/libasan/ { print $3 }')
if [ -n "$asan" ]; then
    export LD_PRELOAD="$asan" ES_PY_ROUNDS=20
    export ASAN_OPTIONS="detect_leaks=1:malloc_context_size=2:exitcode=23"
    export LSAN_OPTIONS="suppressions=$testdir/lsan.supp:print_suppressions=0"
fi
exec "$python" -m unittest discover -s "$testdir"
