/* Names of the public enums' values (es_enum_*), as the CLI's options, the JSON
 * reports and the Python binding spell them: the one table each of them reads.
 * Every enum here has the values 0 .. n-1, so a name's index is its value. */
#include <string.h>

#include "equishard/equishard.h"

#define NAMES(...) (const char *const[]){__VA_ARGS__}, sizeof((const char *const[]){__VA_ARGS__}) / sizeof(const char *)

static const struct {
    const char *field;
    const char *const *names;
    size_t n;
} enums[ES_ENUM_COUNT] = {
    [ES_ENUM_ON_ERROR] = {"on_error", NAMES("fail", "skip")},
    [ES_ENUM_PLAN_MODE] = {"mode", NAMES("shard", "batch", "reshard")},
    [ES_ENUM_REMAINDER] = {"remainder", NAMES("pad", "drop", "carry")},
    [ES_ENUM_COMPRESS] = {"compress", NAMES("none", "gzip", "zstd", "snappy", "auto")},
    [ES_ENUM_LOADER] = {"loader", NAMES("cosyvoice", "wenet")},
    [ES_ENUM_CHECK] = {"check", NAMES("missing_utt_emb", "missing_spk_emb", "wrong_dim", "nan",
                                      "inf", "zero_norm", "abnormal_norm", "far_from_centroid",
                                      "spk_mean_mismatch", "duplicate_vector", "duplicate_audio",
                                      "unreadable", "filtered", "imbalance")},
    [ES_ENUM_DEVICE] = {"device", NAMES("auto", "cpu", "cuda")},
    [ES_ENUM_DTYPE] = {"dtype", NAMES("float32", "float16", "bfloat16")},
    [ES_ENUM_KIND] = {"kind", NAMES("utt", "spk", "data")},
    /* src/loader/cost_model.h's es_filter_reason, in its order */
    [ES_ENUM_FILTER_REASON] = {"filter_reason",
                               NAMES("kept", "no_audio", "too_short", "too_long", "too_few_tokens",
                                     "too_many_tokens", "no_speech_token", "ratio_low",
                                     "ratio_high", "bad_text")},
    [ES_ENUM_COST_TERM] = {"cost_term", NAMES("w_frames", "w_frames_sq", "w_text", "w_speech_tokens",
                                              "w_missing_emb", "w_overhead", "w_batch")},
};

/* The tables above follow the header's enums; a value added there must be named here. */
_Static_assert(ES_ON_ERROR_SKIP == 1 && ES_PLAN_RESHARD == 2 && ES_REMAINDER_CARRY == 2 &&
                   ES_COMPRESS_AUTO == 4 && ES_LOADER_WENET == 1 && ES_CHECK_COUNT == 14 &&
                   ES_DEVICE_CUDA == 2 && ES_DTYPE_BF16 == 2 && ES_KIND_DATA == 2 &&
                   ES_TERM_COUNT == 7,
               "a public enum changed: update src/core/enum_names.c");

ES_API const char *es_enum_field(int e)
{
    return e >= 0 && e < ES_ENUM_COUNT ? enums[e].field : NULL;
}

ES_API size_t es_enum_size(int e)
{
    return e >= 0 && e < ES_ENUM_COUNT ? enums[e].n : 0;
}

ES_API const char *es_enum_name(int e, int v)
{
    return v >= 0 && (size_t)v < es_enum_size(e) ? enums[e].names[v] : NULL;
}

ES_API int es_enum_value(int e, const char *name, int *v)
{
    for (size_t i = 0; name && i < es_enum_size(e); i++)
        if (!strcmp(name, enums[e].names[i])) {
            *v = (int)i;
            return ES_OK;
        }
    return ES_ERR_USAGE;
}
