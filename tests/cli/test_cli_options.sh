#!/usr/bin/env bash
# The option tables (tools/equishard/cli_options.h) against their own --help:
# for every command `equishard --help` lists, every option line of
# `equishard CMD --help` must be accepted by the parser (no "bad value", no
# getopt complaint), and every numeric or named-value option must refuse
# 'abc' with the one uniform line "equishard CMD: bad value 'abc' for --NAME:
# ..." and exit 2, by its long and its short name. The option list comes from
# --help, so a table entry without a help line, or a help line without an
# entry, fails here.
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
            [[ $(wc -l <"$WORK/err") == 1 ]] &&
                grep -qE "^equishard $cmd: bad value 'abc' for --$name: .+" "$WORK/err" ||
                fail "$cmd $opt abc: $(head -3 "$WORK/err")"
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

exit $((failures > 0))
