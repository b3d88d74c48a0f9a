/* equishard — even multi-GPU training data, planned before training starts.
 *
 * This is the library's only public header. The `equishard` command-line tool
 * uses nothing else, and neither should you.
 *
 * Conventions
 * - Every function that can fail returns an es_status (0 = ES_OK, negative =
 *   error) and leaves a one-line message naming file, member/row and problem in
 *   its context: es_errmsg(ctx).
 * - The library never prints and never exits.
 * - Objects are opaque; `*_free` accepts NULL. Strings returned by the library
 *   are owned by the object they came from and live as long as it does.
 * - Settings structs are filled with defaults by `*_defaults()` first; set only
 *   what you change. Unknown future fields keep their defaults that way.
 * - Thread safety: a context and the objects made with it may be used by one
 *   thread at a time; different contexts are independent. Functions that run in
 *   parallel internally (es_measure) use OpenMP threads of their own.
 */
#ifndef EQUISHARD_H
#define EQUISHARD_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(ES_BUILDING_LIBRARY) && defined(__GNUC__)
#define ES_API __attribute__((visibility("default")))
#else
#define ES_API
#endif

/* ---- status and context ---------------------------------------------------- */

typedef enum es_status {
    ES_OK = 0,
    ES_ERR_USAGE = -1,       /* invalid argument or setting */
    ES_ERR_IO = -2,          /* a file could not be opened, read or written */
    ES_ERR_FORMAT = -3,      /* input is malformed (truncated, corrupt, bad header) */
    ES_ERR_UNSUPPORTED = -4, /* input is well-formed but of a kind we do not read */
    ES_ERR_NOMEM = -5,       /* out of memory */
    ES_ERR_INTERNAL = -6,    /* a bug: please report it */
} es_status;

/* Version string, e.g. "0.1.0". */
ES_API const char *es_version(void);

/* Name of a status code ("ES_ERR_FORMAT"); never NULL. */
ES_API const char *es_status_name(int status);

/* A context carries the last error message. Returns NULL when out of memory. */
typedef struct es_context es_context;
ES_API es_context *es_context_new(void);
ES_API void es_context_free(es_context *ctx);

/* The message of the last failed call on ctx ("" when none). Owned by ctx, valid
 * until the next call that uses ctx. */
ES_API const char *es_errmsg(const es_context *ctx);

/* ---- the cost table: one row per utterance (DESIGN.md §4, §5) --------------- */

/* Row flags: what an utterance has, and problems found while measuring it. */
enum {
    ES_FLAG_AUDIO = 1u << 0,       /* audio was found and probed */
    ES_FLAG_TEXT = 1u << 1,        /* a transcript was found */
    ES_FLAG_UTT_EMB = 1u << 2,     /* an utt_embedding is present */
    ES_FLAG_SPK_EMB = 1u << 3,     /* an spk_embedding is present */
    ES_FLAG_HASHED = 1u << 4,      /* `hash` holds the xxh3-64 of the audio bytes */
    ES_FLAG_TRUNCATED = 1u << 5,   /* audio header claims more data than present */
    ES_FLAG_ESTIMATED = 1u << 6,   /* samples are an estimate (mp3, unknown size) */
    ES_FLAG_UNSUPPORTED = 1u << 7, /* audio present but of a format we cannot probe */
    ES_FLAG_SEGMENT = 1u << 8,     /* samples come from a segment (start/end) */
    ES_FLAG_ITEM = 1u << 9,        /* the row is a list entry of its own (raw-list line,
                                      Kaldi entry): loaders partition such lists by row,
                                      not by shard */
};

/* Name of flag bit number `bit` (0 = ES_FLAG_AUDIO, 1 = ES_FLAG_TEXT, …; not the
 * mask value) as the table's `flags` column spells it, or NULL past the last.
 * In bit order: audio, text, utt_emb, spk_emb, hashed, truncated, estimated,
 * unsupported, segment, item. The column holds them joined by ',', or '-' for none. */
ES_API const char *es_flag_name(unsigned bit);

/* One row. Strings are owned by the table the row was read from. */
typedef struct es_cost_row {
    const char *key;       /* utterance id */
    const char *shard;     /* the shard-list entry (tar/parquet path, raw list, Kaldi dir) */
    uint64_t pos;          /* position inside the shard: utterance ordinal (tar),
                              line (raw list), entry (Kaldi wav.scp/segments); from 0 */
    uint32_t sample_rate;  /* Hz; 0 when unknown */
    uint32_t channels;
    uint64_t samples;      /* per channel, exact (equals `soxi -s`) */
    uint64_t audio_bytes;  /* size of the audio object in bytes */
    uint32_t text_len;     /* Unicode code points of the transcript */
    uint32_t speech_tokens;/* CosyVoice speech_token count; 0 when unknown */
    const char *spk;       /* speaker id, "" when unknown */
    uint32_t flags;        /* ES_FLAG_* */
    uint64_t hash;         /* xxh3-64 of the audio bytes when ES_FLAG_HASHED, else 0 */
} es_cost_row;

typedef struct es_cost_table es_cost_table;

