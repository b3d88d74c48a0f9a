/* The option-table layer (cli_options.h): getopt_long array and short-option
 * string from the tables, one apply per kind, the uniform bad-value line, and
 * the option lines of --help. One place, so every command parses, refuses and
 * documents its options the same way. */
#include "cli_options.h"

#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* getopt's values: a table's long-only options from LONG_ONLY on; --version
 * one no option character can be. */
enum { OPT_VERSION = 1, LONG_ONLY = 256, HELP_COLUMN = 28 };

/* ---- the getopt_long view of the tables ---------------------------------------- */

typedef struct parser {
    struct option *longs;    /* {0}-terminated; --help last */
    const cli_option **opts; /* by index: val - LONG_ONLY */
    size_t n;
    char shorts[64];
} parser;

static int parser_init(parser *p, const cli_command *c)
{
    size_t n = 0;
    for (size_t t = 0; t < c->n_tables; t++)
        n += c->tables[t].n;
    p->longs = calloc(n + 3, sizeof *p->longs);
    p->opts = calloc(n + 1, sizeof *p->opts);
    if (!p->longs || !p->opts)
        return -1;
    size_t at = 0, s = 0;
    p->shorts[s++] = ':'; /* a missing value is ':', told apart from an unknown option */
    for (size_t t = 0; t < c->n_tables; t++)
        for (size_t i = 0; i < c->tables[t].n; i++) {
            const cli_option *o = &c->tables[t].opts[i];
            int arg = o->kind != CLI_FLAG && (o->kind != CLI_CUSTOM || o->has_arg);
            p->opts[at] = o;
            p->longs[at] = (struct option){o->name, arg ? required_argument : no_argument, NULL,
                                           o->short_name ? o->short_name : LONG_ONLY + (int)at};
            at++;
            if (o->short_name && s + 3 < sizeof p->shorts) {
                p->shorts[s++] = o->short_name;
                if (arg)
                    p->shorts[s++] = ':';
            }
        }
    p->longs[at] = (struct option){"help", no_argument, NULL, 'h'};
    p->longs[at + 1] = (struct option){"version", no_argument, NULL, OPT_VERSION};
    p->n = at;
    p->shorts[s++] = 'h';
    p->shorts[s] = '\0';
    return 0;
}

static void parser_release(parser *p)
{
    free(p->longs);
    free(p->opts);
}

static const cli_option *parser_find(const parser *p, int val)
{
    if (val >= LONG_ONLY && (size_t)(val - LONG_ONLY) < p->n)
        return p->opts[val - LONG_ONLY];
    for (size_t i = 0; i < p->n; i++)
        if (p->opts[i]->short_name && p->opts[i]->short_name == val)
            return p->opts[i];
    return NULL;
}

/* ---- what a value should have been ------------------------------------------------ */

static void enum_names(int e, const char *sep, const char *last, char *buf, size_t len)
{
    size_t n = es_enum_size(e), at = 0;
    buf[0] = '\0';
    for (size_t v = 0; v < n && at < len; v++)
        at += (size_t)snprintf(buf + at, len - at, "%s%s", v == 0 ? "" : v + 1 == n ? last : sep,
                               es_enum_name(e, (int)v));
}

/* The upper bound of a CLI_UINT: .max, or the field type's (.max 0). */
static unsigned long long type_max(const cli_option *o)
{
    return o->size == 4 ? UINT32_MAX : ULLONG_MAX;
}

static unsigned long long upper(const cli_option *o)
{
    return o->max ? o->max : type_max(o);
}

static void want_text(const cli_option *o, char *buf, size_t len)
{
    if (o->want)
        snprintf(buf, len, "%s", o->want);
    else if (o->kind == CLI_ENUM)
        enum_names(o->en, ", ", " or ", buf, len);
    else if (o->kind == CLI_UINT && upper(o) < type_max(o))
        snprintf(buf, len, "a whole number from %llu to %llu", o->min, o->max);
    else if (o->kind == CLI_UINT || o->kind == CLI_INT)
        snprintf(buf, len, "a whole number >= %llu", o->min);
    else if (o->kind == CLI_I64)
        snprintf(buf, len, "a whole number");
    else if (o->kind == CLI_NUM)
        snprintf(buf, len, "a number %s %g", o->excl ? ">" : ">=", o->dmin);
    else
        snprintf(buf, len, "a number");
}

