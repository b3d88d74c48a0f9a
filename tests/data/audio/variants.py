#!/usr/bin/env python3
"""Writes WAV/FLAC header variants from the sox-made files in this folder.

Each variant keeps the source's audio bytes and changes only the container:
extra chunks before `data`, an odd-size chunk with its pad byte, RF64/BW64
with a ds64 chunk, ID3v2 tags before `fLaC`, and fmt fields soxi ignores.
Also writes derived.tsv (variant, source, note) so make.sh can take the truth
from the source file when soxi cannot read a variant. Stdlib only.
"""
import struct


def chunks(path):
    """Returns (magic, [(id, payload)]) of a little-endian RIFF/WAVE file."""
    d = open(path, 'rb').read()
    assert d[8:12] == b'WAVE', path
    out, o = [], 12
    while o + 8 <= len(d):
        cid, size = d[o:o + 4], struct.unpack('<I', d[o + 4:o + 8])[0]
        out.append((cid, d[o + 8:o + 8 + size]))
        o += 8 + size + (size & 1)
    return d[:4], out


def chunk(cid, payload, size=None):
    pad = b'\0' if len(payload) & 1 else b''
    return cid + struct.pack('<I', len(payload) if size is None else size) + payload + pad


def riff(parts, magic=b'RIFF'):
    body = b'WAVE' + b''.join(parts)
    return magic + struct.pack('<I', len(body)) + body


def get(cks, cid):
    return next(p for c, p in cks if c == cid)


def write(name, data):
    with open(name, 'wb') as f:
        f.write(data)


derived = []


def note(name, source, text):
    derived.append((name, source, text))


# Chunks before data: LIST/INFO before fmt, JUNK and bext between fmt and data.
_, ck = chunks('pcm_s16_44k1_stereo.wav')
fmt, data = get(ck, b'fmt '), get(ck, b'data')
info = b'INFO' + chunk(b'ISFT', b'equishard test\0') + chunk(b'INAM', b'tone\0')
write('list_junk_before_data.wav', riff([
    chunk(b'LIST', info), chunk(b'fmt ', fmt), chunk(b'JUNK', b'\0' * 28),
    chunk(b'bext', b'\0' * 602), chunk(b'data', data)]))
note('list_junk_before_data.wav', 'pcm_s16_44k1_stereo.wav', 'LIST before fmt; JUNK, bext before data')

# An odd-size chunk before data, followed by its pad byte.
write('odd_chunk_pad.wav', riff([
    chunk(b'fmt ', fmt), chunk(b'zzzz', b'odd'), chunk(b'data', data)]))
note('odd_chunk_pad.wav', 'pcm_s16_44k1_stereo.wav', '3-byte chunk plus pad byte before data')

# A chunk after data (soxi and the probe stop at data).
write('chunk_after_data.wav', riff([
    chunk(b'fmt ', fmt), chunk(b'data', data), chunk(b'LIST', info)]))
note('chunk_after_data.wav', 'pcm_s16_44k1_stereo.wav', 'LIST chunk after data')

# 16-bit mono data of odd length (half a sample at the end) and its pad byte.
_, ck = chunks('pcm_u8_16k_mono.wav')
fmt16 = struct.pack('<HHIIHH', 1, 1, 16000, 32000, 2, 16)
pcm = get(ck, b'data')  # reused as 16-bit samples: only the byte count matters
write('odd_data_len.wav', riff([chunk(b'fmt ', fmt16), chunk(b'data', pcm[:-1])]))
note('odd_data_len.wav', '', '16-bit mono, odd data length: last half sample not counted')

# fmt fields soxi does not use for PCM: a wrong and a zero block_align.
write('block_align_wrong.wav', riff([
    chunk(b'fmt ', struct.pack('<HHIIHH', 1, 1, 16000, 32000, 4, 16)), chunk(b'data', pcm)]))
note('block_align_wrong.wav', '', 'block_align 4 for 16-bit mono: soxi counts channels*bits/8')
write('block_align_zero.wav', riff([
    chunk(b'fmt ', struct.pack('<HHIIHH', 1, 1, 16000, 32000, 0, 16)), chunk(b'data', pcm)]))
note('block_align_zero.wav', '', 'block_align 0: soxi counts channels*bits/8')


def rf64(src, magic):
    """RF64/BW64 the way EBU Tech 3306 writers do it: ds64 first, 0xFFFFFFFF
    in the RIFF and data sizes."""
    _, ck = chunks(src)
    fmt, data = get(ck, b'fmt '), get(ck, b'data')
    block_align = struct.unpack('<H', fmt[12:14])[0]
    ds64 = struct.pack('<QQQI', 0, len(data), len(data) // block_align, 0)
    body = b'WAVE' + chunk(b'ds64', ds64) + chunk(b'fmt ', fmt) + chunk(b'data', data, 0xFFFFFFFF)
    riff_size = len(body)
    ds64 = struct.pack('<QQQI', riff_size, len(data), len(data) // block_align, 0)
    body = b'WAVE' + chunk(b'ds64', ds64) + chunk(b'fmt ', fmt) + chunk(b'data', data, 0xFFFFFFFF)
    return magic + struct.pack('<I', 0xFFFFFFFF) + body


write('rf64_s16_stereo.wav', rf64('pcm_s16_44k1_stereo.wav', b'RF64'))
note('rf64_s16_stereo.wav', 'pcm_s16_44k1_stereo.wav', 'RF64 with ds64; data size 0xFFFFFFFF')
write('rf64_s24_mono.wav', rf64('pcm_s24_48k_mono.wav', b'RF64'))
note('rf64_s24_mono.wav', 'pcm_s24_48k_mono.wav', 'RF64, EXTENSIBLE fmt')
write('bw64_s16_stereo.wav', rf64('pcm_s16_44k1_stereo.wav', b'BW64'))
note('bw64_s16_stereo.wav', 'pcm_s16_44k1_stereo.wav',
     'BW64 (ITU-R BS.2088); soxi 14.4.2 rejects the magic, truth from the source')


def syncsafe(n):
    return bytes([(n >> 21) & 127, (n >> 14) & 127, (n >> 7) & 127, n & 127])


flac = open('flac_s16_8k.flac', 'rb').read()
frame = b'TIT2' + struct.pack('>I', 5) + b'\0\0' + b'\0tone'
body = frame + b'\0' * 64  # padding, as taggers leave
write('id3v23_before.flac', b'ID3\x03\x00\x00' + syncsafe(len(body)) + body + flac)
note('id3v23_before.flac', 'flac_s16_8k.flac', 'ID3v2.3 tag before fLaC')
write('id3v24_footer.flac', b'ID3\x04\x00\x10' + syncsafe(len(body)) + body +
      b'3DI\x04\x00\x10' + syncsafe(len(body)) + flac)
note('id3v24_footer.flac', 'flac_s16_8k.flac',
     'ID3v2.4 tag with footer before fLaC; libFLAC (soxi) does not skip the footer, truth from the source')

with open('derived.tsv', 'w') as f:
    for row in derived:
        f.write('\t'.join(row) + '\n')
