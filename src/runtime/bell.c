/* The doorbell of a chip: how a chip sleeps when it has nothing to do and
 * how whoever makes work for it wakes it (see chip.c for when).
 *
 * The protocol (an eventcount). The chip arms: it reads its bell, then
 * announces in `asleep` what it would sleep for, fences, and makes one
 * more full pass over its work; only if that pass found nothing does it
 * sleep until the bell moves past the value it read. A poker publishes
 * its work, fences and rings only if it finds the chip announced (rt_poke;
 * the first such poker clears the announcement, so one wake-up is not
 * paid for twice). Of the two fenced store-then-load pairs at least one
 * sees the other: the chip's last pass sees the work, or the poker sees
 * the announcement and rings.
 *
 * The bell is read *before* the announcement: a poke that finds the chip
 * announced must move the bell past the value the chip will sleep on. Read
 * after, a poke landing in between (a stale one: a poke deferred for work
 * the chip had already done) was counted in that value and cleared the
 * announcement, so the chip slept with nobody left to ring: the next
 * poker saw no announcement (tests/test_bell.c). */
#ifdef __linux__
#define _GNU_SOURCE 1 /* syscall(2): the futex */
#endif
#include "rt_internal.h"

#ifdef __linux__
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

/* The bell itself: a futex on Linux (one system call a side, no lock),
 * else the chip's condition variable. */
#ifdef __linux__
void rt_wake(ftm_chip *c)
{
    atomic_fetch_add_explicit(&c->bell, 1, memory_order_release);
    syscall(SYS_futex, &c->bell, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

void rt_bell_wait(ftm_chip *c, uint32_t seen)
{
    while (atomic_load_explicit(&c->bell, memory_order_acquire) == seen &&
           !atomic_load(&c->rt->abort))
        syscall(SYS_futex, &c->bell, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
}
#else
void rt_wake(ftm_chip *c)
{
    pthread_mutex_lock(&c->mu);
    atomic_fetch_add_explicit(&c->bell, 1, memory_order_release);
    pthread_cond_signal(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

void rt_bell_wait(ftm_chip *c, uint32_t seen)
{
    pthread_mutex_lock(&c->mu);
    while (atomic_load_explicit(&c->bell, memory_order_acquire) == seen &&
           !atomic_load(&c->rt->abort))
        pthread_cond_wait(&c->cv, &c->mu);
    pthread_mutex_unlock(&c->mu);
}
#endif

uint32_t rt_bell_arm(ftm_chip *c, int want)
{
    /* acquire, then a release store: the read cannot move after the
     * announcement, so a poker that sees the announcement rings after it */
    uint32_t seen = atomic_load_explicit(&c->bell, memory_order_acquire);
    atomic_store_explicit(&c->asleep, want, memory_order_release);
    atomic_thread_fence(memory_order_seq_cst);
    return seen;
}

void rt_poke(ftm_chip *c, int why)
{
    atomic_thread_fence(memory_order_seq_cst);
    int v = atomic_load_explicit(&c->asleep, memory_order_acquire);
    while (v & why)
        if (atomic_compare_exchange_weak(&c->asleep, &v, 0)) {
            rt_wake(c);
            return;
        }
}

/* Deferred pokes (rt_poke_later). */
/* Transfers smaller than this ring their receiver's bell only when the
 * sender runs out of work (or returns from ftm_chip_exec): a sender that
 * goes on posting wakes its neighbour once for many steps, not once per
 * step. A bigger transfer is worth waking a chip on the other core for
 * at once. */
#define RT_DEFER_BYTES ((size_t)64 << 10)
#define RT_MAX_DEFERRED 256

void rt_poke_flush(ftm_chip *c)
{
    for (int i = 0; i < c->ndefer; i++)
        rt_poke(c->defer_to[i], c->defer_why[i]);
    c->ndefer = 0;
    c->deferred = 0;
}

void rt_poke_later(ftm_chip *c, ftm_chip *t, int why, size_t bytes)
{
    if (bytes >= RT_DEFER_BYTES) {
        rt_poke(t, why);
        return;
    }
    /* A chip that never runs out of work still rings now and then. */
    if (c->ndefer == RT_MAX_DEFER || ++c->deferred > RT_MAX_DEFERRED)
        rt_poke_flush(c);
    for (int i = 0; i < c->ndefer; i++)
        if (c->defer_to[i] == t) {
            c->defer_why[i] |= why;
            return;
        }
    c->defer_to[c->ndefer] = t;
    c->defer_why[c->ndefer++] = why;
}
