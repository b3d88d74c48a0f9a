"""Fetching planned utterances by position: es_row_reader (equishard.h).

A batch-mode loader gets [shard, pos] items (the cost table's columns) and
fetches exactly those utterances:

    with equishard.RowReader("parquet_000000000.tar") as r:
        rows = r.read([5, 0, 5], columns=["utt", "audio_data", "speech_token"])

Parquet (CosyVoice): one dict per position, column name -> value: bytes
(binary), str (STRING/UTF8), int, float, bool, list (one level; a null element
is None), None (null). Tar (WeNet / WebDataset): {"key": str, suffix: bytes, ...}
with every member's raw bytes under its suffix ("wav", "txt", "spk", ...).
"""
import array
import ctypes
import os
from ctypes import byref, c_uint64, c_void_p

from . import _args, _ffi
from ._ffi import lib
from .core import _Context, _Handle, _listed

# packed list elements -> array typecodes (sizes checked below)
_ARRAY = {_ffi.VALUE_BOOL: "B", _ffi.VALUE_INT32: "i", _ffi.VALUE_UINT32: "I",
          _ffi.VALUE_INT64: "q", _ffi.VALUE_UINT64: "Q", _ffi.VALUE_FLOAT: "f",
          _ffi.VALUE_DOUBLE: "d"}
_WIDTH = {_ffi.VALUE_BOOL: 1, _ffi.VALUE_INT32: 4, _ffi.VALUE_UINT32: 4, _ffi.VALUE_INT64: 8,
          _ffi.VALUE_UINT64: 8, _ffi.VALUE_FLOAT: 4, _ffi.VALUE_DOUBLE: 8}
assert all(array.array(c).itemsize == _WIDTH[t] for t, c in _ARRAY.items())
_INTS = (_ffi.VALUE_INT32, _ffi.VALUE_INT64, _ffi.VALUE_UINT32)
_string_at = ctypes.string_at


def _decode(b):
    return b.decode("utf-8", "surrogateescape")


def _list(v):
    n, t = v.len, v.elem_type
    if n == 0:
        return []
    code = _ARRAY.get(t)
    if code:  # one copy, one conversion: no per-element ctypes access
        a = array.array(code)
        a.frombytes(_string_at(v.data, n * a.itemsize))
        out = a.tolist()
        if t == _ffi.VALUE_BOOL:
            out = [x != 0 for x in out]
    else:  # BYTES / STRING elements are es_values
        out = [_value(e) for e in (_ffi.Value * n).from_address(v.data)]
    if v.valid:
        out = [x if ok else None for x, ok in zip(out, _string_at(v.valid, n))]
    return out


def _value(v):
    t = v.type
    if t == _ffi.VALUE_BYTES:
        return _string_at(v.data, v.len)
    if t == _ffi.VALUE_STRING:
        return _decode(_string_at(v.data, v.len))
    if t in _INTS:
        return v.i
    if t == _ffi.VALUE_FLOAT or t == _ffi.VALUE_DOUBLE:
        return v.d
    if t == _ffi.VALUE_LIST:
        return _list(v)
    if t == _ffi.VALUE_BOOL:
        return v.i != 0
    if t == _ffi.VALUE_UINT64:
        return v.i & 0xFFFFFFFFFFFFFFFF
    return None  # VALUE_NULL


class RowReader(_Handle):
    """An open parquet file or tar shard (told apart by content) to fetch rows
    from; holds the file (and, for parquet, decoded list columns) between reads.
    A context manager; close() frees it. One reader may be shared by threads:
    its calls take turns (a lock per reader), and close() waits for a read in
    progress; a reader per thread (or DataLoader worker) reads in parallel."""
    _free = "es_row_reader_free"

    def __init__(self, path):
        b = _args.path("RowReader: path", path)
        self.path = os.fsdecode(b)
        out = c_void_p()
        with _Context() as ctx:
            ctx.check(lib().es_row_reader_open(ctx.ptr, b, byref(out)))
        super().__init__(out.value)
        self._names = {}  # field name bytes -> str: decoded once per reader

    @property
    def format(self):
        """"parquet" or "tar"."""
        with self._use() as p:
            return lib().es_row_reader_format(p).decode()

    @property
    def columns(self):
        """Parquet: the top-level column names in schema order; tar: []."""
        L = lib()
        with self._use() as p:
            return [_decode(n) for n in _listed(lambda i: L.es_row_reader_column_name(p, i), None)]

    @property
    def num_rows(self):
        """Rows (parquet, from the footer) or utterances (tar: one pass over the
        member headers, remembered)."""
        n = c_uint64()
        with self._use() as p, _Context() as ctx:
            ctx.check(lib().es_row_reader_count(ctx.ptr, p, byref(n)))
        return n.value

    def __len__(self):
        return self.num_rows

    def read(self, positions, columns=None):
        """The rows at `positions` (ints from 0), one dict each, in the order
        given, duplicates included. `columns`: the parquet columns wanted, in
        that order (an unknown name raises Error ES_ERR_USAGE), or the tar member
        suffixes wanted ("key" always comes); None: all. A position past the
        end raises Error (ES_ERR_USAGE, naming it); a negative one or one that
        is not an int, ValueError / TypeError."""
        if isinstance(positions, (str, bytes)):
            raise TypeError(f"RowReader.read: positions: expected ints, got {type(positions).__name__}")
        if not isinstance(positions, (list, tuple, range, array.array)):
            positions = list(positions)  # (read twice below when one is bad)
        try:
            pos = array.array("Q", positions)
        except (TypeError, OverflowError):  # say which position, and why
            pos = array.array("Q", [_args.integer(f"RowReader.read: positions[{i}]", x, _args.UINT64)
                                    for i, x in enumerate(positions)])
        n = len(pos)
        arr = (c_uint64 * max(n, 1)).from_buffer(pos) if n else (c_uint64 * 1)()
        cols, n_cols = None, 0
        if columns is not None:
            names = _args.texts("RowReader.read: columns", columns)
            cols, n_cols = (ctypes.c_char_p * max(len(names), 1))(*names), len(names)
        rows = ctypes.POINTER(_ffi.Row)()
        with self._use() as p, _Context() as ctx:
            ctx.check(lib().es_row_reader_read(ctx.ptr, p, arr, n, cols, n_cols, byref(rows)))
            # the rows belong to the reader until its next read: converted under the lock
            return [self._row(rows[i]) for i in range(n)]

    def _row(self, row):
        names = self._names
        out = {}
        for f in row.fields[:row.n_fields]:
            raw = f.name
            name = names.get(raw)
            if name is None:
                name = names[raw] = _decode(raw)
            out[name] = _value(f.value)
        return out


def read_rows(path, positions, columns=None):
    """RowReader(path).read(positions, columns), the file closed afterwards."""
    with RowReader(path) as r:
        return r.read(positions, columns)


def parquet_num_rows(path):
    """Rows of a parquet file, from its footer (a tar shard's utterances, by a
    pass over its member headers)."""
    with RowReader(path) as r:
        return r.num_rows