/* The command cli_options_parse is parsing: a bad value's line is followed
 * by its usage (getopt's state is global too: one parse at a time). */
static const cli_command *parsing;

void cli_options_hint(const cli_command *c)
{
    const char *blank = strstr(c->intro, "\n\n"); /* the usage line(s) end there */
    size_t n = blank ? (size_t)(blank - c->intro) + 1 : strlen(c->intro);
    fwrite(c->intro, 1, n, stderr);
    fprintf(stderr, "see 'equishard %s --help'\n", c->name);
}

int cli_usage_error(const cli_command *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "equishard %s: ", c->name);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    cli_options_hint(c);
    return -1;
}

int cli_option_bad(const char *command, const cli_option *o, const char *arg, const char *want)
{
    char buf[256];
    if (!command) /* a prescan: silent */
        return -2;
    if (!want) {
        want_text(o, buf, sizeof buf);
        want = buf;
    }
    fprintf(stderr, "equishard %s: bad value '%s' for --%s: %s\n", command, arg, o->name, want);
    if (parsing)
        cli_options_hint(parsing);
    return -2;
}

/* ---- applying one option ------------------------------------------------------------ */

static void store_whole(const cli_option *o, void *field, unsigned long long v)
{
    if (o->zero_is_one && v == 0)
        v = 1;
    if (o->size == 4) {
        uint32_t u = (uint32_t)v; /* an int field holds the same bits for v <= INT_MAX */
        memcpy(field, &u, sizeof u);
    } else {
        uint64_t u = v;
        memcpy(field, &u, sizeof u);
    }
}

static int parse_anynum(const char *arg, double *out)
{
    char *end;
    double v = strtod(arg, &end);
    if (end == arg || *end)
        return -1;
    *out = v;
    return 0;
}

/* 0, -1 (bad value, not yet told) or -2 (told). */
static int apply_value(const cli_option *o, const char *arg, void *field, const char *command)
{
    unsigned long long u;
    int i;
    double d;
    switch (o->kind) {
    case CLI_FLAG: memcpy(field, &o->ival, sizeof o->ival); return 0;
    case CLI_STR: memcpy(field, &arg, sizeof arg); return 0;
    case CLI_UINT:
        if (cli_parse_u64(arg, &u) || u < o->min || u > upper(o))
            return -1;
        store_whole(o, field, u);
        return 0;
    case CLI_INT:
        if (cli_parse_int(arg, &i) || (unsigned long long)i < o->min)
            return -1;
        store_whole(o, field, (unsigned long long)i);
        return 0;
    case CLI_I64: return cli_parse_i64(arg, field);
    case CLI_NUM:
        if (cli_parse_double(arg, &d) || d < o->dmin || (o->excl && d == o->dmin))
            return -1;
        memcpy(field, &d, sizeof d);
        return 0;
    case CLI_ANYNUM:
        if (parse_anynum(arg, &d))
            return -1;
        memcpy(field, &d, sizeof d);
        return 0;
    case CLI_ENUM: return cli_parse_enum_int(o->en, arg, field);
    case CLI_CUSTOM: return o->fn(o, arg, field, command);
    }
    return -1;
}

static int apply(const cli_command *c, const cli_option *o, void *const targets[], const char *arg,
                 int quiet)
{
    char *base = targets[o->target];
    int rc = base ? apply_value(o, arg, base + o->offset, quiet ? NULL : c->name) : -2;
    if (rc == -1 && !quiet)
        cli_option_bad(c->name, o, arg, NULL);
    return rc ? -1 : 0;
}

/* ---- what getopt refused ------------------------------------------------------------ */

/* The long names getopt knows, --help and --version included, in table order. */
static const char **long_names(const parser *p, size_t *n)
{
    const char **names = malloc((p->n + 2) * sizeof *names);
    if (names)
        for (*n = 0; *n < p->n + 2; (*n)++)
            names[*n] = p->longs[*n].name;
    return names;
}

/* "--name" or "--name=value" that getopt took for none of the options: two
 * or more that it starts (ambiguous), else the nearest name, if one is near. */
