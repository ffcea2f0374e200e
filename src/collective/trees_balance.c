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
 * moves on, ...) that ends at a link below the target, and apply it. A
 * link no chain relieves keeps its load.
 */
#include "ftmesh/error.h"
#include "trees_int.h"

#include <stdlib.h>

/* The link's index at its N or E end (its load is kept at both). */
static int canon(const tset *T, int u, int d)
{
    return d < 2 ? u * 4 + d : T->nbr[u * 4 + d] * 4 + (d + 2) % 4;
}

/* 1 when d is a BFS parent of u in tree t. */
static int option(const tset *T, int t, int u, int d)
{
    int v = T->nbr[u * 4 + d];
    const int *dep = T->dep + (size_t)t * T->n;
    return v >= 0 && dep[u] > 0 && dep[v] == dep[u] - 1;
}

typedef struct bal {
    int *cfirst, *cand;   /* link -> choices (t * n + u) that may use it */
    int *mark, *queue, *plink, *pitem, *pdir;
    int stamp, target;
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
    if (!b->cfirst || !b->mark || !b->queue || !b->plink || !b->pitem || !b->pdir)
        return FTM_ENOMEM;
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
}

/* Chip u of tree t hangs off its parent in direction d now. */
static void move_to(tset *T, int t, int u, int d)
{
    int *par = T->par + (size_t)t * T->n, o = par[u];
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
        move_to(T, b->pitem[l] / T->n, b->pitem[l] % T->n, b->pdir[l]);
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

int tr_balance(tset *T)
{
    bal b = { 0 };
    int rc = bal_init(&b, T);
    long edges = 0, links = 0;
    for (int u = 0; u < T->n && !rc; u++)
        for (int d = 0; d < 2; d++)
            links += T->nbr[u * 4 + d] >= 0;
    for (int u = 0; u < T->n && !rc; u++)
        for (int d = 0; d < 2; d++)
            edges += T->nbr[u * 4 + d] >= 0 ? T->load[u * 4 + d] : 0;
    b.target = links ? (int)((edges + links - 1) / links) : 0;
    for (int l = 0; l < 4 * T->n && !rc; l++)
        if (l % 4 < 2 && T->nbr[l] >= 0)
            while (T->load[l] > b.target && relieve(T, &b, l))
                ;
    bal_free(&b);
    return rc;
}
