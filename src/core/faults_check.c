/* The pre-run check of a fault script: applied in time order to the
 * mesh, every event must strike something alive, keep the healthy chips
 * connected (in every order, for kills after packet counts of one
 * allreduce), fit the run and be given once an instant; a chip counts its
 * packets towards one kill per allreduce. */
#include "ftmesh/faults.h"
#include "ftmesh/error.h"
#include "core/util.h"
#include "core/faults_int.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fs_refuse_apply(int rc, const char *ev, const ftm_mesh *m, char *detail, size_t dlen)
{
    if (rc == FTM_ERANGE)
        return core_fail_detail(rc, detail, dlen, "%s: outside the %dx%d %s (or the 2x2 host does not fit)",
                       ev, m->rows, m->cols, m->torus ? "torus" : "mesh");
    if (rc == FTM_ENOTNEIGHBOR)
        return core_fail_detail(rc, detail, dlen, "%s: the two chips are not neighbours, so no link joins them", ev);
    if (rc == FTM_EINVAL)
        return core_fail_detail(rc, detail, dlen, strncmp(ev, "repair ", 7)
                       ? "%s: nothing left to kill: what it names is already dead by then"
                       : "%s: nothing to repair: what it names is not (entirely) dead at that time", ev);
    return core_fail_detail(rc, detail, dlen, "%s: %s", ev, ftm_strerror(rc));
}

/* 0 when kill e finds something alive in `before` (the mesh before its
 * instant): the kills of one instant strike together, so one that another
 * kill of that instant took first (a link of a host killed with it) is
 * not "already dead", in either order. */
static int fs_kill_before(const ftm_mesh *before, const ftm_fault_event *e)
{
    ftm_mesh x;
    int rc = ftm_mesh_copy(&x, before);
    if (rc)
        return rc;
    rc = ftm_fault_apply(&x, e);
    ftm_mesh_free(&x);
    return rc;
}

/* 1 when kills a and b name the same chip, host or link (a link both
 * ways from either end). */
static int fs_same_target(const ftm_fault_event *a, const ftm_fault_event *b)
{
    if (a->kind != b->kind || a->repair != b->repair)
        return 0;
    if (a->kind != FTM_FAULT_LINK)
        return a->r == b->r && a->c == b->c;
    if (a->oneway != b->oneway)
        return 0;
    int same = a->r == b->r && a->c == b->c && a->r2 == b->r2 && a->c2 == b->c2;
    return same || (!a->oneway && a->r == b->r2 && a->c == b->c2 && a->r2 == b->r && a->c2 == b->c);
}

int core_fault_striker(const ftm_mesh *m, const ftm_fault_event *e)
{
    int chips[4];
    if (e->repair || e->phase != FTM_PHASE_ALLREDUCE || e->pkts == 0 || e->r < 0 || e->c < 0 ||
        e->r >= m->rows || e->c >= m->cols) /* not counted, or refused on its own */
        return -1;
    if (e->kind == FTM_FAULT_LINK)
        return ftm_mesh_chip(m, e->r, e->c);
    return ftm_fault_chips(m, e, chips) > 0 ? chips[0] : -1;
}

/* A chip counts its packets towards one kill per allreduce: a second one
 * of the same chip would strike only once the allreduce is over. */
static int fs_check_striker(const ftm_fault_script *s, int i, int k, const ftm_mesh *m,
                            const char *txt, char *detail, size_t dlen)
{
    const ftm_fault_event *e = &s->ev[k];
    int v = core_fault_striker(m, e);
    for (int d = i; d < k && v >= 0; d++)
        if (core_fault_concurrent(&s->ev[d], e) && core_fault_striker(m, &s->ev[d]) == v)
            return core_fail_detail(FTM_EINVAL, detail, dlen, "%s: chip (%d,%d) already strikes "
                                    "a kill after a packet count in this allreduce, and a chip "
                                    "counts towards one: move one to another %s", txt,
                                    ftm_mesh_row(m, v), ftm_mesh_col(m, v),
                                    s->mode == FTM_FAULT_TRAIN ? "step" : "iteration");
    return 0;
}

/* The healthy chips of t, once the event txt struck: 0 or the refusal. */
static int fs_check_connected(const ftm_mesh *t, const char *txt, ftm_fault_verdict *v,
                              char *detail, size_t dlen)
{
    int rc = ftm_mesh_check_connected(t, &v->a, &v->b);
    if (rc == FTM_EALLDEAD)
        return core_fail_detail(rc, detail, dlen, "%s: no chip is left alive after it", txt);
    if (rc == FTM_EPARTITION)
        return core_fail_detail(rc, detail, dlen, "%s cuts the healthy chips apart: (%d,%d) cannot reach (%d,%d) "
                       "over live links", txt, ftm_mesh_row(t, v->a), ftm_mesh_col(t, v->a),
                       ftm_mesh_row(t, v->b), ftm_mesh_col(t, v->b));
    return rc ? core_fail_detail(rc, detail, dlen, "%s", ftm_strerror(rc)) : 0;
}

