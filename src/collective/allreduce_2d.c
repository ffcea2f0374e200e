/* The 2-D allreduce (TPU-v3 style), with alternate rings around holes.
 *
 * Healthy torus, R x C. The buffer is cut in two halves; the first half
 * travels on eastbound/southbound rings, the second on westbound/northbound
 * rings, in the same steps, so both directions of every link carry data.
 * For each half:
 *
 *   1. row reduce-scatter: in every row, a ring allreduce's first half over
 *      the C chips; chip (r, c) ends with block c of the half summed over
 *      its row;
 *   2. column reduce-scatter of that block: chip (r, c) ends with piece r of
 *      block c summed over the whole mesh;
 *   3. column all-gather: the column shares block c;
 *   4. row all-gather: everybody has everything.
 *
 *      phase 1 (rows)          phase 2/3 (columns, on block c)
 *      o > o > o > o ~>        o   o   o   o
 *                              v   v   v   v
 *      o > o > o > o ~>        o   o   o   o        ~> wrap-around link
 *                              v   v   v   v
 *      o > o > o > o ~>        o   o   o   o
 *                              ~   ~   ~   ~
 *
 * Each chip moves (C-1)/C of the buffer in phase 1 but only (R-1)/(RC) in
 * phase 2: the row phase dominates.
 *
 * Holes. The rows are grouped into BANDS (plan2d.h). A healthy row of a
 * torus is a band by itself. A row touched by a fault (dead chip, dead
 * 2x2 host, dead link, one-way dead link) is merged with its neighbouring
 * rows into a wider band, whose two rings snake through the band's healthy
 * chips and turn around at the hole instead of crossing it; where crossing
 * is unavoidable, an edge becomes a detour of several hops through the
 * neighbouring rows (routed where the other rings leave links free):
 *
 *      dead chip X at (2,3), torus 4 x 6 (the plan ftm_plan2d_build makes):
 *
 *      col:    0   1   2   3   4   5
 *      row 0   o > o > o > o > o > o ~>    plain row rings
 *      row 1   o > o > o > o > o > o ~>
 *      row 2   o > o > o   X   o > o ~>    band of rows 2-3, first half:
 *                      v       ^           east from the seam (column 4)
 *      row 3   o < o < o   o < o < o <~    to column 2, down, west round
 *                          \_>_/           the wrap to (3,3); one 2-hop
 *                                          edge (3,3) > (3,4) ^ (2,4)
 *
 *      The second half's ring runs the mirror image over the links left
 *      free, so no directed link carries two ring edges (plan max_load 1).
 *
 * Shares: after phase 1 each chip of a band owns some elements, summed
 * over the band (allreduce_2d_share.c). In the column layout every band
 * owns the same elements in the same column: a column with a dead chip in
 * some band is left out, and the dead chips' shares are adopted by all
 * other columns (each owns 1/U of the half instead of 1/C). A band of two
 * rows owns a column's block with both chips of the column, half each.
 *
 * Partners: phase 2 cuts the half into SPANS at every band's block
 * boundaries; a span has one owner per band (one column of chips in
 * the column layout; in the drift layout, used when faults spoil many
 * columns, an owner may sit a column off), and its column ring links those
 * owners top to bottom (the second half: bottom to top) over live paths
 * (a dead chip in the column: a detour through the next column). Every span's
 * ring runs in the same column steps. So every element is summed in its
 * band, then across the bands, then copied back: every healthy chip ends
 * with the sum over all healthy chips, whatever the faults, as long as the
 * healthy chips are connected. When the faults merge everything into one
 * band, phase 2 is empty and the algorithm is a bidirectional 1-D ring
 * over that band: the documented fallback, with no special case.
 */
#include "ftmesh/collective.h"
#include "ftmesh/plan2d.h"
#include "ftmesh/error.h"
#include "allreduce_2d_int.h"
#include "core/util.h"

#include <stdlib.h>
#include <string.h>

