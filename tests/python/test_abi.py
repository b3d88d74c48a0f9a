"""The binding's copy of the ABI against the library's own.

python/equishard/_ffi.py mirrors the header's structs by hand. The library
exports its layout table (es_abi_layout: each struct's size and each field's
offset and size, as compiled, generated from the headers by
tools/gen_abi_layout.py); this test compares _ffi.STRUCTS with it field by
field, the table with the structs the headers declare (read from
include/equishard/), and the table's fields with each struct's bytes, so a
field added to a C struct fails here until _ffi.py follows, and one the table
lost fails too. It also checks the two tiers of the API (the binding calls
only the stable header's functions), the version macros, and that the Python
enums come from the library (es_enum_*).

Run by meson through tests/python/run.sh, like the other suites.
"""
import ctypes
import os
import re
import shutil
import subprocess
import unittest

from equishard import _ffi
from equishard.core import ENUMS

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.environ.get("ES_SOURCE_ROOT", os.path.join(HERE, "..", ".."))
HEADER = os.path.join(ROOT, "include", "equishard", "equishard.h")
EXPERIMENTAL = os.path.join(ROOT, "include", "equishard", "equishard_experimental.h")


def header_text(path=HEADER):
    with open(path, encoding="utf-8") as f:
        return f.read()


def header_functions(path):
    """The ES_API functions a header declares."""
    text = re.sub(r"/\*.*?\*/", " ", header_text(path), flags=re.S)
    return re.findall(r"^ES_API\b[^;(]*?\b(es_\w+)\s*\(", text, flags=re.M)


