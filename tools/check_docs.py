#!/usr/bin/env python3
"""Every document reference in the repository points at a file it holds.

Fails (exit 1, one line per problem: file:line: what) when
  - a *.md file links to a file that does not exist: a markdown link
    `[text](path)` (web addresses and in-page anchors aside), or a backticked
    path to a Markdown file such as `docs/PLAN.md` or `PLAN.md` (resolved
    against the document's folder, then the repository root; paths under a
    build folder are outputs and not checked);
  - any source or document cites the design or style notes kept outside the
    repository (DESIGN and STYLE, as .md files), or an "issue N": a reader
    cannot follow them. Say the reason in the text instead.

usage: check_docs.py [--root DIR]
"""
import argparse
import os
import re
import sys

# Folders that are not the repository's own text: build trees (they hold a
# meson-private folder), virtual environments, caches, version control.
SKIP_DIRS = {'.git', 'node_modules', '__pycache__', '.venv', 'venv'}
SOURCE_EXT = ('.md', '.c', '.h', '.cu', '.py', '.sh', '.mjs', '.build',
              '.toml', '.txt')

MD_LINK = re.compile(r'!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)')
TICKED = re.compile(r'`([^`\s]+\.md)(?:#[^`\s]*)?`')
# Spelled apart so this file does not match itself.
CITE = re.compile(r'\b(?:' + 'DESIGN' + r'|' + 'STYLE' + r')\.md\b'
                  r'|\b[Ii]ssues?\s+#?\d+')


def repo_files(root):
    for top, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs
                         if d not in SKIP_DIRS and not d.startswith('build')
                         and not os.path.isdir(os.path.join(top, d, 'meson-private'))
                         and not os.path.exists(os.path.join(top, d, 'pyvenv.cfg')))
        for name in sorted(files):
            yield os.path.join(top, name)


def target_exists(root, doc, target):
    path = target.split('#', 1)[0].split('?', 1)[0]
    if not path:
        return True  # an anchor in the same document
    if re.match(r'^build[^/]*/', path):
        return True  # written by a build or a test run, not kept in the repository
    here = os.path.dirname(doc)
    candidates = [os.path.join(here, path)]
    if path.startswith('/'):
        candidates = [os.path.join(root, path.lstrip('/'))]
    else:
        candidates.append(os.path.join(root, path))
    return any(os.path.exists(c) for c in candidates)


def check_markdown(root, doc, rel, lines, problems):
    fenced = False
    for no, line in enumerate(lines, 1):
        if line.lstrip().startswith('```'):
            fenced = not fenced
            continue
        if fenced:
            continue
        for m in MD_LINK.finditer(line):
            target = m.group(1)
            if re.match(r'^[a-z][a-z0-9+.-]*:', target, re.I):
                continue  # https:, mailto: and the like
            if not target_exists(root, doc, target):
                problems.append(f'{rel}:{no}: link to {target}, which does not exist')
        for m in TICKED.finditer(line):
            if not target_exists(root, doc, m.group(1)):
                problems.append(f'{rel}:{no}: `{m.group(1)}` does not exist')


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--root', default=os.path.join(os.path.dirname(__file__), '..'))
    root = os.path.normpath(ap.parse_args().root)
    problems = []
    checked = 0
    for path in repo_files(root):
        if not path.endswith(SOURCE_EXT):
            continue
        try:
            with open(path, encoding='utf-8') as f:
                lines = f.read().split('\n')
        except (UnicodeDecodeError, OSError):
            continue  # fixtures that are not text
        rel = os.path.relpath(path, root)
        for no, line in enumerate(lines, 1):
            for m in CITE.finditer(line):
                problems.append(f'{rel}:{no}: cites "{m.group(0)}", which is not in '
                                'the repository; say the reason instead')
        if path.endswith('.md'):
            checked += 1
            check_markdown(root, path, rel, lines, problems)
    for p in problems:
        print(p)
    if problems:
        print(f'{len(problems)} problem(s) in the documentation references', file=sys.stderr)
        return 1
    print(f'{checked} Markdown files: every link and document reference resolves')
    return 0


if __name__ == '__main__':
    sys.exit(main())
