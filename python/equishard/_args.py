"""The one gate between Python values and the C fields and arguments they become.

ctypes converts silently: an int stored in a `char *` field is taken for an
address (a segfault when the library reads it), 2**32 + 2 stored in a uint32 is
2, -1 in a uint64 is 2**64 - 1, NaN passes every `<` test, and bytes(5) is five
NUL bytes. Every public function of the binding therefore turns each argument
into its C value here, first, and raises TypeError (wrong kind of value) or
ValueError (right kind, out of the C type's range, not finite, or not a name
the library knows), naming the parameter, before any C call is made.

Settings structures (`es_*_settings`, `es_cost_model`, ...) are converted field
by field from the ctypes type the field is declared with in _ffi.py, so a field
added there is checked without a line here.
"""
import ctypes
import math
import operator
import os

_INT_RANGES = {}
for _t, _bits, _signed in ((ctypes.c_int, 8 * ctypes.sizeof(ctypes.c_int), True),
                           (ctypes.c_int32, 32, True), (ctypes.c_int64, 64, True),
                           (ctypes.c_uint, 8 * ctypes.sizeof(ctypes.c_uint), False),
                           (ctypes.c_uint32, 32, False), (ctypes.c_uint64, 64, False),
                           (ctypes.c_size_t, 8 * ctypes.sizeof(ctypes.c_size_t), False)):
    _INT_RANGES[_t] = ((-(1 << (_bits - 1)), (1 << (_bits - 1)) - 1) if _signed
                       else (0, (1 << _bits) - 1))
del _t, _bits, _signed

UINT32 = _INT_RANGES[ctypes.c_uint32]
UINT64 = _INT_RANGES[ctypes.c_uint64]
INT = _INT_RANGES[ctypes.c_int]
INT32 = _INT_RANGES[ctypes.c_int32]
INT64 = _INT_RANGES[ctypes.c_int64]
SIZE = _INT_RANGES[ctypes.c_size_t]


def _kind(v):
    return type(v).__name__


def integer(name, v, bounds=SIZE, allow_bool=False):
    """v as an int within bounds (lo, hi): ints and objects with __index__
    (numpy integers); bool only where the C field is a flag."""
    if isinstance(v, bool) and not allow_bool:
        raise TypeError(f"{name}: expected an integer, got bool")
    try:
        i = operator.index(v)
    except TypeError:
        raise TypeError(f"{name}: expected an integer, got {_kind(v)}") from None
    lo, hi = bounds
    if not lo <= i <= hi:
        raise ValueError(f"{name}: {i} is out of range ({lo}..{hi})")
    return i


def flag(name, v):
    """A C int used as a boolean: bool or 0/1."""
    return 1 if integer(name, v, (0, 1), allow_bool=True) else 0


def number(name, v):
    """v as a finite float (int and float accepted; NaN and infinities refused:
    the library's thresholds and weights compare with `<`, which NaN passes)."""
    if isinstance(v, bool):
        raise TypeError(f"{name}: expected a number, got bool")
    if isinstance(v, (str, bytes)) or not hasattr(v, "__float__"):
        raise TypeError(f"{name}: expected a number, got {_kind(v)}")
    try:
        f = float(v)
    except OverflowError:  # an int beyond the double range
        raise ValueError(f"{name}: {v} is out of range for a double") from None
    if not math.isfinite(f):
        raise ValueError(f"{name}: {f} is not a finite number")
    return f


def path(name, v, optional=False):
    """A file name as the C library takes it: str (encoded as os.fsencode
    does, so undecodable names round-trip), bytes, or os.PathLike of either."""
    if v is None:
        if optional:
            return None
        raise TypeError(f"{name}: expected a path (str, bytes or os.PathLike), got None")
    if not isinstance(v, (str, bytes, os.PathLike)):
        raise TypeError(f"{name}: expected a path (str, bytes or os.PathLike), got {_kind(v)}")
    try:
        b = os.fsencode(v)
    except TypeError:  # a PathLike whose __fspath__ returns something else
        raise TypeError(f"{name}: {_kind(v)}.__fspath__() returned neither str nor bytes") from None
    return _no_nul(name, b)


def text(name, v, optional=False):
    """A name or setting string (str or bytes; str as UTF-8) for a char * field."""
    if v is None and optional:
        return None
    if isinstance(v, str):
        return _no_nul(name, v.encode("utf-8", "surrogateescape"))
    if isinstance(v, bytes):
        return _no_nul(name, v)
    raise TypeError(f"{name}: expected str or bytes, got {_kind(v)}")


def _no_nul(name, b):
    if b"\0" in b:
        raise ValueError(f"{name}: embedded NUL byte in {b!r}")
    return b


def paths(name, items):
    """A path or an iterable of paths (read once) -> list of bytes."""
    if isinstance(items, (str, bytes, os.PathLike)):
        return [path(name, items)]
    try:
        it = iter(items)
    except TypeError:
        raise TypeError(f"{name}: expected a path or an iterable of paths, got "
                        f"{_kind(items)}") from None
    return [path(f"{name}[{i}]", p) for i, p in enumerate(it)]


def texts(name, items):
    """An iterable of names (str/bytes; one str alone is refused: it would be
    taken letter by letter) -> list of bytes."""
    if isinstance(items, (str, bytes)):
        raise TypeError(f"{name}: expected a list of names, got one {_kind(items)}")
    try:
        it = iter(items)
    except TypeError:
        raise TypeError(f"{name}: expected a list of names, got {_kind(items)}") from None
    return [text(f"{name}[{i}]", x) for i, x in enumerate(it)]


def enum(name, v, names):
    """An enum field: its name (str) or its value (int) -> int. names: {name: value}."""
    if isinstance(v, str):
        if v not in names:
            raise ValueError(f"{name}: {v!r} is not one of {sorted(names)}")
        return names[v]
    i = integer(name, v, INT)
    if i not in names.values():
        raise ValueError(f"{name}: {i} is not one of {sorted(names.values())} ({sorted(names)})")
    return i


def field(owner, name, ctype, v, enums):
    """The C value of Python value v for the field `name` of ctypes type ctype.
    owner: the function, for the message; enums: {field: {name: value}}."""
    label = f"{owner}: {name}" if owner else name
    if name in enums and ctype is ctypes.c_int:
        return enum(label, v, enums[name])
    if ctype is ctypes.c_char_p:
        return path(label, v, optional=True)
    if ctype is ctypes.c_double:
        return number(label, v)
    if ctype in _INT_RANGES:
        return integer(label, v, _INT_RANGES[ctype], allow_bool=ctype is ctypes.c_int)
    raise TypeError(f"{label}: cannot be set from Python")
