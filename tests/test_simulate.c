/* equishard simulate against Python itself: Python's `random` (MT19937 seeded
 * from an int, getrandbits, _randbelow, shuffle), the loaders' split
 * (CosyVoice's DistributedSampler.sample and WeNet's sharding filter, their
 * lines written into the Python snippets below), the sort buffer and
 * dynamic_batch (processor.py), and byte-identical JSON for the same seed.
 * Each comparison runs `python3` on a snippet in a temp dir and reads its output. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_helpers.h"
#include "costs/cost_table.h"
#include "loader/py_random.h"
#include "loader/split.h"
#include "loader/stream.h"

/* ---- running python ---------------------------------------------------------- */

/* Runs `python3 -c`-style code (written to a file) with args; returns its stdout
 * (malloc'd, NUL-terminated). Fails the test when python fails. */
static char *python(const char *code, const char *args)
{
    char *dir = make_temp_dir();
    ck_assert_ptr_nonnull(dir);
    char script[4200], out[4200], cmd[9000];
    snprintf(script, sizeof script, "%s/snippet.py", dir);
    snprintf(out, sizeof out, "%s/out.txt", dir);
    FILE *fp = fopen(script, "w");
    ck_assert_ptr_nonnull(fp);
    fputs(code, fp);
    fclose(fp);
    snprintf(cmd, sizeof cmd, "python3 '%s' %s > '%s'", script, args ? args : "", out);
    int rc = system(cmd);
    ck_assert_msg(rc == 0, "python3 failed (%d): %s", rc, cmd);
    size_t len = 0;
    unsigned char *text = read_whole_file(out, &len);
    ck_assert_ptr_nonnull(text);
    char *s = realloc(text, len + 1);
    s[len] = '\0';
    unlink(script);
    unlink(out);
    rmdir(dir);
    free(dir);
    return s;
}

/* Next line of a python output; NULL at the end. */
static char *next_line(char **cursor)
{
    char *s = *cursor;
    if (!s || !*s)
        return NULL;
    char *nl = strchr(s, '\n');
    if (nl) {
        *nl = '\0';
        *cursor = nl + 1;
    } else {
        *cursor = s + strlen(s);
    }
    return s;
}

/* Appends "a b c" of n numbers to buf. */
static void join_u32(char *buf, size_t len, const uint32_t *v, size_t n)
{
    size_t o = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n && o < len; i++)
        o += (size_t)snprintf(buf + o, len - o, i ? " %u" : "%u", v[i]);
}

/* ---- Python's random -------------------------------------------------------- */

static const long long seeds[] = {0, 1, 7, 123456789, (1LL << 40) + 3, -1, -123456789};
static const size_t lengths[] = {0, 1, 2, 7, 1000, 10007};
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static const char random_py[] =
    "import random, sys\n"
    "seeds = [int(s) for s in sys.argv[1].split(',')]\n"
    "lengths = [int(n) for n in sys.argv[2].split(',')]\n"
    "for seed in seeds:\n"
    "    r = random.Random(seed)\n"
    "    print(' '.join(format(r.getrandbits(k), 'x') for k in (1, 7, 31, 32, 33, 53, 64, 65, 100, 200)))\n"
    "    print(' '.join(str(r._randbelow(n)) for n in (1, 2, 3, 1000, 2**31, 2**32, 2**32 + 1, 2**40 + 3, 2**63, 2**64 - 1)))\n"
    "    for n in lengths:\n"
    "        x = list(range(n))\n"
    "        random.Random(seed).shuffle(x)\n"
    "        print(' '.join(map(str, x)))\n"
    "    random.seed(seed)\n"  /* the module-level functions share the same state */
    "    x = list(range(50)); random.shuffle(x); print(' '.join(map(str, x)))\n";

/* getrandbits(k) in hex, as Python's format(v, 'x') writes it. */
static void bits_hex(es_pyrandom *r, unsigned k, char *buf, size_t len)
{
    uint32_t w[8] = {0};
    es_pyrandom_getrandbits_words(r, k, w);
    int top = (int)((k + 31) / 32) - 1;
    while (top > 0 && w[top] == 0)
        top--;
    size_t o = (size_t)snprintf(buf, len, "%x", w[top]);
    for (int i = top - 1; i >= 0; i--)
        o += (size_t)snprintf(buf + o, len - o, "%08x", w[i]);
}

