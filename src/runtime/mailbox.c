/* Link mailboxes: one direction of one link.
 *
 * The link protocol (what a remote link must provide to plug in here):
 * - A mailbox is a bounded single-producer single-consumer FIFO of entries.
 *   The producer is the sending chip's thread, the consumer the receiving
 *   chip's. An entry is an rt_hdr (rt_internal.h) and, for a packet, a
 *   payload of at most pkt_bytes in one of `depth` payload slots; a
 *   descriptor (hdr->expo set) has no payload: hdr->data points into the
 *   sending chip's buffer. Order is kept: entries leave in the order they
 *   entered. Capacity is bounded twice: `entries` headers (descriptors are
 *   cheap, so a chip can run many steps ahead of a sleeping neighbour) and
 *   `depth` payload slots (the link's buffer memory).
 * - Producer: rt_mbox_slot_in(mb, payload) gives the header to fill (NULL
 *   when full), rt_mbox_payload_in where the payload goes (hdr->data must
 *   point there), rt_mbox_push publishes. Consumer: rt_mbox_slot_out gives
 *   the oldest header (NULL when empty; its payload is at hdr->data), valid
 *   until rt_mbox_pop(mb, payload) releases it.
 * - Descriptors cross only links with local == 1 (both ends share memory).
 *   The receiver claims hdr->expo, reads hdr->data in place (or the
 *   sender's copy, if the sender had to write the range first) and marks
 *   it done (rt_expo in rt_internal.h). A remote link sets local = 0: the sender then sends packets
 *   only, and everything else (counters, order, dead flag, wake-ups)
 *   stays the same.
 * - Wake-ups are not the mailbox's business: after a push the producer
 *   pokes the consumer (RT_WANT_DATA), after a pop the consumer pokes the
 *   producer (RT_WANT_SLOT), after a release the reader pokes the owner
 *   (RT_WANT_RELEASE); chip.c says how a poke finds a sleeping chip.
 * - bytes/pkts count what crossed (a descriptor of n bytes counts as the
 *   ceil(n / pkt_bytes) packets the packet path would have sent), written
 *   by the producer only; dead marks a link that died (what is in it
 *   still arrives).
 *
 * Memory order: the producer writes the entry, then publishes it with a
 * release store of tail; the consumer's acquire load of tail makes it
 * visible; symmetrically for head and phead when entries and payload
 * slots are freed. No lock on the data path.
 */
#include "rt_internal.h"
#include "ftmesh/error.h"

#include <stdlib.h>
#include <string.h>

int rt_mbox_init(rt_mbox *mb, uint32_t entries, uint32_t depth, size_t pkt_bytes)
{
    memset(mb, 0, sizeof *mb);
    mb->entries = entries;
    mb->depth = depth;
    mb->pkt_bytes = pkt_bytes;
    mb->local = 1;
    if (posix_memalign((void **)&mb->hdrs, 64, (size_t)RT_HDR_BYTES * entries) ||
        posix_memalign((void **)&mb->slots, 64, pkt_bytes * depth)) {
        rt_mbox_free(mb);
        return FTM_ENOMEM;
    }
    atomic_init(&mb->head, 0);
    atomic_init(&mb->tail, 0);
    atomic_init(&mb->phead, 0);
    mb->ptail = 0;
    return 0;
}

void rt_mbox_free(rt_mbox *mb)
{
    free(mb->hdrs);
    free(mb->slots);
    mb->hdrs = mb->slots = NULL;
}

unsigned char *rt_mbox_slot_in(rt_mbox *mb, int payload)
{
    uint32_t t = atomic_load_explicit(&mb->tail, memory_order_relaxed);
    uint32_t h = atomic_load_explicit(&mb->head, memory_order_acquire);
    if (t - h >= mb->entries)
        return NULL;
    if (payload && mb->ptail - atomic_load_explicit(&mb->phead, memory_order_acquire) >= mb->depth)
        return NULL;
    return mb->hdrs + (size_t)(t % mb->entries) * RT_HDR_BYTES;
}

unsigned char *rt_mbox_payload_in(rt_mbox *mb)
{
    return mb->slots + (size_t)(mb->ptail % mb->depth) * mb->pkt_bytes;
}

void rt_mbox_push(rt_mbox *mb, int payload)
{
    uint32_t t = atomic_load_explicit(&mb->tail, memory_order_relaxed);
    mb->ptail += payload ? 1 : 0;
    atomic_store_explicit(&mb->tail, t + 1, memory_order_release);
}

unsigned char *rt_mbox_slot_out(rt_mbox *mb)
{
    uint32_t h = atomic_load_explicit(&mb->head, memory_order_relaxed);
    uint32_t t = atomic_load_explicit(&mb->tail, memory_order_acquire);
    if (h == t)
        return NULL;
    return mb->hdrs + (size_t)(h % mb->entries) * RT_HDR_BYTES;
}

void rt_mbox_pop(rt_mbox *mb, int payload)
{
    if (payload) {
        uint32_t p = atomic_load_explicit(&mb->phead, memory_order_relaxed);
        atomic_store_explicit(&mb->phead, p + 1, memory_order_release);
    }
    uint32_t h = atomic_load_explicit(&mb->head, memory_order_relaxed);
    atomic_store_explicit(&mb->head, h + 1, memory_order_release);
}
