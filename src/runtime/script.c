/* A fault script during a run: which chip fires which event where, and
 * what the survivors learn afterwards (include/ftmesh/runtime.h).
 *
 * Where each training phase strikes (on the victim's thread; the trainer
 * calls the hooks at these points):
 *   start      before the step's forward pass;
 *   forward    at the victim's first batch-norm allreduce of the step (a
 *              model without one: when its forward/backward returns);
 *   backward   at its first batch-norm allreduce of the backward pass (the
 *              count is known after one step of the attempt; before that,
 *              and without batch norm: when forward/backward returns);
 *   allreduce  once the victim has sent N packets of the gradient
 *              allreduce (default: half of its packets, plus one); if it
 *              sends fewer, when its allreduce ends;
 *   optimizer  after the gradient allreduce, before the update.
 * The victim is the chip, the host's first live chip, or the link's
 * first-named end; the kills of one instant (step and phase; not those
 * after N packets) all fire on the first one's victim. Each event fires
 * once; an event whose target died already is skipped. A chip that died
 * in the failure tells nothing of the dead links it may have noticed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ftmesh/error.h"
#include "ftmesh/runtime.h"
#include "rt_internal.h"

int ftm_rt_script_init(ftm_rt_script *f, const ftm_fault_script *s, const ftm_mesh *m)
{
    memset(f, 0, sizeof *f);
    ftm_fault_script_init(&f->script, s ? s->mode : FTM_FAULT_TRAIN);
    int rc = 0;
    for (int i = 0; s && i < s->n && !rc; i++)
        rc = ftm_fault_script_add(&f->script, &s->ev[i]);
    if (rc)
        return rc;
    ftm_fault_script_sort(&f->script);
    size_t n = (size_t)f->script.n + 1, links = (size_t)m->nchips * FTM_NDIRS;
    f->victim = calloc(n, sizeof(int));
    f->fired = calloc(n, sizeof(int));
    f->logged = calloc(n, 1);
    f->armed = calloc((size_t)m->nchips, sizeof(int));
    f->secret_chip = calloc(links, sizeof(int));
    f->secret_dir = calloc(links, sizeof(int));
    if (!f->victim || !f->fired || !f->logged || !f->armed || !f->secret_chip || !f->secret_dir)
        return FTM_ENOMEM;
    return 0;
}

void ftm_rt_script_free(ftm_rt_script *f)
{
    ftm_fault_script_free(&f->script);
    free(f->victim);
    free(f->fired);
    free(f->logged);
    free(f->armed);
    free(f->secret_chip);
    free(f->secret_dir);
    memset(f, 0, sizeof *f);
}

/* The link of a link event: its first end and direction (-1 if none). */
static int ev_link(const ftm_mesh *m, const ftm_fault_event *e, int *dir)
{
    int a = ftm_mesh_chip(m, e->r, e->c), b = ftm_mesh_chip(m, e->r2, e->c2);
    *dir = ftm_mesh_dir_to(m, a, b);
    return *dir < 0 ? -1 : a;
}

/* 1 when kills a and b strike at the same instant of a phase (a kill
 * after N packets of the allreduce strikes at its own victim's N-th). */
static int same_instant(const ftm_fault_event *a, const ftm_fault_event *b)
{
    return !a->repair && !b->repair && a->when == b->when && a->phase == b->phase &&
           (a->phase != FTM_PHASE_ALLREDUCE || (a->pkts == 0 && b->pkts == 0));
}

/* The kills of one instant strike together: the first one's victim fires
 * them all, in the script's order, so that which of them struck does not
 * depend on which chip thread got there first (a host's chip could die
 * before it fired a link's kill), nor on how the chips are spread over
 * processes. The sorted script has them next to each other. */
static void share_victims(ftm_rt_script *f)
{
    for (int i = 0; i < f->script.n; i++) {
        int j = i, v = -1;
        while (j < f->script.n && same_instant(&f->script.ev[i], &f->script.ev[j]))
            j++;
        for (int k = i; k < j; k++)
            v = v < 0 ? f->victim[k] : v;
        for (int k = i; k < j; k++)
            f->victim[k] = f->victim[k] < 0 ? -1 : v;
        i = j > i ? j - 1 : i;
    }
}

