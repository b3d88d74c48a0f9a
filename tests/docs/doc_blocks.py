"""The shell blocks of the user's documents, as the tests run them.

README.md and docs/QUICKSTART.md show commands only in fenced blocks whose info
string says who runs them, so that no documented command can drift from the
program:

    ```sh            run by tests/docs/test_doc_commands.py, every block of a
                     document in order in one shell (a user following along:
                     a cd carries over), from a scratch folder holding a copy
                     of data-samples/
    ```sh cosyvoice  run by tests/e2e/test_cosyvoice_e2e.py in a scratch recipe
                     folder (conf/ = CosyVoice's upstream yaml, data/ = a corpus
                     the test makes), which then trains on what they wrote
    ```sh wenet      the same, tests/e2e/test_wenet_e2e.py
    ```sh setup      the set-up and test commands CI itself runs (.ci/run):
                     checked to name a tools/dev.sh command that exists

Any other block (```text, ```python ...) is not a command.
"""
import re

FENCE = re.compile(r"^```(\S*)\s*(.*)$")


def blocks(path, kind=None):
    """[(line number, info tag, text)] of the ```sh blocks of path; kind: only
    blocks with that tag ("" for untagged ones)."""
    out, cur = [], None
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            m = FENCE.match(line.rstrip("\n"))
            if cur is None and m and m.group(1):
                cur = (n, m.group(1), m.group(2).strip(), [])
            elif cur is not None and line.rstrip("\n") == "```":
                if cur[1] == "sh" and (kind is None or cur[2] == kind):
                    out.append((cur[0], cur[2], "".join(cur[3])))
                cur = None
            elif cur is not None:
                cur[3].append(line)
    if cur is not None:
        raise ValueError(f"{path}:{cur[0]}: fenced block never closed")
    return out


def commands(text):
    """The block's command lines, continuation lines joined, comments dropped."""
    lines, joined = [], ""
    for line in text.splitlines():
        joined += line.rstrip("\\").rstrip() + " " if line.endswith("\\") else line
        if not line.endswith("\\"):
            stripped = re.sub(r"(^|\s)#.*$", "", joined).strip()
            if stripped:
                lines.append(stripped)
            joined = ""
    return lines


def outputs(command):
    """The files an equishard command line says it writes: the value of -o,
    --html FILE, --svg FILE, and validate's --json FILE (simulate's --json is a
    flag)."""
    words = command.split()
    if words[:1] != ["equishard"]:
        return []
    takes = {"-o", "--output", "--html", "--svg"} | ({"--json"} if words[1:2] == ["validate"] else set())
    return [value for flag, value in zip(words, words[1:])
            if flag in takes and value != "-" and not value.startswith("-")]
