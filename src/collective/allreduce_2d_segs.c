/* 2d-lines on a row cut more than once (two holes in one row, open
 * meshes): each run of healthy chips between the cuts (a SEGMENT) is a
 * line of its own, and the segments' sums meet through a neighbouring
 * whole row, the HELPER, by folding.
 *
 * A segment's chips hold data for the whole chunk but reach only its own
 * columns. Its line reduce-scatter leaves each usable column's block (the
 * OWN blocks) at that column, where the column phase takes it as usual,
 * and spreads the rest (the FOREIGN share: blocks of usable columns
 * outside the segment) evenly over all its chips. Each chip then adds its
 * piece of the foreign share into the chip next to it in the helper row
 * (one hop up or down, the fold), before the helper row's reduce-scatter
 * of that chunk: the helper row carries it to the owners in its row
 * phase at no extra cost on the horizontal links (a row's reduce-scatter
 * moves the same bytes whatever it sums), and the column phase adds it to
 * the other rows'. After the helper row's all-gather, each helper chip
 * copies the result of that piece back (the unfold), and the segment's
 * line all-gather spreads own blocks and foreign pieces.
 *
 * Per vertical link the fold carries about a chunk / (segment chips x
 * 2) each way (half the row's blocks are foreign to a half-row segment),
 * a few percent of the link's row-phase load. The price is time: a
 * segment reduce-scatters chunk c one slot (D steps) before the rows do
 * (c-1) and gathers it two slots after (c+2), so the pipeline takes k + 3
 * slots instead of k + 1. Its reduce-scatter of chunk c and all-gather of
 * chunk c-3 share a slot, one step apart, as the rows' lines pair theirs:
 *
 *   slot         c-1          c             c+1           c+2
 *   rows                      RS(c) cols    AG(c)
 *   segment      RS(c) fold                      unfold   AG(c)
 *
 * Folds happen in the column window (after the rows' reduce-scatter),
 * where the vertical links carry only the small column phase; a helper
 * that takes folds from both sides takes them in two steps (a sum into
 * one range twice in one step would race).
 */
#include "ftmesh/error.h"
#include "allreduce_2d_lines.h"

#include <stdlib.h>
#include <string.h>

int ar2d_segs_add(ar2d_lhalf *h, int row, const int *chips, int n)
{
    ar2d_lseg *x = realloc(h->xs, sizeof *x * (size_t)(h->nxs + 1));
    if (!x)
        return FTM_ENOMEM;
    h->xs = x;
    ar2d_lseg *g = &x[h->nxs];
    memset(g, 0, sizeof *g);
    g->chips = malloc(sizeof(int) * 5 * (size_t)n);
    if (!g->chips)
        return FTM_ENOMEM;
    h->nxs++;
    g->fwd = g->chips + n;
    g->rev = g->chips + 2 * n;
    g->up = g->chips + 3 * n;
    g->down = g->chips + 4 * n;
    memcpy(g->chips, chips, sizeof(int) * (size_t)n);
    g->n = n;
    g->row = row;
    g->helper = -1;
    h->P1s = n > h->P1s ? n : h->P1s;
    return 0;
}

void ar2d_segs_free(ar2d_lhalf *h)
{
    for (int x = 0; x < h->nxs; x++)
        free(h->xs[x].chips);
    free(h->xs);
    h->xs = NULL;
    h->nxs = 0;
}

static int v_row(const ar2d_lview *v, int a)
{
    return v->tr ? ftm_mesh_col(v->m, a) : ftm_mesh_row(v->m, a);
}

static int v_col(const ar2d_lview *v, int a)
{
    return v->tr ? ftm_mesh_row(v->m, a) : ftm_mesh_col(v->m, a);
}

/* The row next to g in view-direction d, if every chip of g has a live
 * neighbour there over a link live both ways and that row runs whole (a
 * ring or one line); else -1. */
static int helper_ok(const ar2d_lhalf *h, const ar2d_lseg *g, int d)
{
    const ar2d_lview *v = &h->v;
    int hr = -1;
    for (int i = 0; i < g->n; i++) {
        int a = g->chips[i], b = ftm_mesh_neighbor(v->m, a, ar2d_lv_dir(v, d));
        if (b < 0 || !ftm_mesh_alive(v->m, b) || !ar2d_lv_link(v, g->row, v_col(v, a), d))
            return -1;
        hr = v_row(v, b);
    }
    return hr >= 0 && h->row[hr].n > 0 ? hr : -1;
}

int ar2d_segs_plan(ar2d_lhalf *h)
{
    for (int x = 0; x < h->nxs; x++) {
        ar2d_lseg *g = &h->xs[x];
        g->fold = 1; /* helper above: it receives from the south, step + 1 */
        g->helper = helper_ok(h, g, FTM_DIR_N);
        if (g->helper < 0) {
            g->fold = 0;
            g->helper = helper_ok(h, g, FTM_DIR_S);
        }
        if (g->helper < 0)
            return FTM_ENOTSUP;
    }
    return 0;
}

int ar2d_segs_routes(ftm_sched *s, int *cache, ar2d_lhalf *h)
{
    const ar2d_lview *v = &h->v;
    for (int x = 0; x < h->nxs; x++) {
        ar2d_lseg *g = &h->xs[x];
        int d = g->fold ? FTM_DIR_N : FTM_DIR_S;
        for (int i = 0; i < g->n; i++) {
            int a = g->chips[i], b = ftm_mesh_neighbor(v->m, a, ar2d_lv_dir(v, d));
            g->up[i] = ar2d_lhop(s, cache, v->m, a, ar2d_lv_dir(v, d));
            g->down[i] = ar2d_lhop(s, cache, v->m, b, ar2d_lv_dir(v, (d + 2) % 4));
            if (g->up[i] < 0)
                return g->up[i];
            if (g->down[i] < 0)
                return g->down[i];
        }
    }
    return 0;
}

