/* Fuzzes the measure part reader: es_measure_job_add_part, what `mpirun
 * equishard measure|plan` takes from the other processes, then the merge
 * (es_measure_job_finish). The job is corpus_a's four-shard list (units only:
 * job_new opens no shard). Besides "no crash, no leak", it checks the contract:
 * a part is added or refused with ES_ERR_FORMAT / ES_ERR_USAGE (another job's)
 * / ES_ERR_UNSUPPORTED (rows in another table version) and a message;
 * units added once cannot be added again; the merge gives a table whose rows
 * hold the table's invariants, or fails with a message. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <equishard/equishard_experimental.h>

#include "fuzz_table.h"

/* corpus_a, whose shard list names its shards relative to it: $ES_FIXTURES
 * (the replay test), else from the repository root (tools/dev.sh,
 * tools/fuzz.sh). */
static const char *corpus(void)
{
    static char path[4096];
    const char *fix = getenv("ES_FIXTURES");
    snprintf(path, sizeof path, "%s/corpus_a", fix ? fix : "tests/fixtures");
    return path;
}

static const char *list_path(void)
{
    static char path[4200];
    snprintf(path, sizeof path, "%s/shards/shards.list", corpus());
    return path;
}

/* The part's record count (header: magic, units, records), or 0. */
static uint64_t records(const uint8_t *data, size_t size)
{
    uint64_t v = 0;
    for (int i = 7; size >= 24 && i >= 0; i--)
        v = v << 8 | data[16 + i];
    return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    es_context *ctx = es_context_new();
    es_measure_settings s;
    es_measure_defaults(&s);
    s.threads = 1;
    s.root = corpus(); /* a shard list's first entry must be there (job_new checks it) */
    const char *inputs[] = {list_path()};
    es_measure_job *job = NULL;
    check(es_measure_job_new(ctx, &s, inputs, 1, &job) == ES_OK);
    check(es_measure_job_units(job) == 4);
    int rc = es_measure_job_add_part(ctx, job, data, size);
    check(rc == ES_OK || rc == ES_ERR_FORMAT || rc == ES_ERR_USAGE || rc == ES_ERR_UNSUPPORTED ||
          rc == ES_ERR_NOMEM);
    check(rc == ES_OK || es_errmsg(ctx)[0] != '\0');
    if (rc == ES_OK) {
        /* every unit it held is measured now: the same part again is refused */
        if (records(data, size) > 0)
            check(es_measure_job_add_part(ctx, job, data, size) == ES_ERR_FORMAT);
        es_cost_table *t = NULL;
        rc = es_measure_job_finish(ctx, job, &t);
        check((rc == ES_OK) == (t != NULL));
        check(rc == ES_OK || es_errmsg(ctx)[0] != '\0');
        if (t)
            check_table(t);
        es_cost_table_free(t);
    }
    es_measure_job_free(job);
    es_context_free(ctx);
    return 0;
}
