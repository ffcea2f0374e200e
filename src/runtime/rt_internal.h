/* Runtime internals shared by mailbox.c, chip.c and runtime.c. */
#ifndef FTMESH_RT_INTERNAL_H
#define FTMESH_RT_INTERNAL_H

#include "ftmesh/runtime.h"
#include "ftmesh/trace.h"

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
    _Atomic int dead;        /* the link died: nothing more goes in (what
                                is already in it still arrives) */
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

/* An injected failure armed on a chip (inject.c). */
typedef struct rt_action {
    int nchips;              /* chips that die (0: a link dies instead) */
    int chips[4];
    int link_chip, link_dir, oneway;
} rt_action;

#define RT_MAX_NOTICE 16

/* ---- transport seam ------------------------------------------------------
 * A runtime may hold only some of the chips (a process of a run spread
 * over processes, src/mpi): it runs threads for its local chips only, and
 * a transport carries the links to chips elsewhere. A mailbox of such a
 * link is a normal mailbox on each side: on the sending side the transport
 * is its consumer, on the receiving side its producer (its chip pointer at
 * that end is the transport's doorbell, so publishing and popping wake the
 * transport). The hooks are called by the runtime; NULL net: every chip is
 * local and nothing below is used. */
typedef struct rt_net {
    void *ctx;
    /* ftm_rt_run: before the chip threads start, after they all joined
     * (settles the links, merges failures and per-chip results). */
    int (*run_begin)(ftm_rt *rt);
    int (*run_end)(ftm_rt *rt);
    void (*chip_done)(ftm_rt *rt);            /* a local chip's fn returned */
    void (*barrier)(ftm_rt *rt, uint64_t gen); /* every local chip reached it */
    void (*link_killed)(ftm_rt *rt, int chip, int dir, int oneway);
    int (*declare)(ftm_rt *rt, const ftm_sched *s);
    int (*combine)(ftm_rt *rt, void *v, size_t n, int kind);
    void (*detach)(ftm_rt *rt);               /* from ftm_rt_destroy */
} rt_net;
enum { RT_COMBINE_SUM_U64 = 0, RT_COMBINE_MAX_F64 = 1 };
/* Set by a transport for the process: called by ftm_rt_create on every new
 * runtime (it sets rt->net and rt->local, or leaves them NULL). */
extern int (*rt_net_attach)(ftm_rt *rt);

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
    uint64_t fail_after;     /* fire `pending` after sending this many (0: never) */
    rt_action pending;       /* what happens then */
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
    /* Injected failures and who noticed them (inject.c), under mu. */
    unsigned char *killed;   /* [nchips] 1: died in this runtime's runs */
    _Atomic int link_seen;   /* a chip noticed a dead link */
    ftm_rt_notice notice[RT_MAX_NOTICE];
    int nnotice;
    _Atomic int running;     /* chips whose fn has not returned */
    pthread_mutex_t mu;      /* with cv: wakes the watchdog */
    pthread_cond_t cv;
    ftm_chip_fn fn;
    void *arg;
    int hung;
    pthread_mutex_t bar_mu;  /* ftm_chip_barrier: arrivals */
    int bar_count;
    _Atomic uint64_t bar_gen;
    ftm_trace *trace;        /* event recorder, NULL: not recording */
    /* Transport seam (NULL: every chip is local). */
    rt_net *net;
    unsigned char *local;    /* [nchips] 1: this process runs the chip */
    int nlocal;              /* healthy local chips */
    _Atomic int stalled;     /* watchdog: this process is stalled (net) */
};

/* 1 when this process runs chip c. */
static inline int rt_is_local(const ftm_rt *rt, int c) { return !rt->local || rt->local[c]; }

/* The run's recorder or NULL: the one check the hot path pays when off. */
#define RT_TRACE(c) ((c)->rt->trace)

/* Why waiting stopped: FTM_ECHIPDEAD if a chip died, FTM_ELINKDEAD if a
 * chip noticed a dead link, else FTM_EHANG. */
int rt_abort_code(const ftm_rt *rt);

/* inject.c: the armed failure of c fires (after its fail_after-th packet);
 * FTM_ECHIPDEAD when c itself dies, else 0. */
int rt_fire(ftm_chip *c);
/* c found link d dead ("send", "forward" or "receive"): records who
 * noticed, tells every chip (the run stops) and returns FTM_ELINKDEAD. */
int rt_notice(ftm_chip *c, int d, int inbound, const char *how);
/* 1 when the directed link chip->d has died (its mailbox is marked). */
int rt_link_dead(const ftm_chip *c, int d, int inbound);

/* Wakes chip c if it sleeps waiting for packets (its doorbell);
 * rt_wake_all wakes every healthy chip. */
void rt_wake(ftm_chip *c);
void rt_wake_all(ftm_rt *rt);

/* After its program a chip forwards until every chip has finished;
 * 0 or an error (a hang or a death elsewhere is not this chip's error). */
int rt_chip_linger(ftm_chip *chip);

#endif
