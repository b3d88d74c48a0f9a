"""Fetching a planned batch's utterances by [shard, pos], through libequishard.

A batch plan's items name rows, not files: one batch may hold rows of many
parquet files (or tar shards), and every file comes back batch after batch.
Each worker keeps its files open (RowReader handles, up to MAX_OPEN, least
recently used closed first) and reads only the rows it needs: the library skips
the row groups and pages of a parquet file that hold none of them. A reader
kept open keeps what it decoded: a parquet file's list columns (embeddings,
speech tokens; about 8 ms a file of 1000 CosyVoice rows to decode, 2.5-8 MB to
keep) and where a tar shard's utterances begin (a fetch seeks there). A
corpus of more files than MAX_OPEN has them reopened and decoded again visit
after visit: at 20 files and 8 open, an epoch took twice the recipe's own
front-to-back pass (docs/PERFORMANCE.md).
"""
import collections
import os

# Readers a worker keeps open: every file of a corpus of up to this many, in
# what the recipe's own shuffle and sort buffers would hold (the drop-ins leave
# them out); file descriptors: one each.
MAX_OPEN = 64


class RowFetcher:
    """fetch(items) -> the rows of [(shard, pos), ...] in item order, each the
    dict the recipe's opener would yield for it (parquet: column -> value;
    tar: {"key", member suffix -> bytes}). Relative shard paths resolve against
    `root` (default: the current directory, as the recipes' loaders do)."""

    def __init__(self, root=None, max_open=MAX_OPEN, check=None):
        self.root = root
        self.max_open = max_open
        self.check = check  # check(shard, path) before a shard is opened (PlanDir.check_shard)
        self._open = collections.OrderedDict()

    def _path(self, shard):
        if self.root is None or os.path.isabs(shard):
            return shard
        return os.path.join(self.root, shard)

    def _reader(self, shard):
        r = self._open.pop(shard, None)
        if r is None:
            from .. import RowReader  # the library is loaded in the worker, on first use
            if self.check is not None:
                self.check(shard, self._path(shard))
            r = RowReader(self._path(shard))
            while len(self._open) >= self.max_open:
                self._open.popitem(last=False)[1].close()
        self._open[shard] = r
        return r

    def fetch(self, items):
        by_shard = collections.OrderedDict()
        for i, (shard, pos) in enumerate(items):
            by_shard.setdefault(shard, []).append((i, pos))
        rows = [None] * len(items)
        for shard, wanted in by_shard.items():
            got = self._reader(shard).read([pos for _, pos in wanted])
            for (i, _), row in zip(wanted, got):
                rows[i] = row
        return rows

    def close(self):
        while self._open:
            self._open.popitem()[1].close()


def fetch_batches(fetcher, batches, lookahead=8):
    """Yields (batch, rows) for each batch in order, reading the rows of
    `lookahead` batches at a time: a parquet page holds several rows and is
    decompressed whole, so rows of the next batches that share a page with this
    one's come out of the same decompression (the planned order scatters a
    file's rows over many batches). Memory: the rows of `lookahead` batches."""
    for start in range(0, len(batches), max(1, lookahead)):
        window = batches[start:start + max(1, lookahead)]
        wanted = list(dict.fromkeys((shard, pos) for b in window for shard, pos in b["items"]))
        got = dict(zip(wanted, fetcher.fetch(wanted)))
        for b in window:
            yield b, [got[(shard, pos)] for shard, pos in b["items"]]
