/* Per-thread memos (not installed): each thread keeps its own object in a
 * slot, freed by the slot's free function when the thread exits.
 *
 * Why: the sweep and rows runners model on worker threads, and each
 * thread remembers its last answers (the cost model's last replay, the
 * 2-D fallback's ring model, the router's last two rings) without locks.
 * A thread-local pointer alone would leak its object when the thread
 * ends; one pthread key, whose destructor frees every slot's object at
 * thread exit, keeps ASan's and TSan's leak checks clean.
 *
 * Pure caches only: a memo changes how soon an answer comes, never the
 * answer. What a build does is never set per thread (sched.h: the build
 * context, ftm_sched_ctx, is passed to the builders). */
#ifndef FTMESH_CORE_TLS_MEMO_H
#define FTMESH_CORE_TLS_MEMO_H

/* One slot per memo; a new memo adds its own. */
typedef enum core_memo_slot {
    CORE_MEMO_COST_REPLAY, /* costmodel.c: the last replay */
    CORE_MEMO_RING_MODEL,  /* allreduce_2d_fallback.c: the last ring modeled */
    CORE_MEMO_ROUTER_RINGS, /* router.c: the rings of the last two meshes */
    CORE_MEMO_NSLOTS
} core_memo_slot;

/* This thread's object in slot, or NULL (none yet, or freed at exit). */
void *core_memo_get(core_memo_slot slot);

/* obj (may be NULL) becomes this thread's object in slot, to be freed by
 * drop(obj) when the thread exits. The object it replaces is not freed:
 * that is the caller's. */
void core_memo_set(core_memo_slot slot, void *obj, void (*drop)(void *));

#endif