static const char *const PH_RRS = "row-reduce-scatter";
static const char *const PH_CRS = "col-reduce-scatter";
static const char *const PH_CAG = "col-all-gather";
static const char *const PH_RAG = "row-all-gather";


/* Route cache: (src, dst) -> route id, open addressing. */
typedef struct rcache {
    uint64_t *key;     /* 0 = empty slot */
    int *val;
    size_t cap, used;  /* cap a power of two, kept above 2 * used */
} rcache;

static size_t rc_slot(const rcache *c, uint64_t k)
{
    size_t h = (size_t)((k * 0x9e3779b97f4a7c15ULL) >> 20) & (c->cap - 1);
    while (c->key[h] && c->key[h] != k)
        h = (h + 1) & (c->cap - 1);
    return h;
}

static int rc_grow(rcache *c)
{
    rcache n = { NULL, NULL, c->cap * 2, c->used };
    n.key = calloc(n.cap, sizeof(uint64_t));
    n.val = calloc(n.cap, sizeof(int));
    if (!n.key || !n.val) {
        free(n.key);
        free(n.val);
        return FTM_ENOMEM;
    }
    for (size_t i = 0; i < c->cap; i++)
        if (c->key[i]) {
            size_t h = rc_slot(&n, c->key[i]);
            n.key[h] = c->key[i];
            n.val[h] = c->val[i];
        }
    free(c->key);
    free(c->val);
    *c = n;
    return 0;
}

/* 1 when the route from a over dirs[0..h) visits no chip twice. */
static int simple_path(const ftm_mesh *m, int a, const unsigned char *dirs, int h)
{
    int *at = malloc(sizeof(int) * (size_t)(h + 1)), ok = at != NULL;
    if (!ok)
        return 0;
    at[0] = a;
    for (int i = 0; i < h && ok; i++) {
        at[i + 1] = ftm_mesh_neighbor(m, at[i], dirs[i]);
        for (int j = 0; j <= i; j++)
            ok &= at[j] != at[i + 1];
    }
    free(at);
    return ok;
}

/* Column ring edge a -> b of a span whose home column is home. The
 * vertical part of the move stays in the home column (whose links carry
 * that column's traffic anyway) and the sideways part runs in the row of
 * the chip that is off the home column (row links are idle in the column
 * phase): via (row(b), home) when a sits in the home column, else via
 * (row(a), home). Falls back to a shortest path when the waypoint is dead
 * or off the way. Writes the hops to dirs, returns the count or an error. */
static int column_path(const ftm_mesh *m, int a, int b, int home, unsigned char *dirs)
{
    int w = ftm_mesh_col(m, a) == home ? ftm_mesh_chip(m, ftm_mesh_row(m, b), home)
                                        : ftm_mesh_chip(m, ftm_mesh_row(m, a), home);
    if (ftm_mesh_alive(m, w) && w != a && w != b) {
        int h1 = ftm_router_path(m, a, w, NULL, 1, dirs, m->nchips);
        int h2 = h1 < 0 ? h1 : ftm_router_path(m, w, b, NULL, 1, dirs + h1, m->nchips);
        int hs = ftm_router_path(m, a, b, NULL, 1, dirs + 2 * m->nchips, m->nchips);
        /* Keep the waypoint only if it costs at most 2 extra hops and the
         * route visits no chip twice. */
        if (h1 >= 0 && h2 >= 0 && hs >= 0 && h1 + h2 <= hs + 2 && simple_path(m, a, dirs, h1 + h2))
            return h1 + h2;
    }
    return ftm_router_path(m, a, b, NULL, 1, dirs, m->nchips);
}

static int rc_get(rcache *c, ftm_sched *s, const ftm_mesh *m, int a, int b, int home,
                  unsigned char *tmp)
{
    uint64_t k = ((uint64_t)a * (uint64_t)m->nchips + (uint64_t)b) * (uint64_t)m->cols +
                 (uint64_t)home + 1;
    size_t h = rc_slot(c, k);
    if (c->key[h])
        return c->val[h];
    if (2 * (c->used + 1) > c->cap) {
        int rc = rc_grow(c);
        if (rc)
            return rc;
        h = rc_slot(c, k);
    }
    int hops = column_path(m, a, b, home, tmp);
    if (hops < 0)
        return hops;
    int id = ftm_sched_route(s, a, b, tmp, hops);
    if (id < 0)
        return id;
    c->key[h] = k;
    c->val[h] = id;
    c->used++;
    return id;
}

