/* A binary min-heap of (key, id) pairs over an array the caller sizes:
 * the smaller key first, ties by the smaller id (so the order, and what
 * uses it, is deterministic). The cost model's events (time, chip) and
 * the router's Dijkstra (cost, chip) use it. Internal; inline, because
 * the cost model's replay pops one per step of every chip. */
#ifndef FTMESH_CORE_HEAP_H
#define FTMESH_CORE_HEAP_H

typedef struct core_hnode {
    double key;
    int id;
} core_hnode;

typedef struct core_heap {
    core_hnode *a; /* [capacity], the caller's */
    int n;
} core_heap;

static inline int core_hless(core_hnode x, core_hnode y)
{
    return x.key < y.key || (x.key == y.key && x.id < y.id);
}

/* Adds (key, id); the array must have room for one more. */
static inline void core_heap_push(core_heap *h, double key, int id)
{
    int i = h->n++;
    core_hnode x = { key, id };
    while (i > 0 && core_hless(x, h->a[(i - 1) / 2])) {
        h->a[i] = h->a[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->a[i] = x;
}

/* Removes and returns the first pair (h->n must be above 0). */
static inline core_hnode core_heap_pop(core_heap *h)
{
    core_hnode top = h->a[0], last = h->a[--h->n];
    int i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= h->n)
            break;
        if (c + 1 < h->n && core_hless(h->a[c + 1], h->a[c]))
            c++;
        if (!core_hless(h->a[c], last))
            break;
        h->a[i] = h->a[c];
        i = c;
    }
    if (h->n)
        h->a[i] = last;
    return top;
}

#endif
