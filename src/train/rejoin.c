/* Repaired chips, hosts and links rejoin a running job.
 *
 * A repair takes effect at the start of its step, between two attempts:
 * the attempt before it stops at that step's boundary (every chip has
 * finished the step before), the mesh gets back what the repairs name,
 * and the next attempt starts on the bigger mesh: new rings around the
 * holes left, the batch re-split over the chips now alive. The chips that
 * come back hold nothing: before the first step a donor (the chip that
 * was alive before the repair with the fewest hops to them, the lowest
 * such) sends each its parameters and optimizer moments over the mesh,
 * as a schedule of transfers that the chips execute with real bytes and
 * the cost model replays (so the bytes counted are the bytes sent).
 * Batch-norm layers here keep no running statistics (every step sums the
 * batch's over the chips), so parameters and moments are the whole state.
 * A repaired link is simply live again in the next attempt's runtime.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ftmesh/costmodel.h"
#include "ftmesh/error.h"
#include "ftmesh/router.h"
#include "train_int.h"
#include "trainer.h"
#include "core/util.h"

int train_rejoin_init(rejoin *r, const ftm_rt_script *f, const ftm_mesh *m)
{
    memset(r, 0, sizeof *r);
    size_t n = (size_t)f->script.n + 1;
    r->ev = calloc(n, sizeof *r->ev);
    r->donor = calloc(n, sizeof *r->donor);
    r->rec = calloc(n, sizeof *r->rec);
    r->jc = calloc(n, sizeof *r->jc);
    r->nj = calloc(n, sizeof *r->nj);
    r->joining = calloc((size_t)m->nchips, 1);
    return r->ev && r->donor && r->rec && r->jc && r->nj && r->joining ? 0 : FTM_ENOMEM;
}

void train_rejoin_free(rejoin *r)
{
    if (r->have_s)
        ftm_sched_free(&r->s);
    free(r->ev);
    free(r->donor);
    free(r->rec);
    free(r->jc);
    free(r->nj);
    free(r->joining);
    memset(r, 0, sizeof *r);
}

int train_rejoin_due(const ftm_rt_script *f, int i, long start)
{
    return f->script.ev[i].repair && f->fired[i] == 0 && f->script.ev[i].when <= start;
}

long train_rejoin_next(const ftm_rt_script *f, long start, long steps)
{
    long next = steps;
    for (int i = 0; i < f->script.n; i++) {
        const ftm_fault_event *e = &f->script.ev[i];
        if (e->repair && f->fired[i] == 0 && e->when > start && e->when < next)
            next = e->when;
    }
    return next;
}

/* The chip alive in `old` with the fewest hops (summed) to the chips of
 * `chips` in m, the lowest such; -1 when none reaches them. */
static int pick_donor(const ftm_mesh *old, const ftm_mesh *m, const int *chips, int n)
{
    int N = m->nchips, best = -1, rc = 0;
    int *dist = malloc(sizeof(int) * (size_t)N * 2);
    long *sum = calloc((size_t)N, sizeof *sum);
    for (int k = 0; k < n && dist && sum && !rc; k++) {
        rc = ftm_mesh_bfs(m, chips[k], 1, dist, dist + N); /* hops to chips[k] */
        for (int id = 0; id < N && !rc; id++)
            sum[id] = dist[id] < 0 || sum[id] < 0 ? -1 : sum[id] + dist[id];
    }
    for (int id = 0; id < N && dist && sum && !rc; id++)
        if (ftm_mesh_alive(old, id) && ftm_mesh_alive(m, id) && sum[id] >= 0 &&
            (best < 0 || sum[id] < sum[best]))
            best = id;
    free(dist);
    free(sum);
    return best;
}

/* The record of repair event e (the rest is filled once it has run). */
static void note_repair(ftm_train_event *rec, const ftm_fault_event *e, const ftm_mesh *m,
                        int donor, double before)
{
    memset(rec, 0, sizeof *rec);
    rec->when = e->when;
    rec->phase = FTM_PHASE_START;
    ftm_fault_what(e, rec->what, sizeof rec->what);
    rec->event = *e;
    rec->repair = 1;
    rec->noticed = 1;
    rec->resumed = -1;
    rec->modeled_before_s = before;
    if (donor >= 0)
        snprintf(rec->from, sizeof rec->from, "(%d,%d)", ftm_mesh_row(m, donor),
                 ftm_mesh_col(m, donor));
    snprintf(rec->detected_by, sizeof rec->detected_by, "repaired: joins at the start of the step");
}