START_TEST(py_random_matches_python)
{
    char seeds_arg[256] = "", lengths_arg[128] = "", args[400];
    for (size_t i = 0; i < COUNT(seeds); i++)
        snprintf(seeds_arg + strlen(seeds_arg), sizeof seeds_arg - strlen(seeds_arg),
                 i ? ",%lld" : "%lld", seeds[i]);
    for (size_t i = 0; i < COUNT(lengths); i++)
        snprintf(lengths_arg + strlen(lengths_arg), sizeof lengths_arg - strlen(lengths_arg),
                 i ? ",%zu" : "%zu", lengths[i]);
    snprintf(args, sizeof args, "%s %s", seeds_arg, lengths_arg);
    char *out = python(random_py, args), *cursor = out, *line;
    char *mine = malloc(10007 * 8 + 64);
    uint32_t *x = malloc(10007 * sizeof *x);
    for (size_t s = 0; s < COUNT(seeds); s++) {
        es_pyrandom r;
        es_pyrandom_seed_i64(&r, seeds[s]);
        /* getrandbits for k <= 32, > 32, > 64 */
        static const unsigned ks[] = {1, 7, 31, 32, 33, 53, 64, 65, 100, 200};
        size_t o = 0;
        for (size_t i = 0; i < COUNT(ks); i++) {
            char hex[80];
            if (ks[i] <= 64)
                snprintf(hex, sizeof hex, "%llx", (unsigned long long)es_pyrandom_getrandbits(&r, ks[i]));
            else
                bits_hex(&r, ks[i], hex, sizeof hex);
            o += (size_t)sprintf(mine + o, i ? " %s" : "%s", hex);
        }
        ck_assert_ptr_nonnull(line = next_line(&cursor));
        ck_assert_msg(!strcmp(line, mine), "seed %lld getrandbits: python %s, ours %s", seeds[s],
                      line, mine);
        static const uint64_t below[] = {1, 2, 3, 1000, 1ull << 31, 1ull << 32, (1ull << 32) + 1,
                                         (1ull << 40) + 3, 1ull << 63, UINT64_MAX};
        o = 0;
        for (size_t i = 0; i < COUNT(below); i++)
            o += (size_t)sprintf(mine + o, i ? " %llu" : "%llu",
                                 (unsigned long long)es_pyrandom_randbelow(&r, below[i]));
        ck_assert_ptr_nonnull(line = next_line(&cursor));
        ck_assert_msg(!strcmp(line, mine), "seed %lld _randbelow: python %s, ours %s", seeds[s],
                      line, mine);
        for (size_t l = 0; l < COUNT(lengths) + 1; l++) {
            size_t n = l < COUNT(lengths) ? lengths[l] : 50;
            for (size_t i = 0; i < n; i++)
                x[i] = (uint32_t)i;
            es_pyrandom_seed_i64(&r, seeds[s]);
            es_pyrandom_shuffle_u32(&r, x, n);
            join_u32(mine, 10007 * 8 + 64, x, n);
            ck_assert_ptr_nonnull(line = next_line(&cursor));
            ck_assert_msg(!strcmp(line, mine), "seed %lld: shuffle of %zu differs", seeds[s], n);
        }
    }
    free(x);
    free(mine);
    free(out);
}
END_TEST

START_TEST(seed_is_abs_and_u64)
{
    es_pyrandom a, b;
    es_pyrandom_seed_i64(&a, -5);
    es_pyrandom_seed_i64(&b, 5);
    for (int i = 0; i < 10; i++)
        ck_assert_uint_eq(es_pyrandom_u32(&a), es_pyrandom_u32(&b));
    es_pyrandom_seed_u64(&a, (1ull << 40) + 3);
    es_pyrandom_seed_i64(&b, (1LL << 40) + 3);
    for (int i = 0; i < 10; i++)
        ck_assert_uint_eq(es_pyrandom_u32(&a), es_pyrandom_u32(&b));
    ck_assert_uint_eq(es_pyrandom_getrandbits(&a, 0), 0);
}
END_TEST

/* ---- the loaders' split ------------------------------------------------------ */

/* DistributedSampler.sample (cosyvoice/dataset/dataset.py, FunAudioLLM/CosyVoice
 * 076829ab) with rank/world_size/worker_id/num_workers passed in, and WeNet's
 * sharding filter (torch _sharding_worker_init_fn + ShardingFilterIterDataPipe). */
static const char split_py[] =
    "import math, random, sys\n"
    "def cosyvoice(n, rank, world_size, worker_id, num_workers, epoch, shuffle, partition):\n"
    "    data = list(range(n))\n"
    "    if partition:\n"
    "        if shuffle:\n"
    "            random.Random(epoch).shuffle(data)\n"
    "        if len(data) < world_size:\n"
    "            data = data * math.ceil(world_size / len(data))\n"
    "            data = data[:world_size]\n"
    "        data = data[rank::world_size]\n"
    "    rank_list = data\n"
    "    if len(data) < num_workers:\n"
    "        data = data * math.ceil(num_workers / len(data))\n"
    "        data = data[:num_workers]\n"
    "    data = data[worker_id::num_workers]\n"
    "    return rank_list, data\n"
    "def wenet(n, rank, world_size, worker_id, num_workers, partition):\n"
    "    if not partition:\n"
    "        world_size, rank = 1, 0\n"
    "    instances = num_workers * world_size\n"
    "    instance_id = worker_id * world_size + rank\n"
    "    data = [i for i in range(n) if i % instances == instance_id]\n"
    "    rank_list = [i for i in range(n) if i % world_size == rank]\n"
    "    return rank_list, data\n"
    "for line in sys.stdin:\n"
    "    loader, n, k, w, epoch, shuffle, partition = line.split()\n"
    "    n, k, w, epoch, shuffle, partition = map(int, (n, k, w, epoch, shuffle, partition))\n"
    "    for r in range(k):\n"
    "        for j in range(w):\n"
    "            if loader == 'cosyvoice':\n"
    "                rl, d = cosyvoice(n, r, k, j, w, epoch, shuffle, partition)\n"
    "            else:\n"
    "                rl, d = wenet(n, r, k, j, w, partition)\n"
    "            if j == 0:\n"
    "                print('R', ' '.join(map(str, rl)))\n"
    "            print('W', ' '.join(map(str, d)))\n";

