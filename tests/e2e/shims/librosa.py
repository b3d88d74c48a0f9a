"""Stand-in (README.md): processor imports librosa for compute_log_mel_spectrogram
(whisper recipes), which the tests' conf (feats_type fbank) does not reach."""
