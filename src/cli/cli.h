/* Command-line helpers shared by the ftmesh subcommands. Only src/cli
 * prints or exits. */
#ifndef FTMESH_CLI_H
#define FTMESH_CLI_H

#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "ftmesh/mesh.h"

#define CLI_EXIT_OK 0
#define CLI_EXIT_FAIL 1   /* ran, but the result is wrong, or failed */
#define CLI_EXIT_USAGE 2  /* bad input */
#define CLI_EXIT_HANG 3   /* the chips hung (the watchdog fired) */
#define CLI_EXIT_INTERRUPTED 130 /* stopped by SIGINT (128 + 2) */
#define CLI_EXIT_PIPE 141 /* stdout's reader went away (128 + SIGPIPE) */
#define CLI_HELP (-1)     /* cli_parse: --help was given (help printed) */

/* The subcommands (main.c dispatches to them). */
int cli_rings(int argc, char **argv);
int cli_allreduce(int argc, char **argv);
int cli_train(int argc, char **argv);
int cli_sweep(int argc, char **argv);
int cli_demo(int argc, char **argv);

/* ---- messages -------------------------------------------------------------
 * Every message is one line on stderr, "ftmesh CMD: ...": control
 * characters in it (from echoed arguments) are escaped as \n, \t, \xHH. */

/* The last error line printed (with its newline; "" when none), at most
 * CLI_ERROR_MAX - 1 bytes of it. */
#define CLI_ERROR_MAX 1024
const char *cli_last_error(void);
/* Prints the message; returns CLI_EXIT_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "--algo V: unknown algorithm; expected ring, bidir, ..., tree or trees"
 * (ending "trees or auto" where auto is taken), naming the registry's
 * algorithms in its order: exit 2. */
int cli_unknown_algo(const char *cmd, const char *opt, const char *v, int with_auto);
/* Prints the message; returns CLI_EXIT_FAIL. */
int cli_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "ftmesh CMD: warning: ..." (an option that has no effect): kept until
 * cli_warn_flush prints it (a command flushes once its checks pass, main
 * after the command), dropped when an error is printed first, so that a
 * refused command prints its one line only. */
