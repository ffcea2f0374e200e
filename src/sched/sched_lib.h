/* Schedule calls for the library's other modules, not exported: not part
 * of the product's API (include/ftmesh/sched.h). */
#ifndef FTMESH_SCHED_LIB_H
#define FTMESH_SCHED_LIB_H

#include "ftmesh/sched.h"

/* The one-hop route from chip a in direction d (to its neighbour b),
 * made once: cache[a * 4 + d] holds its id after the first call (the
 * caller's [chips x 4] ints, -1 at first). The id, or an error of
 * ftm_sched_route. */
int sched_hop_route(ftm_sched *s, int *cache, int a, int d, int b);

/* The values of ftm_sched.dry: built for real, dry and counted on its
 * meter, dry and set aside (ftm_sched_dry_hide). */
enum { SCHED_REAL = 0, SCHED_DRY = 1, SCHED_DRY_HIDDEN = 2 };

/* A dry schedule set aside: hide 1 stops counting s (as if freed: its
 * bytes leave the live total and freeing it later counts nothing), hide 0
 * counts it again. Lets a dry run keep a schedule it would rebuild,
 * instead of rebuilding it. No effect on schedules built outside dry runs. */
void ftm_sched_dry_hide(ftm_sched *s, int hide);

/* Where chip's packed program goes on after cur (for a reader that
 * prefetches the next step), or NULL when s is not packed. */
const void *ftm_sched_code_at(const ftm_sched *s, int chip, const ftm_sched_cur *cur);

#endif
