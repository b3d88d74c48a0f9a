"""equishard.Tokenizer: the recipe's text tokenizer (es_tokenizer_*), exact to
Hugging Face's ids for CosyVoice 2/3 (Qwen2's byte-level BPE plus the specials
CosyVoice2Tokenizer / CosyVoice3Tokenizer add).

    tok = equishard.Tokenizer("pretrained_models/CosyVoice2-0.5B/CosyVoice-BlankEN")
    tok.encode("Hello world")   # [9707, 1879], as tokenizer([text])["input_ids"][0]
    tok.count("Hello world")    # 2, what CosyVoice's filter compares with its limits

WeNet's CharTokenizer (its `label`, what --loader wenet's filter counts):

    tok = equishard.Tokenizer(symbol_table="data/dict/units.txt",
                              non_lang_syms=None, split_with_space=False)
"""
import ctypes
from ctypes import byref, c_size_t, c_uint32, c_void_p

from ._ffi import TokenizerInfo, lib
from .core import Error, _Context, _bytes, _str


class Tokenizer:
    """Loads PATH (a folder with vocab.json + merges.txt [+ tokenizer_config.json],
    or tokenizer.json) with `specials` "cosyvoice2" (default), "cosyvoice3" or
    "none"; or, given `symbol_table` (WeNet's units.txt) instead of PATH, WeNet's
    CharTokenizer with its `non_lang_syms` file and `split_with_space`. `kind`
    says which: "qwen2_bpe", "wenet_char" or "wenet_char_split_with_space".
    One instance is used by one thread at a time; close() (or `with`) frees it.
    Text that is not valid UTF-8 (bytes) raises Error (ES_ERR_FORMAT).
    A BPE tokenizer's built tables are cached (EQUISHARD_CACHE_DIR, default
    ~/.cache/equishard; "off" disables), so loading it again is a read."""

    def __init__(self, path=None, specials="cosyvoice2", *, symbol_table=None,
                 non_lang_syms=None, split_with_space=False):
        self._ptr = None
        if (path is None) == (symbol_table is None):
            raise TypeError("Tokenizer: give PATH (CosyVoice's Qwen2 tokenizer) or "
                            "symbol_table= (WeNet's CharTokenizer), one of them")
        ptr = c_void_p()
        with _Context() as ctx:
            if path is not None:
                rc = lib().es_tokenizer_load(ctx.ptr, _bytes(str(path)), _bytes(specials),
                                             byref(ptr))
            else:
                nls = None if non_lang_syms is None else _bytes(str(non_lang_syms))
                rc = lib().es_tokenizer_load_symbols(ctx.ptr, _bytes(str(symbol_table)), nls,
                                                     1 if split_with_space else 0, byref(ptr))
            ctx.check(rc)
        self._ptr = ptr
        self.kind = _str(lib().es_tokenizer_kind(self._ptr))
        info = TokenizerInfo()
        lib().es_tokenizer_get_info(self._ptr, byref(info))
        self.path, self.files, self.specials = _str(info.path), _str(info.files), _str(info.specials)
        self.vocab_size, self.digest = info.vocab_size, f"{info.digest:016x}"

    @staticmethod
    def _text(text):
        return text.encode("utf-8", "surrogatepass") if isinstance(text, str) else bytes(text)

    def encode(self, text):
        """The ids of `text` (str, or UTF-8 bytes), as a list of int."""
        if self._ptr is None:
            raise ValueError("Tokenizer is closed")
        data = self._text(text)
        ids = ctypes.POINTER(c_uint32)()
        n = c_size_t()
        with _Context() as ctx:
            ctx.check(lib().es_tokenizer_encode(ctx.ptr, self._ptr, data, len(data), byref(ids),
                                                byref(n)))
            return ids[:n.value]

    def count(self, text):
        """len(self.encode(text)), without building the list."""
        if self._ptr is None:
            raise ValueError("Tokenizer is closed")
        data = self._text(text)
        n = c_size_t()
        with _Context() as ctx:
            ctx.check(lib().es_tokenizer_count(ctx.ptr, self._ptr, data, len(data), byref(n)))
        return n.value

    __call__ = encode

    def close(self):
        if self._ptr is not None:
            lib().es_tokenizer_free(self._ptr)
            self._ptr = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()

    def __repr__(self):
        if self.kind != "qwen2_bpe":
            return f"Tokenizer(symbol_table={self.path!r}, kind={self.kind!r}, vocab_size={self.vocab_size})"
        return f"Tokenizer({self.path!r}, specials={self.specials!r}, vocab_size={self.vocab_size})"


__all__ = ["Tokenizer", "Error"]