/* The foreign share of g in chunk [cf, cf + cn): the blocks of the usable
 * columns outside g, a cyclic run of blocks from block fs (g's own blocks
 * are a cyclic run too: a segment is a run of columns). Returns its length
 * and its start *e0 (relative to cf). */
static size_t foreign(const ar2d_lhalf *h, const ar2d_lseg *g, size_t cn, size_t *e0)
{
    int nown = 0, last = -1, U = h->U;
    for (int i = 0; i < g->n; i++) {
        int u = h->uidx[v_col(&h->v, g->chips[i])];
        if (u >= 0) {
            nown++;
            last = u;
        }
    }
    size_t bf, bn, fl = 0;
    int fs = nown ? (last + 1) % U : 0;
    ftm_sched_block(cn, U, fs, e0, &bn);
    for (int u = 0; u < U - nown; u++) {
        ftm_sched_block(cn, U, (fs + u) % U, &bf, &bn);
        fl += bn;
    }
    return fl;
}

/* Position ranges of g for part q of nq of chunk c: its own block (usable
 * columns) in f/len, its piece of the foreign share (one or two pieces:
 * the share may wrap round the chunk's end) in xf/xn. */
static void seg_ranges(const ar2d_lhalf *h, const ar2d_lseg *g, ar2d_lown *o, int c, int q, int nq)
{
    size_t cf, cn, e0 = 0;
    ar2d_lchunk(h, c, &cf, &cn);
    size_t fl = foreign(h, g, cn, &e0);
    for (int i = 0; i < g->n; i++) {
        int u = h->uidx[v_col(&h->v, g->chips[i])];
        o->f[i] = o->len[i] = 0;
        if (u >= 0) {
            ftm_sched_block(cn, h->U, u, &o->f[i], &o->len[i]);
            o->f[i] += cf;
            ar2d_lpart(&o->f[i], &o->len[i], q, nq);
        }
        size_t off, len;
        ftm_sched_block(fl, g->n, i, &off, &len);
        ar2d_lpart(&off, &len, q, nq);
        size_t st = (e0 + off) % (cn ? cn : 1), a = len < cn - st ? len : cn - st;
        o->xf[2 * i] = cf + st;
        o->xn[2 * i] = a;
        o->xf[2 * i + 1] = cf;
        o->xn[2 * i + 1] = len - a;
    }
    o->nx = 1;
}

/* The foreign pieces of every position: folded into the helper (reduce)
 * or copied back (unfold). */
static int fold(ftm_sched *s, const ar2d_lseg *g, const ar2d_lown *o, int back)
{
    int rc = 0;
    for (int i = 0; i < g->n && !rc; i++)
        for (int q = 0; q < 2 && !rc; q++) {
            size_t f = o->xf[2 * i + q] * o->elem, n = o->xn[2 * i + q] * o->elem;
            rc = ftm_sched_xfer(s, back ? g->down[i] : g->up[i], f, f, n,
                                back ? FTM_RED_COPY : o->red);
        }
    return rc;
}

static int fdiv(int a, int b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

/* Passes of g's line per chunk: a segment shorter than the rows runs its
 * chunk as several passes of one part each, so that its steps carry what
 * a row's do (a step much longer than its neighbours' holds them up). */
static int passes(const ar2d_lhalf *h, const ar2d_lseg *g)
{
    return g->n > 1 && h->P1 / g->n > 1 ? h->P1 / g->n : 1;
}

/* Line step at window step l of g (reduce-scatter or all-gather of chunk c). */
static int seg_line(ftm_sched *s, const ar2d_lhalf *h, const ar2d_lseg *g, ar2d_lown *o, int c,
                    int l, int ag)
{
    int np = passes(h, g);
    if (c < 0 || c >= h->k || l >= np * g->n)
        return 0;
    seg_ranges(h, g, o, c, l / g->n, np);
    return ag ? ar2d_line_ag(s, g, o, l % g->n) : ar2d_line_rs(s, g, o, l % g->n);
}

/* g's transfers at step j (the rows' clock): reduce-scatter of chunk c
 * from (c-1)D, fold at (c-1)D + P1 (+1), unfold at (c+1)D + P1 (+1),
 * all-gather from (c+2)D - 1. */
static int seg_step(ftm_sched *s, const ar2d_lhalf *h, const ar2d_lseg *g, ar2d_lown *o, int j)
{
    int D = h->D, k = h->k, c = fdiv(j, D) + 1;
    int rc = seg_line(s, h, g, o, c, j - (c - 1) * D, 0);
    c = fdiv(j + 1, D) - 2;
    if (!rc)
        rc = seg_line(s, h, g, o, c, j + 1 - (c + 2) * D, 1);
    int jf = j - h->P1 - g->fold;
    if (!rc && jf % D == 0 && (c = jf / D + 1) >= 0 && c < k) {
        seg_ranges(h, g, o, c, 0, 1);
        rc = fold(s, g, o, 0);
    }
    if (!rc && jf % D == 0 && (c = jf / D - 1) >= 0 && c < k) {
        seg_ranges(h, g, o, c, 0, 1);
        rc = fold(s, g, o, 1);
    }
    o->nx = 0;
    return rc;
}

int ar2d_segs_step(ftm_sched *s, const ar2d_lhalf *h, ar2d_lown *o, int j)
{
    int rc = 0;
    for (int x = 0; x < h->nxs && !rc; x++)
        rc = seg_step(s, h, &h->xs[x], o, j);
    return rc;
}

int ar2d_segs_tail(const ar2d_lhalf *h)
{
    return h->nxs ? 2 * h->D - 1 + h->P1 : 0;
}
