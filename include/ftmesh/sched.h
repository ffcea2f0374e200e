/* Schedules: a collective as data.
 *
 * A collective algorithm (ring, bidir, 2d, ...) does not move bytes itself:
 * it builds a schedule, which the chip threads execute with real data
 * (runtime) and the cost model replays to get modeled time (costmodel). One
 * schedule, two interpreters, so the modeled link bytes are by construction
 * the bytes the chips send.
 *
 * Per chip, a schedule is a list of steps; a step is a set of ops that run
 * concurrently; a chip starts step k+1 when every op of step k is done.
 * Ops are sends (to a chip over a route of links) and receives (from a chip,
 * combined into the chip's buffer by copy or sum). Every transfer is one
 * send op and its matching receive op, created together by ftm_sched_xfer
 * with a tag unique within the schedule.
 *
 * Ownership and threads: a schedule owns all its arrays (ftm_sched_init,
 * then ftm_sched_free); algo and step phase names are static strings. The
 * builders below are not thread-safe on one schedule but reentrant across
 * schedules. While chips execute a schedule (runtime.h: ftm_chip_exec)
 * every chip thread reads it concurrently: it must not change or be freed
 * until every chip has finished it. Read-only functions (link bytes,
 * packets, the executor) may run on one schedule from several threads.
 */
#ifndef FTMESH_SCHED_H
#define FTMESH_SCHED_H

#include "ftmesh/export.h"

#include <stddef.h>
#include <stdint.h>

struct ftm_mesh;

typedef enum { FTM_OP_SEND = 0, FTM_OP_RECV = 1 } ftm_op_kind;
/* How a received block combines with the buffer. */
typedef enum { FTM_RED_COPY = 0, FTM_RED_SUM_F32 = 1, FTM_RED_SUM_I64 = 2 } ftm_red;

/* 24 bytes: a big schedule holds two ops per transfer (a 64x64 ring,
 * 27 M of them), so the fields are packed: buffers up to 2^40 bytes, up to
 * 2^24 chips and routes (ftm_sched_init and ftm_sched_route refuse more). */
#define FTM_SCHED_MAX_BYTES ((uint64_t)1 << 40)
#define FTM_SCHED_MAX_IDS (1 << 24)
typedef struct ftm_op {
    uint64_t off : 40;   /* byte range [off, off + len) of this chip's buffer */
    uint64_t peer : 24;  /* send: destination chip; recv: source chip */
    uint64_t len : 40;
    uint64_t route : 24; /* the route the transfer takes (index in routes) */
    uint32_t tag;        /* unique per transfer within the schedule */
    uint8_t kind;        /* ftm_op_kind */
    uint8_t red;         /* ftm_red (receives) */
} ftm_op;

typedef struct ftm_step {
    int first_op, nops;
    const char *phase; /* static string, e.g. "reduce-scatter" (hang reports) */
    int index;         /* step number within the phase */
} ftm_step;

typedef struct ftm_route {
    int src, dst, nhops;
    int first;         /* dirs[first .. first + nhops) */
} ftm_route;

/* Words of state the packed form (ftm_sched_ctx.packed) keeps per chip
 * program and per reader: opaque here, their layout is src/sched's. */
#define FTM_SCHED_PROG_WORDS 49
#define FTM_SCHED_CUR_WORDS 43

typedef struct ftm_chip_prog {
    ftm_step *steps;
    int nsteps, cap_steps;
    ftm_op *ops;
    int nops, cap_ops;
    int dry_used;      /* dry run: 1 + the last step that got an op (else 0) */
    /* packed schedules only (steps and ops stay NULL): the program's
     * bytes and its encoder's state, read and written by src/sched alone */
    uint64_t packed[FTM_SCHED_PROG_WORDS];
} ftm_chip_prog;

/* A watch on builds (ftm_sched_ctx.watch): floor(ctx, ...) gives the
 * least time a send of nhops hops and len bytes can take (plus its own
 * reduction when self_sum: a 0-hop send that sums into its own chip). */
typedef struct ftm_sched_watch {
    double (*floor)(const void *ctx, int nhops, size_t len, int self_sum);
    const void *ctx;
    double limit;          /* stop once a chip's bound passes it */
} ftm_sched_watch;

/* The bytes of memory the schedules built under one context hold
 * (ftm_sched_ctx.meter; zero it to start): live is what they hold now
 * (ftm_sched_mem_bytes of each not yet freed), peak the most live ever
 * was, with the moments charged on top (ftm_sched_charge). */
typedef struct ftm_sched_meter {
    size_t limit;          /* 0: none; else a budget (see ftm_sched_ctx) */
    size_t live, peak;
} ftm_sched_meter;

