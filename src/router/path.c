/* Paths over live links (the ring builder's fewest-hops search and the band
 * planner's load-weighted one, behind one public function), ring storage,
 * and turning a ring order into ring data (one hop between live
 * neighbours, a routed detour otherwise). */
#include "router_int.h"
#include "ftmesh/error.h"

#include <stdlib.h>
#include <string.h>

/* Lexicographic (max load, total load) comparison. */
static int key_less(int m1, int s1, int m2, int s2)
{
    return m1 < m2 || (m1 == m2 && s1 < s2);
}

/* The best first hop from x toward the target on a shortest path: the
 * lowest (max load, load sum) over the next chips' best continuations,
 * first direction on ties. Returns the direction; *bm, *bs its key. */
static int best_step(const ftm_mesh *m, int x, const int *dist, const int *load,
                     const int *bmax, const int *bsum, int *bm, int *bs)
{
    int bd = -1;
    *bm = *bs = 0;
    for (int d = 0; d < FTM_NDIRS; d++) {
        int y = ftm_mesh_neighbor(m, x, d);
        if (y < 0 || dist[y] != dist[x] - 1 || !ftm_mesh_link_live(m, x, d))
            continue;
        int l = load ? load[x * FTM_NDIRS + d] : 0;
        int cm = l > bmax[y] ? l : bmax[y], cs = l + bsum[y];
        if (bd < 0 || key_less(cm, cs, *bm, *bs)) {
            bd = d;
            *bm = cm;
            *bs = cs;
        }
    }
    return bd;
}

int rtr_route(const ftm_mesh *m, int a, int b, const int *load,
             int *dist, int *best, int *queue, unsigned char *dirs, int max)
{
    int n = m->nchips;
    int *bmax = best, *bsum = best + n;
    if (a == b)
        return 0;
    for (int i = 0; i < n; i++)
        dist[i] = -1;
    /* BFS backwards from b: dist[x] = hops x -> b. Every chip of level L-1
     * leaves the queue before any chip of level L, so when x leaves the
     * queue the best (max, sum) load of all its shortest continuations is
     * final and x's own value can be computed (a DP over the BFS DAG). */
    int head = 0, tail = 0, found = 0;
    dist[b] = 0;
    bmax[b] = bsum[b] = 0;
    queue[tail++] = b;
    while (head < tail && !found) {
        int x = queue[head++];
        if (x != b)
            best_step(m, x, dist, load, bmax, bsum, &bmax[x], &bsum[x]);
        if (x == a) {
            found = 1;
            break;
        }
        for (int d = 0; d < FTM_NDIRS; d++) {
            int y = ftm_mesh_neighbor(m, x, d);
            if (y < 0 || dist[y] >= 0 || !ftm_mesh_link_live(m, y, ftm_dir_opposite(d)))
                continue;
            dist[y] = dist[x] + 1;
            queue[tail++] = y;
        }
    }
    if (!found)
        return FTM_ENOROUTE;
    int hops = dist[a];
    if (hops > max)
        return FTM_ERANGE;
    /* Walk a -> b taking the first direction that attains the best key. */
    int x = a;
    for (int h = 0; h < hops; h++) {
        int bm, bs, bd = best_step(m, x, dist, load, bmax, bsum, &bm, &bs);
        dirs[h] = (unsigned char)bd;
        x = ftm_mesh_neighbor(m, x, bd);
    }
    return hops;
}

/* ---- load-weighted paths (Dijkstra with a binary heap, core/heap.h) ---- */

int rtr_dijkstra_init(rtr_dijkstra *w, int n)
{
    memset(w, 0, sizeof *w);
    w->n = n;
    w->cap = 4 * n + 4;
    w->dist = malloc(sizeof(int) * (size_t)n);
    w->pdir = malloc(sizeof(int) * (size_t)n);
    w->heap.a = malloc(sizeof *w->heap.a * (size_t)w->cap);
    return (w->dist && w->pdir && w->heap.a) ? 0 : FTM_ENOMEM;
}

void rtr_dijkstra_free(rtr_dijkstra *w)
{
    free(w->dist);
    free(w->pdir);
    free(w->heap.a);
}