typedef struct span {
    size_t first, len; /* elements */
    int *chips;        /* [K] owners in ring order */
    int *route;        /* [K] route ids, chips[i] -> chips[i+1] */
} span;

typedef struct build {
    ftm_sched *s;
    const ftm_mesh *m;
    const ftm_plan2d *p;
    size_t elem;
    ftm_red red;
    size_t hfirst[2], hcount[2]; /* the two halves, elements */
    ar2d_shares *sh[2];      /* [nbands] shares of each half */
    unsigned char *usable;       /* [cols] column layout, or NULL: drift */
    int *bidx;                   /* [nchips] index of the chip in its band's owners */
    int *broute[2];              /* band ring routes, all bands concatenated */
    int *boff;                   /* [nbands] offset of band b in broute */
    span *spans[2];
    int nspans[2];
    ar2d_colring *cols[2];   /* column layout: [ncols[h]] full-column rings */
    int ncols[2];
    size_t *tf, *tc;             /* scratch ranges */
    int *to;                     /* scratch range offsets */
    rcache cache;
    unsigned char *tmp;
} build;

/* Cuts half h wherever some band changes owner; each span gets its
 * owners (one per band) and a column ring through them. */
static int make_spans(build *B, int h)
{
    const ftm_plan2d *p = B->p;
    int K = p->nbands;
    size_t nb = 0;
    for (int b = 0; b < K; b++)
        nb += (size_t)B->sh[h][b].npieces;
    size_t *cut = malloc(sizeof(size_t) * (nb + 1));
    if (!cut)
        return FTM_ENOMEM;
    size_t nc = 0;
    for (int b = 0; b < K; b++)
        for (int i = 0; i < B->sh[h][b].npieces; i++)
            cut[nc++] = B->sh[h][b].start[i];
    qsort(cut, nc, sizeof *cut, core_cmp_size);
    size_t u = 0;
    for (size_t i = 0; i < nc; i++)
        if (u == 0 || cut[i] != cut[u - 1])
            cut[u++] = cut[i];
    cut[u] = B->hfirst[h] + B->hcount[h];
    B->spans[h] = calloc(u ? u : 1, sizeof(span));
    int rc = B->spans[h] ? 0 : FTM_ENOMEM;
    for (size_t i = 0; i < u && !rc; i++) {
        span *g = &B->spans[h][i];
        B->nspans[h]++;
        g->first = cut[i];
        g->len = cut[i + 1] - cut[i];
        g->chips = malloc(sizeof(int) * (size_t)K);
        g->route = malloc(sizeof(int) * (size_t)K);
        if (!g->chips || !g->route) {
            rc = FTM_ENOMEM;
            break;
        }
        for (int q = 0; q < K; q++) {
            int b = h == 0 ? q : K - 1 - q; /* second half: bottom to top */
            g->chips[q] = p->bands[b].owners[ar2d_shares_find(&B->sh[h][b], cut[i])];
        }
        /* Home column: the owners' column (column layout) or the column
         * block the span falls in (drift layout). */
        int home = B->usable ? ftm_mesh_col(B->m, g->chips[0])
                             : ftm_sched_block_of(B->hcount[h], B->m->cols, cut[i] - B->hfirst[h]);
        for (int q = 0; q < K && !rc; q++) {
            int id = rc_get(&B->cache, B->s, B->m, g->chips[q], g->chips[(q + 1) % K], home, B->tmp);
            if (id < 0)
                rc = id;
            else
                g->route[q] = id;
        }
    }
    free(cut);
    return rc;
}

/* Column layout: one ring per usable column through all its chips
 * (allreduce_2d_col.c); the second half runs bottom to top. */
