/* "trees": justification of the list schedule.
 *
 * The list schedule (trees.c) fills steps from the first one on, so the
 * busiest links idle while the last chunks drain down their trees. A
 * justification pass (Valls, Ballestin and Quintanilla, "Justification
 * and RCPSP: a technique that pays", EJOR 165, 2005) schedules the same
 * sends again, backwards from the end, latest first (each directed link
 * still sends one chunk per step, a chunk still after everything it
 * needs), then forwards again, in the order the backward pass left them;
 * each pass is a valid schedule, never longer in steps than the one it
 * reorders, and the shortest is kept.
 *
 * A send is one chunk of one entry (tr_entry: a tree's use of a directed
 * link): op obase[j] + c. Before it: an up chunk needs the same chunk
 * summed in by every child; a down chunk the same chunk from the
 * parent, or at the root every up chunk it overlaps summed in. Two
 * children never sum the same chunk into a chip in one step.
 */
#include "ftmesh/error.h"
#include "ftmesh/sched.h"
#include "trees_int.h"

#include <stdint.h>
#include <stdlib.h>

typedef struct jstate {
    const tset *T;
    int ne, cmax;         /* entries; the most chunks an entry has */
    int nid;              /* ne x cmax: op c x ne + j is entry j's chunk c
                           * (chunk-major, so that an op's neighbours, the
                           * same chunk on nearby links, lie close) */
    int nops;             /* the ops that exist (c < the entry's chunks) */
    int *elink;           /* [ne] the entry's directed link */
    int *kids;            /* [ne x 4] its chip's children's entries in its
                           * direction (-1 past the last) */
    int *order;           /* [nops] ops by step */
    int *first;           /* [steps + 1] counting sort by step */
    int nw;               /* 64-bit words of a link's busy steps */
    uint64_t *busy;       /* [links x nw] the steps each link sends in */
} jstate;

static int nchunks(const tset *T, int up) { return up ? T->ncu : T->nc; }

/* Chunks [*a, *b] of direction !from that overlap chunk c of direction
 * from, in tree t's share (*a > *b: none, an empty chunk). */
static void overlap(const tset *T, int t, int from, int c, int *a, int *b)
{
    size_t sf, sn, f, len;
    ftm_sched_block(T->count, T->k, t, &sf, &sn);
    ftm_sched_block(sn, nchunks(T, from), c, &f, &len);
    *a = 0;
    *b = -1;
    if (len) {
        *a = ftm_sched_block_of(sn, nchunks(T, !from), f);
        *b = ftm_sched_block_of(sn, nchunks(T, !from), f + len - 1);
    }
}

/* The entries of x's children in tree t, up (up entries) or down. */
static int children(const tset *T, int t, int x, int up, int *out)
{
    size_t tn = (size_t)t * T->n;
    int n = 0;
    for (int d = 0; d < 4; d++) {
        int v = T->nbr[x * 4 + d];
        if (v >= 0 && T->par[tn + v] == (d + 2) % 4)
            out[n++] = up ? T->upidx[tn + v] : T->dnidx[tn + v];
    }
    return n;
}

/* Entry j's chip's children's entries in its direction, into out. */
static int kids_of(const jstate *J, int j, int *out)
{
    int n = 0;
    for (; n < 4 && J->kids[4 * (size_t)j + n] >= 0; n++)
        out[n] = J->kids[4 * (size_t)j + n];
    return n;
}

/* The ops right after op (before 0) or right before it (before 1): at
 * most 16: 4 children of a root, each with the up chunks a down chunk
 * overlaps (tr_up_chunks cuts at most 1/9 more, so at most 3). */
