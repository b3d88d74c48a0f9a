"""help(equishard.plan) and inspect.signature show every setting a call takes.

The settings are the header's structure fields, mirrored in _ffi.py (which
test_abi.py checks against the library's own layout table): every field a
caller may set must be a keyword-only parameter of the call's signature and be
named, with its C type, in its docstring; names that are no field still raise
TypeError naming them. Defaults shown are checked against the CLI's --help
text, which states them independently.
"""
import inspect
import re
import subprocess
import typing
import unittest

import equishard
from equishard import _ffi
from equishard.recipe import Recipe
from equishard.text import Tokenizer
from test_binding import CLI

# fields no caller sets, and why: the reserve, callbacks and handles the
# binding fills itself (tokenizer=, recipe=), the embedded model (its fields are
# listed flat), what es_cost_model_read records about the file it read
NOT_SETTINGS = {"reserved", "progress", "progress_user", "build_progress", "build_progress_user",
                "read_progress", "read_progress_user", "tokenizer", "recipe", "model", "source",
                "source_digest"}

C_TYPES = {"uint32_t", "uint64_t", "int64_t", "double", "const char *", "int"}


def settable(struct):
    return [f for f, _ in struct._fields_ if f not in NOT_SETTINGS]


CALLS = {  # call: the structures its settings come from
    "measure": [_ffi.MeasureSettings],
    "load": [_ffi.MeasureSettings],
    "plan": [_ffi.PlanSettings, _ffi.CostModel],
    "simulate": [_ffi.SimulateSettings, _ffi.CostModel],
    "describe": [_ffi.CostModel],
    "validate": [_ffi.EmbSources, _ffi.ValidateSettings, _ffi.ValidateDataSettings,
                 _ffi.CostModel],
    "calibrate": [_ffi.CalibrateSettings, _ffi.CostModel],
}
# fields a call sets from a parameter of another shape (simulate's epochs=(first, last),
# plan= for plan_dir)
OTHER_SHAPE = {"simulate": {"epoch_first", "epoch_last", "plan_dir"}}


class SignatureTest(unittest.TestCase):
    def test_every_setting_is_a_parameter(self):
        for name, structs in CALLS.items():
            with self.subTest(name):
                params = inspect.signature(getattr(equishard, name)).parameters
                for s in structs:
                    for f in settable(s):
                        if f in OTHER_SHAPE.get(name, ()):
                            continue
                        self.assertIn(f, params, f"{name}: {s.__name__}.{f}")
                        self.assertIsNot(params[f].annotation, inspect.Parameter.empty, f)

    def test_plan_settings_are_keyword_only_and_typed(self):
        params = inspect.signature(equishard.plan).parameters
        for f in settable(_ffi.PlanSettings) + settable(_ffi.CostModel):
            if f in ("world_size", "workers", "mode"):  # positional since the first release
                continue
            self.assertEqual(params[f].kind, inspect.Parameter.KEYWORD_ONLY, f)
        self.assertIs(params["max_frames_in_batch"].annotation, int)
        self.assertIs(params["min_length"].annotation, float)
        self.assertEqual(list(params)[-1], "settings")  # **settings still taken

    def test_docstring_names_every_field_with_its_c_type(self):
        for name, structs in CALLS.items():
            doc = inspect.getdoc(getattr(equishard, name))
            with self.subTest(name):
                for s in structs:
                    for f in settable(s):
                        m = re.search(rf"^\s*{f}: (.*?) = ", doc, re.M)
                        self.assertIsNotNone(m, f"{name}: {f} not in its docstring")
                        self.assertIn(m.group(1).split(" (")[0], C_TYPES, f)

    def test_defaults_shown_are_the_clis(self):
        """plan --help states max_frames_in_batch 2000, sort_size 500 and
        min_length 100; the signature and the docstring say the same."""
        helptext = subprocess.run([CLI, "plan", "--help"], capture_output=True, text=True).stdout
        doc = inspect.getdoc(equishard.plan)
        params = inspect.signature(equishard.plan).parameters
        for field, flag in (("max_frames_in_batch", "max-frames-in-batch"),
                            ("sort_size", "sort-size"), ("min_length", "min-length")):
            want = re.search(rf"--{flag} N\s+.*?default (\d+)", helptext, re.S).group(1)
            self.assertEqual(float(repr(params[field].default)), float(want), field)
            self.assertEqual(float(re.search(rf"^\s*{field}: .* = (\S+)$", doc, re.M).group(1)),
                             float(want), field)

    def test_annotations_resolve(self):
        """What a type checker reads: every annotation names a real type."""
        ns = {"Recipe": Recipe, "Tokenizer": Tokenizer}
        for name in CALLS:
            with self.subTest(name):
                hints = typing.get_type_hints(getattr(equishard, name), localns=ns)
                self.assertTrue(all(h is not None for h in hints.values()), hints)

    def test_unknown_names_raise_type_error_naming_them(self):
        data = ["x.list"]  # never read: the names are checked first
        for name, call in (("plan", lambda: equishard.plan(data, 2, max_frame_in_batch=1)),
                           ("simulate", lambda: equishard.simulate(data, world_size=2,
                                                                   max_frame_in_batch=1)),
                           ("describe", lambda: equishard.describe(data, max_frame_in_batch=1)),
                           ("validate", lambda: equishard.validate(data, max_frame_in_batch=1)),
                           ("calibrate", lambda: equishard.calibrate(data, [], max_frame_in_batch=1)),
                           ("measure", lambda: equishard.measure(data, max_frame_in_batch=1))):
            with self.subTest(name), self.assertRaises(TypeError) as e:
                call()
            self.assertIn("max_frame_in_batch", str(e.exception))

    def test_settings_by_dict_still_work(self):
        sig = inspect.signature(equishard.plan)
        bound = sig.bind(["x.list"], 2, **{"max_frames_in_batch": 1200, "future_field": 1})
        self.assertEqual(bound.arguments["max_frames_in_batch"], 1200)
        self.assertEqual(bound.arguments["settings"], {"future_field": 1})


if __name__ == "__main__":
    unittest.main()
