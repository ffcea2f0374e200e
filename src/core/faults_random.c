/* Fault scripts: random draws and repairs after a delay (see
 * include/ftmesh/faults.h). */
#include "ftmesh/faults.h"
#include "ftmesh/error.h"
#include "core/util.h"
#include "core/faults_int.h"
#include "ftmesh/rng.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* ---- random scripts ------------------------------------------------------------------ */

#define FS_TAG 0x6b696c6c73ULL /* "kills" */
#define FS_TRIES 200

static uint64_t fs_rand(uint64_t seed, int j, int attempt, int field)
{
    return ftm_rng_u64(seed, FS_TAG, (uint64_t)j, (uint64_t)attempt, (uint64_t)field);
}

/* Time of event j: step, phase and packet count. */
static void fs_draw_time(ftm_fault_event *e, int mode, uint64_t seed, int j, long horizon)
{
    static const int train_phase[6] = { FTM_PHASE_START, FTM_PHASE_FORWARD, FTM_PHASE_BACKWARD,
                                        FTM_PHASE_ALLREDUCE, FTM_PHASE_ALLREDUCE,
                                        FTM_PHASE_OPTIMIZER };
    memset(e, 0, sizeof *e);
    e->order = j;
    e->when = (long)(fs_rand(seed, j, -1, 0) % (uint64_t)horizon);
    uint64_t pick = fs_rand(seed, j, -1, 1);
    int counted = mode == FTM_FAULT_TRAIN ? pick % 6 == 4 : pick % 3 == 2;
    e->phase = mode == FTM_FAULT_TRAIN ? train_phase[pick % 6]
             : pick % 3 ? FTM_PHASE_ALLREDUCE : FTM_PHASE_START;
    e->pkts = counted ? (int64_t)(fs_rand(seed, j, -1, 2) % 32) : FTM_FAULT_MID;
}

/* The n-th candidate of a kind in t, or how many there are (n < 0). */
static int fs_candidate(const ftm_mesh *t, int kind, long n, ftm_fault_event *e)
{
    int count = 0, chips[4];
    for (int id = 0; id < t->nchips; id++) {
        int r = ftm_mesh_row(t, id), c = ftm_mesh_col(t, id);
        for (int d = 0; d < (kind == FTM_FAULT_LINK ? FTM_NDIRS : 1); d++) {
            e->r = r;
            e->c = c;
            if (kind == FTM_FAULT_CHIP && !ftm_mesh_alive(t, id))
                continue;
            if (kind == FTM_FAULT_HOST &&
                (!ftm_mesh_host_fits(t, r, c) || ftm_fault_chips(t, e, chips) == 0))
                continue;
            if (kind == FTM_FAULT_LINK) {
                if (!ftm_mesh_link_live(t, id, d))
                    continue;
                int nb = ftm_mesh_neighbor(t, id, d);
                e->r2 = ftm_mesh_row(t, nb);
                e->c2 = ftm_mesh_col(t, nb);
            }
            if (count++ == n)
                return 0;
        }
    }
    return n < 0 ? count : -1;
}

/* One attempt at what event j kills; 0 when drawn and t2 (a copy of t)
 * stays connected with it applied. */
static int fs_draw_what(const ftm_mesh *t, ftm_mesh *t2, ftm_fault_event *e, unsigned kinds,
                        uint64_t seed, int j, int attempt)
{
    int allowed[3], nk = 0;
    for (int k = 0; k < 3; k++)
        if (kinds & (1u << k))
            allowed[nk++] = k;
    e->kind = allowed[fs_rand(seed, j, attempt, 0) % (uint64_t)nk];
    int n = fs_candidate(t, e->kind, -1, e);
    if (n <= 0)
        return -1;
    fs_candidate(t, e->kind, (long)(fs_rand(seed, j, attempt, 1) % (uint64_t)n), e);
    e->oneway = e->kind == FTM_FAULT_LINK && fs_rand(seed, j, attempt, 2) % 4 == 0;
    core_mesh_set(t2, t);
    if (ftm_fault_apply(t2, e))
        return -1;
    return ftm_mesh_check_connected(t2, NULL, NULL) ? -1 : 0;
}

static int fs_took(ftm_fault_script *s, ftm_mesh *m, const ftm_fault_event *k, long n, long horizon);

/* Applies to t the repairs of rep due before e, and drops them from rep
 * (rep is in time order). */
