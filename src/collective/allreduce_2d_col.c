/* Column rings of the 2-D allreduce in the column layout: one ring per
 * usable column through EVERY chip of the column, including both chips of
 * a two-row band.
 *
 * After phase 1 a chip of a one-row band holds its band's sum of the whole
 * column block; a chip of an nr-row band holds its band's sum of only its
 * sub-block (allreduce_2d_share.c). A ring per sub-block through one owner
 * per band would skip the band's other row: a 2-hop edge, and two such
 * rings share three links; at ResNet-50 size (about 50 KB per column step)
 * hop latency dominates, and that makes a dead host's column phase 3.7x
 * slower than a healthy one.
 *
 * So every chip of the column is a ring member (all edges one hop, as on
 * a healthy torus), and a member contributes only where it is VALID (holds
 * its band's sum): a ring reduce-scatter sums a block into every member it
 * passes except the one that starts it, so
 *   - a member receives a range by SUM where it is valid, by COPY where it
 *     is not (its stale partial is overwritten, contributing nothing);
 *   - the member that starts a range (the successor of the range's owner)
 *     must be valid for it.
 * So the column block is dealt to owners by their successors' validity:
 * each member "starts" a balanced share taken from its valid range (the
 * most restricted members choose first), and its predecessor owns that
 * share. Two-row band (rows 16, 17) on a healthy 32-row column, southbound:
 *
 *     row 15  owns a share of (16)'s valid half   (16 starts it)
 *     row 16  owns a share of (17)'s valid half   (17 starts it)
 *     others  own any of the rest
 *
 * Every element is then summed exactly once per band, and the all-gather
 * copies the sums to everyone (whatever a member held before).
 */
#include "allreduce_2d_int.h"
#include "core/util.h"
#include "ftmesh/error.h"

#include <stdlib.h>
#include <string.h>

void ar2d_colring_free(ar2d_colring *cr)
{
    free(cr->chips);
    free(cr->route);
    free(cr->ro);
    free(cr->rf);
    free(cr->rn);
    free(cr->vf);
    free(cr->vn);
    memset(cr, 0, sizeof *cr);
}

typedef struct take { int member; size_t f, n; } take;

/* The dealing of one column block to the ring's members. */
typedef struct col_deal {
    int n;              /* members */
    size_t lo, hi;      /* the column block [lo, hi) (union of valid ranges) */
    size_t *cut;        /* [na + 1] atom bounds: atom a is [cut[a], cut[a+1]) */
    int na;
    size_t *left;       /* [na] next free element of each atom */
    int *ord;           /* [n] members, most restricted first */
    take *tk;           /* the shares taken so far */
    int nt;
} col_deal;

/* Members in ring order with their valid ranges; the block's bounds. */
static int col_members(ar2d_colring *cr, const ftm_mesh *m, const ftm_plan2d *p,
                       const ar2d_shares *sh, const int *bidx, int col, int reverse, col_deal *d)
{
    int k = 0;
    d->lo = (size_t)-1;
    d->hi = 0;
    for (int q = 0; q < p->nbands; q++) {
        int b = reverse ? p->nbands - 1 - q : q;
        const ftm_plan2d_band *bd = &p->bands[b];
        for (int t = 0; t < bd->nrows; t++) {
            int r = reverse ? bd->row0 + bd->nrows - 1 - t : bd->row0 + t;
            int chip = ftm_mesh_chip(m, r % m->rows, col);
            if (!ftm_mesh_alive(m, chip))
                return FTM_EINVAL; /* not a usable column */
            int o = bidx[chip];
            const ar2d_shares *s = &sh[b];
            cr->chips[k] = chip;
            cr->vf[k] = 0;
            cr->vn[k] = 0;
            if (s->ro[o + 1] > s->ro[o]) { /* column layout: at most one piece */
                cr->vf[k] = s->rf[s->ro[o]];
                cr->vn[k] = s->rn[s->ro[o]];
                if (cr->vf[k] < d->lo)
                    d->lo = cr->vf[k];
                if (cr->vf[k] + cr->vn[k] > d->hi)
                    d->hi = cr->vf[k] + cr->vn[k];
            }
            k++;
        }
    }
    cr->n = d->n = k;
    return 0;
}