/* 1 when repair i of f brings back the link that kill j names. */
static int same_link(const ftm_fault_event *i, const ftm_fault_event *j)
{
    return i->kind == FTM_FAULT_LINK && j->kind == FTM_FAULT_LINK &&
           ((i->r == j->r && i->c == j->c && i->r2 == j->r2 && i->c2 == j->c2) ||
            (i->r == j->r2 && i->c == j->c2 && i->r2 == j->r && i->c2 == j->c));
}

/* Repair i has nothing to bring back: its kill never struck. Told as
 * skipped, as that kill is. */
static void skip_repair(rejoin *r, ftm_rt_script *f, int i, const ftm_mesh *cur,
                        ftm_train_result *res)
{
    ftm_train_event *rec = &res->events[res->nevents++];
    note_repair(rec, &f->script.ev[i], cur, -1, r->modeled_before_s);
    rec->noticed = 0;
    rec->modeled_after_s = r->modeled_before_s;
    snprintf(rec->detected_by, sizeof rec->detected_by,
             "skipped: its kill did not strike (what it names had died already)");
    f->fired[i] = -1;
    f->logged[i] = 1;
}

/* Applies repair i of f to cur (old: cur before this boundary's repairs). */
static int apply_one(rejoin *r, ftm_rt_script *f, int i, const ftm_mesh *old, ftm_mesh *cur,
                     ftm_train_result *res)
{
    const ftm_fault_event *e = &f->script.ev[i];
    int chips[4], k = ftm_fault_chips(cur, e, chips), rc = FTM_EINVAL;
    size_t nl = (size_t)cur->nchips * FTM_NDIRS;
    unsigned char *was = e->kind == FTM_FAULT_LINK ? malloc(nl) : NULL;
    if (e->kind == FTM_FAULT_LINK && !was)
        return FTM_ENOMEM;
    if (was) { /* a link nobody noticed is dead too: the repair brings it back */
        memcpy(was, cur->link_dead, nl);
        for (int j = 0; j < f->nsecret; j++)
            cur->link_dead[f->secret_chip[j] * FTM_NDIRS + f->secret_dir[j]] = 1;
        rc = ftm_fault_apply(cur, e);
        for (size_t j = 0; j < nl; j++) /* the unnoticed ones left stay the runtime's */
            cur->link_dead[j] = was[j] && cur->link_dead[j];
        free(was);
    } else {
        rc = ftm_fault_apply(cur, e);
    }
    if (rc && ftm_rt_script_kill_skipped(f, cur, e)) {
        skip_repair(r, f, i, cur, res);
        return 0;
    }
    if (rc) { /* the pre-run check found it dead then: the run and the check disagree */
        char what[64];
        ftm_fault_what(e, what, sizeof what);
        snprintf(res->detail, sizeof res->detail, "repair of %s at step %ld: nothing to repair",
                 what, e->when);
        return FTM_EINTERNAL;
    }
    ftm_rt_script_repaired(f, old, e);
    f->fired[i] = 1;
    f->logged[i] = 1;
    for (int j = 0; j < k; j++)
        r->joining[r->jc[r->n][j] = chips[j]] = 1;
    r->nj[r->n] = k;
    r->any |= k > 0;
    r->rec[r->n] = res->nevents++;
    r->ev[r->n++] = i;
    return 0;
}

/* A link lost unnoticed that a repair of this boundary brings back: its
 * kill is told now, before the repair (the others wait: someone may
 * still notice them). */
static int log_unnoticed(ftm_rt_script *f, long start, double modeled, ftm_train_result *res)
{
    int first = res->nevents;
    unsigned char *mask = calloc((size_t)f->script.n + 1, 1);
    if (!mask)
        return FTM_ENOMEM;
    for (int j = 0; j < f->script.n; j++) {
        const ftm_fault_event *k = &f->script.ev[j];
        int hit = 0;
        if (k->repair || !f->fired[j] || f->logged[j])
            continue;
        for (int i = 0; i < f->script.n && !hit; i++)
            hit = train_rejoin_due(f, i, start) &&
                  same_link(&f->script.ev[i], k);
        mask[j] = !hit;
        f->logged[j] |= mask[j];
    }
    res->nevents += ftm_rt_script_unnoticed(f, -1, res->events + res->nevents,
                                            f->script.n + 1 - res->nevents);
    for (int i = first; i < res->nevents; i++) /* the allreduce as it was */
        res->events[i].modeled_before_s = res->events[i].modeled_after_s = modeled;
    for (int j = 0; j < f->script.n; j++)
        f->logged[j] &= (unsigned char)!mask[j];
    free(mask);
    return 0;
}