static void fs_due(ftm_mesh *t, ftm_fault_script *rep, const ftm_fault_event *e)
{
    int d = 0;
    while (d < rep->n && ftm_fault_cmp(&rep->ev[d], e) < 0)
        (void)ftm_fault_apply(t, &rep->ev[d++]); /* brings back what its kill took */
    if (d && d < rep->n) /* (rep->ev is NULL while empty) */
        memmove(rep->ev, rep->ev + d, sizeof *rep->ev * (size_t)(rep->n - d));
    rep->n -= d;
}

/* With repairs n steps after each kill: whether the candidate kill e,
 * drawn on t (the mesh just before it; t2 = t with e) keeps the healthy
 * chips connected until every repair due is done -- a repair can bring a
 * chip back among dead neighbours. Kills are placed in time order, so
 * after e only repairs change the mesh. all: scratch for rep with e's
 * repairs. 0 (rep then has e's repairs), -1 when not, or FTM_ENOMEM. */
static int fs_future_ok(const ftm_mesh *t, ftm_mesh *t2, ftm_fault_script *rep,
                        const ftm_fault_event *e, long n, ftm_mesh *scratch,
                        ftm_fault_script *all)
{
    core_mesh_set(scratch, t);
    all->n = 0;
    int rc = 0;
    for (int i = 0; i < rep->n && !rc; i++)
        rc = ftm_fault_script_add(all, &rep->ev[i]);
    if (rc || (rc = fs_took(all, scratch, e, n, 0)))
        return rc;
    ftm_fault_script_sort(all);
    for (int i = 0; i < all->n && !rc; i++) {
        rc = ftm_fault_apply(t2, &all->ev[i]) ? -1 : 0;
        int last = i + 1 == all->n || all->ev[i].when != all->ev[i + 1].when;
        if (!rc && last && ftm_mesh_check_connected(t2, NULL, NULL))
            rc = -1; /* checked once per step: its repairs come back together */
    }
    if (!rc) { /* e is placed: rep takes its repairs */
        ftm_fault_script tmp = *rep;
        *rep = *all;
        *all = tmp;
    }
    return rc;
}

/* 1 when a kill of ev[w, i) strikes after a packet count on ev[i]'s chip. */
static int fs_striker_taken(const ftm_mesh *m, const ftm_fault_event *ev, int w, int i)
{
    int v = core_fault_striker(m, &ev[i]);
    for (int d = w; d < i; d++)
        if (core_fault_concurrent(&ev[d], &ev[i]) && core_fault_striker(m, &ev[d]) == v)
            return 1;
    return 0;
}

static int fs_place(ftm_fault_event *ev, int k, const ftm_mesh *m, uint64_t seed, unsigned kinds,
                    long n, int mode, char *detail, size_t dlen)
{
    ftm_mesh t, t2, t3, tw;
    ftm_fault_script rep, all; /* repairs of the placed kills not yet due; scratch */
    ftm_fault_script_init(&rep, mode);
    ftm_fault_script_init(&all, mode);
    int rc = ftm_mesh_copy(&t, m), r2 = ftm_mesh_copy(&t2, m), r3 = ftm_mesh_copy(&t3, m);
    int r4 = ftm_mesh_copy(&tw, m);
    rc = rc ? rc : r2 ? r2 : r3 ? r3 : r4;
    for (int i = 0, w = 0; i < k && !rc; i++) {
        int placed = 0;
        fs_due(&t, &rep, &ev[i]);
        if (i == 0 || !core_fault_concurrent(&ev[w], &ev[i])) {
            w = i; /* the kills from w on strike in any order: tw is the mesh before them */
            core_mesh_set(&tw, &t);
        }
        for (int a = 0; a < FS_TRIES && !placed && !rc; a++) {
            if (fs_draw_what(&t, &t2, &ev[i], kinds, seed, ev[i].order, a) ||
                fs_striker_taken(&tw, ev, w, i))
                continue;
            int ok = w < i ? core_fault_window_ok(&tw, &ev[w], i - w + 1, NULL, NULL, NULL) : 0;
            if (ok == FTM_EPARTITION)
                continue;
            if (!ok && n >= 1)
                ok = fs_future_ok(&t, &t2, &rep, &ev[i], n, &t3, &all);
            placed = ok == 0;
            rc = ok == -1 ? 0 : ok;
        }
        if (!rc && !placed)
            rc = core_fail_detail(FTM_ERANGE, detail, dlen, "kill %d of %d: no chip, host or link of the allowed "
                         "kinds can die without cutting the healthy chips apart%s; ask for fewer kills",
                         i + 1, k, n >= 1 ? " (now or when what died before comes back)" : "");
        else if (!rc)
            ftm_fault_apply(&t, &ev[i]);
    }
    ftm_fault_script_free(&rep);
    ftm_fault_script_free(&all);
    ftm_mesh_free(&t);
    ftm_mesh_free(&t2);
    ftm_mesh_free(&t3);
    ftm_mesh_free(&tw);
    return rc;
}

