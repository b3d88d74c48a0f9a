"""The settings every public call takes, spelled out for help() and inspect.

The calls take the header's settings fields as keyword arguments (core._apply
sets them by name, so a field added to a structure in _ffi.py is accepted at
once). `settings_api` makes that list visible: it gives a call a __signature__
naming each field of its settings structures as a keyword-only parameter, with a
type hint from the field's ctypes type and the library's default, and appends to
its docstring a "Settings" section listing each field with its C type and
default. Both are computed from the _ffi structures, so they cannot drift from
the header (tests/python/test_signatures.py).

The defaults are the library's (es_*_defaults), read when first shown: a
signature's defaults are markers (`DEFAULT`: "not given, the library's or the
recipe's value") whose repr is that value; the docstring's defaults are read at
import when the library loads, and named by the function that sets them when it
does not (equishard.loaders needs no library).
"""
import ctypes
import inspect
import os
import typing
from ctypes import byref, c_char_p, c_double, c_int, c_int64, c_uint32, c_uint64

from . import _ffi

# fields no caller sets: handles, callbacks, the reserve, what the library records
HIDDEN = {"reserved", "progress", "progress_user", "build_progress", "build_progress_user",
          "read_progress", "read_progress_user", "tokenizer", "recipe", "model", "source",
          "source_digest"}
# c_int fields that name an enum (es_enum_field); the other c_int fields are flags or counts
ENUM_FIELDS = {"mode", "remainder", "compress", "loader", "device", "on_error", "dtype"}
FLAGS = {"hash", "list_shuffle", "partition", "plan_side", "duplicates", "allow_negative_r2"}
TEXT_FIELDS = {"time_field"}  # char * fields that hold a name, not a path

PathArg = typing.Union[str, bytes, os.PathLike]

_C_NAMES = [(c_uint32, "uint32_t"), (c_uint64, "uint64_t"), (c_int64, "int64_t"),
            (c_double, "double"), (c_char_p, "const char *")]


def c_type(name, t):
    """The C spelling of a field's type (size_t is uint64_t's ctypes type on LP64)."""
    if t is c_int:
        return "int (enum, by name or value)" if name in ENUM_FIELDS else \
            "int (flag)" if name in FLAGS else "int"
    return next((c for k, c in _C_NAMES if t is k), t.__name__)


def annotation(name, t):
    """The Python type a field takes (what _args.field accepts for it)."""
    if t is c_char_p:
        return typing.Optional[str] if name in TEXT_FIELDS else typing.Optional[PathArg]
    if t is c_double:
        return float
    if t is c_int and name in ENUM_FIELDS:
        return typing.Union[str, int]
    if t is c_int and name in FLAGS:
        return typing.Union[bool, int]
    return int


class _Default:
    """A parameter's default in a signature: the call leaves the field as the
    library (or the recipe) sets it. repr: that value, read from the library."""

    def __init__(self, read, name):
        self._read, self._name = read, name

    def __repr__(self):
        try:
            v = self._read()[self._name]
        except Exception:  # no library here: name where the default comes from
            return "DEFAULT"
        return repr(v)


def fields(struct):
    """[(name, ctypes type)] of the settings a caller may set, in header order."""
    return [(f, t) for f, t in struct._fields_ if f not in HIDDEN
            and t is not ctypes.c_void_p and not isinstance(t, type(ctypes.CFUNCTYPE(None)))]


def defaults_of(make):
    """A reader of {field: default} for struct instances made by make() (one
    es_*_defaults call, or None where the library has none); cached."""
    cache = {}

    def read():
        if not cache:
            structs = make()
            for s in structs:
                for f, t in s._fields_:
                    if f in HIDDEN or f in cache:
                        continue
                    v = getattr(s, f)
                    if t is c_char_p:
                        v = None if v is None else v.decode("utf-8", "surrogateescape")
                    elif f in ENUM_FIELDS:
                        from .core import ENUMS
                        v = ENUMS.name(f, v) if f in ENUMS else v
                    cache[f] = v
                model = next((getattr(s, "model") for s in structs if hasattr(s, "model")), None)
                if model is not None:
                    for f, t in model._fields_:
                        if f not in HIDDEN and f not in cache:
                            cache[f] = getattr(model, f)
        return cache
    return read


def settings_api(groups, read_defaults, cost_model=True, note=""):
    """Decorator: groups is [(C name, ctypes structure, {field: the parameter
    that sets it instead}), ...], read_defaults a defaults_of() reader. The function keeps its own parameters
    (their defaults are its own) and its **settings; the fields of the groups
    it does not name become keyword-only parameters after them."""
    def wrap(fn):
        sig = inspect.signature(fn)
        own = [p for p in sig.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
        rest = [p for p in sig.parameters.values() if p.kind is inspect.Parameter.VAR_KEYWORD]
        have = {p.name for p in own}
        extra, lines = [], []
        groups_all = list(groups)
        if cost_model:
            groups_all.append(("es_cost_model", _ffi.CostModel, {}))
        try:
            defaults = read_defaults()
        except Exception:  # no library at import: the defaults are named, not shown
            defaults = {}
        for cname, struct, skip in groups_all:
            lines.append(f"  {cname}:")
            for f, t in fields(struct):
                d = repr(defaults[f]) if f in defaults else "the library's"
                via = f" (set by {skip[f]}=)" if f in skip else ""
                lines.append(f"    {f}: {c_type(f, t)} = {d}{via}")
                if f in have or f in skip:
                    continue
                have.add(f)
                extra.append(inspect.Parameter(f, inspect.Parameter.KEYWORD_ONLY,
                                               default=_Default(read_defaults, f),
                                               annotation=annotation(f, t)))
        if cost_model and "cost_model" not in have:
            extra.insert(0, inspect.Parameter("cost_model", inspect.Parameter.KEYWORD_ONLY,
                                              default=None, annotation=typing.Optional[PathArg]))
            lines.append("    cost_model: a model.json path (es_cost_model_read), read "
                         "before the fields above")
        fn.__signature__ = sig.replace(parameters=own + extra + rest)
        fn.__doc__ = (fn.__doc__ or "").rstrip() + (
            "\n\n    Settings (keyword-only; name: C type = default, from the header's "
            "structures;\n    an unknown name raises TypeError naming it)" +
            (f"; {note}" if note else "") + ":\n" + "\n".join("  " + x for x in lines) + "\n")
        return fn
    return wrap


def lib_defaults(*calls):
    """A make() for defaults_of: each call is (structure, es_*_defaults name, extra args)."""
    def make():
        L = _ffi.lib()
        out = []
        for struct, fn, args in calls:
            s = struct()
            if fn is not None:  # None: all fields zero (es_emb_sources has no defaults)
                getattr(L, fn)(byref(s), *args)
            out.append(s)
        return out
    return make
