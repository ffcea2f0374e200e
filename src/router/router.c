/* The router's entry points: build, orient and validate rings. */
#include "router_int.h"
#include "ftmesh/error.h"
#include "core/tls_memo.h"

#include <stdlib.h>
#include <string.h>

/* a better than b: fewer hops, then shorter longest edge, then less load. */
static int quality_better(const ftm_ring_quality *a, const ftm_ring_quality *b)
{
    if (a->hops != b->hops)
        return a->hops < b->hops;
    if (a->longest_edge != b->longest_edge)
        return a->longest_edge < b->longest_edge;
    return a->max_link_load < b->max_link_load;
}

/* The router is deterministic, so a mesh asked again gets a copy of the
 * ring it got before: this thread keeps the rings of the last two meshes
 * it asked for (a mesh and its transpose: 2d-concurrent plans both).
 * --algo auto asks for the same ring up to ten times (the ring and bidir
 * builders, the 2-D fallbacks, and the 2-D plan when faults merge the
 * whole mesh into one band, whose ring is the mesh's): 0.65 s each on a
 * 64x64 torus with 400 dead chips. Freed with the thread (tls_memo.h). */
typedef struct ring_memo {
    int valid[2], last;
    ftm_mesh m[2];
    ftm_ring r[2];
} ring_memo;

static void memo_drop(void *v)
{
    ring_memo *x = v;
    for (int i = 0; i < 2; i++)
        if (x->valid[i]) {
            ftm_mesh_free(&x->m[i]);
            ftm_router_ring_free(&x->r[i]);
        }
    free(x);
}

static int ring_copy(ftm_ring *dst, const ftm_ring *src)
{
    memset(dst, 0, sizeof *dst);
    return rtr_ring_set(dst, src->chips, src->n, src->path_off, src->dirs);
}

/* ring := the memo's ring of m: 1, or 0 when m is not there. */
static int memo_get(const ftm_mesh *m, ftm_ring *ring, int *rc)
{
    ring_memo *memo = core_memo_get(CORE_MEMO_ROUTER_RINGS);
    for (int i = 0; memo && i < 2; i++)
        if (memo->valid[i] && ftm_mesh_same(&memo->m[i], m)) {
            if ((*rc = ring_copy(ring, &memo->r[i])))
                ftm_router_ring_free(ring);
            memo->last = i; /* the other one goes first */
            return 1;
        }
    return 0;
}

/* Keeps a copy of m's ring in place of the older entry (best effort: a
 * failed allocation only leaves the memo without it). */
static void memo_put(const ftm_mesh *m, const ftm_ring *ring)
{
    ring_memo *memo = core_memo_get(CORE_MEMO_ROUTER_RINGS);
    if (!memo) {
        if (!(memo = calloc(1, sizeof *memo)))
            return;
        core_memo_set(CORE_MEMO_ROUTER_RINGS, memo, memo_drop);
    }
    int i = 1 - memo->last;
    if (memo->valid[i]) {
        ftm_mesh_free(&memo->m[i]);
        ftm_router_ring_free(&memo->r[i]);
        memo->valid[i] = 0;
    }
    if (ftm_mesh_copy(&memo->m[i], m))
        return;
    if (ring_copy(&memo->r[i], ring)) {
        ftm_router_ring_free(&memo->r[i]);
        ftm_mesh_free(&memo->m[i]);
        return;
    }
    memo->valid[i] = 1;
    memo->last = i;
}

static int build_ring(const ftm_mesh *m, ftm_ring *ring);
static int try_one_way_alternatives(const ftm_mesh *m, ftm_ring *ring);
static int keep_better(const ftm_mesh *m, const ftm_ring *r, int reversed, ftm_ring *best);

int ftm_router_ring(const ftm_mesh *m, ftm_ring *ring)
{
    if (!ring)
        return FTM_EINVAL;
    memset(ring, 0, sizeof *ring);
    if (!m)
        return FTM_EINVAL;
    int rc = 0;
    if (memo_get(m, ring, &rc))
        return rc;
    if (!(rc = build_ring(m, ring)))
        rc = try_one_way_alternatives(m, ring);
    if (!rc)
        memo_put(m, ring);
    return rc;
}

/* Keeps in *best the better of it and the ring through r's chips on m,
 * in r's order or reversed (routed on m, so valid here); r may be best. */
