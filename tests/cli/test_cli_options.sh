#!/usr/bin/env bash
# The option tables (tools/equishard/cli_options.h) against their own --help:
# for every command `equishard --help` lists, every option line of
# `equishard CMD --help` must be accepted by the parser (no "bad value", no
# getopt complaint), and every numeric or named-value option must refuse
# 'abc' with the one uniform line "equishard CMD: bad value 'abc' for --NAME:
# ..." followed by the usage line(s) and "see 'equishard CMD --help'" (never
# the whole help), and exit 2, by its long and its short name. The option list
# comes from --help, so a table entry without a help line, or a help line
# without an entry, fails here. Then the refusals of the command line itself
# (unknown options and commands with "did you mean", missing values),
# `help CMD`, `--version` and report's folder without a plan, line by line.
set -u
BIN=$1
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

cat >"$WORK/model.json" <<'JSON'
{"format": "equishard-cost-model v1", "frame_rate": 50, "weights": {"w_frames": 1,
 "w_frames_sq": 0, "w_text": 0, "w_speech_tokens": 0, "w_missing_emb": 0, "w_overhead": 0,
 "w_batch": 0}}
JSON

# A value the option accepts: numbers for one-letter metavars (and A:B), the
# first name of a|b|c, a few options by name, else a path.
value_for() { # name metavar
    case $1 in
    cost-model) echo "$WORK/model.json"; return ;;
    terms) echo frames; return ;;
    fail-on) echo all; return ;;
    set) echo name=value; return ;;
    esac
    case $2 in
    [A-Z] | A:B) echo 2 ;;
    *'|'*) echo "${2%%|*}" ;;
    *) echo "$WORK/nonexistent" ;;
    esac
}
numeric_or_named() { [[ $1 =~ ^([A-Z]|A:B|.*\|.*)$ ]]; }
parse_error() { grep -qE "bad value|unrecognized option|requires an argument|invalid option|doesn't allow" "$WORK/err"; }

commands=$("$BIN" --help | awk '/^commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 }')
[[ $(wc -w <<<"$commands") -ge 7 ]] || fail "equishard --help lists $(wc -w <<<"$commands") commands"
for cmd in $commands; do
    expect_exit 0 "$BIN" "$cmd" --help
    cp "$WORK/out" "$WORK/help"
    # what follows every refusal: the usage line(s) (the help up to its first
    # blank line) and where to read the rest
    { sed '/^$/,$d' "$WORK/help"; echo "see 'equishard $cmd --help'"; } >"$WORK/hint"
    n=0
    # "  -j, --threads N    ..." / "      --hash    ...": short, long name, metavar
    while IFS=, read -r short name meta; do
        [[ $name == help ]] && continue
        n=$((n + 1))
        v=$(value_for "$name" "$meta")
        args=(--"$name")
        [[ -n $meta ]] && args+=("$v")
        "$BIN" "$cmd" "${args[@]}" </dev/null >"$WORK/out" 2>"$WORK/err"
        parse_error && fail "$cmd --$name ${v:+$v}: refused by the parser: $(head -1 "$WORK/err")"
        [[ -n $meta ]] && numeric_or_named "$meta" || continue
        for opt in --"$name" ${short:+-$short}; do
            expect_exit 2 "$BIN" "$cmd" "$opt" abc
            head -1 "$WORK/err" | grep -qE "^equishard $cmd: bad value 'abc' for --$name: .+" &&
                tail -n +2 "$WORK/err" | cmp -s - "$WORK/hint" ||
                fail "$cmd $opt abc: $(head -4 "$WORK/err")"
        done
    done < <(sed -nE 's/^  (-([a-zA-Z]), |    )--([a-z0-9-]+)( ([^ ]+))?(  .*)?$/\2,\3,\5/p' "$WORK/help")
    [[ $n -ge 1 ]] || fail "$cmd --help lists no options"
done

