/* The 2-D allreduce on crowded meshes: never much worse than the 1-D ring.
 *
 * The 2-D plan merges every row touched by a fault with its neighbours into
 * a band; when faults are spread over many rows the bands grow until one
 * band holds most of the mesh, and its rings, snaking around dozens of
 * holes, can cost many times what the router's single ring costs (64x64
 * torus, 400 dead chips, 100 MB: 628 ms against 16.9 ms before bands used
 * the router's ring). So on a crowded mesh -- more than a quarter of the
 * rows or of the columns hold a fault -- and on small, thin, open or
 * elongated meshes (worth_checking), the
 * 2-D schedule is modeled against the 1-D ring's (cost model, TPU-v3
 * defaults) and the faster one is kept: the ring's schedule keeps its own
 * name ("ring") and says why it ran (ftm_sched.fallback). This ring check
 * is the last candidate of every list of the family's picker
 * (allreduce_2d_pick.c), which calls it with the other candidates' build.
 * On big meshes with few faults nothing changes and nothing extra is
 * built. As holes multiply the 2-D algorithm thus
 * degrades from rows-then-columns (bands of 1-3 rows), through wider bands
 * whose rings are the router's rings of the band, to the 1-D ring.
 */
#include "ftmesh/collective.h"
#include "ftmesh/costmodel.h"
#include "ftmesh/error.h"
#include "sched/sched_lib.h"
#include "costmodel/cost_lib.h"
#include "allreduce_2d_int.h"
#include "keep.h"
#include "core/tls_memo.h"

#include <stdlib.h>
#include <string.h>

/* One build to check against the ring: the mesh and buffer, the 2-D
 * builder, the context it builds in (its watch taken off) and the cost
 * parameters the choice is made by. */
typedef struct ar2d_req {
    ftm_sched_ctx base;
    const ftm_mesh *m;
    size_t count;
    ftm_red red;
    ftm_allreduce_build_fn build;
    ftm_cost_params p;
} ar2d_req;

/* 1 when line i (a row, or a column if cols) holds a dead chip or a dead
 * link leaving one of its chips, a link into a dead chip included: a dead
 * chip touches the lines beside it too, whose chips lose a link to it. */
static int line_faulty(const ftm_mesh *m, int i, int cols)
{
    int n = cols ? m->rows : m->cols;
    for (int k = 0; k < n; k++) {
        int a = cols ? ftm_mesh_chip(m, k, i) : ftm_mesh_chip(m, i, k);
        if (!ftm_mesh_alive(m, a))
            return 1;
        for (int d = 0; d < FTM_NDIRS; d++)
            if (ftm_mesh_neighbor(m, a, d) >= 0 && !ftm_mesh_link_live(m, a, d))
                return 1;
    }
    return 0;
}

int ar2d_crowded(const ftm_mesh *m)
{
    int fr = 0, fc = 0;
    for (int r = 0; r < m->rows; r++)
        fr += line_faulty(m, r, 0);
    for (int c = 0; c < m->cols; c++)
        fc += line_faulty(m, c, 1);
    return 4 * fr > m->rows || 4 * fc > m->cols;
}

/* Small or thin meshes are checked too: there the 2-D phases have little
 * to work with (a 2xN mesh's column-first half is N short columns) and the
 * ring's schedule is cheap to build. So are open meshes and elongated ones
 * (a side at least 4 times the other) of up to 1024 chips: their 2-D rows
 * snake in pairs or their columns are short, and the ring was measured up
 * to 10x faster there (6x60 mesh, 64 KiB: 720 us against 7602 us); beyond
 * 1024 chips the ring takes over a million transfers to build and its
 * thousands of steps lose anyway. The paper's 512- and 1024-chip tori
 * with a few faults are none of these, and build nothing extra. */
static int worth_checking(const ftm_mesh *m)
{
    int lo = m->rows < m->cols ? m->rows : m->cols, hi = m->rows + m->cols - lo;
    return m->nchips <= 256 || lo <= 4 || ar2d_crowded(m) ||
           (m->nchips <= 1024 && (!m->torus || hi >= 4 * lo));
}

/* Why the ring's schedule ran instead of the 2-D one (ftm_sched.fallback;
 * worth_checking's cases). */
static const char *ring_reason(const ftm_mesh *m)
{
    int lo = m->rows < m->cols ? m->rows : m->cols;
    if (m->nchips <= 256)
        return "the ring is faster on this small mesh";
    if (lo <= 4)
        return "the ring is faster on this thin mesh";
    if (ar2d_crowded(m))
        return "the ring is faster: faults touch over a quarter of the rows or columns";
    return m->torus ? "the ring is faster on this elongated torus"
                    : "the ring is faster on this open mesh";
}

/* A dry run (sched.h) knows no times: it keeps the larger schedule, and
 * sets the 2-D one aside rather than rebuilding it (same counts). */
