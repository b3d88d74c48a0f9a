/* Fuzzes the manifest parsers (WeNet raw list, Kaldi wav.scp/text/utt2spk/
 * segments) on arbitrary bytes: a clean error or items, never a crash or leak. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "readers/manifest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void write_file(const char *path, const uint8_t *data, size_t size)
{
    FILE *fp = fopen(path, "wb");
    if (!fp)
        return;
    fwrite(data, 1, size, fp);
    fclose(fp);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char dir[64], path[128];
    snprintf(dir, sizeof dir, "/tmp/es-fuzz-manifest-%ld", (long)getpid());
    mkdir(dir, 0700);
    es_context ctx = {0};
    es_manifest *m = NULL;

    snprintf(path, sizeof path, "%s/raw.list", dir);
    write_file(path, data, size);
    if (es_rawlist_parse(&ctx, path, &m) == ES_OK)
        es_manifest_free(m);
    unlink(path);

    /* The same bytes as every Kaldi file at once: keys, paths and segments. */
    static const char *const files[] = {"wav.scp", "text", "utt2spk", "segments"};
    for (size_t i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        write_file(path, data, size);
    }
    if (es_kaldi_parse(&ctx, dir, &m) == ES_OK)
        es_manifest_free(m);
    for (size_t i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        unlink(path);
    }
    rmdir(dir);
    return 0;
}