int ftm_fault_script_random(ftm_fault_script *s, const ftm_mesh *m, int k, uint64_t seed,
                            long horizon, unsigned kinds, long repair_after, int origin,
                            char *detail, size_t dlen)
{
    if (k < 0 || horizon < 1 || !(kinds & FTM_FAULT_KINDS_ALL))
        return core_fail_detail(FTM_EINVAL, detail, dlen, "need kills >= 0, a run of at least one step "
                       "and at least one kind of fault");
    if (k == 0)
        return 0;
    ftm_fault_event *ev = calloc((size_t)k, sizeof *ev);
    if (!ev)
        return FTM_ENOMEM;
    for (int j = 0; j < k; j++)
        fs_draw_time(&ev[j], s->mode, seed, j, horizon);
    qsort(ev, (size_t)k, sizeof *ev, core_fault_qcmp);
    int rc = fs_place(ev, k, m, seed, kinds, repair_after, s->mode, detail, dlen), n0 = s->n;
    for (int j = 0; j < k && !rc; j++) {
        ev[j].origin = origin;
        rc = ftm_fault_script_add(s, &ev[j]);
    }
    if (rc)
        s->n = n0;
    free(ev);
    return rc;
}

static int fs_on_mesh(ftm_fault_script *s, const ftm_mesh *m0, long n, long horizon);

int ftm_fault_script_repair_after(ftm_fault_script *s, const ftm_mesh *m, long n, long horizon)
{
    if (n < 1)
        return FTM_EINVAL;
    if (m)
        return fs_on_mesh(s, m, n, horizon);
    int n0 = s->n, kills = s->n, rc = 0;
    for (int i = 0; i < kills && !rc; i++) {
        ftm_fault_event e = s->ev[i];
        if (e.repair || e.when > FTM_FAULT_MAX_WHEN - n || (horizon > 0 && e.when + n >= horizon))
            continue;
        e.repair = 1;
        e.when += n;
        e.phase = FTM_PHASE_START;
        e.pkts = FTM_FAULT_MID;
        e.line = 0;
        rc = ftm_fault_script_add(s, &e);
    }
    if (rc)
        s->n = n0;
    return rc;
}

/* 1 when chip or host event e names chip x of m. */
static int fs_names(const ftm_mesh *m, const ftm_fault_event *e, int x)
{
    int r = ftm_mesh_row(m, x), c = ftm_mesh_col(m, x);
    if (e->kind == FTM_FAULT_CHIP)
        return e->r == r && e->c == c;
    return e->kind == FTM_FAULT_HOST && e->r >= 0 && e->c >= 0 &&
           ftm_mesh_host_has(m, e->r, e->c, r, c);
}

/* Drops from chips[0..nc) those a repair of s brings back after step t0
 * and by t1: the kill that took them at t0 no longer holds them then (they
 * are another kill's, if any, to bring back). Returns the count left. */
static int fs_still_down(const ftm_fault_script *s, const ftm_mesh *m, int *chips, int nc,
                         long t0, long t1)
{
    int k = 0;
    for (int i = 0; i < nc; i++) {
        int back = 0;
        for (int j = 0; j < s->n && !back; j++)
            back = s->ev[j].repair && s->ev[j].when > t0 && s->ev[j].when <= t1 &&
                   fs_names(m, &s->ev[j], chips[i]);
        if (!back)
            chips[k++] = chips[i];
    }
    return k;
}

/* The repairs of what kill k takes from m (then applied to m), n steps
 * later, into s: of a chip or host, the chips still down from it then. */
