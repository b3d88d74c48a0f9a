"""A minimal Parquet writer in the standard library (struct only), for test
inputs with planted problems that no fixture holds: one row group, one
UNCOMPRESSED v1 data page per column, PLAIN values, RLE levels, the Thrift
compact protocol for the footer (parquet-format's parquet.thrift field ids).

Columns are CosyVoice's (tools/make_parquet_list.py): flat OPTIONAL strings /
bytes, and OPTIONAL LIST<OPTIONAL DOUBLE> in the 3-level layout pyarrow
writes (`<name>.list.element`). Never written by equishard.

  write(path, rows, columns)  rows: dicts; columns: [(name, kind)] with kind
                              "utf8", "bytes" or "doubles"
"""
import os
import struct

# parquet.thrift enums
BYTE_ARRAY, DOUBLE = 6, 5
OPTIONAL, REPEATED = 1, 2
UTF8, LIST = 0, 3
PLAIN, RLE = 0, 3

# Thrift compact protocol: field types
T_I32, T_I64, T_BINARY, T_LIST, T_STRUCT = 5, 6, 8, 9, 12


def _varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _zigzag(n):
    return (n << 1) ^ (n >> 63)


class _Struct:
    """Fields in increasing id order: (id, type, value); value of T_LIST is
    (elem_type, [values]), of T_STRUCT a _Struct."""

    def __init__(self, *fields):
        self.fields = [f for f in fields if f[2] is not None]

    def encode(self):
        out, last = bytearray(), 0
        for fid, ftype, value in self.fields:
            delta = fid - last
            assert 0 < delta <= 15
            out.append(delta << 4 | ftype)
            out += _value(ftype, value)
            last = fid
        out.append(0)  # stop
        return bytes(out)


def _value(ftype, value):
    if ftype in (T_I32, T_I64):
        return _varint(_zigzag(value))
    if ftype == T_BINARY:
        b = value.encode() if isinstance(value, str) else value
        return _varint(len(b)) + b
    if ftype == T_STRUCT:
        return value.encode()
    if ftype == T_LIST:
        etype, items = value
        head = bytes([len(items) << 4 | etype]) if len(items) < 15 else \
            bytes([0xF0 | etype]) + _varint(len(items))
        return head + b"".join(_value(etype, v) for v in items)
    raise ValueError(ftype)


def _levels(levels, max_level):
    """v1 page levels: 4-byte length, then the RLE/bit-packed hybrid as runs
    of repeated values (each run: varint(count << 1), the value in
    ceil(bit_width / 8) bytes)."""
    width = max_level.bit_length()
    nbytes = (width + 7) // 8
    body, i = bytearray(), 0
    while i < len(levels):
        j = i
        while j < len(levels) and levels[j] == levels[i]:
            j += 1
        body += _varint((j - i) << 1) + levels[i].to_bytes(nbytes, "little")
        i = j
    return struct.pack("<I", len(body)) + bytes(body)


def _column(rows, name, kind):
    """(physical type, path, max_rep, max_def, rep levels, def levels, PLAIN values)."""
    reps, defs, values = [], [], bytearray()
    if kind == "doubles":
        for r in rows:
            v = r.get(name)
            if v is None:
                reps.append(0), defs.append(0)
            elif not v:
                reps.append(0), defs.append(1)
            for j, x in enumerate(v or []):
                reps.append(0 if j == 0 else 1)
                defs.append(2 if x is None else 3)
                if x is not None:
                    values += struct.pack("<d", x)
        return DOUBLE, [name, "list", "element"], 1, 3, reps, defs, bytes(values)
    for r in rows:
        v = r.get(name)
        defs.append(0 if v is None else 1)
        if v is not None:
            b = v.encode("utf-8") if isinstance(v, str) else v
            values += struct.pack("<I", len(b)) + b
    return BYTE_ARRAY, [name], 0, 1, reps, defs, bytes(values)


def _schema(columns):
    out = [_Struct((4, T_BINARY, "schema"), (5, T_I32, len(columns)))]
    for name, kind in columns:
        if kind == "doubles":
            out += [_Struct((3, T_I32, OPTIONAL), (4, T_BINARY, name), (5, T_I32, 1), (6, T_I32, LIST)),
                    _Struct((3, T_I32, REPEATED), (4, T_BINARY, "list"), (5, T_I32, 1)),
                    _Struct((1, T_I32, DOUBLE), (3, T_I32, OPTIONAL), (4, T_BINARY, "element"))]
        else:
            out.append(_Struct((1, T_I32, BYTE_ARRAY), (3, T_I32, OPTIONAL), (4, T_BINARY, name),
                               (6, T_I32, UTF8 if kind == "utf8" else None)))
    return out


def write(path, rows, columns):
    data = bytearray(b"PAR1")
    chunks = []
    for name, kind in columns:
        ptype, cpath, max_rep, max_def, reps, defs, values = _column(rows, name, kind)
        body = (_levels(reps, max_rep) if max_rep else b"") + _levels(defs, max_def) + values
        header = _Struct((1, T_I32, 0), (2, T_I32, len(body)), (3, T_I32, len(body)),
                         (5, T_STRUCT, _Struct((1, T_I32, len(defs)), (2, T_I32, PLAIN),
                                               (3, T_I32, RLE), (4, T_I32, RLE)))).encode()
        offset = len(data)
        data += header + body
        size = len(header) + len(body)
        meta = _Struct((1, T_I32, ptype), (2, T_LIST, (T_I32, [PLAIN, RLE])),
                       (3, T_LIST, (T_BINARY, cpath)), (4, T_I32, 0), (5, T_I64, len(defs)),
                       (6, T_I64, size), (7, T_I64, size), (9, T_I64, offset))
        chunks.append(_Struct((2, T_I64, offset), (3, T_STRUCT, meta)))
    total = len(data) - 4
    group = _Struct((1, T_LIST, (T_STRUCT, chunks)), (2, T_I64, total), (3, T_I64, len(rows)))
    footer = _Struct((1, T_I32, 1), (2, T_LIST, (T_STRUCT, _schema(columns))),
                     (3, T_I64, len(rows)), (4, T_LIST, (T_STRUCT, [group])),
                     (6, T_BINARY, "tests/python/plain_parquet.py")).encode()
    data += footer + struct.pack("<I", len(footer)) + b"PAR1"
    with open(path + ".part", "wb") as f:
        f.write(data)
    os.replace(path + ".part", path)
