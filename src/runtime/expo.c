/* Memory a chip exposes to a neighbour by descriptor (single copy: the
 * receiver reduces straight from the sender's buffer; chip.c's header
 * says why), and how the sender gets it back: released when read, or
 * copied aside (bounced) when a step must write it first. */
#include "rt_internal.h"
#include "ftmesh/error.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>

rt_expo *rt_expo_get(ftm_chip *c)
{
    rt_expo *e = c->expo_free;
    if (e)
        c->expo_free = e->next;
    else if (!(e = malloc(sizeof *e)))
        return NULL;
    atomic_init(&e->state, RT_EXPO_OPEN);
    e->bounce = NULL;
    e->next = c->expo_busy;
    c->expo_busy = e;
    return e;
}

int rt_expo_reap(ftm_chip *c)
{
    int backed = 0;
    rt_expo **pp = &c->expo_busy;
    while (*pp) {
        rt_expo *e = *pp;
        int st = atomic_load_explicit(&e->state, memory_order_acquire);
        if (st == RT_EXPO_DONE) {
            *pp = e->next;
            free(e->bounce);
            e->bounce = NULL;
            e->next = c->expo_free;
            c->expo_free = e;
        } else {
            backed |= st != RT_EXPO_BOUNCED && st != RT_EXPO_GONE;
            pp = &e->next;
        }
    }
    return !backed;
}

/* 1 when exposure e still reads the chip's buffer and may not be written:
 * any such exposure with hold_all, else one the step's receives overlap. */
static int blocks(const rt_expo *e, int hold_all, const ftm_op *ops, int nops)
{
    int st = atomic_load_explicit(&e->state, memory_order_acquire);
    if (st == RT_EXPO_DONE || st == RT_EXPO_BOUNCED || st == RT_EXPO_GONE)
        return 0;
    if (hold_all)
        return 1;
    for (int i = 0; i < nops; i++) {
        const ftm_op *op = &ops[i];
        if (op->kind == FTM_OP_RECV && op->off < e->hi && e->lo < op->off + op->len)
            return 1;
    }
    return 0;
}

const rt_expo *rt_expo_blocking(const ftm_chip *c, int hold_all, const ftm_op *ops, int nops)
{
    for (const rt_expo *e = c->expo_busy; e; e = e->next)
        if (blocks(e, hold_all, ops, nops))
            return e;
    return NULL;
}

/* Copies exposure e aside so that its range may be written now; the
 * receiver reads the copy. A receiver already reading it is let finish
 * (it is copying, not waiting for anything). 0 or FTM_ENOMEM. */
static int bounce(rt_expo *e)
{
    size_t n = e->hi - e->lo;
    unsigned char *b = malloc(n ? n : 1);
    if (!b)
        return FTM_ENOMEM;
    memcpy(b, e->base, n);
    e->bounce = b;
    int st = RT_EXPO_OPEN;
    if (atomic_compare_exchange_strong_explicit(&e->state, &st, RT_EXPO_BOUNCED,
                                                memory_order_acq_rel, memory_order_acquire))
        return 0;
    e->bounce = NULL; /* the receiver claimed it first: it reads the buffer */
    free(b);
    while (atomic_load_explicit(&e->state, memory_order_acquire) != RT_EXPO_DONE)
        sched_yield();
    return 0;
}

/* Before a step whose receives overlap memory still exposed: the exposed
 * ranges are copied aside rather than waited for. Waiting could close a
 * cycle the schedule does not have: the neighbour may read them only at a
 * later step of its own, after data this chip sends only once this step
 * has run (with packets that data was already in the link). Copies are
 * rare: a ring or tree writes a range it sent only steps later, long
 * after it was read. 0 or FTM_ENOMEM. */
int rt_expo_bounce_blocking(ftm_chip *c, int hold_all, const ftm_op *ops, int nops)
{
    rt_expo_reap(c);
    for (rt_expo *e = c->expo_busy; e; e = e->next)
        if (blocks(e, hold_all, ops, nops)) {
            int rc = bounce(e);
            if (rc)
                return rc;
        }
    return 0;
}

void rt_expo_withdraw(ftm_chip *c)
{
    rt_expo_reap(c);
    for (rt_expo *e = c->expo_busy; e; e = e->next) {
        if (!blocks(e, 1, NULL, 0) || !bounce(e))
            continue;
        int st = RT_EXPO_OPEN; /* no memory to copy it: nobody reads it */
        if (!atomic_compare_exchange_strong_explicit(&e->state, &st, RT_EXPO_GONE,
                                                     memory_order_acq_rel, memory_order_acquire))
            while (atomic_load_explicit(&e->state, memory_order_acquire) != RT_EXPO_DONE)
                sched_yield(); /* a reader is copying it: let it finish */
    }
}

const unsigned char *rt_expo_claim(const rt_hdr *h)
{
    rt_expo *e = h->expo;
    int st = RT_EXPO_OPEN;
    if (atomic_compare_exchange_strong_explicit(&e->state, &st, RT_EXPO_READING,
                                                memory_order_acq_rel, memory_order_acquire))
        return h->data;
    if (st == RT_EXPO_GONE)
        return NULL;
    return e->bounce + (h->data - e->base); /* st == RT_EXPO_BOUNCED */
}