void cli_warn(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cli_warn_flush(void);
/* "s" unless n == 1: printf("%d chip%s", n, cli_s(n)). */
const char *cli_s(long n);

/* ---- options --------------------------------------------------------------
 * Every command describes its options with cli_opt tables; cli_parse turns
 * them into one getopt_long table (both --x V and --x=V, no abbreviations)
 * and cli_print_opts into the help text, so what --help lists is what the
 * parser accepts. Adding an option is one table entry plus one case in the
 * command's handler. */

enum {
    CLI_O_HELP = 'h',
    /* shared options: the mesh and faults, and a few more */
    CLI_O_MESH = 256, CLI_O_TORUS, CLI_O_FAIL, CLI_O_FAIL_HOST, CLI_O_FAIL_LINK,
    CLI_O_RANDOM_FAULTS, CLI_O_SEED, CLI_O_HANG_TIMEOUT, CLI_O_JSON,
    CLI_O_LINK_GBPS, CLI_O_HOP_US, CLI_O_HBM_GBPS, CLI_O_RANKS, CLI_O_FAULT_SEED,
    CLI_O_CMD = 512 /* a command's own ids start here */
};

typedef struct cli_opt {
    const char *name;  /* "mesh" for --mesh; NULL ends a table */
    const char *arg;   /* value name ("RxC"), or NULL for a flag */
    int id;            /* CLI_O_* or the command's own */
    const char *help;  /* reflowed to 80 columns ('\n' counts as a space) */
} cli_opt;

/* The mesh and fault options (mesh, torus, fail, fail-host, fail-link,
 * random-faults, seed), the cost-model options, and single entries. */
extern const cli_opt cli_mesh_table[];
extern const cli_opt cli_cost_table[];
#define CLI_STR_(x) #x
#define CLI_STR(x) CLI_STR_(x)
#define CLI_OPT_HANG_TIMEOUT                                                          \
    { "hang-timeout", "SEC", CLI_O_HANG_TIMEOUT,                                      \
      "stop and report stuck chips after SEC s without progress\n"                  \
      "(default " CLI_STR(FTM_RT_DEFAULT_HANG_S) ")" }

#define CLI_OPT_RANKS                                                                 \
    { "ranks", "RxC", CLI_O_RANKS,                                                    \
      "under mpirun -np K (an MPI build): split the chips over\n"                   \
      "the K ranks in RxC blocks (R*C = K; default: the grid\n"                     \
      "that cuts the fewest links)" }

/* Called once per option, in command-line order: val is NULL for a flag.
 * Returns 0 or CLI_EXIT_USAGE (after printing). */
typedef int (*cli_opt_fn)(void *ctx, int id, const char *name, const char *val);

/* Parses argv[1..] with the NULL-terminated list of tables (an entry whose
 * name appeared in an earlier table is skipped: a command may redefine a
 * shared option's help). Returns 0, CLI_EXIT_USAGE (after printing one
 * line), or CLI_HELP when --help or -h was given (nothing printed). */
int cli_parse(const char *cmd, int argc, char **argv, const cli_opt *const *tables,
              cli_opt_fn fn, void *ctx);
/* cli_parse also warns (cli_warn) about an option given more than once
 * that is not repeatable (only its last value counts); cli_parse_quiet
 * does not: for a second pass over the same argv, or flags the program
 * wrote itself. */
int cli_parse_quiet(const char *cmd, int argc, char **argv, const cli_opt *const *tables,
                    cli_opt_fn fn, void *ctx);
/* Prints "TITLE:" and one entry per option of tables[0..] (redefined
 * shared options once) in a man-page-friendly layout. */
void cli_print_opts(FILE *f, const char *title, const cli_opt *const *tables, int first_table,
                    int ntables);

/* "Algorithms (OPTS):", every registered algorithm and auto, for --help. */
void cli_print_algos(FILE *f, const char *opts);

/* Options every mesh command takes: --mesh, --torus, the faults, --json. */
typedef struct cli_mesh_opts {
    const char *cmd;            /* "rings", ... for messages */
    const char *mesh_spec;      /* "8x8" */
    int torus;
    const char **fail, **fail_host, **fail_link; /* repeatable, argv pointers */
    int nfail, nfail_host, nfail_link;
    int random_faults, random_faults_given;
    uint64_t seed;
    int seed_given;
    uint64_t fault_seed;        /* --fault-seed */
    int fault_seed_given;
    int json;
    double hang_timeout_s;      /* 0: the runtime's default */
    const char *ranks;          /* --ranks RxC, or NULL */
    int max_side;               /* 0: FTM_MESH_MAX_SIDE; the command's limit */
    int min_healthy;            /* 0: 1; healthy chips --random-faults leaves */
} cli_mesh_opts;

/* Warns that --seed (unless seed_used: the command uses it for more) and
 * --fault-seed have no effect without random draws: --random-faults, or
 * random_kills > 0 (--random-kills given; -1: the command has none); and
 * --seed none beside --fault-seed. */
void cli_mesh_warn_seeds(const cli_mesh_opts *o, int seed_used, int random_kills);
/* The seed of --random-faults and --random-kills: --fault-seed, else --seed. */
uint64_t cli_fault_seed(const cli_mesh_opts *o);
/* 0, or CLI_EXIT_FAIL when out of memory (after printing). */
int cli_mesh_opts_init(cli_mesh_opts *o, const char *cmd, int argc);
void cli_mesh_opts_free(cli_mesh_opts *o);
/* Applies a shared option (CLI_O_MESH .. CLI_O_JSON); CLI_EXIT_USAGE on a
 * bad value or an id that is not one. */
int cli_mesh_set(cli_mesh_opts *o, int id, const char *name, const char *val);

/* Parses sizes like 4096, 64K, 64M, 1G, 1T (bytes, powers of 2). 0 on success. */
int cli_parse_size(const char *s, size_t *out);
/* --size of a buffer per chip (allreduce, rings): a positive multiple of
 * 4 bytes the schedules can address; 0 or CLI_EXIT_USAGE (said). */
int cli_parse_buffer_size(const char *cmd, const char *v, size_t *bytes);
/* bytes as --size takes them, the largest unit that divides them: "8M",
 * "96K", "4100"; written into buf (n bytes), which it returns. */
const char *cli_size_text(size_t bytes, char *buf, size_t n);
int cli_parse_int(const char *s, long lo, long hi, long *out);
int cli_parse_double(const char *s, double lo, double hi, double *out);

/* Builds the mesh and applies the faults; prints and returns
 * CLI_EXIT_USAGE on any bad input (also when healthy chips are cut apart
 * or all dead), else 0 with m initialised. */
int cli_build_mesh(const cli_mesh_opts *o, ftm_mesh *m);
/* The same without splitting the chips over MPI ranks: a mesh only
 * described, never run. */
int cli_build_mesh_only(const cli_mesh_opts *o, ftm_mesh *m);
/* 1 when m has wrap-around links: a torus with a side of 3 or more (a
 * --torus flag on a smaller mesh adds none: the reports call it a mesh,
 * and the mesh itself keeps the flag, as checkpoints record it). */
int cli_wraps(const ftm_mesh *m);
/* "torus" or "mesh", as cli_wraps says. */
const char *cli_mesh_kind(const ftm_mesh *m);

/* ---- the record of a run's static faults (faults_record.c) ----------------
 * Every dead chip (those of --fail-host blocks as hosts), host and failed
 * link of m, the mesh a run starts on: as the flags that rebuild it
 * (cli_faults_record_flags: " --fail R,C --fail-host R,C --fail-link
 * R,C-R2,C2 --fail-link 'R,C>R2,C2' ...": one-way links quoted for a
 * shell; whole flags only: the number of flags left out for want of n
 * bytes), as the text line "# faults: ..."
 * (nothing when there are none), and as the JSON key "faults": {"chips":
 * [[r,c]...], "hosts": [[r,c]...], "links": [[[r,c],[r2,c2]]...] (both
 * ways), "links_one_way": [...] (from, to)}. */
int cli_faults_record_flags(const cli_mesh_opts *o, const ftm_mesh *m, char *b, size_t n);
void cli_faults_record_text(const cli_mesh_opts *o, const ftm_mesh *m);
/* What the checkpoint at path recorded of the mesh: CLI_CKPT_SAME, a mesh
 * of m's shape (a resumed run goes on from it: ftm_train_resume_step),
 * CLI_CKPT_OTHER, of another shape, or CLI_CKPT_NONE (a version 1 file). */
enum { CLI_CKPT_SAME, CLI_CKPT_OTHER, CLI_CKPT_NONE };
int cli_ckpt_mesh_kind(const char *path, const ftm_mesh *m);
/* After --resume: the line saying so, with the mesh's faults as flags:
 * the checkpoint's (kind CLI_CKPT_SAME: no flag of this run made it), or
 * this run's, from a checkpoint of another shape or with no mesh. */
void cli_faults_record_resumed(const cli_mesh_opts *o, const ftm_mesh *m, const char *path,
                               long step, int kind);
struct cli_json;
void cli_faults_record_json(struct cli_json *j, const cli_mesh_opts *o, const ftm_mesh *m);
/* The record as a trace's "faults" metadata (a cli_trace_meta_fn; ctx a
 * cli_faults_meta): the same writer as --json's. */
struct ftm_fault_record;
typedef struct cli_faults_meta {
    const cli_mesh_opts *o;
    const ftm_mesh *m;
    const struct ftm_fault_record *events; /* the run's kills and repairs, as
                                            * its "events" (NULL: none kept) */
    int nevents;
} cli_faults_meta;
void cli_faults_record_meta(struct cli_json *j, void *ctx);
/* The same "faults" record for a scenario given as flags (" --fail R,C
 * --fail-host R,C ...", as sweep rows name them) on a rows x cols mesh
 * (torus: 1); "faults": null if they do not parse (never for the
 * program's own scenarios). */
void cli_faults_record_json_flags(struct cli_json *j, const char *flags, int rows, int cols,
                                  int torus);

/* ---- runs over MPI (mpi_cli.c; a build without MPI has one rank) --------
 * cli_mpi_begin (main): under an MPI launcher, starts MPI; ranks other
 * than 0 print nothing. Returns 0 or an exit code (after printing).
 * cli_mpi_end: finishes MPI. cli_ranks_setup (cli_build_mesh): splits
 * the chips of m over the ranks (--ranks or the chosen grid); 0 or
 * CLI_EXIT_USAGE. cli_ranks_json/cli_ranks_text: the "ranks" key and the
 * text line, only when there is more than one rank. */
int cli_mpi_begin(int *argc, char ***argv);
void cli_mpi_end(void);
int cli_ranks_setup(const cli_mesh_opts *o, const ftm_mesh *m);
struct cli_json;
void cli_ranks_json(struct cli_json *j, const ftm_mesh *m);
void cli_ranks_text(const ftm_mesh *m);
/* Healthy chips of the largest block one rank runs (all of them with one
 * rank): the memory checks count buffers per process. */
int cli_ranks_block_chips(const ftm_mesh *m);
/* Ranks of the run on this machine (1 without MPI). */
int cli_ranks_on_node(void);
/* ---- memory (memory.c) ----------------------------------------------------
 * The memory this process may use: the machine's, or less under a limit
 * on its address space (ulimit -v: what the limit leaves beyond what was
 * mapped at the first call, before anything was built: the checks after
 * a build count it themselves); 0 when unknown. A run may plan to fill
 * CLI_MEM_SHARE of it: the rest is room for the mailboxes, the libraries
 * and everything not counted (the messages say "3/4"). */
#define CLI_MEM_SHARE 0.75
double cli_mem_have(void);
/* Under an address-space limit (ulimit -v), keeps glibc's malloc to two
 * arenas: each arena a thread gets reserves 64 MiB of address space, up
 * to 8 per core, and with one thread per chip that took more than a small
 * limit holds, so runs that fit failed at random with "out of memory". */
void cli_mem_arenas(void);
/* What the chip threads of a run on m reserve beyond what the runtime's
 * estimate counts: under ulimit -v each thread's whole stack
 * (FTM_RT_STACK_BYTES), not the part it touches; else 0. Its note for a
 * refusal ("" for 0). */
double cli_mem_stacks(const ftm_mesh *m);
const char *cli_mem_stacks_note(double stacks);
/* Refuses (CLI_EXIT_USAGE, one line) a training whose replicas would not
 * fit in CLI_MEM_SHARE of it: every chip this machine runs holds a
 * replica sized by its share of the batch (ftm_model_mem_bytes), and
 * --check a one-chip reference of the whole batch. */
struct ftm_train_opts;
int cli_train_mem_check(const char *cmd, const struct ftm_train_opts *t, const ftm_mesh *m);

/* Collective over the ranks (every rank calls it at the same point): 0
 * when every rank's rc is 0; else the exit code of the lowest rank that
 * failed, whose error line rank 0 prints when it did not fail itself (an
 * input only some ranks could read would leave the others waiting). */
int cli_ranks_agree(int rc);
/* Once every rank read its inputs: CLI_EXIT_USAGE (said) where the ranks'
 * mesh faults, fault script s (may be NULL) or checkpoint file ckpt (may be
 * NULL) differ, as files on different nodes may; else 0. */
/* Collective after a run: sig (a signal's number, or 0) of the lowest
 * rank that has one, so that every rank tells and exits alike; 0 when
 * none. */
int cli_ranks_signal(int sig);
struct ftm_fault_script;
int cli_ranks_same(const char *cmd, const ftm_mesh *m, const struct ftm_fault_script *s,
                   const char *ckpt);
/* Ranks of the run, and this process's (1 and 0 without MPI). */
int cli_ranks_count(void);
int cli_ranks_me(void);
/* --trace under mpirun: refused (CLI_EXIT_USAGE, one line), as each rank
 * records only its own block of chips; 0 in one process. */
int cli_ranks_refuse_trace(const char *cmd, const char *what);

/* --fail-during R,C (spec): the chip to kill during the run. Rejects (one
 * line, CLI_EXIT_USAGE) a malformed value, a chip that is not a healthy
 * chip of m, and the only healthy chip (one must survive). */
int cli_fail_during_chip(const char *cmd, const ftm_mesh *m, const char *spec, int *chip);

/* Applies --link-GBps, --hop-us or --hbm-GBps (id) to p (a struct
 * ftm_cost_params). Returns 0 or CLI_EXIT_USAGE (after printing). */
struct ftm_cost_params;
int cli_cost_set(const char *cmd, int id, const char *val, struct ftm_cost_params *p);

/* ---- output files (outfile.c) ----------------------------------------------
 * Every output file (--svg, --html, --trace) is written to a temporary file
 * beside it and renamed over the path only when complete: a refused,
 * failed or interrupted run leaves the old file as it was, or none. Open
 * every output file before any work (that checks the path). */
typedef struct cli_out {
    const char *opt, *path;  /* "--svg" and the user's path, for messages */
    FILE *f;                 /* write here */
    char *tmp;               /* the temporary file; NULL when none is open */
    char *dest;              /* what the rename replaces: path, or the file a
                              * symbolic link at path names */
    int slot;
    int direct;              /* path is a pipe or a device (/dev/null): written
                              * in place, nothing to rename (1); or this
                              * run's stdout or stderr: written through it (2) */
} cli_out;

/* Creates the temporary file for path; 0, or CLI_EXIT_USAGE after one
 * line naming opt (a directory, a path where no file can be created, a
 * path another output option of this run writes). */
int cli_out_open(const char *cmd, cli_out *o, const char *opt, const char *path);
/* Closes the file; when err is 0 and everything was written, renames it
 * over the path; else removes it and prints why (err: 0 or FTM_E*).
 * Returns 0 or CLI_EXIT_FAIL. No effect on a file not open. */
int cli_out_commit(const char *cmd, cli_out *o, int err);
/* Removes the temporary file (the run failed); no effect when none. */
void cli_out_discard(cli_out *o);
/* Checks, creating and removing a temporary file, that a file can be
 * written at path, and claims path for opt: another option naming the
 * same file (after symbolic links) is refused; 0 or CLI_EXIT_USAGE after
 * one line. */
int cli_out_check(const char *cmd, const char *opt, const char *path);
/* on: standard output carries JSON (--json): an output option naming a
 * file, pipe or socket that is standard output is refused (the JSON would
 * stop being valid); a terminal is not refused. */
void cli_out_stdout_json(int on);
/* Claims path, a regular file input option opt reads (--resume,
 * --faults, --corpus), before the outputs are checked: an output naming
 * it is refused (but --checkpoint may replace --resume's file); 0 or an
 * exit code after one line. */
int cli_in_claim(const char *cmd, const char *opt, const char *path);
/* cli_out_check for a file the library writes itself by renaming a new
 * file over it (--checkpoint): a pipe or device is refused, and *file
 * (the caller frees it) is the file to write: path, or what its symbolic
 * links lead to, so that a link keeps pointing at the file written. */
int cli_out_file(const char *cmd, const char *opt, const char *path, char **file);

/* SIGINT, SIGTERM, SIGHUP: by default they remove the temporary files and
 * end the process by the signal. While flag is set (a command that stops
 * gracefully), a signal only stores its number in *flag; NULL restores
 * the default. */
void cli_signals_graceful(atomic_int *flag);
/* The exit status of a run stopped by signal sig: 128 + sig (130 for
 * SIGINT, 143 for SIGTERM). */
int cli_signal_exit(int sig);

/* Pictures (pictures.c). Prints the terminal pictures of allreduce
 * algorithm algo on m (rings --algo) for a buffer of count floats (which
 * schedule an algorithm runs can depend on it); returns an exit code. */
int cli_rings_algo_pictures(const ftm_mesh *m, const char *algo, size_t count, const char *svg);
/* 1 (having said where the picture is: svg, or how to draw one) when m's
 * columns do not fit a terminal's picture, else 0. */
int cli_too_wide(const ftm_mesh *m, const char *svg);
/* ftmesh demo's part 1 beside the mesh: for tree and trees the (first)
 * tree the lesson runs on m for count floats, its root marked R; for
 * bidir its second ring, with the routes its detours take; for 2d the
 * rings of its bands that go around a hole; nothing for other algorithms
 * or meshes too wide to draw. 0 or an FTM_E* code. */
int cli_demo_own_picture(const ftm_mesh *m, const char *algo, size_t count);
/* Why 2d's second ring of a band may detour, and how many directed links
 * both rings of its bands around faults still cross (text and page). */
int cli_bands_why(const ftm_mesh *m, char *b, size_t n);
/* Why 2d's column phase takes the drift layout on m, in words: how many
 * columns hold a dead chip against the 1/8 the usable columns' rings can
 * adopt (ftm_plan2d_columns). */
void cli_drift_why(const ftm_mesh *m, char *b, size_t n);
struct ftm_sched;
/* trees' schedule s of count floats on m: which tree the picture draws
 * (position #0's), how many trees carry the positions and which are its. */
int cli_trees_first(const ftm_mesh *m, const struct ftm_sched *s, size_t count, char *b, size_t n);
/* Writes the SVG of algo's first phase to f; 0 or an FTM_E* code. */
int cli_rings_algo_svg(FILE *f, const ftm_mesh *m, const char *algo, size_t count);
/* Writes train --svg (mesh, link heat, loss curve with the fault events)
 * to f, the gradients summed as int64 where exact (--reduce exact); 0 or
 * an FTM_E* code. */
struct ftm_train_result;
int cli_train_svg(FILE *f, const ftm_mesh *m, const struct ftm_train_result *r, int exact);
/* ftmesh sweep --throughput (sweep_tput.c). cli_tput_set applies
 * throughput option k (0 overlap, 1 chip-TFLOPS, 2 resnet50-GFLOP,
 * 3 bert-GFLOP, 4-7 the batches: resnet50 512/1024, bert 512/1024,
 * 8 algos, 9 batch-policy; *abuf keeps the --algos names) and returns 0 or
 * CLI_EXIT_USAGE;
 * cli_sweep_throughput runs and prints the table. */
struct ftm_tput_params;
int cli_tput_set(const char *cmd, int k, const char *name, const char *val,
                 struct ftm_tput_params *p, char **abuf);
int cli_sweep_throughput(const struct ftm_tput_params *p, int json);
/* ftmesh sweep --list (sweep_list.c): prints the pod scenarios; 0. */
int cli_sweep_list(int json);

/* Prints the watchdog's report to stderr: each stuck chip, its phase and
 * step, what it waits for, from/to whom and on which link. */
struct ftm_stuck;
void cli_print_stuck(const char *cmd, const ftm_mesh *m, const struct ftm_stuck *st, int n,
                     double timeout_s);

/* Flushes and closes stdout; on a failed write (a full disk, a closed
 * file) prints why and returns CLI_EXIT_FAIL; where the reader of a pipe
 * went away returns CLI_EXIT_PIPE without a word; else 0. */
int cli_close_stdout(const char *cmd);
/* 1 where fd is a pipe whose reader has gone (poll reports an error on
 * such a write end; a failed write may have left errno unset). */
int cli_pipe_gone(int fd);
/* Flushes stdout (while open) and stderr from any thread, skipping a
 * stream another thread is using, so that it never waits on the main
 * thread (which may be blocked writing to a reader that stopped); a
 * flush into a full pipe may still wait. */
void cli_flush_unblocked(void);

/* ---- JSON -----------------------------------------------------------------
 * The one writer for every --json output. key is NULL inside an array (and
 * for the top-level value). Strings are escaped (quotes, backslash, control
 * characters); a non-finite number is written as null. The top-level value
 * ends with a newline. */
#define CLI_JSON_DEPTH 16
typedef struct cli_json {
    FILE *f;
    int depth;
    char close[CLI_JSON_DEPTH];  /* '}' or ']' per open level */
    int count[CLI_JSON_DEPTH];   /* members written per level */
} cli_json;

void cli_json_init(cli_json *j, FILE *f);
void cli_json_begin_obj(cli_json *j, const char *key);
void cli_json_begin_arr(cli_json *j, const char *key);
void cli_json_end(cli_json *j);  /* closes the innermost object or array */
void cli_json_str(cli_json *j, const char *key, const char *s);   /* NULL: null */
void cli_json_num(cli_json *j, const char *key, const char *fmt, double v);
void cli_json_int(cli_json *j, const char *key, long long v);
void cli_json_u64(cli_json *j, const char *key, unsigned long long v);
void cli_json_bool(cli_json *j, const char *key, int b);
void cli_json_null(cli_json *j, const char *key);
/* [r,c] of a chip, or null when chip < 0. */
void cli_json_chip(cli_json *j, const char *key, const ftm_mesh *m, int chip);
/* [[r,c], ...] of n chips in their order, or null when n is 0. */
void cli_json_chips(cli_json *j, const char *key, const ftm_mesh *m, const int *chips, int n);

/* Prints text reflowed (a '\n' in it counts as a space) and word-wrapped
 * to 80 columns from column col (where the cursor is); continuation lines
 * start at column indent; ends the line. */
void cli_print_wrapped(FILE *f, int indent, int col, const char *text);

#endif
