/* "2d-lines": the concurrent 2-D allreduce with broken rows and columns
 * run as LINES, pipelined in chunks, so that no chip next to a hole has to
 * be a full member of a ring.
 *
 * Why: in 2d-concurrent a row touched by a hole is merged into a band
 * whose ring turns round the hole over a vertical link, the link the
 * other half's column ring needs at the same time: the busiest link
 * carries twice the healthy load. Here a broken row stays a row: its
 * healthy chips form a line (the hole cuts the row's ring open), which
 * needs no link outside the row.
 *
 * A LINE reduce-scatter over positions 0..n-1 (position j owns a range)
 * runs two pipelined flows in n steps: at step t (1 <= t <= n-1) each
 * position i <= t-1 sends east the partial sum of owner n-t+i; at step t
 * (t <= n-2) each position i >= n-1-t sends west the partial of owner
 * t+i-n+1. Each owner gets its west-side partial at step n-2 and its
 * east-side one at step n-1 (one step apart: two sums into one range in
 * one step would race). Its all-gather is the exact time reverse (copies,
 * directions swapped). Per step every directed link carries at most one
 * owner's range. A line of 4 chips ("a>b:k": position a sends b the
 * partial sum of owner k's range):
 *
 *     step   east flow              west flow
 *      0                                           3>2:0
 *      1     0>1:3                          2>1:0  3>2:1
 *      2     0>1:2  1>2:3           1>0:0   2>1:1  3>2:2
 *      3     0>1:1  1>2:2  2>3:3
 *
 * The pipeline, chunk c starting at step c*D (D = P1 + P23 + 1 below):
 *
 *     steps     0 .. P1-1   P1 .. D-2    D-1 .. D+P1-2   D+P1-1 ..
 *     chunk 0   rows RS     columns      rows AG
 *     chunk 1                            rows RS (from   columns ...
 *                                        step D)
 *
 * so chunk 1's row reduce-scatter step t runs beside chunk 0's row
 * all-gather step t+1, the pairing the picture above needs.
 *
 * Alone, a line's reduce-scatter is twice as slow as a bidirectional
 * ring's (its end chip sends all but its own share over one link). But
 * link i -> i+1 is busy in reduce-scatter step t iff i <= t-1 and in
 * all-gather step t+1 iff i >= t (west: the mirror image), so running
 * chunk c's reduce-scatter step t together with chunk c-1's all-gather
 * step t+1 loads every link with exactly one range per step, as a ring
 * does. Hence the pipeline: the buffer's two halves (as in 2d-concurrent:
 * A rows-first on the mesh, B columns-first on its transpose, in the same
 * steps) are cut into k chunks; chunk c starts D = P1 + P23 + 1 steps (a slot,
 * slot_steps) after chunk c-1 (P1: row reduce-scatter steps, row_steps;
 * P23: column allreduce steps, col_steps),
 * so its row reduce-scatter runs beside chunk c-1's row all-gather, one
 * step ahead as the lines need. Cost: the first reduce-scatter and the
 * last all-gather run alone (1/k of the bandwidth term) and k times the
 * column phase's steps (latency).
 *
 * A half whose rows are shorter than the other's (the 16x32 torus' columns)
 * runs its row phase in passes, so that both halves' steps carry alike
 * (match_passes).
 *
 * Rows that are whole (torus) stay bidirectional rings (half of each
 * owner's range on each direction; pipelined with small ranges, one-way
 * where that models faster: ring_uni). The column phase runs on USABLE
 * columns only (all chips alive, one ring or one line; lines only where
 * no column is a ring), a ring column as a two-sided ring (R steps, not
 * 2R-2: the small per-chunk column blocks are latency-bound); the row chips in
 * other columns own nothing (their rows' owners adopt their share) and get
 * the result from their row's all-gather. A row cut more than once runs
 * as segments folded into a whole neighbouring row (allreduce_2d_segs.c).
 * Where that does not apply (no usable column, a segment without a helper
 * row) or where 2d-concurrent's schedule models faster, the registry
 * entry runs 2d-concurrent's schedule (which names itself and says why:
 * ftm_sched.fallback), and on small or crowded meshes the ring's when it
 * models faster, as 2d does. ar2d_build_own_lines builds lines alone.
 */
