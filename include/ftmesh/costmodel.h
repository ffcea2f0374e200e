/* Cost model: modeled time of a schedule on the emulated hardware.
 *
 * Deterministic: a pure function of the schedule, the mesh and the
 * parameters, never of the thread schedule or the machine.
 *
 * The model (a discrete-event replay of the schedule):
 *  - each chip runs its steps in order; a step starts when the previous one
 *    ended (the first at t = 0) and issues all its sends at its start;
 *  - a transfer of len bytes over a route of h >= 1 links is cut-through:
 *    it starts when every link of the route is free, takes
 *    h * hop_s + len / link_Bps and holds each of its links for that long
 *    (a link carries one transfer at a time; the others wait). Links are
 *    reserved greedily in the order (step start time, chip id, op index);
 *  - a 0-hop transfer (a chip to itself) is a memory copy: len / hbm_Bps;
 *  - a receive completes at the arrival of its send, plus len / hbm_Bps if
 *    it is a reduction (FTM_RED_SUM_*: the chip reads and writes HBM);
 *  - a step ends when all its sends have arrived and all its receives have
 *    completed. The schedule's time is the last step end over all chips.
 *
 * Reentrant: ftm_cost_sched only reads s, m and p, so any number of threads
 * may model schedules at once (the sweep does), also the same schedule.
 * The cost model knows nothing of the runtime; both read only sched.h.
 */
#ifndef FTMESH_COSTMODEL_H
#define FTMESH_COSTMODEL_H

#include "ftmesh/export.h"

#include <stddef.h>
#include <stdint.h>
#include "ftmesh/mesh.h"
#include "ftmesh/sched.h"

typedef struct ftm_cost_params {
    double link_Bps;   /* bytes/s per link per direction (TPU-v3 ICI: 100e9) */
    double hop_s;      /* latency per hop, seconds (default 1e-6, see costmodel.c) */
    double hbm_Bps;    /* chip memory bandwidth for reductions (TPU-v3: 900e9) */
} ftm_cost_params;

typedef struct ftm_cost_result {
    double time_s;            /* modeled time of the whole schedule */
    uint64_t max_link_bytes;  /* bytes on the most-loaded directed link */
    uint64_t total_link_bytes;/* bytes summed over all directed links */
} ftm_cost_result;

/* TPU-v3 defaults: 100e9 B/s per link direction, 1 us per hop, 900e9 B/s HBM. */
FTM_EXTERN void ftm_cost_defaults(ftm_cost_params *p);

/* Bytes ftm_cost_sched allocates to replay s on m (freed when it returns). */
FTM_EXTERN size_t ftm_cost_mem_bytes(const ftm_sched *s, const ftm_mesh *m);

/* Replays schedule s on mesh m. link_bytes, if not NULL, receives the bytes
 * charged per directed link (nchips * 4 entries, chip * 4 + dir; equal to
 * ftm_sched_link_bytes). Returns 0, FTM_EINVAL (bad parameters, a receive
 * with no matching send, a route off the mesh), FTM_ENOROUTE (a route over
 * a link of m that is not live, as the chips refuse it), FTM_EHANG (the
 * schedule deadlocks) or FTM_ENOMEM. A dry schedule (sched.h:
 * ftm_sched_ctx) is not replayed: its replay's memory is charged to its
 * meter, the result and link_bytes are zeros and 0 is returned. Under a
 * budget (the meter of the schedule's build context has a limit) a
 * replay is charged to it first: FTM_ENOMEM, before allocating, if it
 * would not fit (an answer from the memo, ftm_cost_memo_put, charges
 * nothing: it replays nothing). */
FTM_EXTERN int ftm_cost_sched(const ftm_sched *s, const ftm_mesh *m, const ftm_cost_params *p,
                   ftm_cost_result *res, uint64_t *link_bytes);

/* Per-op times of a replay (seconds from the schedule's start), for traces
 * on the modeled clock. Per transfer (tag): when it starts moving (all its
 * links free), when it arrives, and when its receive completes (arrival
 * plus the reduction's memory time). Per step: chip c's step k starts at
 * step_start[step_first[c] + k] and ends at step_end[...]. */
