/* Allreduce algorithms, as schedule builders (registry by name), --algo
 * auto, and the run-and-verify harness.
 *
 * Each algorithm turns (mesh with faults, element count, element type) into
 * a schedule (sched.h) in which every healthy chip ends with the sum of all
 * healthy chips' buffers. The runtime executes it with data; the cost model
 * replays it for modeled time. This module sits above the router, the cost
 * model and the runtime; none of them knows it.
 *
 * Ownership and threads: builders read m only during the call (nothing is
 * kept), fill a schedule the caller owns and frees, and are reentrant (the
 * sweep builds on two threads). Registry entries and names are static.
 */
#ifndef FTMESH_COLLECTIVE_H
#define FTMESH_COLLECTIVE_H

#include "ftmesh/export.h"

#include <stddef.h>
#include "ftmesh/mesh.h"
#include "ftmesh/sched.h"
#include "ftmesh/costmodel.h"

struct ftm_rt; /* runtime.h */

/* Builds an allreduce of count elements of type red (FTM_RED_SUM_F32: float,
 * FTM_RED_SUM_I64: int64) into s (initialised here as ctx says, NULL: a
 * plain build; free with ftm_sched_free). Returns 0, FTM_EALLDEAD,
 * FTM_EPARTITION, FTM_ENOMEM (also a budget's refusal), FTM_ENOTSUP, or
 * FTM_ESTOPPED when built under a watch (ftm_sched_ctx.watch) whose limit
 * the schedule's bound passes. */
typedef int (*ftm_allreduce_build_fn)(ftm_sched *s, const ftm_sched_ctx *ctx, const ftm_mesh *m,
                                      size_t count, ftm_red red);

typedef struct ftm_allreduce_algo {
    const char *name;           /* "ring", "bidir", "2d", "2d-concurrent", "2d-lines", "tree", "trees" */
    const char *summary;        /* one line for --help */
    /* The schedule to run: the algorithm's own, or where another models
     * faster (the 2-D family on small, thin or crowded meshes; 2d-lines
     * against 2d-concurrent) that one, with s->algo naming it and
     * s->fallback saying why (sched.h). */
    ftm_allreduce_build_fn build;
    /* The algorithm's own schedule, never another's (NULL: build's is
     * always its own); see ftm_allreduce_build_own. */
    ftm_allreduce_build_fn own;
} ftm_allreduce_algo;

/* The registered algorithms, terminated by an entry with name == NULL. */
FTM_EXTERN const ftm_allreduce_algo *ftm_allreduce_algos(void);
/* Looks an algorithm up by name; NULL if unknown. */
FTM_EXTERN const ftm_allreduce_algo *ftm_allreduce_find(const char *name);

/* Builds algorithm name's OWN schedule into s: no fallback to the ring,
 * no choice among other algorithms' schedules (s->algo is name and
 * s->fallback NULL), e.g. to show the 2-D schedule around a hole on a
 * small torus, where build would run the ring's. Returns what the
 * builder returns -- FTM_ENOTSUP where the algorithm cannot run on m
 * (2d-lines: no line layout fits its holes) -- or FTM_EINVAL for an
 * unknown name. Modeled times of the own schedule may be worse than
 * build's. */
FTM_EXTERN int ftm_allreduce_build_own(const char *name, ftm_sched *s, const ftm_sched_ctx *ctx,
                                       const ftm_mesh *m, size_t count, ftm_red red);