#include "ftmesh/collective.h"
#include "ftmesh/costmodel.h"
#include "ftmesh/error.h"
#include "allreduce_2d_int.h"
#include "allreduce_2d_lines.h"
#include "keep.h"
#include "core/util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const PHASE = "2d-lines";

typedef ar2d_lview view;
typedef ar2d_lseg seg;
typedef ar2d_lhalf half;
typedef ar2d_lown own;

/* Chips of line i (a row, or a column if vert) in order, as one run:
 * fills chips[] (n of them) and *ring, and the index in chips[] where
 * each run starts, rs[] (*nr of them). Returns FTM_ENOTSUP when the
 * healthy chips form more than one run. */
static int find_run(const view *v, int i, int vert, int *chips, int *n, int *ring, int *rs, int *nr)
{
    int L = vert ? v->rows : v->cols, dE = vert ? FTM_DIR_S : FTM_DIR_E;
    int torus = v->m->torus && L >= 3;
#define AT(x) (vert ? ar2d_lv_chip(v, (x), i) : ar2d_lv_chip(v, i, (x)))
#define EDGE(x) (vert ? ar2d_lv_link(v, (x), i, dE) : ar2d_lv_link(v, i, (x), dE))
    /* Start after a broken edge (torus) or at 0 (open line). */
    int start = 0, broken = !torus;
    for (int x = 0; torus && x < L && !broken; x++)
        if (!EDGE(core_mod(x - 1, L))) {
            start = x;
            broken = 1;
        }
    int runs = 0, prev_ok = 0;
    *n = 0;
    for (int y = 0; y < L; y++) {
        int x = (start + y) % L, a = AT(x);
        if (!ftm_mesh_alive(v->m, a)) {
            prev_ok = 0;
            continue;
        }
        if (!prev_ok)
            rs[runs++] = *n;
        chips[(*n)++] = a;
        prev_ok = y + 1 < L && EDGE(x);
    }
#undef AT
#undef EDGE
    *ring = !broken;
    *nr = runs;
    return runs > 1 ? FTM_ENOTSUP : 0;
}

static void seg_free(seg *g)
{
    free(g->chips);
    memset(g, 0, sizeof *g);
}

static void half_free(half *h)
{
    for (int r = 0; h->row && r < h->v.rows; r++)
        seg_free(&h->row[r]);
    for (int c = 0; h->col && c < h->v.cols; c++)
        seg_free(&h->col[c]);
    free(h->row);
    free(h->col);
    free(h->ucol);
    free(h->uidx);
    free(h->pos);
    ar2d_segs_free(h);
    memset(h, 0, sizeof *h);
}

/* Line i of the view (a row, or a column if vert) as a segment; chips
 * and both route arrays in one allocation, routes filled later. */
static int seg_find(const view *v, int i, int vert, seg *g, int *rs, int *nr)
{
    int L = vert ? v->rows : v->cols;
    g->chips = malloc(sizeof(int) * 3 * (size_t)L);
    if (!g->chips)
        return FTM_ENOMEM;
    g->fwd = g->chips + L;
    g->rev = g->chips + 2 * L;
    return find_run(v, i, vert, g->chips, &g->n, &g->ring, rs, nr);
}

/* Row r cut into several runs: each becomes a segment (h->xs), the row
 * itself runs nothing. */
static int row_segments(half *h, int r, const int *rs, int nr)
{
    seg *g = &h->row[r];
    int rc = 0;
    for (int x = 0; x < nr && !rc; x++) {
        int e = x + 1 < nr ? rs[x + 1] : g->n;
        rc = ar2d_segs_add(h, r, g->chips + rs[x], e - rs[x]);
    }
    g->n = 0;
    return rc;
}

/* A whole row's reduce-scatter steps: n - 1 as a bidirectional ring, or
 * ar2d_ring2_steps(n) as a two-sided ring (n/2 + 1 or so). The two-sided
 * ring moves each owner's whole range from both sides, so it carries
 * slightly more per direction (n/2 ranges against (n-1)/2) in about half
 * the steps: it pays where the hop latencies weigh more than that
 * (healthy 16x32 and 32x32 tori at ResNet-50 size: 2% faster; at
 * BERT-large size 0.3% slower, and the picker keeps the other). Only
 * where no row is a line: a line's steps pair with the previous chunk's
 * all-gather, which a two-sided ring's full links leave no room for. */
