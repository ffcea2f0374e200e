/* Balancing the "trees" allreduce's link loads.
 *
 * Every chip other than a tree's root may hang off any of its parents in
 * the breadth-first order from the root (one link nearer the root): each
 * choice is still a shortest-path tree, and the choices of different
 * chips and trees are independent. So minimising the most trees on one
 * link is a transport problem, chips' choices to links, solved here as a
 * max-flow is: while a link carries more than the target (the average,
 * rounded up), find a chain of moves by breadth-first search over the
 * links (a choice on link a moves to its other option b, a choice on b
 * moves on, ...) that ends at a link below the target, and apply it.
 *
 * Beside a hole shortest paths alone cannot reach the target: a chip on
 * the hole's rim has one BFS parent, its rim neighbour, in every tree
 * rooted on the hole's far side, so the rim links above and below a
 * dead 2x2 host carry about half the trees (32x32 torus: 19 of 29 where
 * the target is 15, 19 of 35 for 18). detour hangs such a chip off
 * another neighbour, one or two levels deeper, once its children have
 * moved elsewhere (a leaf deepens nothing else), no deeper than the
 * tree.
 *
 * Then the direction (orient_relieve): a link that carries L trees
 * carries, one way, the up chunks of the trees whose child is at its
 * near end and the down chunks of the others. An up chunk must still
 * climb to the root and come down the whole tree after it crosses (at
 * least the tree's depth H more steps), a down chunk must have climbed
 * before, so a link that carries A trees' up chunks takes at least C A +
 * H steps, C chunks a share (the lower bound tr_step_bound computes).
 * The same chains, over slots (a chip's trees per parent direction)
 * instead of links, keep every slot within L - H/C while no link goes
 * past its target, then lower that cap one tree at a time down to half
 * the link target, each slot that no chain brings down keeping what it
 * has (orient says why). The busiest link then need not wait on its
 * trees' direction. Algorithms: augmenting paths (Ford and
 * Fulkerson) with nested capacities (a slot within its link).
 */
#include "ftmesh/error.h"
#include "trees_int.h"

#include <stdlib.h>

/* The link's index at its N or E end (its load is kept at both). */
static int canon(const tset *T, int u, int d)
{
    return d < 2 ? u * 4 + d : T->nbr[u * 4 + d] * 4 + (d + 2) % 4;
}

/* 1 when u's neighbour over d is one level nearer the root of tree t
 * (dep): a parent that keeps every chip at its depth. Before detour,
 * the BFS parents. */
static int option(const tset *T, int t, int u, int d)
{
    int v = T->nbr[u * 4 + d];
    const int *dep = T->dep + (size_t)t * T->n;
    return v >= 0 && dep[u] > 0 && dep[v] == dep[u] - 1;
}

typedef struct bal {
    int *cfirst, *cand;   /* link -> choices (t * n + u) that may use it */
    int *mark, *queue, *plink, *pitem, *pdir;
    int *ori;             /* [n*4] slot u*4+d: the trees in which u's parent is over d */
    int *path;            /* [n*8] a chain's moves (orient_relieve) */
    int *dori, *dload;    /* [n*4] zeroed scratch (chain_ok) */
    int *ofix;            /* [n*4] a slot's cap where otarget could not be met */
    int stamp, target, otarget;
} bal;

