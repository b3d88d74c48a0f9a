"""Stand-in for pyarrow: only pyarrow.parquet (parquet.py), what CosyVoice's
parquet_opener reads. __version__ is what pandas (imported by torch's filter
datapipe, in WeNet's pipeline) reads of an importable pyarrow; 0.0.0 makes it
use none of pyarrow."""
__version__ = "0.0.0"