static int make_colrings(build *B, int h)
{
    const ftm_mesh *m = B->m;
    B->cols[h] = calloc((size_t)m->cols, sizeof(ar2d_colring));
    if (!B->cols[h])
        return FTM_ENOMEM;
    int rc = 0;
    for (int c = 0; c < m->cols && !rc; c++) {
        if (!B->usable[c])
            continue;
        ar2d_colring *cr = &B->cols[h][B->ncols[h]];
        rc = ar2d_colring_build(cr, m, B->p, B->sh[h], B->bidx, c, h == 1);
        if (rc)
            break;
        B->ncols[h]++;
        for (int q = 0; q < cr->n && !rc; q++) {
            int id = rc_get(&B->cache, B->s, m, cr->chips[q], cr->chips[(q + 1) % cr->n], c, B->tmp);
            if (id < 0)
                rc = id;
            else
                cr->route[q] = id;
        }
    }
    return rc;
}

static int band_routes(build *B)
{
    const ftm_plan2d *p = B->p;
    for (int r = 0; r < 2; r++)
        for (int b = 0; b < p->nbands; b++) {
            const ftm_ring *g = r == 0 ? &p->bands[b].fwd : &p->bands[b].rev;
            for (int i = 0; i < g->n; i++) {
                int id = ftm_sched_route(B->s, g->chips[i], g->chips[(i + 1) % g->n],
                                         g->dirs + g->path_off[i], g->path_off[i + 1] - g->path_off[i]);
                if (id < 0)
                    return id;
                B->broute[r][B->boff[b] + i] = id;
            }
        }
    return 0;
}

/* Step k of band b's ring allreduce, both halves. */
static int band_step(build *B, int b, int k)
{
    const ftm_plan2d_band *bd = &B->p->bands[b];
    int n = bd->n, rc = 0;
    const char *ph = k < n - 1 ? PH_RRS : PH_RAG;
    for (int i = 0; i < n && !rc; i++)
        rc = ftm_sched_step(B->s, bd->fwd.chips[i], ph, k < n - 1 ? k : k - (n - 1));
    for (int h = 0; h < 2 && !rc; h++) {
        const ftm_ring *g = h == 0 ? &bd->fwd : &bd->rev;
        const ar2d_shares *sh = &B->sh[h][b];
        int t = 0;
        for (int i = 0; i < n; i++) { /* ranges by ring position */
            int o = B->bidx[g->chips[i]];
            B->to[i] = t;
            for (int j = sh->ro[o]; j < sh->ro[o + 1]; j++, t++) {
                B->tf[t] = sh->rf[j];
                B->tc[t] = sh->rn[j];
            }
        }
        B->to[n] = t;
        ftm_ring_owned r = { n, B->broute[h] + B->boff[b], B->to, B->tf, B->tc, NULL, NULL };
        rc = ftm_allreduce_ring_step(B->s, &r, B->elem, B->red, k);
    }
    return rc;
}

/* Step k of every span's column ring, both halves. */
static int column_step(build *B, int k, int K)
{
    int rc = 0;
    const char *ph = k < K - 1 ? PH_CRS : PH_CAG;
    for (int c = 0; c < B->m->nchips && !rc; c++)
        if (ftm_mesh_alive(B->m, c))
            rc = ftm_sched_step(B->s, c, ph, k < K - 1 ? k : k - (K - 1));
    for (int h = 0; h < 2 && !rc; h++)
        for (int i = 0; i < B->ncols[h] && !rc; i++)
            if (k < ftm_ring_nsteps(B->cols[h][i].n)) {
                const ar2d_colring *cr = &B->cols[h][i];
                ftm_ring_owned r = { cr->n, cr->route, cr->ro, cr->rf, cr->rn, cr->vf, cr->vn };
                rc = ftm_allreduce_ring_step(B->s, &r, B->elem, B->red, k);
            }
    for (int h = 0; h < 2 && !rc; h++)
        for (int i = 0; i < B->nspans[h] && !rc; i++) {
            const span *g = &B->spans[h][i];
            for (int q = 0; q < K; q++) {
                size_t f, c;
                ftm_sched_block(g->len, K, q, &f, &c);
                B->tf[q] = g->first + f;
                B->tc[q] = c;
                B->to[q] = q;
            }
            B->to[K] = K;
            ftm_ring_owned r = { K, g->route, B->to, B->tf, B->tc, NULL, NULL };
            rc = ftm_allreduce_ring_step(B->s, &r, B->elem, B->red, k);
        }
    return rc;
}

