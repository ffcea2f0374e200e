/* The plan of the 2-D allreduce: row bands and their rings around holes.
 *
 * The 2-D allreduce (collective.h: ftm_allreduce_2d_build; the scheme is
 * explained with pictures in src/collective/allreduce_2d.c) groups the
 * healthy chips into BANDS of consecutive rows. On a healthy torus every
 * row is a band and its rings are the row's wrap-around rings; on an open
 * mesh rows are paired (a 2-row band has a nearest-neighbour ring, a lone
 * row does not). Rows touched by a fault are merged with neighbouring rows
 * into wider bands whose rings go around the hole. Each band has two rings
 * over its healthy chips: fwd (carries the first half of the buffer) and
 * rev (the second half), chosen so that together they load every directed
 * link as little as possible.
 *
 * Part of the router (src/router/plan2d.c). The plan owns its bands, their
 * owners arrays and rings: release everything with ftm_plan2d_free. The
 * planner is reentrant; what it keeps between calls is the router's (per
 * thread, router.h).
 */
#ifndef FTMESH_PLAN2D_H
#define FTMESH_PLAN2D_H

#include "ftmesh/export.h"

#include "ftmesh/mesh.h"
#include "ftmesh/router.h"

typedef struct ftm_plan2d_band {
    int row0, nrows;      /* rows [row0, row0 + nrows) */
    int alternate;        /* 1: merged or routed around a fault */
    int n;                /* healthy chips in the band */
    int *owners;          /* [n] the band's chips by (column, row): chip
                             owners[i] owns block i of the band's split */
    ftm_ring fwd, rev;    /* rings over the n chips (router.h layout) */
} ftm_plan2d_band;

typedef struct ftm_plan2d {
    int nbands;
    ftm_plan2d_band *bands; /* top to bottom */
    int max_load;           /* most ring edges (fwd + rev, all bands) on
                               one directed link; 1 on a healthy torus */
} ftm_plan2d;

/* Plans the bands of mesh m. Deterministic. Returns 0, FTM_EALLDEAD,
 * FTM_EPARTITION or FTM_ENOMEM; on error p is empty. */
FTM_EXTERN int ftm_plan2d_build(const ftm_mesh *m, ftm_plan2d *p);
FTM_EXTERN void ftm_plan2d_free(ftm_plan2d *p);

/* The column phase's layout: usable[c] = 1 for a column with no dead chip
 * (it gets one ring through all its chips); the other columns' shares are
 * adopted by the usable ones. Returns the number U of usable columns, or 0
 * when the drift layout is used instead (no column usable, or more than
 * 1/8 of them lost). usable has cols entries. */
FTM_EXTERN int ftm_plan2d_columns(const ftm_mesh *m, const ftm_plan2d *p, unsigned char *usable);

#endif
