/* The router's entry points: build, orient and validate rings. */
#include "router_int.h"
#include "ftmesh/error.h"

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

int ftm_router_ring(const ftm_mesh *m, ftm_ring *ring)
{
    if (!ring)
        return FTM_EINVAL;
    memset(ring, 0, sizeof *ring);
    if (!m)
        return FTM_EINVAL;
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
    ftm_ring alt;
    memset(&alt, 0, sizeof alt);
    for (int pass = 0; pass < 2 && !rc; pass++) {
        int x = first;
        for (int i = 0; i < n; i++) {
            order[i] = x;
            x = pass ? w.prv[x] : w.nxt[x];
        }
        rc = rtr_ring_from_order(m, order, n, pass ? &alt : ring);
    }
    if (!rc) {
        ftm_ring_quality qa, qb;
        ftm_ring_measure(m, ring, &qa);
        ftm_ring_measure(m, &alt, &qb);
        if (!qa.valid && !qb.valid)
            rc = FTM_EBADRING;
        else if (!qa.valid || (qb.valid && quality_better(&qb, &qa))) {
            ftm_ring t = *ring;
            *ring = alt;
            alt = t;
        }
    }
    ftm_ring_free(&alt);
    free(order);
    rtr_ws_free(&w);
    if (rc)
        ftm_ring_free(ring);
    return rc;
}

int ftm_router_reverse(const ftm_mesh *m, const ftm_ring *fwd, ftm_ring *rev)
{
    if (!rev)
        return FTM_EINVAL;
    memset(rev, 0, sizeof *rev);
    if (!m || !fwd || fwd->n < 1)
        return FTM_EINVAL;
    int rc = ftm_ring_validate(m, fwd);
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
    if (!rc && (rc = ftm_ring_validate(m, rev)))
        ftm_ring_free(rev);
    return rc;
}