static int bal_init(bal *b, tset *T)
{
    size_t nl = 4 * (size_t)T->n, nc = 0;
    b->cfirst = calloc(nl + 1, sizeof(int));
    b->mark = calloc(nl, sizeof(int));
    b->queue = malloc(nl * sizeof(int));
    b->plink = malloc(nl * sizeof(int));
    b->pitem = malloc(nl * sizeof(int));
    b->pdir = malloc(nl * sizeof(int));
    b->ori = calloc(nl, sizeof(int));
    b->path = malloc(2 * nl * sizeof(int));
    b->dori = calloc(nl, sizeof(int));
    b->dload = calloc(nl, sizeof(int));
    b->ofix = calloc(nl, sizeof(int));
    if (!b->cfirst || !b->mark || !b->queue || !b->plink || !b->pitem || !b->pdir || !b->ori ||
        !b->path || !b->dori || !b->dload || !b->ofix)
        return FTM_ENOMEM;
    for (int t = 0; t < T->k; t++)
        for (int u = 0; u < T->n; u++)
            if (T->par[(size_t)t * T->n + u] >= 0)
                b->ori[u * 4 + T->par[(size_t)t * T->n + u]]++;
    for (int t = 0; t < T->k; t++)
        for (int u = 0; u < T->n; u++)
            for (int d = 0; d < 4; d++)
                if (option(T, t, u, d)) {
                    b->cfirst[canon(T, u, d) + 1]++;
                    nc++;
                }
    for (size_t l = 0; l < nl; l++)
        b->cfirst[l + 1] += b->cfirst[l];
    b->cand = malloc((nc ? nc : 1) * sizeof(int));
    int *fill = malloc(nl * sizeof(int));
    if (!b->cand || !fill) {
        free(fill);
        return FTM_ENOMEM;
    }
    for (size_t l = 0; l < nl; l++)
        fill[l] = b->cfirst[l];
    for (int t = 0; t < T->k; t++)
        for (int u = 0; u < T->n; u++)
            for (int d = 0; d < 4; d++)
                if (option(T, t, u, d))
                    b->cand[fill[canon(T, u, d)]++] = t * T->n + u;
    free(fill);
    return 0;
}

static void bal_free(bal *b)
{
    free(b->cfirst);
    free(b->cand);
    free(b->mark);
    free(b->queue);
    free(b->plink);
    free(b->pitem);
    free(b->pdir);
    free(b->ori);
    free(b->path);
    free(b->dori);
    free(b->dload);
    free(b->ofix);
}

/* Chip u of tree t hangs off its parent in direction d now. */
static void move_to(tset *T, bal *b, int t, int u, int d)
{
    int *par = T->par + (size_t)t * T->n, o = par[u];
    b->ori[u * 4 + o]--;
    b->ori[u * 4 + d]++;
    T->load[u * 4 + o]--;
    T->load[T->nbr[u * 4 + o] * 4 + (o + 2) % 4]--;
    par[u] = d;
    T->load[u * 4 + d]++;
    T->load[T->nbr[u * 4 + d] * 4 + (d + 2) % 4]++;
}

/* Applies the chain of moves that ends at link e. */
static void apply_chain(tset *T, bal *b, int e)
{
    for (int l = e; b->plink[l] >= 0; l = b->plink[l])
        move_to(T, b, b->pitem[l] / T->n, b->pitem[l] % T->n, b->pdir[l]);
}

/* One tree fewer on link a0 through a chain of moves: 1, or 0 if none. */
static int relieve(tset *T, bal *b, int a0)
{
    int head = 0, tail = 0;
    b->stamp++;
    b->mark[a0] = b->stamp;
    b->plink[a0] = -1;
    b->queue[tail++] = a0;
    while (head < tail) {
        int a = b->queue[head++];
        for (int j = b->cfirst[a]; j < b->cfirst[a + 1]; j++) {
            int it = b->cand[j], t = it / T->n, u = it % T->n;
            if (canon(T, u, T->par[(size_t)t * T->n + u]) != a)
                continue;
            for (int d = 0; d < 4; d++) {
                int e;
                if (!option(T, t, u, d) || b->mark[e = canon(T, u, d)] == b->stamp)
                    continue;
                b->mark[e] = b->stamp;
                b->plink[e] = a;
                b->pitem[e] = it;
                b->pdir[e] = d;
                if (T->load[e] < b->target) {
                    apply_chain(T, b, e);
                    return 1;
                }
                b->queue[tail++] = e;
            }
        }
    }
    return 0;
}

/* The other orientation of slot o (u's parent over d): the neighbour's
 * parent over the same link, the way back. */
