/* equishard — even multi-GPU training data, planned before training starts.
 *
 * This is the library's stable public header: what a data pipeline needs
 * (context, measure, cost tables, plan, simulate, describe, validate, the
 * recipe's tokenizer and yaml, the row reader, calibrate, version and ABI).
 * equishard_experimental.h adds what the `equishard` command and the tests use
 * beyond it (the multi-process steps, streamed measure, descriptor outputs,
 * temporaries); that tier is for static linking only and may change in any
 * release. The command-line tool uses nothing but these two headers.
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
 * - ABI (see "version and ABI" below): every struct that has a `*_defaults()`
 *   (es_measure_settings, es_cost_model, es_plan_settings, es_simulate_settings,
 *   es_validate_settings, es_validate_data_settings) ends in
 *   `uint64_t reserved[8]`. A new field of a minor version is carved out of that
 *   reserve (one uint64_t for an 8-byte field, or two 4-byte fields), so the
 *   struct keeps its size and every existing field its offset, including where
 *   es_cost_model is embedded (es_plan_settings, es_simulate_settings,
 *   es_validate_data_settings). Leave the reserve as *_defaults() left it (zero).
 *   Every other struct (the es_emb_* inputs, and the rows, metrics, loads, infos
 *   and findings the library fills) changes layout only with a new
 *   ES_VERSION_MAJOR.
 *   es_abi_layout() lists every public struct's size and fields' offsets, so a
 *   binding can check its own copy of the layouts (python/equishard does, in
 *   tests/python/test_abi.py).
 * - A plan borrows its table: es_plan_build keeps a pointer to `t`, which must
 *   outlive the plan (es_plan_write, es_plan_rank_shard and es_plan_batch_info
 *   read it). Simulate and validate results own copies of what they name.
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

/* ---- version and ABI ---------------------------------------------------------- */

/* The version of this header. The library's own (es_version_number) may be newer:
 * a program built against MAJOR.MINOR runs with any library MAJOR.x, x >= MINOR. */
#define ES_VERSION_MAJOR 0
#define ES_VERSION_MINOR 1
#define ES_VERSION_PATCH 0
#define ES_VERSION_NUMBER (ES_VERSION_MAJOR * 10000 + ES_VERSION_MINOR * 100 + ES_VERSION_PATCH)

/* The library's version as MAJOR * 10000 + MINOR * 100 + PATCH (ES_VERSION_NUMBER
 * of the header it was built with), and as a string, e.g. "0.1.0". Never NULL;
 * static storage. */
ES_API unsigned es_version_number(void);
ES_API const char *es_version(void);

/* One row of the layout table: the struct's own size (field NULL, offset 0) or
 * one field's offset and size, in bytes, as this library was compiled. */
typedef struct es_abi_field {
    const char *struct_name; /* "es_plan_settings" */
    const char *field;       /* "world_size"; NULL for the struct's own row */
    size_t offset;           /* offsetof(struct, field); 0 for the struct's row */
    size_t size;             /* sizeof the field, or of the struct */
} es_abi_field;

/* Every public struct with a body in this header: its own row, then one row per
 * field in declaration order (a field declared `a, b;` is two rows; an array is
 * one row of its whole size). *count gets the number of rows (may be NULL).
 * Static storage; never NULL. The table is generated from this header's
 * struct bodies when the library is built (tools/gen_abi_layout.py), so a
 * struct or field added here is in it; python/equishard/_ffi.py mirrors it by
 * hand (a ctypes class and an "es_x" entry of STRUCTS), and
 * tests/python/test_abi.py fails until it follows the header. */
ES_API const es_abi_field *es_abi_layout(size_t *count);

/* Name of a status code ("ES_ERR_FORMAT"); never NULL. */
ES_API const char *es_status_name(int status);

/* A context carries the last error message. Returns NULL when out of memory. */
typedef struct es_context es_context;
ES_API es_context *es_context_new(void);
ES_API void es_context_free(es_context *ctx);

/* The message of the last failed call on ctx ("" when none). Owned by ctx, valid
 * until the next call that uses ctx. */
ES_API const char *es_errmsg(const es_context *ctx);

/* Context settings: how calls on a context may use the machine, one setting
 * per call, by name, its value spelled as the environment spells it. The
 * defaults (all on, the best CPU backend) suit a training job; the library
 * reads no environment for them. The CLI sets them from EQUISHARD_HUGE_PAGES,
 * EQUISHARD_PAGES_AHEAD, EQUISHARD_DIRECT_IO and EQUISHARD_CPU_ISA
 * (docs/USAGE.md, "Environment"),
 * the Python binding from os.environ when it makes a context. Threads the
 * library starts for a call use the settings of that call's context.
 * "huge_pages": big arrays (the table's rows and strings, the planner's
 * per-row arrays, validate's matrices) ask the kernel for transparent huge
 * pages (MADV_HUGEPAGE); "0" where its synchronous compaction stalls a run.
 * "pages_ahead": a helper thread maps and touches a big array's fresh pages
 * ahead of the thread filling it (the planner, the table reader); "0" for A/B
 * timings. "direct_io": big output files (rank files, costs.tsv.zst) written
 * with O_DIRECT where the file system takes it; "0" writes them buffered, the
 * same bytes. For these three, "0" turns the setting off and any other value
 * (NULL included) on. "cpu_isa": validate's CPU backend at most this one
 * ("generic", "avx2", "avx512"; NULL or "" the best this CPU runs; a name it
 * does not know also means the best); ES_ERR_USAGE for a value of 16 bytes or
 * more. ES_ERR_USAGE for another name (or a NULL ctx or name), the context
 * unchanged. (A test seam beside them: es_context_set_test_hook,
 * equishard_experimental.h.) */
ES_API int es_context_set(es_context *ctx, const char *name, const char *value);

/* ---- names of enum values --------------------------------------------------- */

/* The public enums whose values have names, as the CLI's options, the JSON
 * reports and the Python binding's keyword arguments spell them. Each enum's
 * values are 0 .. es_enum_size(e) - 1. (es_status has es_status_name; flags
 * have es_flag_name.) */
typedef enum es_enum {
    ES_ENUM_ON_ERROR = 0, /* es_on_error:  "fail", "skip" */
    ES_ENUM_PLAN_MODE,    /* es_plan_mode: "shard", "batch", "reshard" */
    ES_ENUM_REMAINDER,    /* es_remainder: "pad", "drop", "carry" */
    ES_ENUM_COMPRESS,     /* es_compress:  "none", "gzip", "zstd", "snappy", "auto" */
    ES_ENUM_LOADER,       /* es_loader:    "cosyvoice", "wenet" */
    ES_ENUM_CHECK,        /* es_check:     "missing_utt_emb", "missing_spk_emb", … */
    ES_ENUM_DEVICE,       /* es_device:    "auto", "cpu", "cuda" */
    ES_ENUM_DTYPE,        /* es_dtype:     "float32", "float16", "bfloat16" */
    ES_ENUM_KIND,         /* es_kind:      "utt", "spk", "data" */
    ES_ENUM_FILTER_REASON,/* why the loader's filter drops an utterance: "kept" (0:
                             it does not), "no_audio", "too_short", "too_long",
                             "too_few_tokens", "too_many_tokens", "no_speech_token",
                             "ratio_low", "ratio_high", "bad_text"; the index of
                             es_plan_metrics.filtered_by_reason, filtered.tsv's reason */
    ES_ENUM_COST_TERM,    /* es_cost_term: "w_frames", "w_frames_sq", "w_text",
                             "w_speech_tokens", "w_missing_emb", "w_overhead",
                             "w_batch" (the model's field and model.json's key) */
    ES_ENUM_COUNT
} es_enum;

/* The settings field (or report key) that holds a value of e: "on_error", "mode",
 * "remainder", "compress", "loader", "check", "device", "dtype", "kind",
 * "filter_reason", "cost_term"; NULL
 * past the last. */
ES_API const char *es_enum_field(int e);
/* Number of values of e; 0 for an unknown e. */
ES_API size_t es_enum_size(int e);
/* The name of value v of e, or NULL when either is unknown. Static storage. */
ES_API const char *es_enum_name(int e, int v);
/* The value named `name` in *v: ES_OK, or ES_ERR_USAGE (*v untouched) when e or
 * name is unknown or name is NULL. Names are matched exactly (lower case). */
ES_API int es_enum_value(int e, const char *name, int *v);

/* ---- the cost table: one row per utterance (docs/COST_TABLE.md) ------------- */

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
    ES_FLAG_BAD_TEXT = 1u << 10,   /* the transcript (tar .txt, parquet text) is not
                                      valid UTF-8: the loaders
                                      drop the utterance (WeNet's txt.decode('utf8')
                                      raises), so text_len and text_tokens are 0 and
                                      the filter's reason is "bad_text" */
    ES_FLAG_NO_TOKENS = 1u << 11,  /* the tokenizer gives the (non-empty) transcript no
                                      token: text_tokens 0 is a count, not "unknown"
                                      (WeNet's label of a whitespace-only txt, or of
                                      unknown symbols without <unk>); the token
                                      filters see 0 */
};

/* Name of flag bit number `bit` (0 = ES_FLAG_AUDIO, 1 = ES_FLAG_TEXT, …; not the
 * mask value) as the table's `flags` column spells it, or NULL past the last.
 * In bit order: audio, text, utt_emb, spk_emb, hashed, truncated, estimated,
 * unsupported, segment, item, bad_text, no_tokens. The column holds them joined by ',', or '-' for none. */
ES_API const char *es_flag_name(unsigned bit);