static int row_ring_steps(const half *h, int n)
{
    return h->two_sided ? ar2d_ring2_steps(n) : n - 1;
}

/* Every row of the view as a ring, a line or segments; P1. */
static int rows_find(half *h)
{
    int R = h->v.rows, rc = 0, nr;
    int *rs = malloc(sizeof(int) * (size_t)h->v.cols);
    if (!rs)
        return FTM_ENOMEM;
    for (int r = 0; r < R && !rc; r++) {
        rc = seg_find(&h->v, r, 0, &h->row[r], rs, &nr);
        if (rc == FTM_ENOTSUP)
            rc = row_segments(h, r, rs, nr);
        int n = h->row[r].n, st = h->row[r].ring ? row_ring_steps(h, n) : n;
        h->row_steps = st > h->row_steps ? st : h->row_steps;
    }
    free(rs);
    h->row_steps = h->seg_steps > h->row_steps ? h->seg_steps : h->row_steps;
    return rc;
}

/* Route ids of g's edges in s (one hop each), over view-directions dE
 * (forward) and its opposite. */
static int seg_routes(ftm_sched *s, int *cache, const view *v, seg *g, int dE)
{
    int n = g->n, de = ar2d_lv_dir(v, dE), dw = ar2d_lv_dir(v, (dE + 2) % 4);
    for (int i = 0; i < n; i++) {
        g->fwd[i] = g->rev[i] = -1;
        if (g->ring || i + 1 < n)
            g->fwd[i] = ar2d_lhop(s, cache, v->m, g->chips[i], de);
        if (g->ring || i > 0)
            g->rev[i] = ar2d_lhop(s, cache, v->m, g->chips[i], dw);
        if ((g->ring || i + 1 < n) && g->fwd[i] < 0)
            return g->fwd[i];
        if ((g->ring || i > 0) && g->rev[i] < 0)
            return g->rev[i];
    }
    return 0;
}

/* Where some usable columns are rings, the line ones (a torus column cut
 * by a dead link) are dropped, their share adopted: a line's allreduce
 * takes 2R steps, a two-sided ring's R, and every chunk's column phase
 * waits for the slowest column. */
static void cols_drop_lines(half *h)
{
    int rings = 0, U = 0;
    for (int u = 0; u < h->nusable; u++)
        rings += h->col[h->ucol[u]].ring;
    if (rings == 0 || rings == h->nusable)
        return;
    for (int u = 0; u < h->nusable; u++) {
        seg *g = &h->col[h->ucol[u]];
        if (g->ring)
            h->ucol[U++] = h->ucol[u];
        else
            g->n = 0;
    }
    h->nusable = U;
    h->col_steps = 2 * ar2d_ring2_steps(h->v.rows);
}

/* The usable columns (all chips alive, one ring or line), P23 and uidx. */
static int cols_find(half *h)
{
    int R = h->v.rows, C = h->v.cols;
    for (int c = 0; c < C; c++) {
        /* uidx is scratch for the run starts here, filled below */
        int nr, e = seg_find(&h->v, c, 1, &h->col[c], h->uidx, &nr);
        if (e == FTM_ENOMEM)
            return e;
        if (e || h->col[c].n < R)
            h->col[c].n = 0; /* not usable */
        else {
            int st = h->col[c].ring ? 2 * ar2d_ring2_steps(R) : 2 * R;
            h->col_steps = st > h->col_steps ? st : h->col_steps;
            h->ucol[h->nusable++] = c;
        }
    }
    if (h->nusable == 0)
        return FTM_ENOTSUP;
    cols_drop_lines(h);
    for (int c = 0; c < C; c++)
        h->uidx[c] = -1;
    for (int u = 0; u < h->nusable; u++)
        h->uidx[h->ucol[u]] = u;
    return 0;
}

