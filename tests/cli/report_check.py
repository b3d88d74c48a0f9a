"""Checks an HTML report (`equishard report --html`, `simulate --html`), or the
DOM a browser made of it, against independent sources: plan.json and the
simulation's JSON parsed with Python's json, bin counts and speaker minutes
recomputed from the cost table's TSV, validate's JSON counts.

usage: report_check.py report|simulate PAGE COSTS.tsv PLAN.json|- SIM.json VALIDATE.json|- [--dom]

--dom: PAGE is a browser's --dump-dom; the page's script must have run (it
counts the charts into <html data-charts>) and written no error (#errors).
Exit 0, or 1 with one line per problem."""
import csv
import html.parser
import json
import math
import sys

problems = []


def check(cond, what):
    if not cond:
        problems.append(what)
    return cond


class Node:
    def __init__(self, tag, attrs, parent):
        self.tag, self.attrs, self.parent = tag, dict(attrs), parent
        self.children, self.text = [], ""

    def classes(self):
        return self.attrs.get("class", "").split()

    def all(self):
        yield self
        for c in self.children:
            yield from c.all()

    def find(self, tag=None, cls=None, id=None):
        return [n for n in self.all() if (tag is None or n.tag == tag)
                and (cls is None or cls in n.classes()) and (id is None or n.attrs.get("id") == id)]

    def content(self):
        return self.text + "".join(c.content() for c in self.children)


VOID = {"meta", "br", "link", "img", "input", "hr"}


