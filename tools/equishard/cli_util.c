#include "cli.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int cli_exit_code(int status)
{
    switch (status) {
    case ES_OK:
        return EXIT_OK;
    case ES_ERR_USAGE:
    case ES_ERR_IO:
    case ES_ERR_FORMAT:
    case ES_ERR_UNSUPPORTED:
        return EXIT_BAD_INPUT;
    default:
        return EXIT_INTERNAL;
    }
}

int cli_fail(const char *message, int status)
{
    fprintf(stderr, "equishard: %s\n", message);
    return cli_exit_code(status);
}

void cli_progress_init(cli_progress *p, const char *what, int quiet)
{
    p->enabled = !quiet && isatty(STDERR_FILENO);
    p->what = what;
}

void cli_progress_update(void *user, size_t done, size_t total)
{
    cli_progress *p = user;
    if (p->enabled)
        fprintf(stderr, "\r%s: %zu/%zu", p->what, done, total);
}

void cli_progress_end(cli_progress *p)
{
    if (p->enabled)
        fprintf(stderr, "\r\033[K");
}

int cli_parse_int(const char *s, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < 0 || v > INT_MAX)
        return -1;
    *out = (int)v;
    return 0;
}
