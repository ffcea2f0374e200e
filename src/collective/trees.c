/* "trees": packed shortest-path spanning trees, reduce and broadcast
 * pipelined in chunks, no reduce-scatter/all-gather barrier.
 *
 * Why: every element must be reduced into some chip and broadcast back,
 * so it crosses 2(N'-1) links; with E' live links both ways the time is
 * at least (N'-1)M/(E'B). A set of spanning trees that loads every link
 * alike reaches that, and a hole only makes its neighbours leaves of
 * more trees (each still sends and receives about M over 3 links). The
 * 2-D schedules instead pay for a barrier between their phases next to
 * a hole (the chip beside it has 3 links for the same share).
 *
 * The buffer is split into K equal shares, one per tree (K: the tree
 * count that models fastest of a few, trees_pick.c); tree t is rooted
 * at a chip of a grid spread over the mesh and is a breadth-first
 * (shortest-path) tree of the live graph, so it is no deeper than the
 * root's eccentricity. Each chip picks, among its parents in the BFS
 * order, the one whose link the trees built so far use least (Blink's
 * multiplicative weights in their simplest form), rebuilt a few rounds
 * against the others' loads; then augmenting chains of moves between
 * BFS parents, and beside a hole a few chips hung one or two levels
 * deeper, bring links to at most ceil(K(N'-1)/E') trees where the live
 * graph allows it (beside a dead host; not where it funnels every tree
 * through one link), and the same chains keep each link's trees from
 * running mostly one way (trees_balance.c).
 *
 * Each share is cut into C chunks, and the steps are a list schedule:
 * in every step each directed link sends at most one chunk (one op: the
 * model charges a hop's latency per op on a link), the ready one that
 * holds up the longest chain (entry_rank). A chunk is ready to go up once every
 * child summed it in (in earlier steps; two children never sum the same
 * chunk into a chip in one step: the writes would race), and to go down
 * once the sender has it complete. Reduce and broadcast overlap: chunk c
 * is copied down while chunk c+1 is still summed up, and all K trees run
 * in the same steps:
 *
 *     one tree, C = 3, height 2 (no other tree on its links):
 *     step:          0   1   2   3   4   5
 *     leaf -> mid    c0  c1  c2                  summed into the parent
 *     mid  -> root       c0  c1  c2
 *     root -> mid            c0  c1  c2          copied to the child
 *     mid  -> leaf               c0  c1  c2
 *
 * Then justification passes (trees_just.c) schedule the same sends again,
 * as late and then as early as they can go, which shortens the drain.
 * With L trees on the busiest link the steps number about L C plus a
 * fill and drain of up to 2H (H: the depth; about H with entry_rank's
 * weights, about 2H/3 once justified), each about a hop's latency plus
 * a chunk M/(KC) (and its reduction at HBM speed when summed, unless
 * tr_up_chunks hides it): the
 * bandwidth term is L/K of M/B (the bound's 1/2 when balanced), plus the
 * fill and drain and the latency; C balances the two (trees_chunks.c:
 * tr_pick_chunks).
 * Every chip ends with the root's bits (the broadcast copies them), so
 * float results agree everywhere.
 */
#include "ftmesh/collective.h"
#include "ftmesh/costmodel.h"
#include "ftmesh/error.h"
#include "ftmesh/test_hooks.h"
#include "sched/sched_lib.h"
#include "trees_int.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>

#define TR_ROUNDS 2  /* rebuilds of every tree against the others' loads */
static const char *const PH_TREES = "trees";

static void tset_free(tset *T)
{
    free(T->nbr);
    free(T->root);
    free(T->par);
    free(T->dep);
    free(T->hgt);
    free(T->lfirst);
    free(T->ent);
    free(T->next);
    free(T->rdy);
    free(T->upidx);
    free(T->dnidx);
    free(T->last);
    free(T->pend);
    free(T->dnat);
    free(T->maxdep);
    free(T->load);
    free(T->dist);
    free(T->queue);
    free(T->route);
    free(T->rem);
    free(T->upm);
    free(T->ord);
    free(T->dnm);
    free(T->obase);
    free(T->ostep);
}