/* Writes the path a -> b recorded in w->pdir; hops or FTM_ERANGE. */
static int dijkstra_walk(const rtr_dijkstra *w, const ftm_mesh *m, int a, int b,
                         unsigned char *dirs, int max)
{
    int h = 0;
    for (int v = b; v != a; v = ftm_mesh_neighbor(m, v, ftm_dir_opposite(w->pdir[v])))
        h++;
    if (h > max)
        return FTM_ERANGE;
    int i = h;
    for (int v = b; v != a; v = ftm_mesh_neighbor(m, v, ftm_dir_opposite(w->pdir[v])))
        dirs[--i] = (unsigned char)w->pdir[v];
    return h;
}

int rtr_cheapest(rtr_dijkstra *w, const ftm_mesh *m, int a, int b, const int *load, int penalty,
                 unsigned char *dirs, int max)
{
    if (a == b)
        return 0;
    int d0 = ftm_mesh_dir_to(m, a, b);
    if (d0 >= 0 && ftm_mesh_link_live(m, a, d0) && (!load || load[a * FTM_NDIRS + d0] == 0)) {
        if (max < 1)
            return FTM_ERANGE;
        dirs[0] = (unsigned char)d0;
        return 1;
    }
    for (int i = 0; i < w->n; i++)
        w->dist[i] = -1;
    w->heap.n = 0;
    w->dist[a] = 0;
    w->pdir[a] = -1;
    core_heap_push(&w->heap, 0, a);
    while (w->heap.n > 0) {
        core_hnode h = core_heap_pop(&w->heap);
        int v = h.id, cost = (int)h.key;
        if (cost != w->dist[v])
            continue; /* stale entry */
        if (v == b)
            break;
        for (int d = 0; d < FTM_NDIRS; d++) {
            if (!ftm_mesh_link_live(m, v, d))
                continue;
            int nb = ftm_mesh_neighbor(m, v, d);
            int c = cost + 1 + (load ? penalty * load[v * FTM_NDIRS + d] : 0);
            if (w->dist[nb] < 0 || c < w->dist[nb]) {
                w->dist[nb] = c;
                w->pdir[nb] = d;
                if (w->heap.n >= w->cap)
                    return FTM_EINTERNAL; /* each directed link pushes once */
                core_heap_push(&w->heap, c, nb);
            }
        }
    }
    if (w->dist[b] < 0)
        return FTM_ENOROUTE;
    return dijkstra_walk(w, m, a, b, dirs, max);
}

int ftm_router_path(const ftm_mesh *m, int a, int b, const int *load, int penalty,
                    unsigned char *dirs, int max)
{
    if (!m || a < 0 || b < 0 || a >= m->nchips || b >= m->nchips || max < 0 || penalty < 0)
        return FTM_EINVAL;
    if (m->chip_dead[a] || m->chip_dead[b])
        return FTM_ENOROUTE;
    if (a == b)
        return 0;
    int n = m->nchips, rc;
    if (penalty > 0) {
        rtr_dijkstra w;
        rc = rtr_dijkstra_init(&w, n);
        if (!rc)
            rc = rtr_cheapest(&w, m, a, b, load, penalty, dirs, max);
        rtr_dijkstra_free(&w);
        return rc;
    }
    int *buf = malloc(sizeof(int) * 4 * (size_t)n);
    if (!buf)
        return FTM_ENOMEM;
    rc = rtr_route(m, a, b, load, buf, buf + n, buf + 3 * n, dirs, max);
    free(buf);
    return rc;
}

int rtr_ring_set(ftm_ring *r, const int *chips, int n, const int *off, const unsigned char *dirs)
{
    ftm_router_ring_free(r);
    r->n = n;
    r->chips = malloc(sizeof(int) * (size_t)(n ? n : 1));
    r->path_off = malloc(sizeof(int) * (size_t)(n + 1));
    r->dirs = malloc((size_t)(off[n] ? off[n] : 1));
    if (!r->chips || !r->path_off || !r->dirs)
        return FTM_ENOMEM;
    memcpy(r->chips, chips, sizeof(int) * (size_t)n);
    memcpy(r->path_off, off, sizeof(int) * (size_t)(n + 1));
    memcpy(r->dirs, dirs, (size_t)off[n]);
    return 0;
}

void ftm_router_ring_free(ftm_ring *ring)
{
    if (!ring)
        return;
    free(ring->chips);
    free(ring->path_off);
    free(ring->dirs);
    memset(ring, 0, sizeof *ring);
}

/* Scratch of rtr_ring_from_order: per edge its hop count and, for a
 * routed detour, its offset in the detour buffer. */
