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
 * reorders; a round is kept only if it is shorter. Empty chunks (a share
 * of fewer elements than chunks) send nothing and are left out.
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
    int nops;             /* the ops that send: non-empty chunks (to_ids) */
    int *elink;           /* [ne] the entry's directed link */
    int *kids;            /* [ne x 4] its chip's children's entries in its
                           * direction (-1 past the last) */
    int *order;           /* [nops] ops by step */
    int *first;           /* [steps + 1] counting sort by step */
    int nw;               /* 64-bit words of a link's busy steps */
    uint64_t *busy;       /* [links x nw] the steps each link sends in */
} jstate;

void tr_overlap(const tset *T, int t, int up, int c, int *a, int *b)
{
    size_t sf, sn, f, len;
    ftm_sched_block(T->count, T->k, t, &sf, &sn);
    ftm_sched_block(sn, tr_chunks(T, up), c, &f, &len);
    *a = 0;
    *b = -1;
    if (len) {
        *a = ftm_sched_block_of(sn, tr_chunks(T, !up), f);
        *b = ftm_sched_block_of(sn, tr_chunks(T, !up), f + len - 1);
    }
}

/* 1 when chunk c of tree t's share, up or down, holds no element. */
static int empty_chunk(const tset *T, int t, int up, int c)
{
    size_t sf, sn, f, len;
    ftm_sched_block(T->count, T->k, t, &sf, &sn);
    ftm_sched_block(sn, tr_chunks(T, up), c, &f, &len);
    return len == 0;
}

int tr_children(const tset *T, int t, int x, int up, int *out)
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
 * most 12: 4 children of a root, each with the up chunks a down chunk
 * overlaps (tr_up_chunks cuts at most a fifth more, so at most 3). An
 * empty chunk's neighbours are empty too (the same chunk of the same
 * share; at the root, an empty chunk overlaps none). */
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
    int a, b, nch = tr_children(T, e->t, e->p, !e->up, ch);
    tr_overlap(T, e->t, e->up, c, &a, &b);
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
    int n = e->proot ? tr_children(T, e->t, e->p, 1, ch)
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
 * where from has it, by induction over the order: ops of one step in
 * from are never on one link, never siblings and never neighbours, so
 * an op's neighbours on the pass's side were put already, no later than
 * from has them, and its own step in from is still free for it. So the
 * pass is never longer. Returns the steps it spans, renumbered from 0
 * (-1 if that proof failed). */
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
    J->elink = malloc((size_t)(ne ? ne : 1) * sizeof(int));
    J->kids = malloc(4 * (size_t)(ne ? ne : 1) * sizeof(int));
    J->order = malloc((size_t)(T->obase[ne] ? T->obase[ne] : 1) * sizeof(int)); /* every op */
    J->first = malloc(((size_t)nsteps + 1) * sizeof(int));
    J->nw = (nsteps + 63) / 64;
    J->busy = malloc((size_t)4 * T->n * (J->nw ? J->nw : 1) * sizeof(uint64_t));
    if (!J->elink || !J->kids || !J->order || !J->first || !J->busy)
        return FTM_ENOMEM;
    for (int l = 0; l < 4 * T->n; l++)
        for (int j = T->lfirst[l]; j < T->lfirst[l + 1]; j++) {
            const tr_entry *e = &T->ent[j];
            int n = tr_children(T, e->t, e->x, e->up, J->kids + 4 * (size_t)j);
            for (; n < 4; n++)
                J->kids[4 * (size_t)j + n] = -1;
            J->elink[j] = l;
        }
    return 0;
}

/* step[] (by tset op) into a (by jstate op), empty chunks -1; J->nops
 * counts the others. */
static void to_ids(jstate *J, const int *step, int *a)
{
    const tset *T = J->T;
    J->nops = 0;
    for (int op = 0; op < J->nid; op++) {
        int j = op % J->ne, c = op / J->ne;
        const tr_entry *e = &T->ent[j];
        a[op] = c < T->obase[j + 1] - T->obase[j] && !empty_chunk(T, e->t, e->up, c)
                    ? step[T->obase[j] + c] : -1;
        J->nops += a[op] >= 0;
    }
}

/* Justification: a late pass, then an early one, TR_JUST_ROUNDS times
 * or until a round gains no step; step[] (the list schedule's, by tset
 * op, *nsteps of them) becomes the shortest round's, if one is shorter
 * (empty chunks: step 0, they send nothing). 0, FTM_ENOMEM or
 * FTM_EINVAL. */
