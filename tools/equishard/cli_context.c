/* The command's contexts: the library reads no environment, so the
 * EQUISHARD_* variables docs/USAGE.md lists ("Environment") become context
 * settings here, for every context a command makes. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

/* Sleeps the milliseconds the variable holds (1 to 10 000; anything else:
 * not at all). */
static void pause_ms(const char *var)
{
    const char *v = getenv(var);
    long ms = v ? atol(v) : 0;
    if (ms > 0 && ms <= 10000) {
        struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
}

/* Test only, not an interface: EQUISHARD_TEST_PAUSE_MS holds the run after
 * each output file it creates, EQUISHARD_TEST_COMMIT_PAUSE_MS between looking
 * for OUTDIR and renaming into it, so that tests/cli/ can interrupt a run
 * mid-way or race another against it. */
static void test_hook(void *user, const char *point)
{
    (void)user;
    if (strcmp(point, "file-made") == 0)
        pause_ms("EQUISHARD_TEST_PAUSE_MS");
    else if (strcmp(point, "before-commit") == 0)
        pause_ms("EQUISHARD_TEST_COMMIT_PAUSE_MS");
}

es_context *cli_context_new(void)
{
    es_context *ctx = es_context_new();
    if (!ctx)
        return NULL;
    /* unset or anything but "0": on; a CPU_ISA too long: the best */
    (void)es_context_set(ctx, "huge_pages", getenv("EQUISHARD_HUGE_PAGES"));
    (void)es_context_set(ctx, "pages_ahead", getenv("EQUISHARD_PAGES_AHEAD"));
    (void)es_context_set(ctx, "direct_io", getenv("EQUISHARD_DIRECT_IO"));
    (void)es_context_set(ctx, "cpu_isa", getenv("EQUISHARD_CPU_ISA"));
    if (getenv("EQUISHARD_TEST_PAUSE_MS") || getenv("EQUISHARD_TEST_COMMIT_PAUSE_MS"))
        es_context_set_test_hook(ctx, test_hook, NULL);
    return ctx;
}
