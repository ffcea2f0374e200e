/* Runtime: a thread per chip, a bounded mailbox per direction of each link,
 * hop-by-hop forwarding, and a watchdog that turns a hang into a report.
 *
 * Chips exchange data only through their links. A transfer to a chip that
 * is not a neighbour travels along its route, and every chip on the way
 * forwards it from inside its own thread while it runs its own program.
 * A one-hop transfer is single-copy: the receiver reduces straight from
 * the sender's buffer (src/runtime/mailbox.c describes the link protocol).
 * Waiting blocks on the chip's doorbell (a futex on Linux); nothing spins,
 * and a chip is woken only when it sleeps for what arrived.
 */
#ifndef FTMESH_RUNTIME_H
#define FTMESH_RUNTIME_H

#include "ftmesh/export.h"

#include <stddef.h>
#include <stdint.h>
#include "ftmesh/faults.h"
#include "ftmesh/mesh.h"
#include "ftmesh/sched.h"

typedef struct ftm_rt ftm_rt;
typedef struct ftm_chip ftm_chip;

/* The watchdog's default: no progress for this many seconds is a hang. */
#define FTM_RT_DEFAULT_HANG_S 5

/* The largest packet payload a run accepts (1 GiB). */
#define FTM_RT_PKT_MAX ((size_t)1 << 30)

typedef struct ftm_rt_config {
    size_t pkt_bytes;      /* payload bytes per packet, at most FTM_RT_PKT_MAX
                              (more: FTM_EINVAL); 0: chosen from the mesh size */
    int depth;             /* packets a mailbox holds, rounded up to a power of
                              two (at most 2^20); 0: default (4) */
    double hang_timeout_s; /* no progress for this long -> FTM_EHANG; 0: FTM_RT_DEFAULT_HANG_S */
    int packets_only;      /* 0 (default): a one-hop send over shared memory posts
                              a descriptor and the receiver reads the sender's
                              memory (single copy); 1: every byte goes through
                              mailbox packets (two copies), as between ranks */
} ftm_rt_config;

/* What a stuck chip was doing when the watchdog fired. */
typedef enum { FTM_WAIT_NONE = 0, FTM_WAIT_RECV, FTM_WAIT_SEND, FTM_WAIT_DONE } ftm_wait_kind;
typedef struct ftm_stuck {
    int chip;
    const char *phase;     /* schedule phase ("reduce-scatter", ...) or "" */
    int step;              /* step index within the phase */
    int wait;              /* ftm_wait_kind */
    int peer;              /* chip it waits to receive from or send to */
    int dir;               /* link direction it waits on (-1 if none) */
    size_t missing;        /* bytes not yet received / sent */
} ftm_stuck;

/* Creates the links and chip state for a mesh (the runtime keeps its own
 * copy; m may be freed afterwards). Mailboxes are allocated here, once.
 * *rt is owned by the caller: ftm_rt_destroy it (NULL is fine). One
 * runtime serves any number of ftm_rt_run calls, one at a time, until one
 * stops part-way (ftm_rt_run). */
/* Estimated bytes a runtime on m (cfg as for ftm_rt_create) holds while
 * its chips execute s: chip records, mailboxes (every live link's slots),
 * per-op progress of each chip's largest step, a working set of packets in
 * each chip's own queues (2 per mailbox slot of its links; transit and
 * early packets are not bounded by the schedule, so this is an estimate)
 * and the touched part of each chip thread's stack (FTM_RT_STACK_TOUCHED;
 * each reserves FTM_RT_STACK_BYTES of address space). Not the buffers.
 * SIZE_MAX where the sum would not fit a size_t. */
#define FTM_RT_STACK_BYTES ((size_t)1 << 20)
#define FTM_RT_STACK_TOUCHED ((size_t)64 << 10)
FTM_EXTERN size_t ftm_rt_mem_estimate(const ftm_mesh *m, const ftm_rt_config *cfg, const ftm_sched *s);