/* Rows, usable columns, positions and phase lengths of one half. */
static int half_init(half *h, const ftm_mesh *m, int tr, size_t first, size_t count,
                     int two_sided)
{
    memset(h, 0, sizeof *h);
    h->two_sided = two_sided;
    h->v = (view){ m, tr, tr ? m->cols : m->rows, tr ? m->rows : m->cols };
    int R = h->v.rows, C = h->v.cols, rc = 0;
    h->first = first;
    h->count = count;
    h->k = 1;
    h->row = calloc((size_t)R, sizeof *h->row);
    h->col = calloc((size_t)C, sizeof *h->col);
    h->ucol = malloc(sizeof(int) * (size_t)C);
    h->uidx = malloc(sizeof(int) * (size_t)(R > C ? R : C));
    h->pos = malloc(sizeof(int) * (size_t)R * (size_t)C);
    if (!h->row || !h->col || !h->ucol || !h->uidx || !h->pos)
        rc = FTM_ENOMEM;
    if (!rc)
        rc = rows_find(h);
    if (!rc)
        rc = cols_find(h);
    if (!rc && h->nxs)
        rc = ar2d_segs_plan(h);
    for (int x = 0; !rc && x < R * C; x++)
        h->pos[x] = -1;
    for (int r = 0; r < R && !rc; r++)
        for (int i = 0; i < h->row[r].n; i++) {
            int a = h->row[r].chips[i];
            int c = tr ? ftm_mesh_row(m, a) : ftm_mesh_col(m, a);
            h->pos[r * C + c] = i;
        }
    h->npasses = 1;
    h->pass_steps = h->row_steps > 0 ? h->row_steps : 1;
    h->slot_steps = h->row_steps + h->col_steps + 1; /* the caller makes both halves' D equal */
    return rc;
}

/* Both halves run their row phases in the same steps, and a chip's step
 * lasts as long as its longest transfer. A half whose rows are shorter
 * (the 16-chip columns of a 16x32 torus, against 32-chip rows) has as
 * much to move in fewer steps, each larger: alone, its steps would hold
 * the other half's up (16x32, BERT-large: 15 steps of 237 us beside 31 of
 * 119 us). So it runs its row phase as np passes, each over part of every
 * owner's block, np near the ratio r of the row phases' steps: then the
 * steps carry alike. The column phase is unchanged (after all passes each
 * owner holds its whole block). np is r rounded, or (alt) the integer on
 * r's other side, if within 3/4 of r: where r is far from an integer,
 * which is faster depends on the size (more passes, more steps: measured,
 * 21x32 torus, r = 1.55: 2 passes 25% slower at 1 MiB, 2.4% faster at
 * 102 MB; 13x32, r = 2.58: 2 passes faster than 3), so the caller builds
 * both. Returns 1 when alt names another np. */
static int match_passes(half *h, int alt)
{
    int P = h[0].row_steps > h[1].row_steps ? h[0].row_steps : h[1].row_steps, other = 0;
    for (int a = 0; a < 2 && P > 0; a++) {
        int P1 = h[a].row_steps;
        if (P1 == 0) /* no row of two chips: nothing to pass */
            continue;
        int np = (2 * P + P1) / (2 * P1), o = np * P1 < P ? np + 1 : np - 1;
        if (np * P1 != P && o >= 1 && 4 * abs(o * P1 - P) <= 3 * P1) {
            other = 1;
            np = alt ? o : np;
        }
        h[a].npasses = np;
        h[a].row_steps = np * h[a].pass_steps;
        h[a].slot_steps = h[a].row_steps + h[a].col_steps + 1;
    }
    return other;
}

/* 1 when the whole rows' rings of a chunk of cn elements run one-way
 * (reduce-scatter forward, all-gather backward, whole ranges) rather than
 * as two half rings: pipelined (k > 1), a ring's reduce-scatter step runs
 * beside the previous chunk's all-gather step, so both directions carry
 * data either way, and one-way each link carries one transfer per step
 * instead of two (one hop latency, not two). But a whole range's reduction
 * then ends the step where pieces (pieces.c) hide most of it, so only for
 * ranges below the two-piece threshold (2 o->split), as a line's. Measured
 * (32x32, ResNet-50 size, 0.57 MB ranges): 1.044 -> 1.016 ms with a dead
 * host; at BERT-large size (2.8 MB) one-way was 3% slower. */
