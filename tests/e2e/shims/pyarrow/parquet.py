"""Stand-in for pyarrow.parquet (README.md): the calls CosyVoice's parquet_opener
makes, `ParquetFile(url).iter_batches(batch_size=64)`, `.to_pandas()`, `len(df)`,
`dict(df.loc[i])`, over equishard's row reader. Values are what the pandas rows
hold in content: bytes for binary columns, str for strings, lists for lists."""
import equishard


class _Frame:
    def __init__(self, rows):
        self.loc = rows  # df.loc[i] -> the row as a mapping

    def __len__(self):
        return len(self.loc)


class _Batch:
    def __init__(self, rows):
        self._rows = rows

    def to_pandas(self):
        return _Frame(self._rows)


class ParquetFile:
    def __init__(self, source):
        self._reader = equishard.RowReader(source)

    def iter_batches(self, batch_size=65536):
        n = self._reader.num_rows
        try:
            for start in range(0, n, batch_size):
                yield _Batch(self._reader.read(range(start, min(n, start + batch_size))))
        finally:
            self._reader.close()