typedef struct split_case {
    int wenet;
    uint32_t n, k, w;
    int64_t epoch;
    int shuffle, partition;
} split_case;

static size_t split_cases(split_case *c, size_t cap)
{
    static const uint32_t ns[] = {1, 2, 3, 5, 7, 16, 100};
    static const uint32_t ks[] = {1, 2, 3, 8};
    static const uint32_t ws[] = {1, 2, 4};
    static const int64_t epochs[] = {-1, 0, 1, 5};
    size_t m = 0;
    for (size_t a = 0; a < COUNT(ns); a++)
        for (size_t b = 0; b < COUNT(ks); b++)
            for (size_t d = 0; d < COUNT(ws); d++)
                for (size_t e = 0; e < COUNT(epochs); e++)
                    for (int flags = 0; flags < 4 && m + 2 <= cap; flags++) {
                        int partition = flags < 2, shuffle = flags % 2 == 0;
                        if (!shuffle && e) /* the epoch does not matter then */
                            continue;
                        c[m++] = (split_case){0, ns[a], ks[b], ws[d], epochs[e], shuffle, partition};
                        if (e == 0 && shuffle) /* WeNet: list order, partition on or off */
                            c[m++] = (split_case){1, ns[a], ks[b], ws[d], 0, 0, partition};
                    }
    return m;
}

START_TEST(split_matches_python)
{
    split_case *cases = malloc(4096 * sizeof *cases);
    size_t m = split_cases(cases, 4096);
    char *dir = make_temp_dir(), input[4200];
    snprintf(input, sizeof input, "%s/cases.txt", dir);
    FILE *fp = fopen(input, "w");
    for (size_t i = 0; i < m; i++)
        fprintf(fp, "%s %u %u %u %lld %d %d\n", cases[i].wenet ? "wenet" : "cosyvoice",
                cases[i].n, cases[i].k, cases[i].w, (long long)cases[i].epoch, cases[i].shuffle,
                cases[i].partition);
    fclose(fp);
    char args[4300];
    snprintf(args, sizeof args, "< '%s'", input);
    char *out = python(split_py, args), *cursor = out, *line;
    char mine[8192];
    for (size_t i = 0; i < m; i++) {
        const split_case *c = &cases[i];
        es_loader_split sp;
        int rc = c->wenet ? es_loader_split_wenet(c->n, c->k, c->w, c->partition, &sp)
                          : es_loader_split_cosyvoice(c->n, c->k, c->w, c->epoch, c->shuffle,
                                                      c->partition, &sp);
        ck_assert_int_eq(rc, 0);
        for (uint32_t r = 0; r < c->k; r++) {
            for (uint32_t j = 0; j < c->w; j++) {
                if (j == 0) {
                    mine[0] = 'R', mine[1] = ' ';
                    join_u32(mine + 2, sizeof mine - 2, sp.rank_items + sp.rank_start[r],
                             sp.rank_start[r + 1] - sp.rank_start[r]);
                    ck_assert_ptr_nonnull(line = next_line(&cursor));
                    ck_assert_msg(!strcmp(line, mine), "%s n=%u k=%u w=%u epoch=%lld rank %u: "
                                  "python '%s', ours '%s'", c->wenet ? "wenet" : "cosyvoice",
                                  c->n, c->k, c->w, (long long)c->epoch, r, line, mine);
                }
                size_t u = (size_t)r * c->w + j;
                mine[0] = 'W', mine[1] = ' ';
                join_u32(mine + 2, sizeof mine - 2, sp.items + sp.worker_start[u],
                         sp.worker_start[u + 1] - sp.worker_start[u]);
                ck_assert_ptr_nonnull(line = next_line(&cursor));
                ck_assert_msg(!strcmp(line, mine), "%s n=%u k=%u w=%u epoch=%lld rank %u worker "
                              "%u: python '%s', ours '%s'", c->wenet ? "wenet" : "cosyvoice",
                              c->n, c->k, c->w, (long long)c->epoch, r, j, line, mine);
            }
        }
        es_loader_split_release(&sp);
    }
    ck_assert_ptr_null(next_line(&cursor));
    unlink(input);
    rmdir(dir);
    free(dir);
    free(out);
    free(cases);
}
END_TEST

/* ---- sort buffer and batching ----------------------------------------------- */

/* processor.sort (stable sort by frames per sort_size chunk) and
 * processor.dynamic_batch / static_batch (CosyVoice), fed one stream per line. */