static int ring_uni(const half *h, own *o, size_t cn)
{
    size_t bmax = (cn + (size_t)h->nusable - 1) / (size_t)h->nusable;
    bmax = (bmax + (size_t)h->npasses - 1) / (size_t)h->npasses; /* one pass's */
    int u = o->uni && h->k > 1 && (!o->split || bmax - bmax / 2 <= o->split);
    o->used_uni |= u;
    return u;
}

/* Row phase step t of chunk c: reduce-scatter (ag = 0) or all-gather;
 * pass t / p1 of np, each pass part of every owner's block. */
static int rows_step(ftm_sched *s, const half *h, own *o, int c, int ag, int t)
{
    size_t cf, cn;
    ar2d_lchunk(h, c, &cf, &cn);
    int rc = 0, C = h->v.cols, uni = ring_uni(h, o, cn), q = t / h->pass_steps;
    t %= h->pass_steps;
    for (int r = 0; r < h->v.rows && !rc; r++) {
        const seg *g = &h->row[r];
        if (g->n < 2 || t >= (g->ring ? row_ring_steps(h, g->n) : g->n))
            continue;
        for (int i = 0; i < g->n; i++)
            o->len[i] = o->f[i] = 0;
        for (int u = 0; u < h->nusable; u++) {
            int p = h->pos[r * C + h->ucol[u]];
            ftm_sched_block(cn, h->nusable, u, &o->f[p], &o->len[p]);
            o->f[p] += cf;
            ar2d_lpart(&o->f[p], &o->len[p], q, h->npasses);
        }
        if (g->ring && h->two_sided)
            rc = ar2d_ring2_step(s, g, o, ag ? ar2d_ring2_steps(g->n) + t : t);
        else if (g->ring)
            rc = ar2d_ring_bidir(s, g, o, ag ? g->n - 1 + t : t, uni);
        else
            rc = ag ? ar2d_line_ag(s, g, o, t) : ar2d_line_rs(s, g, o, t);
    }
    return rc;
}

/* Column phase step q of chunk c: every usable column allreduces its
 * block (the rows' owners in it hold their row's sum). */
static int cols_step(ftm_sched *s, const half *h, own *o, int c, int q)
{
    size_t cf, cn;
    ar2d_lchunk(h, c, &cf, &cn);
    int rc = 0;
    for (int u = 0; u < h->nusable && !rc; u++) {
        const seg *g = &h->col[h->ucol[u]];
        int n = g->n;
        if (n < 2 || q >= (g->ring ? 2 * ar2d_ring2_steps(n) : 2 * n))
            continue;
        size_t bf, bn;
        ftm_sched_block(cn, h->nusable, u, &bf, &bn);
        for (int i = 0; i < n; i++) {
            ftm_sched_block(bn, n, i, &o->f[i], &o->len[i]);
            o->f[i] += cf + bf;
        }
        if (g->ring)
            rc = ar2d_ring2_step(s, g, o, q);
        else
            rc = q < n ? ar2d_line_rs(s, g, o, q) : ar2d_line_ag(s, g, o, q - n);
    }
    return rc;
}

/* Global step j of half h: every chunk whose window covers j. The
 * column phase is padded to D - 1 - P1 steps, so chunk c's all-gather
 * starts one step before chunk c+1's reduce-scatter. */
static int half_step(ftm_sched *s, const half *h, own *o, int j)
{
    int rc = 0;
    for (int c = 0; c < h->k && !rc; c++) {
        int l = j - c * h->slot_steps;
        if (l < 0 || l >= h->slot_steps - 1 + h->row_steps)
            continue;
        if (l < h->row_steps)
            rc = rows_step(s, h, o, c, 0, l);
        else if (l < h->row_steps + h->col_steps)
            rc = cols_step(s, h, o, c, l - h->row_steps);
        else if (l >= h->slot_steps - 1)
            rc = rows_step(s, h, o, c, 1, l - (h->slot_steps - 1));
    }
    return rc;
}