FTM_EXTERN int ftm_rt_create(ftm_rt **rt, const ftm_mesh *m, const ftm_rt_config *cfg);
FTM_EXTERN void ftm_rt_destroy(ftm_rt *rt);
/* The runtime's copy of the mesh, valid until ftm_rt_destroy. */
FTM_EXTERN const ftm_mesh *ftm_rt_mesh(const ftm_rt *rt);
/* Payload bytes per packet this runtime uses. */
FTM_EXTERN size_t ftm_rt_pkt_bytes(const ftm_rt *rt);

/* Runs fn(chip, arg) on one thread per healthy chip and waits for all of
 * them. Returns 0, the first nonzero value a chip returned, or FTM_EHANG
 * when no packet moved for hang_timeout_s (then ftm_rt_stuck tells why).
 * A run that returns nonzero (a hang, a death, a dead link, a chip's
 * error) spends the runtime: a later ftm_rt_run returns FTM_EINVAL (its
 * mailboxes may still hold the stopped run's packets); make a new one.
 * Threads: not reentrant on one runtime (one ftm_rt_run at a time, and no
 * other ftm_rt_* call on it meanwhile, except from inside fn through the
 * chip-side calls below); different runtimes may run concurrently. A chip
 * may execute several schedules per run (the trainer does). */
typedef int (*ftm_chip_fn)(ftm_chip *chip, void *arg);
FTM_EXTERN int ftm_rt_run(ftm_rt *rt, ftm_chip_fn fn, void *arg);

/* Failure injection during a run: chip dies right after it has sent pkts
 * packets of its own in a run (0: never), in the middle of whatever
 * collective it is in. It stops running and forwarding; the other chips
 * are told at once (as a health monitor would) and ftm_rt_run returns
 * FTM_ECHIPDEAD. The setting is for the next run only. After
 * FTM_ECHIPDEAD or FTM_EHANG, packets of the broken
 * run may still sit in mailboxes: recover with a new runtime (ftm_rt_create
 * on the mesh without the dead chip). */
FTM_EXTERN int ftm_rt_kill_chip_after(ftm_rt *rt, int chip, uint64_t pkts);
/* After FTM_ECHIPDEAD: the chip that died, else -1. */
FTM_EXTERN int ftm_rt_died(const ftm_rt *rt);

/* ---- failures of chips, hosts and links (src/runtime/inject.c) ----------
 * A dying chip (or the chips of a dying host) stops at once; a health
 * monitor tells every other chip and the run returns FTM_ECHIPDEAD. A dying
 * link kills no chip and nobody is told: packets already on it still
 * arrive, but the next send, forward or receive that needs it fails, the
 * chip that saw that tells every chip, and the run returns FTM_ELINKDEAD.
 * A link nobody uses again is never noticed. */

/* Who noticed a failure, and how. */
typedef struct ftm_rt_notice {
    int chip;              /* the chip that noticed; -1: the health monitor */
    int dir;               /* the link it found dead, seen from chip (-1) */
    int peer;              /* the chip at its other end (-1) */
    const char *how;       /* "send failed", "forward failed", "receive
                              failed", "heartbeat lost" */
} ftm_rt_notice;

/* The link chip->dir dies now (both ways unless oneway). 0 or FTM_EINVAL
 * (no such live link). Usable from a chip thread during a run (its
 * runtime: ftm_chip_rt), or before a run from the thread that owns rt. */
FTM_EXTERN int ftm_rt_kill_link(ftm_rt *rt, int chip, int dir, int oneway);
/* The same, once self has sent pkts (>= 1) more packets of its own. One
 * failure can be armed per chip; arming replaces the previous one.
 * FTM_EINVAL (nothing armed) for pkts 0, a chip out of range, or a link
 * the mesh does not have (an open mesh's edge). */
FTM_EXTERN int ftm_chip_kill_chips_after(ftm_chip *self, uint64_t pkts, const int *chips, int n);
FTM_EXTERN int ftm_chip_kill_link_after(ftm_chip *self, uint64_t pkts, int chip, int dir, int oneway);