int train_rejoin_apply(rejoin *r, ftm_rt_script *f, ftm_mesh *cur, long start,
                       ftm_train_result *res)
{
    int lrc = log_unnoticed(f, start, r->modeled_before_s, res);
    if (lrc)
        return lrc;
    ftm_mesh old;
    int rc = ftm_mesh_copy(&old, cur);
    if (rc)
        return rc;
    r->n = r->carried;
    r->any = 0;
    r->told = 0;
    memset(r->joining, 0, (size_t)cur->nchips);
    for (int k = 0; k < r->carried; k++) {
        ftm_train_event *e = &res->events[r->rec[k]];
        r->donor[k] = -1;
        e->from[0] = 0;
        snprintf(e->detected_by, sizeof e->detected_by, "repaired: joins at the start of the "
                 "step; its state came with the recovery");
    }
    for (int i = 0; i < f->script.n && !rc; i++)
        if (train_rejoin_due(f, i, start))
            rc = apply_one(r, f, i, &old, cur, res);
    for (int k = r->carried; k < r->n && !rc; k++) {
        const ftm_fault_event *e = &f->script.ev[r->ev[k]];
        /* picked once every repair of the boundary is in */
        r->donor[k] = r->nj[k] ? pick_donor(&old, cur, r->jc[k], r->nj[k]) : -1;
        note_repair(&res->events[r->rec[k]], e, cur, r->donor[k], r->modeled_before_s);
        res->events[r->rec[k]].schedule_before = res->schedule; /* the last attempt's */
    }
    ftm_mesh_free(&old);
    r->t0 = core_now_s();
    return rc;
}

/* The state: parameters, then the optimizer's moments. */
static size_t state_floats(const trainer *t, ftm_optim *o, float **mom)
{
    ftm_optim_moments(o, &mom[0], &mom[1]);
    return t->res->nparams * (1 + (mom[0] != NULL) + (mom[1] != NULL));
}

/* The donor that sends to chip id, or -1. */
static int donor_of(const trainer *t, const ftm_mesh *m, int id)
{
    const rejoin *r = t->rj;
    (void)m;
    for (int k = 0; k < r->n; k++)
        for (int j = 0; j < r->nj[k] && r->donor[k] >= 0; j++)
            if (r->jc[k][j] == id)
                return r->donor[k];
    return -1;
}

int train_rejoin_joining(const trainer *t, int id)
{
    return t->rj && t->rj->any && t->rj->joining[id];
}

/* One transfer donor -> j of the whole state, in the step "rejoin". */
static int add_xfer(ftm_sched *s, const ftm_mesh *m, int donor, int j, size_t bytes,
                    unsigned char *opened)
{
    unsigned char dirs[4096];
    int h = ftm_router_path(m, donor, j, NULL, 0, dirs, (int)sizeof dirs);
    if (h < 0)
        return h;
    int route = ftm_sched_route(s, donor, j, dirs, h), rc = route < 0 ? route : 0;
    for (int k = 0; k < 2 && !rc; k++) {
        int c = k ? j : donor;
        if (!opened[c] && !(rc = ftm_sched_step(s, c, "rejoin", 0)))
            opened[c] = 1;
    }
    return rc ? rc : ftm_sched_xfer(s, route, 0, 0, bytes, FTM_RED_COPY);
}