static int own_init(own *o, int L, size_t elem, ftm_red red)
{
    /* the size_t arrays and the int arrays, each carved from one block
     * (f and ro are the blocks: the caller frees those two), in n = L + 1
     * units: xf and xn take two */
    size_t n = (size_t)L + 1, nz = 0, ni = 0;
    size_t **zs[] = { &o->f, &o->len, &o->rf, &o->rn, &o->xf, &o->xn };
    static const int zn[] = { 1, 1, 1, 1, 2, 2 };
    int **is[] = { &o->ro, &o->route };
    enum { NZ = sizeof zn / sizeof zn[0], NI = sizeof is / sizeof is[0] };
    for (size_t i = 0; i < NZ; i++)
        nz += (size_t)zn[i] * n;
    ni = NI * n;
    size_t *z = malloc(sizeof(size_t) * nz);
    int *in = malloc(sizeof(int) * ni);
    if (!z || !in) { /* the caller frees both: leave nothing to free twice */
        free(z);
        free(in);
        o->f = NULL;
        o->ro = NULL;
        return FTM_ENOMEM;
    }
    for (size_t i = 0; i < NZ; z += (size_t)zn[i++] * n)
        *zs[i] = z;
    for (size_t i = 0; i < NI; in += n)
        *is[i++] = in;
    o->elem = elem;
    o->red = red;
    return 0;
}

/* Routes of every segment of both halves (one hop each). */
static int halves_routes(ftm_sched *s, const ftm_mesh *m, half *h)
{
    int *cache = malloc(sizeof(int) * FTM_NDIRS * (size_t)m->nchips), rc = 0;
    if (!cache)
        return FTM_ENOMEM;
    for (int x = 0; x < FTM_NDIRS * m->nchips; x++)
        cache[x] = -1;
    for (int a = 0; a < 2 && !rc; a++) {
        for (int r = 0; r < h[a].v.rows && !rc; r++)
            rc = seg_routes(s, cache, &h[a].v, &h[a].row[r], FTM_DIR_E);
        for (int c = 0; c < h[a].v.cols && !rc; c++)
            rc = seg_routes(s, cache, &h[a].v, &h[a].col[c], FTM_DIR_S);
        for (int x = 0; x < h[a].nxs && !rc; x++)
            rc = seg_routes(s, cache, &h[a].v, &h[a].xs[x], FTM_DIR_E);
        if (!rc)
            rc = ar2d_segs_routes(s, cache, &h[a]);
    }
    free(cache);
    return rc;
}

/* Opens step j on every healthy chip and adds both halves' transfers.
 * With segments the rows' pipeline starts one slot (D steps) late: the
 * segments reduce-scatter each chunk a slot ahead of the rows. */
static int emit(ftm_sched *s, const ftm_mesh *m, half *h, own *o)
{
    int D = h[0].slot_steps > h[1].slot_steps ? h[0].slot_steps : h[1].slot_steps, rc = 0;
    h[0].slot_steps = h[1].slot_steps = D; /* same offset: the halves' big phases stay together */
    int J = (h[0].k - 1) * D + D - 1 + (h[0].row_steps > h[1].row_steps ? h[0].row_steps : h[1].row_steps);
    int O = h[0].nxs || h[1].nxs ? D : 0;
    for (int x = 0; x < 2; x++) {
        int t = (h[0].k - 1) * D + ar2d_segs_tail(&h[x]);
        J = t > J ? t : J;
    }
    for (int j = 0; j < J + O && !rc; j++) {
        for (int a = 0; a < m->nchips && !rc; a++)
            if (ftm_mesh_alive(m, a))
                rc = ftm_sched_step(s, a, PHASE, j);
        for (int x = 0; x < 2 && !rc; x++) {
            o->nx = 0;
            if (j >= O)
                rc = half_step(s, &h[x], o, j - O);
            if (!rc && h[x].nxs)
                rc = ar2d_segs_step(s, &h[x], o, j - O);
        }
    }
    return rc;
}

/* 1 when a row of either half is a line (then pipelining pays). */
static int has_lines(const half *h)
{
    for (int a = 0; a < 2; a++)
        for (int r = 0; r < h[a].v.rows; r++)
            if ((!h[a].row[r].ring && h[a].row[r].n >= 2) || h[a].nxs)
                return 1;
    return 0;
}