static int twin(const tset *T, int o)
{
    return T->nbr[o] * 4 + (o % 4 + 2) % 4;
}

/* The chain that moves item it to direction d, after the moves that led
 * to slot s, into b->path as (item, direction) pairs: how many. */
static int chain_moves(bal *b, int it, int d, int s)
{
    int n = 0;
    b->path[n++] = it;
    b->path[n++] = d;
    for (; b->plink[s] >= 0; s = b->plink[s]) {
        b->path[n++] = b->pitem[s];
        b->path[n++] = b->pdir[s];
    }
    return n / 2;
}

/* Adds (sign 1) the n moves' net change to the slots (dori) and links
 * (dload), or takes it off again (-1). */
static void chain_delta(const tset *T, bal *b, int n, int sign)
{
    for (int i = 0; i < n; i++) {
        int t = b->path[2 * i] / T->n, u = b->path[2 * i] % T->n, d = b->path[2 * i + 1];
        int o = T->par[(size_t)t * T->n + u];
        b->dori[u * 4 + o] -= sign;
        b->dori[u * 4 + d] += sign;
        b->dload[canon(T, u, o)] -= sign;
        b->dload[canon(T, u, d)] += sign;
    }
}

/* Slot o's cap: otarget, or more where it could not be met (orient). */
static int ocap(const bal *b, int o)
{
    return b->ofix[o] > b->otarget ? b->ofix[o] : b->otarget;
}

/* 1 when the chain's n moves take no slot past otarget and no link past
 * target that they add to (a chain may pass one link twice). */
static int chain_ok(const tset *T, bal *b, int n)
{
    int ok = 1;
    chain_delta(T, b, n, 1);
    for (int i = 0; i < n && ok; i++) {
        int u = b->path[2 * i] % T->n, w = u * 4 + b->path[2 * i + 1], l = canon(T, u, w % 4);
        ok = (b->dori[w] <= 0 || b->ori[w] + b->dori[w] <= ocap(b, w)) &&
             (b->dload[l] <= 0 || T->load[l] + b->dload[l] <= b->target);
    }
    chain_delta(T, b, n, -1);
    return ok;
}

/* Queues slot s to shed a choice: reached from slot from by moving item
 * it to direction d. */
static void orient_push(bal *b, int s, int from, int it, int d, int *tail)
{
    if (b->mark[s] == b->stamp)
        return;
    b->mark[s] = b->stamp;
    b->plink[s] = from;
    b->pitem[s] = it;
    b->pdir[s] = d;
    b->queue[(*tail)++] = s;
}

/* One tree fewer in slot s0 through a chain of moves, breadth first,
 * that takes no slot past otarget and no link past target: 1, or 0 if
 * none. A choice moved into a full slot must move on from that slot;
 * one moved into a slot whose link is full, from the slot or its twin. */
static int orient_relieve(tset *T, bal *b, int s0)
{
    int head = 0, tail = 0;
    b->stamp++;
    orient_push(b, s0, -1, 0, 0, &tail);
    while (head < tail) {
        int s = b->queue[head++], u = s / 4;
        for (int t = 0; t < T->k; t++)
            for (int d = 0; d < 4; d++) {
                int o = u * 4 + d, it = t * T->n + u, n;
                if (T->par[(size_t)t * T->n + u] != s % 4 || d == s % 4 || !option(T, t, u, d))
                    continue;
                if (b->ori[o] < ocap(b, o) && T->load[o] < b->target &&
                    chain_ok(T, b, n = chain_moves(b, it, d, s))) {
                    for (int i = 0; i < n; i++)
                        move_to(T, b, b->path[2 * i] / T->n, b->path[2 * i] % T->n,
                                b->path[2 * i + 1]);
                    return 1;
                }
                orient_push(b, o, s, it, d, &tail);
                if (b->ori[o] < ocap(b, o))
                    orient_push(b, twin(T, o), s, it, d, &tail);
            }
    }
    return 0;
}

