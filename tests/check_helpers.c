#include "check_helpers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *env_path(const char *var, const char *rel, char *buf, size_t len)
{
    const char *base = getenv(var);
    if (!base) {
        fprintf(stderr, "%s is not set; run the tests through `meson test`\n", var);
        exit(2);
    }
    snprintf(buf, len, "%s/%s", base, rel);
    return buf;
}

const char *fixture_path(const char *rel)
{
    static char buf[4096];
    return env_path("ES_FIXTURES", rel, buf, sizeof buf);
}

const char *testdata_path(const char *rel)
{
    static char buf[4096];
    return env_path("ES_TESTDATA", rel, buf, sizeof buf);
}

char *make_temp_dir(void)
{
    const char *tmp = getenv("TMPDIR");
    char tmpl[4096];
    snprintf(tmpl, sizeof tmpl, "%s/es-test-XXXXXX", tmp ? tmp : "/tmp");
    if (!mkdtemp(tmpl))
        return NULL;
    return strdup(tmpl);
}

unsigned char *read_whole_file(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    unsigned char *buf = malloc(cap);
    size_t r;
    while (buf && (r = fread(buf + n, 1, cap - n, fp)) > 0) {
        n += r;
        if (n == cap) {
            unsigned char *p = realloc(buf, cap *= 2);
            if (!p) {
                free(buf);
                buf = NULL;
            }
            buf = p;
        }
    }
    fclose(fp);
    *len = n;
    return buf;
}

int run_suite(Suite *s)
{
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
