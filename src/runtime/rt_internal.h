/* Runtime internals shared by mailbox.c, chip.c and runtime.c. */
#ifndef FTMESH_RT_INTERNAL_H
#define FTMESH_RT_INTERNAL_H

#include "ftmesh/runtime.h"
#include "ftmesh/trace.h"

#include <pthread.h>
#include <stdatomic.h>

/* Memory a chip exposed to a neighbour by a descriptor (bytes [lo, hi) of
 * its buffer, starting at base). The receiver claims it (OPEN -> READING),
 * reads it in place and sets DONE. A sender that must write that range
 * again before it was read copies it aside first (OPEN -> BOUNCED: the
 * receiver then reads the copy); it never waits for a receiver that has
 * not started reading. ftm_chip_exec returns once every exposure is DONE
 * or BOUNCED. */
/* GONE: withdrawn, unread, by a chip whose run stopped and could not copy
 * it aside (rt_expo_withdraw); its reader's claim fails. */
enum { RT_EXPO_OPEN = 0, RT_EXPO_READING, RT_EXPO_DONE, RT_EXPO_BOUNCED, RT_EXPO_GONE };
typedef struct rt_expo {
    _Atomic int state;       /* RT_EXPO_* */
    size_t lo, hi;
    const unsigned char *base; /* the sender's buffer + lo */
    unsigned char *bounce;   /* BOUNCED: the copy (freed when DONE) */
    int peer, dir;           /* for the hang report */
    struct rt_expo *next;
} rt_expo;

/* Header of a packet: one piece (at most pkt_bytes) of one transfer, or a
 * descriptor (expo != NULL): a range of the sending chip's memory, any
 * length, that the receiver reads in place (one-hop transfers only). */
typedef struct rt_hdr {
    const ftm_sched *sched; /* whose route table the packet follows */
    uint64_t tag;           /* (epoch << 32) | transfer tag */
    size_t off;             /* payload offset within the transfer */
    size_t len;             /* payload bytes */
    int src, dst, route;
    int hop;                /* links crossed so far */
    const unsigned char *data; /* the payload: a mailbox payload slot, the
                                  chip's own copy, or (a descriptor) the
                                  sender's buffer */
    rt_expo *expo;          /* descriptor: released once read; NULL: a packet */
} rt_hdr;

/* Header size; a packet kept in a chip's memory is the header then the
 * payload (64-byte aligned so that payloads can be read as float/int64
 * in place, like the mailbox's payload slots). */
#define RT_HDR_BYTES 64
typedef char rt_hdr_fits_[sizeof(rt_hdr) <= RT_HDR_BYTES ? 1 : -1];

/* One direction of one link (mailbox.c: the link protocol): a bounded
 * single-producer single-consumer FIFO of headers, with payload slots for
 * packets (the producer is the sending chip's thread, the consumer the
 * receiving chip's). */
typedef struct rt_mbox {
    _Atomic uint32_t head;   /* next entry to read (consumer) */
    _Atomic uint32_t tail;   /* next entry to write (producer) */
    _Atomic uint32_t phead;  /* next payload slot to free (consumer) */
    uint32_t ptail;          /* next payload slot to fill (producer only) */
    uint32_t entries, depth; /* headers; payload slots */
    size_t pkt_bytes;
    unsigned char *hdrs;     /* [entries] RT_HDR_BYTES each */
    unsigned char *slots;    /* [depth] pkt_bytes each */
    uint64_t bytes, pkts;    /* written by the producer only */
    int local;               /* 1: both ends share memory, descriptors may
                                cross it (0: a remote link, packets only) */
    _Atomic int dead;        /* the link died: nothing more goes in (what
                                is already in it still arrives) */
    struct ftm_chip *from, *to;
} rt_mbox;

int rt_mbox_init(rt_mbox *mb, uint32_t entries, uint32_t depth, size_t pkt_bytes);
void rt_mbox_free(rt_mbox *mb);
/* Header to fill (with a payload slot if payload), or NULL when full;
 * rt_mbox_payload_in: that payload slot; rt_mbox_push publishes. */
unsigned char *rt_mbox_slot_in(rt_mbox *mb, int payload);
unsigned char *rt_mbox_payload_in(rt_mbox *mb);
void rt_mbox_push(rt_mbox *mb, int payload);
/* Oldest header, or NULL when empty; rt_mbox_pop releases it (and its
 * payload slot if it had one). */
