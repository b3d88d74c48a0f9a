#include "algo/partition.h"
#include "core/grow.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- shared helpers ----------------------------------------------------------- */

/* Decreasing cost, then increasing index: the one order every method starts from. */
static int cmp_desc(const void *a, const void *b, void *arg)
{
    const double *cost = arg;
    size_t i = *(const size_t *)a, j = *(const size_t *)b;
    if (cost[i] != cost[j])
        return cost[i] > cost[j] ? -1 : 1;
    return (i > j) - (i < j);
}

static int cmp_asc(const void *a, const void *b, void *arg)
{
    return cmp_desc(b, a, arg);
}

static size_t *order_desc(const double *cost, size_t n)
{
    size_t *order = malloc((n ? n : 1) * sizeof *order);
    if (!order)
        return NULL;
    for (size_t i = 0; i < n; i++)
        order[i] = i;
    qsort_r(order, n, sizeof *order, cmp_desc, (void *)cost);
    return order;
}

double es_partition_max_load(const double *cost, size_t n, uint32_t k, const uint32_t *bin_of)
{
    double *load = calloc(k, sizeof *load);
    double max = 0;
    if (!load)
        return INFINITY;
    for (size_t i = 0; i < n; i++)
        load[bin_of[i]] += cost[i];
    for (uint32_t b = 0; b < k; b++)
        if (load[b] > max)
            max = load[b];
    free(load);
    return max;
}

/* ---- LPT ------------------------------------------------------------------------ */

/* Min-heap of bins by (load, index). */
typedef struct bin_heap {
    uint32_t *bins;
    size_t n;
    const double *load;
} bin_heap;

static int bin_less(const bin_heap *h, uint32_t a, uint32_t b)
{
    return h->load[a] != h->load[b] ? h->load[a] < h->load[b] : a < b;
}

static void heap_down(bin_heap *h, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < h->n && bin_less(h, h->bins[l], h->bins[m]))
            m = l;
        if (r < h->n && bin_less(h, h->bins[r], h->bins[m]))
            m = r;
        if (m == i)
            return;
        uint32_t t = h->bins[i];
        h->bins[i] = h->bins[m];
        h->bins[m] = t;
        i = m;
    }
}

/* Bin b gets capacity ceil(n/k) when b < n mod k, else floor(n/k). */
static size_t capacity(size_t n, uint32_t k, uint32_t b)
{
    return n / k + (b < n % k ? 1 : 0);
}

int es_partition_lpt(const double *cost, size_t n, uint32_t k, int balanced_counts,
                     uint32_t *bin_of)
{
    size_t *order = order_desc(cost, n);
    double *load = calloc(k, sizeof *load);
    size_t *count = calloc(k, sizeof *count);
    bin_heap h = {malloc(k * sizeof(uint32_t)), k, load};
    if (!order || !load || !count || !h.bins) {
        free(order), free(load), free(count), free(h.bins);
        return -1;
    }
    for (uint32_t b = 0; b < k; b++)
        h.bins[b] = b; /* all loads 0: already a heap by index */
    for (size_t t = 0; t < n; t++) {
        uint32_t b = h.bins[0];
        bin_of[order[t]] = b;
        load[b] += cost[order[t]];
        count[b]++;
        if (balanced_counts && count[b] == capacity(n, k, b)) {
            h.bins[0] = h.bins[--h.n]; /* full: leaves the heap */
        }
        heap_down(&h, 0);
    }
    free(order), free(load), free(count), free(h.bins);
    return 0;
}

/* ---- Karmarkar–Karp, k-way -------------------------------------------------------- */

/* A partial partition: k slots kept in decreasing order of sum. Slot s of
 * partition p lives at slots[p * k + s]; its items form a linked list. */
typedef struct kk_slot {
    double sum;
    int64_t head, tail; /* item indices, -1 = empty */
} kk_slot;

typedef struct kk {
    kk_slot *slots;
    int64_t *next; /* item → next item in its slot's list */
    uint32_t k;
    size_t *heap; /* partitions, max-heap by spread then lower id */
    size_t heap_n;
} kk;

static double spread(const kk *s, size_t p)
{
    return s->slots[p * s->k].sum - s->slots[p * s->k + s->k - 1].sum;
}

static int kk_before(const kk *s, size_t a, size_t b)
{
    double da = spread(s, a), db = spread(s, b);
    return da != db ? da > db : a < b;
}

static void kk_sift_down(kk *s, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < s->heap_n && kk_before(s, s->heap[l], s->heap[m]))
            m = l;
        if (r < s->heap_n && kk_before(s, s->heap[r], s->heap[m]))
            m = r;
        if (m == i)
            return;
        size_t t = s->heap[i];
        s->heap[i] = s->heap[m];
        s->heap[m] = t;
        i = m;
    }
}

static void kk_sift_up(kk *s, size_t i)
{
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!kk_before(s, s->heap[i], s->heap[parent]))
            return;
        size_t t = s->heap[i];
        s->heap[i] = s->heap[parent];
        s->heap[parent] = t;
        i = parent;
    }
}