/* Runs an allreduce on the emulator and verifies it. */
typedef struct ftm_allreduce_opts {
    const char *algo;          /* registry name */
    size_t count;              /* float32 elements per chip */
    int iters;                 /* timed iterations (>= 1) */
    double hang_timeout_s;     /* 0: runtime default */
    size_t pkt_bytes;          /* 0: runtime default */
    int packets_only;          /* ftm_rt_config.packets_only */
    int fail_during;           /* 1: chip fail_chip dies during the first run:
                                * the fault script of the one event
                                * fail_chip@0:N (same run, records and trace) */
    int fail_chip;
    uint64_t fail_after_pkts;  /* ... after sending this many packets (0: half
                                * of its packets of one allreduce, plus one;
                                * a chip that sends fewer dies when its first
                                * allreduce ends) */
    const ftm_sched *sched;    /* optional: algo's schedule for this mesh and
                                * count, already built (the caller modeled
                                * it); NULL: built here. One built for
                                * another mesh size or count, or a dry or
                                * packed one, is FTM_EINVAL */
    const ftm_cost_params *cost; /* the cost parameters the schedules built
                                * here choose for (ftm_sched_ctx.cost; NULL:
                                * the TPU-v3 defaults) */
    struct ftm_trace *trace;   /* optional: records every run (trace.h),
                                * the recovery run's too */
    int verify_selftest;       /* 1: after each allreduce, the lowest healthy
                                * chip's element 0 is bumped before it is
                                * checked, so `wrong` must equal iters: a test
                                * that the verifier catches a wrong sum */
    /* Fault script (mode FTM_FAULT_ALLREDUCE, iterations as times; NULL:
     * none). A failure stops the run; the mesh loses what died and was
     * noticed, the rings are rebuilt and all iters run again on the chips
     * left (the result describes that last run). */
    const struct ftm_fault_script *faults;
    /* Optional: modeled seconds of schedule s on mesh m (the caller's cost
     * model; s NULL: the algorithm's schedule for m, which the callback
     * builds), for the records' lost and before/after figures. */
    double (*modeled_s)(void *ctx, const ftm_sched *s, const ftm_mesh *m);
    void *modeled_ctx;
    int repick;                /* 1 (--algo auto): every schedule built here
                                * is ftm_allreduce_auto's pick for its mesh
                                * (with cost), so a rebuild after a fault
                                * picks again; algo names sched's algorithm */
} ftm_allreduce_opts;

/* One run of the chips of a run with faults: each failure or repair
 * starts another, on a rebuilt schedule. */
typedef struct ftm_allreduce_ran {
    long when;                 /* iteration of the failure or repair that
                                * started it (-1: the first run) */
    int after;                 /* records (events[]) made before it started */
    int chips;                 /* healthy chips of its mesh */
    const char *algo;          /* the algorithm built (static): o->algo, or
                                * with repick auto's pick for that mesh */
    const char *schedule;      /* the schedule run (ftm_sched.algo: another
                                * algorithm's where algo's fell back) */
    const char *fallback;      /* NULL, or why schedule is not algo's own */
} ftm_allreduce_ran;

typedef struct ftm_allreduce_result {
    int chips;                 /* healthy chips P */
    double wall_s;             /* median wall time of one allreduce */
    double wall_min_s, wall_max_s;
    uint64_t max_link_bytes;   /* most-loaded directed link, per allreduce */
    uint64_t total_link_bytes; /* all links, per allreduce */
    uint64_t wrong;            /* elements (over all chips and iterations) that
                                * differ from the exact sum */
    int links_match_sched;     /* 1 when measured link bytes == the schedule's */
    struct ftm_stuck *stuck;   /* on FTM_EHANG: report (ftm_allreduce_result_free) */
    int nstuck;
    int died_chip;             /* chip that died during the run (then the
                                * figures are those of the recovery run on
                                * the mesh without it), or -1; the first */
    int *died;                 /* [ndied] every chip that died during the
                                * run, in the order they died (those of one
                                * failure in row-major order; a chip that
                                * came back and died again: each time) */
    int ndied;
    struct ftm_fault_record *events; /* with faults: [nevents], in order */
    int nevents;
    char detail[256];          /* a refused script: why */
    ftm_mesh mesh_after;       /* with faults, after a recovery: the mesh the
                                * last run used (have_mesh_after) */
    int have_mesh_after;
    ftm_allreduce_ran *runs;   /* with faults: [nruns] every run, in order
                                * (the figures are the last one's) */
    int nruns;
} ftm_allreduce_result;