static int tset_alloc(tset *T, const ftm_mesh *m, int k, int nc)
{
    size_t n = (size_t)m->nchips, kn = (size_t)k * n;
    *T = (tset){ .n = m->nchips, .k = k, .nc = nc };
    T->nbr = malloc(4 * n * sizeof(int));
    T->root = malloc((size_t)k * sizeof(int));
    T->par = malloc(kn * sizeof(int));
    T->dep = malloc(kn * sizeof(int));
    T->hgt = malloc(kn * sizeof(int));
    T->lfirst = malloc((4 * n + 1) * sizeof(int));
    T->maxdep = malloc((size_t)k * sizeof(int));
    T->load = calloc(4 * n, sizeof(int));
    T->dist = malloc(n * sizeof(int));
    T->queue = malloc(n * sizeof(int));
    T->route = malloc(4 * n * sizeof(int));
    if (!T->nbr || !T->root || !T->par || !T->dep || !T->hgt || !T->lfirst || !T->maxdep ||
        !T->load || !T->dist || !T->queue || !T->route)
        return FTM_ENOMEM;
    for (size_t l = 0; l < 4 * n; l++) {
        int c = (int)(l / 4), d = (int)(l % 4), v = -1;
        T->nbr[l] = ftm_mesh_alive(m, c) && ftm_mesh_link_both(m, c, d, &v) ? v : -1;
        T->route[l] = -1;
    }
    return 0;
}

/* Roots on a grid of about k points spread over the mesh: the live chip
 * at or after each point (row-major), each chip once. */
static void pick_roots(tset *T, const ftm_mesh *m)
{
    int a = 1;
    while ((a + 1) * (a + 1) <= T->k)
        a++;
    for (int t = 0; t < T->k; t++) {
        int gr = t % a, gc = t / a, nb = (T->k + a - 1) / a;
        int r = (2 * gr + 1) * m->rows / (2 * a), c = (2 * gc + 1) * m->cols / (2 * nb);
        int x = r * m->cols + c;
        for (int i = 0; i < T->n; i++, x = (x + 1) % T->n) {
            int used = 0;
            for (int j = 0; j < t && !used; j++)
                used = T->root[j] == x;
            if (ftm_mesh_alive(m, x) && !used)
                break;
        }
        T->root[t] = x;
    }
}

/* Breadth-first order from root over the usable links: the number of
 * chips reached (dist -1 elsewhere). */
static int bfs(tset *T, int root)
{
    for (int c = 0; c < T->n; c++)
        T->dist[c] = -1;
    int head = 0, tail = 0;
    T->dist[root] = 0;
    T->queue[tail++] = root;
    while (head < tail) {
        int u = T->queue[head++];
        for (int d = 0; d < 4; d++) {
            int v = T->nbr[u * 4 + d];
            if (v >= 0 && T->dist[v] < 0) {
                T->dist[v] = T->dist[u] + 1;
                T->queue[tail++] = v;
            }
        }
    }
    return tail;
}

/* Adds (sign 1) or removes (-1) tree t's edges from the link loads. */
static void tree_load(tset *T, int t, int sign)
{
    const int *par = T->par + (size_t)t * T->n;
    for (int u = 0; u < T->n; u++)
        if (par[u] >= 0) {
            int v = T->nbr[u * 4 + par[u]];
            T->load[u * 4 + par[u]] += sign;
            T->load[v * 4 + ((par[u] + 2) % 4)] += sign;
        }
}

/* Ties between equally loaded parents broken by a fixed hash, different
 * per round, so that rebuilds do not repeat the same choices. */
static unsigned tie_hash(int u, int t, int round, int d)
{
    unsigned h = (unsigned)u * 2654435761u ^ (unsigned)(t + 1) * 40503u ^
                 (unsigned)(round + 1) * 2246822519u ^ (unsigned)d * 3266489917u;
    h ^= h >> 15;
    h *= 2246822519u;
    return h ^ (h >> 13);
}

/* Builds tree t over the BFS order (dist/queue, nreach chips): each chip's
 * parent is its least-loaded BFS parent (tr_balance sets the subtree
 * heights once the parents are final). */