void ftm_rt_script_attempt(ftm_rt_script *f, const ftm_mesh *m)
{
    f->attempt++;
    for (int c = 0; c < m->nchips; c++)
        f->armed[c] = -1;
    for (int i = 0; i < f->script.n; i++) {
        const ftm_fault_event *e = &f->script.ev[i];
        int chips[4], d, v = -1;
        if (e->repair || (f->until > 0 && e->when >= f->until)) {
            f->victim[i] = -1; /* the caller's, or for a later attempt */
            continue;
        }
        if (e->kind == FTM_FAULT_LINK) {
            int a = ev_link(m, e, &d);
            int b = a < 0 ? -1 : ftm_mesh_neighbor(m, a, d);
            if (a >= 0 && (ftm_mesh_link_live(m, a, d) ||
                           (!e->oneway && ftm_mesh_link_live(m, b, ftm_dir_opposite(d)))))
                v = a;
        } else if (ftm_fault_chips(m, e, chips) > 0 && ftm_mesh_alive(m, chips[0])) {
            v = chips[0];
        }
        f->victim[i] = v;
        if (v < 0 && f->fired[i] == 0)
            f->fired[i] = -1;
    }
    share_victims(f);
}

static int fire_one(ftm_rt_script *f, int i, ftm_chip *chip, const ftm_mesh *m)
{
    const ftm_fault_event *e = &f->script.ev[i];
    f->fired[i] = f->attempt;
    if (e->kind == FTM_FAULT_LINK) {
        int d, a = ev_link(m, e, &d);
        /* the pre-run check placed it on a live link; dead since (with a
         * chip at its end) it has nothing left to kill */
        ftm_rt_kill_link(chip->rt, a, d, e->oneway);
        return 0;
    }
    int chips[4], n = ftm_fault_chips(m, e, chips);
    return rt_chip_kill_chips(chip, chips, n);
}

/* 1 when event i is due on chip id at (step, phase); only its victim
 * reads or writes fired[i]. */
static int due(const ftm_rt_script *f, int i, int id, long step, int phase)
{
    const ftm_fault_event *e = &f->script.ev[i];
    return f->victim[i] == id && f->fired[i] == 0 && e->when == step && e->phase == phase;
}

int ftm_rt_script_fire(ftm_rt_script *f, ftm_chip *chip, const ftm_mesh *m, long step, int phase)
{
    int id = ftm_chip_id(chip), first = 0;
    for (int i = 0; i < f->script.n; i++) { /* all of them, though a chip died */
        if (!due(f, i, id, step, phase))
            continue;
        int rc = fire_one(f, i, chip, m);
        first = first ? first : rc;
    }
    return first;
}

int ftm_rt_script_arm(ftm_rt_script *f, ftm_chip *chip, const ftm_mesh *m, long step,
                     uint64_t mid_pkts)
{
    int id = ftm_chip_id(chip), first = 0;
    for (int i = 0; i < f->script.n; i++) {
        if (!due(f, i, id, step, FTM_PHASE_ALLREDUCE))
            continue;
        const ftm_fault_event *e = &f->script.ev[i];
        uint64_t n = e->pkts == FTM_FAULT_MID ? mid_pkts : (uint64_t)e->pkts;
        int rc = 0;
        if (n == 0) {
            rc = fire_one(f, i, chip, m);
        } else if (f->armed[id] < 0) {
            int chips[4], k, d;
            if (e->kind == FTM_FAULT_LINK) {
                int a = ev_link(m, e, &d);
                rc = ftm_chip_kill_link_after(chip, n, a, d, e->oneway);
            } else if ((k = ftm_fault_chips(m, e, chips)) > 0) {
                rc = ftm_chip_kill_chips_after(chip, n, chips, k);
            }
            f->armed[id] = i;
            f->fired[i] = f->attempt;
        }
        first = first ? first : rc; /* the others of the instant too */
    }
    return first;
}

int ftm_rt_script_after(ftm_rt_script *f, ftm_chip *chip, const ftm_mesh *m, long step)
{
    int id = ftm_chip_id(chip), i = f->armed[id];
    f->armed[id] = -1;
    if (i >= 0 && rt_chip_disarm(chip)) {
        int rc = fire_one(f, i, chip, m);
        if (rc)
            return rc;
    }
    return ftm_rt_script_fire(f, chip, m, step, FTM_PHASE_ALLREDUCE);
}