/* Atoms: the column block cut at every valid range's ends. */
static int col_atoms(const ar2d_colring *cr, col_deal *d)
{
    int na = 0, n = d->n;
    size_t *cut = d->cut;
    cut[na++] = d->lo;
    cut[na++] = d->hi;
    for (int i = 0; i < n; i++)
        if (cr->vn[i]) {
            cut[na++] = cr->vf[i];
            cut[na++] = cr->vf[i] + cr->vn[i];
        }
    qsort(cut, (size_t)na, sizeof *cut, core_cmp_size);
    int u = 0;
    for (int i = 0; i < na; i++)
        if (u == 0 || cut[i] != cut[u - 1])
            cut[u++] = cut[i];
    d->na = na = u - 1;
    d->left = malloc(sizeof(size_t) * (size_t)(na ? na : 1));
    d->tk = malloc(sizeof(take) * (size_t)(n + 1) * (size_t)(na + 1));
    if (!d->left || !d->tk)
        return FTM_ENOMEM;
    for (int a = 0; a < na; a++)
        d->left[a] = cut[a];
    return 0;
}

static void take_add(col_deal *d, int member, size_t f, size_t n)
{
    d->tk[d->nt].member = member;
    d->tk[d->nt].f = f;
    d->tk[d->nt].n = n;
    d->nt++;
}

/* Restricted members (valid on part of the block) take their share first,
 * from the start of their valid atoms, the most restricted first. Returns
 * the number of unrestricted members. */
static int deal_restricted(const ar2d_colring *cr, col_deal *d)
{
    int n = d->n, nfree = 0;
    for (int i = 0; i < n; i++) { /* insertion sort by valid length, stable */
        int j = i;
        while (j > 0 && cr->vn[d->ord[j - 1]] > cr->vn[i]) {
            d->ord[j] = d->ord[j - 1];
            j--;
        }
        d->ord[j] = i;
    }
    size_t full = d->hi - d->lo;
    for (int q = 0; q < n; q++) {
        int i = d->ord[q];
        size_t f0, want;
        ftm_sched_block(full, n, q, &f0, &want);
        if (cr->vn[i] == full) {
            nfree++; /* unrestricted: deal_free */
            continue;
        }
        for (int a = 0; a < d->na && want > 0; a++) {
            if (d->cut[a] < cr->vf[i] || d->cut[a + 1] > cr->vf[i] + cr->vn[i] ||
                d->left[a] == d->cut[a + 1])
                continue;
            size_t g = d->cut[a + 1] - d->left[a];
            if (g > want)
                g = want;
            take_add(d, i, d->left[a], g);
            d->left[a] += g;
            want -= g;
        }
    }
    return nfree;
}

/* Unrestricted members: dealt over the free parts of the atoms in
 * proportion to their lengths (largest remainder), so that each takes one
 * range inside one atom: a range crossing an atom boundary would be two
 * transfers on the same link in the same step. */
static int deal_free(const ar2d_colring *cr, col_deal *d, int nfree)
{
    int na = d->na, n = d->n;
    size_t freelen = 0, full = d->hi - d->lo;
    for (int a = 0; a < na; a++)
        freelen += d->cut[a + 1] - d->left[a];
    if (nfree == 0 || freelen == 0)
        return 0;
    int q = 0, given = 0, *cnt = calloc((size_t)na, sizeof(int));
    size_t *rem = calloc((size_t)na, sizeof(size_t));
    if (!cnt || !rem) {
        free(cnt);
        free(rem);
        return FTM_ENOMEM;
    }
    for (int a = 0; a < na; a++) {
        size_t fl = d->cut[a + 1] - d->left[a];
        uint64_t x = (uint64_t)fl * (uint64_t)nfree; /* < 2^64: fl < 2^40, nfree <= 2^12 */
        cnt[a] = (int)(x / freelen);
        rem[a] = (size_t)(x % freelen);
        given += cnt[a];
    }
    while (given < nfree) { /* largest remainders get one more */
        int best = -1;
        for (int a = 0; a < na; a++)
            if (d->cut[a + 1] > d->left[a] && (best < 0 || rem[a] > rem[best]))
                best = a;
        cnt[best]++;
        rem[best] = 0;
        given++;
    }
    for (int a = 0; a < na; a++) {
        size_t fl = d->cut[a + 1] - d->left[a];
        for (int j = 0; j < cnt[a]; j++) {
            while (q < n && cr->vn[d->ord[q]] != full)
                q++;
            size_t f, len;
            ftm_sched_block(fl, cnt[a], j, &f, &len);
            take_add(d, d->ord[q++], d->left[a] + f, len);
        }
        if (cnt[a] > 0)
            d->left[a] = d->cut[a + 1];
    }
    free(cnt);
    free(rem);
    return 0;
}

