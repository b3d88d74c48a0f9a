"""Stand-in (README.md) for CosyVoice's onnx helpers: the parquet files carry the
embeddings and speech tokens, as make_parquet_list.py writes them."""
embedding_extractor = None
online_feature = False
