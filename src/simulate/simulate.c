/* es_simulate: the loader's own split and batching, replayed per epoch, rank,
 * worker and trial, to show the imbalance a recipe's loader gives unplanned.
 *
 * Per epoch: split the list (split.c); per trial and worker: the worker's kept
 * utterances in reading order through the shuffle buffer, sort buffer and
 * batching rule (stream.c); per trial: a rank's batches are its workers' summed
 * (the DataLoader interleaves them), the join cut is the fewest batches of any
 * rank, and each rank trains its first `cut` batches in the DataLoader's
 * round-robin order over its workers; the rest is skipped. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/strmap.h"
#include "simulate/simulate_internal.h"
#include "loader/stream.h"

ES_API void es_simulate_defaults(es_simulate_settings *s, es_loader loader)
{
    memset(s, 0, sizeof *s);
    s->loader = loader;
    s->workers = 1;
    s->partition = 1;
    es_cost_model_defaults(&s->model);
    s->sort_size = 500;
    s->trials = 8;
    s->plan_side = 1;
    if (loader == ES_LOADER_WENET) {
        /* wenet/dataset/processor.py and its recipes (e.g. aishell): fbank at a
         * 10 ms shift, filter min_length 0, shuffle_size 1500, dynamic_batch's
         * default budget; its list shuffle cannot be replayed (see the header). */
        s->model.frame_rate = 100;
        s->model.min_length = 0;
        s->model.require_speech_token = 0; /* WeNet has no speech tokens */
        s->shuffle_size = 1500;
        s->max_frames_in_batch = 12000;
    } else {
        /* CosyVoice 2's recipe yaml: shuffle_size 1000, sort 500, dynamic 2000. */
        s->list_shuffle = 1;
        s->shuffle_size = 1000;
        s->max_frames_in_batch = 2000;
    }
}

static int check_settings(es_context *ctx, const es_simulate_settings *s)
{
    if (!es_enum_name(ES_ENUM_LOADER, s->loader))
        return es_fail(ctx, ES_ERR_USAGE, "simulate: loader: unknown value %d", (int)s->loader);
    if (s->world_size == 0)
        return es_fail(ctx, ES_ERR_USAGE, "simulate: world_size must be at least 1");
    if (s->workers == 0)
        return es_fail(ctx, ES_ERR_USAGE, "simulate: workers must be at least 1");
    if ((uint64_t)s->world_size * s->workers > (1u << 24))
        return es_fail(ctx, ES_ERR_USAGE, "simulate: world_size × workers is implausibly large");
    if (s->epoch_first > s->epoch_last || s->epoch_last - s->epoch_first >= 100000)
        return es_fail(ctx, ES_ERR_USAGE,
                       "simulate: epoch_first .. epoch_last must be at most 100000 epochs, "
                       "with epoch_first <= epoch_last");
    if (s->trials == 0 || s->trials > 100000)
        return es_fail(ctx, ES_ERR_USAGE, "simulate: trials must be 1 .. 100000");
    if (!(s->model.frame_rate > 0) || !isfinite(s->model.frame_rate))
        return es_fail(ctx, ES_ERR_USAGE, "simulate: frame_rate must be positive");
    if (es_cost_model_check_weights(ctx, "simulate", "", &s->model) != ES_OK)
        return ES_ERR_USAGE;
    if (s->batch_size == 0 && s->max_frames_in_batch == 0)
        return es_fail(ctx, ES_ERR_USAGE, "simulate: max_frames_in_batch must be positive (or batch_size set)");
    if (s->loader == ES_LOADER_WENET && s->list_shuffle)
        return es_fail(ctx, ES_ERR_UNSUPPORTED,
                       "simulate: WeNet's list_shuffle draws from torch's shared seed and "
                       "cannot be replayed; simulate it with list_shuffle off");
    if (s->plan_dir && !s->partition)
        return es_fail(ctx, ES_ERR_USAGE,
                       "simulate: a plan's split needs partition on (with partition=False the "
                       "loaders read the whole list, not the plan)");
    return ES_OK;
}

/* ---- the list: entries and their rows ---------------------------------------- */