int train_rejoin_build(trainer *t)
{
    rejoin *r = t->rj;
    if (!r || !r->any)
        return 0;
    const ftm_mesh *m = t->m;
    ftm_optim_config oc = t->o->optim;
    if (!oc.kind)
        ftm_optim_config_default(&oc, t->o->model.kind);
    ftm_optim *tmp;
    float *mom[2];
    int rc = ftm_optim_create(&tmp, &oc, 1);
    if (rc)
        return rc;
    r->bytes = sizeof(float) * state_floats(t, tmp, mom);
    ftm_optim_destroy(tmp);
    unsigned char *opened = calloc((size_t)m->nchips, 1);
    if (!opened || (rc = ftm_sched_init(&r->s, NULL, "rejoin", m->nchips, r->bytes))) {
        free(opened);
        return rc ? rc : FTM_ENOMEM;
    }
    r->have_s = 1;
    for (int id = 0; id < m->nchips && !rc; id++)
        if (r->joining[id] && donor_of(t, m, id) >= 0)
            rc = add_xfer(&r->s, m, donor_of(t, m, id), id, r->bytes, opened);
    free(opened);
    ftm_cost_params p;
    ftm_cost_defaults(&p);
    ftm_cost_result cr;
    if (!rc && !(rc = ftm_cost_sched(&r->s, m, &p, &cr, NULL)))
        r->modeled_s = cr.time_s;
    return rc ? rc : ftm_rt_declare_sched(t->rt, &r->s);
}

/* Link bytes of the transfers to the chips of repair k. */
static uint64_t event_bytes(const trainer *t, int k)
{
    const rejoin *r = t->rj;
    uint64_t sum = 0;
    for (int i = 0; i < r->s.nroutes; i++) {
        const ftm_route *ro = &r->s.routes[i];
        for (int j = 0; j < r->nj[k] && ro->src == r->donor[k]; j++)
            sum += r->jc[k][j] == ro->dst ? (uint64_t)ro->nhops * r->bytes : 0;
    }
    return sum;
}

/* Carried repair k's record goes after the recovery's (the kill that
 * stopped the state's transfer), in the order they are told. */
static void move_last(rejoin *r, ftm_train_result *res, int k)
{
    int at = r->rec[k], last = res->nevents - 1;
    ftm_train_event e = res->events[at];
    memmove(&res->events[at], &res->events[at + 1], sizeof e * (size_t)(last - at));
    res->events[last] = e;
    for (int j = 0; j < r->n; j++)
        r->rec[j] -= r->rec[j] > at;
    r->rec[k] = last;
}

void train_rejoin_tell(trainer *t)
{
    rejoin *r = t->rj;
    ftm_train_result *res = t->res;
    double now = core_now_s();
    for (int k = 0; k < r->carried; k++)
        move_last(r, res, k);
    for (int k = 0; k < r->n; k++) {
        ftm_train_event *e = &res->events[r->rec[k]];
        e->lost_wall_s = k == 0 && k >= r->carried ? now - r->t0 : 0;
        e->lost_modeled_s = r->donor[k] >= 0 ? r->modeled_s : 0;
        e->state_bytes = r->donor[k] >= 0 ? event_bytes(t, k) : 0;
        e->chips_after = res->chips;
        e->modeled_after_s = t->grad_modeled;
        train_note_schedule(e, res, k == 0);
        if (t->cb && t->cb->event)
            t->cb->event(t->cb->ctx, e);
    }
    r->told = 1;
    t->t_prev = now;
}

int train_rejoin_exec(trainer *t, chip_st *c)
{
    rejoin *r = t->rj;
    if (!r || !r->n)
        return 0;
    int rc = 0;
    if (r->any) {
        float *mom[2], *buf = malloc(r->bytes);
        size_t np = t->res->nparams, nf = state_floats(t, c->o, mom);
        if (!buf)
            return FTM_ENOMEM;
        float *part[3] = { ftm_model_params(c->m), mom[0] ? mom[0] : mom[1], mom[0] ? mom[1] : NULL };
        double n0 = train_note_t0(t->o);
        for (size_t k = 0; k < nf / np && !r->joining[c->id]; k++)
            memcpy(buf + k * np, part[k], sizeof(float) * np); /* a donor's, or unused */
        rc = ftm_chip_exec(c->chip, &r->s, buf);
        for (size_t k = 0; k < nf / np && !rc && r->joining[c->id]; k++)
            memcpy(part[k], buf + k * np, sizeof(float) * np);
        c->done = t->start;
        free(buf);
        if (!c->untraced)
            train_note(t->o, c->id, FTM_EV_RECOVER, "rejoin: state received or sent", n0);
    }
    if (!rc)
        rc = ftm_chip_barrier(c->chip);
    if (!rc && c->id == t->reporter)
        train_rejoin_tell(t);
    return rc;
}