static int neighbours(const jstate *J, int op, int before, int *out)
{
    const tset *T = J->T;
    int j = op % J->ne, c = op / J->ne, ch[4], n = 0;
    const tr_entry *e = &T->ent[j];
    if (e->up == before) {
        /* before an up op: the children's same chunk; after a down op:
         * the children's down ops of it */
        int nch = kids_of(J, j, ch);
        for (int i = 0; i < nch; i++)
            out[n++] = c * J->ne + ch[i];
        return n;
    }
    size_t tn = (size_t)e->t * T->n;
    if (!e->proot) {
        /* after an up op: the parent's own up op; before a down op: the
         * down op into the parent */
        out[n++] = c * J->ne + (e->up ? T->upidx[tn + e->p] : T->dnidx[tn + e->p]);
        return n;
    }
    /* at the root: up chunks summed in before the down chunks they overlap */
    int a, b, nch = children(T, e->t, e->p, !e->up, ch);
    overlap(T, e->t, e->up, c, &a, &b);
    for (int i = 0; i < nch; i++)
        for (int cc = a; cc <= b; cc++)
            out[n++] = cc * J->ne + ch[i];
    return n;
}

/* 1 when up op op, put in step st, would sum into the same chunk of its
 * parent as a sibling already put there (place: the pass's steps). */
static int sibling_at(const jstate *J, int op, int st, const int *place)
{
    const tset *T = J->T;
    int j = op % J->ne, c = op / J->ne, ch[4];
    const tr_entry *e = &T->ent[j];
    if (!e->up)
        return 0;
    int n = e->proot ? children(T, e->t, e->p, 1, ch)
                     : kids_of(J, T->upidx[(size_t)e->t * T->n + e->p], ch);
    for (int i = 0; i < n; i++)
        if (ch[i] != j && place[c * J->ne + ch[i]] == st)
            return 1;
    return 0;
}

/* The nearest step at or past st (towards step 0 when late) in which
 * the link whose busy words are b sends nothing, or -1. The bits of a
 * link fit a cache line or two, so a scan beats a union-find here. */
static int nearest_free(const uint64_t *b, int nw, int st, int late)
{
    if (st < 0 || st >= 64 * nw)
        return -1;
    int w = st >> 6;
    uint64_t fr = ~b[w] & (late ? ~0ULL >> (63 - (st & 63)) : ~0ULL << (st & 63));
    while (!fr) {
        w += late ? -1 : 1;
        if (w < 0 || w >= nw)
            return -1;
        fr = ~b[w];
    }
    return 64 * w + (late ? 63 - __builtin_clzll(fr) : __builtin_ctzll(fr));
}

/* The ops by their steps in from (-1: no such op), into J->order. */
static void sort_by_step(jstate *J, const int *from, int nsteps)
{
    for (int i = 0; i <= nsteps; i++)
        J->first[i] = 0;
    for (int op = 0; op < J->nid; op++)
        if (from[op] >= 0)
            J->first[from[op] + 1]++;
    for (int i = 0; i < nsteps; i++)
        J->first[i + 1] += J->first[i];
    for (int op = 0; op < J->nid; op++)
        if (from[op] >= 0)
            J->order[J->first[from[op]]++] = op;
}

/* One serial pass: every op, in the order of the steps from (latest
 * first when late, else earliest), put in the latest (late) or earliest
 * step its neighbours already put allow where its link is free and no
 * sibling sums the same chunk; to[] gets the steps. No op goes past
 * where from has it (by induction over the order: its own step stays
 * free for it), so the pass is never longer. Returns the steps it
 * spans, renumbered from 0 (-1 if that proof failed). */
