"""Stand-in for pyarrow (README.md): only pyarrow.parquet's reading calls.

pandas imports pyarrow whenever it is importable and reads its __version__
(pandas.compat.pyarrow); torch's datapipes import pandas (FilterIterDataPipe,
WeNet's pipeline). A version below every pandas' minimum for pyarrow (1.0.1
in pandas 1.5) makes pandas treat this stand-in as a pyarrow it cannot use, as
it treats none at all: it never reaches for pyarrow.compute or pyarrow.Table,
which the stand-in does not have."""
__version__ = "0.0.0"
