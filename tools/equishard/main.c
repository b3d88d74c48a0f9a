/* equishard: even multi-GPU training data. Dispatches to one subcommand. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "cli_options.h"

typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} command;

static const command commands[] = {
    {"calibrate", cmd_calibrate, "fit the cost model's weights to the trainer's logged step times"},
    {"describe", cmd_describe, "summarize a corpus: hours, durations, speakers, what the filter drops"},
    {"measure", cmd_measure, "measure every utterance of shard lists into a cost table"},
    {"plan", cmd_plan, "partition utterances into equal work and batches per rank"},
    {"report", cmd_report, "print a plan's metrics and per-rank load (and an SVG chart)"},
    {"simulate", cmd_simulate, "replay the loader's split and batching; predict the join cut"},
    {"tokenize", cmd_tokenize, "encode text with the recipe's tokenizer (one JSON line of ids per input)"},
    {"validate", cmd_validate, "check embeddings (missing, NaN, norms, mislabeled speakers, duplicates)"},
};

static const size_t n_commands = sizeof commands / sizeof commands[0];

static void usage(FILE *out)
{
    fprintf(out, "usage: equishard COMMAND [OPTIONS] ...\n\ncommands:\n");
    for (size_t i = 0; i < n_commands; i++)
        fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\n`equishard COMMAND --help` (or `equishard help COMMAND`) describes a "
                 "command;\n`equishard --version` prints the version.\n");
}

static const command *find_command(const char *name)
{
    for (size_t i = 0; i < n_commands; i++)
        if (!strcmp(name, commands[i].name))
            return &commands[i];
    return NULL;
}

/* An unknown command: one line, with the nearest command's name when one is
 * near ("plna": plan), then the usage line, not the whole list. */
static int unknown_command(const char *name)
{
    const char *names[sizeof commands / sizeof commands[0]];
    for (size_t i = 0; i < n_commands; i++)
        names[i] = commands[i].name;
    const char *near = cli_suggest(name, strlen(name), names, n_commands);
    fprintf(stderr, "equishard: unknown command '%s'", name);
    if (near)
        fprintf(stderr, "; did you mean %s?", near);
    fprintf(stderr, "\nusage: equishard COMMAND [OPTIONS] ...\nsee 'equishard --help'\n");
    return EXIT_BAD_INPUT;
}

/* Ctrl-C, kill, a Slurm time limit: the temporary outputs go (an OUTDIR.tmp.*
 * of a reshard can be hundreds of MB), then the signal ends the process as it
 * would have (SA_RESETHAND: the default action, delivered on return). Silent
 * when there were none: mpirun's SIGTERM to the other ranks after one failed
 * must leave rank 0's one error line alone. */
static char interrupted[96] = "equishard: interrupted; temporary outputs removed\n";

static void on_signal(int sig)
{
    /* a progress line on the terminal goes first: the message, or the
     * shell's prompt, then starts a line of its own */
    static const char clear[] = "\r\033[K";
    if (cli_progress_on_line) {
        ssize_t ignored = write(STDERR_FILENO, clear, sizeof clear - 1);
        (void)ignored;
    }
    if (es_remove_temporaries() > 0) {
        ssize_t ignored = write(STDERR_FILENO, interrupted, strlen(interrupted));
        (void)ignored;
    }
    raise(sig);
}

/* Runs one command, every line it prints on stderr headed by its name. */
static int run(const command *c, int argc, char **argv)
{
    cli_set_command(c->name);
    /* made now: the handler may only write what is ready */
    snprintf(interrupted, sizeof interrupted,
             "equishard %s: interrupted; temporary outputs removed\n", c->name);
    return c->run(argc, argv);
}

static void handle_signals(void)
{
    struct sigaction sa = {0};
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        struct sigaction old;
        /* a signal ignored by whoever started us (nohup) stays ignored */
        if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN)
            sigaction(sigs[i], &sa, NULL);
    }
}

/* Set once main returns. Any other exit is a library ending the process on its
 * own: libgomp calls exit(1) when it cannot create its threads (an address-space
 * limit, too few processes allowed), and 1 means "validate found problems". Its
 * message is on stderr already; the temporary outputs go, and the exit code is 3. */
static volatile sig_atomic_t returned;

static void on_foreign_exit(void)
{
    static const char msg[] = "equishard: ended by a library it uses (its message above: threads "
                              "or memory ran out); temporary outputs removed\n";
    if (returned)
        return;
    es_remove_temporaries();
    ssize_t ignored = write(STDERR_FILENO, msg, sizeof msg - 1);
    (void)ignored;
    _exit(EXIT_INTERNAL);
}

static int dispatch(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return EXIT_BAD_INPUT;
    }
    /* "help", "help --help": the list of commands */
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
        (!strcmp(argv[1], "help") &&
         (argc == 2 || !strcmp(argv[2], "--help") || !strcmp(argv[2], "-h")))) {
        usage(stdout);
        return EXIT_OK;
    }
    if (!strcmp(argv[1], "--version")) {
        cli_print_version();
        return EXIT_OK;
    }
    if (!strcmp(argv[1], "help")) { /* help CMD: CMD --help */
        const command *c = find_command(argv[2]);
        if (!c)
            return unknown_command(argv[2]);
        static char help_flag[] = "--help";
        char *args[] = {argv[2], help_flag, NULL};
        return run(c, 2, args);
    }
    const command *c = find_command(argv[1]);
    return c ? run(c, argc - 1, argv + 1) : unknown_command(argv[1]);
}

int main(int argc, char **argv)
{
    handle_signals();
    atexit(on_foreign_exit);
    int rc = dispatch(argc, argv);
    returned = 1;
    return rc;
}