static int dry_fallback(ftm_sched *s, const ar2d_req *q)
{
    ftm_sched ring;
    int rc = ftm_cost_sched(s, q->m, &q->p, NULL, NULL);
    ftm_sched_dry_hide(s, 1); /* freed, as below */
    if (!rc)
        rc = ftm_allreduce_ring_build(&ring, &q->base, q->m, q->count, q->red);
    if (!rc)
        rc = ftm_cost_sched(&ring, q->m, &q->p, NULL, NULL);
    if (rc)
        return rc;
    if (ftm_sched_mem_bytes(&ring) >= ftm_sched_mem_bytes(s)) {
        ring.fallback = "a dry run counts the larger of the 2-D and the ring's schedules";
        ftm_sched_free(s); /* hidden: counts nothing */
        *s = ring;
    } else {
        ftm_sched_free(&ring);
        ftm_sched_dry_hide(s, 0); /* the rebuild */
    }
    return 0;
}

/* This thread's last ring modeled by a fallback: its mesh, count,
 * reduction, parameters, time and link bytes. The fallbacks of 2d,
 * 2d-concurrent and 2d-lines (auto tries all three) on the same mesh
 * then replay the ring once: a rebuild has the same bits, and the cost
 * model is told its figures (ftm_cost_memo_put). Freed with its thread
 * (tls_memo.h). */
typedef struct ring_model {
    int valid;
    ftm_mesh m;
    size_t count;
    ftm_red red;
    ftm_cost_params p;
    ftm_cost_result r;
    uint64_t *lb;
} ring_model;

static void rmemo_drop(void *v)
{
    ring_model *r = v;
    if (r->valid)
        ftm_mesh_free(&r->m);
    free(r->lb);
    free(r);
}

static int rmemo_hit(const ar2d_req *q)
{
    const ring_model *rmemo = core_memo_get(CORE_MEMO_RING_MODEL);
    return rmemo && rmemo->valid && rmemo->count == q->count && rmemo->red == q->red &&
           memcmp(&rmemo->p, &q->p, sizeof q->p) == 0 && ftm_mesh_same(&rmemo->m, q->m);
}

/* Replays the ring s into the memo (kept only on success). */
static int rmemo_fill(const ftm_sched *s, const ar2d_req *q, ftm_cost_result *b)
{
    const ftm_mesh *m = q->m;
    ring_model *rmemo = core_memo_get(CORE_MEMO_RING_MODEL);
    if (!rmemo) {
        if (!(rmemo = calloc(1, sizeof *rmemo)))
            return FTM_ENOMEM;
        core_memo_set(CORE_MEMO_RING_MODEL, rmemo, rmemo_drop);
    }
    if (rmemo->valid)
        ftm_mesh_free(&rmemo->m);
    rmemo->valid = 0;
    free(rmemo->lb);
    rmemo->lb = malloc(sizeof *rmemo->lb * (size_t)m->nchips * FTM_NDIRS);
    if (!rmemo->lb)
        return FTM_ENOMEM;
    int rc = ftm_cost_sched(s, m, &q->p, b, rmemo->lb);
    if (rc || (rc = ftm_mesh_copy(&rmemo->m, m)))
        return rc;
    rmemo->valid = 1;
    rmemo->count = q->count;
    rmemo->red = q->red;
    rmemo->p = q->p;
    rmemo->r = *b;
    return 0;
}

/* Builds the ring into s (as ctx says) and models it into *b. */
static int ring_modeled(ftm_sched *s, const ar2d_req *q, const ftm_sched_ctx *ctx,
                        ftm_cost_result *b)
{
    int rc = ftm_allreduce_ring_build(s, ctx, q->m, q->count, q->red);
    if (rc)
        return rc;
    if (!rmemo_hit(q))
        return rmemo_fill(s, q, b);
    const ring_model *rmemo = core_memo_get(CORE_MEMO_RING_MODEL);
    *b = rmemo->r;
    return ftm_cost_memo_put(s, q->m, &q->p, b, rmemo->lb);
}

/* s := the ring (built as ctx says), modeled into *b, saying why it ran
 * instead. */
static int ring_kept(ftm_sched *s, const ar2d_req *q, const ftm_sched_ctx *ctx,
                     ftm_cost_result *b)
{
    memset(s, 0, sizeof *s);
    int rc = ring_modeled(s, q, ctx, b);
    if (!rc)
        s->fallback = ring_reason(q->m);
    return rc;
}

/* The 2-D schedule, built under watch w (NULL: none). */
static int build_under(ftm_sched *s, const ar2d_req *q, const ftm_sched_watch *w)
{
    ftm_sched_ctx c = q->base;
    c.watch = w;
    memset(s, 0, sizeof *s);
    int rc = q->build(s, &c, q->m, q->count, q->red);
    if (!rc)
        ftm_sched_unwatch(s);
    return rc;
}