/* One row. Strings are owned by the table the row was read from. */
typedef struct es_cost_row {
    const char *key;       /* utterance id */
    const char *shard;     /* the shard-list entry (tar/parquet path, raw list, Kaldi dir) */
    uint64_t pos;          /* position inside the shard: utterance ordinal (tar), row
                              (parquet), line (raw list), entry (Kaldi wav.scp/segments);
                              from 0 */
    uint32_t sample_rate;  /* Hz; 0 when unknown */
    uint32_t channels;
    uint64_t samples;      /* per channel, exact (equals `soxi -s`) */
    uint64_t audio_bytes;  /* size of the audio object in bytes */
    uint32_t text_len;     /* Unicode code points of the transcript */
    uint32_t speech_tokens;/* CosyVoice speech_token count; 0 when unknown */
    const char *spk;       /* speaker id, "" when unknown */
    uint32_t flags;        /* ES_FLAG_* */
    uint64_t hash;         /* xxh3-64 of the audio bytes when ES_FLAG_HASHED, else 0 */
    uint32_t text_tokens;  /* ids the recipe's tokenizer gives the transcript (measure
                              with a tokenizer); 0 = not counted, unless text_len is 0
                              (an empty transcript has no tokens whatever the tokenizer)
                              or the row has ES_FLAG_NO_TOKENS */
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

/* Starts compressing the table, exactly as es_cost_table_write writes a ".zst"
 * path, on a thread of its own into memory the table holds (about a seventh of
 * the TSV's size), and returns at once. A batch-mode es_plan_write then writes
 * those bytes as OUTDIR/costs.tsv.zst instead of compressing the table itself,
 * so a caller with a spare core has that work done while es_plan_build runs
 * (the CLI's `plan --mode batch` does). Only worth it before a batch-mode write:
 * nothing else uses the image. The table must not change afterwards (nothing in
 * this API changes a table once read); es_cost_table_free waits for the thread.
 * Returns ES_OK, also when no thread could be had (the write then compresses, as
 * without this call); ES_ERR_USAGE without a table. */
ES_API int es_cost_table_compress_ahead(es_context *ctx, es_cost_table *t);

/* Reads a table written by es_cost_table_write, plain or zstd (detected by content,
 * not by name). Several tables can be concatenated (`cat a.tsv b.tsv`: repeated
 * header lines are accepted). On error *out is NULL. */
ES_API int es_cost_table_read(es_context *ctx, const char *path, es_cost_table **out);

/* Problem i that --on-error skip left out of the table, in shard-list order:
 * one line "FILE: MEMBER: PROBLEM" (MEMBER may be absent); NULL past the last
 * (their count is the first i that gives NULL). */
ES_API const char *es_cost_table_skip(const es_cost_table *t, size_t i);

/* The shard file `shard` (as the table's `shard` column names it) as measure
 * found it before reading it: its size in bytes and modification time
 * (the shard_size and shard_mtime columns), for a reader to tell whether the
 * file changed since. Returns 1 and fills *size, *mtime_s and *mtime_ns, or 0
 * when the table does not record it (raw-list and Kaldi rows, older tables). */
ES_API int es_cost_table_shard_file(const es_cost_table *t, const char *shard, uint64_t *size,
                                    int64_t *mtime_s, uint32_t *mtime_ns);

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
    struct es_tokenizer *tokenizer; /* NULL: text_tokens unknown; else every transcript
                               is counted with it (borrowed; es_measure's threads
                               share it read-only, each with a cache of its own) */
    es_progress_fn read_progress; /* es_load_inputs: called from the calling thread
                               as the inputs that are cost tables are read:
                               done/total bytes, total their files' sizes (.zst:
                               compressed), every 4 MiB and after each table;
                               done reaches total when all are read. NULL: none
                               (minor 1) */
    void *read_progress_user; /* its first argument (borrowed) */
    uint64_t reserved[5];   /* see "ABI" at the top */
} es_measure_settings;

ES_API void es_measure_defaults(es_measure_settings *s);

/* Measures every utterance reachable from the given inputs. Each input is a shard
 * list (text file, one path per line), a single shard (tar, tar.gz, tar.zst, or a
 * CosyVoice parquet file), a
 * Kaldi data directory (wav.scp, text, utt2spk, optional segments) or a WeNet raw
 * list (JSON lines with "key", "wav", "txt", optional "start"/"end" seconds).
 * Formats are detected from content, never from names. Rows come out in input
 * order, shards in list order, members in shard order, whatever the thread count.
 * Refused as a whole, whatever on_error says: a shard list whose first entry
 * (resolved against s->root) is not there, and a JSON-lines list whose first
 * object has neither "key" nor "wav" (another toolkit's manifest).
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

/* ---- cost model and the loader's filter (docs/COST_MODEL.md) ------------------- */

/* cost(utt) = w_frames·frames + w_text·text_len + w_speech_tokens·speech_tokens
 *           + w_frames_sq·frames² + w_missing_emb·[utt or spk embedding missing]·frames
 *           + w_overhead
 * with frames = floor(samples × frame_rate / sample_rate), the feature frames the
 * loader's dynamic batcher counts. A batch (batch mode) costs its padded terms,
 * n × the longest, plus w_batch: es_cost_term below; `equishard
 * calibrate` fits the weights to logged step times (docs/COST_MODEL.md). The filter fields are CosyVoice's
 * `processor.filter` in its units: lengths in 10 ms frames (100 per second) of the
 * original audio; token limits apply to text_tokens, the recipe tokenizer's count
 * (or text_len: see token_chars). A row flagged ES_FLAG_BAD_TEXT is dropped first. */
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
    int require_speech_token;       /* drop rows with speech_tokens == 0 (CosyVoice's filter
                                       drops len(speech_token) == 0): 1 always, 0 never;
                                       default -1, auto: when the table has speech tokens
                                       at all (CosyVoice parquet, --speech-tokens), not
                                       for tables without any (tar shards, Kaldi dirs).
                                       es_plan_build, es_simulate and es_validate_data
                                       settle it against their table (under the
                                       WeNet loader: never). */
    int token_chars;                /* what the token filters (token_*_length, the ratios)
                                       count: 0 = text_tokens, the recipe tokenizer's ids
                                       (CosyVoice; rows without a count skip those
                                       filters rather than be dropped on a character
                                       count); 1 = text_len (WeNet's character labels);
                                       default -1: settled by the loader like
                                       require_speech_token: CosyVoice 0; WeNet 0
                                       when the table has text_tokens (measured with
                                       its symbol table: the exact label length),
                                       else 1. (It fills the padding
                                       after require_speech_token: the reserve keeps
                                       its offset.) */
    double w_batch;                 /* default 0: per batch (batch mode, and the
                                       calibrated step time's constant; minor 1) */
    const char *source;             /* the model.json the weights came from
                                       (es_cost_model_read: its path argument,
                                       borrowed); NULL when set by hand. plan.json
                                       and simulate's JSON record it */
    uint64_t source_digest;         /* xxh3-64 of that file's bytes; 0 without one */
    uint64_t reserved[5];           /* see "ABI" at the top */
} es_cost_model;

ES_API void es_cost_model_defaults(es_cost_model *m);

/* ---- the cost of a batch, and calibrating the weights ------------------------- */

/* The terms of a batch's cost as the loader pads it (CosyVoice processor.padding
 * pads speech_feat, text_token and speech_token to the batch's longest; WeNet
 * pads feats): for a batch of n rows,
 *   frames       n × max frames            speech_tokens n × max speech_tokens
 *   frames_sq    n × max frames²           missing_emb   Σ frames of rows lacking
 *   text         n × max text_len                        an utt or spk embedding
 *   overhead     n                         batch         1
 * A batch costs Σ w_term × term (w_frames … w_batch of es_cost_model, in this
 * order); a single utterance's cost (shard mode, es_plan_load) is the same with
 * n = 1 and no batch term. */
typedef enum es_cost_term {
    ES_TERM_FRAMES = 0,
    ES_TERM_FRAMES_SQ,
    ES_TERM_TEXT,
    ES_TERM_SPEECH_TOKENS,
    ES_TERM_MISSING_EMB,
    ES_TERM_OVERHEAD,
    ES_TERM_BATCH,
    ES_TERM_COUNT
} es_cost_term;

/* Their names: es_enum_name(ES_ENUM_COST_TERM, term), "w_frames" … "w_batch". */

typedef struct es_calibrate_settings {
    es_cost_model model;     /* frame_rate (frames of the table's rows); the weights
                                are what is fitted (their values are ignored) */
    uint32_t warmup;         /* steps dropped at the start of each rank of each log
                                (lowest step numbers): start-up, allocator growth,
                                autotuning; default 3 */
    uint32_t holdout_every;  /* every n-th usable step, in (log, rank, step) order,
                                is held out of the fit and evaluated; default 5 */
    double outlier_mads;     /* a fitted step whose relative residual lies more than
                                this many scaled MADs (1.4826 × MAD) from the median
                                is dropped and the fit redone once; default 5; 0 = off */
    uint32_t terms;          /* mask of 1 << ES_TERM_*: the terms that may be fitted;
                                default all. Terms without signal in the log (a column
                                of zeros; missing_emb when no row or every row has
                                its embeddings) are left out and get weight 0 */
    const char *time_field;  /* the log's key for the step time; default "seconds" */
    int allow_negative_r2;   /* nonzero: a fit whose held-out R² is below 0 (it predicts
                                the held-out steps worse than their mean time does)
                                is returned; default 0: ES_ERR_FORMAT naming the R² */
    es_progress_fn progress; /* called by es_calibrate from the calling thread as the
                                step logs are read: done/total bytes, total the logs'
                                sizes, every 4 MiB of lines and after each log;
                                done reaches total before the fit (milliseconds:
                                a few columns). NULL: none (minor 1) */
    void *progress_user;     /* its first argument (borrowed) */
    uint64_t reserved[5];    /* see "ABI" at the top */
} es_calibrate_settings;

ES_API void es_calibrate_defaults(es_calibrate_settings *s);

typedef struct es_calibration es_calibration;

