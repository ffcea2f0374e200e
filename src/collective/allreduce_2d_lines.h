/* Internal to 2d-lines: the types shared by allreduce_2d_lines.c (rows,
 * columns, the pipeline), allreduce_2d_segs.c (rows cut into several
 * segments, folded into a neighbouring row) and their building blocks,
 * allreduce_2d_line_steps.c (lines, bidirectional and two-sided rings). */
#ifndef FTMESH_AR2D_LINES_H
#define FTMESH_AR2D_LINES_H

#include <stddef.h>
#include "ftmesh/mesh.h"
#include "ftmesh/sched.h"

/* m seen with rows and columns swapped (tr) or not. */
typedef struct ar2d_lview {
    const ftm_mesh *m;
    int tr, rows, cols;
} ar2d_lview;

/* A row (or column) of the view, or one segment of a row: its healthy
 * chips as one ring or line. */
typedef struct ar2d_lseg {
    int n, ring;
    int *chips;      /* [n] in order east (south for columns) */
    int *fwd, *rev;  /* [n] route ids chips[i] -> chips[i+1] / chips[i-1] */
    /* segments of a row cut more than once (allreduce_2d_segs.c): */
    int row;         /* the view row it lies in */
    int helper;      /* the adjacent whole row its foreign share folds into */
    int fold;        /* fold step offset in the column window: 0 or 1 */
    int *up, *down;  /* [n] route ids chips[i] -> helper chip / back */
} ar2d_lseg;

typedef struct ar2d_lhalf {
    ar2d_lview v;
    size_t first, count;   /* elements of this half */
    int k;                 /* chunks */
    ar2d_lseg *row;        /* [v.rows]; n = 0 for rows cut into segments */
    ar2d_lseg *col;        /* [v.cols]; n = 0 for unusable columns */
    int *ucol, nusable;    /* usable columns (ucol[nusable]) */
    int *uidx;             /* [v.cols] index in ucol, or -1 */
    int *pos;              /* [v.rows * v.cols] position of (r, c) in its row, or -1 */
    ar2d_lseg *xs;         /* [nxs] segments of rows cut more than once */
    int nxs, seg_steps;    /* and the steps of their longest line */
    int row_steps;         /* row phase steps of a chunk (all passes) */
    int col_steps;         /* column phase steps of a chunk */
    int npasses;           /* row phase passes per chunk */
    int pass_steps;        /* steps of one pass */
    int two_sided;         /* whole rows run as two-sided rings */
    int slot_steps;        /* a slot: chunk c starts at step c * slot_steps;
                            * its row all-gather at (c + 1) * slot_steps - 1 */
} ar2d_lhalf;

/* Per-position ranges of one line at one step (scratch, max length):
 * position j owns f[j] +len[j] and, where nx, also the pieces
 * xf[2j] +xn[2j] and xf[2j+1] +xn[2j+1]. */
typedef struct ar2d_lown {
    size_t *f, *len;        /* [L] each position's owned range */
    int *ro, *route;        /* [L + 1], [L] */
    size_t *rf, *rn;        /* [L] */
    size_t *xf, *xn;        /* [2L] */
    int nx;
    size_t elem;
    size_t split;           /* pieces' unit of reducing transfers (pieces.h;
                             * 0: one piece) */
    int uni, used_uni;      /* whole rows may run one-way; and did */
    ftm_red red;
} ar2d_lown;

int ar2d_lv_chip(const ar2d_lview *v, int r, int c);
int ar2d_lv_dir(const ar2d_lview *v, int d);
/* 1 when the view's link from (r, c) towards view-direction d is live both ways. */
int ar2d_lv_link(const ar2d_lview *v, int r, int c, int d);
/* Route id of the one-hop route from chip a in m-direction d (cached:
 * sched_hop_route). */
int ar2d_lhop(ftm_sched *s, int *cache, const ftm_mesh *m, int a, int d);
/* Line reduce-scatter and all-gather step t (0 .. n-1) of g. */
int ar2d_line_rs(ftm_sched *s, const ar2d_lseg *g, const ar2d_lown *o, int t);
int ar2d_line_ag(ftm_sched *s, const ar2d_lseg *g, const ar2d_lown *o, int t);
/* Chunk c's range of half h. */
void ar2d_lchunk(const ar2d_lhalf *h, int c, size_t *cf, size_t *cn);
/* Part q of nq of the range [*f, *f + *n). */
void ar2d_lpart(size_t *f, size_t *n, int q, int nq);
/* Reduce-scatter steps of a two-sided ring of n chips. */
int ar2d_ring2_steps(int n);
/* Step q (0 .. 2 ar2d_ring2_steps(n) - 1) of g's two-sided ring allreduce
 * (the column phase) of the ranges o owns. */
int ar2d_ring2_step(ftm_sched *s, const ar2d_lseg *g, const ar2d_lown *o, int q);
/* Step kk (0 .. 2n-3) of g's ring allreduce, each position's range split
 * over the forward and reverse rings (uni: one-way; o's scratch used). */
int ar2d_ring_bidir(ftm_sched *s, const ar2d_lseg *g, ar2d_lown *o, int kk, int uni);

/* allreduce_2d_segs.c. Segment i of a row as its chips (run), appended to
 * h->xs. */
int ar2d_segs_add(ar2d_lhalf *h, int row, const int *chips, int n);
/* Helpers and fold offsets of every segment; FTM_ENOTSUP when a segment
 * has no adjacent whole row with live chips and links above or below it. */
int ar2d_segs_plan(ar2d_lhalf *h);
/* Routes of h's segments (line edges, folds). */
int ar2d_segs_routes(ftm_sched *s, int *cache, ar2d_lhalf *h);
/* Segment transfers of global step j (relative to the rows' first slot,
 * may be negative down to -D). */
int ar2d_segs_step(ftm_sched *s, const ar2d_lhalf *h, ar2d_lown *o, int j);
/* Steps after the rows' pipeline the segments need (0 without segments). */
int ar2d_segs_tail(const ar2d_lhalf *h);
void ar2d_segs_free(ar2d_lhalf *h);

#endif