/* After a run (and across runs of this runtime): the chips that died
 * (ids into out, at most max; returns how many), the directed links that
 * died (chip and dir), and who noticed what in the last run. */
FTM_EXTERN int ftm_rt_killed_chips(const ftm_rt *rt, int *out, int max);
FTM_EXTERN int ftm_rt_killed_links(const ftm_rt *rt, int *chip, int *dir, int max);
FTM_EXTERN int ftm_rt_notices(const ftm_rt *rt, ftm_rt_notice *out, int max);

/* After FTM_EHANG: the stuck chips (at most max), returns how many: those
 * waiting in a transfer, or where none is, those idle between programs
 * (wait FTM_WAIT_DONE, phase "barrier" in ftm_chip_barrier or "done" at
 * the end of the run). Valid only after ftm_rt_run has returned. phase
 * points into the schedule, valid while it lives. */
FTM_EXTERN int ftm_rt_stuck(const ftm_rt *rt, ftm_stuck *out, int max);

/* Records what every chip does in the following runs into tr (trace.h;
 * tr's chip count must be the mesh's), or stops recording (tr NULL). The
 * recorder must outlive the runs. Returns 0 or FTM_EINVAL. */
struct ftm_trace;
FTM_EXTERN int ftm_rt_set_trace(ftm_rt *rt, struct ftm_trace *tr);

/* ---- runs spread over processes (include/ftmesh/mpi.h) ------------------
 * In a run spread over processes each runtime holds every chip's record
 * but runs only its local chips; per-chip results live where the chip
 * ran. In a single process every chip is local and these do nothing. */

/* 1 when this process runs chip (0 for a bad id). */
FTM_EXTERN int ftm_rt_is_local(const ftm_rt *rt, int chip);
/* Names a schedule the chips will execute in the next runs: packets
 * carry it between processes by its declaration number, so every process
 * declares the same schedules in the same order. 0 or FTM_ENOMEM. */
FTM_EXTERN int ftm_rt_declare_sched(ftm_rt *rt, const ftm_sched *s);
/* Between runs, called by every process in the same order: v[0..n)
 * becomes the sum (the maximum) of every process's v. 0 or an error. */
FTM_EXTERN int ftm_rt_sum_u64(ftm_rt *rt, uint64_t *v, size_t n);
FTM_EXTERN int ftm_rt_max_f64(ftm_rt *rt, double *v, size_t n);
FTM_EXTERN int ftm_rt_sum_f64(ftm_rt *rt, double *v, size_t n);
/* Between runs, called by every process in the same order: buf[0..bytes)
 * of the process that runs chip replaces every other process's copy.
 * 0, FTM_EINVAL (no such chip) or an error. */
FTM_EXTERN int ftm_rt_bcast(ftm_rt *rt, void *buf, size_t bytes, int chip);

/* Bytes and packets that crossed the directed link chip->dir since the
 * last reset. The counters belong to the sending chip's thread and are not
 * atomic: read (or reset) them only after ftm_rt_run has returned, or, for
 * reading, from a chip thread between two of its ftm_chip_barrier calls
 * when no chip sends in between (the barrier orders the writes before). */
FTM_EXTERN void ftm_rt_link_stats(const ftm_rt *rt, int chip, int dir, uint64_t *bytes, uint64_t *pkts);
FTM_EXTERN void ftm_rt_reset_stats(ftm_rt *rt);

/* Chip side (call only from the chip's own thread). */
FTM_EXTERN int ftm_chip_id(const ftm_chip *chip);
FTM_EXTERN ftm_rt *ftm_chip_rt(ftm_chip *chip);
/* Executes this chip's program of schedule s on buf (s->bytes bytes):
 * sends, receives, reductions, and forwarding of transit traffic. Every
 * chip of a run must execute the same schedules in the same order. s is
 * borrowed and read by every chip thread at once: it must stay alive and
 * unchanged until every chip has finished executing it (for a schedule
 * used once per run: until ftm_rt_run returns). On return, with success
 * or an error, no neighbour reads buf any more: the caller may write or
 * free it. */
