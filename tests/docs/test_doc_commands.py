"""Every documented command runs as written (doc_blocks.py says which blocks).

For README.md and docs/QUICKSTART.md: the untagged ```sh blocks run in order in
one bash (`set -euo pipefail`) as a user following along would (a `cd` carries
over to the next block), from a scratch folder holding a copy of data-samples/, with the built `equishard` first on PATH and the package
importable; each must exit 0 and every file its equishard lines say they write
(-o, --html, --svg, validate's --json) must exist afterwards. `sh setup`
blocks must name tools/dev.sh commands that exist; the `sh cosyvoice` and
`sh wenet` blocks must exist (the e2e tests run them). No command of the form
`equishard ...` or `tools/dev.sh ...` may sit outside a fenced block, where no
test would see it.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import doc_blocks  # noqa: E402

SRC = os.environ.get("ES_SOURCE_ROOT", os.path.dirname(os.path.dirname(HERE)))
BUILD = os.environ.get("ES_BUILD_ROOT", os.path.join(SRC, "build"))
DOCS = ["README.md", "docs/QUICKSTART.md"]
failures = []


def fail(msg):
    print("FAIL:", msg)
    failures.append(msg)


def dev_sh_commands():
    text = open(os.path.join(SRC, "tools", "dev.sh"), encoding="utf-8").read()
    case = text[text.index('case "${1:-}" in'):]
    return set(re.findall(r"^([a-z][a-z-]*)\)", case, re.M))


def check_setup(doc, line, text, known):
    for cmd in doc_blocks.commands(text):
        words = cmd.split()
        if words[0] == "tools/dev.sh":
            if len(words) < 2 or words[1] not in known:
                fail(f"{doc}:{line}: '{cmd}': tools/dev.sh has no such command ({sorted(known)})")
        elif not (words[0] in ("pip", "python3") or words[0].endswith("/pip") or "PYTHON=" in words[0]):
            fail(f"{doc}:{line}: '{cmd}' in a setup block is neither tools/dev.sh nor pip")


def stray_commands(doc):
    """Lines that look like a command outside any fenced block."""
    inside = False
    for n, line in enumerate(open(os.path.join(SRC, doc), encoding="utf-8"), 1):
        if line.startswith("```"):
            inside = not inside
        elif not inside and re.match(r"^ {4,}(equishard|tools/dev\.sh|mpirun|torchrun) ", line):
            fail(f"{doc}:{n}: a command outside a fenced block (no test runs it): {line.strip()}")


def run_blocks(doc, todo):
    scratch = tempfile.mkdtemp(prefix="doc-commands-", dir=BUILD)
    shutil.copytree(os.path.join(SRC, "data-samples"), os.path.join(scratch, "data-samples"))
    script = ["set -euo pipefail"]
    for line, _, text in todo:
        script += [f"echo '@@ block {doc}:{line}' >&2", text]
    env = dict(os.environ, SCRATCH=scratch,
               PATH=os.path.join(BUILD, "tools", "equishard") + os.pathsep + os.environ["PATH"],
               PYTHONPATH=os.path.join(SRC, "python"),
               EQUISHARD_LIB=os.path.join(BUILD, "src", "libequishard.so"))
    lib = env["EQUISHARD_LIB"]
    asan = [w for w in subprocess.run(["ldd", lib], capture_output=True, text=True).stdout.split()
            if "/libasan" in w]
    if asan:  # an ASan build: python3 (not instrumented) needs its runtime first
        env.update(LD_PRELOAD=asan[0], ASAN_OPTIONS="detect_leaks=0")
    r = subprocess.run(["bash", "-c", "\n".join(script)], cwd=scratch, env=env,
                       capture_output=True, text=True, timeout=600)
    where = re.findall(r"@@ block (\S+)", r.stderr)
    if r.returncode != 0:
        fail(f"{where[-1] if where else doc}: exit {r.returncode}\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}")
    else:
        cds = [c for _, _, text in todo for c in re.findall(r"^cd (\S+)", text, re.M)]
        bases = [os.path.normpath(os.path.join(scratch, c)) for c in cds] + [scratch]
        for line, _, text in todo:
            for cmd in doc_blocks.commands(text):
                for out in doc_blocks.outputs(cmd):
                    # the document's blocks may cd: look in every folder they cd to
                    if not any(os.path.exists(os.path.join(b, out)) for b in bases):
                        fail(f"{doc}:{line}: '{cmd}' says it writes {out}, which is not there")
        print(f"{doc}: {len(todo)} block(s) ran, exit 0")
    shutil.rmtree(scratch, ignore_errors=True)


def main():
    if not os.path.exists(os.path.join(BUILD, "tools", "equishard", "equishard")):
        print("SKIP: no built equishard")
        sys.exit(77)
    known = dev_sh_commands()
    for doc in DOCS:
        path = os.path.join(SRC, doc)
        if not os.path.exists(path):
            fail(f"{doc} is missing")
            continue
        stray_commands(doc)
        every = doc_blocks.blocks(path)
        for line, tag, text in every:
            if tag == "setup":
                check_setup(doc, line, text, known)
            elif tag not in ("", "cosyvoice", "wenet"):
                fail(f"{doc}:{line}: unknown block tag 'sh {tag}'")
        todo = [b for b in every if b[1] == ""]
        if todo:
            run_blocks(doc, todo)
    readme = os.path.join(SRC, "README.md")
    for kind in ("cosyvoice", "wenet"):
        if not doc_blocks.blocks(readme, kind):
            fail(f"README.md has no 'sh {kind}' block (the e2e test runs it)")
    if failures:
        sys.exit(1)
    print("every documented command ran")


if __name__ == "__main__":
    main()