typedef struct ftm_cost_timing {
    double *xfer_start, *xfer_end, *recv_end; /* [next_tag] */
    double *step_start, *step_end;            /* [total steps] */
    int *step_first;                          /* [nchips] */
    double time_s;                            /* the schedule's modeled time */
} ftm_cost_timing;

/* ftm_cost_sched that also fills *tm (allocated here; free with
 * ftm_cost_timing_free, also after an error). */
FTM_EXTERN int ftm_cost_sched_timed(const ftm_sched *s, const ftm_mesh *m, const ftm_cost_params *p,
                         ftm_cost_result *res, uint64_t *link_bytes, ftm_cost_timing *tm);
FTM_EXTERN void ftm_cost_timing_free(ftm_cost_timing *tm);

/* A lower bound on ftm_cost_sched's time_s for s, without a replay: one
 * pass over the programs, chip by chip. A chip's steps run one after the
 * other and a step lasts at least its longest send (h * hop_s + len /
 * link_Bps, or len / hbm_Bps for 0 hops; plus len / hbm_Bps when the chip
 * reduces it itself), so the largest per-chip sum of those is a bound; it
 * is lowered by 1e-9 of itself so that rounding never puts it above the
 * replay's time. When this thread's last replay was of s (same schedule,
 * changes, faults, parameters) the exact time is given instead. A dry
 * schedule gives 0. Returns 0, FTM_EINVAL or FTM_ENOMEM. */
FTM_EXTERN int ftm_cost_lower_bound(const ftm_sched *s, const ftm_mesh *m,
                                    const ftm_cost_params *p, double *lb);


/* The least time a send of nhops hops and len bytes takes with the
 * parameters ctx points to (a ftm_cost_params; a 0-hop send: a memory
 * copy), plus its own reduction when self_sum (a 0-hop send summed into
 * its own chip): the term ftm_cost_lower_bound sums, in the form of a
 * build watch's floor (sched.h: ftm_sched_ctx.watch). */
FTM_EXTERN double ftm_cost_watch_floor(const void *ctx, int nhops, size_t len, int self_sum);

/* A lower bound on the modeled time (ftm_cost_sched) of every allreduce of
 * bytes per chip over the live chips of m, whatever its schedule: no
 * algorithm can model below it under p (the proof: src/costmodel/bound.c;
 * doc/bound.md). In seconds:
 *  links_s   2(N'-1) bytes / (D' link_Bps) + hop_s: every element needs
 *            2(N'-1) link transmissions (N' live chips, D' live directed
 *            links; a link dead one way counts once);
 *  cut_s     the tightest cut found: bytes / (c link_Bps) + hop_s for the
 *            c links into or out of a chip or across a bridge, and the
 *            partitions a bridge gives (0 when no cut was evaluated);
 *  latency_s diameter * hop_s (the live graph's directed diameter);
 *  time_s    the largest of them; binding names it ("links", "cut",
 *            "latency"; "none" when nothing moves: one live chip or 0 bytes).
 * red is the element type (FTM_RED_SUM_F32 for the CLI's float buffers).
 * Returns 0, FTM_EINVAL, FTM_EALLDEAD, FTM_EPARTITION or FTM_ENOMEM. */
typedef struct ftm_cost_bound_parts {
    double time_s, links_s, cut_s, latency_s;
    const char *binding;  /* static string */
    int live_chips;       /* N' */
    int live_links;       /* D' */
    int diameter;         /* hops (a lower bound on it beyond 2^24 BFS visits) */
    int min_degree;       /* smallest in- or out-degree of a live chip */
    int bridges;          /* links whose loss would split the live chips */
} ftm_cost_bound_parts;

FTM_EXTERN int ftm_cost_bound(const ftm_mesh *m, size_t bytes, ftm_red red,
                              const ftm_cost_params *p, ftm_cost_bound_parts *out);

#endif