/* Reads the step logs (JSON lines {"rank", "step", "keys": [...], "seconds"};
 * other keys ignored; docs/COST_MODEL.md), joins each step's keys to the table's
 * rows, and fits the weights by non-negative least squares (Lawson–Hanson) over
 * per-step sums of the batch's padded terms (es_cost_term),
 * residuals relative to the step time (each row divided by its time: the fit
 * minimises relative error, as reported). ES_ERR_FORMAT naming file and line for
 * a line without rank/step/keys/time, a key the table lacks or names twice
 * (two rows), a time <= 0; ES_ERR_FORMAT for too few usable steps, a
 * degenerate log (all times equal, no term with signal), and a fit that is no
 * model: every weight 0, a weight or figure not finite or above
 * ES_COST_WEIGHT_MAX, a held-out R² below 0 (unless allow_negative_r2).
 * A key in a log may carry `\udcXX` escapes (XX 80-ff) for bytes that are not
 * UTF-8, as Python's json.dumps writes a surrogateescape string (the loaders'
 * step log, batches.jsonl): they stand for the byte XX of the table's key.
 * On failure *out is NULL. */
ES_API int es_calibrate(es_context *ctx, const es_calibrate_settings *s, const es_cost_table *t,
                        const char *const *logs, size_t n_logs, es_calibration **out);
ES_API void es_calibration_free(es_calibration *c);

typedef struct es_calibration_info {
    es_cost_model model;     /* the settings' model with the fitted weights */
    uint32_t terms_fitted;   /* mask of the terms in the fit */
    size_t steps_read;       /* lines of all logs */
    size_t warmup_dropped;
    size_t outliers_dropped; /* by the MAD rule */
    size_t fit_steps, held_out_steps;
    double r2_fit, r2_held_out;        /* 1 - SS_res / SS_tot of step seconds */
    double median_error, p95_error;    /* held-out |predicted / observed - 1| */
    double median_error_fit;           /* the same over the fitted steps */
} es_calibration_info;

typedef struct es_calibration_term {
    const char *name;        /* es_enum_name(ES_ENUM_COST_TERM, term) */
    int fitted;              /* in the fit (has signal, allowed by settings.terms) */
    double weight;           /* seconds per unit of the term */
    double share;            /* its part of the predicted time of the fitted steps */
    double median_error_without; /* held-out median error when fitted without it
                                    (0 when not fitted) */
} es_calibration_term;

/* ES_ERR_USAGE when c or out is NULL, or term is out of range. */
ES_API int es_calibration_get_info(const es_calibration *c, es_calibration_info *out);
ES_API int es_calibration_term_info(const es_calibration *c, int term, es_calibration_term *out);

/* Writes the fitted model as JSON (docs/COST_MODEL.md): weights, frame_rate, the
 * fit's figures, and provenance (the logs' and the `inputs'` paths and xxh3-64;
 * inputs may be NULL). "-" is standard output; a file is written to a temporary
 * name beside it and renamed into place. */
ES_API int es_calibration_write_json(es_context *ctx, const es_calibration *c, const char *path,
                                     const char *const *inputs, size_t n_inputs);

/* The largest weight a model may have (seconds per unit): a batch's terms reach
 * about 1e19 (n x the longest's frames squared) and a rank's sums about 1e31,
 * so costs stay finite with room to spare; a real step is far below 1 s a unit. */
#define ES_COST_WEIGHT_MAX 1e30

/* Reads a model.json written by es_calibration_write_json into *m: frame_rate and
 * every w_* (the filter fields are left as they are); m->source = path (borrowed),
 * m->source_digest = the file's xxh3-64. ES_ERR_IO / ES_ERR_FORMAT naming the
 * file and the problem, also for a model that is none: every weight 0 (every
 * batch free: one rank would get all), a weight above ES_COST_WEIGHT_MAX;
 * *m is unchanged on failure. */
ES_API int es_cost_model_read(es_context *ctx, const char *path, es_cost_model *m);

/* ---- plan: equal work and equal batch counts per rank (docs/PLAN.md) ---------- */

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

/* Compression of the shards reshard writes: the tar filter, or the parquet
 * pages' codec. */
typedef enum es_compress {
    ES_COMPRESS_NONE = 0,   /* plain tar: shards_000000000.tar; parquet: UNCOMPRESSED */
    ES_COMPRESS_GZIP = 1,   /* .tar.gz / GZIP pages, level 6, no timestamp (deterministic) */
    ES_COMPRESS_ZSTD = 2,   /* .tar.zst / ZSTD pages, level 3 */
    ES_COMPRESS_SNAPPY = 3, /* parquet only: SNAPPY pages */
    ES_COMPRESS_AUTO = 4,   /* the default: none for tar, snappy for parquet (pyarrow's
                               default, what make_parquet_list.py writes) */
} es_compress;

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
    uint32_t shards_per_worker;   /* reshard: M, shards per rank and worker; 0 = choose
                                     M = max(1, round(kept / (K·W·1000))), i.e. about
                                     1000 utterances a shard (WeNet's and CosyVoice's
                                     default shard size) */
    const char *root;             /* resolve the table's relative `shard` paths against
                                     this folder (reshard reads them; es_plan_write checks
                                     them in every mode); NULL = the current directory
                                     (as measure's root; borrowed, must outlive the plan) */
    es_compress compress;         /* reshard: compression of the written shards;
                                     default ES_COMPRESS_AUTO */
    const struct es_tokenizer *tokenizer; /* the tokenizer text_tokens were counted with,
                                     recorded in plan.json; NULL when none was given */
    const struct es_recipe *recipe; /* the training recipe the settings came from
                                     (es_recipe_settings), recorded in plan.json's
                                     parameters.recipe; NULL: none. Borrowed: must
                                     outlive the plan (minor 1) */
    es_progress_fn progress;      /* reshard: called by es_plan_write (and the
                                     staged writer's es_plan_write_shards,
                                     equishard_experimental.h) from the calling thread as
                                     the new shards are written: done/total steps,
                                     a step being one source shard read (once per
                                     pass over the sources; once per column when
                                     parquet is written column by column) or one new
                                     shard written and read back. Batch mode: called
                                     by es_plan_write after each rank's
                                     rank-R.batches.jsonl: done/total rows (batch
                                     rows, padding copies included). NULL: none */
    void *progress_user;          /* its first argument (borrowed) */
    es_progress_fn build_progress; /* called by es_plan_build(_subset) from the
                                     calling thread as it checks, filters, places
                                     (sorts, packs and balances) and indexes the
                                     rows: done/total row passes, total being 4 ×
                                     the table's rows, done rising to total when
                                     the build succeeds; at most every 65 536 rows
                                     and at each stage's end. NULL: none (minor 1) */
    void *build_progress_user;    /* its first argument (borrowed) */
    uint64_t reserved[2];         /* see "ABI" at the top */
} es_plan_settings;

typedef struct es_plan es_plan;

ES_API void es_plan_defaults(es_plan_settings *s);

/* Plans the table's utterances. Rows the loader's filter drops are counted per
 * reason and left out. Same table and settings give the same plan. The plan
 * borrows t (it keeps a pointer, not a copy): t must outlive the plan, and
 * es_plan_write, es_plan_rank_shard and es_plan_batch_info's rows refer to it. */
ES_API int es_plan_build(es_context *ctx, const es_plan_settings *s, const es_cost_table *t,
                         es_plan **out);
/* es_plan_build over the table's rows less those `leave_out` marks: leave_out is
 * NULL (every row, as es_plan_build) or holds es_cost_table_size(t) bytes, row i
 * left out when leave_out[i] is nonzero. Left-out rows are planned as if absent
 * (no batch, shard or load has them, and they are not counted as filtered), but
 * the table stays whole: batches' rows still index t, and what es_plan_build
 * derives from all rows (the cost model's settling, the token-count note, the
 * duplicate check) is the same as for the whole table. A resumed epoch uses it:
 * the utterances trained before the interruption left out, the rest planned for
 * the new world size (docs/PYTHON.md, "Resuming and resizing"). The mask is read
 * during the call only. ES_ERR_USAGE when every kept row is left out. */
ES_API int es_plan_build_subset(es_context *ctx, const es_plan_settings *s,
                                const es_cost_table *t, const unsigned char *leave_out,
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
    const uint64_t *filtered_by_reason; /* `filtered` by reason: es_enum_size(
                                ES_ENUM_FILTER_REASON) counts indexed by its values
                                (read 1 ..; [0], kept, counts no drop). NULL in
                                es_simulate_plan */
    const char *token_note;  /* one line when the token filters could not be applied
                                to some rows (no text token counts: measured without
                                --tokenizer): how many, and how many of them a
                                character count would have dropped; "" when every row
                                had a count (and in es_simulate_plan). plan.json's
                                "text_tokens" says the same (its "note") */
} es_plan_metrics;

/* ES_ERR_USAGE when p or m is NULL. m's strings and array are owned by p. */
ES_API int es_plan_get_metrics(const es_plan *p, es_plan_metrics *m);

typedef struct es_plan_load {
    double cost;
    uint64_t utterances, frames, batches;
} es_plan_load;

/* Load of a rank (worker < 0), or of its worker `worker`. ES_ERR_USAGE when
 * out of range. */
ES_API int es_plan_rank_load(const es_plan *p, uint32_t rank, int32_t worker, es_plan_load *out);

/* The lists a plan gives each rank, in exactly the order and text es_plan_write
 * writes them to OUTDIR, for callers that feed a loader without the files.
 *
 * Shard mode: worker w < W is rank-R.worker-W.list; ES_PLAN_ALL_WORKERS is
 * rank-R.list (the workers' entries interleaved: position j·W + w is worker w's
 * j-th). The count is 0 when rank or worker is out of range or p is not a
 * shard-mode plan. Entry i is one line without its newline, as the user's list
 * wrote it: a shard path, a raw-list row's original JSON line (the raw list is
 * read back on first use: ES_ERR_IO, or ES_ERR_FORMAT when it lost lines since it
 * was measured), a Kaldi entry's utterance key. *entry is owned by p and lives
 * as long as it. ES_ERR_USAGE when out of range. */
#define ES_PLAN_ALL_WORKERS UINT32_MAX
ES_API size_t es_plan_rank_shard_count(const es_plan *p, uint32_t rank, uint32_t worker);
ES_API int es_plan_rank_shard(es_context *ctx, const es_plan *p, uint32_t rank, uint32_t worker,
                              size_t i, const char **entry);