/* How a schedule is built: the caller's choice, passed to the builder
 * (ftm_sched_init and every allreduce builder take one; NULL or a zeroed
 * context is a plain build). Builders hand it on to the schedules they
 * build inside (parts, variants, fallbacks), changing only the watch.
 *
 * dry: a dry run, the memory a build would take, found by running the
 *   builder without storing its steps and ops. A dry schedule keeps its
 *   routes and, per chip, its step and op counts and the capacities the
 *   arrays would have (the same growth and trimming), but no step or op
 *   arrays (steps and ops are NULL: nothing may read them; the cost model
 *   only charges its replay's memory, ftm_cost_sched). With a meter, the
 *   peak is what a build and its replay will hold -- in O(chips) memory,
 *   in about the time of counting the transfers -- so a caller can refuse
 *   before anything big is allocated. A dry run is never refused.
 * packed: programs stored packed, a few bytes per op instead of 24 (a
 *   64x64 ring's 27 M transfers take 0.11 GiB instead of 2 GB), for
 *   schedules that are only modeled (dry ones then count the packed
 *   bytes). A packed schedule keeps steps and ops NULL (nsteps, nops and
 *   the routes as usual): read it with ftm_sched_read_step. The cost
 *   model, ftm_sched_link_bytes, ftm_sched_chip_packets,
 *   ftm_sched_exec_data and ftm_sched_mem_bytes read both forms; the
 *   runtime, trace and pictures need the unpacked form (FTM_EINVAL where
 *   they check).
 * watch: early stop (not in dry runs). The schedule keeps, per chip, the
 *   running sum over its steps of each step's longest send as
 *   watch->floor times it: the bound of the cost model's
 *   ftm_cost_lower_bound, summed as the build goes (a prefix of the same
 *   sum, so never above it). Once some chip's sum s has
 *   watch->limit < s * (1 - 1e-9), that bound's own margin, ftm_sched_xfer
 *   returns FTM_ESTOPPED and the builder fails with it: the schedule's
 *   modeled time is above the limit (the 2-D fallback sets the limit to
 *   the ring's modeled time, so a 2-D schedule that cannot beat the ring
 *   is not finished). The caller keeps the watch alive until it calls
 *   ftm_sched_unwatch on the schedule (which frees the sums).
 * cost: the cost model's parameters (costmodel.h) that a builder's
 *   choices are made for -- how many chunks or pieces, which of two
 *   schedules models faster (NULL: the TPU-v3 defaults). Read while
 *   building only: the caller keeps it alive until the build returns.
 * meter: counts every schedule built under the context (NULL: none),
 *   through growth, packed code, trimming and freeing; the cost model's
 *   replay of one is charged to it (ftm_cost_sched). With meter->limit,
 *   a budget: any growth of a schedule's arrays (ftm_sched_init
 *   included) that would take live past it fails with FTM_ENOMEM before
 *   allocating, and so does the replay; the builder then returns
 *   FTM_ENOMEM and frees what it built, as on a failed malloc. A refused
 *   growth moves the peak too, to what live would have reached, so a peak
 *   above the limit says the budget refused something. Where nothing is
 *   refused the peak is what a dry run of the same calls counts
 *   (ftm_allreduce_plan_mem) or less: a dry run knows no times, and where
 *   a builder picks the faster of two schedules it counts the larger.
 *   The meter must outlive the schedules built under it (they count their
 *   frees). One build at a time per meter: it is not locked. */
struct ftm_cost_params;
typedef struct ftm_sched_ctx {
    int dry;
    int packed;
    const ftm_sched_watch *watch;
    ftm_sched_meter *meter;
    const struct ftm_cost_params *cost;
} ftm_sched_ctx;

typedef struct ftm_sched {
    const char *algo;      /* static name of the algorithm whose schedule this
                            * is: the one actually built, which may differ
                            * from the one asked for (see fallback) */
    const char *fallback;  /* NULL when the asked algorithm's own schedule
                            * was built; else a static one-line reason why
                            * another one (algo) was kept instead, e.g.
                            * "the ring is faster on this small mesh" */
    int nchips;            /* mesh size (programs of dead chips stay empty) */
    size_t bytes;          /* buffer bytes per chip */
    ftm_chip_prog *prog;   /* [nchips] */
    ftm_route *routes;
    int nroutes, cap_routes;
    unsigned char *dirs;   /* hop directions of all routes */
    int ndirs, cap_dirs;
    uint32_t next_tag;
    int dry;               /* built in a dry run: counts and capacities only
                            * (src/sched/sched_lib.h: SCHED_DRY_HIDDEN, set
                            * aside) */
    int packed;            /* programs stored packed (ftm_sched_ctx) */
    const char **phases;   /* packed: the step phases, by id */
    int nphases, cap_phases;
    int max_step_ops;      /* ops in the largest step of any chip */
    uint64_t serial;       /* unique per ftm_sched_init in this process */
    uint64_t nchange;      /* counts the changes made through this API (the
                            * cost model's memo of its last replay is keyed
                            * by serial and nchange: code that edits programs
                            * in place must bump it) */
    const ftm_sched_watch *watch; /* the watch it is built under, or NULL */
    double *wsum;          /* watched: [2 * nchips] per chip the sum of its
                            * closed steps' longest sends, its open step's */
    ftm_sched_meter *meter; /* the meter it counts to, or NULL (ftm_sched_ctx) */
    const struct ftm_cost_params *cost; /* the parameters it is built for, or
                            * NULL (ftm_sched_ctx; read while building only) */
} ftm_sched;

