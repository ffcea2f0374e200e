/* The 2-D allreduce on crowded meshes: never much worse than the 1-D ring.
 *
 * The 2-D plan merges every row touched by a fault with its neighbours into
 * a band; when faults are spread over many rows the bands grow until one
 * band holds most of the mesh, and its rings, snaking around dozens of
 * holes, can cost many times what the router's single ring costs (64x64
 * torus, 400 dead chips, 100 MB: 628 ms against 16.9 ms before bands used
 * the router's ring). So on a crowded mesh -- more than a quarter of the
 * rows or of the columns hold a fault -- and on small or thin meshes, the
 * 2-D schedule is modeled against the 1-D ring's (cost model, TPU-v3
 * defaults) and the faster one is kept, under the 2-D algorithm's name.
 * On big meshes with few faults nothing changes and nothing extra is
 * built. As holes multiply the 2-D algorithm thus
 * degrades from rows-then-columns (bands of 1-3 rows), through wider bands
 * whose rings are the router's rings of the band, to the 1-D ring.
 */
#include "ftmesh/collective.h"
#include "ftmesh/costmodel.h"
#include "ftmesh/error.h"
#include "allreduce_2d_int.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* 1 when line i (a row, or a column if cols) holds a dead chip or a dead
 * link leaving one of its chips. */
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
 * ring's schedule is cheap to build. The paper's 512- and 1024-chip tori
 * with a few faults are neither, and build nothing extra. */
static int worth_checking(const ftm_mesh *m)
{
    int lo = m->rows < m->cols ? m->rows : m->cols;
    return m->nchips <= 256 || lo <= 4 || ar2d_crowded(m);
}

/* A dry run (sched.h) knows no times: it keeps the larger schedule, and
 * sets the 2-D one aside rather than rebuilding it (same counts). */