typedef struct sim_list {
    size_t n;              /* entries */
    size_t *row_start;     /* n + 1: entry e's rows are rows[row_start[e] .. [e + 1]) */
    size_t *rows;          /* table rows grouped by entry, table order within */
    size_t *first_row;     /* n: the row that names entry e */
    /* per table row */
    uint8_t *kept;
    uint32_t *frames;
    double *seconds;
} sim_list;

static void list_release(sim_list *l)
{
    free(l->row_start);
    free(l->rows);
    free(l->first_row);
    free(l->kept);
    free(l->frames);
    free(l->seconds);
    memset(l, 0, sizeof *l);
}

/* One entry per distinct shard string, in first-appearance order (the data.list
 * order), and one per ES_FLAG_ITEM row (a raw-list line, a Kaldi entry). */
static int assign_entries(const es_cost_table *t, size_t *entry_of_row, sim_list *l)
{
    es_strmap seen = {0};
    for (size_t i = 0; i < t->n; i++) {
        const es_cost_row *row = &t->rows[i];
        size_t e = l->n;
        if (!(row->flags & ES_FLAG_ITEM)) {
            size_t len = strlen(row->shard);
            const es_strmap_slot *slot = es_strmap_get(&seen, row->shard, len);
            if (slot) {
                e = (size_t)(uintptr_t)slot->value - 1;
            } else if (es_strmap_put(&seen, row->shard, len, (const void *)(uintptr_t)(e + 1))) {
                es_strmap_release(&seen);
                return -1;
            }
        }
        if (e == l->n)
            l->first_row[l->n++] = i;
        entry_of_row[i] = e;
    }
    es_strmap_release(&seen);
    return 0;
}

static int build_list(es_context *ctx, es_simulate_result *r, const es_cost_table *t,
                      sim_list *l)
{
    size_t n = t->n;
    size_t *entry_of_row = malloc(n * sizeof *entry_of_row);
    l->first_row = malloc(n * sizeof *l->first_row);
    l->rows = malloc(n * sizeof *l->rows);
    l->row_start = calloc(n + 1, sizeof *l->row_start);
    l->kept = malloc(n);
    l->frames = malloc(n * sizeof *l->frames);
    l->seconds = malloc(n * sizeof *l->seconds);
    if (!entry_of_row || !l->first_row || !l->rows || !l->row_start || !l->kept || !l->frames ||
        !l->seconds || assign_entries(t, entry_of_row, l)) {
        free(entry_of_row);
        return es_fail(ctx, ES_ERR_NOMEM, "simulate: out of memory");
    }
    /* counting sort of rows by entry, stable */
    for (size_t i = 0; i < n; i++)
        l->row_start[entry_of_row[i] + 1]++;
    for (size_t e = 0; e < l->n; e++)
        l->row_start[e + 1] += l->row_start[e];
    size_t *fill = entry_of_row; /* reused: fill position per row's entry */
    size_t *next = malloc((l->n + 1) * sizeof *next);
    if (!next) {
        free(entry_of_row);
        return es_fail(ctx, ES_ERR_NOMEM, "simulate: out of memory");
    }
    memcpy(next, l->row_start, (l->n + 1) * sizeof *next);
    for (size_t i = 0; i < n; i++)
        l->rows[next[fill[i]]++] = i;
    free(next);
    free(entry_of_row);
    /* the filter, frames and audio of every row */
    for (size_t i = 0; i < n; i++) {
        const es_cost_row *row = &t->rows[i];
        es_filter_reason why = es_filter_row(&r->s.model, row);
        l->kept[i] = why == ES_KEEP;
        l->frames[i] = es_row_frames(&r->s.model, row);
        l->seconds[i] = row->sample_rate ? (double)row->samples / row->sample_rate : 0;
        r->filtered[why]++;
        if (why == ES_KEEP) {
            r->kept++;
            r->kept_frames += l->frames[i];
            r->kept_seconds += l->seconds[i];
        }
    }
    r->rows = n;
    r->filtered[ES_KEEP] = 0;
    return ES_OK;
}

