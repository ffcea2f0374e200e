/* Runtime internals shared by mailbox.c, chip.c and runtime.c. */
#ifndef FTMESH_RT_INTERNAL_H
#define FTMESH_RT_INTERNAL_H

#include "ftmesh/runtime.h"

#include <pthread.h>
#include <stdatomic.h>

/* Header of a packet: one piece (at most pkt_bytes) of one transfer. */
typedef struct rt_hdr {
    const ftm_sched *sched; /* whose route table the packet follows */
    uint64_t tag;           /* (epoch << 32) | transfer tag */
    int src, dst, route;
    int hop;                /* links crossed so far */
    uint32_t len;           /* payload bytes */
    size_t off;             /* payload offset within the transfer */
} rt_hdr;

/* Slot/packet stride: header then payload, kept 64-byte aligned so that
 * payloads can be read as float/int64 in place. */
#define RT_HDR_BYTES 64
typedef char rt_hdr_fits_[sizeof(rt_hdr) <= RT_HDR_BYTES ? 1 : -1];

/* One direction of one link: a bounded single-producer single-consumer
 * circular queue of packet slots (the producer is the sending chip's thread, the
 * consumer the receiving chip's). */
typedef struct rt_mbox {
    _Atomic uint32_t head;   /* next slot to read (consumer) */
    _Atomic uint32_t tail;   /* next slot to write (producer) */
    uint32_t depth;
    size_t stride;
    unsigned char *slots;
    uint64_t bytes, pkts;    /* written by the producer only */
    struct ftm_chip *from, *to;
} rt_mbox;

int rt_mbox_init(rt_mbox *mb, uint32_t depth, size_t pkt_bytes);
void rt_mbox_free(rt_mbox *mb);
/* Slot to fill, or NULL when full; rt_mbox_push publishes it. */
unsigned char *rt_mbox_slot_in(rt_mbox *mb);
void rt_mbox_push(rt_mbox *mb);
/* Oldest packet, or NULL when empty; rt_mbox_pop releases it. */
unsigned char *rt_mbox_slot_out(rt_mbox *mb);
void rt_mbox_pop(rt_mbox *mb);

/* A packet held in a chip's own memory (transit waiting for a full link,
 * or data that arrived before the chip expected it). */
typedef struct rt_pkt {
    struct rt_pkt *next;
    unsigned char *data;     /* RT_HDR_BYTES header + payload */
} rt_pkt;

struct ftm_chip {
    ftm_rt *rt;
    int id;
    rt_mbox *in[FTM_NDIRS], *out[FTM_NDIRS]; /* NULL: no live link */
    /* Doorbell: any packet arriving or slot freeing rings it. */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    uint64_t bell;
    /* Hang report state (under mu). */
    int waiting, finished;
    ftm_stuck why;
    /* Chip-private queues. */
    rt_pkt *outq_head[FTM_NDIRS], *outq_tail[FTM_NDIRS];
    rt_pkt *early;           /* packets for this chip not yet expected */
    rt_pkt *pool;            /* free packets, reused */
    uint32_t epoch;          /* schedules executed so far (tags) */
    int rc;                  /* fn's return value */
    uint64_t sent_pkts;      /* own packets sent in this run */
    void *op_state;          /* per-op progress of a step; grown, reused */
    int op_state_cap;
    uint64_t fail_after;     /* die after sending this many (0: never) */
    pthread_t thread;
    int started;
};

struct ftm_rt {
    ftm_mesh mesh;
    size_t pkt_bytes;
    uint32_t depth;
    double hang_timeout_s;
    ftm_chip *chips;         /* [nchips] */
    rt_mbox *mbox;           /* [nchips * 4], live links only initialised */
    _Atomic uint64_t progress; /* packets moved, for the watchdog */
    _Atomic int abort;
    _Atomic int died;        /* chip that failed during the run, or -1 */
    _Atomic int running;     /* chips whose fn has not returned */
    pthread_mutex_t mu;      /* with cv: wakes the watchdog */
    pthread_cond_t cv;
    ftm_chip_fn fn;
    void *arg;
    int hung;
    pthread_mutex_t bar_mu;  /* ftm_chip_barrier: arrivals */
    int bar_count;
    _Atomic uint64_t bar_gen;
};

/* Why waiting stopped: FTM_ECHIPDEAD if a chip died, else FTM_EHANG. */
int rt_abort_code(const ftm_rt *rt);

/* Wakes chip c if it sleeps waiting for packets (its doorbell);
 * rt_wake_all wakes every healthy chip. */
void rt_wake(ftm_chip *c);
void rt_wake_all(ftm_rt *rt);

/* After its program a chip forwards until every chip has finished;
 * 0 or an error (a hang or a death elsewhere is not this chip's error). */
int rt_chip_linger(ftm_chip *chip);

#endif
