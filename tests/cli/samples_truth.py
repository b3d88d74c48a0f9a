"""data-samples' utterances read with the standard library only, as the
independent truth of tests/cli/test_cli_progress.sh and test_cli_describe.sh:
tar members (tarfile), raw-list files (os.stat), durations from the audio
headers themselves (RIFF fmt/data chunks, read by hand because python's wave
module refuses WAVE_FORMAT_EXTENSIBLE; FLAC's STREAMINFO), transcripts and
speakers from the shards' .txt/.spk members. Run from data-samples/."""
import io
import json
import os
import struct
import tarfile


def audio_info(f):
    """(sample_rate, channels, samples per channel) of a WAV or FLAC file object."""
    head = f.read(12)
    if head[:4] == b"fLaC":
        f.seek(4)
        while True:
            hdr = f.read(4)
            btype, length = hdr[0] & 0x7f, int.from_bytes(hdr[1:], "big")
            block = f.read(length)
            if btype == 0:  # STREAMINFO: 20-bit rate, 3-bit channels-1, 5-bit bps-1, 36-bit total
                bits = int.from_bytes(block[10:18], "big")
                return bits >> 44, ((bits >> 41) & 7) + 1, bits & ((1 << 36) - 1)
    assert head[:4] == b"RIFF" and head[8:12] == b"WAVE", head
    rate = channels = align = None
    while True:
        hdr = f.read(8)
        cid, size = hdr[:4], struct.unpack("<I", hdr[4:])[0]
        if cid == b"fmt ":
            fmt = f.read(size)
            _, channels, rate, _, align = struct.unpack("<HHIIH", fmt[:14])
        elif cid == b"data":
            return rate, channels, size // align
        else:
            f.seek(size, 1)
        if size % 2:
            f.seek(1, 1)


def shard_rows(list_path="shards/data.list"):
    """One dict per utterance of the tar shards, in list and member order:
    key, shard, bytes (audio member size), rate, channels, samples, text, spk."""
    rows = []
    for path in open(list_path).read().split():
        with tarfile.open(path) as t:
            by_key = {}
            for m in t.getmembers():
                key, _, ext = m.name.rpartition(".")
                d = by_key.setdefault(key, {"key": key, "shard": path})
                data = t.extractfile(m).read()
                if ext in ("wav", "flac"):
                    d["bytes"] = m.size
                    d["rate"], d["channels"], d["samples"] = audio_info(io.BytesIO(data))
                elif ext == "txt":
                    d["text"] = data.decode("utf-8")
                elif ext == "spk":
                    d["spk"] = data.decode("utf-8").strip()
            rows += by_key.values()
    return rows


def raw_rows(list_path="raw.list"):
    """The same for a WeNet raw list (no speakers): each line's wav, by os.stat."""
    rows = []
    for line in open(list_path):
        o = json.loads(line)
        with open(o["wav"], "rb") as f:
            rate, channels, samples = audio_info(f)
        rows.append({"key": o["key"], "shard": list_path, "bytes": os.stat(o["wav"]).st_size,
                     "rate": rate, "channels": channels, "samples": samples, "text": o["txt"]})
    return rows