/* Entry names (shard path, or the key of an item row) copied into the result. */
static int copy_names(es_context *ctx, es_simulate_result *r, const es_cost_table *t,
                      const sim_list *l)
{
    size_t bytes = 0;
    for (size_t e = 0; e < l->n; e++) {
        const es_cost_row *row = &t->rows[l->first_row[e]];
        bytes += strlen(row->flags & ES_FLAG_ITEM ? row->key : row->shard) + 1;
    }
    r->names = malloc(bytes ? bytes : 1);
    r->name_at = malloc((l->n ? l->n : 1) * sizeof *r->name_at);
    if (!r->names || !r->name_at)
        return es_fail(ctx, ES_ERR_NOMEM, "simulate: out of memory");
    size_t o = 0;
    for (size_t e = 0; e < l->n; e++) {
        const es_cost_row *row = &t->rows[l->first_row[e]];
        const char *name = row->flags & ES_FLAG_ITEM ? row->key : row->shard;
        size_t len = strlen(name) + 1;
        r->name_at[e] = o;
        memcpy(r->names + o, name, len);
        o += len;
    }
    r->n_entries = l->n;
    return ES_OK;
}

/* simulate --plan: the plan's rank lists, mapped onto the entries (copy_names'). */
static int read_planned(es_context *ctx, es_simulate_result *r)
{
    const char **names = malloc((r->n_entries ? r->n_entries : 1) * sizeof *names);
    r->plan_dir = strdup(r->s.plan_dir);
    if (!names || !r->plan_dir) {
        free(names);
        return es_fail(ctx, ES_ERR_NOMEM, "simulate: out of memory");
    }
    r->s.plan_dir = r->plan_dir; /* the caller's string is borrowed for the call only */
    for (size_t e = 0; e < r->n_entries; e++)
        names[e] = r->names + r->name_at[e];
    int rc = es_sim_planned_read(ctx, r->plan_dir, r->s.world_size, r->s.workers, names,
                                 r->n_entries, &r->planned);
    free(names);
    return rc;
}

/* ---- one worker's stream ------------------------------------------------------ */

typedef struct sim_thread {
    es_loader_scratch scratch;
    uint32_t *frames;
    double *seconds;
    size_t cap;
} sim_thread;

/* The kept utterances of the worker's entries, in reading order. */
static int gather_stream(const sim_list *l, const uint32_t *items, size_t n_items,
                         sim_thread *th, size_t *n_out)
{
    size_t n = 0;
    for (size_t k = 0; k < n_items; k++)
        n += l->row_start[items[k] + 1] - l->row_start[items[k]];
    if (n > th->cap) {
        free(th->frames);
        free(th->seconds);
        th->frames = malloc(n * sizeof *th->frames);
        th->seconds = malloc(n * sizeof *th->seconds);
        th->cap = th->frames && th->seconds ? n : 0;
        if (!th->cap)
            return -1;
    }
    size_t o = 0;
    for (size_t k = 0; k < n_items; k++) {
        for (size_t j = l->row_start[items[k]]; j < l->row_start[items[k] + 1]; j++) {
            size_t row = l->rows[j];
            if (!l->kept[row])
                continue;
            th->frames[o] = l->frames[row];
            th->seconds[o++] = l->seconds[row];
        }
    }
    *n_out = o;
    return 0;
}

static uint64_t splitmix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* Our draw for (seed, epoch, trial, worker): a Python Random seeded with this
 * 64-bit value, so a trial can be replayed in Python too. */
static uint64_t draw_seed(uint64_t seed, int64_t epoch, uint32_t trial, size_t unit)
{
    uint64_t x = splitmix64(seed);
    x = splitmix64(x ^ (uint64_t)epoch);
    x = splitmix64(x ^ trial);
    return splitmix64(x ^ (uint64_t)unit);
}

/* ---- the join cut ------------------------------------------------------------- */

/* How many of its batches each worker yields among the rank's first `take`,
 * in the DataLoader's order: one from each unfinished worker in turn. */
static void round_robin(const es_loader_batches *b, uint32_t W, uint64_t take, uint64_t *taken)
{
    for (uint32_t w = 0; w < W; w++)
        taken[w] = 0;
    for (uint64_t round = 0; take; round++) {
        int any = 0;
        for (uint32_t w = 0; w < W && take; w++) {
            if (b[w].n > round) {
                taken[w]++;
                take--;
                any = 1;
            }
        }
        if (!any)
            break;
    }
}

