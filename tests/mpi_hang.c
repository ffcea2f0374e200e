/* Run by tests/mpi_hang.sh under mpirun -np 2: a 1x3 mesh split 1x2 over
 * the ranks, chip (0,0) on rank 0 never sends what chip (0,2) on rank 1
 * waits for (it skips the schedule). The watchdog of the job must declare
 * a hang on every rank, and rank 0's report must name the stuck chip of
 * rank 1, what it waits for and from whom. Exit 0 when it does.
 *
 * The other modes (the argument) send chip (0,2)'s 4 KiB to chip (0,0):
 *   busy     chip (0,2) computes for four hang timeouts first, while chip
 *            (0,0) waits (rank 0 is stalled all that time). Rank 1 is
 *            busy, not silent: the run must end without a hang (exit 0).
 *   slow     rank 1 computes for four hang timeouts before it starts the
 *            run (as if building its schedules) while rank 0 waits in it:
 *            no hang either (exit 0).
 *   early    rank 1 stops (SIGSTOP) before it starts the run: rank 0's
 *            run must return a hang naming rank 1 silent ("run hung").
 *   between  after one run, rank 1 stops and rank 0 waits in a collective:
 *            rank 0's watchdog must name rank 1.
 *   root     after one run, rank 0 stops and rank 1 waits in a collective:
 *            rank 1's watchdog must name rank 0.
 * A named silent rank ends the job with exit 3 and a line "rank R went
 * silent" on stderr, which tests/mpi_hang.sh checks. */
#include "ftmesh/error.h"
#include "ftmesh/mesh.h"
#include "ftmesh/mpi.h"
#include "ftmesh/runtime.h"
#include "ftmesh/sched.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static unsigned char bufs[3][4096];

static int chip_fn(ftm_chip *chip, void *arg)
{
    int id = ftm_chip_id(chip);
    if (id == 0)
        return 0; /* the bug: it never sends */
    return ftm_chip_exec(chip, arg, bufs[id]);
}

enum { HANG_MS = 500 };

/* Computing: CPU time, no traffic, for four hang timeouts. */
static void spin(void)
{
    clock_t end = clock() + (clock_t)(4.0 * HANG_MS / 1000 * CLOCKS_PER_SEC);
    while (clock() < end)
        ;
}

/* The busy case: chip 2 computes first. */
static int busy_fn(ftm_chip *chip, void *arg)
{
    int id = ftm_chip_id(chip);
    if (id == 2)
        spin();
    return ftm_chip_exec(chip, arg, bufs[id]);
}

static int send_fn(ftm_chip *chip, void *arg)
{
    return ftm_chip_exec(chip, arg, bufs[ftm_chip_id(chip)]);
}

/* The job's watchdog named a silent rank (ftm_mpi_watch): say so and end
 * the job, as ftmesh does. */
static void on_silent(int r, double secs)
{
    fprintf(stderr, "rank %d: rank %d went silent (%.1f s)\n", ftm_mpi_rank(), r, secs);
    fflush(stderr);
    ftm_mpi_abort(3);
}

/* The process stops as a whole (every thread), as kill -STOP would. */
static void stop_if(int rank)
{
    if (ftm_mpi_rank() == rank)
        raise(SIGSTOP);
}

/* Chip src sends 4 KiB to chip dst over two hops (d, d). */
static int build(ftm_sched *s, int src, int dst, int d)
{
    const unsigned char dirs[2] = { (unsigned char)d, (unsigned char)d };
    int rc = ftm_sched_init(s, NULL, "test", 3, sizeof bufs[0]);
    int r = rc ? rc : ftm_sched_route(s, src, dst, dirs, 2);
    if (r < 0)
        return r;
    if ((rc = ftm_sched_step(s, src, "send", 0)) || (rc = ftm_sched_step(s, dst, "receive", 0)))
        return rc;
    return ftm_sched_xfer(s, r, 0, 0, sizeof bufs[0], FTM_RED_COPY);
}

static int check_busy(int rc)
{
    if (rc == 0)
        return 0;
    fprintf(stderr, "rank %d: a busy rank's run returned %s, want 0\n", ftm_mpi_rank(),
            ftm_err_name(rc));
    return 1;
}