static void tree_make(tset *T, int t, int nreach)
{
    int *par = T->par + (size_t)t * T->n, *dep = T->dep + (size_t)t * T->n;
    for (int c = 0; c < T->n; c++) {
        par[c] = -2;
        dep[c] = T->dist[c];
    }
    par[T->root[t]] = -1;
    for (int i = 1; i < nreach; i++) {
        int u = T->queue[i], best = -1;
        for (int d = 0; d < 4; d++) {
            int v = T->nbr[u * 4 + d];
            if (v >= 0 && T->dist[v] == T->dist[u] - 1 &&
                (best < 0 || T->load[u * 4 + d] < T->load[u * 4 + best] ||
                 (T->load[u * 4 + d] == T->load[u * 4 + best] && tie_hash(u, t, T->round, d) <
                  tie_hash(u, t, T->round, best))))
                best = d;
        }
        par[u] = best;
        T->load[u * 4 + best]++;
        T->load[T->nbr[u * 4 + best] * 4 + (best + 2) % 4]++;
    }
    T->maxdep[t] = T->dist[T->queue[nreach - 1]];
}

/* All trees, then TR_ROUNDS rebuilds of each against the others' loads.
 * FTM_ENOTSUP if some live chip is reachable only over one-way links. */
static int trees_make(tset *T, const ftm_mesh *m)
{
    int live = ftm_mesh_healthy_count(m);
    for (int r = 0; r <= TR_ROUNDS; r++)
        for (int t = 0; t < T->k; t++) {
            T->round = r;
            if (r)
                tree_load(T, t, -1);
            int got = bfs(T, T->root[t]);
            if (got != live)
                return FTM_ENOTSUP;
            tree_make(T, t, got);
        }
    return 0;
}

/* The one-hop route from u in direction d (made once). */
static int hop_route(ftm_sched *s, tset *T, int u, int d)
{
    return sched_hop_route(s, T->route, u, d, T->nbr[u * 4 + d]);
}

/* Chunk c of tree t, summed up (up) or copied down: elements [*f, *f +
 * *len). Up and down cut the share into ncu and nc chunks. */
static void chunk_range(const tset *T, size_t count, int t, int c, int up, size_t *f, size_t *len)
{
    size_t sf, sn;
    ftm_sched_block(count, T->k, t, &sf, &sn);
    ftm_sched_block(sn, up ? T->ncu : T->nc, c, f, len);
    *f += sf;
}

/* Per tree, chip and up chunk: the last step a child summed the chunk
 * into the chip (-1: none yet) and the children yet to; per tree, chip
 * and down chunk: the step the chip got the chunk from its parent (-1:
 * not yet). */
#define CELL(T, t, x, c, nch) (((size_t)(t) * (T)->n + (x)) * (size_t)(nch) + (c))
#define LAST(T, t, x, c) ((T)->last[CELL(T, t, x, c, (T)->ncu)])
#define PEND(T, t, x, c) ((T)->pend[CELL(T, t, x, c, (T)->ncu)])
#define DNAT(T, t, x, c) ((T)->dnat[CELL(T, t, x, c, (T)->nc)])

/* 1 when every child of u in tree t summed chunk c in before step st. */
static int children_in(const tset *T, int t, int u, int c, int st)
{
    return PEND(T, t, u, c) == 0 && LAST(T, t, u, c) < st;
}

/* 1 when root u of tree t holds down chunk c complete before step st:
 * every up chunk it overlaps summed in. */
static int root_has(const tset *T, int t, int u, int c, int st)
{
    int a, b;
    tr_overlap(T, t, 0, c, &a, &b);
    for (int i = a; i <= b; i++)
        if (!children_in(T, t, u, i, st))
            return 0;
    return 1;
}

/* The list schedule keeps, per entry, the step from which its next
 * chunk is ready (rdy), updated when that can change: when the entry
 * sends (its next chunk), when the last child sums a chunk into the
 * chip (its up entry), when the chip gets a chunk from its parent (its
 * children's down entries). An up chunk is ready once every child has
 * summed it in, in earlier steps; a down chunk once the sender has it
 * complete. The root's children are checked every step (root_has). */
static int up_ready_from(const tset *T, int t, int x, int c)
{
    return PEND(T, t, x, c) == 0 ? LAST(T, t, x, c) + 1 : INT_MAX;
}