static void unknown_long(const cli_command *c, const parser *p, const char *arg)
{
    const char *name = arg + 2;
    size_t len = strcspn(name, "=");
    size_t n = 0, starts = 0;
    const char **names = long_names(p, &n);
    for (size_t i = 0; names && i < n; i++)
        starts += !strncmp(names[i], name, len);
    fprintf(stderr, "equishard %s: ", c->name);
    if (starts > 1) {
        /* "--wor": the options it starts, as getopt will not pick one */
        fprintf(stderr, "ambiguous option '--%.*s'; did you mean ", (int)len, name);
        size_t shown = 0;
        for (size_t i = 0; i < n && shown < 4; i++)
            if (!strncmp(names[i], name, len))
                fprintf(stderr, "%s--%s", shown++ == 0 ? "" : shown == starts ? " or " : ", ",
                        names[i]);
        fputs(starts > shown ? ", ...?\n" : "?\n", stderr);
    } else {
        const char *near = names ? cli_suggest(name, len, names, n) : NULL;
        fprintf(stderr, "unknown option '--%.*s'", (int)len, name);
        if (near)
            fprintf(stderr, "; did you mean --%s?", near);
        fputc('\n', stderr);
    }
    free(names);
}

/* getopt's '?' or ':' for the option it stopped at (opterr 0: we word it).
 * arg is the argument it was reading. */
static void refused(const cli_command *c, const parser *p, int ch, const char *arg)
{
    const cli_option *o = optopt ? parser_find(p, optopt) : NULL;
    char want[256];
    if (ch == ':' && o) { /* "--world-size" last, no value after it */
        if (o->kind == CLI_STR || (o->kind == CLI_CUSTOM && !o->want))
            snprintf(want, sizeof want, "%s", o->metavar ? o->metavar : "a value");
        else
            want_text(o, want, sizeof want);
        fprintf(stderr, "equishard %s: missing value for --%s: %s\n", c->name, o->name, want);
    } else if (optopt && (o || optopt == 'h' || optopt == OPT_VERSION)) {
        /* "--hash=1": a value for an option that takes none */
        fprintf(stderr, "equishard %s: --%s takes no value\n", c->name,
                o ? o->name : optopt == 'h' ? "help" : "version");
    } else if (optopt) { /* "-x" */
        if (optopt > ' ' && optopt < 0x7f)
            fprintf(stderr, "equishard %s: unknown option '-%c'\n", c->name, optopt);
        else /* "-é": getopt reads one byte of it */
            fprintf(stderr, "equishard %s: unknown option: byte 0x%02x after '-'\n", c->name,
                    (unsigned)optopt & 0xff);
    } else if (arg && !strncmp(arg, "--", 2) && arg[2] && arg[2] != '=') {
        unknown_long(c, p, arg);
    } else {
        fprintf(stderr, "equishard %s: unknown option '%s'\n", c->name, arg ? arg : "");
    }
    cli_options_hint(c);
}

/* 1 when the word a is an option whose value is the next word: "-o", "--output". */
static int takes_value(const parser *p, const char *a)
{
    if (a[1] == '-') {
        for (size_t k = 0; k < p->n; k++)
            if (!strcmp(p->longs[k].name, a + 2))
                return p->longs[k].has_arg == required_argument;
        return 0;
    }
    for (size_t k = 0; k < p->n; k++)
        if (a[2] == '\0' && p->opts[k]->short_name == a[1])
            return p->longs[k].has_arg == required_argument;
    return 0;
}

/* "-world-size 4" reads to getopt as -w with the value "orld-size", and
 * "-hash" as -h: a habit from other tools' one-dash long options. A word
 * after one dash that is a long name of this command (and no option's value)
 * is refused, naming the two-dash spelling. Returns the word, or NULL. */
static const char *one_dash_long(const parser *p, int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--"))
            break;
        if (a[0] != '-' || a[1] == '-' || !a[1]) {
            i += a[0] == '-' && a[1] == '-' && takes_value(p, a);
            continue;
        }
        size_t len = strcspn(a + 1, "=");
        for (size_t k = 0; len >= 2 && k < p->n + 2; k++)
            if (strlen(p->longs[k].name) == len && !strncmp(p->longs[k].name, a + 1, len))
                return a;
        /* "-o FILE", "--output FILE": the next word is the value, whatever it
         * looks like */
        if (takes_value(p, a))
            i++;
    }
    return NULL;
}

/* ---- the two passes ------------------------------------------------------------------- */