/* Drops entry k of the links dead unnoticed (the last takes its place). */
static void drop_secret(ftm_rt_script *f, int k)
{
    f->secret_chip[k] = f->secret_chip[--f->nsecret];
    f->secret_dir[k] = f->secret_dir[f->nsecret];
}

void ftm_rt_script_repaired(ftm_rt_script *f, const ftm_mesh *m, const ftm_fault_event *e)
{
    if (e->kind != FTM_FAULT_LINK)
        return;
    int d, a = ev_link(m, e, &d);
    int b = a < 0 ? -1 : ftm_mesh_neighbor(m, a, d);
    for (int k = 0; a >= 0 && k < f->nsecret;) {
        int x = f->secret_chip[k], y = f->secret_dir[k];
        int hit = (x == a && y == d) || (!e->oneway && x == b && y == ftm_dir_opposite(d));
        if (!hit) {
            k++;
            continue;
        }
        drop_secret(f, k);
    }
}

void ftm_rt_script_rt(const ftm_rt_script *f, ftm_rt *rt)
{
    /* a link of a dead chip has no mailbox (FTM_EINVAL): it carries
     * nothing anyway, and stays on the list for the runtime after its
     * chip's repair */
    for (int i = 0; i < f->nsecret; i++)
        ftm_rt_kill_link(rt, f->secret_chip[i], f->secret_dir[i], 1);
}

/* 1 when notice n is about the physical link a-b; with oneway, about
 * its way a -> b only (a send from a, a receive at b). */
static int notice_on(const ftm_mesh *m, const ftm_rt_notice *n, int a, int b, int oneway)
{
    if (n->chip < 0 || n->dir < 0)
        return 0;
    int x = n->chip, y = ftm_mesh_neighbor(m, x, n->dir), in = strstr(n->how, "receive") != NULL;
    if (oneway)
        return in ? x == b && y == a : x == a && y == b;
    return (x == a && y == b) || (x == b && y == a);
}

static size_t list_notices(const ftm_mesh *m, const ftm_rt_notice *nt, int nn, int a, int b,
                           int oneway, char *buf, size_t len, size_t start)
{
    size_t used = start;
    for (int k = 0; k < nn && used + 1 < len; k++) {
        if (!notice_on(m, &nt[k], a, b, oneway))
            continue;
        int x = nt[k].chip, y = nt[k].peer;
        int w = snprintf(buf + used, len - used, "%s(%d,%d) %s on link %s %s (%d,%d)",
                         used > start ? "; " : "", ftm_mesh_row(m, x), ftm_mesh_col(m, x), nt[k].how,
                         ftm_mesh_dir_name(nt[k].dir), strstr(nt[k].how, "receive") ? "from" : "to",
                         ftm_mesh_row(m, y), ftm_mesh_col(m, y));
        used += w > 0 ? (size_t)w : 0;
    }
    return used < len ? used : len - 1;
}

/* Who noticed the link a-b (a -> b alone when oneway). A way nobody used
 * goes with the other way, when that one was noticed: the recovery takes
 * the link out whole (learn), and the record says so. */
static void describe_notices(const ftm_mesh *m, const ftm_rt_notice *nt, int nn, int a, int b,
                             int oneway, char *buf, size_t len)
{
    buf[0] = 0;
    if (list_notices(m, nt, nn, a, b, oneway, buf, len, 0) || !oneway)
        return;
    int w = snprintf(buf, len, "nobody on this way; taken out with its other way: ");
    if (list_notices(m, nt, nn, a, b, 0, buf, len, w > 0 ? (size_t)w : 0) == (size_t)w)
        buf[0] = 0;
}

static void record(ftm_rt_script *f, int i, ftm_fault_record *e, int noticed, const char *by)
{
    const ftm_fault_event *ev = &f->script.ev[i];
    memset(e, 0, sizeof *e);
    e->when = ev->when;
    e->phase = ev->phase;
    ftm_fault_what(ev, e->what, sizeof e->what);
    e->event = *ev;
    snprintf(e->detected_by, sizeof e->detected_by, "%s", by);
    e->noticed = noticed;
    e->resumed = -1;
    f->logged[i] = 1;
}

