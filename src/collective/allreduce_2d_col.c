/* Column rings of the 2-D allreduce in the column layout: one ring per
 * usable column through EVERY chip of the column, including both chips of
 * a two-row band.
 *
 * After phase 1 a chip of a one-row band holds its band's sum of the whole
 * column block; a chip of an nr-row band holds its band's sum of only its
 * sub-block (allreduce_2d_share.c). Earlier versions ran one ring per
 * sub-block through one owner per band, so a ring skipped the band's other
 * row: a 2-hop edge, and the two sub-block rings shared three links. At
 * ResNet-50 size (about 50 KB per column step) hop latency dominates, and
 * that made a dead host's column phase 3.7x slower than a healthy one.
 *
 * Here every chip of the column is a ring member (all edges one hop, as on
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
#include "twod_share.h"
#include "ftmesh/error.h"

#include <stdlib.h>
#include <string.h>

void ftm_twod_colring_free(ftm_twod_colring *cr)
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

static int cmp_sz(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return (x > y) - (x < y);
}

typedef struct take { int member; size_t f, n; } take;

int ftm_twod_colring_build(ftm_twod_colring *cr, const ftm_mesh *m, const ftm_plan2d *p,
                           const ftm_twod_shares *sh, const int *bidx, int col, int reverse)
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
    size_t *cut = malloc(sizeof(size_t) * (2 * nn + 2)), *left = NULL;
    take *tk = NULL;
    int *ord = malloc(sizeof(int) * nn), rc = 0;
    if (!cr->chips || !cr->route || !cr->vf || !cr->vn || !cr->ro || !cut || !ord) {
        rc = FTM_ENOMEM;
        goto out;
    }
    /* Members in ring order with their valid ranges. */
    int k = 0;
    size_t lo = (size_t)-1, hi = 0;
    for (int q = 0; q < p->nbands; q++) {
        int b = reverse ? p->nbands - 1 - q : q;
        const ftm_plan2d_band *bd = &p->bands[b];
        for (int t = 0; t < bd->nrows; t++) {
            int r = reverse ? bd->row0 + bd->nrows - 1 - t : bd->row0 + t;
            int chip = ftm_mesh_chip(m, r % m->rows, col);
            if (!ftm_mesh_alive(m, chip)) {
                rc = FTM_EINVAL; /* not a usable column */
                goto out;
            }
            int o = bidx[chip];
            const ftm_twod_shares *s = &sh[b];
            cr->chips[k] = chip;
            cr->vf[k] = 0;
            cr->vn[k] = 0;
            if (s->ro[o + 1] > s->ro[o]) { /* column layout: at most one piece */
                cr->vf[k] = s->rf[s->ro[o]];
                cr->vn[k] = s->rn[s->ro[o]];
                if (cr->vf[k] < lo)
                    lo = cr->vf[k];
                if (cr->vf[k] + cr->vn[k] > hi)
                    hi = cr->vf[k] + cr->vn[k];
            }
            k++;
        }
    }
    cr->n = n = k;
    if (lo >= hi)
        goto out; /* an empty column block: nothing to do */
    /* Atoms: the column block cut at every valid range's ends. */
    int na = 0;
    cut[na++] = lo;
    cut[na++] = hi;
    for (int i = 0; i < n; i++)
        if (cr->vn[i]) {
            cut[na++] = cr->vf[i];
            cut[na++] = cr->vf[i] + cr->vn[i];
        }
    qsort(cut, (size_t)na, sizeof *cut, cmp_sz);
    int u = 0;
    for (int i = 0; i < na; i++)
        if (u == 0 || cut[i] != cut[u - 1])
            cut[u++] = cut[i];
    na = u - 1; /* atoms [cut[a], cut[a+1]) */
    left = malloc(sizeof(size_t) * (size_t)(na ? na : 1));
    tk = malloc(sizeof(take) * (size_t)(n + 1) * (size_t)(na + 1));
    if (!left || !tk) {
        rc = FTM_ENOMEM;
        goto out;
    }
    for (int a = 0; a < na; a++)
        left[a] = cut[a]; /* next free element of atom a */
    /* Most restricted members choose first (insertion sort, stable). */
    for (int i = 0; i < n; i++) {
        int j = i;
        while (j > 0 && cr->vn[ord[j - 1]] > cr->vn[i]) {
            ord[j] = ord[j - 1];
            j--;
        }
        ord[j] = i;
    }
    /* Restricted members (valid on part of the block) take their share
     * first, from the start of their valid atoms. */
    int nt = 0, nfree = 0;
    size_t full = hi - lo, freelen = 0;
    for (int q = 0; q < n; q++) {
        int i = ord[q];
        size_t f0, want;
        ftm_sched_block(full, n, q, &f0, &want);
        if (cr->vn[i] == full) {
            nfree++; /* unrestricted: below */
            continue;
        }
        for (int a = 0; a < na && want > 0; a++) {
            if (cut[a] < cr->vf[i] || cut[a + 1] > cr->vf[i] + cr->vn[i] || left[a] == cut[a + 1])
                continue;
            size_t g = cut[a + 1] - left[a];
            if (g > want)
                g = want;
            tk[nt].member = i;
            tk[nt].f = left[a];
            tk[nt].n = g;
            nt++;
            left[a] += g;
            want -= g;
        }
    }
    /* Unrestricted members: dealt over the free parts of the atoms in
     * proportion to their lengths (largest remainder), so that each takes
     * one range inside one atom: a range crossing an atom boundary would
     * be two transfers on the same link in the same step. */
    for (int a = 0; a < na; a++)
        freelen += cut[a + 1] - left[a];
    if (nfree > 0 && freelen > 0) {
        int q = 0, given = 0, *cnt = calloc((size_t)na, sizeof(int));
        size_t *rem = calloc((size_t)na, sizeof(size_t));
        if (!cnt || !rem) {
            free(cnt);
            free(rem);
            rc = FTM_ENOMEM;
            goto out;
        }
        for (int a = 0; a < na; a++) {
            size_t fl = cut[a + 1] - left[a];
            uint64_t x = (uint64_t)fl * (uint64_t)nfree; /* < 2^64: fl < 2^40, nfree <= 2^12 */
            cnt[a] = (int)(x / freelen);
            rem[a] = (size_t)(x % freelen);
            given += cnt[a];
        }
        while (given < nfree) { /* largest remainders get one more */
            int best = -1;
            for (int a = 0; a < na; a++)
                if (cut[a + 1] > left[a] && (best < 0 || rem[a] > rem[best]))
                    best = a;
            cnt[best]++;
            rem[best] = 0;
            given++;
        }
        for (int a = 0; a < na; a++) {
            size_t fl = cut[a + 1] - left[a];
            for (int j = 0; j < cnt[a]; j++) {
                while (q < n && cr->vn[ord[q]] != full)
                    q++;
                size_t f, len;
                ftm_sched_block(fl, cnt[a], j, &f, &len);
                tk[nt].member = ord[q++];
                tk[nt].f = left[a] + f;
                tk[nt].n = len;
                nt++;
            }
            if (cnt[a] > 0)
                left[a] = cut[a + 1];
        }
        free(cnt);
        free(rem);
    }
    /* Whatever is left (restricted members could not take their share):
     * to the first member valid for it. */
    for (int a = 0; a < na; a++)
        if (left[a] < cut[a + 1]) {
            int i = 0;
            while (i < n && (cut[a] < cr->vf[i] || cut[a + 1] > cr->vf[i] + cr->vn[i]))
                i++;
            if (i == n) {
                rc = FTM_EINVAL; /* cannot happen: every band covers the block */
                goto out;
            }
            tk[nt].member = i;
            tk[nt].f = left[a];
            tk[nt].n = cut[a + 1] - left[a];
            nt++;
        }
    /* Position i owns what member i+1 starts. */
    cr->rf = malloc(sizeof(size_t) * (size_t)(nt ? nt : 1));
    cr->rn = malloc(sizeof(size_t) * (size_t)(nt ? nt : 1));
    if (!cr->rf || !cr->rn) {
        rc = FTM_ENOMEM;
        goto out;
    }
    int w = 0;
    for (int i = 0; i < n; i++) {
        cr->ro[i] = w;
        int starter = (i + 1) % n;
        for (int t = 0; t < nt; t++)
            if (tk[t].member == starter) {
                cr->rf[w] = tk[t].f;
                cr->rn[w] = tk[t].n;
                w++;
            }
    }
    cr->ro[n] = w;
out:
    free(cut);
    free(left);
    free(tk);
    free(ord);
    if (rc)
        ftm_twod_colring_free(cr);
    return rc;
}

static int mod(int a, int n) { return ((a % n) + n) % n; }

int ftm_twod_colring_step(ftm_sched *s, const ftm_twod_colring *cr, size_t elem, ftm_red red, int k)
{
    int n = cr->n, rs = k < n - 1, kk = rs ? k : k - (n - 1);
    for (int i = 0; i < n; i++) {
        int b = rs ? mod(i - kk - 1, n) : mod(i - kk, n), to = (i + 1) % n;
        for (int j = cr->ro[b]; j < cr->ro[b + 1]; j++) {
            size_t f = cr->rf[j], len = cr->rn[j];
            int valid = f >= cr->vf[to] && f + len <= cr->vf[to] + cr->vn[to];
            int rc = ftm_sched_xfer(s, cr->route[i], f * elem, f * elem, len * elem,
                                    rs && valid ? red : FTM_RED_COPY);
            if (rc)
                return rc;
        }
    }
    return 0;
}
