/* A lower bound on the modeled time of any allreduce on a faulty mesh.
 *
 * Setting. N' live chips each hold M bytes; at the end every live chip
 * holds the elementwise sum over all of them. The cost model (costmodel.h)
 * charges a transfer of len bytes over a route of h >= 1 live directed
 * links h * hop_s + len / link_Bps and holds EVERY link of the route for
 * that whole time; a link carries one transfer at a time; every transfer
 * arrives by the schedule's end T. Call a transfer that carries an element
 * a "call" for that element; its content is a partial sum (a sum of some
 * chips' inputs), as the model's receives copy or add.
 *
 * (L) Link bytes. Per element the calls form a one-way gossip: each call
 *     passes the sender's partial sum to the receiver, and every chip must
 *     end knowing every input. One-way gossip among n parties needs at
 *     least 2(n - 1) calls (Harary and Schwenk 1974; the first chip to
 *     know everything needs n - 1 calls before it, every other chip one
 *     after). Each call uses >= 1 link, so the links carry >= 2(N'-1) M
 *     bytes. Let U be the set of directed links a schedule uses (|U| <= D',
 *     the live directed links: a link dead one way counts once). Each used
 *     link carries >= 1 transfer and is busy bytes_l / B + (its transfers)
 *     * hop_s at least, and at most T. Summing over U:
 *        |U| T >= 2(N'-1) M / B + |U| hop_s,
 *     so T >= 2(N'-1) M / (D' B) + hop_s.
 * (P) Partitions (Nash-Williams/Tutte). Contract a partition P of the live
 *     chips into parts: the calls crossing parts form a gossip among |P|
 *     parties, so the directed links between parts, D(P) of them, carry
 *     >= 2(|P| - 1) M bytes, and by the same sum
 *        T >= 2(|P| - 1) M / (D(P) B) + hop_s.
 *     All singletons give (L). A two-part split (S, rest) gives more per
 *     direction: every chip outside S needs S's inputs, so the c links
 *     from S out carry >= M: T >= M / (c B) + hop_s (and likewise into S).
 *     Evaluated here: every single chip (its in- and out-degree), every
 *     bridge of the live graph (a link whose removal disconnects it: c = 1)
 *     and, per bridge, the partition into one side's single chips plus the
 *     other side as one part. Any partition left out only weakens the
 *     bound, never invalidates it. A cut of c >= 3 links cannot beat (L)
 *     on a mesh (M / 3B <= 2(N'-1) M / (4 N' B) is false only for N' < 3,
 *     where every split is a single chip, evaluated anyway).
 * (D) Latency. The chip w farthest from some chip u (distance = the live
 *     graph's directed diameter, diam) needs u's input: a chain of calls
 *     u -> ... -> w, each sent after the previous one arrived (a step sends
 *     at its start, after the step that received ended), whose routes sum
 *     to >= diam hops. So T >= diam * hop_s.
 * The bound is the largest of these. (D) is not added to (L): a schedule
 * can keep every link busy from t = 0 to T with calls of different
 * elements (the pipelined trees do), so no idle time of diam hops is
 * forced on the links; only the hop_s each used link pays is (in L).
 * Reductions (len / hbm_Bps after arrival) are not added either: a receive
 * whose data arrived before its step starts pays nothing more.
 *
 * The diameter is exact when all-sources BFS is cheap (up to about 2^24
 * link visits), else the largest eccentricity over a fixed sample of
 * sources: a lower bound on it, which keeps the bound valid.
 */
#include "ftmesh/costmodel.h"
#include "ftmesh/error.h"

#include <stdlib.h>
#include <string.h>

/* The live directed graph in compressed rows (out-links), with the
 * in- and out-degree of every chip. */
typedef struct bgraph {
    int n;             /* chips (dead ones have no links) */
    int *first, *to;   /* out-links of c: to[first[c] .. first[c+1]) */
    int *din;          /* in-degree */
    int live, links;   /* N', D' */
} bgraph;

static void bgraph_free(bgraph *g)
{
    free(g->first);
    free(g->to);
    free(g->din);
}

