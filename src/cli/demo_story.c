/* ftmesh demo: the parts the page tells, collected while the text is told,
 * and whether an algorithm's own schedule can be told (demo.h). */
#include "demo.h"

#include "cli.h"
#include "ftmesh/collective.h"
#include "ftmesh/error.h"
#include "ftmesh/router.h"

#include <string.h>

int demo_runs_ring(const char *algo)
{
    return !strcmp(algo, "ring") || !strcmp(algo, "bidir");
}

int demo_story_ring(const ftm_mesh *m, const char *algo, ftm_ring *ring)
{
    memset(ring, 0, sizeof *ring);
    if (!demo_runs_ring(algo))
        return 0;
    return ftm_router_ring(m, ring) == 0;
}

ftm_lesson_part *demo_story_add(demo_story *st, const char *title, ftm_lesson *l, ftm_trace *tr,
                                ftm_ring *ring)
{
    if (st->n >= DEMO_MAX_PARTS)
        return NULL;
    int i = st->n++;
    st->les[i] = *l;
    memset(l, 0, sizeof *l);
    st->tr[i] = tr;
    if (ring) {
        st->ring[i] = *ring;
        memset(ring, 0, sizeof *ring);
    }
    snprintf(st->title[i], sizeof st->title[i], "%s", title);
    ftm_lesson_part *p = &st->part[i];
    memset(p, 0, sizeof *p);
    p->title = st->title[i];
    p->intro = st->intro[i];
    p->l = &st->les[i];
    p->ring = st->ring[i].n ? &st->ring[i] : NULL;
    demo_story_ring2(st, i);
    return p;
}

void demo_story_ring2(demo_story *st, int i)
{
    ftm_lesson_part *p = &st->part[i];
    if (!p->ring || !p->l->algo || strcmp(p->l->algo, "bidir") || st->ring2[i].n)
        return;
    if (ftm_router_reverse(&p->l->mesh, p->ring, &st->ring2[i]) == 0)
        p->ring2 = &st->ring2[i];
}

void demo_story_free(demo_story *st)
{
    for (int i = 0; i < st->n; i++) {
        ftm_lesson_free(&st->les[i]);
        ftm_trace_destroy(st->tr[i]);
        if (st->ring[i].n)
            ftm_router_ring_free(&st->ring[i]);
        if (st->ring2[i].n)
            ftm_router_ring_free(&st->ring2[i]);
    }
    for (int i = 0; i < DEMO_MAX_PARTS; i++)
        if (st->have_plan[i])
            ftm_plan2d_free(&st->plan[i]);
    memset(st, 0, sizeof *st);
}

int demo_story_bands(demo_story *st, int i, const ftm_mesh *m, const char *algo)
{
    if (strcmp(algo, "2d") || i < 0 || i >= DEMO_MAX_PARTS || st->have_plan[i])
        return 0;
    ftm_plan2d *p = &st->plan[i];
    int rc = ftm_plan2d_build(m, p);
    if (rc)
        return rc == FTM_ENOMEM ? rc : 0; /* no plan: the page draws the mesh */
    st->have_plan[i] = 1;
    int n = 0;
    for (int b = 0; b < p->nbands && n + 2 <= 2 * FTM_MESH_MAX_SIDE; b++)
        if (p->bands[b].alternate) {
            st->bandp[i][n++] = &p->bands[b].fwd;
            st->bandp[i][n++] = &p->bands[b].rev;
        }
    st->part[i].bands = n ? st->bandp[i] : NULL;
    st->part[i].nbands = n;
    return 0;
}

/* Why an algorithm's own schedule cannot run (its builder's reasons). */
static const char *own_why(const char *algo, const ftm_mesh *m, int rc)
{
    if (rc == FTM_ENOTSUP && !strcmp(algo, "2d-lines"))
        return m->rows < 2 || m->cols < 2
                   ? "a 2-D schedule needs at least two rows and two columns"
                   : "no layout of its lines fits this mesh: it needs usable columns, whose "
                     "chips are all alive, and a whole row beside any row cut more than once";
    return ftm_strerror(rc);
}

int demo_own_ok(const char *algo, const ftm_mesh *m, int victim)
{
    ftm_mesh t;
    ftm_sched s;
    for (int pass = 0; pass < 1 + (victim >= 0); pass++) {
        int rc = ftm_mesh_copy(&t, m);
        if (rc)
            return cli_error("demo", "%s", ftm_strerror(rc));
        int a = -1, b = -1;
        if (pass)
            t.chip_dead[victim] = 1;
        if (pass && ftm_mesh_check_connected(&t, &a, &b) == FTM_EPARTITION) {
            ftm_mesh_free(&t);
            return cli_usage_error("demo", "--fail-during %d,%d: once it has died the healthy chips "
                                   "are cut into parts ((%d,%d) cannot reach (%d,%d) over live "
                                   "links), where no allreduce runs: pick another chip",
                                   ftm_mesh_row(m, victim), ftm_mesh_col(m, victim),
                                   ftm_mesh_row(m, a), ftm_mesh_col(m, a), ftm_mesh_row(m, b),
                                   ftm_mesh_col(m, b));
        }
        /* the recovery keeps the lesson's numbers: m's count */
        rc = ftm_allreduce_build_own(algo, &s, NULL, &t, demo_lesson_count(m, algo),
                                     FTM_RED_SUM_I64);
        const char *why = rc ? own_why(algo, &t, rc) : NULL;
        ftm_mesh_free(&t);
        if (!rc)
            ftm_sched_free(&s);
        if (rc == FTM_ENOTSUP && !pass)
            return cli_usage_error("demo", "--algo %s: its own schedule cannot run on this mesh "
                                   "(%s); the demo shows no other in its place: try another "
                                   "mesh or algorithm", algo, why);
        if (rc == FTM_ENOTSUP || rc == FTM_EPARTITION)
            return cli_usage_error("demo", "--fail-during %d,%d: once it has died, %s's own "
                                   "schedule cannot run (%s); the demo shows no other in its "
                                   "place: pick another chip, mesh or algorithm",
                                   ftm_mesh_row(m, victim), ftm_mesh_col(m, victim), algo, why);
        if (rc)
            return cli_error("demo", "%s", ftm_strerror(rc));
    }
    return 0;
}
