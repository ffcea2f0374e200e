/* The command's side of runs over MPI: starting MPI under a launcher,
 * one rank printing, --ranks, and the "ranks" figures. A build without
 * MPI has one rank and accepts only --ranks 1x1. */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include "cli.h"
#include "config.h"
#include "ftmesh/error.h"
#include "ftmesh/mesh.h"
#include "ftmesh/sched.h"
#include "ftmesh/checkpoint.h"
#include "ftmesh/faults.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef HAVE_MPI
#include "ftmesh/mpi.h"
#include <sched.h>
#include <unistd.h>
#endif

#ifdef HAVE_MPI
/* Started by mpirun/mpiexec (Open MPI, MPICH/Hydra or a PMIx launcher). */
static int launched(void)
{
    return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE") || getenv("PMIX_RANK");
}

static int g_on;
/* Where a silent rank is reported: stderr, which on the other ranks than
 * 0 is a copy of it from before it went to /dev/null (rank 1 reports a
 * silent rank 0). */
static int g_report_fd = 2;

/* The line naming a silent rank; "reported by" when another rank than 0
 * speaks (rank 0 stopped). */
static void silent_line(char *buf, size_t len, int r, double s)
{
    char by[40] = "";
    if (ftm_mpi_rank() != 0)
        snprintf(by, sizeof by, " (reported by rank %d)", ftm_mpi_rank());
    snprintf(buf, len, "ftmesh: hang: rank %d went silent (no heartbeat for %.1f s: its process "
             "is stopped or gets no CPU); ending every rank%s\n", r, s, by);
}

/* The job's watchdog found rank r silent (ftm_mpi_watch): on its own
 * thread, while this rank's main thread may wait in MPI for r. One
 * write(2), after flushing what rank 0 printed so far (where no other
 * thread is writing it, and stdout is still open). */
static void on_silent(int r, double s)
{
    char line[CLI_ERROR_MAX];
    silent_line(line, sizeof line, r, s);
    cli_flush_unblocked();
    if (write(g_report_fd, line, strlen(line)) < 0) {
        /* nowhere else to say it: the exit code still says hang */
    }
    ftm_mpi_abort(CLI_EXIT_HANG);
}

int cli_mpi_begin(int *argc, char ***argv)
{
    if (!launched())
        return 0;
    int rc = ftm_mpi_init(argc, argv);
    g_on = 1;
    if (rc == FTM_ENOTSUP)
        return cli_error(NULL, "MPI could not start with thread support 'multiple'; "
                         "use an MPI library built with it (Open MPI, MPICH)");
    if (rc)
        return cli_error(NULL, "MPI could not start: %s", ftm_strerror(rc));
    if (ftm_mpi_rank() != 0) { /* rank 0 speaks for the run */
        g_report_fd = dup(2);
        if (g_report_fd < 0 || !freopen("/dev/null", "w", stdout) ||
            !freopen("/dev/null", "w", stderr))
            return CLI_EXIT_FAIL;
    }
    ftm_mpi_watch(0, on_silent);
    /* Who sends the packets between ranks (README, Runs over MPI: both
     * were measured): an environment knob, as mpirun passes it to all. */
    const char *send = getenv("FTMESH_MPI_SEND");
    if (send && strcmp(send, "chips") && strcmp(send, "progress"))
        return cli_usage_error(NULL, "FTMESH_MPI_SEND=%s: expected chips or progress", send);
    ftm_mpi_chips_send(send && !strcmp(send, "chips"));
    return 0;
}

void cli_mpi_end(void)
{
    double s;
    int r = g_on ? ftm_mpi_silent(&s) : -1;
    if (r >= 0) { /* MPI_Finalize would wait for the silent rank forever */
        char line[CLI_ERROR_MAX];
        silent_line(line, sizeof line, r, s);
        fputs(line, stderr);
        fflush(stderr);
        ftm_mpi_abort(CLI_EXIT_HANG);
    }
    if (g_on)
        ftm_mpi_finalize();
    g_on = 0;
}

static int ranks(void) { return g_on ? ftm_mpi_size() : 1; }

/* Open MPI binds each rank to one core when there are at most two ranks;
 * a rank's chip threads then queue on that core while the others idle
 * (a 2-rank ResNet run measured 0.62x of --bind-to none, README). */
