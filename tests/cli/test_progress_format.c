/* The progress line's pure parts (tools/equishard/cli_progress.c): the rate
 * limit and the formatting of counts, clocks, bytes and the whole line.
 * Expected strings are written out by hand from the rules in cli_progress.h. */
#include <stdio.h>
#include <string.h>

#include "tools/equishard/cli_progress.h"

static int failures;

static void same(const char *what, const char *got, const char *want)
{
    if (strcmp(got, want) != 0) {
        fprintf(stderr, "FAIL %s: got '%s', want '%s'\n", what, got, want);
        failures++;
    }
}

static void is(const char *what, int got, int want)
{
    if (got != want) {
        fprintf(stderr, "FAIL %s: got %d, want %d\n", what, got, want);
        failures++;
    }
}

int main(void)
{
    char b[256];
    /* digit groups */
    same("group 0", cli_group(b, sizeof b, 0), "0");
    same("group 999", cli_group(b, sizeof b, 999), "999");
    same("group 4725", cli_group(b, sizeof b, 4725), "4 725");
    same("group 1000000", cli_group(b, sizeof b, 1000000), "1 000 000");
    same("group 18446744073709551615", cli_group(b, sizeof b, 18446744073709551615ull),
         "18 446 744 073 709 551 615");
    same("group truncated", cli_group(b, 4, 4725), "4 7");

    /* clocks, rounded up */
    same("clock 0", cli_clock(b, sizeof b, 0), "0:00");
    same("clock 0.2", cli_clock(b, sizeof b, 0.2), "0:01");
    same("clock 59.5", cli_clock(b, sizeof b, 59.5), "1:00");
    same("clock 3599", cli_clock(b, sizeof b, 3599), "59:59");
    same("clock 3600", cli_clock(b, sizeof b, 3600), "1:00:00");
    same("clock 100000", cli_clock(b, sizeof b, 100000), "27:46:40");
    same("clock -1", cli_clock(b, sizeof b, -1), "?");

    /* bytes, powers of 1000 */
    same("bytes 0", cli_bytes(b, sizeof b, 0), "0 B");
    same("bytes 999", cli_bytes(b, sizeof b, 999), "999 B");
    same("bytes 1000", cli_bytes(b, sizeof b, 1000), "1.0 kB");
    same("bytes 1234567", cli_bytes(b, sizeof b, 1234567), "1.2 MB");
    same("bytes 999999", cli_bytes(b, sizeof b, 999999), "1.0 MB");
    same("bytes 740e6", cli_bytes(b, sizeof b, 740000000), "740.0 MB");
    same("bytes 3.1e9", cli_bytes(b, sizeof b, 3100000000ull), "3.1 GB");

    /* the line: 4725 of 6250 in 2.5 s = 1890/s, 1525 left = 0.81 s -> 0:01 */
    same("line", cli_progress_format(b, sizeof b, "measure", "shards", 4725, 6250, 2.5),
         "measure: 4 725 / 6 250 shards   75%  1 890 shards/s  ETA 0:01");
    same("line done", cli_progress_format(b, sizeof b, "measure", "shards", 6250, 6250, 2.5),
         "measure: 6 250 / 6 250 shards  100%  2 500 shards/s");
    same("line at start", cli_progress_format(b, sizeof b, "measure", "shards", 0, 6250, 0),
         "measure: 0 / 6 250 shards    0%");
    same("line no total", cli_progress_format(b, sizeof b, "copy", "bytes", 10, 0, 1),
         "copy: 10 / 0 bytes  10 bytes/s");
    same("line short buffer", cli_progress_format(b, 12, "measure", "shards", 1, 2, 1),
         "measure: 1 ");

    /* the rate limit: first paint, then not before 0.1 s, except the last item */
    is("due first", cli_progress_due(5.0, -1, 1, 100), 1);
    is("due too soon", cli_progress_due(5.05, 5.0, 2, 100), 0);
    is("due after 0.1 s", cli_progress_due(5.1001, 5.0, 3, 100), 1);
    is("due last item", cli_progress_due(5.01, 5.0, 100, 100), 1);
    /* 10 000 callbacks over one simulated second: about 10 paints, not 10 000 */
    double last = -1;
    int paints = 0;
    for (int i = 1; i <= 10000; i++) {
        double now = i * 1e-4;
        if (cli_progress_due(now, last, (size_t)i, 10000))
            last = now, paints++;
    }
    if (paints < 10 || paints > 12) {
        fprintf(stderr, "FAIL rate: %d paints in one second of 10000 callbacks\n", paints);
        failures++;
    }
    if (!failures)
        printf("ok\n");
    return failures != 0;
}