FTM_EXTERN int ftm_chip_exec(ftm_chip *chip, const ftm_sched *s, void *buf);

/* Waits until every healthy chip of the run has called it (a harness
 * barrier for timing, not chip-to-chip traffic). Returns 0 or FTM_EHANG if
 * the run was aborted meanwhile. */
FTM_EXTERN int ftm_chip_barrier(ftm_chip *chip);
/* The same barrier, also combining a few numbers over every healthy chip
 * of the run (in every process): on return v[0..nsum) holds the sum of all
 * chips' v[0..nsum) and v[nsum..nsum+nmax) the maximum of theirs (integer
 * sums: exact and independent of order, wrapping modulo 2^64 past INT64_MAX). Every chip passes the same counts,
 * nsum + nmax <= FTM_BARRIER_WORDS. 0, FTM_EINVAL or FTM_EHANG (then v is
 * unchanged). */
#define FTM_BARRIER_WORDS 16
FTM_EXTERN int ftm_chip_barrier_reduce(ftm_chip *chip, int64_t *v, int nsum, int nmax);

/* ---- fault scripts during a run (src/runtime/script.c) ------------------
 * The player of a fault script (include/ftmesh/faults.h): the program a
 * chip runs calls the hooks at its points in time, and the hooks fire the
 * events whose victim is that chip; after a run stopped by a failure,
 * ftm_rt_script_recover says what died and was noticed. A run is one
 * attempt; the caller recovers and starts the next one. */

/* One failure as the survivors saw it. */
typedef struct ftm_fault_record {
    long when;                 /* step or iteration it struck in */
    int phase;                 /* ftm_fault_phase */
    char what[64];             /* "chip (2,1)", "host (2,0)", "link (0,0)-(0,1)" */
    ftm_fault_event event;     /* the event it records (kind, coordinates) */
    char detected_by[256];     /* who noticed and how; "" when nobody did */
    int noticed;               /* 0: a dead link nothing needed again */
    long resumed;              /* the step or iteration redone (-1: none) */
    double lost_wall_s;        /* from the start of the interrupted step to
                                  running again (rebuild included); the
                                  first record of a recovery carries it */
    double lost_modeled_s;     /* modeled collectives of the work redone */
    int chips_after;           /* healthy chips after the recovery */
    double modeled_before_s, modeled_after_s; /* modeled allreduce before
                                  and after: the new rings' quality */
    int repair;                /* 1: a repair (what came back; lost_* are
                                  the rejoining's wall and modeled time) */
    char from[32];             /* repair: the chip that sent the state,
                                  "(R,C)" ("" when nothing was sent) */
    uint64_t state_bytes;      /* repair: bytes of state the links carried */
    int earlier;               /* struck in an earlier run than the one
                                  that noticed it (a link nothing needed) */
    /* noticed records: the algorithm after the recovery or repair (train's
     * gradient allreduce; auto's pick for the new mesh), the schedule it
     * runs (another algorithm's where it fell back) and why (NULL: its
     * own), and the schedule before (train: the first record of a
     * recovery's; the others' is the new one); static strings, NULL where
     * not set */
    const char *algo_after, *schedule_after, *fallback_after, *schedule_before;
} ftm_fault_record;


typedef struct ftm_rt_script {
    ftm_fault_script script;   /* sorted: o->faults plus the short form */
    int *victim;               /* [n] the chip that fires it in this attempt
                                  (-1: what it names is already dead) */
    int *fired;                /* [n] attempt (1-based) it fired in; 0 not
                                  yet; -1 skipped */
    unsigned char *logged;     /* [n] 1: reported in an event record */
    int *armed;                /* [nchips] event armed on that chip, or -1 */
    int attempt;
    long until;                /* > 0: this attempt stops before that step
                                  (iteration); later events wait for the next */
    /* dead links nobody noticed: each new runtime gets them again */
    int nsecret, *secret_chip, *secret_dir;
} ftm_rt_script;