/* Chunks: each one more costs a slot of D steps (about 1.1 hop latencies
 * each, TPU-v3 defaults: the small column phase is latency-bound), and
 * the lines' unpaired first reduce-scatter and last all-gather cost 1/k
 * of the row phases' bandwidth time T; k = sqrt(T / (1.1 hop D))
 * minimises the sum (measured on 32x32: k = 8 at BERT-large size, 2 at
 * ResNet-50 size, the best of 1..12). With segments (a row cut twice)
 * the pipeline has k + 3 slots, so 3/k: k = sqrt(3 T / (1.1 hop D))
 * (measured, two hosts in the same rows: 12-14 at BERT-large size, 3-4
 * at ResNet-50 size). At most 8, or 12 with segments (schedule memory:
 * 0.45 GB to model k = 12 on 32x32). */
static int pick_chunks(const half *h, size_t bytes, const ftm_cost_params *cost)
{
    if (!has_lines(h))
        return 1;
    ftm_cost_params p = coll_cost(cost);
    int D = h[0].slot_steps > h[1].slot_steps ? h[0].slot_steps : h[1].slot_steps, segs = h[0].nxs || h[1].nxs, kmax = segs ? 12 : 8;
    double T = (double)bytes / 2 / p.link_Bps, k = sqrt((segs ? 3 : 1) * T / (1.1 * p.hop_s * D));
    return k < 1 ? 1 : k > kmax ? kmax : (int)(k + 0.5);
}

/* The halves' shares of the buffer. Half h's row phase takes about
 * (its elements / U_h) x (its row length L_h) link time: the unusable
 * columns' share is adopted by the U_h usable ones. Equal on a healthy
 * mesh (U_h = L_h); otherwise in proportion to U_h / L_h, so that a dead
 * host, which takes 2 of 16 rows but 2 of 32 columns from a 16x32 torus,
 * loads both halves alike. */
static void split(half *h, size_t count)
{
    double wa = (double)h[0].nusable / h[0].v.cols, wb = (double)h[1].nusable / h[1].v.cols;
    size_t ha = (count + 1) / 2;
    if (wa != wb)
        ha = (size_t)((double)count * wa / (wa + wb) + 0.5);
    h[0].first = 0;
    h[0].count = ha;
    h[1].first = ha;
    h[1].count = count - ha;
}

/* One 2d-lines schedule, of variant v (allreduce_2d_int.h). */
int ar2d_build_lines_variant(ftm_sched *s, const ftm_sched_ctx *ctx, const ftm_mesh *m,
                             size_t count, ftm_red red, const ar2d_lines_variant *v,
                             ar2d_lines_found *found)
{
    if (m->rows < 2 || m->cols < 2)
        return FTM_ENOTSUP;
    if (ftm_mesh_healthy_count(m) == 0)
        return FTM_EALLDEAD;
    size_t ha = (count + 1) / 2, elem = ftm_sched_red_elem_size(red);
    half h[2];
    own o = { 0 };
    int rc = half_init(&h[0], m, 0, 0, ha, v->two_sided_rows);
    if (!rc)
        rc = half_init(&h[1], m, 1, ha, count - ha, v->two_sided_rows);
    else
        memset(&h[1], 0, sizeof h[1]);
    if (!rc && v->two_sided_rows && has_lines(h))
        rc = FTM_ENOTSUP;
    if (!rc && found && !has_lines(h))
        found->no_lines = 1;
    if (!rc) {
        split(h, count);
        if (match_passes(h, v->other_passes) && found)
            found->other_passes = 1;
        h[0].k = h[1].k = v->k > 0 ? v->k : pick_chunks(h, count * elem, ctx ? ctx->cost : NULL);
    }
    int L = m->rows > m->cols ? m->rows : m->cols;
    if (!rc)
        rc = own_init(&o, L, elem, red);
    o.split = v->split;
    o.uni = v->one_way_rows;
    if (!rc) {
        rc = ftm_sched_init(s, ctx, "2d-lines", m->nchips, count * elem);
        if (!rc) {
            rc = halves_routes(s, m, h);
            if (!rc)
                rc = emit(s, m, h, &o);
            if (rc)
                ftm_sched_free(s);
            else
                ftm_sched_trim(s);
        }
    }
    if (found && (o.used_uni || rc == FTM_ESTOPPED))
        found->one_way_rows = 1;
    free(o.f);
    free(o.ro);
    half_free(&h[0]);
    half_free(&h[1]);
    return rc;
}
