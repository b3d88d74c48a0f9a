"""Stand-in (README.md) for wenet/utils/file_utils.py, which the shared copy of
WeNet leaves out: the symbol-table readers char_tokenizer.py and dataset.py import."""


def read_lists(list_file):
    with open(list_file, "r", encoding="utf8") as fin:
        return [line.strip() for line in fin]


def read_non_lang_symbols(non_lang_sym_path):
    if non_lang_sym_path is None:
        return []
    return read_lists(non_lang_sym_path)


def read_symbol_table(symbol_table_file):
    """'symbol id' lines -> {symbol: id}, as upstream reads units.txt."""
    table = {}
    with open(symbol_table_file, "r", encoding="utf8") as fin:
        for line in fin:
            arr = line.strip().split()
            assert len(arr) == 2
            table[arr[0]] = int(arr[1])
    return table