static int fs_took(ftm_fault_script *s, ftm_mesh *m, const ftm_fault_event *k, long n, long horizon)
{
    ftm_fault_event e = *k;
    int chips[4], nc = ftm_fault_chips(m, k, chips), rc = 0, a = -1, b = -1, d = -1;
    if (k->kind == FTM_FAULT_LINK && k->r >= 0 && k->r < m->rows && k->c >= 0 && k->c < m->cols &&
        k->r2 >= 0 && k->r2 < m->rows && k->c2 >= 0 && k->c2 < m->cols) {
        a = ftm_mesh_chip(m, k->r, k->c);
        b = ftm_mesh_chip(m, k->r2, k->c2);
        d = ftm_mesh_dir_to(m, a, b);
    }
    int ab = d >= 0 && ftm_mesh_link_live(m, a, d);
    int ba = d >= 0 && !k->oneway && ftm_mesh_link_live(m, b, ftm_dir_opposite(d));
    if (ftm_fault_apply(m, k) || k->when > FTM_FAULT_MAX_WHEN - n ||
        (horizon > 0 && k->when + n >= horizon))
        return 0; /* takes nothing (the check refuses it), or back after the run */
    e.repair = 1;
    e.when += n;
    e.phase = FTM_PHASE_START;
    e.pkts = FTM_FAULT_MID;
    e.line = 0;
    if (k->kind == FTM_FAULT_LINK && !k->oneway && ab != ba) {
        e.oneway = 1; /* only the direction it killed */
        if (!ab) {
            e.r = k->r2, e.c = k->c2, e.r2 = k->r, e.c2 = k->c;
        }
    }
    int held = k->kind == FTM_FAULT_LINK ? nc : fs_still_down(s, m, chips, nc, k->when, e.when);
    if (k->kind == FTM_FAULT_LINK || (held == nc && (k->kind != FTM_FAULT_HOST || nc == 4)))
        return ftm_fault_script_add(s, &e);
    nc = held;
    e.kind = FTM_FAULT_CHIP;
    for (int i = 0; i < nc && !rc; i++) {
        e.r = ftm_mesh_row(m, chips[i]);
        e.c = ftm_mesh_col(m, chips[i]);
        rc = ftm_fault_script_add(s, &e);
    }
    return rc;
}

/* The repairs of kill k of an instant, or of kills that strike in any
 * order (m: the mesh as the earlier of them left it, then k applied;
 * before: the mesh before them, k applied to it too). A link killed with
 * the host around it was alive before: it takes the link, which stays
 * dead as in the run (should the host strike first, the link's kill and
 * its repair are told as skipped). A chip or host takes what the kills
 * before it left alive. */
static int fs_took_at(ftm_fault_script *s, ftm_mesh *m, ftm_mesh *before, const ftm_fault_event *k,
                      long n, long horizon)
{
    if (k->kind != FTM_FAULT_LINK)
        return fs_took(s, m, k, n, horizon);
    int rc = fs_took(s, before, k, n, horizon);
    if (ftm_fault_apply(m, k) == FTM_EINVAL)
        (void)ftm_mesh_fail_link(m, k->r, k->c, k->r2, k->c2, k->oneway);
    return rc;
}

static int fs_on_mesh(ftm_fault_script *s, const ftm_mesh *m0, long n, long horizon)
{
    ftm_mesh m, before;
    int n0 = s->n, rc = ftm_mesh_copy(&m, m0), rb = ftm_mesh_copy(&before, m0);
    rc = rc ? rc : rb;
    ftm_fault_script_sort(s);
    for (int i = 0, j; i < s->n && !rc; i = j) {
        if (s->ev[i].repair) {
            (void)ftm_fault_apply(&m, &s->ev[i]); /* a bad one is the check's to refuse */
            j = i + 1;
            continue;
        }
        /* one instant, or kills that strike in any order: a link is judged
         * by the mesh before them all, as the check does */
        for (j = i + 1; j < s->n && !s->ev[j].repair && core_fault_together(&s->ev[i], &s->ev[j]);
             j++)
            ;
        core_mesh_set(&before, &m);
        for (int k = i; k < j && !rc; k++) {
            ftm_fault_event e = s->ev[k];
            rc = fs_took_at(s, &m, &before, &e, n, horizon);
        }
        if (!rc) /* the new repairs fall after the instant: i..j keep their places */
            ftm_fault_script_sort(s);
    }
    ftm_mesh_free(&m);
    ftm_mesh_free(&before);
    if (rc)
        s->n = n0;
    return rc;
}
