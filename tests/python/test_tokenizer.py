"""equishard.Tokenizer against ../shared/fixtures/tokenizers/truth.jsonl (Hugging
Face's ids): every record with cosyvoice2 and cosyvoice3; count(); what it
refuses. Skipped without the fixtures."""
import json
import os
import unittest

import equishard

TOK = os.path.join(os.environ.get("ES_SOURCE_ROOT", "."), "..", "shared", "fixtures", "tokenizers")


@unittest.skipUnless(os.path.exists(os.path.join(TOK, "truth.jsonl")), "no tokenizer fixtures")
class TokenizerTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(os.path.join(TOK, "truth.jsonl"), encoding="utf-8") as f:
            cls.truth = [json.loads(line) for line in f]

    def test_every_truth_record(self):
        for specials, field in (("cosyvoice2", "ids"), ("cosyvoice3", "ids_cv3")):
            with equishard.Tokenizer(os.path.join(TOK, "qwen2"), specials=specials) as tok:
                bad = [r["id"] for r in self.truth if tok.encode(r["text"]) != r[field]]
                self.assertEqual(bad, [], specials)
                self.assertEqual([tok.count(r["text"]) for r in self.truth[:50]],
                                 [len(r[field]) for r in self.truth[:50]])

    def test_info_bytes_and_errors(self):
        tok = equishard.Tokenizer(os.path.join(TOK, "qwen2"))
        self.assertEqual((tok.vocab_size, tok.specials), (151663, "cosyvoice2"))
        self.assertEqual(tok.encode(b"Yes."), [9454, 13])
        self.assertEqual(tok("[breath]"), [151647])
        with self.assertRaises(equishard.Error) as e:
            tok.encode(b"ab\xffc")
        self.assertEqual(e.exception.status, "ES_ERR_FORMAT")
        self.assertIn("byte 2", e.exception.message)
        tok.close()
        with self.assertRaises(ValueError):
            tok.count("x")
        with self.assertRaises(equishard.Error) as e:
            equishard.Tokenizer(TOK)  # the folder above: no vocab.json
        self.assertIn("not a tokenizer folder", e.exception.message)
        with self.assertRaises(equishard.Error):
            equishard.Tokenizer(os.path.join(TOK, "qwen2"), specials="other")


if __name__ == "__main__":
    unittest.main()
