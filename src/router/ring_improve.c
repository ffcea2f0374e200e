/* Local improvement of a built cycle: or-opt (move one chip elsewhere) and
 * 2-opt (swap two edges, reversing the part between them), both from the
 * travelling-salesman toolbox (Lin 1965; Or 1976), with hop distances over
 * live links as the edge cost. Only moves near detour edges are tried, with
 * distances from BFS balls of small radius, so a pass costs little even on
 * 64x64; a move is applied only when it strictly lowers the total hops, so
 * the passes end. Then pair_detours() cancels detours far apart (scattered
 * dead chips) by walking one loose end of the cut ring to a partner; see
 * below. */
#include "router_int.h"
#include "ftmesh/error.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define BALL 4      /* radius of the BFS balls searched for moves */
#define ROUNDS 64   /* improvement rounds at most */
#define STUCK 8     /* pairing walk: moves without getting closer, then */
#define SWAPS 8     /* swap which loose end moves, at most this often */

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
static int edge_len(rtr_ws *w, ball *near, int a, int b)
{
    int d = ftm_mesh_dir_to(w->m, a, b);
    if (d >= 0 && ftm_mesh_link_live(w->m, a, d))
        return 1;
    ball_fill(w->m, near, a, 0, 2 * BALL);
    int r = near->dist[b];
    return r >= 0 ? r : rtr_dist(w, a, b);
}

/* Moves chip s to the best place near it; 1 if the ring got shorter. */
static int or_opt(rtr_ws *w, ball *bs_in, ball *bs_out, ball *near, int s)
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
static int reverse_delta(rtr_ws *w, ball *near, int b, int c)
{
    int delta = 0;
    for (int u = b; u != c; u = w->nxt[u])
        delta += edge_len(w, near, w->nxt[u], u) - w->len[u];
    return delta;
}

/* Applies the 2-opt a -> c, (c .. b backwards), b -> e where b = nxt[a],
 * e = nxt[c]; dac and dbe are the new edges' hop counts. */
static void apply_2opt(rtr_ws *w, ball *near, int *seg, int a, int c, int dac, int dbe)
{
    int b = w->nxt[a], e = w->nxt[c];
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
}

/* 2-opt on detour edge a -> b: a -> c, (c .. b backwards), b -> e, where
 * c -> e is another ring edge; 1 if the ring got shorter. */
static int two_opt(rtr_ws *w, ball *ba, ball *bb, ball *near, int *seg, int a)
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
        apply_2opt(w, near, seg, a, c, dac, dbe);
        return 1;
    }
    return 0;
}

/* ---- pairing detours of opposite colour ------------------------------
 *
 * On a bipartite grid (checker colour (row + col) % 2) a ring edge of even
 * hop count joins two chips of one colour; call it a detour of that colour.
 * A ring needs at least |black - white| of them, and two detours of
 * opposite colour side by side (a -> b black, c -> e white, a ~ c, b ~ e)
 * cancel: the 2-opt a -> c, b -> e saves both. Scattered dead chips leave
 * detours of both colours far apart, where no improving move sees them.
 * So a detour walks to a partner: pair_walk() cuts the ring there and
 * moves one loose end by Posa rotations until it cancels a detour of the
 * other colour, then on until it is next to the other loose end. */

static int colour(const ftm_mesh *m, int x)
{
    return (ftm_mesh_row(m, x) + ftm_mesh_col(m, x)) & 1;
}

static int bipartite(const ftm_mesh *m)
{
    if (!m->torus)
        return 1;
    return (m->rows < 3 || m->rows % 2 == 0) && (m->cols < 3 || m->cols % 2 == 0);
}

static int is_detour(const rtr_ws *w, int x, int k)
{
    return w->cyc[x] >= 0 && w->len[x] >= 2 && !(w->len[x] & 1) && colour(w->m, x) == k;
}

/* field[x] = hops from the nearest end of a detour of colour k (INT_MAX/4
 * where none reaches); returns the number of such detours. */