static const char batch_py[] =
    "import sys\n"
    "def sort(data, sort_size):\n"
    "    buf = []\n"
    "    for sample in data:\n"
    "        buf.append(sample)\n"
    "        if len(buf) >= sort_size:\n"
    "            buf.sort(key=lambda x: x[0])\n"
    "            for x in buf:\n"
    "                yield x\n"
    "            buf = []\n"
    "    buf.sort(key=lambda x: x[0])\n"
    "    for x in buf:\n"
    "        yield x\n"
    "def dynamic_batch(data, max_frames_in_batch):\n"
    "    buf = []\n"
    "    longest_frames = 0\n"
    "    for sample in data:\n"
    "        new_sample_frames = sample[0]\n"
    "        longest_frames = max(longest_frames, new_sample_frames)\n"
    "        frames_after_padding = longest_frames * (len(buf) + 1)\n"
    "        if frames_after_padding > max_frames_in_batch:\n"
    "            yield buf\n"
    "            buf = [sample]\n"
    "            longest_frames = new_sample_frames\n"
    "        else:\n"
    "            buf.append(sample)\n"
    "    if len(buf) > 0:\n"
    "        yield buf\n"
    "def static_batch(data, batch_size):\n"
    "    buf = []\n"
    "    for sample in data:\n"
    "        buf.append(sample)\n"
    "        if len(buf) >= batch_size:\n"
    "            yield buf\n"
    "            buf = []\n"
    "    if len(buf) > 0:\n"
    "        yield buf\n"
    "for line in sys.stdin:\n"
    "    head, frames = line.split(':')\n"
    "    sort_size, max_frames, batch_size = map(int, head.split())\n"
    "    data = [(int(f), i) for i, f in enumerate(frames.split())]\n"
    "    if sort_size > 1:\n"
    "        data = list(sort(data, sort_size))\n"
    "    print(' '.join(str(x[1]) for x in data))\n"
    "    if batch_size:\n"
    "        batches = list(static_batch(data, batch_size))\n"
    "    else:\n"
    "        batches = list(dynamic_batch(data, max_frames))\n"
    "    print(' '.join(str(len(b)) for b in batches))\n";

static uint32_t lcg(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(*s >> 33);
}

START_TEST(stream_matches_python)
{
    enum { N = 3000 };
    static const uint32_t sort_sizes[] = {0, 3, 500, 5000};
    static const uint64_t budgets[] = {2000, 300, 12000};
    uint32_t *frames = malloc(N * sizeof *frames);
    double *seconds = malloc(N * sizeof *seconds);
    uint64_t seed = 42;
    for (size_t i = 0; i < N; i++) {
        /* mostly 40..600 frames, a few longer than the smallest budget */
        frames[i] = 40 + lcg(&seed) % 560 + (i % 97 == 0 ? 400 : 0);
        seconds[i] = frames[i] / 50.0;
    }
    frames[0] = 2500; /* the first sample alone exceeds 2000: CosyVoice's empty batch */
    char *dir = make_temp_dir(), input[4200];
    snprintf(input, sizeof input, "%s/streams.txt", dir);
    FILE *fp = fopen(input, "w");
    size_t cases = 0;
    for (size_t a = 0; a < COUNT(sort_sizes); a++) {
        for (size_t b = 0; b < COUNT(budgets) + 1; b++) {
            uint32_t batch_size = b == COUNT(budgets) ? 16 : 0;
            fprintf(fp, "%u %llu %u:", sort_sizes[a],
                    (unsigned long long)(batch_size ? 0 : budgets[b]), batch_size);
            for (size_t i = 0; i < N; i++)
                fprintf(fp, " %u", frames[i]);
            fputc('\n', fp);
            cases++;
        }
    }
    fclose(fp);
    char args[4300];
    snprintf(args, sizeof args, "< '%s'", input);
    char *out = python(batch_py, args), *cursor = out, *line;
    char *mine = malloc(N * 12);
    uint32_t *order = malloc(N * sizeof *order);
    es_loader_scratch sc = {0};
    es_loader_batches b = {0};
    for (size_t a = 0; a < COUNT(sort_sizes); a++) {
        for (size_t k = 0; k < COUNT(budgets) + 1; k++) {
            es_loader_stream_rules rules = {ES_LOADER_SHUFFLE_CHUNK, 1, sort_sizes[a],
                                            k < COUNT(budgets) ? budgets[k] : 0,
                                            k == COUNT(budgets) ? 16 : 0};
            es_pyrandom rng;
            es_pyrandom_seed_u64(&rng, 1);
            ck_assert_int_eq(es_loader_stream_order(&rules, frames, N, &rng, order), 0);
            join_u32(mine, N * 12, order, N);
            ck_assert_ptr_nonnull(line = next_line(&cursor));
            ck_assert_msg(!strcmp(line, mine), "sort_size %u: order differs", sort_sizes[a]);
            ck_assert_int_eq(es_loader_stream_run(&rules, frames, seconds, N, &rng, &sc, &b), 0);
            join_u32(mine, N * 12, b.count, b.n);
            ck_assert_ptr_nonnull(line = next_line(&cursor));
            /* Python yields the empty first batch ("0"); we count it apart */
            const char *py = line;
            if (b.empty_first) {
                ck_assert_msg(!strncmp(py, "0 ", 2), "empty first batch expected");
                py += 2;
            }
            ck_assert_msg(!strcmp(py, mine), "sort %u budget %llu: python '%.80s', ours '%.80s'",
                          sort_sizes[a], (unsigned long long)rules.max_frames_in_batch, py, mine);
            uint64_t total = 0;
            for (size_t i = 0; i < b.n; i++)
                total += b.count[i];
            ck_assert_uint_eq(total, N);
        }
    }
    ck_assert_ptr_null(next_line(&cursor));
    es_loader_batches_release(&b);
    es_loader_scratch_release(&sc);
    unlink(input);
    rmdir(dir);
    free(dir);
    free(out);
    free(mine);
    free(order);
    free(frames);
    free(seconds);
}
END_TEST