static void set_ready(tset *T, int j)
{
    const tr_entry *e = &T->ent[j];
    int c = T->next[j];
    if (c >= tr_chunks(T, e->up))
        T->rdy[j] = INT_MAX;
    else if (e->up)
        T->rdy[j] = up_ready_from(T, e->t, e->x, c);
    else if (e->proot)
        T->rdy[j] = 0;
    else
        T->rdy[j] = DNAT(T, e->t, e->p, c) >= 0 ? DNAT(T, e->t, e->p, c) + 1 : INT_MAX;
}

/* Whether entry j (rdy[j] <= st) may send its next chunk c in step st:
 * no sibling sums chunk c into the same parent in this step (two sums
 * into one range in one step would race); from the root, the root holds
 * the chunk complete. */
static int entry_ready(const tset *T, int j, int c, int st)
{
    const tr_entry *e = &T->ent[j];
    if (e->up)
        return LAST(T, e->t, e->p, c) != st;
    return !e->proot || root_has(T, e->t, e->p, c, st);
}

/* After entry e sent chunk c in step st: the entries that may now be
 * ready (its parent's up entry, or its own children's down entries). */
static void sent(tset *T, const tr_entry *e, int c, int st)
{
    size_t tn = (size_t)e->t * T->n;
    if (e->up) {
        if (PEND(T, e->t, e->p, c) == 0 && T->par[tn + e->p] >= 0) {
            int j = T->upidx[tn + e->p];
            if (T->next[j] == c)
                T->rdy[j] = st + 1;
        }
        return;
    }
    int ch[4], n = tr_children(T, e->t, e->x, 0, ch);
    for (int i = 0; i < n; i++)
        if (T->next[ch[i]] == c)
            T->rdy[ch[i]] = st + 1;
}

/* How long a chain of steps entry e's chunk c holds up: its hops to the
 * tree's end, and the chunks behind it on the same edge, each weighted
 * TR_BEHIND steps: a chunk behind it waits on this link, shared by many
 * trees, for more than one step. Measured 1 to 20 on the 16x32, 32x32
 * and 64x64 tori: 1 (the plain chain length) leaves about 2H idle steps
 * on the busiest link, 6 about H/2 (-10% to -20% of the time). */
#define TR_BEHIND 6
/* Plus TR_CRIT tenths of a step for every chunk left on the busiest
 * link the chunk will still cross (up to its root and then down the
 * whole tree, or down its subtree): without it the busiest link idles
 * in the middle of the run while the links feeding it send other
 * trees' chunks first, and alone at the end. Measured 1 to 40: 4 is
 * no slower than none in any case of ftmesh sweep, and up to 2.4%
 * faster at ResNet-50 size (0.4% at BERT-large size). */
#define TR_CRIT 4
static int entry_rank(const tset *T, const tr_entry *e, int c)
{
    size_t i = (size_t)e->t * T->n + e->x;
    int hops = e->up ? T->dep[i] + T->maxdep[e->t] : T->hgt[i] + 1, crit = T->dnm[i];
    if (e->up) {
        int root = T->dnm[(size_t)e->t * T->n + T->root[e->t]];
        crit = T->upm[(size_t)e->t * T->n + e->p];
        crit = root > crit ? root : crit;
    }
    return 10 * (hops + TR_BEHIND * (tr_chunks(T, e->up) - 1 - c)) + TR_CRIT * crit;
}

/* Per tree and chip x: the most chunks left on one link of x's path up
 * to the root (upm; x's own link up included), and on one down link of
 * x's subtree (dnm). Over each tree's chips top-down (ord), then
 * bottom-up. */
static void crit_update(tset *T)
{
    for (int t = 0; t < T->k; t++) {
        const tr_node *o = T->ord + (size_t)t * T->n;
        int *up = T->upm + (size_t)t * T->n, *dn = T->dnm + (size_t)t * T->n;
        up[o[0].u] = dn[o[0].u] = 0;
        for (int h = 1; h < T->nord; h++) {
            int r = T->rem[o[h].lu];
            up[o[h].u] = up[o[h].pp] > r ? up[o[h].pp] : r;
            dn[o[h].u] = 0;
        }
        for (int h = T->nord - 1; h > 0; h--) {
            int r = T->rem[o[h].ld], m = dn[o[h].u] > r ? dn[o[h].u] : r;
            dn[o[h].pp] = m > dn[o[h].pp] ? m : dn[o[h].pp];
        }
    }
}