ES_API void es_cost_table_free(es_cost_table *t);
ES_API size_t es_cost_table_size(const es_cost_table *t);
/* Fills *row with row i (i < size). Returns ES_ERR_USAGE when i is out of range. */
ES_API int es_cost_table_row(const es_cost_table *t, size_t i, es_cost_row *row);

/* Writes the table as TSV: a first line "#equishard-costs v1", a header row naming
 * the columns, then one row per utterance. When path ends in ".zst" the file is
 * zstd-compressed. Written to a temporary name in the same folder and renamed into
 * place, so an interrupted write leaves any previous file intact. */
ES_API int es_cost_table_write(es_context *ctx, const es_cost_table *t, const char *path);

/* Writes the table to an open file descriptor (e.g. 1 for standard output), in
 * the same format, zstd-compressed when `zstd` is nonzero. Not atomic: the caller
 * owns the descriptor, which stays open. */
ES_API int es_cost_table_write_fd(es_context *ctx, const es_cost_table *t, int fd, int zstd);

/* Reads a table written by es_cost_table_write, plain or zstd (detected by content,
 * not by name). Several tables can be concatenated (`cat a.tsv b.tsv`: repeated
 * header lines are accepted). On error *out is NULL. */
ES_API int es_cost_table_read(es_context *ctx, const char *path, es_cost_table **out);

/* Problems that --on-error skip left out of the table, in shard-list order:
 * each is one line "FILE: MEMBER: PROBLEM" (MEMBER may be absent). */
ES_API size_t es_cost_table_skip_count(const es_cost_table *t);
ES_API const char *es_cost_table_skip(const es_cost_table *t, size_t i);

/* ---- measure ------------------------------------------------------------------ */

typedef enum es_on_error {
    ES_ON_ERROR_FAIL = 0, /* the first problem (in shard-list order) fails the call */
    ES_ON_ERROR_SKIP = 1, /* bad shards/utterances are left out and listed as skips */
} es_on_error;

/* Called from the calling thread only, after each shard finishes: done/total shards. */
typedef void (*es_progress_fn)(void *user, size_t done, size_t total);

typedef struct es_measure_settings {
    int threads;            /* OpenMP threads; 0 = OpenMP's default */
    int hash;               /* nonzero: xxh3-64 of every audio object (reads all bytes) */
    es_on_error on_error;
    const char *root;       /* resolve relative paths in lists against this folder;
                               NULL = current directory (as the recipes' loaders do) */
    es_progress_fn progress;
    void *progress_user;
} es_measure_settings;

ES_API void es_measure_defaults(es_measure_settings *s);

/* Measures every utterance reachable from the given inputs. Each input is a shard
 * list (text file, one path per line), a single shard (tar, tar.gz, tar.zst), a
 * Kaldi data directory (wav.scp, text, utt2spk, optional segments) or a WeNet raw
 * list (JSON lines with "key", "wav", "txt", optional "start"/"end" seconds).
 * Formats are detected from content, never from names. Rows come out in input
 * order, shards in list order, members in shard order, whatever the thread count.
 * On success *out owns the table; on failure *out is NULL and es_errmsg says
 * which file, member and problem. */
ES_API int es_measure(es_context *ctx, const es_measure_settings *s,
                      const char *const *inputs, size_t n_inputs, es_cost_table **out);

/* 1 when the file at path is a cost table (plain or zstd; by content), else 0. */
ES_API int es_is_cost_table(const char *path);

/* What commands that take "COSTS | LIST..." do: inputs that are cost tables are
 * read, the others are measured with settings s (see es_measure); the rows are
 * joined in argument order. On failure *out is NULL. */
ES_API int es_load_inputs(es_context *ctx, const es_measure_settings *s,
                          const char *const *inputs, size_t n, es_cost_table **out);

/* ---- cost model and the loader's filter (DESIGN.md §6) ------------------------- */

/* cost(utt) = w_frames·frames + w_text·text_len + w_speech_tokens·speech_tokens
 *           + w_frames_sq·frames² + w_missing_emb·[utt or spk embedding missing]·frames
 *           + w_overhead
 * with frames = floor(samples × frame_rate / sample_rate), the feature frames the
 * loader's dynamic batcher counts. The filter fields are CosyVoice's
 * `processor.filter` in its units: lengths in 10 ms frames (100 per second) of the
 * original audio; token limits apply to text_len (a stand-in for the tokenizer). */
typedef struct es_cost_model {
    double frame_rate;       /* feature frames per second; default 50 (CosyVoice 2) */
    double w_frames;         /* default 1 */
    double w_text;           /* default 0 */
    double w_speech_tokens;  /* default 0 */
    double w_frames_sq;      /* default 0: attention's quadratic term */
    double w_missing_emb;    /* default 0: online embedding extraction, per frame */
    double w_overhead;       /* default 0: per utterance */
    double min_length;       /* default 100 (CosyVoice 2 recipe) */
    double max_length;       /* default 40960 */
    uint32_t token_min_length;      /* default 1 */
    uint32_t token_max_length;      /* default 200 */
    double min_output_input_ratio;  /* default 0.0005: text_len / num_frames */
    double max_output_input_ratio;  /* default 1 */
    int require_speech_token;       /* default 0: drop rows with speech_tokens == 0 */
} es_cost_model;

