/* Run by tests/mpi_hang.sh under mpirun -np 2: a 1x3 mesh split 1x2 over
 * the ranks, chip (0,0) on rank 0 never sends what chip (0,2) on rank 1
 * waits for (it skips the schedule). The watchdog of the job must declare
 * a hang on every rank, and rank 0's report must name the stuck chip of
 * rank 1, what it waits for and from whom. Exit 0 when it does.
 *
 * With the argument "busy": chip (0,2) computes for four hang timeouts
 * before it sends to chip (0,0), which waits (rank 0 is stalled all that
 * time). Rank 1 is busy, not silent: the run must end without a hang. */
#include "ftmesh/error.h"
#include "ftmesh/mesh.h"
#include "ftmesh/mpi.h"
#include "ftmesh/runtime.h"
#include "ftmesh/sched.h"

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

/* The busy case: chip 2 computes (spins: CPU time, no traffic) first. */
static int busy_fn(ftm_chip *chip, void *arg)
{
    int id = ftm_chip_id(chip);
    if (id == 2) {
        clock_t end = clock() + (clock_t)(4.0 * HANG_MS / 1000 * CLOCKS_PER_SEC);
        while (clock() < end)
            ;
    }
    return ftm_chip_exec(chip, arg, bufs[id]);
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
    int busy = argc > 1 && strcmp(argv[1], "busy") == 0;
    int rc = ftm_mesh_init(&m, 1, 3, 0);
    if (!rc)
        rc = busy ? build(&s, 2, 0, FTM_DIR_W) : build(&s, 0, 2, FTM_DIR_E);
    if (!rc)
        rc = ftm_rt_create(&rt, &m, &cfg);
    if (!rc && ftm_rt_is_local(rt, 0) != (ftm_mpi_rank() == 0))
        rc = FTM_EINTERNAL; /* blocks: chips 0 and 1 on rank 0, chip 2 on rank 1 */
    if (!rc)
        rc = ftm_rt_declare_sched(rt, &s);
    int bad = rc ? 1
            : busy ? check_busy(ftm_rt_run(rt, busy_fn, &s))
                   : check(rt, ftm_rt_run(rt, chip_fn, &s));
    if (rc)
        fprintf(stderr, "setup failed: %s\n", ftm_strerror(rc));
    ftm_rt_destroy(rt);
    ftm_sched_free(&s);
    ftm_mesh_free(&m);
    ftm_mpi_finalize();
    return bad;
}
