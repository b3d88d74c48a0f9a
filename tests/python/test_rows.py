"""equishard.RowReader / read_rows against readers we did not write:
- parquet: every row as hyparquet reads it (tests/data/parquet/rows.json,
  written by dump_rows.mjs from the third-party files, data-samples, corpus A
  and InspireMusic's real pyarrow file), the Python types pyarrow's to_pylist
  gives (bytes, str, int, float, bool, list, None), positions in random order
  with duplicates, column subsets;
- tar: Python's tarfile grouped as WeNet's tar_file_and_group groups members
  (plain, gzip and zstd shards, the real WeNet shard), and es_measure's
  ordinals;
- errors, and the time to turn a batch into Python objects.

Run by meson (tests/meson.build); by hand: PYTHONPATH=python python3 -m unittest tests/python/test_rows.py
"""
import glob
import io
import json
import math
import os
import random
import subprocess
import tarfile
import time
import unittest
import zlib

import equishard

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.environ.get("ES_SOURCE_ROOT", os.path.join(HERE, "..", ".."))
FIXTURES = os.environ.get("ES_FIXTURES", os.path.join(ROOT, "tests", "fixtures"))
ASAN = "ES_PY_ROUNDS" in os.environ  # run.sh sets it under ASan: no timing there


def rows_truth():
    with open(os.path.join(ROOT, "tests", "data", "parquet", "rows.json"), encoding="utf-8") as f:
        return json.load(f)["files"]


def check_value(test, want, got, kind, where):
    """One value against rows.json's encoding of it (dump_rows.mjs)."""
    if want is None:
        test.assertIsNone(got, where)
    elif kind == "bytes":
        test.assertIs(type(got), bytes, where)
        test.assertEqual((len(got), zlib.crc32(got), got[:16].hex()),
                         (want["len"], want["crc32"], want["head"]), where)
    elif kind == "string":
        test.assertIs(type(got), str, where)
        test.assertEqual(got, want, where)
    elif kind == "bool":
        test.assertIs(type(got), bool, where)
        test.assertEqual(got, want, where)
    elif kind == "int":
        test.assertIs(type(got), int, where)
        test.assertEqual(got, int(want), where)
    elif kind == "float":
        test.assertIs(type(got), float, where)
        if want == "NaN":
            test.assertTrue(math.isnan(got), where)
        else:
            test.assertEqual(got, float(want), where)
    else:
        raise AssertionError(f"{where}: unknown kind {kind}")


