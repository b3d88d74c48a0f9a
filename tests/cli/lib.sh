# Sourced by the CLI test scripts (tests/cli/test_cli_*.sh): a scratch folder
# removed at exit ($WORK), failures counted by `fail`, and `expect_exit`, which
# runs a command with its stdout and stderr in $WORK/out and $WORK/err.
WORK=$(mktemp -d "${TMPDIR:-/tmp}/es-cli.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
expect_exit() { # expected command...
    local want=$1; shift
    "$@" >"$WORK/out" 2>"$WORK/err"
    local got=$?
    [[ $got == "$want" ]] || fail "exit $got, expected $want: $* ($(head -c 300 "$WORK/err"))"
}
