#!/usr/bin/env bash
# The HTML report and the SVG chart rendered by real renderers: headless
# Chromium loads `report --html` of data-samples (no network: a file:// page
# that fetches nothing), its DOM is dumped and checked by report_check.py (every
# chart with its axes and tick values, the numbers against plan.json and the
# cost table, the page's own script run without error) and its console must
# be silent; screenshots go to BUILD/report-screens/ (docs/REPORT.md shows
# them). `report --svg` and two charts cut out of the page are rendered by
# rsvg-convert (librsvg), or Chromium without it.
# Skips (77) without chromium.
set -u
BIN=$1
SHOTS=${2:-$PWD}/report-screens
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
CHECK=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/report_check.py
CHROMIUM=$(command -v chromium || command -v chromium-browser) || {
    echo "SKIP: no chromium (apt-get install chromium)"; exit 77; }
mkdir -p "$SHOTS" || exit 1

# chrome ARGS...: headless, its profile in $WORK, its log on $WORK/log
chrome() {
    timeout 60 "$CHROMIUM" --headless --disable-gpu --no-sandbox --no-first-run \
        --user-data-dir="$WORK/profile" --enable-logging=stderr --v=0 "$@" 2>"$WORK/log"
}
# png_size FILE: "WIDTHxHEIGHT" from the PNG's IHDR, or nothing for no PNG
png_size() {
    python3 -c 'import struct, sys
b = open(sys.argv[1], "rb").read(24)
if b[:8] == b"\x89PNG\r\n\x1a\n" and b[12:16] == b"IHDR":
    print("%dx%d" % struct.unpack(">II", b[16:24]))' "$1"
}

cd "$ES_SOURCE_ROOT/data-samples" || exit 1
expect_exit 0 "$BIN" measure -q shards/data.list -o "$WORK/costs.tsv"
expect_exit 0 "$BIN" plan -q "$WORK/costs.tsv" -k 2 --min-length 10 -o "$WORK/plan"
expect_exit 1 "$BIN" validate -q --world-size 2 --json "$WORK/val.json" shards/data.list
expect_exit 0 "$BIN" simulate --loader cosyvoice -k 2 --min-length 10 --json "$WORK/costs.tsv"
cp "$WORK/out" "$WORK/sim.json"
expect_exit 0 "$BIN" report "$WORK/plan" --html "$WORK/report.html" --validate "$WORK/val.json" \
    --svg "$WORK/cost.svg"

# 1. the DOM Chromium made: charts, axes, numbers, the script ran, no error
chrome --dump-dom "file://$WORK/report.html" >"$WORK/dom.html" || fail "chromium --dump-dom"
python3 "$CHECK" report "$WORK/dom.html" "$WORK/costs.tsv" "$WORK/plan/plan.json" \
    "$WORK/sim.json" "$WORK/val.json" --dom || fail "the rendered report"
grep -E ':CONSOLE[:(]|Uncaught' "$WORK/log" && fail "the page logged to the console"

# 2. screenshots at 1280 px wide, and one at 60 % for docs/img
chrome --screenshot="$SHOTS/report.png" --window-size=1280,2000 --hide-scrollbars \
    "file://$WORK/report.html" >/dev/null || fail "chromium --screenshot"
[[ $(png_size "$SHOTS/report.png") == 1280x2000 ]] || fail "screenshot: $(png_size "$SHOTS/report.png")"
grep -E ':CONSOLE[:(]|Uncaught' "$WORK/log" && fail "the page logged to the console (screenshot)"
chrome --screenshot="$SHOTS/report-small.png" --window-size=1280,1900 --hide-scrollbars \
    --force-device-scale-factor=0.6 "file://$WORK/report.html" >/dev/null || fail "small screenshot"

# 3. the SVG, and charts cut out of the page, in a second renderer
python3 - "$WORK/report.html" "$WORK" <<'EOF' || fail "cutting charts out of the page"
import re, sys
page = open(sys.argv[1], encoding="utf-8").read()
for id in ("chart-lengths", "chart-speakers"):
    m = re.search(r'<svg [^>]*id="%s".*?</svg>' % id, page, re.S)
    open("%s/%s.svg" % (sys.argv[2], id), "w", encoding="utf-8").write(m.group(0))
EOF
for name in cost chart-lengths chart-speakers; do
    if command -v rsvg-convert >/dev/null; then
        rsvg-convert "$WORK/$name.svg" -o "$SHOTS/$name.png" 2>"$WORK/log" \
            || fail "rsvg-convert $name.svg: $(head -3 "$WORK/log")"
        [[ -s $WORK/log ]] && fail "rsvg-convert $name.svg warned: $(head -3 "$WORK/log")"
    else
        chrome --screenshot="$SHOTS/$name.png" --window-size=960,360 --hide-scrollbars \
            "file://$WORK/$name.svg" >/dev/null || fail "chromium $name.svg"
    fi
    [[ $(png_size "$SHOTS/$name.png") == 960x360 ]] \
        || fail "$name.png: $(png_size "$SHOTS/$name.png"), expected 960x360"
done

exit $((failures > 0))
