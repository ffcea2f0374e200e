/* Internal to the 2-D allreduce: which chip of a band owns which elements
 * after the band's reduce-scatter (see allreduce_2d_share.c). */
#ifndef FTMESH_AR2D_INT_H
#define FTMESH_AR2D_INT_H

#include <stddef.h>
#include "ftmesh/mesh.h"
#include "ftmesh/plan2d.h"
#include "ftmesh/sched.h"
#include "ftmesh/collective.h"

typedef struct ar2d_shares {
    int n;               /* owners: the band's chips, in band->owners order */
    int npieces;
    size_t *start, *len; /* [npieces] pieces sorted by start (absolute elements) */
    int *owner;          /* [npieces] owner index of each piece */
    int *ro;             /* [n + 1] owner i's pieces: rf/rn[ro[i] .. ro[i+1]) */
    size_t *rf, *rn;     /* [npieces] pieces grouped by owner */
} ar2d_shares;

/* Shares of elements [first, first + count) in band b of mesh m. With
 * usable (per column, 1 = every band has all its chips of that column),
 * the column layout; with usable == NULL, the drift layout. */
int ar2d_shares_build(const ftm_mesh *m, const ftm_plan2d_band *b, size_t first, size_t count,
                          const unsigned char *usable, ar2d_shares *sh);
void ar2d_shares_free(ar2d_shares *sh);
/* Owner index of absolute element x (which must lie in the shared range). */
int ar2d_shares_find(const ar2d_shares *sh, size_t x);

/* A column ring through every chip of a usable column (column layout;
 * allreduce_2d_col.c): members in ring order, each with its valid range
 * (where it holds its band's sum), and the element ranges each ring
 * position owns after the reduce-scatter (ftm_allreduce_ring_step's
 * ftm_ring_owned, with valid ranges). route[] is filled by the caller. */
typedef struct ar2d_colring {
    int n;               /* members */
    int *chips;          /* [n] ring order: bands top to bottom (reverse: bottom up) */
    int *route;          /* [n] route ids chips[i] -> chips[(i+1) % n] */
    size_t *vf, *vn;     /* [n] valid range of member i (absolute elements) */
    int *ro;             /* [n + 1] position i owns rf/rn[ro[i] .. ro[i+1]) */
    size_t *rf, *rn;
} ar2d_colring;

/* Ring of column col for one half, given that half's shares sh[nbands]
 * and bidx (chip -> index in its band's owners). Returns 0, FTM_EINVAL
 * (a dead chip in the column) or FTM_ENOMEM; on error cr is empty. */
int ar2d_colring_build(ar2d_colring *cr, const ftm_mesh *m, const ftm_plan2d *p,
                           const ar2d_shares *sh, const int *bidx, int col, int reverse);
void ar2d_colring_free(ar2d_colring *cr);
/* The row-first 2-D allreduce (allreduce_2d.c) of elements [first, first
 * + count) of a buffer of total elements, into s (initialised here, name
 * algo). Every transfer leaves and arrives at the same step index. */
int ar2d_build_range(ftm_sched *s, const ftm_sched_ctx *ctx, const ftm_mesh *m, size_t first,
                     size_t count, size_t total, ftm_red red, const char *algo);
/* The concurrent variant (allreduce_2d_conc.c): half the buffer
 * row-first, half column-first, in the same steps. */
int ar2d_build_concurrent(ftm_sched *s, const ftm_sched_ctx *ctx, const ftm_mesh *m, size_t count,
                          ftm_red red);
/* 2d-lines' own schedule (allreduce_2d_pick.c: the fastest of its
 * variants) with k chunks per half; FTM_ENOTSUP when a row's healthy
 * chips are not one ring or one line. */
int ar2d_build_lines(ftm_sched *s, const ftm_sched_ctx *ctx, const ftm_mesh *m, size_t count,
                     ftm_red red, int k);
/* The algorithms' own schedules (ftm_allreduce_build_own): 2d's
 * row-first scheme (allreduce_2d.c) and 2d-lines' lines
 * (allreduce_2d_pick.c: the best variant). */
int ar2d_build_own_2d(ftm_sched *s, const ftm_sched_ctx *ctx, const ftm_mesh *m, size_t count,
                      ftm_red red);
int ar2d_build_own_lines(ftm_sched *s, const ftm_sched_ctx *ctx, const ftm_mesh *m, size_t count,
                         ftm_red red);
/* One variant of 2d-lines' own schedule (allreduce_2d_lines.c), and what
 * its build found out: whether the other variants would differ. */
typedef struct ar2d_lines_variant {
    int k;              /* chunks per half (<= 0: chosen from the size) */
    size_t split;       /* pieces' unit of reducing transfers
                         * (src/collective/pieces.h; 0: one piece) */
    int one_way_rows;   /* whole rows may run one-way where it pays */
    int other_passes;   /* the other row pass count (match_passes) */
    int two_sided_rows; /* whole rows as two-sided rings (where no row is
                         * a line: allreduce_2d_lines.c, row_ring_steps) */
} ar2d_lines_variant;
typedef struct ar2d_lines_found {
    int one_way_rows;   /* one-way rows were used (or the build stopped
                         * before it was known) */
    int other_passes;   /* there is another pass count to try */
    int no_lines;       /* every row of both halves is a whole ring */
} ar2d_lines_found;
/* Builds variant v of 2d-lines into s; found (may be NULL) is set where
 * the other variants differ. FTM_ENOTSUP where no line layout fits. */
int ar2d_build_lines_variant(ftm_sched *s, const ftm_sched_ctx *ctx, const ftm_mesh *m,
                             size_t count, ftm_red red, const ar2d_lines_variant *v,
                             ar2d_lines_found *found);
/* 1 when more than a quarter of the rows or of the columns hold a fault
 * (allreduce_2d_fallback.c). */
int ar2d_crowded(const ftm_mesh *m);
/* build (a 2-D builder without the fallback) into s; on a crowded, small,
 * thin, open or elongated mesh the 1-D ring's schedule instead (algo "ring", fallback the
 * reason) when that models faster (allreduce_2d_fallback.c). A build
 * watched there may fail with FTM_ESTOPPED (sched.h: ftm_sched_ctx.watch):
 * it could not have been kept. Returns 0 or an error (s then holds
 * nothing). */
int ar2d_build_checked(ftm_sched *s, const ftm_sched_ctx *ctx, const ftm_mesh *m, size_t count,
                       ftm_red red, ftm_allreduce_build_fn build);

#endif
