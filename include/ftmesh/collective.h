/* Allreduce algorithms, as schedule builders (registry by name).
 *
 * Each algorithm turns (mesh with faults, element count, element type) into
 * a schedule (sched.h) in which every healthy chip ends with the sum of all
 * healthy chips' buffers. The runtime executes it with data; the cost model
 * replays it for modeled time.
 */
#ifndef FTMESH_COLLECTIVE_H
#define FTMESH_COLLECTIVE_H

#include <stddef.h>
#include "ftmesh/mesh.h"
#include "ftmesh/sched.h"

/* Builds an allreduce of count elements of type red (FTM_RED_SUM_F32: float,
 * FTM_RED_SUM_I64: int64) into s (initialised here; free with
 * ftm_sched_free). Returns 0, FTM_EALLDEAD, FTM_EPARTITION, FTM_ENOMEM or
 * FTM_ENOTSUP. */
typedef int (*ftm_allreduce_build_fn)(ftm_sched *s, const ftm_mesh *m, size_t count, ftm_red red);

typedef struct ftm_allreduce_algo {
    const char *name;           /* "ring", "bidir", "2d" */
    const char *summary;        /* one line for --help */
    ftm_allreduce_build_fn build;
} ftm_allreduce_algo;

/* The registered algorithms, terminated by an entry with name == NULL. */
const ftm_allreduce_algo *ftm_allreduce_algos(void);
/* Looks an algorithm up by name; NULL if unknown. */
const ftm_allreduce_algo *ftm_allreduce_find(const char *name);

/* Element size in bytes of a reduction type (4 or 8; 1 for FTM_RED_COPY). */
size_t ftm_red_elem_size(ftm_red red);

/* Runs an allreduce on the emulator and verifies it. */
typedef struct ftm_allreduce_opts {
    const char *algo;          /* registry name */
    size_t count;              /* float32 elements per chip */
    int iters;                 /* timed iterations (>= 1) */
    double hang_timeout_s;     /* 0: runtime default */
    size_t pkt_bytes;          /* 0: runtime default */
    int fail_during;           /* 1: chip fail_chip dies during the first run */
    int fail_chip;
    uint64_t fail_after_pkts;  /* ... after sending this many packets (0: half
                                * of its packets of one allreduce) */
    const ftm_sched *sched;    /* optional: algo's schedule for this mesh and
                                * count, already built (the caller modeled
                                * it); NULL: built here */
    int verify_selftest;       /* 1: after each allreduce, the lowest healthy
                                * chip's element 0 is bumped before it is
                                * checked, so `wrong` must equal iters: a test
                                * that the verifier catches a wrong sum */
} ftm_allreduce_opts;

typedef struct ftm_allreduce_result {
    int chips;                 /* healthy chips P */
    double wall_s;             /* median wall time of one allreduce */
    double wall_min_s, wall_max_s;
    uint64_t max_link_bytes;   /* most-loaded directed link, per allreduce */
    uint64_t total_link_bytes; /* all links, per allreduce */
    uint64_t wrong;            /* elements (over all chips and iterations) that
                                * differ from the exact sum */
    int links_match_sched;     /* 1 when measured link bytes == the schedule's */
    struct ftm_stuck *stuck;   /* on FTM_EHANG: malloc'd report (free it) */
    int nstuck;
    int died_chip;             /* chip that died during the run (then the
                                * figures are those of the recovery run on
                                * the mesh without it), or -1 */
} ftm_allreduce_result;

/* Builds the algorithm's schedule, runs it iters times on chip threads with
 * inputs whose float sums are exact (small integers that depend on chip and
 * index), and checks every element of every chip against the exact sum.
 * With fail_during, the chip dies mid-allreduce; the run stops with
 * FTM_ECHIPDEAD and is redone on the mesh without it (rings rebuilt around
 * the new hole), and the result describes that recovery run.
 * Returns 0 (even if wrong > 0), or an error: FTM_EINVAL (unknown algo),
 * FTM_EALLDEAD, FTM_EPARTITION (also when the dead chip cuts the mesh),
 * FTM_EHANG (res->stuck says who), ... */
int ftm_allreduce_run(const ftm_mesh *m, const ftm_allreduce_opts *o, ftm_allreduce_result *res);
void ftm_allreduce_result_free(ftm_allreduce_result *res);
/* The input value of element k on chip c, and the exact sum over the
 * healthy chips of m (what every chip must end with). */
float ftm_allreduce_input(int chip, size_t k);
double ftm_allreduce_expected(const ftm_mesh *m, size_t k);

/* The algorithms. */
int ftm_allreduce_ring_build(ftm_sched *s, const ftm_mesh *m, size_t count, ftm_red red);
int ftm_allreduce_bidir_build(ftm_sched *s, const ftm_mesh *m, size_t count, ftm_red red);
int ftm_allreduce_2d_build(ftm_sched *s, const ftm_mesh *m, size_t count, ftm_red red);
int ftm_allreduce_2d_concurrent_build(ftm_sched *s, const ftm_mesh *m, size_t count, ftm_red red);
int ftm_allreduce_tree_build(ftm_sched *s, const ftm_mesh *m, size_t count, ftm_red red);

/* Building block shared by the algorithms: one step of a ring allreduce
 * (reduce-scatter, then all-gather; Open MPI's balanced block split) of
 * elements [first, first + count) over the n chips of chips[] in ring order,
 * where route[i] is the route id (in s) from chips[i] to chips[(i+1) % n].
 * Steps k = 0 .. n-2 are the reduce-scatter, k = n-1 .. 2n-3 the all-gather
 * (ftm_ring_nsteps(n) = 2(n-1) in all). The step's ops are appended to each
 * ring chip's currently open step, so callers can run several rings in the
 * same step (bidir, the rows of 2d). After the reduce-scatter, ring position
 * i holds the full sum of block ftm_ring_owned_block(n, i). */
int ftm_allreduce_ring_step(ftm_sched *s, const int *chips, const int *route, int n,
                            size_t first, size_t count, size_t elem, ftm_red red, int k);
static inline int ftm_ring_nsteps(int n) { return 2 * (n - 1); }
static inline int ftm_ring_owned_block(int n, int i) { return (i + 1) % n; }

#endif
