/* Building one cycle over every healthy chip.
 *
 * 1. Small cycles (all links on them live both ways):
 *    - every fully healthy 2x2 cell at even coordinates (a 4-cycle);
 *    - on a torus, a whole row or column left over (odd side) that is a
 *      wrap-around cycle by itself;
 *    - the remaining chips paired with a neighbour (2-cycles), row-major,
 *      preferring E then S; the rest are singles.
 * 2. Grow the first largest cycle by merging neighbouring cycles through a
 *    pair of parallel edges: main has x->y, the other cycle has bx-by with
 *    x~bx and y~by, so x->bx..by->y replaces x->y (reversing the other
 *    cycle when needed). Merging 2x2 cells this way walks the outline of a
 *    spanning tree of cells: spanning tree coverage (Gabriely and Rimon,
 *    "Spanning-tree based coverage of continuous areas by a mobile robot",
 *    2001), which gives a Hamiltonian ring around 2x2-aligned holes, the
 *    snake on healthy meshes with an even side, and odd tori (the leftover
 *    wrap row merges like any other cycle). Every merge costs nothing.
 * 3. Chips still outside (singles, unmergeable cycles, broken up) are
 *    inserted one at a time where the ring gets the fewest extra hops:
 *    breaking x->y for chip s costs d(x,s) + d(s,y) - len(x->y).
 * A Hamiltonian cycle in a grid graph with holes is NP-complete in general
 * (Itai, Papadimitriou, Szwarcfiter 1982), so 3 is a heuristic; ring_improve.c
 * then removes detours it can.
 */
#include "router_int.h"
#include "ftmesh/error.h"

#include <stdlib.h>
#include <string.h>

int rtr_ws_init(rtr_ws *w, const ftm_mesh *m)
{
    memset(w, 0, sizeof *w);
    w->m = m;
    w->n = m->nchips;
    size_t n = (size_t)m->nchips;
    int *buf = malloc(sizeof(int) * 7 * n);
    if (!buf)
        return FTM_ENOMEM;
    w->nxt = buf;
    w->prv = buf + n;
    w->len = buf + 2 * n;
    w->cyc = buf + 3 * n;
    w->da = buf + 4 * n;
    w->db = buf + 5 * n;
    w->queue = buf + 6 * n;
    return 0;
}

void rtr_ws_free(rtr_ws *w)
{
    free(w->nxt);
    memset(w, 0, sizeof *w);
}

int rtr_dist(rtr_ws *w, int a, int b)
{
    if (a == b)
        return 0;
    ftm_mesh_bfs(w->m, a, 0, w->da, w->queue);
    return w->da[b];
}

/* Makes the chips list[0..k) a cycle in that order, with id list[0]. */
static void make_cycle(rtr_ws *w, const int *list, int k)
{
    for (int i = 0; i < k; i++) {
        int x = list[i], y = list[(i + 1) % k];
        w->nxt[x] = y;
        w->prv[y] = x;
        w->len[x] = (k == 1) ? 0 : 1;
        w->cyc[x] = list[0];
    }
}

static int free_chip(const rtr_ws *w, int x)
{
    return x >= 0 && w->cyc[x] == -2;
}

/* 1 when the pair x-y (y in direction e of x) has a cycle edge bx-by
 * beside it, x~bx and y~by over links live both ways. */
static int mergeable(const rtr_ws *w, int x, int y, int e)
{
    for (int d = 0; d < FTM_NDIRS; d++) {
        int bx, by;
        if (d == e || d == ftm_dir_opposite(e))
            continue;
        if (!ftm_mesh_link_both(w->m, x, d, &bx) || !ftm_mesh_link_both(w->m, y, d, &by))
            continue;
        if (w->cyc[bx] >= 0 && w->cyc[bx] == w->cyc[by] &&
            (w->nxt[bx] == by || w->nxt[by] == bx))
            return 1;
    }
    return 0;
}

