"""Stand-in (README.md): tiktoken is not installable here; cosyvoice.tokenizer.tokenizer
imports it for CosyVoice 1's get_encoding, which the tests do not call."""
