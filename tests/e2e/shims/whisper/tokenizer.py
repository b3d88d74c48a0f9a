"""Stand-in (README.md): whisper is not installable here; cosyvoice.tokenizer.tokenizer
imports its Tokenizer for CosyVoice 1's get_tokenizer, which the tests do not call."""


class Tokenizer:
    """Name only: CosyVoice 2's get_qwen_tokenizer does not use it."""

    def __init__(self, *args, **kwargs):
        raise NotImplementedError("the e2e stand-in of whisper has no tokenizer (CosyVoice 1)")