/* Step 1: the small cycles. cyc == -2 marks a healthy chip not yet placed. */
static int seed_cycles(rtr_ws *w, int *list)
{
    const ftm_mesh *m = w->m;
    for (int i = 0; i < w->n; i++)
        w->cyc[i] = m->chip_dead[i] ? -1 : -2;
    for (int r = 0; r + 1 < m->rows; r += 2)
        for (int c = 0; c + 1 < m->cols; c += 2) {
            int a = ftm_mesh_chip(m, r, c), b = a + 1;
            int cc = b + m->cols, dd = a + m->cols;
            if (!free_chip(w, a) || !free_chip(w, b) || !free_chip(w, cc) || !free_chip(w, dd))
                continue;
            if (!ftm_mesh_link_both(m, a, FTM_DIR_E, NULL) || !ftm_mesh_link_both(m, b, FTM_DIR_S, NULL) ||
                !ftm_mesh_link_both(m, cc, FTM_DIR_W, NULL) || !ftm_mesh_link_both(m, dd, FTM_DIR_N, NULL))
                continue;
            int l[4] = { a, b, cc, dd };
            make_cycle(w, l, 4);
        }
    /* Whole leftover rows / columns that close through the wrap links. */
    for (int pass = 0; pass < 2 && m->torus; pass++) {
        int lines = pass ? m->cols : m->rows, span = pass ? m->rows : m->cols;
        int dir = pass ? FTM_DIR_S : FTM_DIR_E;
        if (span < 3)
            continue;
        for (int ln = 0; ln < lines; ln++) {
            int ok = 1;
            for (int k = 0; k < span && ok; k++) {
                int x = pass ? ftm_mesh_chip(m, k, ln) : ftm_mesh_chip(m, ln, k);
                list[k] = x;
                ok = free_chip(w, x) && ftm_mesh_link_both(m, x, dir, NULL);
            }
            if (ok)
                make_cycle(w, list, span);
        }
    }
    /* Pairs: first those that can later merge (a parallel edge of a cycle
     * beside them), so a broken cell's leftovers pair the useful way. */
    static const int pref[FTM_NDIRS] = { FTM_DIR_E, FTM_DIR_S, FTM_DIR_W, FTM_DIR_N };
    for (int pass = 0; pass < 2; pass++)
        for (int x = 0; x < w->n; x++) {
            if (!free_chip(w, x))
                continue;
            int l[2] = { x, -1 };
            for (int k = 0; k < FTM_NDIRS && l[1] < 0; k++) {
                int y;
                if (ftm_mesh_link_both(m, x, pref[k], &y) && free_chip(w, y) &&
                    (pass == 1 || mergeable(w, x, y, pref[k])))
                    l[1] = y;
            }
            if (l[1] >= 0 || pass == 1)
                make_cycle(w, l, l[1] < 0 ? 1 : 2);
        }
    /* Main: the first largest cycle. */
    int best = -1, bsize = 0;
    for (int x = 0; x < w->n; x++) {
        if (w->cyc[x] != x)
            continue;
        int k = 1;
        for (int y = w->nxt[x]; y != x; y = w->nxt[y])
            k++;
        if (k > bsize) {
            bsize = k;
            best = x;
        }
    }
    w->main_cyc = best;
    return best;
}

static void reverse_cycle(rtr_ws *w, int start)
{
    int x = start;
    do {
        int t = w->nxt[x];
        w->nxt[x] = w->prv[x];
        w->prv[x] = t;
        x = t;
    } while (x != start);
    /* Edge x -> nxt[x] is now the old prv[x] -> x, which had len 1 too:
     * small cycles only hold one-hop edges. */
}

/* Tries to merge another cycle across main edge x -> y; 1 when it did. */
static int try_merge(rtr_ws *w, int x)
{
    const ftm_mesh *m = w->m;
    int y = w->nxt[x];
    if (y == x || w->len[x] != 1)
        return 0;
    int e = ftm_mesh_dir_to(m, x, y);
    if (e < 0)
        return 0;
    for (int d = 0; d < FTM_NDIRS; d++) {
        if (d == e || d == ftm_dir_opposite(e))
            continue;
        int bx, by;
        if (!ftm_mesh_link_both(m, x, d, &bx) || !ftm_mesh_link_both(m, y, d, &by))
            continue;
        int k = w->cyc[bx];
        if (k < 0 || k == w->main_cyc || w->cyc[by] != k || bx == by)
            continue;
        if (w->nxt[bx] == by && w->nxt[by] != bx)
            reverse_cycle(w, bx);
        if (w->nxt[by] != bx)
            continue;
        /* x -> bx -> ... -> by -> y */
        int z = bx;
        do {
            w->cyc[z] = w->main_cyc;
            z = w->nxt[z];
        } while (z != bx);
        w->nxt[x] = bx;
        w->prv[bx] = x;
        w->nxt[by] = y;
        w->prv[y] = by;
        w->len[by] = 1;
        return 1;
    }
    return 0;
}

/* Cheapest insertion of chip s (not on main) into the main cycle. */
static void insert_chip(rtr_ws *w, int s)
{
    ftm_mesh_bfs(w->m, s, 1, w->da, w->queue); /* da[u] = d(u, s) */
    ftm_mesh_bfs(w->m, s, 0, w->db, w->queue); /* db[v] = d(s, v) */
    int bu = -1, bcost = 0, bmax = 0;
    for (int u = 0; u < w->n; u++) {
        if (w->cyc[u] != w->main_cyc)
            continue;
        int v = w->nxt[u];
        if (w->da[u] < 0 || w->db[v] < 0)
            continue;
        int cost = w->da[u] + w->db[v] - w->len[u];
        int mx = w->da[u] > w->db[v] ? w->da[u] : w->db[v];
        if (bu < 0 || cost < bcost || (cost == bcost && mx < bmax)) {
            bu = u;
            bcost = cost;
            bmax = mx;
        }
    }
    /* The mesh is connected, so bu >= 0. */
    int v = w->nxt[bu];
    w->len[s] = w->db[v];
    w->len[bu] = w->da[bu];
    w->nxt[bu] = s;
    w->prv[s] = bu;
    w->nxt[s] = v;
    w->prv[v] = s;
    w->cyc[s] = w->main_cyc;
}

int rtr_build_cycle(rtr_ws *w)
{
    int *list = w->da; /* scratch for seed_cycles */
    int start = seed_cycles(w, list);
    if (start < 0)
        return FTM_EALLDEAD;
    /* Passes around the growing main cycle until nothing merges; a merged
     * cycle is walked in the same pass since we follow nxt. */
    for (int changed = 1; changed;) {
        changed = 0;
        int x = start;
        do {
            while (try_merge(w, x))
                changed = 1;
            x = w->nxt[x];
        } while (x != start);
    }
    for (int s = 0; s < w->n; s++)
        if (w->cyc[s] >= 0 && w->cyc[s] != w->main_cyc)
            insert_chip(w, s);
    return 0;
}
