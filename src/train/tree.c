/* Tree allreduce for small int64 buffers (the batch-norm hook), and the
 * builder that picks an allreduce by name for the trainer.
 *
 * Why a tree: synchronised batch norm sums 2*C int64 values (C <= 64) about
 * forty times per ResNet step. A ring over P chips needs 2(P-1) dependent
 * steps and 2P(P-1) messages for that; on the emulator every message is a
 * thread wake-up. A BFS spanning tree of one-hop links needs 2(P-1)
 * messages and 2*depth dependent hops. Integer sums are exact, so the tree
 * gives the same bits as any other order.
 *
 *   reduce:    leaves -> parent (sum) ... -> root      (one child per step,
 *   broadcast: root -> children (copy) ... -> leaves    so no two receives
 *                                                       overlap in a step)
 */
#include <stdlib.h>
#include <string.h>
#include "ftmesh/collective.h"
#include "ftmesh/costmodel.h"
#include "ftmesh/error.h"
#include "train_int.h"

/* Healthy chip nearest the middle of the grid (shallow tree). */
static int pick_root(const ftm_mesh *m)
{
    int best = -1;
    double bd = 0;
    for (int c = 0; c < m->nchips; c++) {
        if (!ftm_mesh_alive(m, c))
            continue;
        double dr = ftm_mesh_row(m, c) - (m->rows - 1) / 2.0;
        double dc = ftm_mesh_col(m, c) - (m->cols - 1) / 2.0;
        double d = (dr < 0 ? -dr : dr) + (dc < 0 ? -dc : dc);
        if (best < 0 || d < bd) {
            best = c;
            bd = d;
        }
    }
    return best;
}

int train_tree_build(ftm_sched *s, const ftm_mesh *m, size_t count, ftm_red red)
{
    int n = m->nchips, root = pick_root(m);
    if (root < 0)
        return FTM_EALLDEAD;
    size_t bytes = count * ftm_red_elem_size(red);
    int *order = malloc(sizeof(int) * (size_t)n), *parent = malloc(sizeof(int) * (size_t)n);
    int *pdir = malloc(sizeof(int) * (size_t)n), *up = malloc(sizeof(int) * (size_t)n);
    int *down = malloc(sizeof(int) * (size_t)n);
    int rc = order && parent && pdir && up && down ? 0 : FTM_ENOMEM;
    int nord = 0;
    if (!rc) {
        for (int c = 0; c < n; c++)
            parent[c] = -2; /* unvisited */
        parent[root] = -1;
        order[nord++] = root;
        for (int q = 0; q < nord; q++) {
            int c = order[q];
            for (int d = 0; d < FTM_NDIRS; d++) {
                int nb = ftm_mesh_neighbor(m, c, d);
                if (nb < 0 || nb == c || parent[nb] != -2 || !ftm_mesh_link_live(m, c, d) ||
                    !ftm_mesh_link_live(m, nb, ftm_dir_opposite(d)))
                    continue;
                parent[nb] = c;
                pdir[nb] = d;
                order[nord++] = nb;
            }
        }
        if (nord != ftm_mesh_healthy_count(m))
            rc = FTM_ENOTSUP; /* only one-way links join some chips */
    }
    int inited = 0;
    if (!rc && !(rc = ftm_sched_init(s, "tree", n, bytes)))
        inited = 1;
    /* routes: up[c] = c -> parent, down[c] = parent -> c */
    for (int q = 1; q < nord && !rc; q++) {
        int c = order[q];
        unsigned char d = (unsigned char)pdir[c], o = (unsigned char)ftm_dir_opposite(pdir[c]);
        up[c] = ftm_sched_route(s, c, parent[c], &o, 1);
        down[c] = ftm_sched_route(s, parent[c], c, &d, 1);
        if (up[c] < 0 || down[c] < 0)
            rc = up[c] < 0 ? up[c] : down[c];
    }
    /* reduce, deepest first: a chip's receives from its children are opened
     * before its own send up, as its children come later in BFS order */
    for (int q = nord - 1; q >= 1 && !rc; q--) {
        int c = order[q], p = parent[c];
        if ((rc = ftm_sched_step(s, p, "tree-reduce", q)) ||
            (rc = ftm_sched_step(s, c, "tree-up", 0)))
            break;
        rc = ftm_sched_xfer(s, up[c], 0, 0, bytes, red);
    }
    /* broadcast, root first: one step sends to all children */
    for (int q = 0; q < nord && !rc; q++) {
        int p = order[q], opened = 0;
        for (int k = q + 1; k < nord && !rc; k++) {
            int c = order[k];
            if (parent[c] != p)
                continue;
            if (!opened && (rc = ftm_sched_step(s, p, "tree-down", 0)))
                break;
            opened = 1;
            if ((rc = ftm_sched_step(s, c, "tree-bcast", 0)))
                break;
            rc = ftm_sched_xfer(s, down[c], 0, 0, bytes, FTM_RED_COPY);
        }
    }
    if (rc && inited)
        ftm_sched_free(s);
    free(order); free(parent); free(pdir); free(up); free(down);
    return rc;
}

int train_build(ftm_sched *s, const ftm_mesh *m, const char *name, size_t count,
                ftm_red red, double *modeled_s, const char **used)
{
    ftm_cost_params p;
    ftm_cost_defaults(&p);
    ftm_cost_result cr;
    int rc = FTM_ENOTSUP;
    if (!strcmp(name, "tree")) {
        rc = train_tree_build(s, m, count, red);
        if (!rc)
            *used = "tree";
        else if (rc == FTM_ENOTSUP)
            name = "ring"; /* one-way links only: fall back to a ring */
        else
            return rc;
    } else if (!strcmp(name, "auto")) {
        /* the registered algorithm with the smallest modeled time */
        const char *best = NULL;
        double bt = 0;
        for (const ftm_allreduce_algo *a = ftm_allreduce_algos(); a->name; a++) {
            ftm_sched t;
            if (a->build(&t, m, count, red))
                continue; /* e.g. FTM_ENOTSUP for this mesh */
            int e = ftm_cost_sched(&t, m, &p, &cr, NULL);
            ftm_sched_free(&t);
            if (!e && (!best || cr.time_s < bt)) {
                best = a->name;
                bt = cr.time_s;
            }
        }
        if (!best)
            return FTM_ENOTSUP;
        name = best;
    }
    if (rc) { /* not built yet: a registry algorithm */
        const ftm_allreduce_algo *a = ftm_allreduce_find(name);
        if (!a)
            return FTM_EINVAL;
        if ((rc = a->build(s, m, count, red)))
            return rc;
        *used = a->name;
    }
    rc = ftm_cost_sched(s, m, &p, &cr, NULL);
    if (rc) {
        ftm_sched_free(s);
        return rc;
    }
    *modeled_s = cr.time_s;
    return 0;
}