int cli_options_parse(const cli_command *c, void *const targets[CLI_T_COUNT], int argc,
                      char **argv)
{
    parser p;
    if (parser_init(&p, c)) {
        parser_release(&p);
        fprintf(stderr, "equishard %s: out of memory\n", c->name);
        return -1;
    }
    const char *dash = one_dash_long(&p, argc, argv);
    if (dash) {
        parser_release(&p);
        size_t len = strcspn(dash + 1, "=");
        return cli_usage_error(c, "unknown option '%s'; did you mean --%.*s?", dash, (int)len,
                               dash + 1);
    }
    int ch, rc = 0;
    optind = 0; /* glibc: start over, re-reading argv (a prescan may have permuted it) */
    opterr = 0;
    parsing = c;
    while (rc == 0 && (ch = getopt_long(argc, argv, p.shorts, p.longs, NULL)) != -1) {
        const cli_option *o = parser_find(&p, ch);
        if (ch == 'h' && !o) {
            cli_options_usage(c, stdout);
            rc = 1;
        } else if (ch == OPT_VERSION) {
            cli_print_version();
            rc = 1;
        } else if (!o) {
            /* the word getopt was on: optind has passed it, unless inside "-qx" */
            refused(c, &p, ch, optind > 0 && optind <= argc ? argv[optind - 1] : NULL);
            rc = -1;
        } else {
            rc = apply(c, o, targets, optarg, 0);
        }
    }
    parsing = NULL;
    opterr = 1;
    parser_release(&p);
    return rc;
}

void cli_print_version(void)
{
    printf("equishard %s\n", es_version());
}

int cli_options_prescan(const cli_command *c, void *const targets[CLI_T_COUNT], int argc,
                        char **argv, const char *const *names)
{
    parser p;
    if (parser_init(&p, c)) {
        parser_release(&p);
        return 0;
    }
    /* GNU getopt moves operands behind the options as it goes, and leaves a
     * command line that ends in an option without its value half moved: scan
     * a copy, so the full parse sees argv as the user typed it */
    char **copy = calloc((size_t)argc + 1, sizeof *copy);
    if (!copy) {
        parser_release(&p);
        return 0;
    }
    memcpy(copy, argv, (size_t)argc * sizeof *copy);
    argv = copy;
    /* "-hash" is no -h: the full parse refuses it */
    int ch, asked = 0, dash = one_dash_long(&p, argc, argv) != NULL;
    opterr = 0;
    optind = 0;
    while ((ch = getopt_long(argc, argv, p.shorts, p.longs, NULL)) != -1) {
        const cli_option *o = parser_find(&p, ch);
        if (!asked && !dash)
            asked = ch == 'h' && !o ? CLI_ASKED_HELP : ch == OPT_VERSION ? CLI_ASKED_VERSION : 0;
        for (size_t i = 0; o && names[i]; i++)
            if (!strcmp(names[i], o->name))
                apply(c, o, targets, optarg, 1);
    }
    opterr = 1;
    optind = 0;
    free(copy);
    parser_release(&p);
    return asked;
}

/* ---- --help ------------------------------------------------------------------------- */

static void option_line(const cli_option *o, FILE *out)
{
    char meta[128];
    const char *m = o->metavar;
    if (!m && o->kind == CLI_ENUM) {
        enum_names(o->en, "|", "|", meta, sizeof meta);
        m = meta;
    }
    /* printed straight to out (no fixed buffer to truncate): "  -k, --name META" */
    int width = o->short_name ? fprintf(out, "  -%c, --%s", o->short_name, o->name)
                              : fprintf(out, "      --%s", o->name);
    if (m)
        width += fprintf(out, " %s", m);
    fprintf(out, "%*s", width + 2 <= HELP_COLUMN ? HELP_COLUMN - width : 2, "");
    for (const char *h = o->help ? o->help : ""; *h; h++) {
        fputc(*h, out);
        if (*h == '\n' && h[1])
            fprintf(out, "%*s", HELP_COLUMN, "");
    }
    fputc('\n', out);
}

void cli_options_usage(const cli_command *c, FILE *out)
{
    fputs(c->intro, out);
    for (size_t t = 0; t < c->n_tables; t++) {
        const cli_table *tb = &c->tables[t];
        if (tb->heading)
            fprintf(out, "\n%s", tb->heading);
        for (size_t i = 0; i < tb->n; i++)
            option_line(&tb->opts[i], out);
        if (t == 0)
            fprintf(out, "  -h, --help%*sthis text\n      --version%*sthe version of equishard\n",
                    HELP_COLUMN - 12, "", HELP_COLUMN - 15, "");
    }
    if (c->outro)
        fprintf(out, "\n%s", c->outro);
}