class ParquetTest(unittest.TestCase):
    def check_file(self, f, positions, columns):
        cols = {c["name"]: c for c in f["columns"]}
        with equishard.RowReader(os.path.join(ROOT, f["path"])) as r:
            self.assertEqual(r.format, "parquet")
            self.assertEqual(r.num_rows, f["num_rows"])
            self.assertEqual(r.columns, [c["name"] for c in f["columns"]])
            got = r.read(positions, columns)
        self.assertEqual(len(got), len(positions))
        for pos, row in zip(positions, got):
            self.assertEqual(list(row), columns)  # the order asked for
            for name in columns:
                c, where = cols[name], f"{f['path']} row {pos} {name}"
                want, value = f["rows"][pos][name], row[name]
                if c["kind"] != "list" or want is None:
                    check_value(self, want, value, c["kind"], where)
                    continue
                self.assertIs(type(value), list, where)
                self.assertEqual(len(value), len(want), where)
                for k, (w, v) in enumerate(zip(want, value)):
                    check_value(self, w, v, c["elem"], f"{where}[{k}]")

    def test_rows_equal_hyparquet(self):
        files = rows_truth()
        self.assertGreaterEqual(len(files), 19)
        rng = random.Random(5)
        for f in files:
            positions = list(range(f["num_rows"]))
            rng.shuffle(positions)
            positions += positions[:3]  # duplicates
            columns = [c["name"] for c in f["columns"] if c["kind"] != "unsupported"]
            self.check_file(f, positions, columns)
            if len(columns) > 2:  # a subset, in another order
                self.check_file(f, positions[:5], [columns[-1], columns[0]])

    def test_all_columns_and_read_rows(self):
        f = next(f for f in rows_truth() if f["path"].endswith("/pages.parquet"))
        path = os.path.join(ROOT, f["path"])
        rows = equishard.read_rows(path, [119, 0, 40, 119])
        self.assertEqual([r["utt"] for r in rows], ["P0119", "P0000", "P0040", "P0119"])
        self.assertEqual(list(rows[0]), [c["name"] for c in f["columns"]])
        self.assertEqual(rows[0], rows[3])
        self.assertEqual(equishard.parquet_num_rows(path), 120)

    def test_audio_data_is_the_source_file(self):
        for path in sorted(glob.glob(os.path.join(FIXTURES, "corpus_a", "parquet", "*.tar"))):
            with equishard.RowReader(path) as r:
                for row in r.read(reversed(range(r.num_rows)), ["wav", "audio_data"]):
                    with open(os.path.join(FIXTURES, "corpus_a", row["wav"]), "rb") as src:
                        self.assertEqual(row["audio_data"], src.read(), row["wav"])

    def test_errors(self):
        path = os.path.join(ROOT, "tests", "data", "parquet", "pages.parquet")
        with equishard.RowReader(path) as r:
            with self.assertRaises(equishard.Error) as e:
                r.read([3, 120])
            self.assertEqual(e.exception.status, "ES_ERR_USAGE")
            self.assertIn("pages.parquet: position 120: out of range, the file has 120 rows",
                          e.exception.message)
            with self.assertRaises(equishard.Error) as e:
                r.read([0], ["utt", "nope"])
            self.assertIn("no column nope", e.exception.message)
            with self.assertRaises(ValueError):
                r.read([-1])
            self.assertEqual(r.read([]), [])
            self.assertEqual(r.read([1], []), [{}])
        with self.assertRaises(ValueError):
            r.read([0])  # closed
        inspire = os.path.join(FIXTURES, "real", "FunAudioLLM__InspireMusic", "examples",
                               "music_generation", "data", "samples", "parquet",
                               "parquet_000000000.tar")
        with self.assertRaises(equishard.Error) as e:
            equishard.read_rows(inspire, [0])
        self.assertEqual(e.exception.status, "ES_ERR_UNSUPPORTED")
        self.assertIn("column semantic_token: a list of lists", e.exception.message)
        self.assertEqual(equishard.read_rows(inspire, [1], ["time_start"])[0]["time_start"],
                         next(f for f in rows_truth() if "Inspire" in f["path"])["rows"][1]["time_start"])
        with self.assertRaises(equishard.Error) as e:
            equishard.RowReader(os.path.join(FIXTURES, "corpus_a", "truth.tsv"))
        self.assertEqual(e.exception.status, "ES_ERR_UNSUPPORTED")

    @unittest.skipIf(ASAN, "timing means nothing under ASan")
    def test_batch_conversion_is_fast(self):
        """32 rows with ~200 KB audio each and their lists, into Python objects."""
        path = os.path.join(FIXTURES, "corpus_a", "parquet", "parquet_000000001.tar")
        with equishard.RowReader(path) as r:
            positions = list(range(16)) * 2
            r.read(positions)  # page cache, list cache
            best = min(self.timed(r, positions) for _ in range(5))
            audio = sum(len(row["audio_data"]) for row in r.read(positions))
        print(f"\n  read of 32 rows ({audio / 32 / 1024:.0f} KiB audio each, all columns): "
              f"{best * 1e3:.2f} ms", end=" ")
        self.assertLess(best, 0.05)

    @staticmethod
    def timed(r, positions):
        t = time.perf_counter()
        r.read(positions)
        return time.perf_counter() - t


def tar_groups(path):
    """WeNet's tar_file_and_group, with tarfile: regular members (and hard links,
    which random-access tarfile reads as their targets) grouped by the name
    before its last '.', consecutive; suffix -> raw bytes."""
    if path.endswith(".zst"):  # tarfile reads no zstd before Python 3.14
        data = subprocess.run(["zstd", "-dc", path], check=True, capture_output=True).stdout
        tf = tarfile.open(fileobj=io.BytesIO(data))
    else:
        tf = tarfile.open(path)
    groups, prev = [], None
    with tf:
        for m in tf:
            if not (m.isreg() or m.islnk()):
                continue
            dot = m.name.rfind(".")
            key, suffix = (m.name[:dot], m.name[dot + 1:]) if dot >= 0 else (m.name, "")
            if key != prev:
                groups.append({"key": key})
                prev = key
            groups[-1][suffix] = tf.extractfile(m).read()
    return groups