/* Both shuffle buffers emit a permutation; the chunk buffer keeps chunks apart. */
START_TEST(shuffle_buffers_permute)
{
    enum { N = 2345 };
    uint32_t frames[N], order[N];
    for (uint32_t i = 0; i < N; i++)
        frames[i] = i;
    for (int kind = 0; kind < 2; kind++) {
        es_loader_stream_rules rules = {(es_loader_shuffle)kind, 100, 0, 2000, 0};
        es_pyrandom rng;
        es_pyrandom_seed_u64(&rng, 99);
        ck_assert_int_eq(es_loader_stream_order(&rules, frames, N, &rng, order), 0);
        static unsigned char seen[N];
        memset(seen, 0, sizeof seen);
        size_t moved = 0;
        for (uint32_t i = 0; i < N; i++) {
            ck_assert_uint_lt(order[i], N);
            ck_assert(!seen[order[i]]);
            seen[order[i]] = 1;
            moved += order[i] != i;
            if (kind == ES_LOADER_SHUFFLE_CHUNK)
                ck_assert_uint_eq(order[i] / 100, i / 100);
        }
        ck_assert_uint_gt(moved, N / 2);
    }
}
END_TEST

/* ---- es_simulate end to end ------------------------------------------------- */

/* n_shards shards of uneven sizes, utterances of 1..10 s at 16 kHz. */
static es_cost_table *synthetic_table(size_t n_shards, uint64_t seed)
{
    es_cost_table *t = es_cost_table_new();
    char key[64], shard[64];
    for (size_t s = 0; s < n_shards; s++) {
        snprintf(shard, sizeof shard, "shards/shard_%06zu.tar", s);
        size_t utts = 5 + lcg(&seed) % (20 + 10 * (s % 3));
        for (size_t u = 0; u < utts; u++) {
            snprintf(key, sizeof key, "utt_%zu_%zu", s, u);
            es_cost_row row = {.key = key, .shard = shard, .pos = u, .sample_rate = 16000,
                               .channels = 1, .samples = 16000 + lcg(&seed) % 144000,
                               .audio_bytes = 1000, .text_len = 20, .spk = "",
                               .flags = ES_FLAG_AUDIO | ES_FLAG_TEXT};
            ck_assert_int_eq(es_cost_table_append(t, &row), 0);
        }
    }
    return t;
}

static unsigned char *json_bytes(const es_simulate_result *r, size_t *len)
{
    char *dir = make_temp_dir(), path[4200];
    snprintf(path, sizeof path, "%s/sim.json", dir);
    es_context *ctx = es_context_new();
    ck_assert_int_eq(es_simulate_write_json(ctx, r, path), ES_OK);
    unsigned char *b = read_whole_file(path, len);
    unlink(path);
    rmdir(dir);
    free(dir);
    es_context_free(ctx);
    return b;
}

static es_simulate_result *simulate(const es_simulate_settings *s, const es_cost_table *t)
{
    es_context *ctx = es_context_new();
    es_simulate_result *r = NULL;
    int rc = es_simulate(ctx, s, t, &r);
    ck_assert_msg(rc == ES_OK, "es_simulate: %s", es_errmsg(ctx));
    es_context_free(ctx);
    return r;
}

START_TEST(same_seed_same_bytes)
{
    es_cost_table *t = synthetic_table(37, 7);
    es_simulate_settings s;
    es_simulate_defaults(&s, ES_LOADER_COSYVOICE);
    s.world_size = 4;
    s.workers = 2;
    s.epoch_first = -1;
    s.epoch_last = 2;
    s.shuffle_size = 50;
    s.sort_size = 20;
    s.trials = 5;
    s.seed = 3;
    es_simulate_result *a = simulate(&s, t), *b = simulate(&s, t);
    size_t la, lb;
    unsigned char *ja = json_bytes(a, &la), *jb = json_bytes(b, &lb);
    ck_assert_uint_eq(la, lb);
    ck_assert(memcmp(ja, jb, la) == 0);
    /* another seed draws other shuffles: some batch count somewhere differs */
    s.seed = 4;
    es_simulate_result *c = simulate(&s, t);
    size_t lc;
    unsigned char *jc = json_bytes(c, &lc);
    ck_assert(lc != la || memcmp(ja, jc, la) != 0);
    free(ja);
    free(jb);
    free(jc);
    es_simulate_result_free(a);
    es_simulate_result_free(b);
    es_simulate_result_free(c);
    es_cost_table_free(t);
}
END_TEST

/* Large enough for the worker streams to run on threads: the bytes do not
 * depend on how many. */
START_TEST(threads_same_bytes)
{
    es_cost_table *t = synthetic_table(6000, 5);
    ck_assert_uint_gt(es_cost_table_size(t), 100000);
    es_simulate_settings s;
    es_simulate_defaults(&s, ES_LOADER_COSYVOICE);
    s.world_size = 8;
    s.workers = 2;
    s.trials = 2;
    s.plan_side = 0;
    omp_set_num_threads(1);
    es_simulate_result *a = simulate(&s, t);
    omp_set_num_threads(4);
    es_simulate_result *b = simulate(&s, t);
    size_t la, lb;
    unsigned char *ja = json_bytes(a, &la), *jb = json_bytes(b, &lb);
    ck_assert_uint_eq(la, lb);
    ck_assert(memcmp(ja, jb, la) == 0);
    free(ja);
    free(jb);
    es_simulate_result_free(a);
    es_simulate_result_free(b);
    es_cost_table_free(t);
}
END_TEST

