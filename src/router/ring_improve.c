/* Local improvement of a built cycle: or-opt (move one chip elsewhere) and
 * 2-opt (swap two edges, reversing the part between them), both from the
 * travelling-salesman toolbox (Lin 1965; Or 1976), with hop distances over
 * live links as the edge cost. Only moves near detour edges are tried, with
 * distances from BFS balls of small radius, so a pass costs little even on
 * 64x64; a move is applied only when it strictly lowers the total hops, so
 * the passes end. */
#include "router_int.h"
#include "ftmesh/error.h"

#include <stdlib.h>

#define BALL 4      /* radius of the BFS balls searched for moves */
#define ROUNDS 64   /* improvement rounds at most */

typedef struct {
    int *dist;  /* [n], -1 outside the current ball */
    int *q;     /* [n] chips of the ball, in BFS order */
    int cnt;
} ball;

static void ball_clear(ball *b)
{
    for (int i = 0; i < b->cnt; i++)
        b->dist[b->q[i]] = -1;
    b->cnt = 0;
}

/* Chips within radius of src (forward distances, or with reverse=1
 * distances to src). */
static void ball_fill(const ftm_mesh *m, ball *b, int src, int reverse, int radius)
{
    ball_clear(b);
    b->dist[src] = 0;
    b->q[b->cnt++] = src;
    for (int h = 0; h < b->cnt; h++) {
        int u = b->q[h];
        if (b->dist[u] >= radius)
            continue;
        for (int d = 0; d < FTM_NDIRS; d++) {
            int v = ftm_mesh_neighbor(m, u, d);
            if (v < 0 || b->dist[v] >= 0)
                continue;
            if (!(reverse ? ftm_mesh_link_live(m, v, ftm_dir_opposite(d))
                          : ftm_mesh_link_live(m, u, d)))
                continue;
            b->dist[v] = b->dist[u] + 1;
            b->q[b->cnt++] = v;
        }
    }
}

/* Exact hop distance a -> b: one hop if the link is live, else a small
 * BFS ball around a, else a full BFS. */
static int edge_len(rt_ws *w, ball *near, int a, int b)
{
    int d = ftm_mesh_dir_to(w->m, a, b);
    if (d >= 0 && ftm_mesh_link_live(w->m, a, d))
        return 1;
    ball_fill(w->m, near, a, 0, 2 * BALL);
    int r = near->dist[b];
    return r >= 0 ? r : rt_dist(w, a, b);
}

/* Moves chip s to the best place near it; 1 if the ring got shorter. */
static int or_opt(rt_ws *w, ball *bs_in, ball *bs_out, ball *near, int s)
{
    int p = w->prv[s], q = w->nxt[s];
    if (q == p || w->nxt[q] == p)
        return 0; /* ring of three or fewer chips */
    int dpq = edge_len(w, near, p, q);
    if (dpq < 0)
        return 0;
    int g1 = w->len[p] + w->len[s] - dpq;
    ball_fill(w->m, bs_in, s, 1, BALL);
    ball_fill(w->m, bs_out, s, 0, BALL);
    int bx = -1, bgain = 0;
    for (int i = 1; i < bs_in->cnt; i++) {
        int x = bs_in->q[i], y = w->nxt[x];
        if (x == p || y == s || bs_out->dist[y] < 0)
            continue;
        int gain = g1 - (bs_in->dist[x] + bs_out->dist[y] - w->len[x]);
        if (gain > bgain) {
            bgain = gain;
            bx = x;
        }
    }
    if (bx < 0)
        return 0;
    int by = w->nxt[bx];
    w->nxt[p] = q;
    w->prv[q] = p;
    w->len[p] = dpq;
    w->len[bx] = bs_in->dist[bx];
    w->len[s] = bs_out->dist[by];
    w->nxt[bx] = s;
    w->prv[s] = bx;
    w->nxt[s] = by;
    w->prv[by] = s;
    return 1;
}

/* Exact change of hops when the ring part b .. c is walked backwards. */
static int reverse_delta(rt_ws *w, ball *near, int b, int c)
{
    int delta = 0;
    for (int u = b; u != c; u = w->nxt[u])
        delta += edge_len(w, near, w->nxt[u], u) - w->len[u];
    return delta;
}

/* 2-opt on detour edge a -> b: a -> c, (c .. b backwards), b -> e, where
 * c -> e is another ring edge; 1 if the ring got shorter. */
static int two_opt(rt_ws *w, ball *ba, ball *bb, ball *near, int *seg, int a)
{
    int b = w->nxt[a];
    ball_fill(w->m, ba, a, 0, BALL);
    ball_fill(w->m, bb, b, 0, BALL);
    for (int i = 1; i < ba->cnt; i++) {
        int c = ba->q[i], e = w->nxt[c];
        if (c == b || e == a || bb->dist[e] < 0)
            continue;
        int gain = w->len[a] + w->len[c] - ba->dist[c] - bb->dist[e];
        if (gain <= 0)
            continue;
        int dac = ba->dist[c], dbe = bb->dist[e];
        if (gain - reverse_delta(w, near, b, c) <= 0)
            continue;
        int k = 0;
        for (int u = b; u != e; u = w->nxt[u])
            seg[k++] = u;
        /* seg = b .. c; new order a, c, ..., b, e. Lengths first (they
         * read the old links), then the links. */
        int *nl = w->db;
        for (int j = k - 1; j > 0; j--)
            nl[j] = edge_len(w, near, seg[j], seg[j - 1]);
        w->len[a] = dac;
        for (int j = k - 1; j > 0; j--)
            w->len[seg[j]] = nl[j];
        w->len[b] = dbe;
        w->nxt[a] = c;
        w->prv[c] = a;
        for (int j = k - 1; j > 0; j--) {
            w->nxt[seg[j]] = seg[j - 1];
            w->prv[seg[j - 1]] = seg[j];
        }
        w->nxt[b] = e;
        w->prv[e] = b;
        return 1;
    }
    return 0;
}

int rt_improve(rt_ws *w)
{
    int n = w->n;
    int *buf = malloc(sizeof(int) * 8 * (size_t)n);
    if (!buf) /* skipping the pass would give another ring: fail instead */
        return FTM_ENOMEM;
    ball b1 = { buf, buf + n, 0 }, b2 = { buf + 2 * n, buf + 3 * n, 0 };
    ball b3 = { buf + 4 * n, buf + 5 * n, 0 };
    int *seg = buf + 6 * n, *cand = buf + 7 * n;
    for (int i = 0; i < 6 * n; i++)
        buf[i] = -1;
    for (int round = 0; round < ROUNDS; round++) {
        /* Candidates: ends of detour edges and their neighbours, in id order. */
        int nc = 0;
        for (int x = 0; x < n; x++) {
            if (w->cyc[x] < 0)
                continue;
            int near = w->len[x] > 1 || w->len[w->prv[x]] > 1;
            for (int d = 0; d < FTM_NDIRS && !near; d++) {
                int y = ftm_mesh_neighbor(w->m, x, d);
                near = y >= 0 && w->cyc[y] >= 0 && (w->len[y] > 1 || w->len[w->prv[y]] > 1);
            }
            if (near)
                cand[nc++] = x;
        }
        int improved = 0;
        for (int i = 0; i < nc; i++) {
            int x = cand[i];
            if (w->len[x] > 1 && two_opt(w, &b1, &b2, &b3, seg, x))
                improved = 1;
            else if (or_opt(w, &b1, &b2, &b3, x))
                improved = 1;
        }
        if (!improved)
            break;
    }
    free(buf);
    return 0;
}