/* The 2-D schedule, built under a watch whose limit is the ring's modeled
 * time: FTM_ESTOPPED when its bound passes it. */
static int build_watched(ftm_sched *s, const ar2d_req *q, double ring_s)
{
    ftm_sched_watch w = { ftm_cost_watch_floor, &q->p, ring_s };
    return build_under(s, q, &w);
}

/* The ring is modeled first (once per mesh and size on this thread, see
 * ring_model); then the 2-D schedule is built under a watch (sched.h)
 * that stops it as soon as a chip's bound (ftm_cost_lower_bound's sum, so
 * far) passes the ring's time: where the ring wins on a crowded mesh the
 * 2-D schedule is not finished (64x64 torus, 400 dead chips: its bound
 * passes the ring's 14.8 ms a tenth of the way through). Otherwise its
 * full bound, then its replay, decide. Each test keeps the ring only where
 * the ring's time is below the 2-D schedule's, so the choice is the one a
 * replay of both would make. One schedule at a time: the peak is the
 * larger of the two, not their sum; builds are deterministic, so a
 * rebuild has the same bits. */
static int checked(ftm_sched *s, const ar2d_req *q)
{
    ftm_cost_result a, b;
    int rc = ring_kept(s, q, &q->base, &b);
    ftm_sched_free(s);
    if (!rc)
        rc = build_watched(s, q, b.time_s);
    if (rc)
        return rc == FTM_ESTOPPED ? ring_kept(s, q, &q->base, &b) : rc;
    double bound;
    if ((rc = ftm_cost_lower_bound(s, q->m, &q->p, &bound)))
        return rc;
    if (!(b.time_s < bound) &&
        ((rc = ftm_cost_sched(s, q->m, &q->p, &a, NULL)) || !(b.time_s < a.time_s)))
        return rc;
    ftm_sched_free(s); /* the ring after all: built again */
    return ring_kept(s, q, &q->base, &b);
}

/* Under a watch from the caller (auto's limit L, auto.c) with the same
 * parameters: the 2-D schedule first, under it. If it stops (its time is
 * above L), so is the result unless the ring is kept, and the ring is
 * kept only below the 2-D time: so the ring, under the same watch, decides
 * -- stopped or above L: FTM_ESTOPPED (the result could not beat L); else
 * the ring (its time below L, so below the 2-D's: the choice checked()
 * would make). *done = 0 when this does not decide (the 2-D schedule fit
 * under L: s is empty, and checked() builds it again). */
static int under_limit(ftm_sched *s, const ar2d_req *q, const ftm_sched_watch *outer, int *done)
{
    ftm_cost_result b;
    ftm_sched_ctx c = q->base;
    c.watch = outer;
    memset(s, 0, sizeof *s);
    int rc = q->build(s, &c, q->m, q->count, q->red);
    if (rc != FTM_ESTOPPED) { /* within L (or failed): not decided here */
        if (!rc)
            ftm_sched_free(s);
        *done = rc != 0;
        return rc;
    }
    rc = ring_kept(s, q, &c, &b);
    *done = 1;
    if (!rc && b.time_s > outer->limit)
        rc = FTM_ESTOPPED;
    if (!rc)
        ftm_sched_unwatch(s);
    return rc;
}

/* A watch with these parameters (those the fallback decides by). */
static int same_params(const ftm_sched_watch *w, const ftm_cost_params *p)
{
    return w && w->floor == ftm_cost_watch_floor && memcmp(w->ctx, p, sizeof *p) == 0;
}

/* The builders choose between their own variants (2d-lines: one-way rows
 * or not, lines or 2d-concurrent) and the fallback between 2-D and ring by
 * the build's cost parameters (ftm_sched_ctx.cost, coll_cost); a caller's
 * watch with other parameters could stop the variant they would keep and
 * so change the schedule, so it is taken off (auto's watch has the
 * parameters auto builds for, so it stays). */
int ar2d_build_checked(ftm_sched *s, const ftm_sched_ctx *ctx, const ftm_mesh *m, size_t count,
                       ftm_red red, ftm_allreduce_build_fn build)
{
    ar2d_req q = { .base = ctx ? *ctx : (ftm_sched_ctx){ 0 }, .m = m, .count = count,
                   .red = red, .build = build };
    q.p = coll_cost(q.base.cost);
    const ftm_sched_watch *w = same_params(q.base.watch, &q.p) ? q.base.watch : NULL;
    q.base.watch = NULL;
    int done = 0, rc = 0;
    if (!worth_checking(m)) {
        rc = build_under(s, &q, w);
    } else if (q.base.dry) {
        rc = build(s, &q.base, m, count, red);
        if (!rc && (rc = dry_fallback(s, &q)))
            ftm_sched_free(s);
    } else {
        if (w)
            rc = under_limit(s, &q, w, &done);
        if (!rc && !done)
            rc = checked(s, &q);
        if (rc)
            ftm_sched_free(s);
    }
    return rc;
}
