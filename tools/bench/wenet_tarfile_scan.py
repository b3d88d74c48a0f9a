#!/usr/bin/env python3
"""Python baseline: scan WeNet tar shards the way WeNet's data pipeline does.

    wenet_tarfile_scan.py LIST [-v]

LIST is a text file with one tar path per line (relative paths are taken
relative to the current directory). This mirrors wenet/dataset/processor.py
`url_opener` + `tar_file_and_group`: each shard is opened with
tarfile.open(fileobj=open(path, 'rb'), mode='r|*') (stream mode), every
member's full bytes are read, consecutive members are grouped by the prefix
before name.rfind('.'), `txt` is decoded as UTF-8 and stripped, and audio
members are parsed -- here with the stdlib `wave` module on io.BytesIO instead
of torchaudio.load, to get sample rate / channels / frames (header only; the
bytes were already read). Prints the number of utterances yielded on stdout;
-v adds total audio seconds and error count on stderr.
"""

import io
import sys
import tarfile
import wave

AUDIO_FORMAT_SETS = {"flac", "mp3", "m4a", "ogg", "opus", "wav", "wma"}


def tar_file_and_group(stream_path, stats):
    with open(stream_path, "rb") as raw:
        stream = tarfile.open(fileobj=raw, mode="r|*")
        prev_prefix = None
        example = {}
        valid = True
        for tarinfo in stream:
            name = tarinfo.name
            pos = name.rfind(".")
            assert pos > 0
            prefix, postfix = name[:pos], name[pos + 1:]
            if prev_prefix is not None and prefix != prev_prefix:
                example["key"] = prev_prefix
                if valid:
                    yield example
                example = {}
                valid = True
            file_obj = stream.extractfile(tarinfo)
            if file_obj is None:            # not a regular file
                prev_prefix = prefix
                continue
            with file_obj:
                try:
                    data = file_obj.read()
                    if postfix == "txt":
                        example["txt"] = data.decode("utf8").strip()
                    elif postfix in AUDIO_FORMAT_SETS:
                        with wave.open(io.BytesIO(data), "rb") as w:
                            example["sample_rate"] = w.getframerate()
                            example["channels"] = w.getnchannels()
                            example["num_frames"] = w.getnframes()
                    else:
                        example[postfix] = data
                except Exception as ex:  # noqa: BLE001 - WeNet logs and drops
                    valid = False
                    stats["errors"] += 1
                    print("error to parse %s: %s" % (name, ex), file=sys.stderr)
            prev_prefix = prefix
        if prev_prefix is not None:
            example["key"] = prev_prefix
            if valid:
                yield example
        stream.close()


def main():
    args = [a for a in sys.argv[1:] if a != "-v"]
    verbose = "-v" in sys.argv[1:]
    if len(args) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    with open(args[0], encoding="utf-8") as f:
        shards = [line.strip() for line in f if line.strip()]
    stats = {"errors": 0}
    n = 0
    seconds = 0.0
    for path in shards:
        for ex in tar_file_and_group(path, stats):
            n += 1
            if "num_frames" in ex:
                seconds += ex["num_frames"] / ex["sample_rate"]
    print(n)
    if verbose:
        print("shards %d utterances %d audio_s %.3f errors %d"
              % (len(shards), n, seconds, stats["errors"]), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
