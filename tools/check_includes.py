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
With --library LIB (repeatable: the static library of src/, and the CLI's
objects), it also fails when files call each other round a loop: a strongly
connected component of the file-level call graph (a file calls another when its
object uses a symbol the other's defines) with two or more files, printed as
one loop of files with one symbol per call. Dispatch goes through tables or
callbacks, or one direction only, to helpers in a third file.

usage: check_includes.py [--root DIR] [--build-root DIR] [--library LIB]...
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


def object_source(obj, build_root, root):
    """The source file a meson object was compiled from (meson names an object
    by its source's path below the target's folder, '/' turned '_'), else the
    object's own path: a loop is fixed in the sources, so name those."""
    obj = os.path.abspath(obj)
    if build_root:
        target_dir = os.path.dirname(obj)
        if target_dir.endswith('.p'):
            target_dir = os.path.dirname(target_dir)
        sub = os.path.relpath(target_dir, os.path.abspath(build_root))
        flat = os.path.basename(obj)[:-2] if obj.endswith('.o') else os.path.basename(obj)
        src_dir = os.path.join(root, sub)
        if not sub.startswith('..') and os.path.isdir(src_dir):
            for top, _, files in os.walk(src_dir):
                for name in files:
                    rel = os.path.relpath(os.path.join(top, name), src_dir)
                    if rel.replace(os.sep, '_') == flat or \
                            os.path.splitext(rel)[0].replace(os.sep, '_') == flat:
                        return os.path.relpath(os.path.join(top, name), root)
        return os.path.relpath(obj, os.path.abspath(build_root))
    return os.path.basename(obj)


def call_graph(libraries):
    """Object -> objects it calls, from the archives' symbols: an object calls
    another when it uses a symbol the other defines."""
    defs, uses = {}, {}
    for library in libraries:
        out = subprocess.run(['nm', '-A', library], capture_output=True, text=True,
                             check=True).stdout
        for line in out.splitlines():
            head, _, sym = line.rpartition(' ')
            fields = head.split(':')
            obj = fields[1] if len(fields) >= 3 else fields[0]
            if os.sep not in obj:  # a member of a plain (not thin) archive
                obj = os.path.join(os.path.dirname(library), obj)
            kind = head.split()[-1] if head.split() else ''
            if kind == 'U':
                uses.setdefault(obj, set()).add(sym)
            elif kind in 'TDBRtdbr' and kind.isupper():
                defs.setdefault(obj, set()).add(sym)
    owner = {s: o for o, ss in defs.items() for s in ss}
    calls = {}  # (caller, callee) -> symbols
    for o, ss in uses.items():
        for s in ss:
            if s in owner and owner[s] != o:
                calls.setdefault((o, owner[s]), set()).add(s)
    return calls


def strong_components(nodes, succ):
    """Tarjan's strongly connected components (iterative), each sorted."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    for root in sorted(nodes):
        if root in index:
            continue
        work = [(root, iter(sorted(succ.get(root, ()))))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            n, it = work[-1]
            for m in it:
                if m not in index:
                    index[m] = low[m] = counter[0]
                    counter[0] += 1
                    stack.append(m)
                    on.add(m)
                    work.append((m, iter(sorted(succ.get(m, ())))))
                    break
                if m in on:
                    low[n] = min(low[n], index[m])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[n])
                if low[n] == index[n]:
                    comp = []
                    while True:
                        m = stack.pop()
                        on.discard(m)
                        comp.append(m)
                        if m == n:
                            break
                    out.append(sorted(comp))
    return sorted(out)


def shortest_loop(start, members, succ):
    """The shortest path start -> ... -> start inside one component."""
    prev, queue = {}, [start]
    for n in queue:
        for m in sorted(succ.get(n, ())):
            if m not in members:
                continue
            if m == start:
                path = [n]
                while path[-1] != start:
                    path.append(prev[path[-1]])
                return [start] + path[::-1][1:] + [start] if n != start else [start, start]
            if m not in prev:
                prev[m] = n
                queue.append(m)
    return [start]


def call_loops(libraries, name):
    """Every set of objects that call each other round a loop (a strongly
    connected component of the call graph with two or more files), each as one
    loop through it, a symbol per call, and the component's other files."""
    calls = call_graph(libraries)
    succ = {}
    for a, b in calls:
        succ.setdefault(a, set()).add(b)
    nodes = set(succ) | {b for a, b in calls}
    loops = []
    for comp in strong_components(nodes, succ):
        if len(comp) < 2:
            continue
        members = set(comp)
        start = min(comp, key=name)
        path = shortest_loop(start, members, succ)
        text = name(path[0])
        for a, b in zip(path, path[1:]):
            text += f' -({sorted(calls[(a, b)])[0]})-> {name(b)}'
        rest = sorted(name(m) for m in members - set(path))
        loops.append(text + (f' (the loop also runs through {", ".join(rest)})' if rest else ''))
    return loops


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--root', default=os.path.join(os.path.dirname(__file__), '..'))
    ap.add_argument('--library', action='append', default=[],
                    help='a static library whose objects may not call round a loop '
                         '(repeat: the loops are found over all of them together)')
    ap.add_argument('--build-root', help='the build folder, to name objects by their sources')
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
        root = os.path.abspath(a.root)
        for loop in call_loops(a.library, lambda o: object_source(o, a.build_root, root)):
            errors.append(f'files call each other round a loop: {loop}')
    for e in errors:
        print(e, file=sys.stderr)
    if errors:
        return 1
    print(f'{len(folders)} folders, {len(edges)} include edges, all in the table; no cycle' +
          ('; no files call each other round a loop' if a.library else ''))
    return 0


if __name__ == '__main__':
    sys.exit(main())