/* Builds the algorithm's schedule, runs it iters times on chip threads with
 * inputs whose float sums are exact (small integers that depend on chip and
 * index), and checks every element of every chip against the exact sum.
 * With fail_during, the chip dies mid-allreduce; the run stops with
 * FTM_ECHIPDEAD and is redone on the mesh without it (rings rebuilt around
 * the new hole), and the result describes that recovery run, with the
 * event's record (events) as a fault script gives it.
 * Returns 0 (even if wrong > 0), or an error: FTM_EINVAL (unknown algo),
 * FTM_EALLDEAD, FTM_EPARTITION (also when the dead chip cuts the mesh),
 * FTM_EHANG (res->stuck says who), ... Reentrant (each call has its own
 * runtime). Release res with ftm_allreduce_result_free, also after an
 * error. */
FTM_EXTERN int ftm_allreduce_run(const ftm_mesh *m, const ftm_allreduce_opts *o, ftm_allreduce_result *res);

/* The same for n allreduces o[0..n) (any algorithms and counts, no
 * fail_during or faults: FTM_EINVAL) run one after another in ONE ftm_rt_run, so the
 * chip threads start once: on rt if not NULL (created by the caller on this
 * very mesh, borrowed, reusable for further batches until a run stops
 * part-way, ftm_rt_run; its packet size and
 * timeout apply), else on a runtime made here from o[0]'s. res[i] (n
 * entries) describes o[i], with its own wall times, wrong count and link
 * bytes (measured per allreduce); on FTM_EHANG res[0].stuck has the report.
 * Not reentrant on one rt. */
FTM_EXTERN int ftm_allreduce_run_batch(const ftm_mesh *m, struct ftm_rt *rt, const ftm_allreduce_opts *o,
                            int n, ftm_allreduce_result *res);
/* Estimated bytes ftm_allreduce_run(m, o) holds at its peak: o->sched
 * (or, without one, sched: the schedule the run would build; NULL counts
 * none), the chips' buffers and expected sums, the per-run records and the
 * runtime (ftm_rt_mem_estimate). The CLI refuses runs that would not fit.
 * SIZE_MAX for a count ftm_allreduce_run refuses (over FTM_SCHED_MAX_BYTES). */
FTM_EXTERN size_t ftm_allreduce_mem_estimate(const ftm_mesh *m, const ftm_allreduce_opts *o,
                                  const ftm_sched *sched);
FTM_EXTERN void ftm_allreduce_result_free(ftm_allreduce_result *res);

/* The algorithms. */
FTM_EXTERN int ftm_allreduce_ring_build(ftm_sched *s, const ftm_sched_ctx *ctx, const ftm_mesh *m,
                                        size_t count, ftm_red red);
FTM_EXTERN int ftm_allreduce_bidir_build(ftm_sched *s, const ftm_sched_ctx *ctx, const ftm_mesh *m,
                                         size_t count, ftm_red red);
FTM_EXTERN int ftm_allreduce_2d_build(ftm_sched *s, const ftm_sched_ctx *ctx, const ftm_mesh *m,
                                      size_t count, ftm_red red);
FTM_EXTERN int ftm_allreduce_2d_concurrent_build(ftm_sched *s, const ftm_sched_ctx *ctx,
                                                 const ftm_mesh *m, size_t count, ftm_red red);
FTM_EXTERN int ftm_allreduce_2d_lines_build(ftm_sched *s, const ftm_sched_ctx *ctx,
                                            const ftm_mesh *m, size_t count, ftm_red red);
FTM_EXTERN int ftm_allreduce_tree_build(ftm_sched *s, const ftm_sched_ctx *ctx, const ftm_mesh *m,
                                        size_t count, ftm_red red);
/* "trees" (trees.c): k shares, each reduced up and broadcast down its own
 * shortest-path spanning tree, in nc pipelined chunks. build_own picks k
 * and nc; build_kc takes them (k is capped at the live chips; nc 0:
 * chosen from the size); both FTM_ENOTSUP where a live chip is reachable
 * only over one-way links, where build (the registry's) runs the ring's
 * schedule instead. */
FTM_EXTERN int ftm_allreduce_trees_build(ftm_sched *s, const ftm_sched_ctx *ctx, const ftm_mesh *m,
                                         size_t count, ftm_red red);