static void warn_if_bound(const char *cmd, int chips)
{
    cpu_set_t set;
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    if (chips < 2 || online < 2 || sched_getaffinity(0, sizeof set, &set))
        return;
    if (CPU_COUNT(&set) == 1)
        cli_warn(cmd, "this rank is bound to 1 of %ld CPUs and runs %d chip threads; "
                 "start mpirun with --bind-to none", online, chips);
}
#else
int cli_mpi_begin(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return 0;
}

void cli_mpi_end(void) {}
static int ranks(void) { return 1; }
#endif

int cli_ranks_setup(const cli_mesh_opts *o, const ftm_mesh *m)
{
    int r = 1, c = 1, k = ranks();
    if (o->ranks && (ftm_mesh_parse_size(o->ranks, &r, &c) || r < 1 || c < 1))
        return cli_usage_error(o->cmd, "--ranks %s: expected RxC, e.g. 2x2", o->ranks);
    if (o->ranks && r * c != k) {
#ifdef HAVE_MPI
        return cli_usage_error(o->cmd, "--ranks %s needs %d ranks: run it as mpirun -np %d "
                               "ftmesh %s ... (this run has %d)", o->ranks, r * c, r * c,
                               o->cmd, k);
#else
        return cli_usage_error(o->cmd, "--ranks %s: this ftmesh was built without MPI; "
                               "rebuild with ./configure --with-mpi and run it under mpirun",
                               o->ranks);
#endif
    }
#ifdef HAVE_MPI
    if (k > 1) {
        int grid = 0; /* some R x C = k fits the mesh */
        for (int g = 1; g <= m->rows && !grid; g++)
            grid = k % g == 0 && k / g <= m->cols;
        if (!grid)
            return cli_usage_error(o->cmd, "%d ranks do not split a %dx%d mesh into blocks: "
                                   "no R x C = %d has R <= %d and C <= %d; run fewer ranks "
                                   "(mpirun -np N)", k, m->rows, m->cols, k, m->rows, m->cols);
        if (r > m->rows || c > m->cols || (!o->ranks && ftm_mpi_choose_grid(k, m->rows, m->cols,
                                                                            m->torus, &r, &c)))
            return cli_usage_error(o->cmd, "%d ranks do not split a %dx%d mesh into blocks "
                                   "(give --ranks RxC with R <= %d, C <= %d, R*C = %d)", k,
                                   m->rows, m->cols, m->rows, m->cols, k);
        ftm_mpi_enable(r, c);
        /* the user's hang timeout for silent ranks too, before any run */
        ftm_mpi_watch(o->hang_timeout_s, on_silent);
        warn_if_bound(o->cmd, (m->rows / r) * (m->cols / c));
    }
#else
    (void)m;
#endif
    return 0;
}

void cli_ranks_json(cli_json *j, const ftm_mesh *m)
{
#ifdef HAVE_MPI
    int r, c;
    if (ranks() < 2 || ftm_mpi_grid(m->rows, m->cols, m->torus, &r, &c))
        return;
    cli_json_begin_obj(j, "ranks");
    cli_json_int(j, "count", ranks());
    cli_json_int(j, "rows", r);
    cli_json_int(j, "cols", c);
    ftm_mpi_stats st;
    uint64_t rss;
    if (!ftm_mpi_get_stats_all(&st, &rss)) {
        /* CPU seconds summed over the ranks: every thread, the progress
         * threads, and their part inside MPI calls */
        cli_json_num(j, "process_cpu_s", "%.6g", st.process_s);
        cli_json_num(j, "progress_cpu_s", "%.6g", st.thread_s);
        cli_json_num(j, "in_mpi_cpu_s", "%.6g", st.mpi_s);
        cli_json_u64(j, "messages", st.msgs);
        cli_json_u64(j, "payload_bytes", st.bytes);
        cli_json_u64(j, "max_rss_bytes_per_rank", rss);
    }
    cli_json_end(j);
#else
    (void)j;
    (void)m;
#endif
}

void cli_ranks_text(const ftm_mesh *m)
{
#ifdef HAVE_MPI
    int r, c;
    if (ranks() < 2 || ftm_mpi_grid(m->rows, m->cols, m->torus, &r, &c))
        return;
    printf("# %d MPI ranks, the chips in %dx%d blocks (links between blocks over MPI)\n",
           ranks(), r, c);
#else
    (void)m;
#endif
}

int cli_ranks_on_node(void)
{
#ifdef HAVE_MPI
    return g_on ? ftm_mpi_node_ranks() : 1;
#else
    return 1;
#endif
}