/* Batch mode: rank R's batches in step order (the lines of rank-R.batches.jsonl). */
typedef struct es_plan_batch {
    uint64_t step;
    uint32_t worker;      /* the DataLoader worker that yields it (step mod W) */
    double cost;
    uint64_t frames;      /* sum of its utterances' feature frames */
    uint32_t longest;     /* frames of the longest */
    int repeat;           /* a padding copy of another batch (ES_REMAINDER_PAD) */
    size_t n_rows;
    const size_t *rows;   /* n_rows indices into the plan's table, in batch order
                             (keys and shard/pos: es_cost_table_row); owned by p */
} es_plan_batch;

/* 0 when rank is out of range or p is not a batch-mode plan. */
ES_API size_t es_plan_batch_count(const es_plan *p, uint32_t rank);
/* Batch i (< es_plan_batch_count) of rank; ES_ERR_USAGE when out of range. */
ES_API int es_plan_batch_info(const es_plan *p, uint32_t rank, size_t i, es_plan_batch *out);

/* Batch mode with ES_REMAINDER_CARRY or _DROP: the table rows left out of this
 * epoch (remainder.tsv), in its order; the row index of i, or (size_t)-1 past the
 * end (their count is the first i that gives it; at once for other plans). */
ES_API size_t es_plan_remainder_row(const es_plan *p, size_t i);

/* Reshard mode (ES_PLAN_RESHARD): N = K × W × M new shards, each kept utterance
 * in exactly one, shard costs as equal as es_partition makes them. Rank and
 * worker loads (es_plan_rank_load) are those of the loaders' un-permuted split
 * of the written data.list (shard j → rank j % K, worker (j / K) % W: CosyVoice's
 * [rank::K][worker::W] and WeNet's i % (K·W) rule agree on it). es_plan_build
 * accepts only rows that name shards (no ES_FLAG_ITEM: ES_ERR_UNSUPPORTED);
 * es_plan_write then requires every source to be a tar shard, or every source
 * a CosyVoice parquet file. */
typedef struct es_plan_reshard_info {
    uint32_t shards;             /* N */
    uint32_t shards_per_worker;  /* M */
    double shard_cost_min, shard_cost_max, shard_cost_mean;
    double shard_max_deviation;  /* max over shards of |cost / mean - 1| */
    uint32_t permutations;       /* loader permutations checked: CosyVoice's
                                    random.Random(epoch).shuffle for epochs 0..19 */
    double permutation_max_deviation; /* worst |load / mean - 1| of any rank or
                                         worker under those permutations */
} es_plan_reshard_info;

/* ES_ERR_USAGE unless p is a reshard plan. */
ES_API int es_plan_reshard_info_get(const es_plan *p, es_plan_reshard_info *out);

/* Writes OUTDIR: plan.json, and per mode rank-00000.list + rank-00000.worker-0.list
 * (shard) or rank-00000.batches.jsonl (batch). `inputs` (may be NULL) are the
 * files the table came from; plan.json records their xxh3-64. OUTDIR is built
 * under a temporary name beside it and renamed into place when complete (an
 * existing OUTDIR is swapped out atomically and removed). Every mode first
 * checks the shard files whose size and mtime the table recorded (resolved
 * against settings.root): one that moved or changed since it was measured is
 * ES_ERR_FORMAT, counting them and naming the first, before OUTDIR is touched.
 * Reshard: the source shards (the table's `shard` paths, resolved against
 * settings.root) must all be tar shards or all CosyVoice parquet files; they are
 * read once each (more often only when N exceeds the writers that may be open
 * at once: open files, ~1 GiB of compressor state).
 * Tar: every member of each kept utterance is copied byte for byte into its new
 * shard OUTDIR/shards_000000000.tar[.gz|.zst]; every written shard is read back
 * and checked member by member (names, sizes, xxh3).
 * Parquet: each kept row, every column of it, is copied value for value into
 * OUTDIR/parquet_000000000.tar (CosyVoice's name for its parquet files): the
 * sources' schema (which must be the same in all), one row group, PLAIN pages;
 * every written file is read back and checked column by column (levels and
 * values, xxh3). Also utt2parquet_000000000.json / spk2parquet_000000000.json
 * per file and utt2data.list / spk2data.list listing them, as
 * make_parquet_list.py writes them.
 * Both: data.list (one line per shard, "OUTDIR/<name>" with OUTDIR as given),
 * shards.tsv (per shard: utterances, frames, cost, rank, worker) and, when the
 * filter dropped any, filtered.tsv (key, shard, pos, reason): those are not
 * copied. No rank lists. */
ES_API int es_plan_write(es_context *ctx, const es_plan *p, const char *outdir,
                         const char *const *inputs, size_t n_inputs);

/* ---- a plan OUTDIR read back: plan.json and its rank files (docs/PLAN.md) ----- */

/* plan.json's "format": the schema version this equishard writes. A plan.json
 * of a larger one is refused; one without the key is read as version 1. */
#define ES_PLAN_FORMAT 1

/* The one reader of what es_plan_write writes (report, simulate --plan and
 * equishard.loaders use it). Opaque: read through the calls below; every string
 * it hands out is owned by it, valid until es_plan_dir_free. */
typedef struct es_plan_dir es_plan_dir;

typedef struct es_plan_dir_info {
    uint32_t format;       /* plan.json "format", the schema version */
    es_plan_mode mode;     /* parameters.mode */
    uint32_t world_size;   /* parameters.world_size, K (>= 1) */
    uint32_t workers;      /* parameters.workers, W (>= 1) */
    uint64_t seed;         /* parameters.seed (plan.json writes it as a signed 64-bit
                              integer: read back modulo 2^64) */
    int64_t epoch;         /* parameters.epoch */
    uint64_t n_inputs;     /* "inputs" entries (es_plan_dir_input) */
    uint64_t n_ranks;      /* "ranks" entries with loads (es_plan_dir_rank_load); 0 or K */
    uint64_t left_out;     /* metrics.left_out (plan --resume-from), else 0 */
    uint64_t unreadable_shards, unreadable_utterances; /* metrics.unreadable */
    int has_reshard;       /* metrics.reshard is there (es_plan_dir_reshard_info) */
    const char *outdir;    /* as given to es_plan_dir_open */
    const char *plan_json; /* OUTDIR/plan.json */
    const char *equishard; /* "equishard": the version that wrote it; "" when absent */
    const char *recipe;    /* parameters.recipe.path: the training yaml the plan was made
                              from (--recipe); "" when none */
    uint64_t rows_without_tokens; /* text_tokens.rows_without: rows the token filters
                                     could not judge (no count), 0 when absent */
    uint64_t reserved[2];
} es_plan_dir_info;

/* Reads OUTDIR/plan.json. ES_ERR_IO when it cannot be read, ES_ERR_FORMAT when it
 * is not JSON (truncated, corrupt: the line and the problem), is no plan (no
 * parameters.mode, world_size, workers), holds a key of the wrong type, or is of
 * a newer schema ("OUTDIR/plan.json: schema version N is newer than this
 * equishard (M); upgrade"); each one line naming the file. Keys plan.json does
 * not have take es_plan_defaults' values. The rank files are not opened here
 * (es_plan_dir_check_files). */
ES_API int es_plan_dir_open(es_context *ctx, const char *outdir, es_plan_dir **out);
ES_API void es_plan_dir_free(es_plan_dir *d);
/* ES_ERR_USAGE when d or out is NULL. */
ES_API int es_plan_dir_get_info(const es_plan_dir *d, es_plan_dir_info *out);
/* The settings the plan was made with, over es_plan_defaults: mode, world_size,
 * workers, the cost model (model.source: the model.json path plan.json names,
 * owned by d) and filter (model.token_chars from text_tokens.count), batching,
 * sort_size, remainder, seed, epoch; reshard: shards_per_worker and compress as
 * written. tokenizer and recipe are NULL (plan.json names them, it does not
 * hold them). */
ES_API int es_plan_dir_settings(const es_plan_dir *d, es_plan_settings *out);
/* metrics as es_plan_get_metrics gives them (method, filtered_by_reason and
 * token_note owned by d: plan.json's metrics.filtered, 0 for a reason it lacks,
 * and text_tokens.note, "" without one; filtered their sum). */
ES_API int es_plan_dir_metrics(const es_plan_dir *d, es_plan_metrics *out);
/* ES_ERR_USAGE unless info.has_reshard. */
ES_API int es_plan_dir_reshard_info(const es_plan_dir *d, es_plan_reshard_info *out);
/* Input i's path (its bytes, as given to plan) and, when xxh3 is not NULL, the
 * xxh3-64 plan.json records of it; NULL when i >= n_inputs. */
ES_API const char *es_plan_dir_input(const es_plan_dir *d, size_t i, uint64_t *xxh3);
/* plan.json's loads of rank r (worker < 0), or of its worker w. ES_ERR_USAGE
 * when out of range (r >= n_ranks, w >= workers). */
ES_API int es_plan_dir_rank_load(const es_plan_dir *d, uint32_t rank, int32_t worker,
                                 es_plan_load *out);
/* The path of a rank's file: shard mode OUTDIR/rank-RRRRR.list (worker < 0) or
 * rank-RRRRR.worker-W.list; batch mode OUTDIR/rank-RRRRR.batches.jsonl (worker <
 * 0). NULL for any other (reshard plans have none: the loader splits data.list). */
ES_API const char *es_plan_dir_rank_file(const es_plan_dir *d, uint32_t rank, int32_t worker);
/* Every rank file the mode has (above) is a file: else ES_ERR_FORMAT, one line
 * naming the first missing one. */
ES_API int es_plan_dir_check_files(es_context *ctx, const es_plan_dir *d);

/* ---- simulate: replay a loader's own split and batching (docs/SIMULATE.md) ----- */

/* The training loaders whose partition es_simulate replays. */
typedef enum es_loader {
    ES_LOADER_COSYVOICE = 0, /* cosyvoice/dataset/dataset.py DistributedSampler.sample:
                                random.Random(epoch).shuffle, [rank::K], [worker::W],
                                short lists repeated; processor.shuffle/sort/batch */
    ES_LOADER_WENET = 1,     /* wenet/dataset/datapipes.py shard(): element i goes to
                                worker w of rank r when i % (K*W) == w*K + r (list
                                order, list_shuffle off); torch Shuffler buffer */
} es_loader;

