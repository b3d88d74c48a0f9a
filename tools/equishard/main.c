/* equishard: even multi-GPU training data. Dispatches to one subcommand. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} command;

static const command commands[] = {
    {"calibrate", cmd_calibrate, "fit the cost model's weights to the trainer's logged step times"},
    {"measure", cmd_measure, "measure every utterance of shard lists into a cost table"},
    {"plan", cmd_plan, "partition utterances into equal work and batches per rank"},
    {"report", cmd_report, "print a plan's metrics and per-rank load (and an SVG chart)"},
    {"simulate", cmd_simulate, "replay the loader's split and batching; predict the join cut"},
    {"tokenize", cmd_tokenize, "encode text with the recipe's tokenizer (one JSON line of ids per input)"},
    {"validate", cmd_validate, "check embeddings (missing, NaN, norms, mislabeled speakers, duplicates)"},
};

static void usage(FILE *out)
{
    fprintf(out, "usage: equishard COMMAND [OPTIONS] ...\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\n`equishard COMMAND --help` describes a command.\n");
}

/* Ctrl-C, kill, a Slurm time limit: the temporary outputs go (an OUTDIR.tmp.*
 * of a reshard can be hundreds of MB), then the signal ends the process as it
 * would have (SA_RESETHAND: the default action, delivered on return). Silent
 * when there were none: mpirun's SIGTERM to the other ranks after one failed
 * must leave rank 0's one error line alone. */
static void on_signal(int sig)
{
    static const char msg[] = "equishard: interrupted; temporary outputs removed\n";
    if (es_remove_temporaries() > 0) {
        ssize_t ignored = write(STDERR_FILENO, msg, sizeof msg - 1);
        (void)ignored;
    }
    raise(sig);
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
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return EXIT_OK;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("equishard %s\n", es_version());
        return EXIT_OK;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name))
            return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "equishard: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return EXIT_BAD_INPUT;
}

int main(int argc, char **argv)
{
    handle_signals();
    atexit(on_foreign_exit);
    int rc = dispatch(argc, argv);
    returned = 1;
    return rc;
}