static void build_free(build *B)
{
    for (int h = 0; h < 2; h++) {
        for (int i = 0; i < B->nspans[h]; i++) {
            free(B->spans[h][i].chips);
            free(B->spans[h][i].route);
        }
        free(B->spans[h]);
        for (int i = 0; i < B->ncols[h]; i++)
            ar2d_colring_free(&B->cols[h][i]);
        free(B->cols[h]);
        free(B->broute[h]);
        for (int b = 0; B->sh[h] && b < B->p->nbands; b++)
            ar2d_shares_free(&B->sh[h][b]);
        free(B->sh[h]);
    }
    free(B->bidx);
    free(B->boff);
    free(B->usable);
    free(B->tf);
    free(B->tc);
    free(B->to);
    free(B->cache.key);
    free(B->cache.val);
    free(B->tmp);
}

/* Layout: band offsets and indexes, the column layout (usable columns or
 * drift), every band's shares and the scratch sized by them. */
static int layout(build *B)
{
    const ftm_plan2d *p = B->p;
    const ftm_mesh *m = B->m;
    int K = p->nbands, tot = 0, maxn = K;
    B->boff = malloc(sizeof(int) * (size_t)K);
    B->bidx = malloc(sizeof(int) * (size_t)m->nchips);
    if (!B->boff || !B->bidx)
        return FTM_ENOMEM;
    for (int b = 0; b < K; b++) {
        B->boff[b] = tot;
        tot += p->bands[b].n;
        if (p->bands[b].n > maxn)
            maxn = p->bands[b].n;
        for (int i = 0; i < p->bands[b].n; i++)
            B->bidx[p->bands[b].owners[i]] = i;
    }
    B->broute[0] = malloc(sizeof(int) * (size_t)tot);
    B->broute[1] = malloc(sizeof(int) * (size_t)tot);
    int rc = 0;
    size_t maxp = (size_t)maxn;
    B->usable = calloc((size_t)m->cols, 1);
    if (!B->usable)
        return FTM_ENOMEM;
    if (ftm_plan2d_columns(m, p, B->usable) <= 0) { /* drift layout */
        free(B->usable);
        B->usable = NULL;
    }
    for (int h = 0; h < 2 && !rc; h++) {
        B->sh[h] = calloc((size_t)K, sizeof(ar2d_shares));
        if (!B->sh[h])
            return FTM_ENOMEM;
        for (int b = 0; b < K && !rc; b++) {
            rc = ar2d_shares_build(m, &p->bands[b], B->hfirst[h], B->hcount[h], B->usable,
                                   &B->sh[h][b]);
            if (!rc && (size_t)B->sh[h][b].npieces > maxp)
                maxp = (size_t)B->sh[h][b].npieces;
        }
    }
    if (rc)
        return rc;
    B->tf = malloc(sizeof(size_t) * maxp);
    B->tc = malloc(sizeof(size_t) * maxp);
    B->to = malloc(sizeof(int) * (size_t)(maxn + 1));
    B->tmp = malloc((size_t)m->nchips * 3);
    B->cache.cap = 1024;
    B->cache.key = calloc(B->cache.cap, sizeof(uint64_t));
    B->cache.val = calloc(B->cache.cap, sizeof(int));
    if (!B->broute[0] || !B->broute[1] || !B->tf || !B->tc || !B->to || !B->tmp ||
        !B->cache.key || !B->cache.val)
        return FTM_ENOMEM;
    return 0;
}