# -h is --help everywhere; a bad value stops before a later --help, while
# simulate reads --help in its first pass (as before the tables)
for cmd in $commands; do
    expect_exit 0 "$BIN" "$cmd" -h
done
expect_exit 2 "$BIN" plan --world-size abc --help
expect_exit 0 "$BIN" simulate --world-size abc --help

# A refused command line: exactly these lines on stderr, nothing on stdout,
# exit 2. The usage lines are each command's first --help line(s).
plan_usage='usage: equishard plan --world-size K -o OUTDIR [OPTIONS] COSTS | LIST...'
refuses() { # "expected stderr" command...
    local want=$1; shift
    expect_exit 2 "$BIN" "$@"
    [[ $(cat "$WORK/err") == "$want" && ! -s $WORK/out ]] ||
        fail "$*: stderr:"$'\n'"$(cat "$WORK/err")"$'\n'"expected:"$'\n'"$want"
}
plan_refuses() { # "first line" plan arguments...
    local first=$1; shift
    refuses "$first"$'\n'"$plan_usage"$'\n'"see 'equishard plan --help'" plan "$@"
}
plan_refuses "equishard plan: unknown option '-x'" -x -k 2 -o "$WORK/p" in.tsv
plan_refuses "equishard plan: unknown option '--wrld-size'; did you mean --world-size?" \
    --wrld-size 2 -o "$WORK/p" in.tsv
plan_refuses "equishard plan: unknown option '--world_size'; did you mean --world-size?" \
    --world_size=2 -o "$WORK/p" in.tsv
plan_refuses "equishard plan: unknown option '--output-dir'; did you mean --output?" \
    -k 2 --output-dir "$WORK/p" in.tsv
plan_refuses "equishard plan: unknown option '--frobnicate'" --frobnicate
plan_refuses "equishard plan: unknown option '--=2'" --=2
# one dash before a long name: getopt would read -w "orld-size", or -h
plan_refuses "equishard plan: unknown option '-world-size'; did you mean --world-size?" \
    -world-size 2 -o "$WORK/p" in.tsv
plan_refuses "equishard plan: unknown option '-hash'; did you mean --hash?" -hash
plan_refuses "equishard plan: ambiguous option '--wor'; did you mean --world-size or --workers?" \
    --wor 2
plan_refuses "equishard plan: missing value for --world-size: a whole number >= 1" \
    -o "$WORK/p" in.tsv --world-size
plan_refuses "equishard plan: missing value for --output: OUTDIR" -k 2 in.tsv -o
plan_refuses "equishard plan: --hash takes no value" --hash=yes
plan_refuses "equishard plan: bad value 'x' for --world-size: a whole number >= 1" -k x
plan_refuses "equishard plan: --world-size, -o OUTDIR and at least one input are required" -k 2
[[ -e $WORK/p ]] && fail "a refused plan wrote $WORK/p"
# "-o -hash": -hash is the value, not an option (so no "one dash" refusal either)
for o in -o --output; do
    expect_exit 2 "$BIN" plan -k 2 $o -hash "$WORK/missing.tsv"
    grep -q "did you mean" "$WORK/err" && fail "$o -hash: $(cat "$WORK/err")"
done
refuses "equishard simulate: unknown option '--loadr'; did you mean --loader?
usage: equishard simulate --loader cosyvoice|wenet --world-size K [OPTIONS] COSTS | LIST...
       equishard simulate --loader cosyvoice|wenet --plan OUTDIR [OPTIONS] [COSTS | LIST...]
see 'equishard simulate --help'" simulate --loadr cosyvoice -k 2 in.tsv
refuses "equishard measure: no LIST given
usage: equishard measure [OPTIONS] LIST...
see 'equishard measure --help'" measure -q

