"""equishard.loaders.fetch: a batch plan's rows fetched by [shard, pos], as the
drop-in loaders' workers fetch them (RowFetcher as they make it, fetch_batches)."""
import os
import shutil
import tempfile
import unittest

import plain_parquet
from equishard.loaders.fetch import RowFetcher, fetch_batches

SHARDS, ROWS = 12, 4  # more files than the 8 readers a worker used to keep open


class FetchTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="es-fetch-")
        for s in range(SHARDS):
            plain_parquet.write(os.path.join(cls.tmp, f"p{s:02d}.parquet"),
                                [{"utt": f"u{s}-{p}"} for p in range(ROWS)], [("utt", "utf8")])

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def test_each_shard_is_opened_once_when_batches_scatter_its_rows(self):
        # a batch plan's order: each batch takes a row from several files, and
        # every file comes back in later batches (here: round robin over all)
        items = [(f"p{s:02d}.parquet", p) for p in range(ROWS) for s in range(SHARDS)]
        batches = [{"items": items[i:i + 3]} for i in range(0, len(items), 3)]
        opened = []
        fetcher = RowFetcher(self.tmp, check=lambda shard, path: opened.append(shard))
        try:
            got = [row["utt"] for _, rows in fetch_batches(fetcher, batches, lookahead=2) for row in rows]
        finally:
            fetcher.close()
        self.assertEqual(got, [f"u{int(shard[1:3])}-{p}" for shard, p in items])
        # a file reopened would decode its list columns (embeddings, speech
        # tokens) again: once per epoch is what a front-to-back pass pays
        self.assertEqual(sorted(opened), sorted(f"p{s:02d}.parquet" for s in range(SHARDS)))


if __name__ == "__main__":
    unittest.main()