FTM_EXTERN int ftm_allreduce_trees_build_own(ftm_sched *s, const ftm_sched_ctx *ctx,
                                             const ftm_mesh *m, size_t count, ftm_red red);
FTM_EXTERN int ftm_allreduce_trees_build_kc(ftm_sched *s, const ftm_sched_ctx *ctx,
                                            const ftm_mesh *m, size_t count, ftm_red red, int k,
                                            int nc);

/* Building block shared by the algorithms: one step of a ring allreduce
 * (reduce-scatter, then all-gather) over a ring of n positions, described
 * by what each position OWNS: after the reduce-scatter, position i holds
 * the full sum of its ranges [rf[j], rf[j] + rn[j]) (elements), j in
 * [ro[i], ro[i+1]); after the all-gather everyone holds everything.
 *   reduce-scatter step k (k = 0 .. n-2): i sends owner (i-k-1) mod n's
 *       ranges to i+1, which adds them (copies them where it is not valid);
 *   all-gather step k (k = n-1 .. 2n-3, kk = k-(n-1)): i sends owner
 *       (i-kk) mod n's ranges to i+1, which copies them.
 * Valid ranges (vf/vn, optional): position i holds a partial sum worth
 * adding only inside [vf[i], vf[i] + vn[i]) (the 2-D column rings); NULL:
 * everywhere. The step's ops are appended to each position's currently
 * open step, so callers can run several rings in the same step (bidir, the
 * bands of 2d). ftm_ring_nsteps(n) = 2(n-1) steps in all. */
typedef struct ftm_ring_owned {
    int n;                  /* ring positions */
    const int *route;       /* [n] route id (in s) from position i to (i+1) % n */
    const int *ro;          /* [n + 1] */
    const size_t *rf, *rn;  /* [ro[n]] owned ranges */
    const size_t *vf, *vn;  /* optional [n] valid ranges */
} ftm_ring_owned;
FTM_EXTERN int ftm_allreduce_ring_step(ftm_sched *s, const ftm_ring_owned *r, size_t elem, ftm_red red, int k);
/* The balanced ownership of the 1-D rings (Open MPI's ring allreduce):
 * [first, first + count) split into n blocks (ftm_sched_block), position i
 * owning block (i + 1) mod n. Fills ro[n + 1], rf[n], rn[n]. */
FTM_EXTERN void ftm_allreduce_ring_owned_balanced(int n, size_t first, size_t count, int *ro, size_t *rf, size_t *rn);
static inline int ftm_ring_nsteps(int n) { return 2 * (n - 1); }

/* --algo auto (src/collective/auto.c: it uses the registry, so it sits
 * above the cost model): builds every registered allreduce algorithm for
 * (m, count, red) as ctx says (NULL: plain; its watch is replaced by
 * auto's own), models each with p and reports the fastest: *name (a
 * static string from the registry) and *res. Algorithms that fail to build
 * with FTM_ENOTSUP are skipped. Returns 0 or the first other error. */
FTM_EXTERN int ftm_allreduce_auto(const ftm_sched_ctx *ctx, const ftm_mesh *m, size_t count,
                                  ftm_red red, const ftm_cost_params *p, const char **name,
                                  ftm_cost_result *res);

/* What building algo's schedule (a registry name, or "auto": every
 * algorithm in turn, as ftm_allreduce_auto does, then the winner again) in
 * the form ctx asks (packed or not; NULL: unpacked) and modeling it will
 * hold, found BEFORE building by a dry run of the builders (sched.h:
 * counts, no steps or ops stored; ctx's own dry, watch and meter are not
 * used): *peak, the most bytes held at once by schedules and replays;
 * *sched_bytes, the built schedule's ftm_sched_mem_bytes (for auto, the
 * largest algorithm's). Returns 0, FTM_EINVAL (unknown algo), FTM_ENOTSUP
 * or a builder's error. */
FTM_EXTERN int ftm_allreduce_plan_mem(const ftm_sched_ctx *ctx, const char *algo,
                                      const ftm_mesh *m, size_t count, ftm_red red, size_t *peak,
                                      size_t *sched_bytes);

#endif