static int bgraph_build(const ftm_mesh *m, bgraph *g)
{
    memset(g, 0, sizeof *g);
    g->n = m->nchips;
    g->first = calloc((size_t)g->n + 1, sizeof *g->first);
    g->to = malloc(sizeof *g->to * (size_t)g->n * FTM_NDIRS);
    g->din = calloc((size_t)g->n, sizeof *g->din);
    if (!g->first || !g->to || !g->din)
        return FTM_ENOMEM;
    for (int c = 0; c < g->n; c++) {
        g->first[c] = g->links;
        g->live += !m->chip_dead[c];
        for (int d = 0; d < FTM_NDIRS; d++)
            if (ftm_mesh_link_live(m, c, d)) {
                int nb = ftm_mesh_neighbor(m, c, d);
                g->to[g->links++] = nb;
                g->din[nb]++;
            }
    }
    g->first[g->n] = g->links;
    return 0;
}

/* Eccentricity (out) of src by BFS; dist and queue are scratch of n. */
static int bfs_ecc(const bgraph *g, int src, int *dist, int *queue)
{
    for (int i = 0; i < g->n; i++)
        dist[i] = -1;
    int head = 0, tail = 0, ecc = 0;
    dist[src] = 0;
    queue[tail++] = src;
    while (head < tail) {
        int c = queue[head++];
        ecc = dist[c];
        for (int k = g->first[c]; k < g->first[c + 1]; k++)
            if (dist[g->to[k]] < 0) {
                dist[g->to[k]] = dist[c] + 1;
                queue[tail++] = g->to[k];
            }
    }
    return ecc;
}

/* The directed diameter (or, on big meshes, a lower bound on it). */
static int diameter(const bgraph *g, int *scratch)
{
    long budget = 1L << 24, per = (long)g->links + g->n;
    int stride = per * g->n <= budget ? 1 : (int)(per * g->n / budget) + 1;
    int diam = 0;
    for (int c = 0; c < g->n; c += stride)
        if (g->first[c + 1] > g->first[c] || g->din[c]) {
            int e = bfs_ecc(g, c, scratch, scratch + g->n);
            diam = e > diam ? e : diam;
        }
    return diam;
}

/* Undirected neighbour of live chip a in direction d (a link live at
 * least one way), or -1. */
static int und_nb(const ftm_mesh *m, int a, int d)
{
    int nb = ftm_mesh_neighbor(m, a, d);
    if (nb < 0 || m->chip_dead[a] || m->chip_dead[nb])
        return -1;
    return ftm_mesh_link_live(m, a, d) || ftm_mesh_link_live(m, nb, ftm_dir_opposite(d)) ? nb : -1;
}

/* Per-bridge figures, gathered by the depth-first search below. */
typedef struct bwalk {
    const ftm_mesh *m;
    const bgraph *g;
    int *disc, *low, *size, *links, *it, *stack, *pdir;
    double best;        /* the largest partition bound found, in M / B */
    int bridges;
} bwalk;

/* The bounds of bridge (parent, c): c's subtree S of size k with dl
 * directed links inside, the rest of the live chips on the other side. */
static void bridge_found(bwalk *w, int k, int dl)
{
    const bgraph *g = w->g;
    int kr = g->live - k, dr = g->links - dl - 2;
    double side = 2.0 * k / (dl + 2), rest = 2.0 * kr / (dr + 2), cut = 1.0;
    w->bridges++;
    if (cut > w->best) w->best = cut;
    if (side > w->best) w->best = side;
    if (rest > w->best) w->best = rest;
}

/* Tarjan's bridge search from root, iterative (meshes of 4096 chips). */
static void bridge_dfs(bwalk *w, int root, int *clock)
{
    int top = 0;
    w->stack[top++] = root;
    w->disc[root] = w->low[root] = ++*clock;
    w->pdir[root] = -1;
    while (top > 0) {
        int a = w->stack[top - 1];
        if (w->it[a] < FTM_NDIRS) {
            int d = w->it[a]++, nb = und_nb(w->m, a, d);
            if (nb < 0 || (w->pdir[a] >= 0 && d == ftm_dir_opposite(w->pdir[a]) &&
                           ftm_mesh_neighbor(w->m, a, d) == w->stack[top - 2]))
                continue;
            if (w->disc[nb]) {
                if (w->disc[nb] < w->low[a]) w->low[a] = w->disc[nb];
                continue;
            }
            w->disc[nb] = w->low[nb] = ++*clock;
            w->pdir[nb] = d;
            w->stack[top++] = nb;
            continue;
        }
        top--;
        w->size[a] += 1;
        w->links[a] += w->g->first[a + 1] - w->g->first[a];
        if (top == 0)
            break;
        int p = w->stack[top - 1];
        if (w->low[a] < w->low[p]) w->low[p] = w->low[a];
        if (w->low[a] > w->disc[p]) /* (p, a) is a bridge: a's subtree has 1 link out */
            bridge_found(w, w->size[a], w->links[a] - 1);
        w->size[p] += w->size[a];
        w->links[p] += w->links[a];
    }
}

