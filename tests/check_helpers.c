#include "check_helpers.h"

#include <ftw.h>
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

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st, (void)type, (void)ftw; /* nftw's callback: remove files and folders alike */
    return remove(path);
}

int remove_tree(const char *dir)
{
    return nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Folders make_temp_dir made in this process, removed (with what is left in
 * them) when it exits: many tests only rmdir() theirs, which fails once a
 * test wrote a file there, and they piled up in /tmp. Check runs each test in
 * a forked child, whose exit runs this. */
static char *made[256];
static size_t n_made;

static void remove_made(void)
{
    for (size_t i = 0; i < n_made; i++) {
        remove_tree(made[i]);
        free(made[i]);
    }
    n_made = 0;
}

char *make_temp_dir(void)
{
    const char *tmp = getenv("TMPDIR");
    char tmpl[4096];
    snprintf(tmpl, sizeof tmpl, "%s/es-test-XXXXXX", tmp ? tmp : "/tmp");
    if (!mkdtemp(tmpl))
        return NULL;
    if (n_made == 0)
        atexit(remove_made);
    if (n_made < sizeof made / sizeof made[0])
        made[n_made++] = strdup(tmpl);
    return strdup(tmpl);
}

static char *temp_dir;

static void temp_dir_setup(void)
{
    temp_dir = make_temp_dir();
    ck_assert_msg(temp_dir != NULL, "cannot create a temporary folder");
}

static void temp_dir_teardown(void)
{
    if (temp_dir)
        remove_tree(temp_dir);
    free(temp_dir);
    temp_dir = NULL;
}

void tcase_add_temp_dir(TCase *tc) { tcase_add_checked_fixture(tc, temp_dir_setup, temp_dir_teardown); }

const char *test_dir(void)
{
    ck_assert_msg(temp_dir != NULL, "test_dir() outside a tcase_add_temp_dir test case");
    return temp_dir;
}

const char *test_path(const char *rel)
{
    static char buf[4096];
    snprintf(buf, sizeof buf, "%s/%s", test_dir(), rel);
    return buf;
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

void progress_record(void *user, size_t done, size_t total)
{
    progress_seen *s = user;
    s->backwards += s->calls && done < s->last_done;
    s->total_changed += s->calls && total != s->last_total;
    s->before_end += done < total;
    s->calls++;
    s->last_done = done;
    s->last_total = total;
}

size_t skip_count(const es_cost_table *t)
{
    size_t n = 0;
    while (es_cost_table_skip(t, n))
        n++;
    return n;
}
