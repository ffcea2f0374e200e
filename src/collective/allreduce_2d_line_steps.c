/* Building blocks of 2d-lines (allreduce_2d_lines.c) and its folded
 * segments (allreduce_2d_segs.c): the view of the mesh (rows, or columns
 * as rows), one-hop routes, and the step builders of a line (reduce-
 * scatter and all-gather from both ends), of a bidirectional ring and of
 * a two-sided ring, each appending one step's transfers to the chips'
 * open steps (as ftm_allreduce_ring_step does for ring.c). Both files
 * call these; these call neither. */
#include "ftmesh/collective.h"
#include "ftmesh/error.h"
#include "allreduce_2d_lines.h"
#include "sched/sched_lib.h"
#include "core/util.h"
#include "pieces.h"

typedef ar2d_lview view;
typedef ar2d_lseg seg;
typedef ar2d_lhalf half;
typedef ar2d_lown own;

int ar2d_lv_chip(const view *v, int r, int c)
{
    return v->tr ? ftm_mesh_chip(v->m, c, r) : ftm_mesh_chip(v->m, r, c);
}

/* The view's direction d in m (transposed: N <-> W, E <-> S). */
int ar2d_lv_dir(const view *v, int d) { return v->tr ? 3 - d : d; }

int ar2d_lhop(ftm_sched *s, int *cache, const ftm_mesh *m, int a, int d)
{
    return sched_hop_route(s, cache, a, d, ftm_mesh_neighbor(m, a, d));
}

int ar2d_lv_link(const view *v, int r, int c, int d)
{
    return ftm_mesh_link_both(v->m, ar2d_lv_chip(v, r, c), ar2d_lv_dir(v, d), NULL);
}

/* Reduce-scatter steps of a two-sided ring of n chips (ring2_rs, below). */
int ar2d_ring2_steps(int n)
{
    int a = n / 2, b = n - 1 - a, d = 1 + b - a;
    return a > d + b ? a : d + b;
}

/* A reducing transfer goes in pieces above o->split elements (pieces.c:
 * each piece's reduction overlaps the next one's transfer). */
static int xfer(ftm_sched *s, int route, size_t f, size_t len, const own *o, ftm_red red)
{
    return coll_xfer(s, route, f, len, o->elem, red, o->split);
}

/* Everything position j owns (its range and, for segments, its pieces of
 * the foreign share) over route. */
static int xfer_owned(ftm_sched *s, int route, const own *o, int j, ftm_red red)
{
    int rc = xfer(s, route, o->f[j], o->len[j], o, red);
    for (int q = 0; o->nx && q < 2 && !rc; q++)
        rc = xfer(s, route, o->xf[2 * j + q], o->xn[2 * j + q], o, red);
    return rc;
}

/* Line reduce-scatter step t (0 .. n-1); see the picture at the top of
 * allreduce_2d_lines.c. */
int ar2d_line_rs(ftm_sched *s, const seg *g, const own *o, int t)
{
    int n = g->n, rc = 0;
    for (int i = 0; i <= t - 1 && i <= n - 2 && !rc; i++)
        rc = xfer_owned(s, g->fwd[i], o, n - t + i, o->red);
    for (int i = n - 1 - t < 1 ? 1 : n - 1 - t; t <= n - 2 && i <= n - 1 && !rc; i++)
        rc = xfer_owned(s, g->rev[i], o, t + i - n + 1, o->red);
    return rc;
}

/* Line all-gather step t (0 .. n-1): line_rs's step n-1-t reversed. */
int ar2d_line_ag(ftm_sched *s, const seg *g, const own *o, int t)
{
    int n = g->n, rc = 0;
    for (int i = 0; i <= n - 2 - t && !rc; i++)
        rc = xfer_owned(s, g->rev[i + 1], o, t + 1 + i, FTM_RED_COPY);
    for (int i = t; t >= 1 && i <= n - 1 && !rc; i++)
        rc = xfer_owned(s, g->fwd[i - 1], o, i - t, FTM_RED_COPY);
    return rc;
}

