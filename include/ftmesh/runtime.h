/* Runtime: a thread per chip, a bounded mailbox per direction of each link,
 * hop-by-hop forwarding, and a watchdog that turns a hang into a report.
 *
 * Chips exchange data only through their links. A transfer to a chip that
 * is not a neighbour travels along its route, and every chip on the way
 * forwards it from inside its own thread while it runs its own program.
 * Waiting blocks on the chip's condition variable; nothing spins.
 */
#ifndef FTMESH_RUNTIME_H
#define FTMESH_RUNTIME_H

#include <stddef.h>
#include <stdint.h>
#include "ftmesh/mesh.h"
#include "ftmesh/sched.h"

typedef struct ftm_rt ftm_rt;
typedef struct ftm_chip ftm_chip;

/* The watchdog's default: no progress for this many seconds is a hang. */
#define FTM_RT_DEFAULT_HANG_S 5

typedef struct ftm_rt_config {
    size_t pkt_bytes;      /* payload bytes per packet; 0: chosen from the mesh size */
    int depth;             /* packets a mailbox holds; 0: default (4) */
    double hang_timeout_s; /* no progress for this long -> FTM_EHANG; 0: FTM_RT_DEFAULT_HANG_S */
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
 * runtime serves any number of ftm_rt_run calls, one at a time. */
/* Estimated bytes a runtime on m (cfg as for ftm_rt_create) holds while
 * its chips execute s: chip records, mailboxes (every live link's slots),
 * per-op progress of each chip's largest step, a working set of packets in
 * each chip's own queues (2 per mailbox slot of its links; transit and
 * early packets are not bounded by the schedule, so this is an estimate)
 * and the touched part of each chip thread's stack. Not the buffers. */
size_t ftm_rt_mem_estimate(const ftm_mesh *m, const ftm_rt_config *cfg, const ftm_sched *s);

int ftm_rt_create(ftm_rt **rt, const ftm_mesh *m, const ftm_rt_config *cfg);
void ftm_rt_destroy(ftm_rt *rt);
/* The runtime's copy of the mesh, valid until ftm_rt_destroy. */
const ftm_mesh *ftm_rt_mesh(const ftm_rt *rt);
/* Payload bytes per packet this runtime uses. */
size_t ftm_rt_pkt_bytes(const ftm_rt *rt);

/* Runs fn(chip, arg) on one thread per healthy chip and waits for all of
 * them. Returns 0, the first nonzero value a chip returned, or FTM_EHANG
 * when no packet moved for hang_timeout_s (then ftm_rt_stuck tells why).
 * Threads: not reentrant on one runtime (one ftm_rt_run at a time, and no
 * other ftm_rt_* call on it meanwhile, except from inside fn through the
 * chip-side calls below); different runtimes may run concurrently. A chip
 * may execute several schedules per run (the trainer does). */
typedef int (*ftm_chip_fn)(ftm_chip *chip, void *arg);
int ftm_rt_run(ftm_rt *rt, ftm_chip_fn fn, void *arg);

/* Failure injection during a run: chip dies right after it has sent pkts
 * packets of its own in a run (0: never), in the middle of whatever
 * collective it is in. It stops running and forwarding; the other chips
 * are told at once (as a health monitor would) and ftm_rt_run returns
 * FTM_ECHIPDEAD. The setting is for the next run only. After
 * FTM_ECHIPDEAD or FTM_EHANG, packets of the broken
 * run may still sit in mailboxes: recover with a new runtime (ftm_rt_create
 * on the mesh without the dead chip). */
int ftm_rt_fail_chip_after(ftm_rt *rt, int chip, uint64_t pkts);
/* The same, armed by the chip itself from its own thread: it dies after
 * sending pkts (>= 1) more packets. */
int ftm_chip_fail_after(ftm_chip *chip, uint64_t pkts);
/* After FTM_ECHIPDEAD: the chip that died, else -1. */
int ftm_rt_died(const ftm_rt *rt);

/* After FTM_EHANG: the stuck chips (at most max), returns how many. Valid
 * only after ftm_rt_run has returned. phase points into the schedule,
 * valid while it lives. */
int ftm_rt_stuck(const ftm_rt *rt, ftm_stuck *out, int max);

/* Bytes and packets that crossed the directed link chip->dir since the
 * last reset. The counters belong to the sending chip's thread and are not
 * atomic: read (or reset) them only after ftm_rt_run has returned, or, for
 * reading, from a chip thread between two of its ftm_chip_barrier calls
 * when no chip sends in between (the barrier orders the writes before). */
void ftm_rt_link_stats(const ftm_rt *rt, int chip, int dir, uint64_t *bytes, uint64_t *pkts);
void ftm_rt_reset_stats(ftm_rt *rt);

/* Chip side (call only from the chip's own thread). */
int ftm_chip_id(const ftm_chip *chip);
ftm_rt *ftm_chip_rt(ftm_chip *chip);
/* Executes this chip's program of schedule s on buf (s->bytes bytes):
 * sends, receives, reductions, and forwarding of transit traffic. Every
 * chip of a run must execute the same schedules in the same order. s is
 * borrowed and read by every chip thread at once: it must stay alive and
 * unchanged until every chip has finished executing it (for a schedule
 * used once per run: until ftm_rt_run returns). */
int ftm_chip_exec(ftm_chip *chip, const ftm_sched *s, void *buf);

/* Waits until every healthy chip of the run has called it (a harness
 * barrier for timing, not chip-to-chip traffic). Returns 0 or FTM_EHANG if
 * the run was aborted meanwhile. */
int ftm_chip_barrier(ftm_chip *chip);

#endif