unsigned char *rt_mbox_slot_out(rt_mbox *mb);
void rt_mbox_pop(rt_mbox *mb, int payload);

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
/* Under rt->mu: records a notice, one per (chip, dir, how). Past
 * RT_MAX_NOTICE it keeps the least in a fixed order (chip, dir, how), so
 * processes that merge each other's lists end with the same ones and
 * rebuild the same mesh (inject.c). */
struct ftm_rt;
void rt_notice_add(struct ftm_rt *rt, ftm_rt_notice nt);
#define RT_MAX_DEFER 8

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
    /* between runs: buf (bytes) of the process that runs chip, to all */
    int (*bcast)(ftm_rt *rt, void *buf, size_t bytes, int chip);
    void (*detach)(ftm_rt *rt);               /* from ftm_rt_destroy */
    /* NULL, or: a local chip's thread just published a packet on its
     * link (chip, dir) that leaves the process; the transport sends it
     * from this thread (instead of being poked) */
    void (*pushed)(ftm_rt *rt, int chip, int dir);
} rt_net;
enum { RT_COMBINE_SUM_U64 = 0, RT_COMBINE_MAX_F64 = 1, RT_COMBINE_SUM_F64 = 2 };
/* Set by a transport for the process: called by ftm_rt_create on every new
 * runtime (it sets rt->net and rt->local, or leaves them NULL). */
extern int (*rt_net_attach)(ftm_rt *rt);

struct ftm_chip {
    ftm_rt *rt;
    int id;
    rt_mbox *in[FTM_NDIRS], *out[FTM_NDIRS]; /* NULL: no live link */
    /* Doorbell (bell.c: the wake-up protocol). bell changes under mu and
     * is read without it; asleep: the chip announced it may sleep, so
     * whoever makes work for it must ring (rt_poke). */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    _Atomic uint32_t bell;   /* a futex word on Linux */
    _Atomic int asleep;      /* RT_WANT_* it sleeps for; 0: awake */
    _Atomic uint64_t moved;  /* packets it moved, for the watchdog (only
                                the chip writes it) */
    /* Pokes of small transfers wait until the chip runs out of work
     * (chip.c: poke_later), so that one wake-up carries many steps. */
    struct ftm_chip *defer_to[RT_MAX_DEFER];
    int defer_why[RT_MAX_DEFER], ndefer;
    int deferred;            /* pokes deferred since the last flush */
    rt_expo *expo_busy;      /* its memory exposed by descriptors, not yet released */
    rt_expo *expo_free;      /* released records, reused */
    rt_expo *expo_lost;      /* records of an aborted run (maybe still
                                referenced from a mailbox): never reused */
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
    void *op_state;          /* per-op progress of a step (rt_op_state[]);
                                grown, reused */
    int op_state_cap;
    uint64_t fail_after;     /* fire `pending` after sending this many (0: never) */
    rt_action pending;       /* what happens then */
    int armed_left;          /* the last run ended with `pending` not fired */
    pthread_t thread;
    int started;
    int fail_traced;         /* its death is in this run's trace */
};