static int dry_fallback(ftm_sched *s, const ftm_mesh *m, size_t count, ftm_red red,
                        const ftm_cost_params *p)
{
    ftm_sched ring;
    int rc = ftm_cost_sched(s, m, p, NULL, NULL);
    ftm_sched_dry_hide(s, 1); /* freed, as below */
    if (!rc)
        rc = ftm_allreduce_ring_build(&ring, m, count, red);
    if (!rc)
        rc = ftm_cost_sched(&ring, m, p, NULL, NULL);
    if (rc)
        return rc;
    if (ftm_sched_mem_bytes(&ring) >= ftm_sched_mem_bytes(s)) {
        ring.algo = s->algo;
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
 * model is told its figures (ftm_cost_memo_put). Freed with its thread. */
typedef struct ring_memo {
    int valid;
    ftm_mesh m;
    size_t count;
    ftm_red red;
    ftm_cost_params p;
    ftm_cost_result r;
    uint64_t *lb;
} ring_memo;

static _Thread_local ring_memo *rmemo;
static pthread_once_t rmemo_once = PTHREAD_ONCE_INIT;
static pthread_key_t rmemo_key;

static void rmemo_drop(void *v)
{
    ring_memo *r = v;
    if (r->valid)
        ftm_mesh_free(&r->m);
    free(r->lb);
    free(r);
}

static void rmemo_key_make(void)
{
    (void)pthread_key_create(&rmemo_key, rmemo_drop);
}

static int same_mesh(const ftm_mesh *a, const ftm_mesh *b)
{
    return a->rows == b->rows && a->cols == b->cols && a->torus == b->torus &&
           memcmp(a->chip_dead, b->chip_dead, (size_t)a->nchips) == 0 &&
           memcmp(a->link_dead, b->link_dead, (size_t)a->nchips * FTM_NDIRS) == 0;
}

static int rmemo_hit(const ftm_mesh *m, size_t count, ftm_red red, const ftm_cost_params *p)
{
    return rmemo && rmemo->valid && rmemo->count == count && rmemo->red == red &&
           memcmp(&rmemo->p, p, sizeof *p) == 0 && same_mesh(&rmemo->m, m);
}

/* Replays the ring s into the memo (kept only on success). */
static int rmemo_fill(const ftm_sched *s, const ftm_mesh *m, size_t count, ftm_red red,
                      const ftm_cost_params *p, ftm_cost_result *b)
{
    if (!rmemo) {
        pthread_once(&rmemo_once, rmemo_key_make);
        if (!(rmemo = calloc(1, sizeof *rmemo)))
            return FTM_ENOMEM;
        (void)pthread_setspecific(rmemo_key, rmemo);
    }
    if (rmemo->valid)
        ftm_mesh_free(&rmemo->m);
    rmemo->valid = 0;
    free(rmemo->lb);
    rmemo->lb = malloc(sizeof *rmemo->lb * (size_t)m->nchips * FTM_NDIRS);
    if (!rmemo->lb)
        return FTM_ENOMEM;
    int rc = ftm_cost_sched(s, m, p, b, rmemo->lb);
    if (rc || (rc = ftm_mesh_copy(&rmemo->m, m)))
        return rc;
    rmemo->valid = 1;
    rmemo->count = count;
    rmemo->red = red;
    rmemo->p = *p;
    rmemo->r = *b;
    return 0;
}

/* Builds the ring into s and models it into *b. */
static int ring_modeled(ftm_sched *s, const ftm_mesh *m, size_t count, ftm_red red,
                        const ftm_cost_params *p, ftm_cost_result *b)
{
    int rc = ftm_allreduce_ring_build(s, m, count, red);
    if (rc)
        return rc;
    if (!rmemo_hit(m, count, red, p))
        return rmemo_fill(s, m, count, red, p, b);
    *b = rmemo->r;
    return ftm_cost_memo_put(s, m, p, b, rmemo->lb);
}

/* The 2-D schedule s (bound: at most its modeled time) against the
 * ring's. One schedule at a time, so the peak is the larger of the two,
 * not their sum; builds are deterministic, so a rebuild has the same
 * bits. */
static int keep_faster(ftm_sched *s, const ftm_mesh *m, size_t count, ftm_red red,
                       ftm_allreduce_build_fn again, const ftm_cost_params *p, double bound)
{
    const char *name = s->algo;
    ftm_cost_result a, b;
    ftm_sched_free(s);
    int rc = ring_modeled(s, m, count, red, p, &b);
    if (!rc && b.time_s < bound) { /* below a bound on the 2-D time: the ring */
        s->algo = name;
        return 0;
    }
    ftm_sched_free(s);
    if (rc || (rc = again(s, m, count, red)) || (rc = ftm_cost_sched(s, m, p, &a, NULL)))
        return rc;
    if (!(b.time_s < a.time_s))
        return 0;
    ftm_sched_free(s); /* the ring after all: built again */
    if (!(rc = ring_modeled(s, m, count, red, p, &b)))
        s->algo = name;
    return rc;
}

/* Where the ring wins (big crowded meshes, the expensive case) the 2-D
 * schedule is not replayed: a bound on its time (ftm_cost_lower_bound,
 * one pass over its programs) that the ring's modeled time is below
 * decides, and the choice is the one the replay would make (the ring's
 * time is below the bound, so below the 2-D time). Only when the bound
 * does not decide is the 2-D schedule rebuilt and replayed. */
int ar2d_fallback(ftm_sched *s, const ftm_mesh *m, size_t count, ftm_red red,
                  ftm_allreduce_build_fn again)
{
    if (!worth_checking(m))
        return 0;
    ftm_cost_params p;
    ftm_cost_defaults(&p);
    if (s->dry)
        return dry_fallback(s, m, count, red, &p);
    double bound;
    int rc = ftm_cost_lower_bound(s, m, &p, &bound);
    return rc ? rc : keep_faster(s, m, count, red, again, &p, bound);
}