/* A reader's place in one chip's program (zero it to start). */
typedef struct ftm_sched_cur {
    int step;              /* steps read */
    uint64_t state[FTM_SCHED_CUR_WORDS]; /* packed: the reader's place and running
                                          * values, src/sched's alone */
} ftm_sched_cur;

/* One step as read: ops[0 .. nops) in program order. For a packed
 * schedule they are decoded into buf (grown as needed; free it with
 * ftm_sched_view_free); for an unpacked one ops points into the program. */
typedef struct ftm_sched_view {
    const ftm_op *ops;
    int nops;
    const char *phase;
    int index;
    ftm_op *buf;
    int cap;
} ftm_sched_view;

/* Reads chip's next step at cur into v: 1, or 0 after the last step, or
 * FTM_ENOMEM / FTM_EINVAL (a chip out of range, a corrupt program). */
FTM_EXTERN int ftm_sched_read_step(const ftm_sched *s, int chip, ftm_sched_cur *cur,
                                   ftm_sched_view *v);
FTM_EXTERN void ftm_sched_view_free(ftm_sched_view *v);


/* Merges a and b (same chip count and buffer size) into out (initialised
 * here, name algo) step by step: chip c's step j is a's step j of c, then
 * b's step j of chip b_chip[c] (b was built on a relabelled mesh: its chip
 * b_chip[c] is out's chip c, its direction d is out's dir_of[d]; its
 * routes, peers and tags are renumbered). Consumes both parts' programs
 * as it goes (their routes stay; free both after). out is built as a was
 * (unpacked, packed or dry; a's watch and meter), and b must have been
 * built the same way, so no builder needs to know the form. Every
 * transfer of a and b must sit at the same step index on both its ends,
 * so the merged steps pair up as the parts' did. Returns 0, FTM_EINVAL or
 * FTM_ENOMEM (out then holds nothing). */
FTM_EXTERN int ftm_sched_merge(ftm_sched *out, const char *algo, ftm_sched *a, ftm_sched *b,
                               const int *b_chip, const unsigned char *dir_of,
                               const char *(*phase_of)(const char *pa, const char *pb));
/* phase_of (NULL: a's phase, or b's where a has no step j) names merged
 * step j from the parts' phases (NULL where a part has no step j): a
 * static string, by convention "PA+PB" with PB in out's terms, so that
 * ftm_sched_phase_match can tell the parts apart. */
/* 1 when a step of phase step_phase belongs to query: "P" matches a step
 * named P and a merged step "P+..." (its first part's), "+Q" a merged
 * step "...+Q" (its second part's); else 0. */
FTM_EXTERN int ftm_sched_phase_match(const char *step_phase, const char *query);

/* Copies s into out in the unpacked form (the same programs op for op,
 * the same routes and tags). out is built plain (unpacked, no watch, no
 * meter). */
FTM_EXTERN int ftm_sched_unpack(const ftm_sched *s, ftm_sched *out);


/* Charges bytes held only for a moment (the cost model's replay) on top
 * of the live bytes of s's meter: the peak moves if live + bytes exceeds
 * it; FTM_ENOMEM if s is not dry and that passes the meter's limit, else
 * 0. No effect without a meter. */
FTM_EXTERN int ftm_sched_charge(const ftm_sched *s, size_t bytes);

/* The build is over: s forgets its watch (ftm_sched_ctx) and frees the
 * watch's sums. */
FTM_EXTERN void ftm_sched_unwatch(ftm_sched *s);

/* A schedule for nchips chips of bytes each, built as ctx says (NULL: a
 * plain build). On error nothing is allocated. */
FTM_EXTERN int ftm_sched_init(ftm_sched *s, const ftm_sched_ctx *ctx, const char *algo, int nchips,
                              size_t bytes);
FTM_EXTERN void ftm_sched_free(ftm_sched *s);