static size_t kk_pop(kk *s)
{
    size_t top = s->heap[0];
    s->heap[0] = s->heap[--s->heap_n];
    kk_sift_down(s, 0);
    return top;
}

static int cmp_slot_desc(const void *a, const void *b)
{
    const kk_slot *x = a, *y = b;
    if (x->sum != y->sum)
        return x->sum > y->sum ? -1 : 1;
    return (x->head > y->head) - (x->head < y->head); /* deterministic tie order */
}

/* Merges partition b into a: a's largest slot with b's smallest, and so on. */
static void kk_combine(kk *s, size_t a, size_t b)
{
    kk_slot *sa = &s->slots[a * s->k], *sb = &s->slots[b * s->k];
    for (uint32_t i = 0; i < s->k; i++) {
        kk_slot *x = &sa[i], *y = &sb[s->k - 1 - i];
        x->sum += y->sum;
        if (y->head < 0)
            continue;
        if (x->head < 0) {
            x->head = y->head;
        } else {
            s->next[x->tail] = y->head;
        }
        x->tail = y->tail;
    }
    qsort(sa, s->k, sizeof *sa, cmp_slot_desc);
}

/* Above this many slots KK's memory (24 bytes a slot) is not worth it. */
#define KK_MAX_SLOTS (1u << 22)

int es_partition_kk(const double *cost, size_t n, uint32_t k, uint32_t *bin_of)
{
    if (n == 0)
        return 0;
    if ((uint64_t)n * k > KK_MAX_SLOTS)
        return es_partition_lpt(cost, n, k, 0, bin_of);
    kk s = {malloc(n * k * sizeof(kk_slot)), malloc(n * sizeof(int64_t)), k,
            malloc(n * sizeof(size_t)), 0};
    if (!s.slots || !s.next || !s.heap) {
        free(s.slots), free(s.next), free(s.heap);
        return -1;
    }
    for (size_t p = 0; p < n; p++) {
        kk_slot *sl = &s.slots[p * k];
        sl[0] = (kk_slot){cost[p], (int64_t)p, (int64_t)p};
        for (uint32_t j = 1; j < k; j++)
            sl[j] = (kk_slot){0, -1, -1};
        s.next[p] = -1;
        s.heap[s.heap_n++] = p;
        kk_sift_up(&s, s.heap_n - 1);
    }
    while (s.heap_n > 1) {
        size_t a = kk_pop(&s), b = kk_pop(&s);
        kk_combine(&s, a, b);
        s.heap[s.heap_n++] = a;
        kk_sift_up(&s, s.heap_n - 1);
    }
    kk_slot *final = &s.slots[s.heap[0] * k];
    for (uint32_t j = 0; j < k; j++)
        for (int64_t i = final[j].head; i >= 0; i = s.next[i])
            bin_of[i] = j;
    free(s.slots), free(s.next), free(s.heap);
    return 0;
}

/* ---- pairwise refinement ---------------------------------------------------------- */

typedef struct bins {
    size_t **items; /* items[b]: the bin's item indices */
    size_t *count, *cap;
    double *load;
    uint32_t k;
} bins;

static void bins_free(bins *B)
{
    for (uint32_t b = 0; B->items && b < B->k; b++)
        free(B->items[b]);
    free(B->items), free(B->count), free(B->cap), free(B->load);
}

static int bins_push(bins *B, uint32_t b, size_t item)
{
    if (B->count[b] == B->cap[b]) {
        void *p = B->items[b];
        if (es_grow(&p, &B->cap[b], B->cap[b] + 1, sizeof *B->items[b], 8))
            return -1;
        B->items[b] = p;
    }
    B->items[b][B->count[b]++] = item;
    return 0;
}

static int bins_build(bins *B, const double *cost, size_t n, uint32_t k, const uint32_t *bin_of)
{
    B->k = k;
    B->items = calloc(k, sizeof *B->items);
    B->count = calloc(k, sizeof *B->count);
    B->cap = calloc(k, sizeof *B->cap);
    B->load = calloc(k, sizeof *B->load);
    if (!B->items || !B->count || !B->cap || !B->load)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (bins_push(B, bin_of[i], i))
            return -1;
        B->load[bin_of[i]] += cost[i];
    }
    return 0;
}

/* The best move or swap between the fullest bin m and bin b: the exchange d
 * (cost leaving m minus cost entering it) closest to half their gap, with
 * 0 < d < gap so that both bins end below m's old load. Bin b's items are
 * sorted by cost so each of m's items finds its partner by binary search. */
typedef struct exchange {
    size_t pos_m, pos_b; /* positions in the bins' item arrays; pos_b = SIZE_MAX: move */
    double d;
} exchange;

static void consider(exchange *best, double *best_err, double d, double gap, size_t i,
                     size_t j, int *found)
{
    double err = fabs(d - gap / 2);
    if (d > 0 && d < gap && err < *best_err) {
        *best = (exchange){i, j, d};
        *best_err = err;
        *found = 1;
    }
}