/* Each tree's chips top-down, with their edges' links (crit_update).
 * Every tree spans the same live chips, so each has nord of them. */
static int make_order(tset *T)
{
    T->ord = malloc((size_t)T->k * T->n * sizeof *T->ord);
    if (!T->ord)
        return FTM_ENOMEM;
    for (int t = 0; t < T->k; t++) {
        const int *par = T->par + (size_t)t * T->n;
        tr_node *o = T->ord + (size_t)t * T->n;
        int got = 1;
        o[0] = (tr_node){ T->root[t], -1, -1, -1 };
        for (int h = 0; h < got; h++)
            for (int d = 0, u = o[h].u; d < 4; d++) {
                int v = T->nbr[u * 4 + d];
                if (v >= 0 && par[v] == (d + 2) % 4)
                    o[got++] = (tr_node){ v, u, v * 4 + par[v], u * 4 + d };
            }
        T->nord = got;
    }
    return 0;
}

/* One step: every directed link sends at most one chunk, the ready one
 * with the longest chain left (its step kept in ostep). Returns the
 * sends made. */
static int sched_step(tset *T, int st)
{
    int made = 0;
    for (int l = 0; l < 4 * T->n; l++) {
        int best = -1, br = 0;
        if (T->rem[l] == 0)
            continue;
        for (int j = T->lfirst[l]; j < T->lfirst[l + 1]; j++) {
            int c = T->next[j];
            if (T->rdy[j] > st || !entry_ready(T, j, c, st))
                continue;
            int r = entry_rank(T, &T->ent[j], c);
            if (best < 0 || r > br) {
                best = j;
                br = r;
            }
        }
        if (best < 0)
            continue;
        const tr_entry *e = &T->ent[best];
        int c = T->next[best]++;
        T->ostep[T->obase[best] + c] = st;
        T->rem[l]--;
        if (e->up) {
            LAST(T, e->t, e->p, c) = st;
            PEND(T, e->t, e->p, c)--;
        } else
            DNAT(T, e->t, e->x, c) = st;
        set_ready(T, best);
        sent(T, e, c, st);
        made++;
    }
    return made;
}

/* The link entries: per directed link, the trees sending up it (child x
 * to its parent) and down it (to child x). */
static int make_entries(tset *T)
{
    size_t ne = 0;
    for (int l = 0; l <= 4 * T->n; l++)
        T->lfirst[l] = 0;
    for (int t = 0; t < T->k; t++)
        for (int x = 0; x < T->n; x++) {
            int d = T->par[(size_t)t * T->n + x];
            if (d >= 0) {
                T->lfirst[x * 4 + d + 1]++;
                T->lfirst[T->nbr[x * 4 + d] * 4 + (d + 2) % 4 + 1]++;
                ne += 2;
            }
        }
    for (int l = 0; l < 4 * T->n; l++)
        T->lfirst[l + 1] += T->lfirst[l];
    T->ent = malloc((ne ? ne : 1) * sizeof *T->ent);
    T->next = calloc(ne ? ne : 1, sizeof(int));
    T->rdy = malloc((ne ? ne : 1) * sizeof(int));
    T->upidx = malloc((size_t)T->k * T->n * sizeof(int));
    T->dnidx = malloc((size_t)T->k * T->n * sizeof(int));
    int *fill = malloc(4 * (size_t)T->n * sizeof(int));
    if (!T->ent || !T->next || !T->rdy || !T->upidx || !T->dnidx || !fill) {
        free(fill);
        return FTM_ENOMEM;
    }
    for (int l = 0; l < 4 * T->n; l++)
        fill[l] = T->lfirst[l];
    for (int t = 0; t < T->k; t++)
        for (int x = 0; x < T->n; x++) {
            int d = T->par[(size_t)t * T->n + x];
            if (d >= 0) {
                int p = T->nbr[x * 4 + d], pr = T->par[(size_t)t * T->n + p] == -1;
                int ju = fill[x * 4 + d]++, jd = fill[p * 4 + (d + 2) % 4]++;
                T->ent[ju] = (tr_entry){ t, x, 1, p, pr };
                T->ent[jd] = (tr_entry){ t, x, 0, p, pr };
                T->upidx[(size_t)t * T->n + x] = ju;
                T->dnidx[(size_t)t * T->n + x] = jd;
            }
        }
    free(fill);
    T->obase = malloc((ne + 1) * sizeof(int));
    if (!T->obase)
        return FTM_ENOMEM;
    T->obase[0] = 0;
    for (size_t j = 0; j < ne; j++)
        T->obase[j + 1] = T->obase[j] + tr_chunks(T, T->ent[j].up);
    T->ostep = malloc(((size_t)T->obase[ne] + 1) * sizeof(int));
    return T->ostep ? 0 : FTM_ENOMEM;
}