struct ftm_rt {
    ftm_mesh mesh;
    size_t pkt_bytes;
    uint32_t depth, entries; /* payload slots and headers per mailbox */
    double hang_timeout_s;
    int single_copy;         /* !ftm_rt_config.packets_only */
    ftm_chip *chips;         /* [nchips] */
    rt_mbox *mbox;           /* [nchips * 4], live links only initialised */
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
    int spent;               /* a run stopped part-way: no more runs */
    _Atomic int hung;        /* the run stopped as a hang (watchdog, or MPI's
                              * progress thread: both write it) */
    pthread_mutex_t bar_mu;  /* ftm_chip_barrier: arrivals */
    int bar_count;
    _Atomic uint64_t bar_gen;
    /* ftm_chip_barrier_reduce: barrier gen combines into bar_acc[gen & 1]
     * (the local chips' values; over processes the transport then writes
     * the result there before opening the barrier). A chip can reach
     * gen + 2, which reuses the row, only after every chip passed gen + 1,
     * hence after every chip read gen's result. */
    int64_t bar_acc[2][FTM_BARRIER_WORDS];
    int bar_nsum, bar_nmax;  /* of the barrier being filled */
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
/* inject.c: clears c's armed failure; 1 if one was still armed, else 0. */
int rt_chip_disarm(ftm_chip *c);
/* From a chip's own thread: chips[0..n) (n <= 4) die now. Returns
 * FTM_ECHIPDEAD (the caller, if among them, must stop; else the run is
 * stopping anyway). */
int rt_chip_kill_chips(ftm_chip *self, const int *chips, int n);
/* A chip killed in this run (by its own kill or a host-mate's) records its
 * death in the trace once, where it finds out: inside an exec (which
 * knows the step), or else when its thread ends. */
void rt_trace_death(ftm_chip *c);
/* c found link d dead ("send", "forward" or "receive"): records who
 * noticed, tells every chip (the run stops) and returns FTM_ELINKDEAD. */
int rt_notice(ftm_chip *c, int d, int inbound, const char *how);
/* 1 when the directed link chip->d has died (its mailbox is marked). */
int rt_link_dead(const ftm_chip *c, int d, int inbound);

/* Rings chip c's doorbell (it looks at everything again);
 * rt_wake_all rings every healthy chip's. rt_poke rings it only if c
 * announced sleep waiting for `why` (RT_WANT_*): the hot path's call,
 * after the work it made for c is published (a packet: DATA, a free
 * slot: SLOT, released memory: RELEASE). */
enum { RT_WANT_DATA = 1, RT_WANT_SLOT = 2, RT_WANT_RELEASE = 4 };
void rt_wake(ftm_chip *c);
void rt_wake_all(ftm_rt *rt);
void rt_poke(ftm_chip *c, int why);
/* c made work of `bytes` for chip t (why: RT_WANT_*): poke it now if it
 * is big, else when c runs out of work, rt_poke_flush (bell.c). */
void rt_poke_later(ftm_chip *c, ftm_chip *t, int why, size_t bytes);
void rt_poke_flush(ftm_chip *c);
/* bell.c: the chip's side. rt_bell_arm announces that c would sleep for
 * `want` and returns the bell's value to sleep on; after one more full
 * pass that found nothing, rt_bell_wait(c, seen) sleeps until the bell
 * moves past it (or the run is aborted); the chip then clears asleep. */
uint32_t rt_bell_arm(ftm_chip *c, int want);
void rt_bell_wait(ftm_chip *c, uint32_t seen);

/* acc[0..nsum) += v, acc[nsum..nsum+nmax) = max(acc, v) word by word. */
void rt_bar_combine(int64_t *acc, const int64_t *v, int nsum, int nmax);

/* After its program a chip forwards until every chip has finished;
 * 0 or an error (a hang or a death elsewhere is not this chip's error). */
int rt_chip_linger(ftm_chip *chip);

/* chip.c: forwards transit traffic (and keeps early data) until
 * done(chip, arg) holds or the run is aborted: a chip between programs,
 * in a barrier or finished, still carries other chips' traffic. */
int rt_chip_idle_until(ftm_chip *chip, int (*done)(ftm_chip *, uint64_t), uint64_t arg,
                       const char *what);

/* expo.c: memory exposed by descriptors. rt_expo_get opens a record on
 * c's busy list; rt_expo_reap recycles records read to the end (and
 * their copies) and returns 1 when none is left that c's buffer still
 * backs (a bounced one is backed by its copy). An exposure blocks a step
 * when it still reads the buffer and either hold_all or one of the step's
 * receives ops[0..nops) overlaps it: rt_expo_blocking returns the first
 * such (or NULL), rt_expo_bounce_blocking copies them all aside (0 or
 * FTM_ENOMEM). rt_expo_claim is the receiver's side: where to read
 * descriptor h's data (the sender's buffer, or its copy). */
rt_expo *rt_expo_get(ftm_chip *c);
int rt_expo_reap(ftm_chip *c);
const rt_expo *rt_expo_blocking(const ftm_chip *c, int hold_all, const ftm_op *ops, int nops);
int rt_expo_bounce_blocking(ftm_chip *c, int hold_all, const ftm_op *ops, int nops);
/* The run stopped: every exposure still open is copied aside, or, where
 * there is no memory for the copy, withdrawn; on return no reader reads
 * the chip's buffer. */
void rt_expo_withdraw(ftm_chip *c);
const unsigned char *rt_expo_claim(const rt_hdr *h);

/* Per-op progress of a chip's current step. */
typedef struct rt_op_state {
    size_t done;     /* bytes sent (sends) or received (receives) */
} rt_op_state;
/* Room in chip->op_state for the chip's largest step of prog (kept,
 * reused): 0 or FTM_ENOMEM. */
int rt_chip_op_room(ftm_chip *chip, const ftm_chip_prog *prog);

#endif