class Tree(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root = Node("#root", [], None)
        self.cur = self.root

    def handle_starttag(self, tag, attrs):
        n = Node(tag, attrs, self.cur)
        self.cur.children.append(n)
        if tag not in VOID:
            self.cur = n

    def handle_startendtag(self, tag, attrs):
        self.cur.children.append(Node(tag, attrs, self.cur))

    def handle_endtag(self, tag):
        n = self.cur
        while n is not self.root and n.tag != tag:
            n = n.parent
        if n is not self.root:
            self.cur = n.parent

    def handle_data(self, data):
        self.cur.children.append(Node("#text", [], self.cur))
        self.cur.children[-1].text = data


mode, page, costs_path, plan_path, sim_path, val_path = sys.argv[1:7]
dom = "--dom" in sys.argv[7:]
tree = Tree()
tree.feed(open(page, encoding="utf-8").read())
root = tree.root
plan = json.load(open(plan_path)) if plan_path != "-" else None
sim = json.load(open(sim_path))
val = json.load(open(val_path)) if val_path != "-" else None
rows = [r for r in csv.DictReader((l for l in open(costs_path) if not l.startswith("#equishard")),
                                  delimiter="\t")]


def chart(id):
    c = root.find("svg", id=id)
    check(len(c) == 1, f"{id}: {len(c)} charts with that id")
    return c[0] if c else Node("svg", [], None)


def ticks(c, axis):
    return [t.content().strip() for g in c.find("g", cls="axis") if axis in g.classes()
            for t in g.find("text", cls="tick")]


def bars(c, series=None):
    return [float(b.attrs["data-value"]) for b in c.find("rect", cls="bar")
            if series is None or b.attrs.get("data-series") == series]


def close(a, b, tol=1e-6):
    return len(a) == len(b) and all(abs(x - y) <= tol * max(1, abs(y)) for x, y in zip(a, b))


# -- every chart: a title, both axes with tick values and names, a legend ------
charts = root.find("svg", cls="chart")
check(len(charts) >= 5, f"only {len(charts)} charts")
for c in charts:
    id = c.attrs.get("id", "?")
    check(any(t.content().strip() for t in c.find("text", cls="title")), f"{id}: no title")
    for axis in ("x", "y"):
        check(len(ticks(c, axis)) >= 2, f"{id}: axis {axis} has {len(ticks(c, axis))} tick labels")
    names = [t.content().strip() for t in c.find("text", cls="axis-label")]
    check(len(names) >= 1 and all(names), f"{id}: axis names {names}")
    check(len(c.find("g", cls="legend-item")) >= 1, f"{id}: no legend")
    # reference lines' labels never on top of each other
    ys = sorted(float(t.attrs["y"]) for t in c.find("text", cls="ref-label")
                if c.find("g", cls="bars"))
    check(all(b - a >= 12 for a, b in zip(ys, ys[1:])), f"{id}: labels overlap at {ys}")

# -- self-contained: nothing fetched ----------------------------------------------
check(not root.find("link") and not root.find("img") and
      not [s for s in root.find("script") if "src" in s.attrs], "the page loads something")

# -- the split against the plan ------------------------------------------------------
ep = sim["epochs"]
sides = {m: (sim.get("plan") or {}).get(m) or {} for m in ("shard", "batch")}
for e in ep:
    c = chart(f"chart-batches-{e['epoch']}")
    name = (sim["parameters"]["loader"] + "'s own split") if not sim["parameters"]["plan"] \
        else "the plan replayed"
    own = bars(c, name)
    check(close(own, [r["batches"] for r in e["ranks"]]), f"epoch {e['epoch']}: {name} {own}")
    labels = [t.content() for t in c.find("text", cls="ref-label")]
    check(f"join cut {e['min_batches']:.2f}" in labels, f"epoch {e['epoch']}: cut label {labels}")
    skipped = [float(s.attrs["data-value"]) for s in c.find("rect", cls="skipped")]
    want = [r["batches"] - e["min_batches"] for r in e["ranks"] if r["batches"] > e["min_batches"]]
    check(close(skipped, want), f"epoch {e['epoch']}: skipped {skipped} != {want}")
    if plan and plan["parameters"]["mode"] == "shard" and sides["shard"].get("available"):
        # planned again = plan.json's
        got = bars(c, "shard plan")
        check(close(got, [r["batches"] for r in plan["ranks"]]), f"shard plan batches {got}")
ret = [100 * sim["summary"]["retention"]] + [100 * sides[m]["retention"]
                                             for m in ("shard", "batch")
                                             if sides[m].get("available")]
if len(ret) > 1:
    check(close(bars(chart("chart-retention")), ret), f"retention {bars(chart('chart-retention'))}")
else:
    check(not root.find("svg", id="chart-retention"), "a retention chart of one split")
head = root.find(id="headline")
check(head and f"{ret[0]:.2f} %" in head[0].content(), "headline lacks the retention")

# -- cost per rank, zoomed by the documented rule ------------------------------------


def check_cost(id, ranks, bound):
    c = chart(id)
    cost = [r["cost"] for r in ranks]
    check(close(bars(c), cost), f"{id}: bars {bars(c)} != {cost}")
    mean = sum(cost) / len(cost)
    labels = [t.content() for t in c.find("text", cls="ref-label")]
    check(f"mean {mean:.1f}" in labels and f"lower bound {bound:.1f}" in labels,
          f"{id}: line labels {labels}")
    dev = max(max(abs(x - mean) for x in cost), abs(bound - mean)) / mean
    half = next((h for h in (0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5) if dev * 1.15 <= h), None)
    note = c.find("text", cls="note")[0].content()
    if half:
        want = f"y axis from {100 * (1 - half):.1f} % to {100 * (1 + half):.1f} % of the mean ({mean:.1f}"
        check(note.startswith(want), f"{id}: note {note!r}, expected {want!r}")
        y = [float(t.replace(" %", "")) for t in ticks(c, "y")]
        check(y and abs(y[0] - 100 * (1 - half)) < 1e-9 and abs(y[-1] - 100 * (1 + half)) < 1e-9,
              f"{id}: y ticks {y}")
    return c


if plan:
    m = plan["metrics"]
    check_cost("chart-cost", plan["ranks"], m["lower_bound"])
for mo in ("shard", "batch"):
    if plan and plan["parameters"]["mode"] == mo:
        continue
    side = sides[mo]
    if not side.get("available"):
        check(not root.find("svg", id=f"chart-cost-{mo}"), f"chart-cost-{mo} of no plan")
        continue
    check_cost(f"chart-cost-{mo}", side["ranks"],
               max(r["cost"] for r in side["ranks"]) / (1 + side["lower_bound_gap"]))

# -- the data: lengths and the filter, tokens, speakers -------------------------------


def check_bins(id, values):
    c = chart(id)
    bins = c.find("rect", cls="bin")
    for b in bins:
        lo, hi = float(b.attrs["data-lo"]), float(b.attrs["data-hi"])
        n = sum(1 for v in values if lo <= v < hi)
        check(n == int(b.attrs["data-count"]), f"{id}: [{lo}, {hi}) holds {n}, chart says "
              f"{b.attrs['data-count']}")
    check(sum(int(b.attrs["data-count"]) for b in bins) == len(values),
          f"{id}: bins hold {sum(int(b.attrs['data-count']) for b in bins)} of {len(values)}")
    return c


params = (plan or sim)["parameters"]
flt = params["filter"]
lengths = [int(r["samples"]) / int(r["sample_rate"]) for r in rows if int(r["sample_rate"])]
c = check_bins("chart-lengths", lengths)
labels = [t.content() for t in c.find("g", cls="legend-item")]
check(any(f"min_length {flt['min_length'] / 100:.2f} s" in l for l in labels), f"lengths legend {labels}")
filtered = (plan["metrics"] if plan else sim["input"])["filtered"]
table = {tr.find("td")[0].content(): int(tr.find("td")[1].content())
         for tr in root.find(id="filtered")[0].find("tr") if len(tr.find("td")) == 2}
check(all(table.get(k) == v for k, v in filtered.items()), f"filtered table {table} != {filtered}")
def tokens(r):
    t = r.get("text_tokens") or "-"
    return int(t) if t != "-" else 0


has_tok = any(tokens(r) for r in rows)
text = [tokens(r) if has_tok else int(r["text_len"]) for r in rows
        if "text" in r["flags"].split(",") and (not has_tok or tokens(r) or "no_tokens" in r["flags"])]
check_bins("chart-text-tokens", text)
speech = [int(r["speech_tokens"]) for r in rows if int(r["speech_tokens"])]
if speech:
    check_bins("chart-speech-tokens", speech)
else:
    check(root.find(id="no-speech-tokens"), "no note on the missing speech tokens")
sec = {}
for r in rows:
    sec[r["spk"] or "(no speaker)"] = sec.get(r["spk"] or "(no speaker)", 0) + (
        int(r["samples"]) / int(r["sample_rate"]) if int(r["sample_rate"]) else 0)
order = sorted(sec, key=lambda s: (-sec[s], s))
div = 1 if sec[order[0]] < 60 else 60 if sec[order[0]] < 3600 else 3600
parts = [("chart-speakers", order)] if len(order) <= 20 else [
    ("chart-speakers-top", order[:10]), ("chart-speakers-bottom", order[-10:])]
for id, part in parts:
    c = chart(id)
    got = [(b.attrs["data-cat"], float(b.attrs["data-value"])) for b in c.find("rect", cls="bar")]
    want = [(s, sec[s] / div) for s in part]
    check([g[0] for g in got] == [w[0] for w in want] and
          close([g[1] for g in got], [w[1] for w in want]), f"{id}: {got} != {want}")

# -- validate ----------------------------------------------------------------------------
if val:
    t = root.find(id="validate-counts")
    got = {tr.find("td")[0].content(): int(tr.find("td")[1].content())
           for tr in (t[0].find("tr") if t else []) if len(tr.find("td")) == 2}
    check(got == val["counts"], f"validate counts {got} != {val['counts']}")
    rows_shown = root.find(id="validate-findings")
    check(rows_shown and len(rows_shown[0].find("tr")) - 1 == min(50, len(val["findings"])),
          "validate findings table")

# -- what the browser made of it -------------------------------------------------------
if dom:
    html_el = root.find("html")
    check(html_el and html_el[0].attrs.get("data-charts") == str(len(charts)),
          f"the page's script did not run (data-charts {html_el[0].attrs.get('data-charts') if html_el else None})")
    err = root.find(id="errors")
    check(err and not err[0].content().strip(), f"the page logged errors: {err[0].content() if err else ''}")

for p in problems:
    print("report_check:", p)
sys.exit(1 if problems else 0)
