/* Fuzzes es_calibrate's step-log reader and fit on arbitrary bytes (a trainer's
 * JSON lines) against a small fixed table: a clean one-line error or
 * a fit, never a crash, a leak, or a non-finite weight. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "costs/cost_table.h"
#include "equishard/equishard.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static es_cost_table *table(void)
{
    static const char *const keys[] = {"a", "b", "c", "d", "e", "f"};
    es_cost_table *t = es_cost_table_new();
    for (size_t i = 0; t && i < 6; i++) {
        es_cost_row r = {keys[i], "s.tar", i, 16000, 1, 16000 * (i + 1), 100, (uint32_t)(3 * i),
                         (uint32_t)(i % 2 * 25), "spk", ES_FLAG_AUDIO | ES_FLAG_TEXT |
                         (i % 3 ? ES_FLAG_UTT_EMB | ES_FLAG_SPK_EMB : 0), 0, 0};
        es_cost_table_append(t, &r);
    }
    return t;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64];
    snprintf(path, sizeof path, "/tmp/es-fuzz-steps-%ld.jsonl", (long)getpid());
    FILE *fp = fopen(path, "wb");
    if (!fp)
        return 0;
    fwrite(data, 1, size, fp);
    fclose(fp);
    es_cost_table *t = table();
    es_context *ctx = es_context_new();
    es_calibrate_settings s;
    es_calibrate_defaults(&s);
    s.warmup = 0;
    s.holdout_every = 2;
    es_calibration *c = NULL;
    const char *logs[] = {path};
    if (es_calibrate(ctx, &s, t, logs, 1, &c) == ES_OK) {
        es_calibration_info in;
        es_calibration_get_info(c, &in);
        if (!isfinite(in.model.w_frames) || in.model.w_frames < 0 || !isfinite(in.model.w_batch))
            abort();
        es_calibration_free(c);
    } else if (strchr(es_errmsg(ctx), '\n')) {
        abort(); /* errors are one line */
    }
    es_context_free(ctx);
    es_cost_table_free(t);
    unlink(path);
    return 0;
}