typedef struct es_simulate_settings {
    es_loader loader;
    uint32_t world_size;          /* K ranks; required (>= 1) */
    uint32_t workers;             /* W DataLoader workers per rank; default 1
                                     (num_workers 0 behaves as 1) */
    int64_t epoch_first;          /* epochs replayed, inclusive; default 0 .. 0 (the */
    int64_t epoch_last;           /* trainers call set_epoch(0), (1), …; -1 is the
                                     sampler's value before any set_epoch) */
    int list_shuffle;             /* CosyVoice shuffle=True: the per-epoch list
                                     shuffle; default 1 (WeNet: must be 0, see below) */
    int partition;                /* default 1; 0 = every rank reads the whole list */
    es_cost_model model;          /* frames and the loader's filter. Defaults:
                                     es_cost_model_defaults(); for WeNet frame_rate
                                     100 and min_length 0 (its recipes' fbank/filter) */
    uint32_t shuffle_size;        /* sample shuffle buffer; 0 = off. CosyVoice 1000
                                     (its recipes' yaml), WeNet 1500 */
    uint32_t sort_size;           /* sort buffer (stable, by frames); 0 = off; 500 */
    uint64_t max_frames_in_batch; /* dynamic batching budget: CosyVoice 2000, WeNet 12000 */
    uint32_t batch_size;          /* > 0: static batches of this size instead */
    uint32_t trials;              /* draws of the (unseeded) shuffle buffer; default 8 */
    uint64_t seed;                /* seeds our draws: same seed, same result; default 0 */
    int plan_side;                /* default 1: also plan the same table (es_plan_build,
                                     shard and batch mode) for the side by side */
    const char *plan_dir;         /* NULL (default): the loader splits the table's list
                                     itself. A shard-mode plan OUTDIR: rank r's worker w
                                     reads OUTDIR/rank-R.worker-W.list instead, as
                                     equishard.loaders feed it (CosyVoice's DataList:
                                     each worker's list shuffled per epoch with
                                     random.Random(epoch) when list_shuffle and epoch
                                     >= 0; WeNet's ShardList: plan order). world_size
                                     and workers must be plan.json's, partition on,
                                     and every planned entry an entry of the table
                                     (es_simulate_settings_from_plan fills all that).
                                     Borrowed for the call. */
    uint64_t reserved[7];         /* see "ABI" at the top */
} es_simulate_settings;

/* Fills *s with the defaults of the loader's own recipes (above). */
ES_API void es_simulate_defaults(es_simulate_settings *s, es_loader loader);

/* Takes a plan OUTDIR's settings (`equishard plan -o OUTDIR`, its plan.json) into
 * *s, which es_simulate_defaults filled: world_size, workers, the cost model and
 * filter, max_frames_in_batch, batch_size and sort_size (the loader's settings
 * the plan was made for). The recipe's own buffers (shuffle_size) and the
 * epochs stay as they are. *mode gets the plan's mode; for ES_PLAN_SHARD,
 * s->plan_dir = outdir (borrowed), so es_simulate replays the plan as the
 * loaders feed it. A reshard plan is trained by the recipe's own split of
 * OUTDIR/data.list: simulate that list's table with these settings. A batch
 * plan needs no replay (every rank trains plan.json's `steps` by construction).
 * ES_ERR_IO / ES_ERR_FORMAT name plan.json and what is wrong with it. */
ES_API int es_simulate_settings_from_plan(es_context *ctx, es_simulate_settings *s,
                                          const char *outdir, es_plan_mode *mode);

typedef struct es_simulate_result es_simulate_result;

/* Replays the loader over the table for every epoch in [epoch_first, epoch_last].
 * The list the loader splits is the table's shards in order (consecutive rows of
 * one shard are one entry; rows flagged ES_FLAG_ITEM are entries of their own).
 * Per rank, worker and trial: the worker's utterances in reading order, the
 * filter, the shuffle buffer, the sort buffer, then the batching rule; a rank's
 * batches are its workers' summed. Batch numbers are expectations over `trials`
 * draws of the shuffle buffer (exact when shuffle_size <= 1). The result owns
 * copies of everything it names; the table may be freed after the call. */
ES_API int es_simulate(es_context *ctx, const es_simulate_settings *s, const es_cost_table *t,
                       es_simulate_result **out);
ES_API void es_simulate_result_free(es_simulate_result *r);

/* The list and the filter's verdict over the table's distinct rows. */
typedef struct es_simulate_input {
    size_t entries;           /* list entries the loader splits */
    uint64_t utterances;      /* table rows */
    uint64_t kept;            /* rows the filter keeps */
    uint64_t frames;          /* their feature frames */
    double seconds;           /* their audio */
    const uint64_t *filtered; /* rows the filter drops, by reason: es_enum_size(
                                 ES_ENUM_FILTER_REASON) counts indexed by its values
                                 (read 1 ..; [0], kept, counts no drop) */
    const char *token_note;   /* es_plan_metrics.token_note for this replay's filter
                                 ("" when every row had a token count, or the filter
                                 counts characters). The JSON's "text_tokens" says
                                 the same, with the table's tokenizer */
} es_simulate_input;
/* ES_ERR_USAGE when r or out is NULL. out's string and array are owned by r. */
ES_API int es_simulate_input_info(const es_simulate_result *r, es_simulate_input *out);

ES_API size_t es_simulate_epoch_count(const es_simulate_result *r);

typedef struct es_simulate_epoch {
    int64_t epoch;
    double min_batches;        /* the join cut: every rank trains this many (expected) */
    double total_batches;      /* all ranks (expected) */
    double retention;          /* K × min_batches / total_batches; 0 when no batches */
    double skipped_batches;    /* batches the cut leaves untrained (expected) */
    double skipped_utterances; /* … their utterances, frames and seconds of audio */
    double skipped_frames;
    double skipped_seconds;
    uint64_t utterances;       /* kept utterances read this epoch (repeats counted) */
    uint64_t frames;
    double seconds;
    uint64_t empty_first_batches; /* CosyVoice: (trial, worker) streams whose first
                                     sample alone exceeds the budget; the loader then
                                     yields an empty batch, which padding() rejects */
} es_simulate_epoch;

typedef struct es_simulate_rank {
    size_t n_shards;          /* list entries the rank reads (es_simulate_rank_shard) */
    uint64_t utterances;      /* kept utterances over its workers */
    uint64_t frames;          /* their feature frames */
    double seconds;           /* their audio */
    double batches;           /* expected batches (its workers' summed) */
    uint64_t batches_min, batches_max; /* over the trials */
    double batches_stddev;
    double trained_batches;   /* expected batches trained under the join */
    double skipped_utterances, skipped_frames, skipped_seconds; /* expected */
} es_simulate_rank;

/* Epoch e (0 .. count-1), and its rank (worker < 0) or that rank's worker
 * `worker`. ES_ERR_USAGE when out of range. */
ES_API int es_simulate_epoch_info(const es_simulate_result *r, size_t e, es_simulate_epoch *out);
ES_API int es_simulate_rank_info(const es_simulate_result *r, size_t e, uint32_t rank,
                                 int32_t worker, es_simulate_rank *out);
/* Predicted step time under the settings' cost model (calibrated): each rank's
 * trained batches (up to the join cut) in the DataLoader's order, step by step,
 * each costing Σ w_term × term of its padded terms (es_cost_term). The loader replay knows a
 * batch's size and longest frames, so the frames, frames_sq, overhead and batch
 * terms count here (text, speech-token and embedding terms only on the plan
 * side). In seconds when the model came from `equishard calibrate`
 * (model.source set), else in the model's cost units. Expected over trials. */
typedef struct es_simulate_step_time {
    double steps;          /* trained steps (the join cut) */
    double straggler;      /* mean over steps of max/mean step time over the ranks */
    double epoch_seconds;  /* Σ over steps of the slowest rank's step: what a
                              synchronous trainer takes */
    double ideal_seconds;  /* Σ over steps of the ranks' mean: the same work with
                              no rank waiting */
} es_simulate_step_time;

/* Epoch e's step time; `rank_seconds` (may be NULL) gets world_size values: each
 * rank's own predicted compute over its trained steps. ES_ERR_USAGE when e is out
 * of range. */
ES_API int es_simulate_step_time_info(const es_simulate_result *r, size_t e,
                                      es_simulate_step_time *out, double *rank_seconds);

/* The i-th entry the rank reads (its slice of the list, in order): a shard path
 * as the list writes it, or the key of an ES_FLAG_ITEM row. NULL when out of range. */
ES_API const char *es_simulate_rank_shard(const es_simulate_result *r, size_t e, uint32_t rank,
                                          size_t i);

/* What `equishard plan` gives for the same table and settings, side by side:
 * i = 0 is shard mode, 1 batch mode; ES_ERR_USAGE past the last (i >= 2).
 * `available` is 0 when plan_side was off or the planner failed (`error` says
 * why). Strings are owned by r. ES_ERR_USAGE when out of range. */
typedef struct es_simulate_plan {
    const char *mode;         /* "shard", "batch" */
    int available;
    const char *error;        /* "" when available */
    es_plan_metrics metrics;
} es_simulate_plan;
ES_API int es_simulate_plan_info(const es_simulate_result *r, size_t i, es_simulate_plan *out);
ES_API int es_simulate_plan_rank(const es_simulate_result *r, size_t i, uint32_t rank,
                                 es_plan_load *out);

/* The whole result as JSON (`{"parameters", "input", "epochs": [{"epoch", "ranks":
 * [{"rank", "shards", "utterances", "frames", "batches", …}], "min_batches",
 * "retention", …}], "summary", "plan"}`; keys are documented in docs/SIMULATE.md
 * and stay stable). Same result, same bytes. Written to path atomically
 * (temporary name, then rename). */
ES_API int es_simulate_write_json(es_context *ctx, const es_simulate_result *r, const char *path);

