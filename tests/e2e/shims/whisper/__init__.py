"""Stand-in (README.md): whisper is not installable here; compute_whisper_fbank is not in the tests pipeline."""