static int keep_better(const ftm_mesh *m, const ftm_ring *r, int reversed, ftm_ring *best)
{
    int n = r->n, *order = malloc(sizeof(int) * (size_t)(n ? n : 1));
    if (!order)
        return FTM_ENOMEM;
    for (int i = 0; i < n; i++)
        order[i] = r->chips[reversed ? (n - i) % n : i];
    ftm_ring cand;
    memset(&cand, 0, sizeof cand);
    int rc = rtr_ring_from_order(m, order, n, &cand);
    free(order);
    if (rc)
        return rc == FTM_ENOMEM ? rc : 0;
    ftm_ring_quality qa, qb;
    ftm_router_ring_measure(m, best, &qa);
    ftm_router_ring_measure(m, &cand, &qb);
    if (qb.valid && (!qa.valid || quality_better(&qb, &qa))) {
        ftm_ring t = *best;
        *best = cand;
        cand = t;
    }
    ftm_router_ring_free(&cand);
    return 0;
}

/* Where a link died one way only, the cycle search (which walks links
 * live both ways) can end up worse than on the same mesh with that link
 * dead both ways (measured: a 5x5 mesh with a dead chip, 36 hops and 11
 * detours against 24 and none), and the ring of the mesh with it live
 * both ways may avoid the dead direction once turned round (a 4x4 mesh).
 * So the rings of both those meshes are tried too, each way round. */
/* 1 when the link from c in direction d is live one way only. */
static int one_way(const ftm_mesh *m, int c, int d)
{
    int nb = ftm_mesh_neighbor(m, c, d);
    return nb >= 0 && ftm_mesh_link_live(m, c, d) != ftm_mesh_link_live(m, nb, ftm_dir_opposite(d));
}

static int try_one_way_alternatives(const ftm_mesh *m, ftm_ring *ring)
{
    int any = 0, rc = 0;
    for (int l = 0; l < m->nchips * FTM_NDIRS && !any; l++)
        any = ftm_mesh_alive(m, l / FTM_NDIRS) && one_way(m, l / FTM_NDIRS, l % FTM_NDIRS);
    for (int live = 0; any && live < 2 && !rc; live++) {
        ftm_mesh mm;
        if (ftm_mesh_copy(&mm, m))
            return FTM_ENOMEM;
        for (int l = 0; l < m->nchips * FTM_NDIRS; l++)
            if (one_way(m, l / FTM_NDIRS, l % FTM_NDIRS))
                mm.link_dead[l] = !live;
        ftm_ring r;
        memset(&r, 0, sizeof r);
        int brc = build_ring(&mm, &r); /* may fail (cut both ways): skipped */
        ftm_mesh_free(&mm);
        for (int rev = 0; !brc && rev < 2 && !rc; rev++)
            rc = keep_better(m, &r, rev, ring);
        if (brc == FTM_ENOMEM)
            rc = brc;
        ftm_router_ring_free(&r);
    }
    return rc;
}

static int build_ring(const ftm_mesh *m, ftm_ring *ring)
{
    int rc = ftm_mesh_check_connected(m, NULL, NULL);
    if (rc)
        return rc;
    rtr_ws w;
    if ((rc = rtr_ws_init(&w, m)))
        return rc;
    int n = ftm_mesh_healthy_count(m);
    int *order = malloc(sizeof(int) * (size_t)n);
    if (!order) {
        rtr_ws_free(&w);
        return FTM_ENOMEM;
    }
    rc = rtr_build_cycle(&w);
    if (!rc)
        rc = rtr_improve(&w);
    int first = 0;
    while (m->chip_dead[first])
        first++;
    /* The cycle is undirected at heart (built from links live both ways);
     * one-way faults can make one direction cheaper, so try both. */
    for (int i = 0, x = first; i < n && !rc; i++, x = w.nxt[x])
        order[i] = x;
    if (!rc)
        rc = rtr_ring_from_order(m, order, n, ring);
    if (!rc)
        rc = keep_better(m, ring, 1, ring);
    if (!rc) {
        ftm_ring_quality q;
        ftm_router_ring_measure(m, ring, &q);
        rc = q.valid ? 0 : FTM_EBADRING;
    }
    free(order);
    rtr_ws_free(&w);
    if (rc)
        ftm_router_ring_free(ring);
    return rc;
}

int ftm_router_reverse(const ftm_mesh *m, const ftm_ring *fwd, ftm_ring *rev)
{
    if (!rev)
        return FTM_EINVAL;
    memset(rev, 0, sizeof *rev);
    if (!m || !fwd || fwd->n < 1)
        return FTM_EINVAL;
    int rc = ftm_router_ring_validate(m, fwd);
    if (rc)
        return rc;
    int n = fwd->n;
    int *order = malloc(sizeof(int) * (size_t)n);
    if (!order)
        return FTM_ENOMEM;
    /* Same first chip; reverse edge i is forward edge n-1-i turned round. */
    for (int i = 0; i < n; i++)
        order[i] = fwd->chips[(n - i) % n];
    rc = rtr_ring_from_order(m, order, n, rev);
    free(order);
    if (!rc && (rc = ftm_router_ring_validate(m, rev)))
        ftm_router_ring_free(rev);
    return rc;
}