/* ---- describe: what a table holds (docs/DESCRIBE.md) -------------------------- */

/* The table described as JSON text (`equishard describe --json`,
 * equishard.describe()): utterances, hours, duration percentiles, sample rates
 * and channels, text lengths (tokens when the table has text-token counts,
 * else characters), speakers and hours per speaker, rows missing text,
 * speaker, embeddings or speech tokens, and what `loader`'s filter with
 * `model` (NULL: es_cost_model_defaults(); settled as es_simulate settles it)
 * drops, by reason. Percentiles are numpy's default (linear interpolation).
 * Keys and their order are stable (docs/DESCRIBE.md); the same table and
 * model give the same bytes. On success *json is a NUL-terminated string the
 * caller frees with es_free; on failure it is NULL (ES_ERR_USAGE for a NULL
 * table or output or an unknown loader, ES_ERR_NOMEM). */
ES_API int es_describe_json(es_context *ctx, const es_cost_table *t, es_loader loader,
                            const es_cost_model *model, char **json);
/* Frees memory the library allocated for the caller (es_describe_json's text). */
ES_API void es_free(void *p);

/* ---- validate: the embedding checks (docs/VALIDATE.md) ------------------------ */

/* What validation looks for. Each finding names one utterance or speaker. */
typedef enum es_check {
    ES_CHECK_MISSING_UTT_EMB = 0, /* an utterance has no utt_embedding (value: none) */
    ES_CHECK_MISSING_SPK_EMB,     /* a speaker has no spk_embedding (value: none) */
    ES_CHECK_WRONG_DIM,           /* dimension differs from the expected (value: its dimension) */
    ES_CHECK_NAN,                 /* NaN elements (value: how many) */
    ES_CHECK_INF,                 /* ±Inf elements (value: how many) */
    ES_CHECK_ZERO_NORM,           /* L2 norm <= zero_norm (value: the norm) */
    ES_CHECK_ABNORMAL_NORM,       /* norm outside the bounds below (value: the norm) */
    ES_CHECK_FAR_FROM_CENTROID,   /* cosine to its speaker's centroid < min_cosine: a
                                     mislabeled speaker (value: the cosine) */
    ES_CHECK_SPK_MEAN_MISMATCH,   /* spk_embedding differs from the mean of its speaker's
                                     utterance embeddings (value: ‖spk − mean‖ / ‖mean‖) */
    ES_CHECK_DUPLICATE_VECTOR,    /* identical to an earlier row under another key */
    ES_CHECK_DUPLICATE_AUDIO,     /* identical audio bytes (xxh3) under another key */
    ES_CHECK_UNREADABLE,          /* a shard or member of the list cannot be read (key:
                                     "FILE: MEMBER: PROBLEM") */
    ES_CHECK_FILTERED,            /* the loader's filter drops the utterance (kind data;
                                     value: the es_filter_reason index, other: its name;
                                     es_validate_data) */
    ES_CHECK_IMBALANCE,           /* the loader's split of the list is uneven in one epoch
                                     (kind data, key "epoch E"; value: max/mean − 1 of
                                     rank frames, other: "imbalance X retention Y") */
    ES_CHECK_COUNT
} es_check;

typedef enum es_device {
    ES_DEVICE_AUTO = 0, /* CUDA when built with it and a device is present, else CPU */
    ES_DEVICE_CPU = 1,
    ES_DEVICE_CUDA = 2, /* ES_ERR_UNSUPPORTED "no CUDA device" when there is none */
} es_device;

/* Element type of an embedding matrix. */
typedef enum es_dtype {
    ES_DTYPE_F32 = 0,
    ES_DTYPE_F16 = 1,  /* IEEE binary16 (torch.float16) */
    ES_DTYPE_BF16 = 2, /* bfloat16 (torch.bfloat16) */
} es_dtype;

typedef struct es_validate_settings {
    es_device device;   /* default ES_DEVICE_AUTO */
    int threads;        /* CPU: OpenMP threads; 0 = OpenMP's default */
    size_t dim;         /* expected dimension; default 192 (CAM++); 0 = any */
    double zero_norm;   /* a norm <= this is "zero"; default 1e-6 */
    double min_norm;    /* abnormal below this absolute norm; default 0 (off) */
    double max_norm;    /* abnormal above this absolute norm; default 0 (off) */
    double norm_ratio;  /* abnormal when the norm is more than ratio× or less than
                           1/ratio× the median norm of its set (utterances or
                           speakers); default 3; 0 = off */
    double min_cosine;  /* far_from_centroid below this; default 0.5; -2 = off */
    double spk_mean_tol;/* spk_mean_mismatch above this relative L2 difference;
                           default 1e-3 */
    int duplicates;     /* nonzero: look for identical vectors; default 1 */
    es_progress_fn progress; /* es_validate: called from the calling thread as the
                           embedding sources are read: done/total bytes, total
                           the sizes of the files es_emb_sources names (utt_emb,
                           spk_emb, their key lists, utt2spk); a .pt's pickle
                           and a .npy's values every 4 MiB, the rest (a list of
                           parquet files, key lists, utt2spk) once read; done
                           reaches total when all are loaded, before the checks.
                           es_validate_matrices ignores it. NULL: none
                           (minor 1) */
    void *progress_user;  /* its first argument (borrowed) */
    uint64_t reserved[6]; /* see "ABI" at the top */
} es_validate_settings;

ES_API void es_validate_defaults(es_validate_settings *s);

/* An embedding matrix: n rows of dim elements, row-major, contiguous. */
typedef struct es_emb_matrix {
    const void *data;         /* host or device memory, as the function says */
    es_dtype dtype;
    size_t n, dim;
    const char *const *keys;  /* n names for the findings (host memory), or NULL
                                 for none (findings then name rows only) */
} es_emb_matrix;

/* Speakers of the utterance rows (host memory): speaker[i] in [0, n_speakers) is
 * utterance row i's speaker, -1 none. Speaker s's spk_embedding is row s of the
 * speaker matrix when s < its n (n_speakers may exceed it: speakers without one;
 * it may not be smaller). */
typedef struct es_emb_speakers {
    const int32_t *speaker;   /* NULL: no speaker known (no centroid checks) */
    size_t n_speakers;
} es_emb_speakers;

typedef struct es_validate_result es_validate_result;

/* Validates embedding matrices: utt (utterance embeddings, may be NULL), spk
 * (speaker embeddings, may be NULL) and the speakers of utt's rows (may be
 * NULL). device_memory 0: the matrices' data is in host memory; with
 * ES_DEVICE_AUTO or _CUDA the rows are copied to the GPU when one is there.
 * device_memory 1: their data is already in CUDA device memory (e.g. a
 * contiguous torch tensor's data_ptr()); keys and speakers stay in host
 * memory, s->device is ignored, and ES_ERR_UNSUPPORTED when the library was
 * built without CUDA or no device is present. A matrix whose dim differs from
 * s->dim gets wrong_dim for every row and no other check. Nothing is copied
 * from the caller's arrays except key strings; *out owns the findings. */
ES_API int es_validate_matrices(es_context *ctx, const es_validate_settings *s,
                                const es_emb_matrix *utt, const es_emb_matrix *spk,
                                const es_emb_speakers *speakers, int device_memory,
                                es_validate_result **out);

/* Embedding sources, each detected by content: a torch.save'd dict of str →
 * list of float (CosyVoice utt2embedding.pt / spk2embedding.pt), or a .npy
 * matrix (float16/32/64, C order, 2-D; or 1-D: one row) whose keys come from a
 * key list (one key per line; the first field, so utt2spk works too). */
typedef struct es_emb_sources {
    const char *utt_emb;  /* utterance embeddings, or NULL */
    const char *utt_keys; /* key list for a .npy utt_emb */
    const char *spk_emb;  /* speaker embeddings, or NULL */
    const char *spk_keys; /* key list for a .npy spk_emb; a 1-D .npy without one
                             is named by its file name without ".npy" */
    const char *utt2spk;  /* Kaldi utt2spk; NULL: speakers from the cost table */
    const char *root;     /* relative paths inside a list of parquet files resolve
                             against it (NULL: the current directory), as
                             es_measure_settings.root does for LIST */
} es_emb_sources;

/* Loads the sources and validates them. The utterances that should have
 * embeddings are the table's rows when `table` is given (keys, speakers and
 * audio hashes from `equishard measure --hash`), else utt2spk's; without either,
 * missing_* checks are off. The table's skips (es_measure with ES_ON_ERROR_SKIP)
 * become `unreadable` findings. Findings name keys; rows are source entry ordinals.
 * ES_ERR_FORMAT/IO/UNSUPPORTED for a source that cannot be read. */
ES_API int es_validate(es_context *ctx, const es_validate_settings *s,
                       const es_emb_sources *src, const es_cost_table *table,
                       es_validate_result **out);

/* Sets ES_FLAG_UTT_EMB on every row whose key has an utterance embedding in
 * src->utt_emb, and ES_FLAG_SPK_EMB on every row whose speaker has one in
 * src->spk_emb (flags are cleared for a source that is given and lacks them,
 * and kept for one that is not given). */
ES_API int es_cost_table_mark_embeddings(es_context *ctx, es_cost_table *t,
                                         const es_emb_sources *src);

/* What es_cost_table_set_speech_tokens did. */
typedef struct es_speech_token_stats {
    size_t rows_set;      /* rows whose key has a list in the source */
    size_t rows_without;  /* rows whose key has none: speech_tokens set to 0 */
    size_t unknown_keys;  /* keys of the source that no row has */
} es_speech_token_stats;

/* Sets every row's speech_tokens to the length of its key's list in `src`,
 * CosyVoice's utt2speech_token.pt (torch zip or plain pickle of a dict str →
 * list of int, read with the strict unpickler; ES_ERR_FORMAT when the lists
 * hold floats). The source is authoritative: a row whose key it lacks gets 0,
 * so the loader model's require_speech_token filter drops it as CosyVoice would,
 * and a count measured from a parquet `speech_token` column is replaced, never
 * added to. Rows with a list are those with speech_tokens > 0 (an empty list
 * counts as none, as in the loader). `stats` (may be NULL) gets the counts,
 * for the caller to report. */