typedef struct order_ws {
    int *load;              /* [nchips * 4] ring edges per directed link */
    int *elen, *doff;       /* [n] */
    int *scratch;           /* [4 * nchips] rtr_route */
    unsigned char *dbuf;    /* detour hops */
    size_t dcap, dused;
} order_ws;

/* Routes every edge that is not one live hop around the load of those
 * before it (one-hop edges were charged first). */
static int route_detours(const ftm_mesh *m, const int *order, int n, order_ws *o)
{
    int nc = m->nchips;
    for (int i = 0; i < n; i++) {
        if (o->elen[i] >= 0)
            continue;
        if (o->dcap - o->dused < (size_t)nc) {
            size_t ncap = o->dcap * 2 + (size_t)nc;
            unsigned char *p = realloc(o->dbuf, ncap);
            if (!p)
                return FTM_ENOMEM;
            o->dbuf = p;
            o->dcap = ncap;
        }
        int x = order[i], y = order[(i + 1) % n];
        unsigned char *d = o->dbuf + o->dused;
        int h = rtr_route(m, x, y, o->load, o->scratch, o->scratch + nc, o->scratch + 3 * nc, d, nc);
        if (h < 0)
            return h;
        /* Charge the detour's links so later detours avoid them. */
        for (int k = 0, c = x; k < h; k++) {
            o->load[c * FTM_NDIRS + d[k]]++;
            c = ftm_mesh_neighbor(m, c, d[k]);
        }
        o->doff[i] = (int)o->dused;
        o->elen[i] = h;
        o->dused += (size_t)h;
    }
    return 0;
}

/* Writes ring->dirs and path_off from the edges' hops. */
static int assemble(const ftm_mesh *m, const int *order, int n, const order_ws *o, ftm_ring *ring)
{
    size_t total = 0;
    for (int i = 0; i < n; i++)
        total += (size_t)o->elen[i];
    ring->dirs = malloc(total ? total : 1);
    if (!ring->dirs)
        return FTM_ENOMEM;
    int off = 0;
    for (int i = 0; i < n; i++) {
        ring->path_off[i] = off;
        if (o->doff[i] < 0 && o->elen[i] == 1) {
            ring->dirs[off++] = (unsigned char)ftm_mesh_dir_to(m, order[i], order[(i + 1) % n]);
            continue;
        }
        if (o->elen[i] > 0)
            memcpy(ring->dirs + off, o->dbuf + o->doff[i], (size_t)o->elen[i]);
        off += o->elen[i];
    }
    ring->path_off[n] = off;
    return 0;
}

int rtr_ring_from_order(const ftm_mesh *m, const int *order, int n, ftm_ring *ring)
{
    int nc = m->nchips, rc = 0;
    memset(ring, 0, sizeof *ring);
    order_ws o = { 0 };
    o.load = calloc((size_t)nc * FTM_NDIRS, sizeof(int));
    o.elen = malloc(sizeof(int) * (size_t)n);
    o.doff = malloc(sizeof(int) * (size_t)n);
    o.scratch = malloc(sizeof(int) * 4 * (size_t)nc);
    ring->chips = malloc(sizeof(int) * (size_t)n);
    ring->path_off = malloc(sizeof(int) * ((size_t)n + 1));
    if (!o.load || !o.elen || !o.doff || !o.scratch || !ring->chips || !ring->path_off)
        rc = FTM_ENOMEM;
    if (!rc) {
        memcpy(ring->chips, order, sizeof(int) * (size_t)n);
        ring->n = n;
        /* One-hop edges first, so detours can be routed around their load. */
        for (int i = 0; i < n; i++) {
            int x = order[i], y = order[(i + 1) % n];
            int d = (n > 1) ? ftm_mesh_dir_to(m, x, y) : -1;
            o.elen[i] = (n == 1) ? 0 : -1;
            o.doff[i] = -1;
            if (d >= 0 && ftm_mesh_link_live(m, x, d)) {
                o.elen[i] = 1;
                o.load[x * FTM_NDIRS + d]++;
            }
        }
        rc = route_detours(m, order, n, &o);
    }
    if (!rc)
        rc = assemble(m, order, n, &o, ring);
    free(o.load);
    free(o.elen);
    free(o.doff);
    free(o.scratch);
    free(o.dbuf);
    if (rc)
        ftm_router_ring_free(ring);
    return rc;
}
