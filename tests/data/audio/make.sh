#!/bin/sh
# Regenerates the audio edge-case files and truth.tsv in this folder.
# Needs sox/soxi (14.4.2) and python3. The outputs are checked in; tests never
# run this. Files are a few hundredths of a second of a sine, to stay tiny.
set -eu
cd "$(dirname "$0")"

syn() { # syn OUT DURATION SOX-OUTPUT-OPTIONS...
    out=$1 dur=$2
    shift 2
    sox -n "$@" "$out" synth "$dur" sine 440 vol 0.5
}

# PCM widths, float, companded, block codecs, many channels, common rates.
syn pcm_u8_16k_mono.wav       0.05 -r 16000 -c 1 -e unsigned-integer -b 8
syn pcm_s16_44k1_stereo.wav   0.03 -r 44100 -c 2 -e signed-integer -b 16
syn pcm_s24_48k_mono.wav      0.03 -r 48000 -c 1 -e signed-integer -b 24   # sox writes EXTENSIBLE
syn pcm_s32_16k_mono.wav      0.03 -r 16000 -c 1 -e signed-integer -b 32   # EXTENSIBLE
syn float32_16k_mono.wav      0.03 -r 16000 -c 1 -e floating-point -b 32
syn float64_8k_stereo.wav     0.03 -r 8000  -c 2 -e floating-point -b 64   # EXTENSIBLE
syn ext_6ch_s16_48k.wav       0.01 -r 48000 -c 6 -e signed-integer -b 16   # EXTENSIBLE, 6 channels
syn pcm_8ch_s16_44k1.wav      0.01 -r 44100 -c 8 -e signed-integer -b 16
syn mulaw_8k.wav              0.05 -r 8000  -c 1 -e mu-law
syn alaw_8k_stereo.wav        0.05 -r 8000  -c 2 -e a-law
syn ima_adpcm_8k.wav          0.1013 -r 8000 -c 1 -e ima-adpcm
syn ms_adpcm_8k_stereo.wav    0.1013 -r 8000 -c 2 -e ms-adpcm
syn gsm_8k.wav                0.1013 -r 8000 -c 1 -e gsm-full-rate
syn rifx_s16_8k.wav           0.02 -r 8000  -c 1 -B -e signed-integer -b 16  # big-endian RIFX
syn flac_s24_48k.flac         0.03 -r 48000 -c 1 -b 24
syn flac_s16_8k.flac          0.05 -r 8000  -c 1 -b 16
syn flac_s16_22k_stereo.flac  0.03 -r 22050 -c 2 -b 16
syn vorbis_16k.ogg            0.2  -r 16000 -c 1
syn aiff_s16_16k.aiff         0.03 -r 16000 -c 1 -b 16

# Header variants written by hand from the files above (chunks, RF64, ID3).
python3 variants.py

# Ground truth: soxi for every file it reads; for the few it cannot, the file
# the variant was made from (variants.py lists them in derived.tsv).
{
    printf 'file\tformat\tsample_rate\tchannels\tsamples\ttruth_from\tnote\n'
    for f in *.wav *.flac *.ogg *.aiff; do
        case $f in
            *.wav) fmt=wav ;;
            *.flac) fmt=flac ;;
            *) fmt=other ;;
        esac
        src=$(awk -F'\t' -v f="$f" '$1 == f { print $2 }' derived.tsv)
        note=$(awk -F'\t' -v f="$f" '$1 == f { print $3 }' derived.tsv)
        if soxi -s "$f" >/dev/null 2>&1; then
            from=soxi
            t=$f
        else
            [ -n "$src" ] || { echo "soxi cannot read $f and it has no source" >&2; exit 1; }
            from="soxi:$src"
            t=$src
        fi
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$f" "$fmt" "$(soxi -r "$t")" "$(soxi -c "$t")" \
            "$(soxi -s "$t")" "$from" "${note:--}"
    done
} > truth.tsv
rm derived.tsv
