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

from . import _args
from ._ffi import TokenizerInfo, lib
from .core import Error, _Context, _Handle, _str


class Tokenizer(_Handle):
    """Loads PATH (a folder with vocab.json + merges.txt [+ tokenizer_config.json],
    or tokenizer.json) with `specials` "cosyvoice2" (default), "cosyvoice3" or
    "none"; or, given `symbol_table` (WeNet's units.txt) instead of PATH, WeNet's
    CharTokenizer with its `non_lang_syms` file and `split_with_space`. `kind`
    says which: "qwen2_bpe", "wenet_char" or "wenet_char_split_with_space".
    Paths are str, bytes or os.PathLike. One instance may be shared by threads:
    its calls take turns (a lock per instance); close() (or `with`) frees it,
    after a call in progress on another thread returns.
    Text that is not valid UTF-8 (bytes) raises Error (ES_ERR_FORMAT).
    A BPE tokenizer's built tables are cached (EQUISHARD_CACHE_DIR, default
    ~/.cache/equishard; "off" disables), so loading it again is a read."""
    _free = "es_tokenizer_free"

    def __init__(self, path=None, specials="cosyvoice2", *, symbol_table=None,
                 non_lang_syms=None, split_with_space=False):
        if (path is None) == (symbol_table is None):
            raise TypeError("Tokenizer: give PATH (CosyVoice's Qwen2 tokenizer) or "
                            "symbol_table= (WeNet's CharTokenizer), one of them")
        ptr = c_void_p()
        with _Context() as ctx:
            if path is not None:
                rc = lib().es_tokenizer_load(ctx.ptr, _args.path("Tokenizer: path", path),
                                             _args.text("Tokenizer: specials", specials),
                                             byref(ptr))
            else:
                table = _args.path("Tokenizer: symbol_table", symbol_table)
                nls = _args.path("Tokenizer: non_lang_syms", non_lang_syms, optional=True)
                split = _args.flag("Tokenizer: split_with_space", split_with_space)
                rc = lib().es_tokenizer_load_symbols(ctx.ptr, table, nls, split, byref(ptr))
            ctx.check(rc)
        super().__init__(ptr.value)
        info = TokenizerInfo()
        lib().es_tokenizer_get_info(self._ptr, byref(info))
        self.kind = _str(info.kind)
        self.path, self.files, self.specials = _str(info.path), _str(info.files), _str(info.specials)
        self.vocab_size, self.digest = info.vocab_size, f"{info.digest:016x}"

    @staticmethod
    def _text(text):
        """str (UTF-8; lone surrogates kept, for the library to refuse) or UTF-8
        bytes-like; anything else is refused: bytes(5) would be five NUL bytes
        and bytes([104, 105]) "hi"."""
        if isinstance(text, str):
            return text.encode("utf-8", "surrogatepass")
        if isinstance(text, (bytes, bytearray, memoryview)):
            return bytes(text)
        raise TypeError(f"Tokenizer: text: expected str or bytes, got {type(text).__name__}")

    def encode(self, text):
        """The ids of `text` (str, or UTF-8 bytes), as a list of int."""
        data = self._text(text)
        ids = ctypes.POINTER(c_uint32)()
        n = c_size_t()
        with self._use() as p, _Context() as ctx:
            ctx.check(lib().es_tokenizer_encode(ctx.ptr, p, data, len(data), byref(ids), byref(n)))
            return ids[:n.value]  # owned by t until its next call: copied under the lock

    def count(self, text):
        """len(self.encode(text)), without building the list."""
        data = self._text(text)
        n = c_size_t()
        with self._use() as p, _Context() as ctx:
            ctx.check(lib().es_tokenizer_encode(ctx.ptr, p, data, len(data), None, byref(n)))
        return n.value

    __call__ = encode

    def __repr__(self):
        if self.kind != "qwen2_bpe":
            return f"Tokenizer(symbol_table={self.path!r}, kind={self.kind!r}, vocab_size={self.vocab_size})"
        return f"Tokenizer({self.path!r}, specials={self.specials!r}, vocab_size={self.vocab_size})"


__all__ = ["Tokenizer", "Error"]