ES_API int es_cost_table_set_speech_tokens(es_context *ctx, es_cost_table *t, const char *src,
                                           es_speech_token_stats *stats);

/* The data checks that need the loader model, over a cost table's rows. */
typedef struct es_validate_data_settings {
    es_cost_model model;     /* the loader's filter and frames; es_cost_model_defaults() */
    es_loader loader;        /* imbalance: the loader replayed; default cosyvoice */
    uint32_t world_size;     /* K ranks; 0 (default) = no imbalance check */
    uint32_t workers;        /* W workers per rank; default 1 */
    double max_imbalance;    /* imbalance when, in an epoch, max/mean − 1 of the ranks'
                                frames exceeds this or the retention under the join is
                                below 1 − this; default 0.05 */
    uint64_t reserved[8];    /* see "ABI" at the top */
} es_validate_data_settings;

ES_API void es_validate_data_defaults(es_validate_data_settings *s);

/* Adds to r (from es_validate*) `filtered`: one finding per row of t that
 * es_cost_model's filter drops, and per-reason counts for the JSON summary; and,
 * when world_size > 0, `imbalance`: es_simulate (the loader's own defaults but
 * s->model, world_size and workers; epoch 0, no plan side) and one finding per
 * epoch over the bound. The findings stay ordered as es_validate_finding says. */
ES_API int es_validate_data(es_context *ctx, const es_validate_data_settings *s,
                            const es_cost_table *t, es_validate_result *r);

ES_API void es_validate_result_free(es_validate_result *r);

/* Findings of one check (an es_check), or of all (check -1). */
ES_API size_t es_validate_count(const es_validate_result *r, int check);

#define ES_NO_ROW ((size_t)-1)

/* What a finding's key names. */
typedef enum es_kind {
    ES_KIND_UTT = 0,  /* an utterance */
    ES_KIND_SPK = 1,  /* a speaker */
    ES_KIND_DATA = 2, /* a shard or member of the list (unreadable), an utterance the
                         loader drops (filtered), an epoch (imbalance) */
} es_kind;

/* One finding. Strings are owned by the result. */
typedef struct es_finding {
    es_check check;
    es_kind kind;
    const char *key;    /* its key; "" when the matrix had no keys */
    size_t row;         /* its row in the matrix or source (entry ordinal); ES_NO_ROW
                           for missing_*, duplicate_audio, unreadable, filtered and
                           imbalance */
    double value;       /* as es_check says; 0 when none */
    const char *other;  /* duplicate_*: the earlier key with the same content
                           ("" without keys); NULL otherwise */
    size_t other_row;   /* duplicate_vector: the earlier row; else ES_NO_ROW */
} es_finding;

/* Finding i (< es_validate_count(r, -1)), ordered by check, then kind, then
 * by row / key order. ES_ERR_USAGE when out of range. */
ES_API int es_validate_finding(const es_validate_result *r, size_t i, es_finding *out);

/* What was validated and where. */
typedef struct es_validate_info {
    es_device device;   /* ES_DEVICE_CPU or ES_DEVICE_CUDA: where the checks ran */
    size_t utt_rows;    /* utterance / speaker embeddings checked */
    size_t spk_rows;
    size_t utterances;  /* utterances / speakers expected to have one (0 = unknown) */
    size_t speakers;
    size_t dim;
    double median_utt_norm, median_spk_norm; /* 0 when none */
    const char *token_note; /* after es_validate_data: es_plan_metrics.token_note for
                               its filter ("" when every row had a token count, or
                               before es_validate_data). The JSON summary's
                               "text_tokens" says the same, with the tokenizer */
} es_validate_info;
/* ES_ERR_USAGE when r or out is NULL. out's string is owned by r. */
ES_API int es_validate_result_info(const es_validate_result *r, es_validate_info *out);

/* Writes every finding and the counts as JSON (schema: docs/VALIDATE.md), to a
 * temporary name renamed into place. */
ES_API int es_validate_write_json(es_context *ctx, const es_validate_result *r, const char *path);

/* ---- the training recipe's own configuration (`--recipe FILE`) ------------- */

/* A training recipe's yaml, read for everything that decides which utterances
 * its loader keeps and how it batches them (docs/PLAN.md, "--recipe"):
 *
 * - CosyVoice 1/2/3 (hyperpyyaml; a top-level `data_pipeline`): the stages it
 *   lists, by their `!name:` function: filter (max_length, min_length,
 *   token_max_length, token_min_length, the ratios), shuffle (shuffle_size),
 *   sort (sort_size), batch (batch_type, max_frames_in_batch / batch_size),
 *   resample (resample_rate), compute_fbank's feat_extractor (sampling_rate /
 *   hop_size: the frame rate), tokenize's get_tokenizer (get_qwen_tokenizer:
 *   token_path, version) and allowed_special. A key the stage leaves out takes
 *   the processor function's default, as the call would.
 * - WeNet (a top-level `dataset_conf`): filter_conf, shuffle/shuffle_conf,
 *   sort/sort_conf, batch_conf, speed_perturb, resample_conf, feats_type and
 *   its conf (the frame rate), and the top-level tokenizer / tokenizer_conf.
 *
 * hyperpyyaml's `!ref <name>` resolves to the top-level value `name` (also
 * several in one string, `!ref <a> * <b>`, evaluated when it is arithmetic);
 * `!new:`, `!name:` and `!apply:` nodes are read as plain mappings and
 * sequences. `sets` ("NAME=VALUE", n_sets of them, may be NULL) replace
 * top-level values before references resolve, as the training script's
 * overrides do (CosyVoice's train.py sets qwen_pretrain_path); VALUE is read
 * as a plain yaml scalar. ES_ERR_IO for a file that cannot be read,
 * ES_ERR_FORMAT naming file, line and key for yaml that is not a recipe (no
 * data_pipeline or dataset_conf, a value of the wrong type, an unresolvable
 * reference, a batch_type without a planned equivalent), ES_ERR_USAGE for a
 * set that is not NAME=VALUE of a top-level name. On failure *out is NULL. */
typedef struct es_recipe es_recipe;
ES_API int es_recipe_read(es_context *ctx, const char *path, const char *const *sets,
                          size_t n_sets, es_recipe **out);
ES_API void es_recipe_free(es_recipe *r);

/* What the recipe sets. Strings are owned by the recipe. */
typedef struct es_recipe_info {
    const char *path;           /* as given to es_recipe_read */
    uint64_t digest;            /* xxh3-64 of the file's bytes */
    es_loader loader;           /* ES_LOADER_COSYVOICE or ES_LOADER_WENET */
    es_cost_model model;        /* es_cost_model_defaults() with the recipe's filter
                                   (min_length .. max_output_input_ratio),
                                   require_speech_token (WeNet: 0, never) and
                                   frame_rate (0 when the yaml does not say) */
    uint64_t max_frames_in_batch; /* dynamic batching's budget; 0 for static */
    uint32_t batch_size;        /* static batches' size; 0 for dynamic */
    uint32_t shuffle_size;      /* the sample shuffle buffer; 0: no shuffle stage */
    uint32_t sort_size;         /* the sort buffer; 0: no sort stage */
    uint32_t sample_rate;       /* the resample stage's rate; 0 without one */
    const char *tokenizer;      /* CosyVoice: get_qwen_tokenizer's token_path; NULL */
    const char *specials;       /* its version: "cosyvoice2" or "cosyvoice3"; NULL */
    const char *allowed_special;/* tokenize's allowed_special as written; NULL */
    const char *symbol_table;   /* WeNet `tokenizer: char`: symbol_table_path; NULL */
    const char *non_lang_syms;  /* its non_lang_syms_path; NULL */
    int split_with_space;       /* its split_with_space */
    int tokenizer_unresolved;   /* nonzero: the tokenizer's path is a reference the
                                   yaml leaves to the training script (empty or null
                                   without a set); tokenizer_note names it */
    const char *tokenizer_note; /* "" when the tokenizer is one equishard counts, else
                                   one line: the reference to set, or the kind it
                                   does not count (whisper, bpe: the token filters
                                   then go unapplied, as without --tokenizer) */
    double speed_min, speed_max;/* WeNet speed_perturb: the slowest and fastest speed
                                   (0.9, 1.1); 0 without it. Lengths then change
                                   after the filter, at random: see docs/PLAN.md */
} es_recipe_info;
/* ES_ERR_USAGE when r or out is NULL. */
ES_API int es_recipe_get_info(const es_recipe *r, es_recipe_info *out);

/* The recipe's values over the settings a caller filled (their *_defaults, then
 * its own choices), each of plan, sim and data that is not NULL; fields the
 * recipe does not decide are left alone, so options applied afterwards
 * override the recipe. plan: the filter, frame_rate (when known),
 * require_speech_token (WeNet), max_frames_in_batch / batch_size, sort_size,
 * and plan->recipe = r. sim: the same and the loader, shuffle_size (call
 * es_simulate_defaults with the recipe's loader first). data (validate's data
 * checks): the filter, frame_rate and the loader. ES_ERR_USAGE for a NULL r,
 * or when all three are NULL. */
ES_API int es_recipe_settings(const es_recipe *r, es_plan_settings *plan,
                              es_simulate_settings *sim, es_validate_data_settings *data);

/* ---- rows: fetching planned utterances by position (training loaders) ----- */

/* A batch-mode loader gets [shard, pos] pairs (the cost table's columns) and
 * must fetch exactly those utterances, as the recipe's own opener would give
 * them, without reading whole files. A row reader opens one shard once and
 * fetches any set of positions from it:
 *
 *   parquet (CosyVoice): pos = row in the file across row groups. Only the row
 *     groups holding requested rows are read; in a flat column, data pages
 *     holding no requested row are passed over by their headers (a few rows of
 *     a big audio_data column cost their own pages only); list columns are
 *     decoded per row group and kept in the reader, so later fetches from the
 *     same row group cost nothing more. Each row has the requested columns.
 *   tar (WeNet / WebDataset, plain or compressed): pos = utterance ordinal,
 *     members grouped by the key before their name's last '.', as
 *     tar_file_and_group does and as es_measure numbers them. One fetch is one
 *     pass through the shard; members of utterances not asked for are skipped
 *     (seeking, in an uncompressed tar). A fetch whose positions all lie after
 *     the previous fetch's last one continues that pass instead of starting
 *     over. Each row has "key" (STRING) then one BYTES field per member, named
 *     by its suffix ("wav", "txt", "spk", …; "" when the name has no dot), in
 *     member order; a suffix seen twice gives two fields. */