/* The list schedule: ostep, and the steps it takes (or an error). */
static int list_schedule(tset *T)
{
    size_t up = (size_t)T->k * T->n * T->ncu, down = (size_t)T->k * T->n * T->nc;
    T->last = malloc(up * sizeof(int));
    T->dnat = malloc(down * sizeof(int));
    T->pend = calloc(up, 1);
    if (!T->last || !T->dnat || !T->pend)
        return FTM_ENOMEM;
    for (size_t i = 0; i < up; i++)
        T->last[i] = -1;
    for (size_t i = 0; i < down; i++)
        T->dnat[i] = -1;
    for (int t = 0; t < T->k; t++)
        for (int x = 0; x < T->n; x++) {
            int d = T->par[(size_t)t * T->n + x];
            for (int c = 0; d >= 0 && c < T->ncu; c++)
                PEND(T, t, T->nbr[x * 4 + d], c)++;
        }
    int rc = make_entries(T);
    if (!rc)
        rc = make_order(T);
    for (int j = 0; !rc && j < T->lfirst[4 * T->n]; j++)
        set_ready(T, j);
    T->rem = calloc(4 * (size_t)T->n, sizeof(int));
    T->upm = malloc((size_t)T->k * T->n * sizeof(int));
    T->dnm = malloc((size_t)T->k * T->n * sizeof(int));
    if (!rc && (!T->rem || !T->upm || !T->dnm))
        rc = FTM_ENOMEM;
    for (int l = 0; !rc && l < 4 * T->n; l++)
        for (int j = T->lfirst[l]; j < T->lfirst[l + 1]; j++)
            T->rem[l] += tr_chunks(T, T->ent[j].up);
    long left = rc ? 0 : T->obase[T->lfirst[4 * T->n]];
    int st = 0;
    for (; left > 0; st++) {
        if (st > T->obase[T->lfirst[4 * T->n]])
            return FTM_EINVAL; /* cannot happen: some send is always ready */
        crit_update(T);
        left -= sched_step(T, st);
    }
    return rc ? rc : st;
}

/* Op op (a chunk of the entry whose ops hold it) as a transfer. */
static int emit_op(ftm_sched *s, tset *T, size_t count, ftm_red red, size_t el, int op)
{
    int lo = 0, hi = T->lfirst[4 * T->n] - 1; /* the entry: obase[j] <= op < obase[j + 1] */
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (T->obase[mid] <= op)
            lo = mid;
        else
            hi = mid - 1;
    }
    const tr_entry *e = &T->ent[lo];
    size_t f, len;
    chunk_range(T, count, e->t, op - T->obase[lo], e->up, &f, &len);
    int src = e->up ? e->x : e->p, d = e->up ? T->par[(size_t)e->t * T->n + e->x]
                                             : (T->par[(size_t)e->t * T->n + e->x] + 2) % 4;
    int rt = hop_route(s, T, src, d);
    return rt < 0 ? rt
                  : ftm_sched_xfer(s, rt, f * el, f * el, len * el, e->up ? red : FTM_RED_COPY);
}