/* es_simulate as a whole (entries, split, filter, sort, batching, sums) against
 * the same pipeline written in Python from the loaders' code, with the shuffle
 * buffer off so that the counts are exact. */
static const char e2e_py[] =
    "import math, random, sys\n"
    "rows = [tuple(map(int, l.split())) for l in open(sys.argv[1])]  # entry samples sr text\n"
    "n_entries = max(r[0] for r in rows) + 1\n"
    "for case in sys.stdin:\n"
    "    loader, K, W, epoch, sort_size, max_frames, batch_size = case.split()\n"
    "    K, W, epoch, sort_size, max_frames, batch_size = map(int, (K, W, epoch, sort_size, max_frames, batch_size))\n"
    "    frame_rate, min_length = (50, 100) if loader == 'cosyvoice' else (100, 0)\n"
    "    def keep(samples, sr, text):\n"
    "        num_frames = samples / sr * 100\n"
    "        if num_frames < min_length or num_frames > 40960: return False\n"
    "        if text < 1 or text > 200: return False\n"
    "        if num_frames != 0 and not (0.0005 <= text / num_frames <= 1): return False\n"
    "        return True\n"
    "    out = []\n"
    "    for rank in range(K):\n"
    "        total = 0\n"
    "        for worker in range(W):\n"
    "            if loader == 'cosyvoice':\n"
    "                data = list(range(n_entries))\n"
    "                random.Random(epoch).shuffle(data)\n"
    "                if len(data) < K: data = (data * math.ceil(K / len(data)))[:K]\n"
    "                data = data[rank::K]\n"
    "                if len(data) < W: data = (data * math.ceil(W / len(data)))[:W]\n"
    "                data = data[worker::W]\n"
    "            else:\n"
    "                data = [i for i in range(n_entries) if i % (K * W) == worker * K + rank]\n"
    "            stream = [int(s * frame_rate / sr) for e in data for (x, s, sr, t) in rows if x == e and keep(s, sr, t)]\n"
    "            if sort_size > 1:\n"
    "                chunks = [sorted(stream[i:i + sort_size]) for i in range(0, len(stream), sort_size)]\n"
    "                stream = [f for c in chunks for f in c]\n"
    "            if batch_size:\n"
    "                nb = math.ceil(len(stream) / batch_size)\n"
    "            else:\n"
    "                nb, buf, longest = 0, 0, 0\n"
    "                for f in stream:\n"
    "                    longest = max(longest, f)\n"
    "                    if longest * (buf + 1) > max_frames:\n"
    "                        nb += buf > 0\n"
    "                        buf, longest = 1, f\n"
    "                    else:\n"
    "                        buf += 1\n"
    "                nb += buf > 0\n"
    "            total += nb\n"
    "        out.append(str(total))\n"
    "    print(' '.join(out))\n";

START_TEST(simulate_matches_python)
{
    es_cost_table *t = synthetic_table(17, 23);
    /* a few rows the filters drop: too short, too many tokens */
    es_cost_row extra = {.key = "short", .shard = "shards/shard_000003.tar", .pos = 99,
                         .sample_rate = 16000, .channels = 1, .samples = 8000, .text_len = 3,
                         .spk = "", .flags = ES_FLAG_AUDIO | ES_FLAG_TEXT};
    ck_assert_int_eq(es_cost_table_append(t, &extra), 0);
    /* the token filters count text_tokens, not characters: the loader's 300 tokens */
    extra.key = "wordy", extra.samples = 64000, extra.text_len = 300, extra.text_tokens = 300;
    ck_assert_int_eq(es_cost_table_append(t, &extra), 0);
    char *dir = make_temp_dir(), rows_path[4200], cases_path[4200];
    snprintf(rows_path, sizeof rows_path, "%s/rows.txt", dir);
    snprintf(cases_path, sizeof cases_path, "%s/cases.txt", dir);
    FILE *fp = fopen(rows_path, "w");
    for (size_t i = 0; i < es_cost_table_size(t); i++) {
        es_cost_row r;
        es_cost_table_row(t, i, &r);
        fprintf(fp, "%d %llu %u %u\n", atoi(strrchr(r.shard, '_') + 1),
                (unsigned long long)r.samples, r.sample_rate, r.text_len);
    }
    fclose(fp);
    static const struct { const char *loader; uint32_t k, w, sort, batch; uint64_t frames; } cs[] = {
        {"cosyvoice", 3, 2, 20, 0, 2000}, {"cosyvoice", 4, 1, 0, 0, 2000},
        {"cosyvoice", 5, 4, 7, 5, 0},     {"cosyvoice", 20, 1, 500, 0, 1500},
        {"wenet", 2, 3, 20, 0, 12000},     {"wenet", 3, 2, 0, 4, 0},
        {"wenet", 7, 3, 500, 0, 3000},
    };
    fp = fopen(cases_path, "w");
    for (size_t c = 0; c < COUNT(cs); c++)
        for (int e = 0; e < 3; e++)
            fprintf(fp, "%s %u %u %d %u %llu %u\n", cs[c].loader, cs[c].k, cs[c].w, e, cs[c].sort,
                    (unsigned long long)cs[c].frames, cs[c].batch);
    fclose(fp);
    char args[8600];
    snprintf(args, sizeof args, "'%s' < '%s'", rows_path, cases_path);
    char *out = python(e2e_py, args), *cursor = out, *line;
    for (size_t c = 0; c < COUNT(cs); c++) {
        es_simulate_settings s;
        es_simulate_defaults(&s, strcmp(cs[c].loader, "wenet") ? ES_LOADER_COSYVOICE
                                                                : ES_LOADER_WENET);
        s.world_size = cs[c].k;
        s.workers = cs[c].w;
        s.epoch_last = 2;
        s.shuffle_size = 0;
        s.sort_size = cs[c].sort;
        s.batch_size = cs[c].batch;
        if (cs[c].frames)
            s.max_frames_in_batch = cs[c].frames;
        s.plan_side = 0;
        es_simulate_result *r = simulate(&s, t);
        for (size_t e = 0; e < 3; e++) {
            char mine[512] = "";
            for (uint32_t k = 0; k < s.world_size; k++) {
                es_simulate_rank rk;
                es_simulate_rank_info(r, e, k, -1, &rk);
                snprintf(mine + strlen(mine), sizeof mine - strlen(mine), k ? " %.0f" : "%.0f",
                         rk.batches);
                ck_assert_double_eq(rk.batches_stddev, 0);
            }
            ck_assert_ptr_nonnull(line = next_line(&cursor));
            ck_assert_msg(!strcmp(line, mine), "%s K=%u W=%u epoch %zu: python %s, ours %s",
                          cs[c].loader, cs[c].k, cs[c].w, e, line, mine);
        }
        es_simulate_result_free(r);
    }
    unlink(rows_path);
    unlink(cases_path);
    rmdir(dir);
    free(dir);
    free(out);
    es_cost_table_free(t);
}
END_TEST