static int build_field(rtr_ws *w, int k, int *field, int *queue)
{
    const ftm_mesh *m = w->m;
    int qn = 0, cnt = 0;
    for (int x = 0; x < w->n; x++)
        field[x] = INT_MAX / 4;
    for (int x = 0; x < w->n; x++)
        if (is_detour(w, x, k)) {
            cnt++;
            int ends[2] = { x, w->nxt[x] };
            for (int j = 0; j < 2; j++)
                if (field[ends[j]]) {
                    field[ends[j]] = 0;
                    queue[qn++] = ends[j];
                }
        }
    for (int h = 0; h < qn; h++) {
        int u = queue[h];
        for (int d = 0; d < FTM_NDIRS; d++) {
            int v = ftm_mesh_neighbor(m, u, d);
            if (v < 0 || m->chip_dead[v] || field[v] <= field[u] + 1 ||
                !ftm_mesh_link_live(m, v, ftm_dir_opposite(d)))
                continue;
            field[v] = field[u] + 1;
            queue[qn++] = v;
        }
    }
    return cnt;
}

/* 2-opt on an undirected cycle: drops u1 -> nxt[u1] and u2 -> nxt[u2],
 * links u1 - u2 (l1 hops) and nxt[u1] - nxt[u2] (l2 hops). Reverses the
 * shorter of the two parts (both are walked side by side), which is fine
 * because links are live both ways here, so a reversed edge keeps its
 * length. */
static void twoopt_sym(rtr_ws *w, int u1, int u2, int l1, int l2)
{
    int v1 = w->nxt[u1], v2 = w->nxt[u2];
    int p = v1, q = v2;
    while (p != u2 && q != u1) {
        p = w->nxt[p];
        q = w->nxt[q];
    }
    if (p != u2) { /* v2 .. u1 is the shorter part: swap the roles */
        int t = u1;
        u1 = u2;
        u2 = t;
        t = v1;
        v1 = v2;
        v2 = t;
    }
    /* Reverse v1 .. u2 into u1, u2, ..., v1, v2: each chip's new edge goes
     * to its old predecessor, as long as the old edge into it. */
    int lin = 0;
    for (int x = v1;;) {
        int onx = w->nxt[x], olen = w->len[x];
        w->nxt[x] = w->prv[x];
        w->prv[x] = onx;
        w->len[x] = lin;
        if (x == u2)
            break;
        lin = olen;
        x = onx;
    }
    w->nxt[u1] = u2;
    w->prv[u2] = u1;
    w->len[u1] = l1;
    w->nxt[v1] = v2;
    w->prv[v2] = v1;
    w->len[v1] = l2;
}

/* One pairing walk: the ring's scratch, and where the walk stands. */
typedef struct pair_st {
    rtr_ws *w;
    const int *pot;     /* distance field the moving end descends */
    int *field2;        /* [n] distance to the fixed end (phase 2) */
    int *queue, *seen;  /* BFS queue; seen[x] == st: visited this leg */
    int *stamp;         /* the caller's stamp counter for seen */
    int st;
    int f, mv;          /* the fixed and the moving loose end */
    int phase2;         /* walking toward f (after a cancel, or odd) */
    int target;         /* hops to close the ring with in phase 2 */
    int best, since, swaps, gain;
} pair_st;

/* Phase 2: the field is the distance to the fixed end f. */
static void toward_fixed(pair_st *ps)
{
    ftm_mesh_bfs(ps->w->m, ps->f, 0, ps->field2, ps->queue);
    ps->pot = ps->field2;
    ps->st = ++*ps->stamp;
    ps->seen[ps->mv] = ps->st;
}

/* The best 2-opt move of the moving end: a cancelling edge at once, else
 * the one-hop edge whose new end is nearest (by pot) and not yet seen.
 * *bx the chip, *bl the dropped edge's length; returns 1 for a cancel,
 * 0 otherwise (*bx < 0: no move). */
static int pick_move(const pair_st *ps, int tail, int k, int *bx, int *bl)
{
    const rtr_ws *w = ps->w;
    const ftm_mesh *m = w->m;
    int bpot = INT_MAX;
    *bx = -1;
    *bl = 0;
    for (int d = 0; d < FTM_NDIRS; d++) {
        int x = ftm_mesh_neighbor(m, ps->mv, d);
        if (x < 0 || x == ps->f || w->cyc[x] < 0 || !ftm_mesh_link_live(m, ps->mv, d))
            continue;
        int e = tail ? x : w->prv[x]; /* dropped edge e -> nxt[e] */
        int y = tail ? w->nxt[x] : w->prv[x];
        if (y == ps->mv)
            continue;
        int l = w->len[e];
        if ((!ps->phase2 && !(l & 1) && colour(m, x) != k) || (ps->phase2 && l > 1)) {
            *bx = x;
            *bl = l;
            return 1;
        }
        if (l == 1 && ps->seen[y] != ps->st && ps->pot[y] < bpot) {
            *bx = x;
            bpot = ps->pot[y];
            *bl = 1;
        }
    }
    return 0;
}