static int find_exchange(bins *B, const double *cost, uint32_t m, uint32_t b,
                         int allow_moves, exchange *best)
{
    double gap = B->load[m] - B->load[b], best_err = INFINITY;
    int found = 0;
    size_t *items = B->items[b], nb = B->count[b];
    if (nb > 1) /* an empty bin has no array at all */
        qsort_r(items, nb, sizeof *items, cmp_asc, (void *)cost);
    for (size_t i = 0; i < B->count[m]; i++) {
        double ci = cost[B->items[m][i]];
        if (allow_moves)
            consider(best, &best_err, ci, gap, i, SIZE_MAX, &found);
        /* first j with cost[j] >= ci - gap/2; it and its left neighbour are the
         * candidates closest to the ideal partner */
        double want = ci - gap / 2;
        size_t lo = 0, hi = nb;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (cost[items[mid]] < want)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo < nb)
            consider(best, &best_err, ci - cost[items[lo]], gap, i, lo, &found);
        if (lo > 0)
            consider(best, &best_err, ci - cost[items[lo - 1]], gap, i, lo - 1, &found);
    }
    /* An exchange must shrink the pair's maximum by a meaningful amount, or the
     * loop could chase rounding noise. */
    return found && best->d > gap * 1e-12;
}

static int apply_exchange(bins *B, uint32_t m, uint32_t b, const exchange *x, uint32_t *bin_of)
{
    size_t im = B->items[m][x->pos_m];
    if (x->pos_b == SIZE_MAX) {
        B->items[m][x->pos_m] = B->items[m][--B->count[m]];
        if (bins_push(B, b, im))
            return -1;
    } else {
        size_t ib = B->items[b][x->pos_b];
        B->items[m][x->pos_m] = ib;
        B->items[b][x->pos_b] = im;
        bin_of[ib] = m;
    }
    bin_of[im] = b;
    B->load[m] -= x->d;
    B->load[b] += x->d;
    return 0;
}

static uint32_t fullest(const bins *B)
{
    uint32_t m = 0;
    for (uint32_t b = 1; b < B->k; b++)
        if (B->load[b] > B->load[m])
            m = b;
    return m;
}

static uint32_t lightest(const bins *B)
{
    uint32_t l = 0;
    for (uint32_t b = 1; b < B->k; b++)
        if (B->load[b] < B->load[l])
            l = b;
    return l;
}

int es_partition_refine(const double *cost, size_t n, uint32_t k, int balanced_counts,
                        uint32_t *bin_of)
{
    bins B = {0};
    if (bins_build(&B, cost, n, k, bin_of)) {
        bins_free(&B);
        return -1;
    }
    /* Each round strictly lowers the fullest bin or stops. The bound keeps huge
     * inputs (millions of raw-list rows) in seconds; there LPT's gap is already
     * below one item's cost. */
    size_t rounds = 4 * n + 16 < 20000 ? 4 * n + 16 : 20000;
    for (size_t round = 0; round < rounds; round++) {
        uint32_t m = fullest(&B), light = lightest(&B);
        int improved = 0;
        /* the lightest bin first (the widest gap), then the others in order */
        for (int64_t t = -1; t < (int64_t)k && !improved; t++) {
            uint32_t b = t < 0 ? light : (uint32_t)t;
            exchange x;
            if (b == m || (t >= 0 && b == light) ||
                !find_exchange(&B, cost, m, b, !balanced_counts, &x))
                continue;
            if (apply_exchange(&B, m, b, &x, bin_of)) {
                bins_free(&B);
                return -1;
            }
            improved = 1;
        }
        if (!improved)
            break;
    }
    bins_free(&B);
    return 0;
}

/* ---- the best of them ------------------------------------------------------------- */

int es_partition(const double *cost, size_t n, uint32_t k, int balanced_counts,
                 uint32_t *bin_of, es_partition_result *res)
{
    uint32_t *alt = malloc((n ? n : 1) * sizeof *alt);
    if (!alt || es_partition_lpt(cost, n, k, balanced_counts, bin_of) ||
        es_partition_refine(cost, n, k, balanced_counts, bin_of)) {
        free(alt);
        return -1;
    }
    res->max_load = es_partition_max_load(cost, n, k, bin_of);
    res->method = "lpt+swap";
    if (!balanced_counts && (uint64_t)n * k <= KK_MAX_SLOTS) {
        if (es_partition_kk(cost, n, k, alt) || es_partition_refine(cost, n, k, 0, alt)) {
            free(alt);
            return -1;
        }
        double kk_max = es_partition_max_load(cost, n, k, alt);
        if (kk_max < res->max_load) {
            memcpy(bin_of, alt, n * sizeof *alt);
            res->max_load = kk_max;
            res->method = "kk+swap";
        }
    }
    free(alt);
    return 0;
}