static int shift(jstate *J, int late, const int *from, int *to, int nsteps)
{
    int nb[16], dir = late ? -1 : 1, lo = nsteps, hi = -1, nw = J->nw;
    sort_by_step(J, from, nsteps);
    for (int op = 0; op < J->nid; op++)
        to[op] = -1;
    for (size_t i = 0; i < (size_t)4 * J->T->n * nw; i++)
        J->busy[i] = 0;
    for (int i = 0; i < J->nops; i++) {
        int op = J->order[late ? J->nops - 1 - i : i], n = neighbours(J, op, !late, nb);
        int st = late ? nsteps - 1 : 0;
        uint64_t *bw = J->busy + (size_t)J->elink[op % J->ne] * nw;
        for (int q = 0; q < n; q++) {
            int b = to[nb[q]] + dir;
            st = late ? (b < st ? b : st) : (b > st ? b : st);
        }
        st = nearest_free(bw, nw, st, late);
        while (st >= 0 && sibling_at(J, op, st, to))
            st = nearest_free(bw, nw, st + dir, late);
        if (st < 0 || st >= nsteps)
            return -1; /* cannot happen (see above) */
        bw[st >> 6] |= 1ULL << (st & 63);
        to[op] = st;
        lo = st < lo ? st : lo;
        hi = st > hi ? st : hi;
    }
    for (int op = 0; op < J->nid; op++)
        to[op] -= to[op] >= 0 ? lo : 0;
    return hi - lo + 1;
}

static void jstate_free(jstate *J)
{
    free(J->elink);
    free(J->kids);
    free(J->order);
    free(J->first);
    free(J->busy);
}

static int jstate_init(jstate *J, const tset *T, int nsteps)
{
    int ne = T->lfirst[4 * T->n];
    *J = (jstate){ .T = T, .ne = ne, .cmax = T->ncu > T->nc ? T->ncu : T->nc };
    J->nid = ne * J->cmax;
    J->nops = T->obase[ne];
    J->elink = malloc((size_t)(ne ? ne : 1) * sizeof(int));
    J->kids = malloc(4 * (size_t)(ne ? ne : 1) * sizeof(int));
    J->order = malloc((size_t)(J->nops ? J->nops : 1) * sizeof(int));
    J->first = malloc(((size_t)nsteps + 1) * sizeof(int));
    J->nw = (nsteps + 63) / 64;
    J->busy = malloc((size_t)4 * T->n * (J->nw ? J->nw : 1) * sizeof(uint64_t));
    if (!J->elink || !J->kids || !J->order || !J->first || !J->busy)
        return FTM_ENOMEM;
    for (int l = 0; l < 4 * T->n; l++)
        for (int j = T->lfirst[l]; j < T->lfirst[l + 1]; j++) {
            const tr_entry *e = &T->ent[j];
            int n = children(T, e->t, e->x, e->up, J->kids + 4 * (size_t)j);
            for (; n < 4; n++)
                J->kids[4 * (size_t)j + n] = -1;
            J->elink[j] = l;
        }
    return 0;
}

/* Justification: a late pass, then an early one, TR_JUST_ROUNDS times
 * or until a round gains no step (no pass is longer than the one
 * before). step[] (the list schedule's, by tset op, *nsteps of them)
 * becomes the last. 0 or FTM_ENOMEM. */
#define TR_JUST_ROUNDS 4
int tr_justify(const tset *T, int *step, int *nsteps)
{
    jstate J;
    int rc = jstate_init(&J, T, *nsteps);
    int *a = rc ? NULL : malloc((size_t)(J.nid ? J.nid : 1) * sizeof(int));
    int *b = rc ? NULL : malloc((size_t)(J.nid ? J.nid : 1) * sizeof(int));
    if (!rc && (!a || !b))
        rc = FTM_ENOMEM;
    for (int op = 0; !rc && op < J.nid; op++) {
        int j = op % J.ne, c = op / J.ne;
        a[op] = c < T->obase[j + 1] - T->obase[j] ? step[T->obase[j] + c] : -1;
    }
    for (int gain = 1, r = 0; !rc && gain && r < TR_JUST_ROUNDS; r++) {
        int n = shift(&J, 1, a, b, *nsteps);
        n = n < 0 ? n : shift(&J, 0, b, a, n);
        if (n < 0)
            rc = FTM_EINVAL;
        gain = n < *nsteps;
        *nsteps = n < 0 ? *nsteps : n;
    }
    for (int op = 0; !rc && op < J.nid; op++)
        if (a[op] >= 0)
            step[T->obase[op % J.ne] + op / J.ne] = a[op];
    free(a);
    free(b);
    jstate_free(&J);
    return rc;
}