/* The schedule: each step's sends link by link, as ostep has them. */
static int emit(ftm_sched *s, tset *T, const ftm_mesh *m, size_t count, ftm_red red, int nsteps)
{
    int nops = T->obase[T->lfirst[4 * T->n]];
    int *first = calloc((size_t)nsteps + 1, sizeof(int));
    int *ord = malloc((nops ? nops : 1) * sizeof(int));
    int rc = first && ord ? 0 : FTM_ENOMEM;
    for (int op = 0; !rc && op < nops; op++)
        first[T->ostep[op] + 1]++;
    for (int st = 0; !rc && st < nsteps; st++)
        first[st + 1] += first[st];
    /* ops by step; within a step by link, as op numbers go (entries are
     * stored link by link); first[st] ends up at step st + 1's start */
    for (int op = 0; !rc && op < nops; op++)
        ord[first[T->ostep[op]]++] = op;
    for (int st = nsteps - 1; !rc && st > 0; st--)
        first[st] = first[st - 1];
    if (first)
        first[0] = 0;
    size_t el = ftm_sched_red_elem_size(red);
    for (int st = 0, i = 0; !rc && st < nsteps; st++) {
        for (int u = 0; u < T->n && !rc; u++)
            if (ftm_mesh_alive(m, u))
                rc = ftm_sched_step(s, u, PH_TREES, st);
        for (; !rc && i < first[st + 1]; i++)
            rc = emit_op(s, T, count, red, el, ord[i]);
    }
    free(first);
    free(ord);
    return rc;
}

/* The tree set for k trees and nc chunks (0: tr_pick_chunks, for cost)
 * and its list schedule (ostep, *nsteps). FTM_EINVAL where the ops would
 * not fit an int (a caller's huge nc). */
static int plan(tset *T, const ftm_mesh *m, size_t count, ftm_red red, int k, int nc,
                const ftm_cost_params *cost, int *nsteps)
{
    int live = ftm_mesh_healthy_count(m), rc = tset_alloc(T, m, k > live ? live : k, nc);
    if (!rc) {
        pick_roots(T, m);
        rc = trees_make(T, m);
    }
    size_t bytes = count * ftm_sched_red_elem_size(red);
    T->count = count;
    if (!rc && !nc)
        T->nc = tr_pick_chunks(T, bytes, live, cost);
    if (!rc)
        T->ncu = tr_up_chunks(T->nc, (double)bytes / ((double)T->k * T->nc), cost);
    if (!rc)
        rc = tr_balance(T);
    if (!rc && 2.0 * T->k * live * (T->ncu > T->nc ? T->ncu : T->nc) > INT_MAX)
        rc = FTM_EINVAL;
    *nsteps = rc ? 0 : list_schedule(T);
    return *nsteps < 0 ? *nsteps : rc;
}

/* stats (NULL: none) as ftm_allreduce_trees_steps gives them. */
static int build(ftm_sched *s, const ftm_sched_ctx *ctx, const ftm_mesh *m, size_t count,
                 ftm_red red, int k, int nc, int *stats)
{
    int rc = ftm_mesh_check_connected(m, NULL, NULL), nsteps = 0;
    if (!rc && (k < 1 || nc < 0))
        rc = FTM_EINVAL;
    if (rc)
        return rc;
    tset T;
    rc = plan(&T, m, count, red, k, nc, ctx ? ctx->cost : NULL, &nsteps);
    if (stats && !rc) {
        stats[0] = nsteps;
        stats[3] = T.nc;
    }
    if (!rc)
        rc = tr_justify(&T, T.ostep, &nsteps);
    if (stats && !rc) {
        stats[1] = nsteps;
        rc = tr_step_bound(&T, T.ostep, nsteps, &stats[2]);
    }
    if (!rc)
        rc = ftm_sched_init(s, ctx, PH_TREES, m->nchips, count * ftm_sched_red_elem_size(red));
    if (!rc) {
        rc = emit(s, &T, m, count, red, nsteps);
        if (rc)
            ftm_sched_free(s);
        else
            ftm_sched_trim(s);
    }
    tset_free(&T);
    return rc;
}

int ftm_allreduce_trees_build_kc(ftm_sched *s, const ftm_sched_ctx *ctx, const ftm_mesh *m,
                                 size_t count, ftm_red red, int k, int nc)
{
    return build(s, ctx, m, count, red, k, nc, NULL);
}

int ftm_allreduce_trees_steps(const ftm_mesh *m, size_t count, ftm_red red, int k, int nc,
                              int out[4])
{
    ftm_sched_ctx dry = { .dry = 1 };
    ftm_sched s;
    int rc = build(&s, &dry, m, count, red, k, nc, out);
    if (!rc)
        ftm_sched_free(&s);
    return rc;
}
