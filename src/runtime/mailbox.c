/* Link mailboxes: bounded SPSC circular queues of packet slots.
 *
 * The producer writes a slot, then publishes it with a release store of
 * tail; the consumer's acquire load of tail makes the slot contents visible
 * (and symmetrically for head when a slot is freed). No lock is needed on
 * the data path; the doorbells (chip.c) carry the wake-ups.
 */
#include "rt_internal.h"
#include "ftmesh/error.h"

#include <stdlib.h>
#include <string.h>

int rt_mbox_init(rt_mbox *mb, uint32_t depth, size_t pkt_bytes)
{
    memset(mb, 0, sizeof *mb);
    mb->depth = depth;
    mb->stride = RT_HDR_BYTES + pkt_bytes;
    mb->local = 1;
    if (posix_memalign((void **)&mb->slots, 64, mb->stride * depth))
        return FTM_ENOMEM;
    atomic_init(&mb->head, 0);
    atomic_init(&mb->tail, 0);
    return 0;
}

void rt_mbox_free(rt_mbox *mb)
{
    free(mb->slots);
    mb->slots = NULL;
}

unsigned char *rt_mbox_slot_in(rt_mbox *mb)
{
    uint32_t t = atomic_load_explicit(&mb->tail, memory_order_relaxed);
    uint32_t h = atomic_load_explicit(&mb->head, memory_order_acquire);
    if (t - h >= mb->depth)
        return NULL;
    return mb->slots + (size_t)(t % mb->depth) * mb->stride;
}

void rt_mbox_push(rt_mbox *mb)
{
    uint32_t t = atomic_load_explicit(&mb->tail, memory_order_relaxed);
    atomic_store_explicit(&mb->tail, t + 1, memory_order_release);
}

unsigned char *rt_mbox_slot_out(rt_mbox *mb)
{
    uint32_t h = atomic_load_explicit(&mb->head, memory_order_relaxed);
    uint32_t t = atomic_load_explicit(&mb->tail, memory_order_acquire);
    if (h == t)
        return NULL;
    return mb->slots + (size_t)(h % mb->depth) * mb->stride;
}

void rt_mbox_pop(rt_mbox *mb)
{
    uint32_t h = atomic_load_explicit(&mb->head, memory_order_relaxed);
    atomic_store_explicit(&mb->head, h + 1, memory_order_release);
}