/* A sorted copy of s (NULL: none) for mesh m. */
FTM_EXTERN int ftm_rt_script_init(ftm_rt_script *f, const ftm_fault_script *s, const ftm_mesh *m);
FTM_EXTERN void ftm_rt_script_free(ftm_rt_script *f);
/* Before an attempt on mesh m: who fires what. */
FTM_EXTERN void ftm_rt_script_attempt(ftm_rt_script *f, const ftm_mesh *m);
/* On chip's thread at (step, phase): fires its due events (not the counted
 * allreduce ones). FTM_ECHIPDEAD when a chip or host died: stop. */
FTM_EXTERN int ftm_rt_script_fire(ftm_rt_script *f, ftm_chip *chip, const ftm_mesh *m, long step, int phase);
/* Before the gradient allreduce: events with 0 packets fire, the first
 * other one is armed (FTM_FAULT_MID: mid_pkts). After it: an armed event
 * that did not strike (the victim sent fewer packets) and any other of the
 * step's allreduce events strike now. */
FTM_EXTERN int ftm_rt_script_arm(ftm_rt_script *f, ftm_chip *chip, const ftm_mesh *m, long step,
                     uint64_t mid_pkts);
FTM_EXTERN int ftm_rt_script_after(ftm_rt_script *f, ftm_chip *chip, const ftm_mesh *m, long step);
/* Right after a run on rt: a kill armed after N packets whose victim
 * died of another kill first counts as not fired; in a run spread over
 * processes each event fired where its victim ran, and every process
 * learns which fired. 0 or an error. */
FTM_EXTERN int ftm_rt_script_sync(ftm_rt_script *f, ftm_rt *rt);
/* A repair e (applied by the caller between attempts on mesh m): a dead
 * link nobody noticed is live again in the next runtime. */
FTM_EXTERN void ftm_rt_script_repaired(ftm_rt_script *f, const ftm_mesh *m, const ftm_fault_event *e);
/* 1 when repair e has nothing to bring back because the kill it undoes
 * never struck in this run: the latest kill of what e names (for a chip,
 * its own kill or a host's around it) up to e's step was skipped, what it
 * named having died already (two kills after N allreduce packets race on
 * their victims' threads, which the pre-run check cannot know). */
FTM_EXTERN int ftm_rt_script_kill_skipped(const ftm_rt_script *f, const ftm_mesh *m,
                                          const ftm_fault_event *e);
/* After an attempt on rt that ended without a failure: the links rt lost
 * join the dead links nobody noticed (those kept already stay: a link of
 * a chip dead in rt had no mailbox there). */
FTM_EXTERN void ftm_rt_script_lost(ftm_rt_script *f, const ftm_rt *rt);
/* The new runtime of an attempt gets the dead links nobody noticed. */
FTM_EXTERN void ftm_rt_script_rt(const ftm_rt_script *f, ftm_rt *rt);
/* After an attempt on m stopped by a failure (rc FTM_ECHIPDEAD or
 * FTM_ELINKDEAD) on runtime rt: m2 (uninitialised) becomes m without what
 * died and was noticed, and ev[] (up to max) the records of the events
 * fired in this attempt (returns how many; the caller fills the times). */
FTM_EXTERN int ftm_rt_script_recover(ftm_rt_script *f, const ftm_rt *rt, const ftm_mesh *m, ftm_mesh *m2,
                         ftm_fault_record *ev, int max);
/* Records of events that fired in the last attempt without being noticed
 * and of kills skipped (what they name had died already), after a run
 * that ended normally (skipped_upto -1); or, skipped_upto >= 0, of the
 * kills an attempt's start found skipped that are due by that step, so
 * that they are told in time order. */
FTM_EXTERN int ftm_rt_script_unnoticed(ftm_rt_script *f, long skipped_upto, ftm_fault_record *ev,
                                       int max);


#endif
