/* What schedules hold, for the callers that must know before they build:
 * dry runs (counts and capacities, no steps or ops) and budgets (a limit
 * on the bytes the schedules initialised under it may take); sched.h
 * says how to use them. The accounting hooks (sched_room, sched_acct)
 * are called by sched.c and sched_pack.c as arrays grow and shrink. */
#include "ftmesh/sched.h"
#include "ftmesh/error.h"
#include "sched_lib.h"
#include "sched_int.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

/* This thread's dry run (sched.h): live bytes of its dry schedules. */
static _Thread_local struct {
    int on;
    size_t live, peak;
} dry;

void ftm_sched_dry_begin(void)
{
    dry.on = 1;
    dry.live = dry.peak = 0;
}

int ftm_sched_dry_active(void)
{
    return dry.on;
}

size_t ftm_sched_dry_end(void)
{
    dry.on = 0;
    return dry.peak;
}

void ftm_sched_dry_charge(size_t bytes)
{
    if (dry.on && dry.live + bytes > dry.peak)
        dry.peak = dry.live + bytes;
}

/* This thread's budget (sched.h): live bytes of the schedules initialised
 * under it. gen tells them from schedules of an earlier budget, which
 * must count nothing when freed (0: no budget). */
static _Thread_local struct {
    uint64_t gen;
    size_t limit, live, peak;
} budget;

void ftm_sched_budget_begin(size_t limit)
{
    static _Atomic uint64_t gens;
    budget.gen = atomic_fetch_add_explicit(&gens, 1, memory_order_relaxed) + 1;
    budget.limit = limit;
    budget.live = budget.peak = 0;
}

size_t ftm_sched_budget_end(void)
{
    budget.gen = 0;
    return budget.peak;
}

/* live + bytes against the limit; the peak moves even when refused. */
static int budget_try(size_t bytes)
{
    size_t want = budget.live + bytes < budget.live ? SIZE_MAX : budget.live + bytes;
    if (want > budget.peak)
        budget.peak = want;
    return want > budget.limit ? FTM_ENOMEM : 0;
}

int ftm_sched_budget_charge(size_t bytes)
{
    return budget.gen ? budget_try(bytes) : 0;
}

static int budgeted(const ftm_sched *s)
{
    return !s->dry && s->budget && s->budget == budget.gen;
}

/* Before s's arrays grow by more bytes: FTM_ENOMEM if that would take its
 * budget past the limit (then nothing may be allocated). */
int sched_room(const ftm_sched *s, size_t more)
{
    return budgeted(s) ? budget_try(more) : 0;
}

/* Counts a change of a dry or budgeted schedule's arrays. */
void sched_acct(const ftm_sched *s, size_t more, size_t less)
{
    size_t *live, *peak;
    if (s->dry == 1) {
        live = &dry.live;
        peak = &dry.peak;
    } else if (budgeted(s)) {
        live = &budget.live;
        peak = &budget.peak;
    } else {
        return;
    }
    *live += more;
    *live = *live > less ? *live - less : 0;
    if (*live > *peak)
        *peak = *live;
}

/* s->dry: 0 built for real, 1 dry and counted, 2 dry and hidden. */
void ftm_sched_dry_hide(ftm_sched *s, int hide)
{
    if (hide && s->dry == 1) {
        sched_acct(s, 0, ftm_sched_mem_bytes(s));
        s->dry = 2;
    } else if (!hide && s->dry == 2) {
        s->dry = 1;
        sched_acct(s, ftm_sched_mem_bytes(s), 0);
    }
}

size_t ftm_sched_mem_bytes(const ftm_sched *s)
{
    size_t n = sizeof *s + (size_t)s->nchips * sizeof *s->prog;
    for (int c = 0; c < s->nchips; c++)
        n += (size_t)s->prog[c].cap_steps * sizeof(ftm_step) +
             (size_t)s->prog[c].cap_ops * sizeof(ftm_op) + s->prog[c].cap_code;
    return n + (size_t)s->cap_routes * sizeof *s->routes + (size_t)s->cap_dirs +
           (size_t)s->cap_phases * sizeof *s->phases;
}

uint64_t sched_budget_gen(void)
{
    return budget.gen;
}