/* Adds a route src -> dst of nhops directions (FTM_DIR_*), returning its
 * id (>= 0) or a negative error (FTM_EINVAL for a direction that is no
 * FTM_DIR_*). nhops == 0 requires src == dst: a local copy (or sum), its
 * send and receive in the same step, on ranges that do not overlap. */
FTM_EXTERN int ftm_sched_route(ftm_sched *s, int src, int dst, const unsigned char *dirs, int nhops);

/* Opens a new step in chip's program; later ops of that chip join it. */
FTM_EXTERN int ftm_sched_step(ftm_sched *s, int chip, const char *phase, int index);

/* Makes room in chip's program for nsteps more steps and nops more ops
 * (exactly: builders that know their counts avoid the doubling slack and
 * the copies of growing arrays). Optional; FTM_ENOMEM or 0. */
FTM_EXTERN int ftm_sched_reserve(ftm_sched *s, int chip, int nsteps, int nops);

/* A transfer of len bytes from [soff, soff+len) of the route's source chip
 * to [doff, doff+len) of its destination, combined by red. Appends a send to
 * the source's open step and a receive to the destination's open step.
 * len == 0 adds nothing. A sum's offsets and length are whole elements
 * (ftm_sched_red_elem_size), and both chips have an open step, else
 * FTM_EINVAL, with nothing added. On FTM_ENOMEM the send may be in without
 * its receive: free the schedule. */
FTM_EXTERN int ftm_sched_xfer(ftm_sched *s, int route, size_t soff, size_t doff, size_t len, ftm_red red);

/* Drops empty steps at the end of every program (harmless but noisy) and
 * gives back the programs' unused capacity. */
FTM_EXTERN void ftm_sched_trim(ftm_sched *s);

/* Bytes of memory the schedule holds (its arrays as allocated). */
FTM_EXTERN size_t ftm_sched_mem_bytes(const ftm_sched *s);

/* Total payload bytes the schedule sends across each directed link:
 * link_bytes[chip * 4 + dir] (nchips * 4 entries, zeroed first). */
FTM_EXTERN void ftm_sched_link_bytes(const ftm_sched *s, const struct ftm_mesh *m, uint64_t *link_bytes);

/* Packets chip sends over links in one execution of s (local copies
 * send none), with pkt payload bytes per packet (failure injection picks a
 * point inside a collective with it); 0 for pkt 0 or a chip out of range. */
FTM_EXTERN uint64_t ftm_sched_chip_packets(const ftm_sched *s, int chip, size_t pkt);

/* Balanced split of count elements into p blocks (Open MPI's ring
 * allreduce split: the first count % p blocks get one element more).
 * Block b covers elements [*first, *first + *n) (empty for p < 1 or b < 0). */
FTM_EXTERN void ftm_sched_block(size_t count, int p, int b, size_t *first, size_t *n);
/* The inverse: the block b (0 <= b < p) whose range holds element x of
 * ftm_sched_block's split of count into p; -1 when x >= count or p < 1. */
FTM_EXTERN int ftm_sched_block_of(size_t count, int p, size_t x);

/* Element size in bytes of a reduction type (4 or 8; 1 for FTM_RED_COPY). */
FTM_EXTERN size_t ftm_sched_red_elem_size(ftm_red red);

/* The reduction kernel, the one both interpreters use (the runtime per
 * packet, ftm_sched_exec_data per receive): combines len bytes of src into
 * dst by red (copy, float sum, int64 sum). len is a multiple of the element
 * size. An int64 sum that overflows returns FTM_ERANGE (dst is then partly
 * updated), never a wrapped value; otherwise 0. */
FTM_EXTERN int ftm_sched_reduce(void *dst, const void *src, size_t len, ftm_red red);

/* Sequential reference executor (no threads, no time): applies every
 * transfer of s to the per-chip buffers bufs[chip] (s->bytes each; NULL
 * allowed for chips without a program). A send reads its range when its
 * step starts; a receive writes when its step ends; a step ends when every
 * send it receives from has started. The result is the one any correct
 * execution gives (the runtime's included), because the writes within a
 * step are checked to be disjoint from each other and from the reads:
 * otherwise FTM_EINVAL (also for unaligned sum receives, unpaired tags,
 * routes that leave the mesh or end elsewhere). Returns 0, FTM_EINVAL,
 * FTM_ENOROUTE (a route over a dead chip or link of m: chip threads
 * cannot run it either),
 * FTM_EHANG (steps wait on each other in a cycle), FTM_ERANGE (an int64 sum
 * overflowed, as in the runtime) or FTM_ENOMEM; after an error the buffers
 * are partly updated. Reentrant; reads s and m only. A test oracle. */
FTM_EXTERN int ftm_sched_exec_data(const ftm_sched *s, const struct ftm_mesh *m, void **bufs);

#endif