/* The accounting: rank batches sum to the total, the cut is the fewest, every
 * rank trains min(batches, cut), what is not trained is skipped, and the trials'
 * spread brackets the expectation. */
START_TEST(join_cut_accounting)
{
    es_cost_table *t = synthetic_table(23, 11);
    for (int loader = 0; loader < 2; loader++) {
        es_simulate_settings s;
        es_simulate_defaults(&s, (es_loader)loader);
        s.world_size = 3;
        s.workers = 2;
        s.shuffle_size = 30;
        s.epoch_last = 1;
        es_simulate_result *r = simulate(&s, t);
        ck_assert_uint_eq(es_simulate_epoch_count(r), 2);
        for (size_t e = 0; e < 2; e++) {
            es_simulate_epoch ep;
            ck_assert_int_eq(es_simulate_epoch_info(r, e, &ep), ES_OK);
            double total = 0, lo = 1e300, trained = 0, skipped_utts = 0;
            uint64_t utts = 0;
            for (uint32_t k = 0; k < 3; k++) {
                es_simulate_rank rk;
                ck_assert_int_eq(es_simulate_rank_info(r, e, k, -1, &rk), ES_OK);
                total += rk.batches;
                lo = rk.batches < lo ? rk.batches : lo;
                trained += rk.trained_batches;
                skipped_utts += rk.skipped_utterances;
                utts += rk.utterances;
                ck_assert(rk.batches_min <= rk.batches && rk.batches <= rk.batches_max);
                ck_assert(rk.trained_batches <= rk.batches + 1e-9);
                double w_batches = 0;
                for (uint32_t w = 0; w < 2; w++) {
                    es_simulate_rank wk;
                    ck_assert_int_eq(es_simulate_rank_info(r, e, k, (int32_t)w, &wk), ES_OK);
                    w_batches += wk.batches;
                }
                ck_assert_double_eq_tol(w_batches, rk.batches, 1e-9);
                ck_assert_ptr_nonnull(es_simulate_rank_shard(r, e, k, 0));
                ck_assert_ptr_null(es_simulate_rank_shard(r, e, k, rk.n_shards));
            }
            ck_assert_double_eq_tol(total, ep.total_batches, 1e-9);
            ck_assert(ep.min_batches <= lo + 1e-9); /* E[min] <= min E */
            ck_assert_double_eq_tol(trained + ep.skipped_batches, total, 1e-9);
            ck_assert_double_eq_tol(ep.retention, 3 * ep.min_batches / ep.total_batches, 1e-12);
            ck_assert_double_eq_tol(trained, 3 * ep.min_batches, 1e-9);
            ck_assert_double_eq_tol(skipped_utts, ep.skipped_utterances, 1e-9);
            ck_assert_uint_eq(utts, ep.utterances);
            es_simulate_input in;
            es_simulate_input_info(r, &in);
            ck_assert_uint_eq(utts, in.kept); /* 23 shards >= 3 × 2: no repeats */
            ck_assert_uint_eq(in.entries, 23);
        }
        es_simulate_result_free(r);
    }
    es_cost_table_free(t);
}
END_TEST

/* One rank ends up with no batches: the others still train batch 0 (no barrier
 * before it in cosyvoice_join), then stop. */
