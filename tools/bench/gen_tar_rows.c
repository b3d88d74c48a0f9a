/* Many rows, little audio: a WeNet tar shard of tiny utterances on standard
 * output, for measuring `equishard measure` at 10 M rows without 10 M real
 * recordings (tools/bench/bench_measure_stream.sh pipes it through zstd).
 *
 *   gen_tar_rows SHARD UTTS > shard.tar
 *
 * Per utterance, as WeNet's shards hold them: `KEY.txt` (a short transcript)
 * then `KEY.wav` (16 kHz mono PCM16, canonical 44-byte header, 1-200 samples
 * so the member fits one tar block). Keys are S<speaker>_<shard>_<n>; what
 * measure costs per row (header parsing, the row, its key) is as for real
 * audio, only the bytes skipped are fewer. Same arguments, same bytes. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint32_t next(void)
{
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return (uint32_t)((rng * 0x2545f4914f6cdd1dull) >> 32);
}

/* One ustar member: header block, data, zero padding to 512. */
static void member(const char *name, const void *data, size_t n)
{
    unsigned char h[512] = {0};
    snprintf((char *)h, 100, "%s", name);
    memcpy(h + 100, "0000644", 8);
    memcpy(h + 108, "0000000", 8);
    memcpy(h + 116, "0000000", 8);
    snprintf((char *)h + 124, 12, "%011o", (unsigned)n);
    memcpy(h + 136, "00000000000", 12);
    h[156] = '0';
    memcpy(h + 257, "ustar", 6);
    memcpy(h + 263, "00", 2);
    memset(h + 148, ' ', 8);
    unsigned sum = 0;
    for (int i = 0; i < 512; i++)
        sum += h[i];
    snprintf((char *)h + 148, 8, "%06o", sum);
    h[155] = ' ';
    static const unsigned char zeros[512];
    fwrite(h, 1, 512, stdout);
    fwrite(data, 1, n, stdout);
    fwrite(zeros, 1, (512 - n % 512) % 512, stdout);
}

static size_t wav(unsigned char *b, uint32_t samples)
{
    uint32_t data = samples * 2, v;
    memcpy(b, "RIFF", 4);
    v = 36 + data;
    memcpy(b + 4, &v, 4);
    memcpy(b + 8, "WAVEfmt ", 8);
    const unsigned char fmt[16] = {16, 0, 0, 0, 1, 0, 1, 0, 0x80, 0x3e, 0, 0, 0, 0x7d, 0, 0};
    memcpy(b + 16, fmt, 16);
    const unsigned char align[4] = {2, 0, 16, 0};
    memcpy(b + 32, align, 4);
    memcpy(b + 36, "data", 4);
    memcpy(b + 40, &data, 4);
    memset(b + 44, 0, data);
    return 44 + data;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: gen_tar_rows SHARD UTTS > shard.tar\n");
        return 2;
    }
    unsigned long shard = strtoul(argv[1], NULL, 10), utts = strtoul(argv[2], NULL, 10);
    rng += shard * 0x100000001b3ull;
    static const char *const words[] = {"the", "river", "garden", "morning", "silver", "harbour",
                                        "lantern", "meadow", "kettle", "winter", "station"};
    unsigned char audio[512];
    char name[128], text[128];
    for (unsigned long i = 0; i < utts; i++) {
        snprintf(name, sizeof name, "S%04lu_%06lu_%07lu", i / 300, shard, i);
        size_t len = 0;
        for (uint32_t w = 0, nw = 2 + next() % 6; w < nw; w++)
            len += (size_t)snprintf(text + len, sizeof text - len, "%s%s", w ? " " : "",
                                    words[next() % 11]);
        char member_name[160];
        snprintf(member_name, sizeof member_name, "%s.txt", name);
        member(member_name, text, len);
        snprintf(member_name, sizeof member_name, "%s.wav", name);
        member(member_name, audio, wav(audio, 1 + next() % 200));
    }
    static const unsigned char end[1024];
    fwrite(end, 1, sizeof end, stdout);
    return ferror(stdout) ? 1 : 0;
}