static int check(ftm_rt *rt, int rc)
{
    ftm_stuck st[3];
    int n = ftm_rt_stuck(rt, st, 3);
    if (rc != FTM_EHANG) {
        fprintf(stderr, "rank %d: run returned %s, want FTM_EHANG\n", ftm_mpi_rank(),
                ftm_err_name(rc));
        return 1;
    }
    if (n != 1 || st[0].chip != 2 || st[0].wait != FTM_WAIT_RECV || st[0].peer != 0 ||
        st[0].dir != FTM_DIR_W || st[0].missing != sizeof bufs[0] ||
        strcmp(st[0].phase, "receive") != 0) {
        fprintf(stderr, "rank %d: %d stuck chips; first: chip %d wait %d peer %d dir %d "
                "missing %zu phase '%s'\n", ftm_mpi_rank(), n, n ? st[0].chip : -1,
                n ? st[0].wait : -1, n ? st[0].peer : -1, n ? st[0].dir : -1,
                n ? st[0].missing : 0, n ? st[0].phase : "");
        return 1;
    }
    return 0;
}

/* early: rank 0's run returns the hang (its stuck chip waits for rank 1)
 * and names rank 1 silent. */
static int check_early(ftm_rt *rt, int rc)
{
    double secs;
    ftm_stuck st[3];
    int n = ftm_rt_stuck(rt, st, 3), r = ftm_mpi_silent(&secs);
    if (rc != FTM_EHANG || r != 1 || n < 1 || st[0].chip != 0 || st[0].wait != FTM_WAIT_RECV) {
        fprintf(stderr, "rank 0: run returned %s, silent rank %d, %d stuck chips\n",
                ftm_err_name(rc), r, n);
        return 1;
    }
    fprintf(stderr, "rank 0: run hung: chip 0 waits; rank %d went silent (%.1f s)\n", r, secs);
    fflush(stderr);
    ftm_mpi_abort(3);
    return 1;
}

/* One good run, then one rank stops and the other waits for it in a
 * collective between runs (which must not return). */
static int between(ftm_rt *rt, ftm_sched *s, int who)
{
    int rc = ftm_rt_run(rt, send_fn, s);
    if (rc)
        return check_busy(rc);
    stop_if(who);
    uint64_t v = 1;
    rc = ftm_rt_sum_u64(rt, &v, 1);
    if (ftm_mpi_rank() != who) /* (the stopped rank gets here when the job ends) */
        fprintf(stderr, "rank %d: the collective returned %s without rank %d\n", ftm_mpi_rank(),
                ftm_err_name(rc), who);
    return 1;
}

static int run_mode(ftm_rt *rt, ftm_sched *s, const char *mode)
{
    if (!strcmp(mode, "busy"))
        return check_busy(ftm_rt_run(rt, busy_fn, s));
    if (!strcmp(mode, "slow") || !strcmp(mode, "early")) {
        if (ftm_mpi_rank() == 1 && mode[0] == 's')
            spin();
        stop_if(mode[0] == 'e' ? 1 : -1);
        int rc = ftm_rt_run(rt, send_fn, s);
        return mode[0] == 's' ? check_busy(rc) : check_early(rt, rc);
    }
    if (!strcmp(mode, "between") || !strcmp(mode, "root"))
        return between(rt, s, mode[0] == 'b');
    return check(rt, ftm_rt_run(rt, chip_fn, s));
}

int main(int argc, char **argv)
{
    if (ftm_mpi_init(&argc, &argv) || ftm_mpi_size() != 2 || ftm_mpi_enable(1, 2)) {
        fprintf(stderr, "needs mpirun -np 2 and MPI threads\n");
        ftm_mpi_abort(1);
        return 1;
    }
    ftm_mesh m;
    ftm_sched s;
    ftm_rt *rt = NULL;
    ftm_rt_config cfg = { 0, 0, HANG_MS / 1000.0, 0 };
    const char *mode = argc > 1 ? argv[1] : "hang";
    int hang = strcmp(mode, "hang") == 0;
    ftm_mpi_watch(0, on_silent);
    int rc = ftm_mesh_init(&m, 1, 3, 0);
    if (!rc)
        rc = hang ? build(&s, 0, 2, FTM_DIR_E) : build(&s, 2, 0, FTM_DIR_W);
    if (!rc)
        rc = ftm_rt_create(&rt, &m, &cfg);
    if (!rc && ftm_rt_is_local(rt, 0) != (ftm_mpi_rank() == 0))
        rc = FTM_EINTERNAL; /* blocks: chips 0 and 1 on rank 0, chip 2 on rank 1 */
    if (!rc)
        rc = ftm_rt_declare_sched(rt, &s);
    int bad = rc ? 1 : run_mode(rt, &s, mode);
    if (rc)
        fprintf(stderr, "setup failed: %s\n", ftm_strerror(rc));
    ftm_rt_destroy(rt);
    ftm_sched_free(&s);
    ftm_mesh_free(&m);
    ftm_mpi_finalize();
    return bad;
}