int cli_ranks_block_chips(const ftm_mesh *m)
{
    int n = ftm_mesh_healthy_count(m);
#ifdef HAVE_MPI
    int gr, gc;
    if (ranks() < 2 || ftm_mpi_grid(m->rows, m->cols, m->torus, &gr, &gc))
        return n;
    int *per = calloc((size_t)(gr * gc), sizeof *per);
    if (!per)
        return n;
    for (int c = 0; c < m->nchips; c++)
        if (ftm_mesh_alive(m, c))
            per[ftm_sched_block_of((size_t)m->rows, gr, (size_t)ftm_mesh_row(m, c)) * gc +
                ftm_sched_block_of((size_t)m->cols, gc, (size_t)ftm_mesh_col(m, c))]++;
    n = 0;
    for (int b = 0; b < gr * gc; b++)
        n = per[b] > n ? per[b] : n;
    free(per);
#endif
    return n;
}

int cli_ranks_agree(int rc)
{
#ifdef HAVE_MPI
    if (ranks() < 2)
        return rc;
    char line[CLI_ERROR_MAX];
    snprintf(line, sizeof line, "%s", rc ? cli_last_error() : "");
    int code = ftm_mpi_agree(rc, line, sizeof line);
    if (code && !rc) { /* another rank failed: rank 0 speaks for it */
        size_t n = strlen(line);
        if (!n)
            return cli_error(NULL, "another rank failed before the run");
        fputs(line, stderr);
        if (line[n - 1] != '\n')
            fputc('\n', stderr);
    }
    return code < 0 ? cli_error(NULL, "MPI: %s", ftm_strerror(code)) : code;
#else
    return rc;
#endif
}

#ifdef HAVE_MPI
/* A digest of the inputs a rank read from its own files: the mesh's faults,
 * the fault script and the checkpoint's bytes (crc 0: unreadable, which
 * cli_ranks_agree has ruled out). */
static uint32_t inputs_crc(const ftm_mesh *m, const ftm_fault_script *s, const char *ckpt)
{
    int dims[3] = { m->rows, m->cols, m->torus };
    uint32_t crc = ftm_ckpt_crc32c(0, dims, sizeof dims);
    crc = ftm_ckpt_crc32c(crc, m->chip_dead, (size_t)m->nchips);
    crc = ftm_ckpt_crc32c(crc, m->link_dead, (size_t)m->nchips * FTM_NDIRS);
    for (int i = 0; s && i < s->n; i++) { /* field by field: no padding bytes */
        const ftm_fault_event *e = &s->ev[i];
        int64_t f[10] = { e->kind, e->r, e->c, e->r2, e->c2, e->oneway, e->repair, e->when,
                          e->phase, e->pkts };
        crc = ftm_ckpt_crc32c(crc, f, sizeof f);
    }
    FILE *f = ckpt ? fopen(ckpt, "rb") : NULL;
    unsigned char b[65536];
    size_t n;
    while (f && (n = fread(b, 1, sizeof b, f)) > 0)
        crc = ftm_ckpt_crc32c(crc, b, n);
    if (f)
        fclose(f);
    return crc;
}
#endif

int cli_ranks_same(const char *cmd, const ftm_mesh *m, const ftm_fault_script *s, const char *ckpt)
{
#ifdef HAVE_MPI
    if (ranks() < 2)
        return 0;
    int d = ftm_mpi_same(inputs_crc(m, s, ckpt));
    if (d < 0)
        return cli_error(cmd, "MPI: %s", ftm_strerror(d));
    if (d)
        return cli_usage_error(cmd, "the ranks read different inputs (the fault options%s): give "
                               "every rank the same files", ckpt ? ", --faults or --resume's "
                               "checkpoint" : " or --faults");
#else
    (void)cmd;
    (void)m;
    (void)s;
    (void)ckpt;
#endif
    return 0;
}

int cli_ranks_signal(int sig)
{
#ifdef HAVE_MPI
    if (ranks() < 2)
        return sig;
    int got = ftm_mpi_agree(sig, NULL, 0);
    return got < 0 ? sig : got; /* MPI lost (a hang, told already): this rank's own */
#else
    return sig;
#endif
}

int cli_ranks_count(void) { return ranks(); }

int cli_ranks_refuse_trace(const char *cmd, const char *what)
{
    if (ranks() <= 1)
        return 0;
    return cli_usage_error(cmd, "--trace records the chips of one process: over MPI ranks it "
                           "would hold one block only; run the traced %s without mpirun", what);
}

int cli_ranks_me(void)
{
#ifdef HAVE_MPI
    return g_on ? ftm_mpi_rank() : 0;
#else
    return 0;
#endif
}
