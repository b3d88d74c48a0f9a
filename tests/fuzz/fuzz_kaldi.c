/* Fuzzes the Kaldi directory reader: the input is split at each "\n---\n" into
 * wav.scp, text, utt2spk and segments (in that order; missing parts make no
 * file) of a per-process folder, which es_kaldi_parse reads. A clean error or
 * items, never a crash or leak. (fuzz_rawlist feeds the same bytes to every
 * file; this one lets the files disagree.) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "readers/manifest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const files[] = {"wav.scp", "text", "utt2spk", "segments"};
    static const char sep[] = "\n---\n";
    char dir[64], path[128];
    snprintf(dir, sizeof dir, "/tmp/es-fuzz-kaldi-%ld", (long)getpid());
    mkdir(dir, 0700);
    size_t at = 0;
    for (size_t i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        unlink(path);
        if (at > size || (i > 0 && at == size))
            continue;
        size_t end = at;
        while (end < size && !(size - end >= 5 && memcmp(data + end, sep, 5) == 0))
            end++;
        FILE *fp = fopen(path, "wb");
        if (fp) {
            fwrite(data + at, 1, end - at, fp);
            fclose(fp);
        }
        at = end + 5;
    }
    es_context ctx = {0};
    es_manifest *m = NULL;
    if (es_kaldi_parse(&ctx, dir, &m) == ES_OK)
        es_manifest_free(m);
    for (size_t i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        unlink(path);
    }
    rmdir(dir);
    return 0;
}