class TarTest(unittest.TestCase):
    SHARDS = (sorted(glob.glob(os.path.join(ROOT, "data-samples", "shards*", "*.tar*")))
              + sorted(glob.glob(os.path.join(FIXTURES, "corpus_a", "shards*", "*.tar*")))[::3]
              + [os.path.join(FIXTURES, "real", "wenet-e2e__wenet", "test", "resources", "dataset",
                              "shards", "shards_000000000.tar")])

    def test_utterances_equal_tarfile(self):
        rng = random.Random(9)
        self.assertGreater(len(self.SHARDS), 8)
        for path in self.SHARDS:
            want = tar_groups(path)
            with equishard.RowReader(path) as r:
                self.assertEqual(r.format, "tar")
                self.assertEqual(r.columns, [])
                self.assertEqual(len(r), len(want))
                positions = list(range(len(want)))
                rng.shuffle(positions)
                positions += positions[:2]
                self.assertEqual(r.read(positions), [want[p] for p in positions], path)
                some = sorted(positions[:3])
                self.assertEqual(r.read(some, ["txt"]),
                                 [{"key": want[p]["key"], "txt": want[p]["txt"]} for p in some])

    def test_ordinals_equal_measure(self):
        for path in self.SHARDS:
            with equishard.measure([path], on_error="skip") as t:
                want = [(row.pos, row.key) for row in t]
            got = equishard.read_rows(path, [p for p, _ in want], columns=[])
            self.assertEqual([row["key"] for row in got], [k for _, k in want], path)

    def test_hard_links_read_as_tarfile(self):
        """u2.txt a hard link to u1.txt (and a link to a link), read as tarfile does."""
        import shutil
        import tempfile
        d = tempfile.mkdtemp(prefix="es-rows-links-")
        try:
            path = os.path.join(d, "links.tar")
            with tarfile.open(path, "w", format=tarfile.USTAR_FORMAT) as t:
                def add(name, data=None, link=None):
                    info = tarfile.TarInfo(name)
                    if link:
                        info.type, info.linkname = tarfile.LNKTYPE, link
                        t.addfile(info)
                    else:
                        info.size = len(data)
                        t.addfile(info, io.BytesIO(data))
                add("u1.txt", b"words"), add("u1.wav", b"RIFF-not-really")
                add("u2.txt", link="u1.txt"), add("u2.wav", link="./u1.wav")
                add("u3.txt", link="u2.txt"), add("u3.wav", b"other")
            want = tar_groups(path)
            self.assertEqual([g["txt"] for g in want], [b"words"] * 3)
            with equishard.RowReader(path) as r:
                self.assertEqual(r.read([2, 0, 1]), [want[2], want[0], want[1]])
        finally:
            shutil.rmtree(d)

    def test_damaged_header_is_an_error(self):
        """A damaged tar header mid-shard (libarchive's ARCHIVE_RETRY) makes the
        shard corrupt, as measure says: one line, never rows read
        past it as if nothing was lost."""
        import shutil
        import tempfile
        d = tempfile.mkdtemp(prefix="es-rows-damaged-")
        try:
            path = os.path.join(d, "damaged.tar")
            with tarfile.open(path, "w", format=tarfile.USTAR_FORMAT) as t:
                for i in range(4):
                    for suffix, data in (("txt", b"words %d" % i), ("wav", b"RIFF%d" % i)):
                        info = tarfile.TarInfo("u%d.%s" % (i, suffix))
                        info.size = len(data)
                        t.addfile(info, io.BytesIO(data))
            with tarfile.open(path) as t:
                offset = t.getmembers()[4].offset  # u2.txt's header
            with open(path, "r+b") as f:
                f.seek(offset + 148)
                f.write(b"9999999\0")  # its checksum
            with equishard.RowReader(path) as r:
                with self.assertRaises(equishard.Error) as e:
                    len(r)
                self.assertEqual(e.exception.status, "ES_ERR_FORMAT")
                self.assertIn("damaged.tar: damaged tar header after member u1.wav", e.exception.message)
            with equishard.RowReader(path) as r:
                self.assertEqual(r.read([0], ["txt"]), [{"key": "u0", "txt": b"words 0"}])
                for positions in ([2], [1], [3]):
                    with self.assertRaises(equishard.Error) as e:
                        r.read(positions)
                    self.assertIn("damaged tar header", e.exception.message, positions)
        finally:
            shutil.rmtree(d)

    def test_out_of_range(self):
        path = os.path.join(ROOT, "data-samples", "shards", "shards_000000002.tar")
        with self.assertRaises(equishard.Error) as e:
            equishard.read_rows(path, [1, 4])
        self.assertEqual(e.exception.status, "ES_ERR_USAGE")
        self.assertIn("shards_000000002.tar: position 4: out of range, the file has 4 utterances",
                      e.exception.message)


if __name__ == "__main__":
    unittest.main()
