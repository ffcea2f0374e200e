/* Fault scripts: merging one into another, see include/ftmesh/faults.h.
 * The command line's pre-run check and the trainer merge a resumed
 * checkpoint's pending events with the run's own by this one rule, so the
 * script the check passes is the script the run plays. */
#include "ftmesh/faults.h"
#include "ftmesh/error.h"

int ftm_fault_same(const ftm_fault_event *a, const ftm_fault_event *b)
{
    return a->kind == b->kind && a->r == b->r && a->c == b->c && a->repair == b->repair &&
           a->when == b->when && a->phase == b->phase && a->pkts == b->pkts &&
           (a->kind != FTM_FAULT_LINK ||
            (a->r2 == b->r2 && a->c2 == b->c2 && a->oneway == b->oneway));
}

int ftm_fault_script_merge(ftm_fault_script *dst, const ftm_fault_script *src, long start)
{
    int rc = 0, n0 = dst->n;
    for (int i = 0; src && i < src->n && !rc; i++) {
        int dup = src->ev[i].when < start; /* history: the mesh at start holds it */
        for (int j = 0; j < n0 && !dup; j++)
            dup = ftm_fault_same(&dst->ev[j], &src->ev[i]);
        if (!dup)
            rc = ftm_fault_script_add(dst, &src->ev[i]);
    }
    if (rc) /* all or nothing, as the other script builders */
        dst->n = n0;
    return rc;
}
