#!/usr/bin/env python3
"""tools/check_includes.py's call-loop check on made-up trees: files that call
each other round a loop of three (which no check of pairs sees), a loop with a
file off its shortest path, a loop across two libraries, and a tree without
one. Each tree is a src/ folder with a one-line table, compiled as meson lays
out objects (<build>/<subdir>/<target>.p/<path with '_'>.o), so the check
names the sources; the expected lines follow from the calls written here.

usage: test_call_loops.py CHECK_INCLUDES_PY CC..."""
import os
import subprocess
import sys
import tempfile

CHECK, CC = sys.argv[1], sys.argv[2:] or ['cc']


def tree(tmp, libs):
    """libs: {library name: {file stem: [functions it calls]}}; file `f`
    defines f_fn. Returns the check's exit code and stderr lines."""
    root = os.path.join(tmp, 'root')
    os.makedirs(os.path.join(root, 'src', 'x'))
    os.makedirs(os.path.join(root, 'docs'))
    with open(os.path.join(root, 'docs', 'ARCHITECTURE.md'), 'w') as f:
        f.write('## Which folder may include which\n\n    x -> (nothing)\n')
    args = []
    for lib, files in libs.items():
        objdir = os.path.join(root, 'build', 'src', f'lib{lib}.a.p')
        os.makedirs(objdir)
        objs = []
        for stem, calls in files.items():
            src = os.path.join(root, 'src', 'x', f'{stem}.c')
            with open(src, 'w') as f:
                f.write(''.join(f'void {c}(void);\n' for c in calls))
                f.write(f'void {stem}_fn(void) {{ ' + ''.join(f'{c}(); ' for c in calls) + '}\n')
            obj = os.path.join(objdir, f'x_{stem}.c.o')
            subprocess.run(CC + ['-c', '-o', obj, src], check=True)
            objs.append(obj)
        archive = os.path.join(root, 'build', 'src', f'lib{lib}.a')
        # meson's archives are thin (members named by path); plain ones too
        thin = 'T' if lib == 'two' else ''
        subprocess.run(['ar', 'rcs' + thin, archive] + objs, check=True)
        args += ['--library', archive]
    r = subprocess.run([sys.executable, CHECK, '--root', root, '--build-root',
                        os.path.join(root, 'build')] + args, capture_output=True, text=True)
    return r.returncode, r.stderr.splitlines()


def expect(name, libs, code, lines):
    with tempfile.TemporaryDirectory() as tmp:
        got = tree(tmp, libs)
    if got != (code, lines):
        print(f'{name}: expected {(code, lines)}\n  got {got}', file=sys.stderr)
        return 1
    return 0


LOOP = 'files call each other round a loop: '
fails = 0
# a -> b -> c -> a, and d calls into the loop from outside it
fails += expect('loop of three', {'one': {'a': ['b_fn'], 'b': ['c_fn'], 'c': ['a_fn'],
                                          'd': ['a_fn']}}, 1,
                [LOOP + 'src/x/a.c -(b_fn)-> src/x/b.c -(c_fn)-> src/x/c.c -(a_fn)-> src/x/a.c'])
# a <-> b, and b -> c -> a: one component; its shortest loop from a misses c
fails += expect('component wider than its loop',
                {'one': {'a': ['b_fn'], 'b': ['a_fn', 'c_fn'], 'c': ['a_fn']}}, 1,
                [LOOP + 'src/x/a.c -(b_fn)-> src/x/b.c -(a_fn)-> src/x/a.c '
                        '(the loop also runs through src/x/c.c)'])
# the loop closes only over both libraries together
fails += expect('loop across libraries', {'one': {'a': ['b_fn']}, 'two': {'b': ['a_fn']}}, 1,
                [LOOP + 'src/x/a.c -(b_fn)-> src/x/b.c -(a_fn)-> src/x/a.c'])
# a chain, each file called by many: no loop
fails += expect('no loop', {'one': {'a': ['b_fn', 'c_fn'], 'b': ['c_fn'], 'c': []}}, 0, [])
sys.exit(1 if fails else 0)