static void add_batches(sim_stats *st, uint64_t nb, uint32_t trial)
{
    st->b_sum += (double)nb;
    st->b_sq += (double)nb * (double)nb;
    if (trial == 0 || nb < st->b_min)
        st->b_min = nb;
    if (trial == 0 || nb > st->b_max)
        st->b_max = nb;
}

/* What worker w of a rank skips when it yields only its first `taken` batches. */
static void add_skipped(sim_stats *st, const es_loader_batches *b, uint64_t taken)
{
    st->trained_sum += (double)taken;
    for (size_t i = taken; i < b->n; i++) {
        st->skip_utts += b->count[i];
        st->skip_frames += (double)b->frames[i];
        st->skip_seconds += b->seconds[i];
    }
}

/* Trial t's cut over the K ranks, given every worker's batches. */
static void account_trial(const es_simulate_result *r, sim_epoch *ep, const es_loader_batches *ub,
                          uint32_t t, uint64_t *taken)
{
    uint32_t K = r->s.world_size, W = r->s.workers;
    uint64_t cut = UINT64_MAX, total = 0;
    for (uint32_t k = 0; k < K; k++) {
        uint64_t nb = 0;
        for (uint32_t w = 0; w < W; w++) {
            const es_loader_batches *b = &ub[(size_t)k * W + w];
            nb += b->n;
            add_batches(&ep->workers[(size_t)k * W + w], b->n, t);
            ep->empty_first += b->empty_first && r->s.loader == ES_LOADER_COSYVOICE;
        }
        add_batches(&ep->ranks[k], nb, t);
        ep->rank_batches[(size_t)k * r->trials + t] = nb;
        cut = nb < cut ? nb : cut;
        total += nb;
    }
    ep->min_batches[t] = cut;
    ep->total_batches[t] = total;
    es_sim_step_times(r, ep, ub, cut);
    /* batch 0 needs no barrier (cosyvoice_join), so with a cut of 0 the others
     * still train one batch before the monitored barrier times out */
    uint64_t allowed = cut ? cut : 1;
    for (uint32_t k = 0; k < K; k++) {
        const es_loader_batches *b = &ub[(size_t)k * W];
        uint64_t nb = ep->rank_batches[(size_t)k * r->trials + t];
        round_robin(b, W, nb < allowed ? nb : allowed, taken);
        sim_stats *rs = &ep->ranks[k];
        for (uint32_t w = 0; w < W; w++) {
            sim_stats *ws = &ep->workers[(size_t)k * W + w];
            double u = ws->skip_utts, f = ws->skip_frames, s = ws->skip_seconds;
            double tr = ws->trained_sum;
            add_skipped(ws, &b[w], taken[w]);
            rs->skip_utts += ws->skip_utts - u;
            rs->skip_frames += ws->skip_frames - f;
            rs->skip_seconds += ws->skip_seconds - s;
            rs->trained_sum += ws->trained_sum - tr;
        }
    }
}

/* ---- one epoch ------------------------------------------------------------------ */

static int split_epoch(const es_simulate_result *r, uint32_t n, int64_t epoch, es_loader_split *sp)
{
    const es_simulate_settings *s = &r->s;
    if (s->plan_dir) /* the plan's split, as equishard.loaders feed it */
        return es_sim_split_planned(&r->planned, epoch,
                                    s->loader == ES_LOADER_COSYVOICE && s->list_shuffle, sp);
    if (s->loader == ES_LOADER_WENET)
        return es_loader_split_wenet(n, s->world_size, s->workers, s->partition, sp);
    return es_loader_split_cosyvoice(n, s->world_size, s->workers, epoch, s->list_shuffle,
                                     s->partition, sp);
}

static es_loader_stream_rules stream_rules(const es_simulate_settings *s)
{
    es_loader_stream_rules rules = {
        .shuffle = s->loader == ES_LOADER_WENET ? ES_LOADER_SHUFFLE_RESERVOIR
                                                : ES_LOADER_SHUFFLE_CHUNK,
        .shuffle_size = s->shuffle_size,
        .sort_size = s->sort_size,
        .max_frames_in_batch = s->max_frames_in_batch,
        .batch_size = s->batch_size,
    };
    return rules;
}