# commands: a typo names the nearest, help CMD is CMD --help
top_refusal() { # command expected-line
    refuses "$2"$'\n'"usage: equishard COMMAND [OPTIONS] ..."$'\n'"see 'equishard --help'" "$1"
}
top_refusal plna "equishard: unknown command 'plna'; did you mean plan?"
top_refusal simualte "equishard: unknown command 'simualte'; did you mean simulate?"
top_refusal frobnicate "equishard: unknown command 'frobnicate'"
refuses "equishard: unknown command 'mesure'; did you mean measure?
usage: equishard COMMAND [OPTIONS] ...
see 'equishard --help'" help mesure
expect_exit 0 "$BIN" --help
mv "$WORK/out" "$WORK/help"
for args in help "help --help" "help -h"; do
    expect_exit 0 "$BIN" $args
    cmp -s "$WORK/out" "$WORK/help" || fail "$args is not equishard --help"
done
for cmd in $commands; do
    expect_exit 0 "$BIN" "$cmd" --help
    mv "$WORK/out" "$WORK/help"
    expect_exit 0 "$BIN" help "$cmd"
    cmp -s "$WORK/out" "$WORK/help" && [[ ! -s $WORK/err ]] || fail "help $cmd is not $cmd --help"
done

# --version everywhere: the project's version in meson.build
want=$(sed -nE "s/^ *version *: *'([^']+)'.*/\1/p" "$(dirname "${BASH_SOURCE[0]}")/../../meson.build" | head -1)
[[ -n $want ]] || fail "no version in meson.build"
for cmd in "" $commands; do
    expect_exit 0 "$BIN" $cmd --version
    [[ $(cat "$WORK/out") == "equishard $want" && ! -s $WORK/err ]] ||
        fail "${cmd:-equishard} --version: $(cat "$WORK/out" "$WORK/err")"
done
expect_exit 0 "$BIN" simulate --loader nope --version
[[ $(cat "$WORK/out") == "equishard $want" ]] || fail "simulate --version: $(cat "$WORK/out")"

# report: a folder without plan.json says so, and how to write one
mkdir "$WORK/inputs"
refuses "equishard report: $WORK/inputs has no plan.json: not a plan folder (write one with 'equishard plan -o $WORK/inputs ...')" \
    report "$WORK/inputs"
refuses "equishard report: $WORK/model.json is not a folder: give the OUTDIR 'equishard plan -o OUTDIR' wrote" \
    report "$WORK/model.json"
refuses "equishard report: no OUTDIR given
usage: equishard report OUTDIR [--svg FILE] [--html FILE [--loader L] [--validate JSON]]
see 'equishard report --help'" report
echo '{"metrics": ' >"$WORK/inputs/plan.json"
expect_exit 2 "$BIN" report "$WORK/inputs"
[[ $(wc -l <"$WORK/err") == 1 ]] && grep -q "^equishard report: $WORK/inputs/plan.json: line 2: " "$WORK/err" ||
    fail "report of a broken plan.json: $(cat "$WORK/err")"

# the library's messages come out under the command's name, once
expect_exit 2 "$BIN" measure -q "$WORK/missing.list"
[[ $(wc -l <"$WORK/err") == 1 ]] && grep -q "^equishard measure: [^:]*missing.list" "$WORK/err" ||
    fail "measure of a missing list: $(cat "$WORK/err")"

# --json is a switch in simulate and describe and takes FILE in validate (both
# contracts): each --help line says which
for cmd in simulate describe; do
    "$BIN" "$cmd" --help | grep -A1 -E '^      --json  ' | tr -s ' \n' ' ' |
        grep -q 'a switch, no FILE: -o FILE writes the JSON to a file' ||
        fail "$cmd --help: the --json line does not say it is a switch"
done
"$BIN" validate --help | grep -A2 -E '^      --json FILE  ' | tr -s ' \n' ' ' |
    grep -q "here --json takes the FILE, where simulate's and describe's --json is a switch" ||
    fail "validate --help: the --json line does not say it takes FILE"

exit $((failures > 0))