/* The child end of link (u, d) in tree t (the chip whose parent is
 * across it), or -1 when t does not use the link. */
static int child_end(const tset *T, int t, int u, int d)
{
    const int *par = T->par + (size_t)t * T->n;
    int v = T->nbr[u * 4 + d];
    return par[u] == d ? u : par[v] == (d + 2) % 4 ? v : -1;
}

/* Moves chip x of tree t to direction d, at depth nd; where that takes
 * its link past target, a chain of moves takes a tree off it, else the
 * move is undone: 1 if kept. */
static int move_within(tset *T, bal *b, int t, int x, int d, int nd)
{
    int *dep = T->dep + (size_t)t * T->n, o = T->par[(size_t)t * T->n + x], od = dep[x];
    move_to(T, b, t, x, d);
    dep[x] = nd;
    if (T->load[x * 4 + d] <= b->target || relieve(T, b, canon(T, x, d)))
        return 1;
    move_to(T, b, t, x, o);
    dep[x] = od;
    return 0;
}

/* Moves each child of x in tree t to another parent: 1 when x is left
 * a leaf. */
static int make_leaf(tset *T, bal *b, int t, int x)
{
    for (int d = 0; d < 4; d++) {
        int c = T->nbr[x * 4 + d], ok = 0;
        if (c < 0 || T->par[(size_t)t * T->n + c] != (d + 2) % 4)
            continue;
        for (int e = 0; e < 4 && !ok; e++)
            ok = e != (d + 2) % 4 && option(T, t, c, e) &&
                 move_within(T, b, t, c, e, T->dep[(size_t)t * T->n + c]);
        if (!ok)
            return 0;
    }
    return 1;
}

/* 1 when no chip hangs off x in tree t. */
static int is_leaf(const tset *T, int t, int x)
{
    for (int d = 0; d < 4; d++) {
        int c = T->nbr[x * 4 + d];
        if (c >= 0 && T->par[(size_t)t * T->n + c] == (d + 2) % 4)
            return 0;
    }
    return 1;
}

/* Hangs leaf x of tree t off another neighbour, the shallowest first,
 * at most two levels deeper and no deeper than the tree: 1 if done.
 * (The chains of make_leaf may have hung a chip off x again: then not,
 * its depth would no longer be its parent's plus one.) */
static int hang_elsewhere(tset *T, bal *b, int t, int x)
{
    const int *dep = T->dep + (size_t)t * T->n;
    if (!is_leaf(T, t, x))
        return 0;
    for (int lvl = dep[x] - 1; lvl < T->maxdep[t] && lvl <= dep[x] + 1; lvl++)
        for (int d = 0; d < 4; d++) {
            int v = T->nbr[x * 4 + d];
            if (v >= 0 && dep[v] == lvl && d != T->par[(size_t)t * T->n + x] &&
                move_within(T, b, t, x, d, lvl + 1))
                return 1;
        }
    return 0;
}

/* Links still past target: their trees, in order, hang the chip at the
 * link's child end elsewhere, until the link is within target. */
static void detour(tset *T, bal *b)
{
    for (int l = 0; l < 4 * T->n; l++)
        for (int t = 0; l % 4 < 2 && T->nbr[l] >= 0 && t < T->k && T->load[l] > b->target; t++) {
            int x = child_end(T, t, l / 4, l % 4);
            if (x >= 0 && make_leaf(T, b, t, x))
                hang_elsewhere(T, b, t, x);
        }
}

/* The most trees one way over a link: L - ceil(H / C) (L the link
 * target, H the shallowest tree's depth, C the chunks a share), so that
 * a link's up chunks and the H steps they need after it fit in the
 * busiest link's C L steps; never below ceil(L / 2), the least a link's
 * L trees allow one way (few chunks ask for less). */