ES_API void es_cost_model_defaults(es_cost_model *m);

/* ---- plan: equal work and equal batch counts per rank (DESIGN.md §7) ----------- */

typedef enum es_plan_mode {
    ES_PLAN_SHARD = 0, /* whole shards (list entries) to ranks, then to workers */
    ES_PLAN_BATCH = 1, /* utterances packed into batches, equal batch counts per rank */
    ES_PLAN_RESHARD = 2, /* rewrite into equal-cost shards (count a multiple of K×W) */
} es_plan_mode;

/* What batch mode does with the batches left over when their count is not a
 * multiple of world_size. Reported either way; nothing is dropped silently. */
typedef enum es_remainder {
    ES_REMAINDER_PAD = 0,   /* repeat the cheapest batches up to the next multiple */
    ES_REMAINDER_DROP = 1,  /* leave the cheapest batches out of this epoch */
    ES_REMAINDER_CARRY = 2, /* leave them out and list them for the next epoch */
} es_remainder;

typedef struct es_plan_settings {
    uint32_t world_size;          /* K ranks; required (>= 1) */
    uint32_t workers;             /* W data-loader workers per rank; default 1 */
    es_plan_mode mode;            /* default ES_PLAN_SHARD */
    es_cost_model model;          /* es_cost_model_defaults() */
    uint64_t max_frames_in_batch; /* dynamic batching budget; default 2000 */
    uint32_t batch_size;          /* > 0: static batches of this many utterances */
    uint32_t sort_size;           /* loader's sort buffer, for batch predictions; default 500 */
    es_remainder remainder;       /* batch mode; default ES_REMAINDER_PAD */
    uint64_t seed;                /* step order in batch mode; default 0 */
    int64_t epoch;                /* mixed into the seed; default 0 */
    uint32_t shards_per_worker;   /* reshard: shards per rank and worker; 0 = choose */
} es_plan_settings;

typedef struct es_plan es_plan;

ES_API void es_plan_defaults(es_plan_settings *s);

/* Plans the table's utterances. Rows the loader's filter drops are counted per
 * reason and left out. Same table and settings give the same plan. */
ES_API int es_plan_build(es_context *ctx, const es_plan_settings *s, const es_cost_table *t,
                         es_plan **out);
ES_API void es_plan_free(es_plan *p);

typedef struct es_plan_metrics {
    double imbalance;        /* max/mean - 1 of rank cost */
    double lower_bound;      /* shard mode: max(total/K, largest shard); else total/K */
    double lower_bound_gap;  /* max rank cost / lower_bound - 1 */
    double step_straggler;   /* batch mode: mean over steps of max/mean step cost; else 0 */
    double retention;        /* K × min batches / total batches (under the join) */
    uint64_t batch_spread;   /* max - min batches over ranks */
    uint64_t total_batches;
    uint64_t steps;          /* batch mode: batches per rank */
    uint64_t kept;           /* distinct utterances planned (pad repeats not counted
                                again; dropped/carried remainder not included) */
    uint64_t filtered;       /* utterances the loader's filter drops (all reasons) */
    uint64_t remainder_batches;    /* batch mode: batches padded, dropped or carried */
    uint64_t remainder_utterances; /* … and the utterances in them */
    const char *method;      /* partitioning method kept ("kk+swap", "lpt+swap", …) */
} es_plan_metrics;

ES_API void es_plan_get_metrics(const es_plan *p, es_plan_metrics *m);

/* Utterances dropped by the filter for one reason; `reason` indexes the names
 * es_filter_reason_name_at gives (1 .. es_filter_reason_count()-1). */
ES_API size_t es_filter_reason_count(void);
ES_API const char *es_filter_reason_name_at(size_t reason);
ES_API uint64_t es_plan_filtered(const es_plan *p, size_t reason);

typedef struct es_plan_load {
    double cost;
    uint64_t utterances, frames, batches;
} es_plan_load;

/* Load of a rank, or of one of its workers. ES_ERR_USAGE when out of range. */
ES_API int es_plan_rank_load(const es_plan *p, uint32_t rank, es_plan_load *out);
ES_API int es_plan_worker_load(const es_plan *p, uint32_t rank, uint32_t worker,
                               es_plan_load *out);

/* Writes OUTDIR: plan.json, and per mode rank-00000.list + rank-00000.worker-0.list
 * (shard) or rank-00000.batches.jsonl (batch). `inputs` (may be NULL) are the
 * files the table came from; plan.json records their xxh3-64. OUTDIR is built
 * under a temporary name beside it and renamed into place when complete (an
 * existing OUTDIR is swapped out atomically and removed). */
ES_API int es_plan_write(es_context *ctx, const es_plan *p, const es_cost_table *t,
                         const char *outdir, const char *const *inputs, size_t n_inputs);

#ifdef __cplusplus
}
#endif
#endif
