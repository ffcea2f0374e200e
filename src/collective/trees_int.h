/* The "trees" allreduce's tree set, shared by trees.c (trees, list
 * schedule, emission), trees_balance.c (link loads), trees_chunks.c
 * (chunk counts) and trees_just.c (justification). Internal. */
#ifndef FTMESH_TREES_INT_H
#define FTMESH_TREES_INT_H

#include <stddef.h>

/* A directed link's use by one tree: chip x's chunks up to its parent
 * p (up), or down from p to x; proot: p is the tree's root (kept here
 * because the list schedule asks every step). */
typedef struct tr_entry {
    int t, x, up, p, proot;
} tr_entry;

/* A chip of one tree in top-down (BFS) order, with its parent pp and the
 * link indices of its edge up (u -> pp) and down (pp -> u); pp -1 at the
 * root. crit_update walks these every step. */
typedef struct tr_node {
    int u, pp, lu, ld;
} tr_node;

typedef struct tset {
    int n, k, nc;      /* chips, trees, chunks copied down each share */
    int ncu;           /* chunks summed up each share (tr_up_chunks) */
    size_t count;      /* elements in the buffer */
    int round;         /* the balancing round (tie_hash) */
    int *nbr;          /* [n*4] neighbour over a link live both ways, or -1 */
    int *root;         /* [k] */
    int *par;          /* [k*n] direction to the parent; -1 root, -2 none */
    int *dep, *hgt;    /* [k*n] depth in the tree; height of the subtree */
    int *maxdep;       /* [k] */
    int *load;         /* [n*4] trees using the link (kept at both ends) */
    int *dist, *queue; /* [n] scratch */
    int *route;        /* [n*4] route id of the one-hop route, or -1 */
    int *lfirst;       /* [n*4 + 1] link l's entries: ent[lfirst[l] .. lfirst[l+1]) */
    tr_entry *ent;
    int *next;         /* [entries] the entry's next chunk to send */
    int *rdy;          /* [entries] the step from which its next chunk is
                        * ready (INT_MAX: not yet known ready, or none
                        * left; 0 for the root's children: checked each step) */
    int *upidx, *dnidx; /* [k*n] chip x's up entry and down entry in tree t */
    int *rem;          /* [n*4] chunks the link has left to send */
    int *upm, *dnm;    /* [k*n] trees.c: crit_update */
    tr_node *ord;      /* [k*n] each tree's chips top-down (nord of n) */
    int nord;          /* chips in each tree */
    int *last, *dnat;  /* [k*n*nc] LAST, DNAT (trees.c) */
    unsigned char *pend; /* [k*n*nc] PEND */
    int *obase;        /* [entries + 1] entry j's chunks are ops obase[j] .. */
    int *ostep;        /* [ops] the step each op is sent in */
} tset;

/* Moves tree edges between each chip's BFS parents (any choice is a
 * shortest-path tree) until no link carries more trees than it must:
 * augmenting paths over the links, as in a max-flow; where none is
 * left, hangs a leaf beside a hole one or two levels deeper (dep then
 * is its depth in the tree, no longer its BFS distance); then moves
 * them so that no link carries too many trees one way (for nc chunks,
 * set before). Keeps load (both ends of a link) in step with par, and
 * sets hgt. 0 or FTM_ENOMEM. */
int tr_balance(tset *T);

/* The chunks each share is cut into, up or down. */
static inline int tr_chunks(const tset *T, int up) { return up ? T->ncu : T->nc; }

/* Chunks [*a, *b] of the other direction that overlap chunk c of tree
 * t's share cut up (up 1) or down (up 0): *a > *b when none (c is
 * empty) (trees_just.c). */
void tr_overlap(const tset *T, int t, int up, int c, int *a, int *b);

/* The entries of chip x's children in tree t into out (at most 4), up
 * (their up entries) or down (their down entries); how many
 * (trees_just.c). */
int tr_children(const tset *T, int t, int x, int up, int *out);

/* The chunks to cut each share into for bytes per chip over live chips
 * (down), and the up chunks for nc down chunks of about chunk bytes, for
 * cost parameters cost (NULL: the TPU-v3 defaults; trees_chunks.c). */
struct ftm_cost_params;
int tr_pick_chunks(const tset *T, size_t bytes, int live, const struct ftm_cost_params *cost);
/* K C, the chunks of all shares together, that tr_pick_chunks sizes for
 * trees of depth h (before its cap on the transfers). */
double tr_chunk_product(int h, size_t bytes, const struct ftm_cost_params *cost);
int tr_up_chunks(int nc, double chunk, const struct ftm_cost_params *cost);

/* Reorders the list schedule's steps (step: ostep, *nsteps of them)
 * by justification passes, late then early, until a round gains no
 * step (trees_just.c). 0, FTM_ENOMEM or FTM_EINVAL (a pass that would
 * have grown: cannot happen). */
int tr_justify(const tset *T, int *step, int *nsteps);

/* *lb: a lower bound on the steps of any order of the sends step[]
 * orders (*nsteps of them): per link, the ops whose longest chains of
 * ops before and after them are at least a and b take a + their count
 * + b steps (one machine, unit ops, release and tail times), the most
 * over every link, a and b (trees_just.c). 0 or FTM_ENOMEM. */
int tr_step_bound(const tset *T, const int *step, int nsteps, int *lb);

#endif
