#!/usr/bin/env python3
"""Independent check of `equishard plan --mode reshard` output with Python's tarfile.

    reshard_check.py [--root DIR] [--keys FILE] SOURCE_LIST NEW_DATA_LIST

Reads every source shard named by SOURCE_LIST (paths resolved against --root,
else the current directory) and every new shard named by NEW_DATA_LIST (paths
as written, against the current directory), each with Python's tarfile (.zst
through the `zstd` command-line tool; gzip through Python's own gzip), and
checks:
  - the utterances (consecutive members sharing the prefix before the last
    '.', as WeNet's tar_file_and_group groups them) of the new shards are, as a
    multiset of (key, [(member name, size, sha256), ...]), exactly those of the
    sources (restricted to --keys when given: one key a line);
  - so every member was copied byte for byte, each utterance's members are
    contiguous and in their original order, and nothing was added or lost;
  - within each new shard the utterances keep source order (source shard in
    list order, then position);
  - every member is a regular file with mode 0644, mtime 0, uid/gid 0 and
    empty user/group names;
  - a plain .tar is a whole number of tarfile.RECORDSIZE-byte records, as
    Python's tarfile pads its own.
Prints one summary line; exits 1 with a message on the first failure.
"""
import argparse
import hashlib
import io
import os
import subprocess
import sys
import tarfile


def open_tar(path):
    with open(path, "rb") as f:
        head = f.read(4)
    if head == b"\x28\xb5\x2f\xfd":
        data = subprocess.run(["zstd", "-dcq", path], check=True, stdout=subprocess.PIPE).stdout
        return tarfile.open(fileobj=io.BytesIO(data), mode="r:")
    return tarfile.open(path, mode="r:*")


def utterances(path, check_meta=False):
    """[(key, ((name, size, sha256), ...)), ...] in shard order."""
    out = []
    with open_tar(path) as tf:
        for m in tf:
            if check_meta:
                meta = (m.type, m.mode, m.mtime, m.uid, m.gid, m.uname, m.gname)
                if meta != (tarfile.REGTYPE, 0o644, 0, 0, 0, "", ""):
                    sys.exit("%s: member %s has metadata %r" % (path, m.name, meta))
            if not m.isfile():
                continue
            key = m.name.rsplit(".", 1)[0] if "." in m.name else m.name
            data = tf.extractfile(m).read()
            member = (m.name, len(data), hashlib.sha256(data).hexdigest())
            if out and out[-1][0] == key:
                out[-1][1].append(member)
            else:
                out.append((key, [member]))
    return [(k, tuple(ms)) for k, ms in out]


def read_list(path):
    with open(path, encoding="utf-8") as f:
        return [line.strip() for line in f if line.strip()]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root")
    ap.add_argument("--keys")
    ap.add_argument("sources")
    ap.add_argument("new_list")
    a = ap.parse_args()
    keep = set(read_list(a.keys)) if a.keys else None
    src_order = {}
    src = []
    for i, entry in enumerate(read_list(a.sources)):
        path = entry if os.path.isabs(entry) or not a.root else os.path.join(a.root, entry)
        for pos, utt in enumerate(utterances(path)):
            if keep is None or utt[0] in keep:
                src.append(utt)
                src_order[utt] = (i, pos)
    new = []
    shards = read_list(a.new_list)
    for path in shards:
        if path.endswith(".tar") and os.path.getsize(path) % tarfile.RECORDSIZE:
            sys.exit("%s: %d bytes, not a whole number of %d-byte records"
                     % (path, os.path.getsize(path), tarfile.RECORDSIZE))
        mine = utterances(path, check_meta=True)
        order = [src_order.get(u) for u in mine]
        if None in order:
            bad = mine[order.index(None)]
            sys.exit("%s: utterance %s is not a source utterance (members differ)" % (path, bad[0]))
        if order != sorted(order):
            sys.exit("%s: utterances are not in source order" % path)
        new += mine
    if sorted(src) != sorted(new):
        missing = set(src) - set(new)
        extra = set(new) - set(src)
        sys.exit("multisets differ: %d source utterances, %d new; missing %s; extra %s"
                 % (len(src), len(new), sorted(k for k, _ in missing)[:5],
                    sorted(k for k, _ in extra)[:5]))
    members = sum(len(ms) for _, ms in new)
    print("reshard_check: %d utterances, %d members in %d shards: identical to the sources"
          % (len(new), members, len(shards)))


if __name__ == "__main__":
    main()
