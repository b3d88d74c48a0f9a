"""equishard.calibrate: the cost model's weights from logged step times (es_calibrate).

    cal = equishard.calibrate("costs.tsv", ["steps/steps-rank-00000.jsonl", ...])
    print(cal.info.median_error, cal.weights)
    cal.write_json("model.json", inputs=["costs.tsv"])
    equishard.plan("costs.tsv", world_size=8, mode="batch", cost_model="model.json")

docs/COST_MODEL.md describes the logs, the fit and model.json.
"""
from ctypes import byref, c_void_p

from . import _args, _ffi
from ._ffi import lib
from ._signature import defaults_of, lib_defaults, settings_api
from .core import _Context, _Handle, _apply, _record, _str, _strings, _table, _values

CalibrationInfo = _record("CalibrationInfo", _ffi.CalibrationInfo)
CalibrationTerm = _record("CalibrationTerm", _ffi.CalibrationTerm)


def term_names():
    """The cost terms in es_cost_term order: w_frames, w_frames_sq, ..., w_batch."""
    L = lib()
    return [L.es_enum_name(_ffi.ENUM_COST_TERM, i).decode()
            for i in range(L.es_enum_size(_ffi.ENUM_COST_TERM))]


class Calibration(_Handle):
    """es_calibrate's result: info (CalibrationInfo: fit figures, the fitted
    model), terms (CalibrationTerm per term: weight, share, worth), weights
    (dict name -> seconds per unit); write_json(path, inputs)."""
    _free = "es_calibration_free"

    def __init__(self, ptr):
        super().__init__(ptr)
        info, term = _ffi.CalibrationInfo(), _ffi.CalibrationTerm()
        lib().es_calibration_get_info(ptr, byref(info))
        values = _values(info)
        values["model"] = {f: getattr(info.model, f) for f, _ in _ffi.CostModel._fields_
                           if f not in ("reserved", "source")}
        self.info = CalibrationInfo(**values)
        self.terms = []
        for j in range(len(term_names())):
            lib().es_calibration_term_info(ptr, j, byref(term))
            self.terms.append(CalibrationTerm(**_values(term)))
        self.weights = {t.name: t.weight for t in self.terms}
        self.frame_rate = info.model.frame_rate

    def write_json(self, path, inputs=None):
        """model.json (atomically); inputs: the cost tables' paths, for provenance."""
        b = _args.path("Calibration.write_json: path", path)
        arr, n = _strings([] if inputs is None else inputs, "Calibration.write_json: inputs")
        with self._use() as p, _Context() as ctx:
            ctx.check(lib().es_calibration_write_json(ctx.ptr, p, b, arr, n))


@settings_api([("es_calibrate_settings", _ffi.CalibrateSettings, {})],
              defaults_of(lib_defaults((_ffi.CalibrateSettings, "es_calibrate_defaults", ()))))
def calibrate(table, logs, **settings):
    """es_calibrate. table: a CostTable or paths (cost tables); logs: step-log
    paths. settings: es_calibrate_settings / es_cost_model fields (warmup=3,
    holdout_every=5, outlier_mads=5, terms=mask or list of names, time_field,
    frame_rate). -> Calibration."""
    s = _ffi.CalibrateSettings()
    lib().es_calibrate_defaults(byref(s))
    terms = settings.pop("terms", None)
    if isinstance(terms, (list, tuple)):
        names = term_names()
        mask = 0
        for i, t in enumerate(terms):
            t = _args.text(f"calibrate: terms[{i}]", t).decode("utf-8", "surrogateescape")
            name = t if t.startswith("w_") else "w_" + t
            if name not in names:
                raise ValueError(f"calibrate: terms: {t!r} is not one of {names}")
            mask |= 1 << names.index(name)
        terms = mask
    if terms is not None:
        settings["terms"] = terms
    if "time_field" in settings:  # a JSON key, not a path
        settings["time_field"] = _args.text("calibrate: time_field", settings["time_field"])
    _apply(s, settings, "calibrate")
    arr, n = _strings(logs, "calibrate: logs")
    table, owns = _table(table, "calibrate")
    out = c_void_p()
    try:
        with table._use() as t, _Context() as ctx:
            ctx.check(lib().es_calibrate(ctx.ptr, byref(s), t, arr, n, byref(out)))
    finally:
        if owns:
            table.close()
    return Calibration(out.value)


def read_model(path):
    """es_cost_model_read over the default model: {"frame_rate", "w_frames", ...,
    "source", "source_digest"}."""
    m = _ffi.CostModel()
    lib().es_cost_model_defaults(byref(m))
    b = _args.path("read_model: path", path)
    with _Context() as ctx:
        ctx.check(lib().es_cost_model_read(ctx.ptr, b, byref(m)))
    out = {f: getattr(m, f) for f, _ in _ffi.CostModel._fields_ if f != "reserved"}
    out["source"] = _str(m.source)
    return out
