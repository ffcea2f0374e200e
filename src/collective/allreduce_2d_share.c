/* Shares: what each chip of a band owns after the band's reduce-scatter.
 *
 * Two layouts.
 *
 * COLUMN layout (the default). A column is usable when every band has all
 * of its chips in that column alive; the half is split into U balanced
 * blocks, one per usable column, and within a band of nr rows the block of
 * a usable column is split into nr sub-blocks, one per chip of the column.
 * So every band owns the same elements in the same columns and phase 2's
 * column rings stay inside their column. Chips of unusable columns (the
 * column of a dead chip) own nothing: they relay in their band's ring and
 * forward. The dead chips' shares are thereby adopted by all usable
 * columns: each owns C/U of a healthy share (a dead host on 32 columns:
 * 32/30, +6.7% bytes per ring step).
 *
 *     4 x 4 torus, X dead at (2,1): column 1 unusable, U = 3 blocks a c d
 *        col:  0    1    2    3
 *      row 0   a    .    c    d      rows 1 and 2 form a band: there
 *      row 1   a0   .    c0   d0     block a is split a0 (row 1) and
 *      row 2   a1   X    c1   d1     a1 (row 2), and so on
 *      row 3   a    .    c    d
 *
 * DRIFT layout (when many columns are unusable): a band of n chips splits
 * the half into n balanced blocks and lists its chips by (column, row):
 * chip number i owns block i. Balanced in every band, but the owners of a
 * band with holes drift up to about a column from the elements' home
 * column, and phase 2 pays for the crossings (measured on a 32x32 torus
 * with a dead host: the column phase 5x slower than healthy, +19% in all,
 * against +7% for the column layout).
 *
 * Measured and dropped: each chip keeps its own sub-block and the dead
 * chips' orphan sub-blocks are dealt out in n thin slices. Balanced and no
 * drift, but each slice's column ring runs from the dead column to a far
 * column and those long overlapping routes made the column phase 20x
 * slower.
 */
#include "allreduce_2d_int.h"
#include "ftmesh/sched.h"
#include "ftmesh/error.h"

#include <stdlib.h>
#include <string.h>

void ar2d_shares_free(ar2d_shares *sh)
{
    free(sh->start);
    free(sh->len);
    free(sh->owner);
    free(sh->ro);
    free(sh->rf);
    free(sh->rn);
    memset(sh, 0, sizeof *sh);
}

int ar2d_shares_build(const ftm_mesh *m, const ftm_plan2d_band *b, size_t first, size_t count,
                          const unsigned char *usable, ar2d_shares *sh)
{
    memset(sh, 0, sizeof *sh);
    int n = b->n, C = m->cols, U = 0;
    size_t np = (size_t)(n ? n : 1);
    sh->n = n;
    sh->start = malloc(sizeof(size_t) * np);
    sh->len = malloc(sizeof(size_t) * np);
    sh->owner = malloc(sizeof(int) * np);
    sh->ro = calloc(np + 1, sizeof(int));
    sh->rf = malloc(sizeof(size_t) * np);
    sh->rn = malloc(sizeof(size_t) * np);
    if (!sh->start || !sh->len || !sh->owner || !sh->ro || !sh->rf || !sh->rn) {
        ar2d_shares_free(sh);
        return FTM_ENOMEM;
    }
    for (int c = 0; usable && c < C; c++)
        U += usable[c] != 0;
    int k = 0;
    for (int i = 0; i < n; i++) {
        size_t f, len;
        if (usable) { /* owners are in (column, row) order */
            int chip = b->owners[i], c = ftm_mesh_col(m, chip), u = 0;
            sh->ro[i] = k;
            if (!usable[c])
                continue;
            for (int q = 0; q < c; q++)
                u += usable[q] != 0;
            size_t bf, bn, sf;
            ftm_sched_block(count, U, u, &bf, &bn);
            ftm_sched_block(bn, b->nrows, ftm_mesh_row(m, chip) - b->row0, &sf, &len);
            f = bf + sf;
        } else {
            ftm_sched_block(count, n, i, &f, &len);
            sh->ro[i] = k;
        }
        if (len == 0)
            continue; /* owns nothing */
        sh->start[k] = sh->rf[k] = first + f;
        sh->len[k] = sh->rn[k] = len;
        sh->owner[k] = i;
        k++;
    }
    sh->ro[n] = k;
    sh->npieces = k;
    return 0;
}

int ar2d_shares_find(const ar2d_shares *sh, size_t x)
{
    int lo = 0, hi = sh->npieces - 1;
    while (lo < hi) { /* last piece with start <= x */
        int mid = (lo + hi + 1) / 2;
        if (sh->start[mid] <= x)
            lo = mid;
        else
            hi = mid - 1;
    }
    return sh->owner[lo];
}
