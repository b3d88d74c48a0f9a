#!/usr/bin/env python3
"""The dependency rule between src/ folders (docs/ARCHITECTURE.md), checked.

Reads the table under "## Which folder may include which" in ARCHITECTURE.md
(indented lines `folder -> other, other` or `folder -> (nothing)`), parses every
`#include "folder/..."` under src/ (a subfolder such as validate/sources counts
as its top folder), and fails when:
  - a folder under src/ is missing from the table, or the table names one that
    does not exist;
  - a file includes from a folder its folder may not include;
  - the table lists an edge no file uses (the table is the actual edges, so it
    stays true);
  - the table has a cycle (then so could the code).
With --library LIB (the static library of src/, built with every object), it
also fails when two object files call each other (each uses a symbol the other
defines): dispatch goes through tables or one direction only.

usage: check_includes.py [--root DIR] [--library LIB]
"""
import argparse
import os
import re
import subprocess
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
ROW = re.compile(r'^ {4}(\w+)\s+->\s+(.*?)\s*$')
SECTION = '## Which folder may include which'


def read_table(doc):
    text = open(doc, encoding='utf-8').read()
    at = text.find(SECTION)
    if at < 0:
        sys.exit(f'{doc}: no section "{SECTION}"')
    table = {}
    for line in text[at:].split('\n')[1:]:
        if line.startswith('## '):
            break
        m = ROW.match(line)
        if not m:
            continue
        folder, rest = m.group(1), m.group(2)
        if folder in table:
            sys.exit(f'{doc}: folder {folder} is listed twice')
        rest = re.sub(r'\(.*?\)', '', rest).strip()
        table[folder] = {x.strip() for x in rest.split(',') if x.strip()}
    if not table:
        sys.exit(f'{doc}: no "folder -> folders" lines under "{SECTION}"')
    return table


def read_edges(src):
    folders = sorted(d for d in os.listdir(src) if os.path.isdir(os.path.join(src, d)))
    edges = {}  # (from, to) -> first file that includes so
    for top, _, files in os.walk(src):
        for name in sorted(files):
            if not name.endswith(('.c', '.h', '.cu')):
                continue
            path = os.path.join(top, name)
            rel = os.path.relpath(path, src)
            here = rel.split(os.sep)[0]
            for inc in INCLUDE.findall(open(path, encoding='utf-8', errors='replace').read()):
                there = inc.split('/')[0]
                if '/' in inc and there in folders and there != here:
                    edges.setdefault((here, there), f'src/{rel}: #include "{inc}"')
    return folders, edges


def find_cycle(graph):
    state, stack = {}, []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for m in sorted(graph.get(n, ())):
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in state:
                c = visit(m)
                if c:
                    return c
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if n not in state:
            c = visit(n)
            if c:
                return c
    return None


def mutual_calls(library):
    out = subprocess.run(['nm', '-A', library], capture_output=True, text=True, check=True).stdout
    defs, uses = {}, {}
    for line in out.splitlines():
        head, _, sym = line.rpartition(' ')
        fields = head.split(':')
        obj = os.path.basename(fields[1] if len(fields) >= 3 else fields[0])
        kind = head.split()[-1] if head.split() else ''
        if kind == 'U':
            uses.setdefault(obj, set()).add(sym)
        elif kind in 'TDBRtdbr' and kind.isupper():
            defs.setdefault(obj, set()).add(sym)
    owner = {s: o for o, ss in defs.items() for s in ss}
    calls = {}
    for o, ss in uses.items():
        for s in ss:
            if s in owner and owner[s] != o:
                calls.setdefault(o, set()).add(owner[s])
    pairs = sorted({tuple(sorted((a, b))) for a in calls for b in calls[a]
                    if a in calls.get(b, ())})
    return [(a, b, sorted(uses[a] & defs[b])[:3], sorted(uses[b] & defs[a])[:3])
            for a, b in pairs]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--root', default=os.path.join(os.path.dirname(__file__), '..'))
    ap.add_argument('--library')
    a = ap.parse_args()
    src = os.path.join(a.root, 'src')
    doc = os.path.join(a.root, 'docs', 'ARCHITECTURE.md')
    table = read_table(doc)
    folders, edges = read_edges(src)
    errors = []
    for f in folders:
        if f not in table:
            errors.append(f'src/{f}/ is not in the table of {doc}')
    for f, tos in sorted(table.items()):
        for t in sorted(tos | {f}):
            if t not in folders:
                errors.append(f'the table names {t}, which is no folder under src/')
    for (f, t), where in sorted(edges.items()):
        if t not in table.get(f, set()):
            errors.append(f'{where}: {f} may not include {t} (docs/ARCHITECTURE.md)')
    for f, tos in sorted(table.items()):
        for t in sorted(tos):
            if (f, t) not in edges and t in folders:
                errors.append(f'the table lets {f} include {t}, but no file does: '
                              f'remove the edge from the table')
    cycle = find_cycle(table)
    if cycle:
        errors.append('the table has a cycle: ' + ' -> '.join(cycle))
    if a.library:
        for x, y, xy, yx in mutual_calls(a.library):
            errors.append(f'{x} and {y} call each other ({x} uses {", ".join(xy)}; '
                          f'{y} uses {", ".join(yx)})')
    for e in errors:
        print(e, file=sys.stderr)
    if errors:
        return 1
    print(f'{len(folders)} folders, {len(edges)} include edges, all in the table; no cycle' +
          ('; no two objects call each other' if a.library else ''))
    return 0


if __name__ == '__main__':
    sys.exit(main())
