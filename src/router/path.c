/* Shortest paths over live links, and turning a ring order into ring data
 * (one hop between live neighbours, a routed detour otherwise). */
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

int rt_route(const ftm_mesh *m, int a, int b, const int *load,
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

int ftm_router_path(const ftm_mesh *m, int a, int b, unsigned char *dirs, int max)
{
    if (!m || a < 0 || b < 0 || a >= m->nchips || b >= m->nchips || max < 0)
        return FTM_EINVAL;
    if (m->chip_dead[a] || m->chip_dead[b])
        return FTM_ENOROUTE;
    if (a == b)
        return 0;
    int *buf = malloc(sizeof(int) * 4 * (size_t)m->nchips);
    if (!buf)
        return FTM_ENOMEM;
    int n = m->nchips;
    int rc = rt_route(m, a, b, NULL, buf, buf + n, buf + 3 * n, dirs, max);
    free(buf);
    return rc;
}

void ftm_ring_free(ftm_ring *ring)
{
    if (!ring)
        return;
    free(ring->chips);
    free(ring->path_off);
    free(ring->dirs);
    memset(ring, 0, sizeof *ring);
}

int rt_ring_from_order(const ftm_mesh *m, const int *order, int n, ftm_ring *ring)
{
    int nc = m->nchips, rc = 0;
    memset(ring, 0, sizeof *ring);
    int *load = calloc((size_t)nc * FTM_NDIRS, sizeof(int));
    int *elen = malloc(sizeof(int) * (size_t)n);
    int *doff = malloc(sizeof(int) * (size_t)n);
    int *scratch = malloc(sizeof(int) * 4 * (size_t)nc);
    unsigned char *dbuf = NULL;
    size_t dcap = 0, dused = 0;
    ring->chips = malloc(sizeof(int) * (size_t)n);
    ring->path_off = malloc(sizeof(int) * ((size_t)n + 1));
    if (!load || !elen || !doff || !scratch || !ring->chips || !ring->path_off) {
        rc = FTM_ENOMEM;
        goto out;
    }
    memcpy(ring->chips, order, sizeof(int) * (size_t)n);
    ring->n = n;
    /* One-hop edges first, so detours can be routed around their load. */
    for (int i = 0; i < n; i++) {
        int x = order[i], y = order[(i + 1) % n];
        int d = (n > 1) ? ftm_mesh_dir_to(m, x, y) : -1;
        elen[i] = (n == 1) ? 0 : -1;
        doff[i] = -1;
        if (d >= 0 && ftm_mesh_link_live(m, x, d)) {
            elen[i] = 1;
            load[x * FTM_NDIRS + d]++;
        }
    }
    for (int i = 0; i < n; i++) {
        if (elen[i] >= 0)
            continue;
        if (dcap - dused < (size_t)nc) {
            size_t ncap = dcap * 2 + (size_t)nc;
            unsigned char *p = realloc(dbuf, ncap);
            if (!p) {
                rc = FTM_ENOMEM;
                goto out;
            }
            dbuf = p;
            dcap = ncap;
        }
        int x = order[i], y = order[(i + 1) % n];
        int h = rt_route(m, x, y, load, scratch, scratch + nc, scratch + 3 * nc,
                         dbuf + dused, nc);
        if (h < 0) {
            rc = h;
            goto out;
        }
        /* Charge the detour's links so later detours avoid them. */
        for (int k = 0, c = x; k < h; k++) {
            load[c * FTM_NDIRS + dbuf[dused + k]]++;
            c = ftm_mesh_neighbor(m, c, dbuf[dused + k]);
        }
        doff[i] = (int)dused;
        elen[i] = h;
        dused += (size_t)h;
    }
    size_t total = 0;
    for (int i = 0; i < n; i++)
        total += (size_t)elen[i];
    ring->dirs = malloc(total ? total : 1);
    if (!ring->dirs) {
        rc = FTM_ENOMEM;
        goto out;
    }
    int off = 0;
    for (int i = 0; i < n; i++) {
        ring->path_off[i] = off;
        if (doff[i] < 0 && elen[i] == 1) {
            ring->dirs[off++] = (unsigned char)ftm_mesh_dir_to(m, order[i], order[(i + 1) % n]);
            continue;
        }
        if (elen[i] > 0)
            memcpy(ring->dirs + off, dbuf + doff[i], (size_t)elen[i]);
        off += elen[i];
    }
    ring->path_off[n] = off;
out:
    free(load);
    free(elen);
    free(doff);
    free(scratch);
    free(dbuf);
    if (rc)
        ftm_ring_free(ring);
    return rc;
}
