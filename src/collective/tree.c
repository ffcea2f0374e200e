/* Tree allreduce: the latency algorithm for small buffers.
 *
 * A ring allreduce takes 2(P-1) steps, and every step wakes every chip: on
 * a 64-chip mesh a 512-byte allreduce (a batch-norm statistic) costs
 * thousands of thread wake-ups. A tree over the live links takes about
 * 2 x depth steps (a few more up: a parent takes one child a step) and
 * wakes each chip about four times:
 *
 *        reduce (leaves first)            broadcast (root first)
 *
 *            R  <- sum of all                 R  -> copy
 *           / \                              / \
 *          a   b  <- own + children         a   b
 *         / \   \                          / \   \
 *        c   d   e                        c   d   e
 *
 * The root is the healthy chip nearest the mesh centre; the tree is a
 * breadth-first spanning tree over links that are live both ways, so every
 * tree edge is one hop. A chip reachable only through one-way links hangs
 * directly off the root over routed paths. Each child is received in its
 * own step, in a fixed order, so float sums are deterministic. The whole
 * buffer moves on every edge (no pipelining): for big buffers use ring,
 * bidir or 2d; `auto` picks by modeled time.
 */
#include "ftmesh/collective.h"
#include "ftmesh/router.h"
#include "ftmesh/error.h"

#include <stdlib.h>

/* Healthy chip nearest the centre (ties: lowest id). */
static int pick_root(const ftm_mesh *m)
{
    int best = -1, bd = 0;
    for (int c = 0; c < m->nchips; c++) {
        if (!ftm_mesh_alive(m, c))
            continue;
        int d = abs(2 * ftm_mesh_row(m, c) - (m->rows - 1)) + abs(2 * ftm_mesh_col(m, c) - (m->cols - 1));
        if (best < 0 || d < bd) {
            best = c;
            bd = d;
        }
    }
    return best;
}

/* Adds routes child->parent (up) and parent->child (down). */
static int add_edge_routes(ftm_sched *s, const ftm_mesh *m, int child, int parent, int *up, int *down)
{
    unsigned char dirs[FTM_MESH_MAX_SIDE * FTM_MESH_MAX_SIDE];
    int d = ftm_mesh_dir_to(m, child, parent);
    if (d >= 0 && ftm_mesh_link_both(m, child, d, NULL)) {
        unsigned char u = (unsigned char)d, w = (unsigned char)ftm_dir_opposite(d);
        up[child] = ftm_sched_route(s, child, parent, &u, 1);
        down[child] = ftm_sched_route(s, parent, child, &w, 1);
    } else {
        int h = ftm_router_path(m, child, parent, NULL, 0, dirs, (int)sizeof dirs);
        up[child] = h < 0 ? h : ftm_sched_route(s, child, parent, dirs, h);
        h = ftm_router_path(m, parent, child, NULL, 0, dirs, (int)sizeof dirs);
        down[child] = h < 0 ? h : ftm_sched_route(s, parent, child, dirs, h);
    }
    return up[child] < 0 ? up[child] : down[child] < 0 ? down[child] : 0;
}

int ftm_allreduce_tree_build(ftm_sched *s, const ftm_sched_ctx *ctx, const ftm_mesh *m,
                             size_t count, ftm_red red)
{
    int rc = ftm_mesh_check_connected(m, NULL, NULL);
    if (rc)
        return rc;
    size_t el = ftm_sched_red_elem_size(red), len = count * el;
    if (count > FTM_SCHED_MAX_BYTES / el) /* len wrapped */
        return FTM_EINVAL;
    rc = ftm_sched_init(s, ctx, "tree", m->nchips, len);
    if (rc)
        return rc;
    int n = m->nchips;
    int *parent = malloc(sizeof(int) * (size_t)n), *order = malloc(sizeof(int) * (size_t)n);
    int *up = malloc(sizeof(int) * (size_t)n), *down = malloc(sizeof(int) * (size_t)n);
    unsigned char *down_open = calloc((size_t)n, 1);
    if (!parent || !order || !up || !down || !down_open) {
        rc = FTM_ENOMEM;
        goto out;
    }
    for (int c = 0; c < n; c++)
        parent[c] = -2; /* not reached */
    int root = pick_root(m), head = 0, tail = 0;
    parent[root] = -1;
    order[tail++] = root;
    while (head < tail) {
        int u = order[head++];
        for (int d = 0; d < FTM_NDIRS; d++) {
            int v = ftm_mesh_neighbor(m, u, d);
            if (v >= 0 && parent[v] == -2 && ftm_mesh_link_both(m, u, d, NULL)) {
                parent[v] = u;
                order[tail++] = v;
            }
        }
    }
    for (int c = 0; c < n; c++) /* reachable only over one-way links */
        if (ftm_mesh_alive(m, c) && parent[c] == -2) {
            parent[c] = root;
            order[tail++] = c;
        }
    for (int i = 1; i < tail && !rc; i++)
        rc = add_edge_routes(s, m, order[i], parent[order[i]], up, down);
    /* Reduce, deepest chips first: the parent opens a step to receive this
     * child, the child a step to send its (already summed) buffer. */
    for (int i = tail - 1; i >= 1 && !rc; i--) {
        int x = order[i], p = parent[x];
        rc = ftm_sched_step(s, p, "tree-reduce", i);
        if (!rc)
            rc = ftm_sched_step(s, x, "tree-up", 0);
        if (!rc)
            rc = ftm_sched_xfer(s, up[x], 0, 0, len, red);
    }
    /* Broadcast, root first: a parent sends to all its children in one
     * step; a child receives, then opens its own sending step. */
    for (int i = 1; i < tail && !rc; i++) {
        int x = order[i], p = parent[x];
        if (!down_open[p]) {
            rc = ftm_sched_step(s, p, "tree-bcast", 0);
            down_open[p] = 1;
        }
        if (!rc)
            rc = ftm_sched_step(s, x, "tree-recv", 0);
        if (!rc)
            rc = ftm_sched_xfer(s, down[x], 0, 0, len, FTM_RED_COPY);
    }
    if (!rc)
        ftm_sched_trim(s);
out:
    free(parent);
    free(order);
    free(up);
    free(down);
    free(down_open);
    if (rc)
        ftm_sched_free(s);
    return rc;
}