/* Whatever is left (restricted members could not take their share): to
 * the first member valid for it. */
static int deal_leftover(const ar2d_colring *cr, col_deal *d)
{
    for (int a = 0; a < d->na; a++)
        if (d->left[a] < d->cut[a + 1]) {
            int i = 0;
            while (i < d->n && (d->cut[a] < cr->vf[i] || d->cut[a + 1] > cr->vf[i] + cr->vn[i]))
                i++;
            if (i == d->n)
                return FTM_EINTERNAL; /* every band covers the block */
            take_add(d, i, d->left[a], d->cut[a + 1] - d->left[a]);
        }
    return 0;
}

/* Ownership: position i owns what member i+1 starts. */
static int col_owners(ar2d_colring *cr, const col_deal *d)
{
    int n = d->n, nt = d->nt, w = 0;
    cr->rf = malloc(sizeof(size_t) * (size_t)(nt ? nt : 1));
    cr->rn = malloc(sizeof(size_t) * (size_t)(nt ? nt : 1));
    if (!cr->rf || !cr->rn)
        return FTM_ENOMEM;
    for (int i = 0; i < n; i++) {
        cr->ro[i] = w;
        int starter = (i + 1) % n;
        for (int t = 0; t < nt; t++)
            if (d->tk[t].member == starter) {
                cr->rf[w] = d->tk[t].f;
                cr->rn[w] = d->tk[t].n;
                w++;
            }
    }
    cr->ro[n] = w;
    return 0;
}

int ar2d_colring_build(ar2d_colring *cr, const ftm_mesh *m, const ftm_plan2d *p,
                       const ar2d_shares *sh, const int *bidx, int col, int reverse)
{
    memset(cr, 0, sizeof *cr);
    int n = 0;
    for (int b = 0; b < p->nbands; b++)
        n += p->bands[b].nrows;
    size_t nn = (size_t)(n ? n : 1);
    cr->chips = malloc(sizeof(int) * nn);
    cr->route = malloc(sizeof(int) * nn);
    cr->vf = malloc(sizeof(size_t) * nn);
    cr->vn = malloc(sizeof(size_t) * nn);
    cr->ro = calloc(nn + 1, sizeof(int));
    col_deal d = { 0 };
    d.cut = malloc(sizeof(size_t) * (2 * nn + 2));
    d.ord = malloc(sizeof(int) * nn);
    int rc = 0;
    if (!cr->chips || !cr->route || !cr->vf || !cr->vn || !cr->ro || !d.cut || !d.ord)
        rc = FTM_ENOMEM;
    if (!rc)
        rc = col_members(cr, m, p, sh, bidx, col, reverse, &d);
    if (!rc && d.lo < d.hi) { /* else an empty column block: nothing to do */
        rc = col_atoms(cr, &d);
        int nfree = rc ? 0 : deal_restricted(cr, &d);
        if (!rc)
            rc = deal_free(cr, &d, nfree);
        if (!rc)
            rc = deal_leftover(cr, &d);
        if (!rc)
            rc = col_owners(cr, &d);
    }
    free(d.cut);
    free(d.left);
    free(d.tk);
    free(d.ord);
    if (rc)
        ar2d_colring_free(cr);
    return rc;
}