def header_structs(text):
    """{struct: [field, ...]} for every `typedef struct es_x { ... } es_x;` of the
    header, fields in declaration order (`a, b;` gives two; arrays count once)."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    out = {}
    for m in re.finditer(r"typedef\s+struct\s+(es_\w+)\s*\{(.*?)\}\s*\1\s*;", text, flags=re.S):
        fields = []
        for decl in filter(None, (d.strip() for d in m.group(2).split(";"))):
            decl = re.sub(r"\[[^\]]*\]", "", decl)
            first, *rest = decl.split(",")
            fields += [re.findall(r"\w+", d)[-1] for d in [first, *rest]]
        out[m.group(1)] = fields
    return out


def library_layout():
    """{struct: (size, [(field, offset, size), ...])} from es_abi_layout."""
    n = ctypes.c_size_t()
    rows = _ffi.lib().es_abi_layout(ctypes.byref(n))
    out = {}
    for i in range(n.value):
        r = rows[i]
        name = r.struct_name.decode()
        if r.field is None:
            out[name] = (r.size, [])
        else:
            out[name][1].append((r.field.decode(), r.offset, r.size))
    return out


class TestLayout(unittest.TestCase):
    def setUp(self):
        self.layout = library_layout()

    def test_table_lists_every_header_struct_and_field(self):
        declared = header_structs(header_text() + header_text(EXPERIMENTAL))
        self.assertGreater(len(declared), 20)
        self.assertEqual(sorted(declared), sorted(self.layout),
                         "structs of the headers vs es_abi_layout (tools/gen_abi_layout.py)")
        for name, fields in declared.items():
            self.assertEqual(fields, [f for f, _, _ in self.layout[name][1]],
                             f"{name}: fields of the header vs es_abi_layout (tools/gen_abi_layout.py)")

    def test_ffi_matches_the_library_field_by_field(self):
        self.assertEqual(sorted(_ffi.STRUCTS), sorted(self.layout),
                         "_ffi.STRUCTS vs the library's structs")
        for name, (size, fields) in self.layout.items():
            cls = _ffi.STRUCTS[name]
            with self.subTest(struct=name):
                self.assertEqual([f for f, _ in cls._fields_], [f for f, _, _ in fields],
                                 f"{name}: fields of _ffi.{cls.__name__} vs the library")
                for field, offset, fsize in fields:
                    got = getattr(cls, field)
                    self.assertEqual((got.offset, got.size), (offset, fsize),
                                     f"{name}.{field}: (offset, size) in _ffi vs the library")
                self.assertEqual(ctypes.sizeof(cls), size, f"sizeof({name}) in _ffi vs the library")

    def test_fields_cover_every_byte(self):
        # Independent of any reading of the header: sorted by offset, a struct's
        # fields leave gaps only where C pads (up to the next field's alignment,
        # and at the end up to the struct's), so a field missing from the table
        # shows as a hole (unless it is one padding could fill: a 4-byte field
        # before an 8-byte one; the header comparison above catches those).
        # Alignment is read off the size: the largest power of two dividing it,
        # at most 8 (true of every field type the headers use).
        def align(size):
            return min(8, size & -size)

        for name, (size, fields) in self.layout.items():
            with self.subTest(struct=name):
                end, most = 0, 1
                for field, offset, fsize in sorted(fields, key=lambda f: f[1]):
                    a = align(fsize)
                    self.assertEqual(offset, -(-end // a) * a,
                                     f"{name}: bytes {end}..{offset} before {field} belong to no field")
                    end, most = offset + fsize, max(most, a)
                self.assertEqual(size, -(-end // most) * most,
                                 f"{name}: bytes {end}..{size} at the end belong to no field")

    # The sizes (x86-64, LP64) the settings structs had when they got their
    # reserve (uint64_t reserved[8], 0.1): a field added since took its bytes
    # from the reserve (or from padding), so none of these may ever change.
    FROZEN_SIZES = {"es_measure_settings": 104, "es_cost_model": 168, "es_plan_settings": 312,
                    "es_simulate_settings": 312, "es_validate_settings": 136,
                    "es_validate_data_settings": 256}

    def test_settings_keep_a_reserve(self):
        # The ABI rule of the header: settings structs end in their reserve, and
        # new fields come out of it, so their size and every old offset stay.
        for name, frozen in self.FROZEN_SIZES.items():
            field, offset, size = self.layout[name][1][-1]
            self.assertEqual(field, "reserved", name)
            self.assertEqual(size % 8, 0, name)
            self.assertEqual(offset + size, self.layout[name][0], name)
            if ctypes.sizeof(ctypes.c_void_p) == 8:
                self.assertEqual(self.layout[name][0], frozen, f"sizeof({name}) changed")


class TestVersion(unittest.TestCase):
    def test_number_string_and_macros_agree(self):
        L = _ffi.lib()
        text = header_text()
        macro = {k: int(re.search(rf"#define ES_VERSION_{k} (\d+)", text).group(1))
                 for k in ("MAJOR", "MINOR", "PATCH")}
        self.assertEqual(L.es_version().decode(),
                         "{MAJOR}.{MINOR}.{PATCH}".format(**macro))
        self.assertEqual(L.es_version_number(),
                         macro["MAJOR"] * 10000 + macro["MINOR"] * 100 + macro["PATCH"])


class TestTiers(unittest.TestCase):
    """equishard.h is the stable API, equishard_experimental.h what the CLI and
    the tests use beyond it (CHANGELOG.md)."""

    # aliases removed in 0.1 (CHANGELOG.md): one name per job
    REMOVED = ["es_version_string", "es_check_name", "es_check_from_name", "es_loader_name"]

    def test_binding_calls_only_the_stable_tier(self):
        stable = header_functions(HEADER)
        experimental = header_functions(EXPERIMENTAL)
        # 107 at the split, 98 once near-duplicate families became one call each
        # (CHANGELOG.md); a new function takes the place of one that goes
        self.assertLessEqual(len(stable), 100, "the stable header is meant to stay narrow")
        self.assertGreater(len(experimental), 20)
        self.assertEqual(set(stable) & set(experimental), set(), "declared in both tiers")
        self.assertEqual(len(stable), len(set(stable)), "declared twice in equishard.h")
        self.assertEqual(sorted(set(_ffi._SIGNATURES) - set(stable)), [],
                         "_ffi binds functions outside the stable header")

    def test_removed_aliases_are_gone(self):
        L = _ffi.lib()
        for name in self.REMOVED:
            self.assertFalse(hasattr(L, name), f"{name} is still exported")
            self.assertNotIn(name, header_functions(HEADER) + header_functions(EXPERIMENTAL))

    def test_the_library_exports_each_declared_function(self):
        # both tiers are exported (the experimental one for the CLI and tests);
        # nothing else is
        nm = shutil.which("nm")
        if not nm:
            self.skipTest("no nm")
        out = subprocess.run([nm, "-D", "--defined-only", _ffi.lib()._name], capture_output=True,
                             text=True, check=True).stdout
        exported = {line.split()[-1] for line in out.splitlines() if line.split()[-2:-1] == ["T"]}
        exported = {s for s in exported if s.startswith("es_")}
        self.assertEqual(sorted(exported ^ set(header_functions(HEADER) + header_functions(EXPERIMENTAL))),
                         [], "exported es_* functions vs the headers' ES_API declarations")


class TestEnums(unittest.TestCase):
    def test_names_round_trip(self):
        L = _ffi.lib()
        self.assertEqual(list(ENUMS), ["on_error", "mode", "remainder", "compress", "loader",
                                       "check", "device", "dtype", "kind", "filter_reason",
                                       "cost_term"])
        self.assertEqual(ENUMS["filter_reason"]["kept"], 0)
        self.assertEqual(_ffi.ENUM_FILTER_REASON, list(ENUMS).index("filter_reason"))
        self.assertEqual(_ffi.ENUM_COST_TERM, list(ENUMS).index("cost_term"))
        self.assertEqual(ENUMS["mode"], {"shard": 0, "batch": 1, "reshard": 2})
        self.assertEqual(ENUMS["compress"], {"none": 0, "gzip": 1, "zstd": 2, "snappy": 3, "auto": 4})
        self.assertEqual(ENUMS["device"], {"auto": 0, "cpu": 1, "cuda": 2})
        self.assertEqual(ENUMS.name("kind", 2), "data")
        for e, field in enumerate(ENUMS):
            for name, value in ENUMS[field].items():
                got = ctypes.c_int(-7)
                self.assertEqual(L.es_enum_value(e, name.encode(), ctypes.byref(got)), 0)
                self.assertEqual(got.value, value)
            got = ctypes.c_int(-7)
            self.assertEqual(L.es_enum_value(e, b"no-such-name", ctypes.byref(got)), -1)
            self.assertEqual(L.es_enum_value(e, None, ctypes.byref(got)), -1)
            self.assertEqual(got.value, -7)
            self.assertIsNone(L.es_enum_name(e, len(ENUMS[field])))
            self.assertIsNone(L.es_enum_name(e, -1))
        self.assertIsNone(L.es_enum_field(len(ENUMS)))
        self.assertEqual(L.es_enum_size(len(ENUMS)), 0)
        check, loader = list(ENUMS).index("check"), list(ENUMS).index("loader")
        self.assertEqual([L.es_enum_name(check, v).decode() for v in range(len(ENUMS["check"]))],
                         list(ENUMS["check"]))
        self.assertEqual(L.es_enum_name(loader, 1), b"wenet")


if __name__ == "__main__":
    unittest.main()