/* Runs every worker's stream for trial t into ub[]; records stream totals on trial 0. */
static int run_workers(const es_simulate_result *r, const sim_list *l, sim_epoch *ep, uint32_t t,
                       es_loader_batches *ub)
{
    const es_loader_stream_rules rules = stream_rules(&r->s);
    long units = (long)((size_t)r->s.world_size * r->s.workers);
    int failed = 0;
    /* threads only pay off on real streams; small runs stay on one thread */
#pragma omp parallel reduction(| : failed) if (units > 1 && ep->rows_read >= 100000)
    {
        sim_thread th = {0};
#pragma omp for schedule(dynamic, 1)
        for (long u = 0; u < units; u++) {
            const size_t *ws = ep->split.worker_start;
            size_t n = 0;
            if (failed || gather_stream(l, ep->split.items + ws[u], ws[u + 1] - ws[u], &th, &n)) {
                failed = 1;
                continue;
            }
            es_pyrandom rng;
            es_pyrandom_seed_u64(&rng, draw_seed(r->s.seed, ep->epoch, t, (size_t)u));
            if (es_loader_stream_run(&rules, th.frames, th.seconds, n, &rng, &th.scratch, &ub[u]))
                failed = 1;
            if (t == 0) {
                sim_stats *st = &ep->workers[u];
                st->utterances = n;
                for (size_t i = 0; i < n; i++) {
                    st->frames += th.frames[i];
                    st->seconds += th.seconds[i];
                }
            }
        }
        es_loader_scratch_release(&th.scratch);
        free(th.frames);
        free(th.seconds);
    }
    return failed ? -1 : 0;
}

static int alloc_epoch(const es_simulate_result *r, sim_epoch *ep)
{
    size_t K = r->s.world_size, units = K * r->s.workers;
    ep->ranks = calloc(K, sizeof *ep->ranks);
    ep->workers = calloc(units, sizeof *ep->workers);
    ep->rank_batches = calloc(K * r->trials, sizeof *ep->rank_batches);
    ep->min_batches = calloc(r->trials, sizeof *ep->min_batches);
    ep->total_batches = calloc(r->trials, sizeof *ep->total_batches);
    ep->st_rank = calloc(K, sizeof *ep->st_rank);
    ep->st_cursor = calloc(2 * K, sizeof *ep->st_cursor);
    return ep->ranks && ep->workers && ep->rank_batches && ep->min_batches && ep->total_batches &&
                   ep->st_rank && ep->st_cursor
               ? 0
               : -1;
}

static void release_epoch(sim_epoch *ep)
{
    es_loader_split_release(&ep->split);
    free(ep->ranks);
    free(ep->workers);
    free(ep->rank_batches);
    free(ep->min_batches);
    free(ep->total_batches);
    free(ep->st_rank);
    free(ep->st_cursor);
}

static int simulate_epoch(es_context *ctx, es_simulate_result *r, const sim_list *l,
                          sim_epoch *ep)
{
    uint32_t K = r->s.world_size, W = r->s.workers;
    size_t units = (size_t)K * W;
    es_loader_batches *ub = calloc(units, sizeof *ub);
    uint64_t *taken = calloc(W, sizeof *taken);
    int rc = ES_OK;
    if (!ub || !taken || alloc_epoch(r, ep) || split_epoch(r, (uint32_t)l->n, ep->epoch, &ep->split))
        rc = es_fail(ctx, ES_ERR_NOMEM, "simulate: out of memory");
    for (size_t k = 0; rc == ES_OK && k < ep->split.worker_start[units]; k++) {
        uint32_t item = ep->split.items[k];
        ep->rows_read += l->row_start[item + 1] - l->row_start[item];
    }
    for (uint32_t t = 0; rc == ES_OK && t < r->trials; t++) {
        if (run_workers(r, l, ep, t, ub))
            rc = es_fail(ctx, ES_ERR_NOMEM, "simulate: out of memory");
        else
            account_trial(r, ep, ub, t, taken);
    }
    for (size_t u = 0; rc == ES_OK && u < units; u++) {
        sim_stats *rs = &ep->ranks[u / W];
        rs->utterances += ep->workers[u].utterances;
        rs->frames += ep->workers[u].frames;
        rs->seconds += ep->workers[u].seconds;
    }
    for (size_t u = 0; ub && u < units; u++)
        es_loader_batches_release(&ub[u]);
    free(ub);
    free(taken);
    return rc;
}

