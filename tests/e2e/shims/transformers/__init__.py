"""Stand-in (README.md): transformers is not installable here.

CosyVoice 2's tokenizer (cosyvoice.tokenizer.tokenizer.get_qwen_tokenizer,
upstream's, unmodified) calls AutoTokenizer.from_pretrained(token_path),
.add_special_tokens({...}) and tokenizer([text], return_tensors="pt")["input_ids"].
Here those calls are answered by equishard.Tokenizer on the same folder
(vocab.json + merges.txt): the Qwen2 byte-level BPE whose ids
tests/cli/test_cli_tokenize.sh checks equal to Hugging Face's
(../shared/fixtures/tokenizers/truth.jsonl), with the special tokens the recipe
adds: equishard's "cosyvoice2" set, or "cosyvoice3" when the added list is
CosyVoice 3's (it has <|endofsystem|>). So the trainer's text tokens are the
ids `equishard measure --recipe` counted, as a real run's would be.
"""
import torch

import equishard


class _Qwen2Tokenizer:
    """What CosyVoice2Tokenizer / CosyVoice3Tokenizer call of Qwen2's tokenizer."""

    def __init__(self, path):
        self.path, self.specials, self._tok = path, "none", None

    def add_special_tokens(self, special_tokens):
        extra = special_tokens.get("additional_special_tokens", [])
        self.specials = "cosyvoice3" if "<|endofsystem|>" in extra else "cosyvoice2"
        self._tok = None
        return len(extra)

    def __call__(self, texts, return_tensors=None):
        if isinstance(texts, str):
            texts = [texts]
        if len(texts) != 1 or return_tensors != "pt":
            raise NotImplementedError("the stand-in tokenizes one text to a tensor, as CosyVoice does")
        if self._tok is None:  # made where it is first used: in the DataLoader worker
            self._tok = equishard.Tokenizer(self.path, specials=self.specials)
        return {"input_ids": torch.tensor([self._tok.encode(texts[0])], dtype=torch.int64)}


class AutoTokenizer:
    @staticmethod
    def from_pretrained(path, **kwargs):
        return _Qwen2Tokenizer(path)
