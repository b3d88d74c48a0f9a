"""equishard: even multi-GPU training data, planned before training starts.

A ctypes binding of libequishard (include/equishard/equishard.h); see
docs/PYTHON.md. Nothing beyond the standard library is needed at run time.

    import equishard
    table = equishard.measure(["data/train/data.list"])
    with equishard.plan(table, world_size=8, workers=4) as p:
        print(p.metrics.imbalance, p.shards(0))
        p.write("plan")

`equishard.loaders` (CosyVoice / WeNet drop-ins that read a plan's OUTDIR) does
not need the library; `import equishard` loads it when it is there (help()
shows its defaults) and imports without it.
"""
from .core import (Batch, CostRow, CostTable, Error, Finding, Load, Plan, PlanMetrics,
                   SimulateResult, ValidateResult, describe, load, measure, plan, simulate, validate,
                   validate_tensor)
from .calibrate import Calibration, calibrate
from .recipe import Recipe
from .rows import RowReader, parquet_num_rows, read_rows
from .text import Tokenizer


def version():
    """The library's version string (es_version)."""
    from ._ffi import lib
    return lib().es_version().decode()


__all__ = ["Batch", "Calibration", "calibrate", "CostRow", "CostTable", "Error", "Finding", "Load", "Plan", "PlanMetrics",
           "Recipe", "RowReader", "SimulateResult", "Tokenizer", "ValidateResult", "describe", "load", "measure", "plan", "simulate",
           "parquet_num_rows", "read_rows", "validate", "validate_tensor", "version"]