/* One step of the walk; 0 to go on, 1 when it cannot move. */
static int walk_step(pair_st *ps, int k)
{
    rtr_ws *w = ps->w;
    if (ps->phase2 && ps->pot[ps->mv] < ps->best) {
        ps->best = ps->pot[ps->mv];
        ps->since = 0;
    } else if (ps->phase2 && ++ps->since > STUCK && ps->swaps < SWAPS) {
        /* this end makes no headway: move the other one instead */
        int t = ps->f;
        ps->f = ps->mv;
        ps->mv = t;
        ps->swaps++;
        ftm_mesh_bfs(w->m, ps->f, 0, ps->field2, ps->queue);
        ps->st = ++*ps->stamp;
        ps->seen[ps->mv] = ps->st;
        ps->best = ps->pot[ps->mv];
        ps->since = 0;
    }
    int tail = w->nxt[ps->mv] == ps->f; /* mv -> f is the open edge */
    int bx, bl, cancel = pick_move(ps, tail, k, &bx, &bl);
    if (bx < 0 && ps->phase2 && ps->swaps < SWAPS) {
        ps->since = STUCK; /* swap ends on the next step */
        return 0;
    }
    if (bx < 0)
        return 1;
    int y = tail ? w->nxt[bx] : w->prv[bx];
    if (tail)
        twoopt_sym(w, ps->mv, bx, 1, 0);
    else
        twoopt_sym(w, ps->f, w->prv[bx], 0, 1);
    /* the open edge f - y: its length is set when the walk ends */
    ps->gain += bl - 1;
    ps->mv = y;
    ps->seen[ps->mv] = ps->st;
    if (cancel) {
        ps->phase2 = 1;
        ps->target = colour(w->m, ps->mv) == colour(w->m, ps->f) ? 2 : 1;
        ps->best = INT_MAX;
        toward_fixed(ps);
    }
    return 0;
}

/* Moves the loose end of the cut ring toward a partner. The ring is cut
 * at one detour edge; what is left is a path over every chip from the
 * fixed end f to the moving end m, and Posa's rotation (L. Posa,
 * "Hamiltonian circuits in random graphs", Discrete Math. 14, 1976) moves
 * m: for a neighbour x of m, drop the path edge from x toward m and link
 * m - x (a 2-opt). With a one-hop edge dropped this costs nothing; dropping a
 * detour of the other colour saves its extra hop and leaves the ends of
 * opposite colours, which can then be walked next to each other (greedy
 * down the BFS distance to the fixed end; when one end makes no headway
 * the other moves). There, dropping any other detour is taken too (a
 * leftover odd one, say). The walk is kept only if the closed ring is
 * shorter and its new edge no longer than the cut one, else everything is
 * undone, so deterministic and never worse. */
static int pair_walk(rtr_ws *w, const int *field, int *field2, int *queue, int *seen,
                     int *stamp, int *save, int a, int head)
{
    const ftm_mesh *m = w->m;
    int n = w->n, open0 = w->len[a];
    pair_st ps = { .w = w, .pot = field, .field2 = field2, .queue = queue, .seen = seen,
                   .stamp = stamp, .f = head ? a : w->nxt[a], .mv = head ? w->nxt[a] : a,
                   .phase2 = open0 & 1, /* odd detour: ends already of opposite colour */
                   .target = 1, .best = INT_MAX };
    int k = colour(m, ps.mv);
    memcpy(save, w->nxt, sizeof(int) * (size_t)n);
    memcpy(save + n, w->prv, sizeof(int) * (size_t)n);
    memcpy(save + 2 * n, w->len, sizeof(int) * (size_t)n);
    if (ps.phase2) {
        ftm_mesh_bfs(m, ps.f, 0, field2, queue);
        ps.pot = field2;
    }
    ps.st = ++*stamp;
    seen[ps.mv] = ps.st;
    int limit = 2 * (m->rows + m->cols) + 16;
    for (int step = 0; step < limit && !(ps.phase2 && ps.pot[ps.mv] <= ps.target); step++)
        if (walk_step(&ps, k))
            break;
    int close = ps.phase2 ? field2[ps.mv] : -1;
    if (close > 0 && close <= open0 && close - ps.gain < open0) {
        int t = w->nxt[ps.mv] == ps.f ? ps.mv : ps.f;
        w->len[t] = close;
        return 1;
    }
    memcpy(w->nxt, save, sizeof(int) * (size_t)n);
    memcpy(w->prv, save + n, sizeof(int) * (size_t)n);
    memcpy(w->len, save + 2 * n, sizeof(int) * (size_t)n);
    return 0;
}