/* The largest bridge-partition bound (P above), in units of M / B; 0
 * when the live graph has no bridge. */
static int bridge_bound(const ftm_mesh *m, const bgraph *g, double *best, int *nbridges)
{
    size_t n = (size_t)g->n;
    int *buf = calloc(7 * n, sizeof *buf);
    if (!buf)
        return FTM_ENOMEM;
    bwalk w = { .m = m, .g = g, .disc = buf, .low = buf + n, .size = buf + 2 * n,
                .links = buf + 3 * n, .it = buf + 4 * n, .stack = buf + 5 * n, .pdir = buf + 6 * n };
    int clock = 0;
    for (int c = 0; c < g->n; c++)
        if (!m->chip_dead[c] && !w.disc[c])
            bridge_dfs(&w, c, &clock);
    *best = w.best;
    *nbridges = w.bridges;
    free(buf);
    return 0;
}

/* The smallest in- or out-degree over live chips (the single-chip cuts). */
static int min_degree(const ftm_mesh *m, const bgraph *g)
{
    int best = FTM_NDIRS;
    for (int c = 0; c < g->n; c++) {
        if (m->chip_dead[c])
            continue;
        int out = g->first[c + 1] - g->first[c];
        if (out < best) best = out;
        if (g->din[c] < best) best = g->din[c];
    }
    return best;
}

/* Fills the parts of *out from the live graph (N' >= 2). */
static int bound_parts(const ftm_mesh *m, const bgraph *g, double mb, double hop,
                       ftm_cost_bound_parts *out)
{
    int *scratch = malloc(sizeof *scratch * 2 * (size_t)g->n);
    if (!scratch)
        return FTM_ENOMEM;
    out->diameter = diameter(g, scratch);
    free(scratch);
    double part = 0;
    int rc = bridge_bound(m, g, &part, &out->bridges);
    if (rc)
        return rc;
    out->min_degree = min_degree(m, g);
    double chip = 1.0 / out->min_degree;
    out->links_s = 2.0 * (g->live - 1) / g->links * mb + hop;
    out->cut_s = (part > chip ? part : chip) * mb + hop;
    out->latency_s = out->diameter * hop;
    out->time_s = out->links_s;
    out->binding = "links";
    if (out->cut_s > out->time_s) {
        out->time_s = out->cut_s;
        out->binding = "cut";
    }
    if (out->latency_s > out->time_s) {
        out->time_s = out->latency_s;
        out->binding = "latency";
    }
    return 0;
}

int ftm_cost_bound(const ftm_mesh *m, size_t bytes, ftm_red red, const ftm_cost_params *p,
                   ftm_cost_bound_parts *out)
{
    if (!out)
        return FTM_EINVAL;
    memset(out, 0, sizeof *out);
    out->binding = "none";
    if (!m || !p || p->link_Bps <= 0 || p->hbm_Bps <= 0 || p->hop_s < 0 ||
        (red != FTM_RED_COPY && red != FTM_RED_SUM_F32 && red != FTM_RED_SUM_I64))
        return FTM_EINVAL;
    int rc = ftm_mesh_check_connected(m, NULL, NULL);
    if (rc)
        return rc;
    bgraph g;
    rc = bgraph_build(m, &g);
    out->live_chips = g.live;
    out->live_links = g.links;
    if (!rc && g.live >= 2 && bytes > 0)
        rc = bound_parts(m, &g, (double)bytes / p->link_Bps, p->hop_s, out);
    bgraph_free(&g);
    return rc;
}