/* The kills [i, w) strike in any order (core_fault_concurrent): after the
 * mesh t, every order must keep the healthy chips connected. */
static int fs_check_window(const ftm_fault_script *s, int i, int w, const ftm_mesh *t,
                           ftm_fault_verdict *v, char *detail, size_t dlen)
{
    int who = 0, rc = core_fault_window_ok(t, &s->ev[i], w - i, &who, &v->a, &v->b);
    if (rc != FTM_EPARTITION)
        return rc ? core_fail_detail(rc, detail, dlen, "%s", ftm_strerror(rc)) : 0;
    char txt[96];
    ftm_fault_format(&s->ev[i + who], s->mode, txt, sizeof txt);
    v->event = i + who;
    return core_fail_detail(rc, detail, dlen, "%s: the kills after packet counts of one "
                            "allreduce strike in any order (each when its own chip gets "
                            "there); if the others strike first, (%d,%d) cannot reach (%d,%d) "
                            "over live links", txt, ftm_mesh_row(t, v->a), ftm_mesh_col(t, v->a),
                            ftm_mesh_row(t, v->b), ftm_mesh_col(t, v->b));
}

/* Applies the events [i, j) of one instant, or of kills that strike in
 * any order, to t; 0 or the refusal. */
static int fs_check_group(const ftm_fault_script *s, int i, int j, ftm_mesh *t, long horizon,
                          ftm_fault_verdict *v, char *detail, size_t dlen)
{
    char txt[96];
    ftm_mesh before;
    int rc = ftm_mesh_copy(&before, t);
    if (rc)
        return core_fail_detail(rc, detail, dlen, "%s", ftm_strerror(rc));
    for (int k = i; k < j && !rc; k++) {
        const ftm_fault_event *e = &s->ev[k];
        ftm_fault_format(e, s->mode, txt, sizeof txt);
        v->event = k;
        if (horizon > 0 && e->when >= horizon) {
            rc = core_fail_detail(FTM_ERANGE, detail, dlen, "%s: the run has only %ld %s (0..%ld)", txt,
                           horizon, s->mode == FTM_FAULT_TRAIN ? "steps" : "iterations", horizon - 1);
            break;
        }
        for (int d = i; d < k && !rc; d++)
            if (fs_same_target(&s->ev[d], e))
                rc = core_fail_detail(FTM_EINVAL, detail, dlen, "%s: given twice at one instant "
                                      "(or in one allreduce)", txt);
        if (!rc)
            rc = fs_check_striker(s, i, k, &before, txt, detail, dlen);
        if (rc)
            break;
        rc = ftm_fault_apply(t, e);
        if (rc == FTM_EINVAL && !e->repair && !(rc = fs_kill_before(&before, e)) &&
            e->kind == FTM_FAULT_LINK) /* dead too, as in the run, for its repair */
            rc = ftm_mesh_fail_link(t, e->r, e->c, e->r2, e->c2, e->oneway);
        if (rc)
            rc = fs_refuse_apply(rc, txt, t, detail, dlen);
    }
    if (!rc)
        rc = fs_check_connected(t, txt, v, detail, dlen);
    /* kills after packet counts of one allreduce strike in any order */
    if (!rc && j - i > 1 && core_fault_concurrent(&s->ev[i], &s->ev[j - 1]))
        rc = fs_check_window(s, i, j, &before, v, detail, dlen);
    ftm_mesh_free(&before);
    if (!rc)
        v->event = -1;
    return rc;
}

int ftm_fault_script_check(ftm_fault_script *s, const ftm_mesh *m, long horizon,
                           ftm_fault_verdict *v, char *detail, size_t dlen)
{
    ftm_fault_verdict dummy;
    ftm_mesh t;
    if (!v)
        v = &dummy;
    v->event = v->a = v->b = -1;
    ftm_fault_script_sort(s);
    int rc = ftm_mesh_copy(&t, m);
    if (rc)
        return core_fail_detail(rc, detail, dlen, "%s", ftm_strerror(rc));
    for (int i = 0, j; i < s->n && !rc; i = j) {
        for (j = i + 1; j < s->n && core_fault_together(&s->ev[i], &s->ev[j]); j++)
            ;
        rc = fs_check_group(s, i, j, &t, horizon, v, detail, dlen);
    }
    if (rc != FTM_EPARTITION)
        v->a = v->b = -1;
    ftm_mesh_free(&t);
    return rc;
}