#define TR_JUST_ROUNDS 4
int tr_justify(const tset *T, int *step, int *nsteps)
{
    jstate J;
    int rc = jstate_init(&J, T, *nsteps), n = *nsteps, *w[3] = { NULL, NULL, NULL };
    for (int i = 0; i < 3 && !rc; i++)
        if (!(w[i] = malloc((size_t)(J.nid ? J.nid : 1) * sizeof(int))))
            rc = FTM_ENOMEM;
    int *cur = w[0], *late = w[1], *next = w[2];
    if (!rc)
        to_ids(&J, step, cur);
    for (int r = 0; !rc && J.nops && r < TR_JUST_ROUNDS; r++) {
        int m = shift(&J, 1, cur, late, n);
        m = m < 0 ? m : shift(&J, 0, late, next, m);
        if (m < 0)
            rc = FTM_EINVAL;
        if (rc || m >= n)
            break;
        int *t = cur;
        cur = next;
        next = t;
        n = m;
    }
    for (int op = 0; !rc && n < *nsteps && op < J.nid; op++)
        if (op / J.ne < T->obase[op % J.ne + 1] - T->obase[op % J.ne])
            step[T->obase[op % J.ne] + op / J.ne] = cur[op] >= 0 ? cur[op] : 0;
    *nsteps = rc ? *nsteps : n;
    for (int i = 0; i < 3; i++)
        free(w[i]);
    jstate_free(&J);
    return rc;
}

/* Per link (its ops' heads and tails, as (h, q) pairs in hq, n of them,
 * sorted by h, largest first): the most steps the ops with h >= a and
 * q >= b force, a + their count + b, over every a and b (cnt: zeroed
 * ints, one per step a tail can be; left zeroed). */
static int link_bound(const int *hq, int n, int *cnt)
{
    int best = 0, maxq = 0;
    for (int i = 0; i < n;) {
        int a = hq[2 * i];
        for (; i < n && hq[2 * i] == a; i++) {
            cnt[hq[2 * i + 1]]++;
            maxq = hq[2 * i + 1] > maxq ? hq[2 * i + 1] : maxq;
        }
        for (int b = maxq, ge = 0; b >= 0; b--)
            if ((ge += cnt[b]) && a + ge + b > best)
                best = a + ge + b;
    }
    for (int b = 0; b <= maxq; b++)
        cnt[b] = 0;
    return best;
}

static int by_head_desc(const void *x, const void *y)
{
    const int *a = x, *b = y;
    return (b[0] > a[0]) - (b[0] < a[0]);
}

/* The longest chains of ops before (hd) and after (tl) each op, over the
 * order step[] gives (by jstate op, -1: none). */
static void chains(jstate *J, const int *a, int nsteps, int *hd, int *tl)
{
    int nb[16];
    sort_by_step(J, a, nsteps);
    for (int op = 0; op < J->nid; op++)
        hd[op] = tl[op] = 0;
    for (int i = 0; i < J->nops; i++)
        for (int op = J->order[i], q = 0, n = neighbours(J, op, 1, nb); q < n; q++)
            hd[op] = hd[nb[q]] + 1 > hd[op] ? hd[nb[q]] + 1 : hd[op];
    for (int i = J->nops - 1; i >= 0; i--)
        for (int op = J->order[i], q = 0, n = neighbours(J, op, 0, nb); q < n; q++)
            tl[op] = tl[nb[q]] + 1 > tl[op] ? tl[nb[q]] + 1 : tl[op];
}

int tr_step_bound(const tset *T, const int *step, int nsteps, int *lb)
{
    jstate J;
    int rc = jstate_init(&J, T, nsteps), most = 0, *w[3] = { NULL, NULL, NULL };
    for (int l = 0; l < 4 * T->n; l++) { /* the most ops on a link */
        int n = T->obase[T->lfirst[l + 1]] - T->obase[T->lfirst[l]];
        most = n > most ? n : most;
    }
    for (int i = 0; i < 3 && !rc; i++)
        if (!(w[i] = malloc((size_t)(J.nid ? J.nid : 1) * sizeof(int))))
            rc = FTM_ENOMEM;
    int *a = w[0], *hd = w[1], *tl = w[2], *hq = NULL, *cnt = NULL;
    if (!rc && (!(hq = malloc((2 * (size_t)most + 1) * sizeof(int))) ||
                !(cnt = calloc((size_t)nsteps + 1, sizeof(int)))))
        rc = FTM_ENOMEM;
    *lb = 0;
    if (!rc) {
        to_ids(&J, step, a);
        chains(&J, a, nsteps, hd, tl);
    }
    for (int l = 0; !rc && l < 4 * T->n; l++) {
        int n = 0;
        for (int j = T->lfirst[l]; j < T->lfirst[l + 1]; j++)
            for (int c = 0; c < T->obase[j + 1] - T->obase[j]; c++)
                if (a[c * J.ne + j] >= 0) {
                    hq[2 * n] = hd[c * J.ne + j];
                    hq[2 * n++ + 1] = tl[c * J.ne + j];
                }
        qsort(hq, (size_t)n, 2 * sizeof(int), by_head_desc);
        int b = link_bound(hq, n, cnt);
        *lb = b > *lb ? b : *lb;
    }
    free(hq);
    free(cnt);
    for (int i = 0; i < 3; i++)
        free(w[i]);
    jstate_free(&J);
    return rc;
}