START_TEST(cut_of_zero_trains_one)
{
    es_cost_table *t = es_cost_table_new();
    for (int s = 0; s < 2; s++)
        for (int u = 0; u < (s ? 1 : 40); u++) {
            char key[32], shard[32];
            snprintf(key, sizeof key, "k%d_%d", s, u);
            snprintf(shard, sizeof shard, "s%d.tar", s);
            es_cost_row row = {.key = key, .shard = shard, .pos = (uint64_t)u,
                               .sample_rate = 16000, .channels = 1,
                               .samples = s ? 800 : 64000, /* shard 1: 0.05 s, filtered */
                               .text_len = 10, .spk = "", .flags = ES_FLAG_AUDIO | ES_FLAG_TEXT};
            ck_assert_int_eq(es_cost_table_append(t, &row), 0);
        }
    es_simulate_settings s;
    es_simulate_defaults(&s, ES_LOADER_WENET); /* list order: shard 0 to rank 0 */
    s.world_size = 2;
    s.model.min_length = 100;
    s.shuffle_size = 0;
    s.max_frames_in_batch = 2000; /* 4 s = 400 frames: 5 per batch, 8 batches */
    es_simulate_result *r = simulate(&s, t);
    es_simulate_epoch ep;
    es_simulate_rank r0, r1;
    es_simulate_epoch_info(r, 0, &ep);
    es_simulate_rank_info(r, 0, 0, -1, &r0);
    es_simulate_rank_info(r, 0, 1, -1, &r1);
    ck_assert_double_eq(r0.batches, 8);
    ck_assert_double_eq(r1.batches, 0);
    ck_assert_double_eq(ep.min_batches, 0);
    ck_assert_double_eq(ep.retention, 0);
    ck_assert_double_eq(r0.trained_batches, 1);
    ck_assert_double_eq(r0.skipped_utterances, 35);
    ck_assert_double_eq(ep.skipped_batches, 7);
    es_simulate_result_free(r);
    es_cost_table_free(t);
}
END_TEST

START_TEST(bad_settings)
{
    es_cost_table *t = synthetic_table(3, 1), *empty = es_cost_table_new();
    es_context *ctx = es_context_new();
    es_simulate_settings s;
    es_simulate_result *r = NULL;
    es_simulate_defaults(&s, ES_LOADER_COSYVOICE);
    ck_assert_int_eq(es_simulate(ctx, &s, t, &r), ES_ERR_USAGE); /* world_size 0 */
    ck_assert_ptr_null(r);
    s.world_size = 2;
    ck_assert_int_eq(es_simulate(ctx, &s, empty, &r), ES_ERR_USAGE);
    ck_assert_ptr_nonnull(strstr(es_errmsg(ctx), "no utterances"));
    s.epoch_first = 3;
    s.epoch_last = 2;
    ck_assert_int_eq(es_simulate(ctx, &s, t, &r), ES_ERR_USAGE);
    es_simulate_defaults(&s, ES_LOADER_WENET);
    s.world_size = 2;
    s.list_shuffle = 1;
    ck_assert_int_eq(es_simulate(ctx, &s, t, &r), ES_ERR_UNSUPPORTED);
    ck_assert_int_eq(es_simulate_epoch_info(NULL, 0, NULL), ES_ERR_USAGE);
    es_simulate_result_free(NULL);
    es_context_free(ctx);
    es_cost_table_free(t);
    es_cost_table_free(empty);
}
END_TEST

/* Item rows (raw-list lines) are list entries of their own, named by key. */
START_TEST(item_rows_are_entries)
{
    es_cost_table *t = es_cost_table_new();
    for (int u = 0; u < 6; u++) {
        char key[32];
        snprintf(key, sizeof key, "line%d", u);
        es_cost_row row = {.key = key, .shard = "raw.list", .pos = (uint64_t)u,
                           .sample_rate = 16000, .channels = 1, .samples = 32000, .text_len = 5,
                           .spk = "", .flags = ES_FLAG_AUDIO | ES_FLAG_TEXT | ES_FLAG_ITEM};
        ck_assert_int_eq(es_cost_table_append(t, &row), 0);
    }
    es_simulate_settings s;
    es_simulate_defaults(&s, ES_LOADER_WENET);
    s.world_size = 2;
    es_simulate_result *r = simulate(&s, t);
    es_simulate_input in;
    es_simulate_input_info(r, &in);
    ck_assert_uint_eq(in.entries, 6);
    ck_assert_str_eq(es_simulate_rank_shard(r, 0, 1, 0), "line1");
    ck_assert_str_eq(es_simulate_rank_shard(r, 0, 1, 2), "line5");
    es_simulate_result_free(r);
    es_cost_table_free(t);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("simulate");
    TCase *tc = tcase_create("simulate");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, py_random_matches_python);
    tcase_add_test(tc, seed_is_abs_and_u64);
    tcase_add_test(tc, split_matches_python);
    tcase_add_test(tc, stream_matches_python);
    tcase_add_test(tc, shuffle_buffers_permute);
    tcase_add_test(tc, same_seed_same_bytes);
    tcase_add_test(tc, simulate_matches_python);
    tcase_add_test(tc, threads_same_bytes);
    tcase_add_test(tc, join_cut_accounting);
    tcase_add_test(tc, cut_of_zero_trains_one);
    tcase_add_test(tc, bad_settings);
    tcase_add_test(tc, item_rows_are_entries);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
