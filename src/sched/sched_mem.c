/* What schedules hold, for the callers that must know before they build:
 * the meter of a build context (sched.h: ftm_sched_ctx) counts dry runs
 * (counts and capacities, no steps or ops) and budgets (a limit on the
 * bytes the schedules built under it may take). The accounting hooks
 * (sched_room, sched_acct) are called by sched.c and sched_pack.c as
 * arrays grow and shrink. */
#include "ftmesh/sched.h"
#include "ftmesh/error.h"
#include "sched_lib.h"
#include "sched_int.h"
#include "sched_code.h"

#include <stdint.h>
#include <stdlib.h>

/* live + bytes on mt: the peak moves even when refused; FTM_ENOMEM past
 * the limit where may_refuse. */
static int meter_try(ftm_sched_meter *mt, size_t bytes, int may_refuse)
{
    size_t want = mt->live + bytes < mt->live ? SIZE_MAX : mt->live + bytes;
    if (want > mt->peak)
        mt->peak = want;
    return may_refuse && mt->limit && want > mt->limit ? FTM_ENOMEM : 0;
}

int ftm_sched_charge(const ftm_sched *s, size_t bytes)
{
    return s->meter ? meter_try(s->meter, bytes, !s->dry) : 0;
}

/* Before s's arrays grow by more bytes: FTM_ENOMEM if that would take its
 * meter past the limit (then nothing may be allocated). Dry runs are
 * counted, never refused. */
int sched_room(const ftm_sched *s, size_t more)
{
    return s->meter && !s->dry ? meter_try(s->meter, more, 1) : 0;
}

/* Counts a change of s's arrays on its meter (a hidden dry schedule,
 * ftm_sched_dry_hide, counts nothing). */
void sched_acct(const ftm_sched *s, size_t more, size_t less)
{
    ftm_sched_meter *mt = s->meter;
    if (!mt || s->dry == SCHED_DRY_HIDDEN)
        return;
    mt->live += more;
    mt->live = mt->live > less ? mt->live - less : 0;
    if (mt->live > mt->peak)
        mt->peak = mt->live;
}

void ftm_sched_dry_hide(ftm_sched *s, int hide)
{
    if (hide && s->dry == SCHED_DRY) {
        sched_acct(s, 0, ftm_sched_mem_bytes(s));
        s->dry = SCHED_DRY_HIDDEN;
    } else if (!hide && s->dry == SCHED_DRY_HIDDEN) {
        s->dry = SCHED_DRY;
        sched_acct(s, ftm_sched_mem_bytes(s), 0);
    }
}

size_t ftm_sched_mem_bytes(const ftm_sched *s)
{
    size_t n = sizeof *s + (size_t)s->nchips * sizeof *s->prog;
    for (int c = 0; c < s->nchips; c++) {
        const ftm_chip_prog *p = &s->prog[c];
        n += (size_t)p->cap_steps * sizeof(ftm_step) + (size_t)p->cap_ops * sizeof(ftm_op) +
             SCHED_CODE(p)->cap_code;
    }
    return n + (size_t)s->cap_routes * sizeof *s->routes + (size_t)s->cap_dirs +
           (size_t)s->cap_phases * sizeof *s->phases;
}
