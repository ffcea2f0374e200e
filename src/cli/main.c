/* ftmesh: the command. Dispatches to the subcommands. */
#include "cli.h"
#include "config.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

typedef struct cli_cmd {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} cli_cmd;

static const cli_cmd cmds[] = {
    { "rings", cli_rings, "draw the ring the router builds around the holes" },
    { "allreduce", cli_allreduce, "run, verify and time an allreduce on the emulated mesh" },
    { "train", cli_train, "train a small ResNet or BERT data-parallel on the faulty mesh" },
    { "sweep", cli_sweep, "the paper's scenario: modeled allreduce on 512/1024-chip tori with faults" },
    { "demo", cli_demo, "a narrated lesson: allreduce step by step around a hole (--html: a page)" },
    { NULL, NULL, NULL },
};

static void usage(FILE *f)
{
    fprintf(f, "usage: ftmesh COMMAND [options]   (ftmesh COMMAND --help for its options)\n\n"
               "Emulates highly available data-parallel training on a 2-D mesh or torus of\n"
               "accelerator chips: one thread per chip, links as mailboxes, rings routed\n"
               "around failed chips, hosts and links.\n\nCommands:\n");
    for (const cli_cmd *c = cmds; c->name; c++)
        cli_print_wrapped(f, 13, fprintf(f, "  %-10s ", c->name), c->summary);
    fprintf(f, "\nOptions:\n  --help     this text\n  --version  print the version\n"
               "\nExit status: 0 ok, 1 wrong result or failure, 2 bad input, 3 hang, 129, 130\n"
               "or 143 stopped by SIGHUP, SIGINT or SIGTERM, 141 stdout's reader stopped\n"
               "early (| head).\n");
}

static int run(int argc, char **argv)
{
    if (argc < 2) { /* one line, as every error: the commands from the table */
        char names[128] = "";
        for (const cli_cmd *c = cmds; c->name; c++)
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s",
                     c == cmds ? "" : c[1].name ? ", " : " or ", c->name);
        return cli_usage_error(NULL, "a command is needed: %s (ftmesh --help says what each "
                               "does)", names);
    }
    int rc = -1;
    const char *name = NULL;
    int help = !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help");
    static char help_opt[] = "--help";
    char *sub[4] = { argv[0], argc == 3 ? argv[2] : NULL, help_opt, NULL };
    if (help && argc == 3 && argv[2][0] != '-' && strcmp(argv[2], "help")) {
        argv = sub; /* ftmesh help CMD: ftmesh CMD --help */
        argc = 3;
    } else if ((help && argc > 3) || (!help && !strcmp(argv[1], "--version") && argc > 2)) {
        return cli_usage_error(NULL, "%s takes %s after it (ftmesh COMMAND --help for a "
                               "command's options)", argv[1], help ? "at most a command" : "nothing");
    } else if (help && argc == 3 && argv[2][0] == '-') {
        return cli_usage_error(NULL, "%s %s: give a command name (ftmesh COMMAND --help for a "
                               "command's options)", argv[1], argv[2]);
    } else if (help) { /* also ftmesh help help */
        usage(stdout);
        rc = 0;
    } else if (strcmp(argv[1], "--version") == 0) {
        printf("ftmesh %s\n", PACKAGE_VERSION);
        rc = 0;
    }
    for (const cli_cmd *c = cmds; rc < 0 && c->name; c++)
        if (strcmp(argv[1], c->name) == 0) {
            name = c->name;
            rc = c->run(argc - 1, argv + 1);
            cli_warn_flush(); /* those a command did not print */
        }
    if (rc < 0)
        return cli_usage_error(NULL, "unknown command '%s' (try ftmesh --help)", argv[1]);
    /* Every command: output that did not reach stdout is a failure, or
     * CLI_EXIT_PIPE where its reader stopped early. */
    int out = cli_close_stdout(name);
    if (out && rc == 0)
        rc = out;
    return rc;
}

int main(int argc, char **argv)
{
    /* A write past the file size limit (ulimit -f) fails with EFBIG and is
     * reported, its temporary file removed, rather than killing us. */
    signal(SIGXFSZ, SIG_IGN);
    /* Likewise a closed pipe (| head): the write fails with EPIPE, the run
     * goes on (train writes its checkpoint) and exits 141 without a word,
     * the status a death by SIGPIPE shows, instead of dying mid-step. */
    signal(SIGPIPE, SIG_IGN);
    cli_mem_arenas();
    /* Under mpirun (a build with --with-mpi) every rank runs the command;
     * rank 0 prints. */
    int rc = cli_mpi_begin(&argc, &argv);
    if (!rc)
        rc = run(argc, argv);
    cli_mpi_end();
    return rc;
}
