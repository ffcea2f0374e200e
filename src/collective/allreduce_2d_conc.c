/* "2d-concurrent"'s own schedule: the row-first 2-D allreduce
 * (allreduce_2d.c) run concurrently on both halves of the buffer. The
 * registry's entry point, which may keep another schedule where it models
 * faster, is the picker's (allreduce_2d_pick.c).
 *
 * The row-first scheme (allreduce_2d.c) runs its phases one after another:
 * while the rows reduce-scatter, the column links idle, and the other way
 * round, so each chip drives 2 of its 4 links (ceiling on a healthy TPU-v3
 * pod: 2 x 100 GB/s x 1024 = 204.8 TB/s of busbw).
 *
 * CONCURRENT: half A of the buffer goes row-first, half B column-first, in
 * the same steps, each half bidirectional as before:
 *
 *     steps:     phase 1 (big)     phases 2-3 (small)   phase 4 (big)
 *     half A     rows  E + W       columns N + S        rows  E + W
 *     half B     cols  N + S       rows    E + W        cols  N + S
 *
 * so all four links of every chip carry data in every phase (ceiling
 * 409.6 TB/s). Half B is the row-first scheme planned on the TRANSPOSED
 * mesh (rows <-> columns, directions N <-> W and E <-> S), so its bands are
 * columns and it goes around holes the same way, then mapped back. Both
 * halves' schedules put every transfer at the same step index on sender
 * and receiver (allreduce_2d.c pads phase 1), so merging them step by step
 * (step j of a chip = its step j of A plus its step j of B) cannot create
 * a wait cycle.
 *
 * With a hole, the two halves' rings compete for the links around it (a
 * band's turn-around uses a link of the other dimension, which the other
 * half's ring through it needs in the same steps), and the coupled steps
 * make the concurrent schedule as slow as the row-first one or slower:
 * around a hole there are no idle links left to detour over (the chips
 * next to it have 3 live links but sit on 4 rings). --algo auto picks
 * whichever models faster.
 */
#include "ftmesh/collective.h"
#include "ftmesh/plan2d.h"
#include "ftmesh/error.h"
#include "allreduce_2d_int.h"

#include <stdlib.h>
#include <string.h>

/* Mesh t = m transposed: chip (r, c) of m is (c, r) of t; direction d of
 * m is 3 - d in t (N <-> W, E <-> S). */
static int transpose(const ftm_mesh *m, ftm_mesh *t)
{
    int rc = ftm_mesh_init(t, m->cols, m->rows, m->torus);
    if (rc)
        return rc;
    for (int r = 0; r < m->rows; r++)
        for (int c = 0; c < m->cols; c++) {
            int a = ftm_mesh_chip(m, r, c), b = ftm_mesh_chip(t, c, r);
            t->chip_dead[b] = m->chip_dead[a];
            for (int d = 0; d < FTM_NDIRS; d++)
                t->link_dead[b * FTM_NDIRS + 3 - d] = m->link_dead[a * FTM_NDIRS + d];
        }
    return 0;
}

/* A merged step's phase, "PA+PB": half A's phase and half B's in the
 * mesh's own terms (B was planned on the transposed mesh: its rows are
 * the mesh's columns), either empty where that half has no such step.
 * The halves' phases need not line up: around a hole on an open mesh one
 * half's bands take more steps than the other's. */
#define PH(a, b) a "+" b
static const char *const CONC_NAMES[5] = { "", "row-reduce-scatter", "col-reduce-scatter",
                                           "col-all-gather", "row-all-gather" };
static const char *const CONC_PHASE[5][5] = {
    { "+", PH("", "row-reduce-scatter"), PH("", "col-reduce-scatter"),
      PH("", "col-all-gather"), PH("", "row-all-gather") },
#define ROW(a) { PH(a, ""), PH(a, "row-reduce-scatter"), PH(a, "col-reduce-scatter"), \
                 PH(a, "col-all-gather"), PH(a, "row-all-gather") }
    ROW("row-reduce-scatter"), ROW("col-reduce-scatter"), ROW("col-all-gather"),
    ROW("row-all-gather"),
#undef ROW
};
#undef PH

/* Index of phase p in CONC_NAMES (0: none or another name), with rows and
 * columns swapped when transposed. */
static int conc_index(const char *p, int transposed)
{
    static const int swap[5] = { 0, 2, 1, 4, 3 };
    for (int i = 1; p && i < 5; i++)
        if (!strcmp(p, CONC_NAMES[i]))
            return transposed ? swap[i] : i;
    return 0;
}

static const char *conc_phase(const char *pa, const char *pb)
{
    return CONC_PHASE[conc_index(pa, 0)][conc_index(pb, 1)];
}

/* Merges a (built on m) and b (built on t = m transposed) step by step
 * (ftm_sched_merge), consuming their programs: chip (r, c) of m is (c, r)
 * of t, direction d of t is 3 - d of m. */
static int merge(ftm_sched *out, const ftm_mesh *m, ftm_sched *a, ftm_sched *b,
                 const ftm_mesh *t)
{
    static const unsigned char dir_of[FTM_NDIRS] = { 3, 2, 1, 0 };
    int *b_chip = malloc(sizeof(int) * (size_t)m->nchips);
    if (!b_chip)
        return FTM_ENOMEM;
    for (int c = 0; c < m->nchips; c++)
        b_chip[c] = ftm_mesh_chip(t, ftm_mesh_col(m, c), ftm_mesh_row(m, c));
    int rc = ftm_sched_merge(out, "2d-concurrent", a, b, b_chip, dir_of, conc_phase);
    free(b_chip);
    return rc;
}

int ar2d_build_concurrent(ftm_sched *s, const ftm_sched_ctx *ctx, const ftm_mesh *m, size_t count,
                          ftm_red red)
{
    ftm_mesh t;
    int rc = transpose(m, &t);
    if (rc)
        return rc;
    size_t ha = (count + 1) / 2;
    ftm_sched a, b;
    rc = ar2d_build_range(&a, ctx, m, 0, ha, count, red, "2d");
    if (!rc) {
        rc = ar2d_build_range(&b, ctx, &t, ha, count - ha, count, red, "2d");
        if (!rc) {
            rc = merge(s, m, &a, &b, &t);
            ftm_sched_free(&b);
        }
        ftm_sched_free(&a);
    }
    ftm_mesh_free(&t);
    return rc;
}
