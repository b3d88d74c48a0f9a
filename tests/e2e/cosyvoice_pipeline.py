"""CosyVoice 2's data_pipeline (examples/libritts/cosyvoice2/conf/cosyvoice2.yaml)
as hyperpyyaml builds it (`!name:` is functools.partial), with the stand-in for
the mel spectrogram: the one copy the e2e trainers and tools/bench/bench_loaders.py
build. Import it after the recipe's folder is on sys.path."""
import functools

import torch


def band_energy(speech, n_fft=1280, hop=320, bands=80):
    """Stand-in for matcha's mel_spectrogram(center=False): the same reflect
    padding and frame count (50 a second), log band energies instead of mel
    bins. (1, n) -> (1, bands, frames)."""
    pad = (n_fft - hop) // 2
    x = torch.nn.functional.pad(speech.unsqueeze(1), (pad, pad), mode="reflect").squeeze(1)
    frames = x.unfold(-1, n_fft, hop)  # (1, T, n_fft)
    feat = frames.reshape(1, frames.size(1), bands, n_fft // bands).pow(2).mean(-1)
    return torch.log1p(feat).transpose(1, 2)


def pipeline(get_tokenizer):
    """The stages, tokenizing with get_tokenizer (the recipe's Qwen2 tokenizer,
    or a trainer's character stand-in)."""
    from cosyvoice.dataset import processor
    p = functools.partial
    return [
        p(processor.parquet_opener),
        p(processor.tokenize, get_tokenizer=get_tokenizer, allowed_special="all"),
        p(processor.filter, max_length=6000, min_length=100, token_max_length=200, token_min_length=1),
        p(processor.resample, resample_rate=16000),
        p(processor.compute_fbank, feat_extractor=band_energy, num_frames=640),
        p(processor.parse_embedding, normalize=True),
        p(processor.shuffle, shuffle_size=1000),
        p(processor.sort, sort_size=500),
        p(processor.batch, batch_type="dynamic", max_frames_in_batch=2000),
        p(processor.padding, use_spk_embedding=False),
    ]
