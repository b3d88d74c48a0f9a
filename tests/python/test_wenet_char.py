"""equishard.Tokenizer(symbol_table=...) against WeNet's own CharTokenizer
(../shared/third_party/wenet/wenet/text/char_tokenizer.py, imported in place):
the same ids for every transcript in the fixtures (truth.jsonl's texts) and
stress texts, in every mode (non_lang_syms or not, split_with_space or not, a
table with and without <unk>). Skipped when the third-party copy is absent.

Shim, and why: the copy has no wenet/utils/file_utils.py (which
char_tokenizer.py imports for read_symbol_table / read_non_lang_symbols), so
this test stands in that module, written from upstream's file at the copy's
UPSTREAM_COMMIT (015469960db7): read_lists, read_non_lang_symbols (with its
format check) and read_symbol_table. Nothing else is stubbed; char_tokenizer.py
and base_tokenizer.py run as published."""
import importlib
import json
import os
import re
import sys
import tempfile
import types
import unittest

import equishard

ROOT = os.path.join(os.environ.get("ES_SOURCE_ROOT", "."), "..", "shared")
WENET = os.path.join(ROOT, "third_party", "wenet")
TRUTH = os.path.join(ROOT, "fixtures", "tokenizers", "truth.jsonl")
CHAR_TOKENIZER = os.path.join(WENET, "wenet", "text", "char_tokenizer.py")


def _file_utils_shim():
    """wenet/utils/file_utils.py at 015469960db7 (the three functions CharTokenizer uses)."""
    m = types.ModuleType("wenet.utils.file_utils")

    def read_lists(list_file):
        lists = []
        with open(list_file, 'r', encoding='utf8') as fin:
            for line in fin:
                lists.append(line.strip())
        return lists

    def read_non_lang_symbols(non_lang_sym_path):
        if non_lang_sym_path is None:
            return []
        syms = read_lists(non_lang_sym_path)
        pattern = re.compile(r"(\[[^\[\]]+\]|<[^<>]+>|{[^{}]+})")
        for sym in syms:
            if pattern.fullmatch(sym) is None:
                raise ValueError("BadSymbolFormat: %s" % sym)
        return syms

    def read_symbol_table(symbol_table_file):
        symbol_table = {}
        with open(symbol_table_file, 'r', encoding='utf8') as fin:
            for line in fin:
                arr = line.strip().split()
                assert len(arr) == 2
                symbol_table[arr[0]] = int(arr[1])
        return symbol_table

    m.read_lists, m.read_non_lang_symbols, m.read_symbol_table = (
        read_lists, read_non_lang_symbols, read_symbol_table)
    return m


def _wenet_char_tokenizer():
    sys.modules.setdefault("wenet.utils.file_utils", _file_utils_shim())
    if WENET not in sys.path:
        sys.path.insert(0, WENET)
    return importlib.import_module("wenet.text.char_tokenizer").CharTokenizer


STRESS = [
    "", " ", "   \t ", "a", "A", "hello world", "HELLO  WORLD", " leading and trailing ",
    "你好 世界", "你好世界ABC abc", "[NOISE] hello [noise] <unk> {BRK}",
    "[LAUGHTER]你好[NOISE]", "<SIL><SIL> a <UNK>", "{brk}x{BRK}", "[]", "[[NOISE]]", "<a<b>c>",
    "{x}{y}", "[NO ISE]", "a[NOISE]b", "[NOISE", "NOISE]", "straße ﬁne ŉ ΐ", "ß", "ǅǈǋ",
    "Ångström İstanbul ﬃ", "\u00a0nbsp\u00a0", "\u3000全角\u3000", "tab\tinside", "new\nline",
    "cr\rlf\r\n", "\u2028sep\u2029", "\x1c\x1dx\x1e\x1f", "\u0085next", "zero\u200bwidth",
    "\ufeffbom", "e\u0301 combining", "emoji 👍🏽 family 👨‍👩‍👧", "x" * 300, "你" * 250,
    "a b  c   d", "▁ underscore", "<unk>", "HELLO", "hello", "WORLD [NOISE]", "[NOISE]",
    "٣ arabic ٣", "ǰ ẖ ﬓ ᾳ", "mixed 中文 English ゆ 한국어 עברית",
]

# every code point whose str.upper() differs or that Python strips, in chunks
_CASED = [chr(c) for c in range(0x20, 0x30000) if not 0xD800 <= c < 0xE000
          and (chr(c).upper() != chr(c) or chr(c).isspace())]


class WenetCharTokenizerTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.path.exists(CHAR_TOKENIZER):
            raise unittest.SkipTest("no ../shared/third_party/wenet")
        cls.CharTokenizer = _wenet_char_tokenizer()
        cls.texts = list(STRESS)
        if os.path.exists(TRUTH):
            with open(TRUTH, encoding="utf-8") as f:
                cls.texts += [json.loads(line)["text"] for line in f]
        cls.texts += ["".join(_CASED[i:i + 64]) for i in range(0, len(_CASED), 64)]
        cls.texts += [" ".join(_CASED[i:i + 16]) + " [NOISE]" for i in range(0, len(_CASED), 512)]
        cls.tmp = tempfile.TemporaryDirectory()
        # units.txt as WeNet's tools write it: <blank>, <unk>, characters, <sos/eos>;
        # the characters of half the texts (the rest are unknown), upper-case Latin,
        # '▁', the non-linguistic symbols, a few words (split_with_space)
        chars = sorted({c for t in cls.texts[::2] for c in t if not c.isspace()})
        symbols = ["<blank>", "<unk>"] + [c for c in chars if c not in ("<unk>",)]
        symbols += [chr(c) for c in range(ord("A"), ord("Z") + 1)] + ["▁", "[NOISE]", "<SIL>",
                                                                        "{BRK}", "HELLO", "WORLD",
                                                                        "hello", "你好"]
        seen, table = set(), []
        for s in symbols:
            if s not in seen:
                seen.add(s)
                table.append(s)
        table.append("<sos/eos>")
        cls.units = cls._write("units.txt", "".join(f"{s} {i}\n" for i, s in enumerate(table)))
        cls.units_no_unk = cls._write("units_no_unk.txt", "".join(
            f"{s} {i}\n" for i, s in enumerate(table) if s != "<unk>"))
        cls.nls = cls._write("non_lang_syms.txt", "[NOISE]\n<SIL>\n{BRK}\n[LAUGHTER]\n<UNK>\n")

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    @classmethod
    def _write(cls, name, text, mode="w"):
        path = os.path.join(cls.tmp.name, name)
        with open(path, mode, **({} if "b" in mode else {"encoding": "utf-8"})) as f:
            f.write(text)
        return path

    def check(self, units, nls, split):
        theirs = self.CharTokenizer(units, nls, split_with_space=split)
        with equishard.Tokenizer(symbol_table=units, non_lang_syms=nls,
                                 split_with_space=split) as ours:
            self.assertEqual(ours.vocab_size, theirs.vocab_size())
            bad = [t for t in self.texts if ours.encode(t) != theirs.tokenize(t)[1]]
            self.assertEqual(bad[:3], [], (units, nls, split, len(bad)))
            self.assertEqual([ours.count(t) for t in self.texts[:60]],
                             [len(theirs.tokenize(t)[1]) for t in self.texts[:60]])
        return len(self.texts)

    def test_every_mode_every_text(self):
        n = 0
        for units in (self.units, self.units_no_unk):
            for nls in (None, self.nls):
                for split in (False, True):
                    with self.subTest(units=os.path.basename(units), nls=nls, split=split):
                        n += self.check(units, nls, split)
        self.assertGreater(len(self.texts), 700 if os.path.exists(TRUTH) else 50)

    def test_exact_values(self):
        # hand-checked against char_tokenizer.py's rules, independent of the import
        u = self._write("small.txt", "<blank> 0\n<unk> 1\n▁ 2\nA 3\nB 4\n[NOISE] 5\nSS 6\n")
        nls = self._write("small_nls.txt", "[NOISE]\n")
        with equishard.Tokenizer(symbol_table=u) as t:
            self.assertEqual(t.encode(" A b "), [3, 2, 1])      # strip; ' ' -> ▁; 'b' unknown
            self.assertEqual(t.encode("[NOISE]"), [1, 1, 1, 1, 1, 1, 1])
            self.assertEqual(t.kind, "wenet_char")
            self.assertEqual((t.vocab_size, t.files, t.specials), (7, "small.txt", "none"))
        with equishard.Tokenizer(symbol_table=u, non_lang_syms=nls) as t:
            self.assertEqual(t.encode("a [noise] b"), [3, 5, 4])  # upper-cased, then split
            self.assertEqual(t.encode("ß"), [1, 1])               # 'ß'.upper() == 'SS': two chars
            self.assertEqual(t.files, "small.txt+small_nls.txt")
        with equishard.Tokenizer(symbol_table=u, split_with_space=True) as t:
            self.assertEqual(t.encode("A  B"), [3, 1, 4])        # the empty word is <unk>
            self.assertEqual(t.encode(""), [1])                   # ''.split(" ") == ['']
            self.assertEqual(t.kind, "wenet_char_split_with_space")

    def test_every_code_point(self):
        # str.strip()'s whitespace and str.upper() (with non_lang_syms) for each code
        # point up to U+2FFFF, against this Python's own str methods
        cps = [chr(c) for c in range(0x30000) if not 0xD800 <= c < 0xE000]
        chars = [c for c in cps if not c.isspace()]
        ids = {c: i for i, c in enumerate(chars, 2)}
        units = self._write("all.txt", "<unk> 1\n" + "".join(f"{c} {ids[c]}\n" for c in chars))
        empty = self._write("empty_nls.txt", "")
        with equishard.Tokenizer(symbol_table=units) as t:
            spaces = [hex(ord(c)) for c in cps if (t.encode(c + "A") == [ids["A"]]) != c.isspace()]
            self.assertEqual(spaces, [])
        with equishard.Tokenizer(symbol_table=units, non_lang_syms=empty) as t:
            upper = [hex(ord(c)) for c in chars if c not in "[]<>{}"
                     and t.encode(c) != [ids.get(u, 1) for u in c.upper()]]
            self.assertEqual(upper, [])

    def test_measure_and_filter(self):
        # the binding end to end: text_tokens of corpus A's raw list are WeNet's
        # len(label); the wenet filter counts them, so no note; without counts
        # the CosyVoice filter says so
        corpus = os.path.join(os.environ.get("ES_FIXTURES", "tests/fixtures"), "corpus_a")
        raw = os.path.join(corpus, "raw.list")
        theirs = self.CharTokenizer(self.units, None, split_with_space=True)
        with open(raw, encoding="utf-8") as f:
            want = {o["key"]: len(theirs.tokenize(o["txt"])[1]) for o in map(json.loads, f)}
        with equishard.Tokenizer(symbol_table=self.units, split_with_space=True) as tok:
            table = equishard.measure(raw, root=corpus, tokenizer=tok)
        self.assertEqual({r.key: r.text_tokens for r in table}, want)
        sim = equishard.simulate(table, loader="wenet", world_size=2)
        self.assertEqual(sim.token_note, "")
        plain = equishard.measure(raw, root=corpus)
        plan = equishard.plan(plain, world_size=2)
        self.assertTrue(plan.token_note.startswith("token filters not applied to 60 utterance(s)"),
                        plan.token_note)
        self.assertEqual(equishard.simulate(plain, world_size=2).token_note, plan.token_note)

    def test_refusals(self):
        for name, text, want in (
                ("three.txt", "a 1 2\n", "line 1: expected \"SYMBOL ID\""),
                ("blank.txt", "a 1\n\nb 2\n", "line 2: expected \"SYMBOL ID\""),
                ("neg.txt", "a 1\nb -2\n", "line 2: id is not an integer"),
                ("empty.txt", "", "no symbols")):
            with self.subTest(name=name), self.assertRaises(equishard.Error) as e:
                equishard.Tokenizer(symbol_table=self._write(name, text))
            self.assertIn(name, e.exception.message)
            self.assertIn(want, e.exception.message)
            self.assertEqual(e.exception.status, "ES_ERR_FORMAT")
        bad = self._write("latin1.txt", b"a 1\n\xe9 2\n", "wb")
        with self.assertRaises(equishard.Error) as e:
            equishard.Tokenizer(symbol_table=bad)
        self.assertIn("latin1.txt: line 2: byte 4: not valid UTF-8", e.exception.message)
        with self.assertRaises(equishard.Error) as e:
            equishard.Tokenizer(symbol_table=self.units,
                                non_lang_syms=self._write("nls_bad.txt", "[NOISE]\nNOISE\n"))
        self.assertIn("nls_bad.txt: line 2: a non-linguistic symbol is {xxx}, <xxx> or [xxx]",
                      e.exception.message)
        with self.assertRaises(equishard.Error) as e:
            equishard.Tokenizer(symbol_table=self.units).encode(b"a\xffb")
        self.assertIn("byte 1: not valid UTF-8", e.exception.message)
        with self.assertRaises(TypeError):
            equishard.Tokenizer()


if __name__ == "__main__":
    unittest.main()