/* ---- the public entry point ----------------------------------------------------- */

ES_API int es_simulate(es_context *ctx, const es_simulate_settings *s, const es_cost_table *t,
                       es_simulate_result **out)
{
    es_clear_error(ctx);
    if (!s || !t || !out)
        return es_fail(ctx, ES_ERR_USAGE, "es_simulate: invalid arguments");
    *out = NULL;
    int rc = check_settings(ctx, s);
    if (rc != ES_OK)
        return rc;
    if (t->n == 0)
        return es_fail(ctx, ES_ERR_USAGE, "simulate: the input has no utterances");
    es_simulate_result *r = calloc(1, sizeof *r);
    if (!r)
        return es_fail(ctx, ES_ERR_NOMEM, "simulate: out of memory");
    r->s = *s;
    es_cost_model_settle(&r->s.model, t, s->loader);
    es_token_gap(&r->s.model, t, &r->token_gap);
    es_token_gap_note(&r->token_gap, r->token_note, sizeof r->token_note);
    if (t->tokenizer && !(r->tokenizer = strdup(t->tokenizer))) {
        es_simulate_result_free(r);
        return es_fail(ctx, ES_ERR_NOMEM, "simulate: out of memory");
    }
    /* a shuffle buffer of 0 or 1 draws nothing: every trial would be the same */
    r->trials = s->shuffle_size > 1 ? s->trials : 1;
    sim_list l = {0};
    rc = build_list(ctx, r, t, &l);
    if (rc == ES_OK && l.n > UINT32_MAX)
        rc = es_fail(ctx, ES_ERR_UNSUPPORTED, "simulate: more than 2^32 list entries");
    if (rc == ES_OK)
        rc = copy_names(ctx, r, t, &l);
    if (rc == ES_OK && s->plan_dir)
        rc = read_planned(ctx, r);
    size_t n_epochs = (size_t)(s->epoch_last - s->epoch_first) + 1;
    if (rc == ES_OK && !(r->epochs = calloc(n_epochs, sizeof *r->epochs)))
        rc = es_fail(ctx, ES_ERR_NOMEM, "simulate: out of memory");
    for (size_t e = 0; rc == ES_OK && e < n_epochs; e++) {
        r->epochs[e].epoch = s->epoch_first + (int64_t)e;
        r->n_epochs = e + 1;
        rc = simulate_epoch(ctx, r, &l, &r->epochs[e]);
    }
    list_release(&l);
    es_sim_planned_release(&r->planned);
    if (rc == ES_OK && s->plan_side)
        es_sim_plan_side(ctx, r, t);
    if (rc != ES_OK) {
        es_simulate_result_free(r);
        return rc;
    }
    *out = r;
    return ES_OK;
}

ES_API void es_simulate_result_free(es_simulate_result *r)
{
    if (!r)
        return;
    for (size_t e = 0; e < r->n_epochs; e++)
        release_epoch(&r->epochs[e]);
    free(r->epochs);
    free(r->names);
    free(r->name_at);
    free(r->plan_dir);
    es_sim_planned_release(&r->planned);
    es_sim_plan_side_release(r);
    free(r->tokenizer);
    free(r);
}

/* ---- accessors ------------------------------------------------------------------- */

double es_sim_mean(const es_simulate_result *r, double sum)
{
    return sum / r->trials;
}

double es_sim_stddev(const es_simulate_result *r, double sum, double sq)
{
    double n = r->trials, v = n * sq - sum * sum; /* exact for integer counts */
    return v > 0 ? sqrt(v) / n : 0;
}

ES_API int es_simulate_input_info(const es_simulate_result *r, es_simulate_input *out)
{
    if (!out)
        return ES_ERR_USAGE;
    memset(out, 0, sizeof *out);
    if (!r)
        return ES_ERR_USAGE;
    out->entries = r->n_entries;
    out->utterances = r->rows;
    out->kept = r->kept;
    out->frames = r->kept_frames;
    out->seconds = r->kept_seconds;
    out->filtered = r->filtered;
    out->token_note = r->token_note;
    return ES_OK;
}

