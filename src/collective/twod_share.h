/* Internal to the 2-D allreduce: which chip of a band owns which elements
 * after the band's reduce-scatter (see allreduce_2d_share.c). */
#ifndef FTMESH_TWOD_SHARE_H
#define FTMESH_TWOD_SHARE_H

#include <stddef.h>
#include "ftmesh/mesh.h"
#include "ftmesh/plan2d.h"

typedef struct ftm_twod_shares {
    int n;               /* owners: the band's chips, in band->owners order */
    int npieces;
    size_t *start, *len; /* [npieces] pieces sorted by start (absolute elements) */
    int *owner;          /* [npieces] owner index of each piece */
    int *ro;             /* [n + 1] owner i's pieces: rf/rn[ro[i] .. ro[i+1]) */
    size_t *rf, *rn;     /* [npieces] pieces grouped by owner */
} ftm_twod_shares;

/* Shares of elements [first, first + count) in band b of mesh m. With
 * usable (per column, 1 = every band has all its chips of that column),
 * the column layout; with usable == NULL, the drift layout. */
int ftm_twod_shares_build(const ftm_mesh *m, const ftm_plan2d_band *b, size_t first, size_t count,
                          const unsigned char *usable, ftm_twod_shares *sh);
void ftm_twod_shares_free(ftm_twod_shares *sh);
/* Owner index of absolute element x (which must lie in the shared range). */
int ftm_twod_shares_find(const ftm_twod_shares *sh, size_t x);

#endif