/* 1 when event i actually struck in rt (an armed one may not have). */
static int struck(const ftm_rt_script *f, int i, const ftm_mesh *m, const unsigned char *dead,
                  const unsigned char *dlink)
{
    const ftm_fault_event *e = &f->script.ev[i];
    int chips[4], d, n;
    if (e->kind == FTM_FAULT_LINK) {
        int a = ev_link(m, e, &d);
        if (a < 0)
            return 0;
        /* both ways: the way it killed may be the second one named */
        int b = ftm_mesh_neighbor(m, a, d);
        return dlink[a * FTM_NDIRS + d] || (!e->oneway && dlink[b * FTM_NDIRS + ftm_dir_opposite(d)]);
    }
    /* It kills every chip of it alive at the attempt's start at once: one
     * of them dead alone may be another kill's doing (its victim armed it,
     * then died of that other kill before it fired). */
    n = ftm_fault_chips(m, e, chips);
    for (int k = 0; k < n; k++)
        if (!dead[chips[k]])
            return 0;
    return n > 0;
}

/* 1 when kill k names what repair e brings back, or a host around it. */
static int undoes(const ftm_mesh *m, const ftm_fault_event *e, const ftm_fault_event *k)
{
    int link = e->kind == FTM_FAULT_LINK;
    if (link || k->kind == FTM_FAULT_LINK)
        return link && k->kind == FTM_FAULT_LINK &&
               ((e->r == k->r && e->c == k->c && e->r2 == k->r2 && e->c2 == k->c2) ||
                (e->r == k->r2 && e->c == k->c2 && e->r2 == k->r && e->c2 == k->c));
    if (e->kind == k->kind)
        return e->r == k->r && e->c == k->c;
    return e->kind == FTM_FAULT_CHIP && ftm_mesh_host_has(m, k->r, k->c, e->r, e->c);
}

int ftm_rt_script_kill_skipped(const ftm_rt_script *f, const ftm_mesh *m,
                               const ftm_fault_event *e)
{
    int last = -1; /* the script is in time order */
    for (int j = 0; j < f->script.n && f->script.ev[j].when <= e->when; j++)
        if (!f->script.ev[j].repair && undoes(m, e, &f->script.ev[j]))
            last = j;
    return last >= 0 && f->fired[last] == -1;
}

/* Adds the directed link (a, d) to the unnoticed ones, once. */
static void add_secret(ftm_rt_script *f, int a, int d)
{
    for (int k = 0; k < f->nsecret; k++)
        if (f->secret_chip[k] == a && f->secret_dir[k] == d)
            return;
    f->secret_chip[f->nsecret] = a;
    f->secret_dir[f->nsecret++] = d;
}

void ftm_rt_script_lost(ftm_rt_script *f, const ftm_rt *rt)
{
    for (int c = 0; c < rt->mesh.nchips; c++)
        for (int d = 0; d < FTM_NDIRS; d++)
            if (rt->chips[c].out[d] && atomic_load(&rt->chips[c].out[d]->dead))
                add_secret(f, c, d);
}

/* Dead chips and directed links of rt into m2 / the secret list; dead and
 * dlink mark them; nt[*pnn] keeps the notices of the chips alive. An
 * unnoticed link stays on the list while rt had no mailbox for it (an
 * end chip dead): only a repair or a notice ends it. */
static void learn(ftm_rt_script *f, const ftm_rt *rt, ftm_mesh *m2, unsigned char *dead,
                  unsigned char *dlink, ftm_rt_notice *nt, int *pnn, int *scratch)
{
    int n = m2->nchips, *lc = scratch, *ld = scratch + n * FTM_NDIRS, nn = 0;
    int nd = ftm_rt_killed_chips(rt, lc, n);
    for (int k = 0; k < nd; k++) {
        dead[lc[k]] = 1;
        ftm_mesh_fail_chip_id(m2, lc[k]);
    }
    /* A chip that died tells nothing: whether it noticed a dead link
     * before it died is a race between chip threads (and processes). */
    for (int k = 0; k < *pnn; k++)
        if (nt[k].chip < 0 || !dead[nt[k].chip])
            nt[nn++] = nt[k];
    *pnn = nn;
    int nl = ftm_rt_killed_links(rt, lc, ld, n * FTM_NDIRS);
    for (int k = 0; k < nl; k++) {
        int a = lc[k], b = ftm_mesh_neighbor(m2, a, ld[k]), seen = 0;
        dlink[a * FTM_NDIRS + ld[k]] = 1;
        for (int j = 0; j < nn && !seen; j++)
            seen = notice_on(m2, &nt[j], a, b, 0);
        if (seen)
            m2->link_dead[a * FTM_NDIRS + ld[k]] = 1;
        else
            add_secret(f, a, ld[k]);
    }
    for (int k = 0; k < f->nsecret;) { /* noticed now: the mesh has it */
        if (!m2->link_dead[f->secret_chip[k] * FTM_NDIRS + f->secret_dir[k]]) {
            k++;
            continue;
        }
        drop_secret(f, k);
    }
}