typedef enum es_value_type {
    ES_VALUE_NULL = 0,
    ES_VALUE_BYTES,   /* BYTE_ARRAY without a string annotation, FIXED_LEN_BYTE_ARRAY,
                         INT96 (its 12 bytes), a tar member's content */
    ES_VALUE_STRING,  /* BYTE_ARRAY annotated STRING / UTF8 (bytes as stored, not
                         checked); a tar utterance's key */
    ES_VALUE_BOOL,    /* i: 0 or 1 */
    ES_VALUE_INT32,   /* i (INT32, incl. INT_8/INT_16 annotations) */
    ES_VALUE_INT64,   /* i */
    ES_VALUE_UINT32,  /* i (INT32 annotated unsigned: UINT_8/16/32) */
    ES_VALUE_UINT64,  /* (uint64_t)i (INT64 annotated unsigned) */
    ES_VALUE_FLOAT,   /* d (the float32 value, exactly) */
    ES_VALUE_DOUBLE,  /* d */
    ES_VALUE_LIST,    /* a one-level list: elem_type, len, data, valid */
} es_value_type;

/* One value. Other logical types (dates, timestamps, decimals) come as their
 * physical type. Everything pointed to is owned by the reader (see
 * es_row_reader_read). */
typedef struct es_value {
    es_value_type type;
    es_value_type elem_type; /* LIST: its elements' type (never NULL or LIST) */
    size_t len;              /* BYTES / STRING: bytes; LIST: elements */
    const void *data;        /* BYTES / STRING: the bytes, followed by a NUL that len
                                does not count; LIST: len elements packed as arrays of
                                uint8_t (BOOL), int32_t (INT32), uint32_t (UINT32),
                                int64_t (INT64), uint64_t (UINT64), float (FLOAT),
                                double (DOUBLE), or es_value (BYTES / STRING elements,
                                a null element being ES_VALUE_NULL); NULL when len is 0 */
    const uint8_t *valid;    /* LIST: NULL when no element is null; else len bytes,
                                0 = that element is null (its packed slot holds 0) */
    int64_t i;               /* BOOL, INT32, INT64, UINT32, UINT64 */
    double d;                /* FLOAT, DOUBLE */
} es_value;

typedef struct es_field {
    const char *name;        /* column name, "key", or a tar member's suffix */
    es_value value;
} es_field;

typedef struct es_row {
    const es_field *fields;
    size_t n_fields;
} es_row;

typedef struct es_row_reader es_row_reader;

/* Opens a parquet file or a tar shard (told apart by content) for fetching
 * rows. Parquet: the footer is read and checked; tar: nothing is read yet.
 * `path` is copied. On failure *out is NULL. */
ES_API int es_row_reader_open(es_context *ctx, const char *path, es_row_reader **out);
ES_API void es_row_reader_free(es_row_reader *r);

/* "parquet" or "tar". */
ES_API const char *es_row_reader_format(const es_row_reader *r);

/* Rows (parquet, from the footer) or utterances (tar: one pass over the member
 * headers, skipping their data, done once and remembered). */
ES_API int es_row_reader_count(es_context *ctx, es_row_reader *r, uint64_t *n);

/* Parquet: top-level column i in schema order; tar: none (members vary). The
 * name is owned by r; NULL past the last (their count is the first i that
 * gives NULL). */
ES_API const char *es_row_reader_column_name(const es_row_reader *r, size_t i);

/* Fetches the rows at positions[0..n): (*rows)[i] is position positions[i], in
 * that order, duplicates included (they share one copy). `columns` names the
 * fields wanted (n_columns of them): parquet columns, in the given order (an
 * unknown name is ES_ERR_USAGE); tar member suffixes, the others' data being
 * skipped ("key" always comes first). columns NULL: every column / member.
 * *rows, and every string and value it points to, is owned by r and valid
 * until the next es_row_reader_read or es_row_reader_free.
 *
 * Errors name the file, the row or member and the problem. A position past
 * the end is ES_ERR_USAGE ("x.parquet: position 40: out of range, the file
 * has 16 rows"), checked before anything is read for parquet and at the end
 * of the pass for tar. A parquet column of a kind this does not read (a
 * struct, a map, a list of lists) is ES_ERR_UNSUPPORTED naming it: name the
 * columns you need. On failure *rows is NULL. */
ES_API int es_row_reader_read(es_context *ctx, es_row_reader *r, const uint64_t *positions,
                              size_t n, const char *const *columns, size_t n_columns,
                              const es_row **rows);

/* ---- text tokens: the recipe's own tokenizer ---------------------------------- */

/* CosyVoice 2/3 filter on len(text_token), the ids of Qwen2's byte-level BPE
 * (CosyVoice-BlankEN) plus the special tokens CosyVoice2Tokenizer /
 * CosyVoice3Tokenizer add. es_tokenizer gives exactly Hugging Face's ids
 * (`tokenizer([text])["input_ids"][0]`): added tokens split out of the raw
 * text leftmost-longest, NFC, Qwen2's pre-tokenizer (Oniguruma semantics),
 * GPT-2's byte map, BPE by merge rank. No BOS/EOS is added. */
typedef struct es_tokenizer es_tokenizer;

/* Loads the tokenizer at `path`: a folder holding vocab.json + merges.txt (and
 * optionally tokenizer_config.json, whose added_tokens_decoder entries are
 * added tokens), or a folder or file holding HF's tokenizer.json (model BPE,
 * byte-level, Qwen2's normalizer and pre-tokenizer; preferred when a folder
 * has both, as HF's fast tokenizer does). Anything else is ES_ERR_UNSUPPORTED
 * or ES_ERR_FORMAT with one line naming the file and what it holds.
 * `specials`: "cosyvoice2" (NULL means this), "cosyvoice3" or "none": the
 * tokens the recipe's tokenizer class registers after loading, in order, with
 * the ids HF gives them (an existing one keeps its id, a new one gets the next
 * free id). On failure *out is NULL.
 * The built tables are kept in a cache file ($EQUISHARD_CACHE_DIR, else
 * $XDG_CACHE_HOME/equishard or ~/.cache/equishard; EQUISHARD_CACHE_DIR=off
 * disables it), used by the next load of the same unchanged files; a stale or
 * damaged cache file is ignored and rewritten. */
ES_API int es_tokenizer_load(es_context *ctx, const char *path, const char *specials,
                             es_tokenizer **out);
ES_API void es_tokenizer_free(es_tokenizer *t);

/* Encodes text[0..len) (UTF-8; NUL bytes are text). *ids (owned by t, valid
 * until the next call on t) gets *n ids; ids may be NULL when only their
 * number is wanted. Text that is not valid UTF-8 is ES_ERR_FORMAT naming the
 * byte offset (the recipe's loaders drop such text before tokenizing it). A
 * tokenizer is used by one thread at a time. */
ES_API int es_tokenizer_encode(es_context *ctx, es_tokenizer *t, const char *text, size_t len,
                               const uint32_t **ids, size_t *n);

/* WeNet's CharTokenizer (wenet/text/char_tokenizer.py), whose ids are the
 * `label` WeNet's processor.filter(token_min_length, token_max_length, ratios)
 * counts. `symbol_table`: units.txt, lines "SYMBOL ID" (read_symbol_table);
 * `non_lang_syms`: NULL, or a file of symbols {xxx}, <xxx> or [xxx], one a line
 * (read_non_lang_symbols; giving one, even empty, also upper-cases the text
 * and splits it at such brackets, as WeNet does); `split_with_space`: nonzero
 * for tokenizer_conf's split_with_space (words, not characters). Per text:
 * Python's strip(); parts as WeNet splits them; a listed symbol is one token;
 * else each character (' ' spelled '▁') or each word of part.split(" ") is
 * one; a token not in the table gives <unk>'s id when the table has "<unk>",
 * else nothing. A line that is not "SYMBOL ID" with an integer ID (0 ..
 * 2^32-2), a symbol not in brackets, or a file that is not UTF-8 is
 * ES_ERR_FORMAT naming file and line. es_tokenizer_encode then gives the
 * table's ids; es_tokenizer_get_info: files "units.txt[+NON_LANG_SYMS]"
 * (the names given), specials "none", vocab_size the distinct ids,
 * added_tokens the non-linguistic symbols, digest the xxh3-64 of the symbol
 * table then the non_lang_syms file. On failure *out is NULL. */
ES_API int es_tokenizer_load_symbols(es_context *ctx, const char *symbol_table,
                                     const char *non_lang_syms, int split_with_space,
                                     es_tokenizer **out);

/* What was loaded. Strings are owned by t. */
typedef struct es_tokenizer_info {
    const char *path;      /* as given to es_tokenizer_load */
    const char *files;     /* "vocab.json+merges.txt[+tokenizer_config.json]" or "tokenizer.json" */
    const char *specials;  /* "cosyvoice2", "cosyvoice3" or "none" */
    size_t vocab_size;     /* distinct ids, added tokens included (HF's len(tokenizer)) */
    size_t added_tokens;   /* the tokenizer's own and the specials */
    uint64_t digest;       /* xxh3-64 of vocab.json then merges.txt, or of tokenizer.json */
    const char *kind;      /* "qwen2_bpe" (es_tokenizer_load), "wenet_char" or
                              "wenet_char_split_with_space" (es_tokenizer_load_symbols);
                              static storage */
} es_tokenizer_info;
ES_API int es_tokenizer_get_info(const es_tokenizer *t, es_tokenizer_info *out);

#ifdef __cplusplus
}
#endif
#endif