/* Bidirectional ring step kk (0 .. 2n-3) of g: position i's range o->f/len
 * split in two, the lower part on the forward ring, the upper on the
 * reverse ring (whose position i is g's position n-1-i). uni: one-way,
 * the reduce-scatter all on the forward ring, the all-gather all on the
 * reverse one (after either reduce-scatter each position holds its
 * range's sum, so any mix is exact). */
int ar2d_ring_bidir(ftm_sched *s, const seg *g, own *o, int kk, int uni)
{
    int n = g->n, rc = 0;
    for (int dir = 0; dir < 2 && !rc; dir++) {
        if (uni && dir != (kk >= n - 1))
            continue;
        o->ro[0] = 0;
        for (int i = 0; i < n; i++) {
            int p = dir ? n - 1 - i : i;
            size_t lo = uni ? (dir ? 0 : o->len[p]) : o->len[p] / 2;
            o->rf[i] = dir ? o->f[p] + lo : o->f[p];
            o->rn[i] = dir ? o->len[p] - lo : lo;
            o->ro[i + 1] = o->ro[i] + (o->rn[i] > 0);
            if (o->rn[i] == 0) /* compact: skip empty ranges */
                o->rf[i] = 0;
            o->route[i] = dir ? g->rev[p] : g->fwd[p];
        }
        /* rf/rn must be indexed by ro: gather the non-empty ones. */
        int w = 0;
        for (int i = 0; i < n; i++)
            if (o->rn[i]) {
                o->rf[w] = o->rf[i];
                o->rn[w++] = o->rn[i];
            }
        ftm_ring_owned r = { n, o->route, o->ro, o->rf, o->rn, NULL, NULL };
        rc = ftm_allreduce_ring_step(s, &r, o->elem, o->red, kk);
    }
    return rc;
}

/* Two-sided ring (the column phase): owner o's range is reduced from both
 * sides at once, from the a = n/2 chips before it (forward flow, steps
 * 0 .. a-1) and the b = n-1-a after it (reverse flow, steps d .. d+b-1,
 * d = 1+b-a, so that the two sums reach o in different steps); its
 * all-gather is the time reverse, copies. Each directed link carries n-1
 * ranges in all, as a bidirectional ring's two half ranges, but in
 * 2 ar2d_ring2_steps(n) steps instead of 2n-2: half the hop latencies, where
 * the small per-chunk column blocks are latency-bound. Step t of its
 * reduce-scatter, or (ag) the copies that reverse it. */
static int ring2_rs(ftm_sched *s, const seg *g, const own *o, int t, int ag)
{
    int n = g->n, a = n / 2, b = n - 1 - a, d = 1 + b - a, rc = 0;
    ftm_red red = ag ? FTM_RED_COPY : o->red;
    for (int p = 0; p < n && !rc; p++) {
        if (t < a) { /* p -> p+1 (ag: p+1 -> p) carries owner p+a-t */
            int x = core_mod(p + 1, n);
            rc = xfer_owned(s, ag ? g->rev[x] : g->fwd[p], o, core_mod(p + a - t, n), red);
        }
        if (!rc && t >= d && t < d + b) { /* p -> p-1 carries owner p-b+t-d */
            int x = core_mod(p - 1, n);
            rc = xfer_owned(s, ag ? g->fwd[x] : g->rev[p], o, core_mod(p - b + t - d, n), red);
        }
    }
    return rc;
}

/* Step q (0 .. 2 ar2d_ring2_steps(n) - 1) of g's two-sided ring allreduce. */
int ar2d_ring2_step(ftm_sched *s, const seg *g, const own *o, int q)
{
    int T = ar2d_ring2_steps(g->n);
    return q < T ? ring2_rs(s, g, o, q, 0) : ring2_rs(s, g, o, 2 * T - 1 - q, 1);
}

/* Chunk c's range of half h. */
void ar2d_lchunk(const half *h, int c, size_t *cf, size_t *cn)
{
    ftm_sched_block(h->count, h->k, c, cf, cn);
    *cf += h->first;
}

void ar2d_lpart(size_t *f, size_t *n, int q, int nq)
{
    size_t pf, pn;
    ftm_sched_block(*n, nq, q, &pf, &pn);
    *f += pf;
    *n = pn;
}