int ftm_rt_script_recover(ftm_rt_script *f, const ftm_rt *rt, const ftm_mesh *m, ftm_mesh *m2,
                         ftm_fault_record *ev, int max)
{
    int rc = ftm_mesh_copy(m2, m), n = m->nchips, ne = 0;
    if (rc)
        return rc;
    unsigned char *dead = calloc((size_t)n * (1 + FTM_NDIRS), 1);
    int *scratch = malloc(sizeof(int) * (size_t)n * FTM_NDIRS * 2);
    if (!dead || !scratch) {
        free(dead);
        free(scratch);
        ftm_mesh_free(m2);
        return FTM_ENOMEM;
    }
    unsigned char *dlink = dead + n;
    ftm_rt_notice nt[16];
    int nn = ftm_rt_notices(rt, nt, 16);
    learn(f, rt, m2, dead, dlink, nt, &nn, scratch);
    for (int i = 0; i < f->script.n; i++) {
        const ftm_fault_event *e = &f->script.ev[i];
        if (f->fired[i] <= 0 || f->logged[i])
            continue;
        if (f->fired[i] == f->attempt && !struck(f, i, m, dead, dlink)) {
            f->fired[i] = 0; /* armed, but the run stopped first: it comes again */
            continue;
        }
        char by[256] = "health monitor: heartbeat lost, every chip told at once";
        if (e->kind == FTM_FAULT_LINK) {
            int d, a = ev_link(m, e, &d), b = ftm_mesh_neighbor(m, a, d);
            describe_notices(m, nt, nn, a, b, e->oneway, by, sizeof by);
            if (!by[0])
                continue; /* dead, but nobody needed it yet */
        }
        if (ne < max) {
            record(f, i, &ev[ne], 1, by);
            ev[ne++].earlier = f->fired[i] != f->attempt;
        }
    }
    free(dead);
    free(scratch);
    return ne;
}

int ftm_rt_script_unnoticed(ftm_rt_script *f, long skipped_upto, ftm_fault_record *ev, int max)
{
    int ne = 0;
    for (int i = 0; i < f->script.n && ne < max; i++) {
        const ftm_fault_event *e = &f->script.ev[i];
        if (f->logged[i] || f->fired[i] == 0 || e->repair ||
            (skipped_upto >= 0 && (f->fired[i] > 0 || e->when > skipped_upto)))
            continue;
        record(f, i, &ev[ne++], 0, f->fired[i] < 0 ? "skipped: what it names had died already" : "");
    }
    return ne;
}

/* A kill armed to strike after its victim's N-th packet, whose victim
 * died of another kill (or whose run stopped) first, never struck: it
 * is not yet fired (a dead victim makes the next attempt skip it, so it
 * is not told as a second death of the same chips). Only the victim's
 * process knows; the sync below tells the others. */
static void drop_unfired(ftm_rt_script *f, const ftm_rt *rt)
{
    for (int c = 0; c < rt->mesh.nchips; c++) {
        int i = f->armed[c];
        if (i >= 0 && rt->chips[c].armed_left && f->fired[i] == f->attempt)
            f->fired[i] = 0;
    }
}

int ftm_rt_script_sync(ftm_rt_script *f, ftm_rt *rt)
{
    if (f->script.n > 0)
        drop_unfired(f, rt);
    if (!rt->net || f->script.n == 0)
        return 0;
    double *v = malloc(sizeof *v * (size_t)f->script.n);
    if (!v)
        return FTM_ENOMEM;
    for (int i = 0; i < f->script.n; i++)
        v[i] = f->fired[i];
    int rc = ftm_rt_max_f64(rt, v, (size_t)f->script.n); /* the attempt beats 0 (not yet) */
    for (int i = 0; i < f->script.n && !rc; i++)
        f->fired[i] = (int)v[i];
    free(v);
    return rc;
}