/* Emits the four phases into B->s (routes and column rings are ready). */
static int emit_phases(build *B)
{
    const ftm_plan2d *p = B->p;
    const ftm_mesh *m = B->m;
    int K = p->nbands, rc = 0;
    /* Column steps: K bands (spans) or the column rings' length. */
    int csteps = K > 1 ? ftm_ring_nsteps(K) : 0;
    for (int h = 0; h < 2; h++)
        for (int i = 0; i < B->ncols[h]; i++)
            if (ftm_ring_nsteps(B->cols[h][i].n) > csteps)
                csteps = ftm_ring_nsteps(B->cols[h][i].n);
    int ccycle = B->usable ? csteps / 2 + 1 : K; /* column phase: RS steps + 1 */
    /* Phase 1: band reduce-scatter. */
    for (int b = 0; b < K && !rc; b++)
        for (int k = 0; k < p->bands[b].n - 1 && !rc; k++)
            rc = band_step(B, b, k);
    /* Pad every chip to the longest band's phase 1 with empty steps (free
     * in the model and the runtime), so that every transfer of the schedule
     * leaves and arrives at the same step index: two such schedules can be
     * merged step by step without a wait cycle (allreduce_2d_conc.c). */
    int p1 = 0;
    for (int c = 0; c < m->nchips; c++)
        if (B->s->prog[c].nsteps > p1)
            p1 = B->s->prog[c].nsteps;
    for (int c = 0; c < m->nchips && !rc; c++)
        while (ftm_mesh_alive(m, c) && B->s->prog[c].nsteps < p1 && !rc)
            rc = ftm_sched_step(B->s, c, PH_RRS, B->s->prog[c].nsteps);
    /* Phases 2 and 3: column reduce-scatter and all-gather. */
    for (int k = 0; K > 1 && k < csteps && !rc; k++)
        rc = column_step(B, k, ccycle);
    /* Phase 4: band all-gather. */
    for (int b = 0; b < K && !rc; b++)
        for (int k = p->bands[b].n - 1; k < ftm_ring_nsteps(p->bands[b].n) && !rc; k++)
            rc = band_step(B, b, k);
    return rc;
}

static int build_all(build *B)
{
    int rc = layout(B);
    if (!rc)
        rc = band_routes(B);
    for (int h = 0; h < 2 && !rc && B->p->nbands > 1; h++)
        rc = B->usable ? make_colrings(B, h) : make_spans(B, h);
    if (!rc)
        rc = emit_phases(B);
    return rc;
}

int ar2d_build_range(ftm_sched *s, const ftm_sched_ctx *ctx, const ftm_mesh *m, size_t first,
                     size_t count, size_t total, ftm_red red, const char *algo)
{
    ftm_plan2d p;
    int rc = ftm_plan2d_build(m, &p);
    if (rc)
        return rc;
    size_t elem = ftm_sched_red_elem_size(red);
    rc = ftm_sched_init(s, ctx, algo, m->nchips, total * elem);
    if (rc) {
        ftm_plan2d_free(&p);
        return rc;
    }
    build B;
    memset(&B, 0, sizeof B);
    B.s = s;
    B.m = m;
    B.p = &p;
    B.elem = elem;
    B.red = red;
    B.hfirst[0] = first;
    B.hcount[0] = (count + 1) / 2;
    B.hfirst[1] = first + B.hcount[0];
    B.hcount[1] = count - B.hcount[0];
    rc = build_all(&B);
    build_free(&B);
    ftm_plan2d_free(&p);
    if (rc)
        ftm_sched_free(s);
    else
        ftm_sched_trim(s);
    return rc;
}

/* The row-first scheme alone: 2d's own schedule (the registry's entry
 * point, which may keep the ring's, is allreduce_2d_pick.c's). */
int ar2d_build_own_2d(ftm_sched *s, const ftm_sched_ctx *ctx, const ftm_mesh *m, size_t count,
                      ftm_red red)
{
    return ar2d_build_range(s, ctx, m, 0, count, count, red, "2d");
}