static int orient_target(const tset *T, int target)
{
    int h = T->maxdep[0], c = T->nc > 0 ? T->nc : 1, low = (target + 1) / 2;
    for (int t = 1; t < T->k; t++)
        h = T->maxdep[t] < h ? T->maxdep[t] : h;
    int ot = target - (h + c - 1) / c;
    return ot > low ? ot : low;
}

/* Every slot within otarget, from what the bound asks (orient_target)
 * down to half the link target (a link's L trees run one way or the
 * other, so no lower), one tree at a time: fewer trees one way on a link
 * than the bound needs measured faster still (the list schedule then
 * finds both directions' chunks ready on the busy links all along;
 * 16x32 and 32x32 tori, healthy and with faults: -1% to -6%). A slot no
 * chain brings down keeps what it has as its own cap (ofix) while the
 * others go on: beside a dead host the rim chips send their up chunks
 * over 3 links, 13 to 14 trees of 18 one way, and stopping every slot
 * there left the links round the corners carrying 5 or 6 trees' up
 * chunks and 12 or 13 trees' down chunks, idle until the down chunks
 * came (measured, going on: -3.4% to +0.2% over the sweep's cases). */
static void orient(tset *T, bal *b)
{
    for (int low = (b->target + 1) / 2; b->otarget >= low; b->otarget--)
        for (int o = 0; o < 4 * T->n; o++)
            if (T->nbr[o] >= 0 && b->ori[o] > ocap(b, o)) {
                while (b->ori[o] > ocap(b, o) && orient_relieve(T, b, o))
                    ;
                if (b->ori[o] > b->otarget)
                    b->ofix[o] = b->ori[o];
            }
}

/* Height of x's subtree in tree t (its children's are known). */
static void set_height(tset *T, int t, int x)
{
    const int *par = T->par + (size_t)t * T->n;
    int h = 0;
    for (int d = 0; d < 4; d++) {
        int v = T->nbr[x * 4 + d];
        if (v >= 0 && par[v] == (d + 2) % 4 && T->hgt[(size_t)t * T->n + v] + 1 > h)
            h = T->hgt[(size_t)t * T->n + v] + 1;
    }
    T->hgt[(size_t)t * T->n + x] = h;
}

/* Tree t's subtree heights, deepest chips first (a counting sort by dep
 * into T->queue; dist: scratch). */
static void heights(tset *T, int t)
{
    const int *dep = T->dep + (size_t)t * T->n, *par = T->par + (size_t)t * T->n;
    int *first = T->dist, n = 0; /* depths 0 .. maxdep: at most n */
    for (int i = 0; i <= T->maxdep[t]; i++)
        first[i] = 0;
    for (int c = 0; c < T->n; c++)
        first[dep[c] < 0 ? 0 : dep[c]] += par[c] != -2;
    for (int i = 0; i <= T->maxdep[t]; i++) {
        int c = first[i];
        first[i] = n;
        n += c;
    }
    for (int c = 0; c < T->n; c++)
        if (par[c] != -2)
            T->queue[first[dep[c]]++] = c;
    for (int i = n - 1; i >= 0; i--)
        set_height(T, t, T->queue[i]);
}

int tr_balance(tset *T)
{
    bal b = { 0 };
    int rc = bal_init(&b, T);
    long edges = 0, links = 0;
    for (int u = 0; u < T->n && !rc; u++)
        for (int d = 0; d < 2; d++)
            if (T->nbr[u * 4 + d] >= 0) {
                links++;
                edges += T->load[u * 4 + d];
            }
    b.target = links ? (int)((edges + links - 1) / links) : 0;
    b.otarget = orient_target(T, b.target);
    for (int l = 0; l < 4 * T->n && !rc; l++)
        if (l % 4 < 2 && T->nbr[l] >= 0)
            while (T->load[l] > b.target && relieve(T, &b, l))
                ;
    if (!rc)
        detour(T, &b);
    if (!rc)
        orient(T, &b);
    for (int t = 0; t < T->k && !rc; t++)
        heights(T, t);
    bal_free(&b);
    return rc;
}
