/* Ring validation and quality figures (NCCL's rings.cc checks its rings
 * after building them the same way: closes, covers everyone once). */
#include "ftmesh/router.h"
#include "ftmesh/error.h"

#include <stdlib.h>
#include <string.h>

/* Walks edge i's path; returns the chip it ends on, or -1 if a hop leaves
 * the mesh, uses a dead link or a dead chip, or a direction is out of range. */
static int walk_edge(const ftm_mesh *m, const ftm_ring *r, int i)
{
    int c = r->chips[i];
    for (int k = r->path_off[i]; k < r->path_off[i + 1]; k++) {
        int d = r->dirs[k];
        if (d >= FTM_NDIRS || !ftm_mesh_link_live(m, c, d))
            return -1;
        c = ftm_mesh_neighbor(m, c, d);
    }
    return c;
}

int ftm_router_ring_validate(const ftm_mesh *m, const ftm_ring *r)
{
    if (!m || !r || r->n < 1 || !r->chips || !r->path_off)
        return FTM_EBADRING;
    if (r->n != ftm_mesh_healthy_count(m) || r->path_off[0] != 0)
        return FTM_EBADRING;
    for (int i = 0; i < r->n; i++)
        if (r->path_off[i + 1] < r->path_off[i])
            return FTM_EBADRING;
    if (r->path_off[r->n] > 0 && !r->dirs)
        return FTM_EBADRING;
    unsigned char *seen = calloc((size_t)m->nchips, 1);
    if (!seen)
        return FTM_ENOMEM;
    int rc = 0;
    for (int i = 0; i < r->n && !rc; i++) {
        int c = r->chips[i];
        if (c < 0 || c >= m->nchips || m->chip_dead[c] || seen[c])
            rc = FTM_EBADRING;
        else
            seen[c] = 1;
    }
    /* n == healthy and no duplicates: every healthy chip is on the ring. */
    for (int i = 0; i < r->n && !rc; i++) {
        int next = r->chips[(i + 1) % r->n];
        if (walk_edge(m, r, i) != next)
            rc = FTM_EBADRING;
        /* A ring of two or more chips cannot have an empty edge. */
        if (r->n > 1 && r->path_off[i + 1] == r->path_off[i])
            rc = FTM_EBADRING;
    }
    free(seen);
    return rc;
}

void ftm_router_ring_measure(const ftm_mesh *m, const ftm_ring *r, ftm_ring_quality *q)
{
    memset(q, 0, sizeof *q);
    q->healthy = ftm_mesh_healthy_count(m);
    q->ring_chips = r->n;
    q->valid = ftm_router_ring_validate(m, r) == 0;
    if (!q->valid) {
        q->max_link_load = -1;
        q->hops = r->n > 0 && r->path_off ? r->path_off[r->n] : 0;
        return;
    }
    q->hops = r->path_off[r->n];
    /* stamp[] remembers the last edge that crossed a link, so a path that
     * crossed a link twice would count once. */
    int *load = calloc((size_t)m->nchips * FTM_NDIRS, sizeof(int));
    int *stamp = malloc(sizeof(int) * (size_t)m->nchips * FTM_NDIRS);
    if (!load || !stamp) {
        free(load);
        free(stamp);
        q->max_link_load = -1;
        return;
    }
    for (int k = 0; k < m->nchips * FTM_NDIRS; k++)
        stamp[k] = -1;
    for (int i = 0; i < r->n; i++) {
        int h = r->path_off[i + 1] - r->path_off[i];
        if (h > 1)
            q->detours++;
        if (h > q->longest_edge)
            q->longest_edge = h;
        int c = r->chips[i];
        for (int k = r->path_off[i]; k < r->path_off[i + 1]; k++) {
            int l = c * FTM_NDIRS + r->dirs[k];
            if (stamp[l] != i) {
                stamp[l] = i;
                if (++load[l] > q->max_link_load)
                    q->max_link_load = load[l];
            }
            c = ftm_mesh_neighbor(m, c, r->dirs[k]);
        }
    }
    free(load);
    free(stamp);
}