/* 1 when every live link is live both ways (the pairing walk assumes a
 * reversed edge keeps its length). */
static int symmetric(const ftm_mesh *m)
{
    for (int x = 0; x < m->nchips; x++)
        for (int d = 0; d < FTM_NDIRS && !m->chip_dead[x]; d++) {
            int y = ftm_mesh_neighbor(m, x, d);
            if (y >= 0 && !m->chip_dead[y] &&
                ftm_mesh_link_live(m, x, d) != ftm_mesh_link_live(m, y, ftm_dir_opposite(d)))
                return 0;
        }
    return 1;
}

/* Cancels detours: walks each one to a partner of the other colour (odd
 * ones toward their own other end); 1 if the ring got shorter. */
static int pair_detours(rtr_ws *w, int *field, int *queue, int *seen, int *save)
{
    const ftm_mesh *m = w->m;
    if (!bipartite(m) || !symmetric(m))
        return 0;
    int n = w->n, any = 0, stamp = 0;
    int *f0 = field, *f1 = field + n, *f2 = field + 2 * n;
    for (int x = 0; x < n; x++)
        seen[x] = 0;
    for (int round = 0; round < ROUNDS; round++) {
        int progress = 0;
        build_field(w, 0, f0, queue);
        build_field(w, 1, f1, queue);
        for (int x = 0; x < n; x++) {
            if (w->cyc[x] < 0 || w->len[x] < 2)
                continue;
            const int *fo = colour(m, x) ? f0 : f1;
            if (!(w->len[x] & 1) && fo[x] == INT_MAX / 4)
                continue; /* no partner of the other colour left */
            if (!pair_walk(w, fo, f2, queue, seen, &stamp, save, x, 0) &&
                !pair_walk(w, fo, f2, queue, seen, &stamp, save, x, 1))
                continue;
            progress = 1;
            build_field(w, 0, f0, queue);
            build_field(w, 1, f1, queue);
        }
        if (!progress)
            break;
        any = 1;
    }
    return any;
}

/* Rounds of 2-opt / or-opt near detours until none improves. */
static void local_rounds(rtr_ws *w, ball *b1, ball *b2, ball *b3, int *seg, int *cand)
{
    int n = w->n;
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
            if (w->len[x] > 1 && two_opt(w, b1, b2, b3, seg, x))
                improved = 1;
            else if (or_opt(w, b1, b2, b3, x))
                improved = 1;
        }
        if (!improved)
            break;
    }
}

int rtr_improve(rtr_ws *w)
{
    int n = w->n;
    int *buf = malloc(sizeof(int) * 16 * (size_t)n);
    if (!buf) /* skipping the pass would give another ring: fail instead */
        return FTM_ENOMEM;
    ball b1 = { buf, buf + n, 0 }, b2 = { buf + 2 * n, buf + 3 * n, 0 };
    ball b3 = { buf + 4 * n, buf + 5 * n, 0 };
    int *seg = buf + 6 * n, *cand = buf + 7 * n;
    int *field = buf + 8 * n, *queue = buf + 11 * n, *seen = buf + 12 * n;
    int *save = buf + 13 * n;
    for (int i = 0; i < 6 * n; i++)
        buf[i] = -1;
    local_rounds(w, &b1, &b2, &b3, seg, cand);
    if (pair_detours(w, field, queue, seen, save))
        local_rounds(w, &b1, &b2, &b3, seg, cand);
    free(buf);
    return 0;
}