ES_API size_t es_simulate_epoch_count(const es_simulate_result *r)
{
    return r ? r->n_epochs : 0;
}

static double mean_u64(const es_simulate_result *r, const uint64_t *v)
{
    double sum = 0;
    for (uint32_t t = 0; t < r->trials; t++)
        sum += (double)v[t];
    return sum / r->trials;
}

ES_API int es_simulate_epoch_info(const es_simulate_result *r, size_t e, es_simulate_epoch *out)
{
    if (!r || !out || e >= r->n_epochs)
        return ES_ERR_USAGE;
    const sim_epoch *ep = &r->epochs[e];
    memset(out, 0, sizeof *out);
    out->epoch = ep->epoch;
    out->min_batches = mean_u64(r, ep->min_batches);
    out->total_batches = mean_u64(r, ep->total_batches);
    out->retention = out->total_batches > 0
                         ? r->s.world_size * out->min_batches / out->total_batches
                         : 0;
    double trained = 0;
    for (uint32_t k = 0; k < r->s.world_size; k++) {
        const sim_stats *st = &ep->ranks[k];
        trained += st->trained_sum;
        out->skipped_utterances += st->skip_utts;
        out->skipped_frames += st->skip_frames;
        out->skipped_seconds += st->skip_seconds;
        out->utterances += st->utterances;
        out->frames += st->frames;
        out->seconds += st->seconds;
    }
    out->skipped_batches = out->total_batches - es_sim_mean(r, trained);
    out->skipped_utterances = es_sim_mean(r, out->skipped_utterances);
    out->skipped_frames = es_sim_mean(r, out->skipped_frames);
    out->skipped_seconds = es_sim_mean(r, out->skipped_seconds);
    out->empty_first_batches = ep->empty_first;
    return ES_OK;
}

static void stats_info(const es_simulate_result *r, const sim_stats *st, es_simulate_rank *out)
{
    out->utterances = st->utterances;
    out->frames = st->frames;
    out->seconds = st->seconds;
    out->batches = es_sim_mean(r, st->b_sum);
    out->batches_min = st->b_min;
    out->batches_max = st->b_max;
    out->batches_stddev = es_sim_stddev(r, st->b_sum, st->b_sq);
    out->trained_batches = es_sim_mean(r, st->trained_sum);
    out->skipped_utterances = es_sim_mean(r, st->skip_utts);
    out->skipped_frames = es_sim_mean(r, st->skip_frames);
    out->skipped_seconds = es_sim_mean(r, st->skip_seconds);
}

ES_API int es_simulate_rank_info(const es_simulate_result *r, size_t e, uint32_t rank,
                                 int32_t worker, es_simulate_rank *out)
{
    if (!r || !out || e >= r->n_epochs || rank >= r->s.world_size ||
        (worker >= 0 && (uint32_t)worker >= r->s.workers))
        return ES_ERR_USAGE;
    const sim_epoch *ep = &r->epochs[e];
    if (worker < 0) {
        memset(out, 0, sizeof *out);
        out->n_shards = ep->split.rank_start[rank + 1] - ep->split.rank_start[rank];
        stats_info(r, &ep->ranks[rank], out);
        return ES_OK;
    }
    size_t u = (size_t)rank * r->s.workers + (uint32_t)worker;
    memset(out, 0, sizeof *out);
    out->n_shards = ep->split.worker_start[u + 1] - ep->split.worker_start[u];
    stats_info(r, &ep->workers[u], out);
    return ES_OK;
}

ES_API const char *es_simulate_rank_shard(const es_simulate_result *r, size_t e, uint32_t rank,
                                          size_t i)
{
    if (!r || e >= r->n_epochs || rank >= r->s.world_size)
        return NULL;
    const es_loader_split *sp = &r->epochs[e].split;
    size_t b = sp->rank_start[rank];
    if (i >= sp->rank_start[rank + 1] - b)
        return NULL;
    return r->names + r->name_at[sp->rank_items[b + i]];
}
