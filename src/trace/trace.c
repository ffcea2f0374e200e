/* The event recorder (see include/ftmesh/trace.h).
 *
 * Each chip owns a growing array of events and an arena of snapshots,
 * written only by its own thread, so nothing on the recording path takes
 * a lock except the first sight of a schedule in an execution (the
 * registry of schedule copies is shared; an execution is thousands of
 * packets, so one lock per execution is not measurable).
 */
#include "ftmesh/trace.h"
#include "trace_int.h"
#include "ftmesh/error.h"
#include "core/util.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { TR_CACHE = 4 };

typedef struct tr_reg {
    const ftm_sched *ptr;   /* the schedule as executed (identity only) */
    ftm_sched copy;
    ftm_mesh mesh;
} tr_reg;

typedef struct tr_chip {
    ftm_event *ev;
    size_t n, cap;
    unsigned char *arena;
    size_t alen, acap;
    /* current execution */
    const ftm_sched *s;
    int sched, exec, step;
    size_t exec_ev, step_ev;
    size_t last_fwd[FTM_NDIRS]; /* event index + 1 of the last forward per link */
    struct { const ftm_sched *p; int id; } cache[TR_CACHE];
    int cache_next;
    int err;
    int skip;               /* this execution is past max_exec: not recorded */
    uint32_t last_epoch;    /* of its last execution this run, 0: none yet */
    int stopped;            /* trace_stop_chip: the runtime records nothing more this run */
} tr_chip;

struct ftm_trace {
    int nchips;
    size_t snap_limit;
    int max_exec;            /* executions recorded per runtime (0: all) */
    /* epochs from this one on are not recorded this run (0: none): set by
     * the first chip to stop, read by every chip (trace_stop_chip) */
    _Atomic uint32_t stop_epoch;
    double t_origin;
    int nruns;               /* written before chip threads start */
    pthread_mutex_t mu;      /* the registry */
    tr_reg *reg;
    int nreg, capreg;
    tr_chip *c;
};

static const char *const kind_names[FTM_EV_NKINDS] = {
    "exec", "step", "send", "recv", "forward", "wait", "compute", "fail", "recover"
};

const char *ftm_trace_ev_kind_name(int kind)
{
    return kind >= 0 && kind < FTM_EV_NKINDS ? kind_names[kind] : "?";
}

int ftm_trace_create(ftm_trace **out, int nchips, size_t snap_limit)
{
    *out = NULL;
    if (nchips < 1)
        return FTM_EINVAL;
    ftm_trace *tr = calloc(1, sizeof *tr);
    if (!tr || !(tr->c = calloc((size_t)nchips, sizeof *tr->c))) {
        free(tr);
        return FTM_ENOMEM;
    }
    tr->nchips = nchips;
    tr->snap_limit = snap_limit;
    tr->t_origin = core_now_s();
    pthread_mutex_init(&tr->mu, NULL);
    *out = tr;
    return 0;
}

void ftm_trace_destroy(ftm_trace *tr)
{
    if (!tr)
        return;
    for (int i = 0; i < tr->nchips; i++) {
        free(tr->c[i].ev);
        free(tr->c[i].arena);
    }
    for (int i = 0; i < tr->nreg; i++) {
        ftm_sched_free(&tr->reg[i].copy);
        ftm_mesh_free(&tr->reg[i].mesh);
    }
    free(tr->reg);
    free(tr->c);
    pthread_mutex_destroy(&tr->mu);
    free(tr);
}

double ftm_trace_now(const ftm_trace *tr) { return core_now_s() - tr->t_origin; }

void ftm_trace_begin_run(ftm_trace *tr)
{
    tr->nruns++;
    atomic_store(&tr->stop_epoch, 0);
    for (int i = 0; i < tr->nchips; i++) {
        tr->c[i].last_epoch = 0;
        tr->c[i].stopped = 0;
    }
}

void trace_stop_chip(ftm_trace *tr, int chip)
{
    if (chip < 0 || chip >= tr->nchips)
        return;
    tr_chip *c = &tr->c[chip];
    c->stopped = 1;
    /* every chip runs the same epochs: the first to stop names the one
     * all of them run next; later ones find it set */
    uint32_t none = 0;
    atomic_compare_exchange_strong(&tr->stop_epoch, &none, c->last_epoch + 1);
}

/* 1 where the execution of this epoch is not recorded. */
static int past_limit(ftm_trace *tr, uint32_t epoch)
{
    uint32_t stop = atomic_load(&tr->stop_epoch);
    return (tr->max_exec && (int)epoch - 1 >= tr->max_exec) || (stop && epoch >= stop);
}

void ftm_trace_set_max_exec(ftm_trace *tr, int n) { tr->max_exec = n > 0 ? n : 0; }

static int cur_run(const ftm_trace *tr) { return tr->nruns > 0 ? tr->nruns - 1 : 0; }

/* Appends an event to chip c; returns its index + 1, or 0 if out of memory. */
static size_t push(ftm_trace *tr, tr_chip *c, const ftm_event *e)
{
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 256;
        ftm_event *p = realloc(c->ev, cap * sizeof *p);
        if (!p) {
            c->err = FTM_ENOMEM;
            return 0;
        }
        c->ev = p;
        c->cap = cap;
    }
    c->ev[c->n] = *e;
    c->ev[c->n].run = cur_run(tr);
    return ++c->n;
}

/* Copies len bytes into the chip's arena for event idx (index + 1). */
static void snap(ftm_trace *tr, tr_chip *c, size_t idx, const void *src, size_t len)
{
    if (!idx || !src || !len || len > tr->snap_limit || len > UINT32_MAX) /* snap_len's width */
        return;
    if (c->alen + len > c->acap) {
        size_t cap = c->acap ? c->acap : 4096;
        while (cap < c->alen + len)
            cap *= 2;
        unsigned char *p = realloc(c->arena, cap);
        if (!p) {
            c->err = FTM_ENOMEM;
            return;
        }
        c->arena = p;
        c->acap = cap;
    }
    memcpy(c->arena + c->alen, src, len);
    c->ev[idx - 1].snap = c->alen;
    c->ev[idx - 1].snap_len = (uint32_t)len;
    c->alen += len;
}

static ftm_event blank(int kind, int chip, double t)
{
    ftm_event e;
    memset(&e, 0, sizeof e);
    e.kind = (uint8_t)kind;
    e.dir = -1;
    e.chip = chip;
    e.peer = -1;
    e.sched = e.step = e.op = -1;
    e.t0 = e.t1 = t;
    e.name = "";
    return e;
}

/* Deep copy of a schedule (routes, programs); the phase strings are static. */
static int sched_copy(ftm_sched *d, const ftm_sched *s)
{
    int rc = ftm_sched_init(d, NULL, s->algo, s->nchips, s->bytes);
    if (rc)
        return rc;
    d->fallback = s->fallback;
    d->next_tag = s->next_tag;
    d->routes = malloc(sizeof *d->routes * (size_t)(s->nroutes ? s->nroutes : 1));
    d->dirs = malloc((size_t)(s->ndirs ? s->ndirs : 1));
    rc = d->routes && d->dirs ? 0 : FTM_ENOMEM;
    if (!rc) {
        if (s->nroutes) /* memcpy from NULL is undefined even for 0 bytes */
            memcpy(d->routes, s->routes, sizeof *d->routes * (size_t)s->nroutes);
        if (s->ndirs)
            memcpy(d->dirs, s->dirs, (size_t)s->ndirs);
        d->nroutes = d->cap_routes = s->nroutes;
        d->ndirs = d->cap_dirs = s->ndirs;
    }
    for (int c = 0; c < s->nchips && !rc; c++) {
        const ftm_chip_prog *p = &s->prog[c];
        ftm_chip_prog *q = &d->prog[c];
        q->steps = malloc(sizeof *q->steps * (size_t)(p->nsteps ? p->nsteps : 1));
        q->ops = malloc(sizeof *q->ops * (size_t)(p->nops ? p->nops : 1));
        if (!q->steps || !q->ops) {
            rc = FTM_ENOMEM;
            break;
        }
        if (p->nsteps)
            memcpy(q->steps, p->steps, sizeof *q->steps * (size_t)p->nsteps);
        if (p->nops)
            memcpy(q->ops, p->ops, sizeof *q->ops * (size_t)p->nops);
        q->nsteps = q->cap_steps = p->nsteps;
        q->nops = q->cap_ops = p->nops;
    }
    if (rc)
        ftm_sched_free(d);
    return rc;
}

/* A registered copy still describes s (the address of a freed schedule
 * can come back for another one). */
static int reg_matches(const tr_reg *r, const ftm_sched *s, const ftm_mesh *m)
{
    const ftm_sched *c = &r->copy;
    if (r->ptr != s || c->nchips != s->nchips || c->bytes != s->bytes ||
        c->next_tag != s->next_tag || c->nroutes != s->nroutes || c->ndirs != s->ndirs ||
        c->algo != s->algo || c->fallback != s->fallback)
        return 0;
    return !m || ftm_mesh_same(&r->mesh, m);
}

/* Id of schedule s, registering a copy on first sight (m NULL: look up only). */
static int reg_find(ftm_trace *tr, const ftm_sched *s, const ftm_mesh *m)
{
    pthread_mutex_lock(&tr->mu);
    int id = -1;
    for (int i = tr->nreg - 1; i >= 0 && id < 0; i--)
        if (reg_matches(&tr->reg[i], s, m))
            id = i;
    if (id < 0 && m) {
        if (tr->nreg == tr->capreg) {
            int cap = tr->capreg ? 2 * tr->capreg : 8;
            tr_reg *p = realloc(tr->reg, sizeof *p * (size_t)cap);
            if (p) {
                tr->reg = p;
                tr->capreg = cap;
            }
        }
        tr_reg *r = tr->nreg < tr->capreg ? &tr->reg[tr->nreg] : NULL;
        if (r && !sched_copy(&r->copy, s)) {
            if (!ftm_mesh_copy(&r->mesh, m)) {
                r->ptr = s;
                id = tr->nreg++;
            } else {
                ftm_sched_free(&r->copy);
            }
        }
    }
    pthread_mutex_unlock(&tr->mu);
    return id;
}

/* Id of s through the chip's small cache (transit packets mostly belong to
 * the chip's own or a recent schedule). */
static int sched_id(ftm_trace *tr, tr_chip *c, const ftm_sched *s)
{
    for (int i = 0; i < TR_CACHE; i++)
        if (c->cache[i].p == s)
            return c->cache[i].id;
    int id = reg_find(tr, s, NULL);
    if (id >= 0) {
        c->cache[c->cache_next].p = s;
        c->cache[c->cache_next].id = id;
        c->cache_next = (c->cache_next + 1) % TR_CACHE;
    }
    return id;
}

void ftm_trace_exec_begin(ftm_trace *tr, int chip, const ftm_sched *s, const ftm_mesh *m,
                          const void *buf, uint32_t epoch)
{
    tr_chip *c = &tr->c[chip];
    c->last_epoch = epoch;
    c->skip = c->stopped || past_limit(tr, epoch);
    if (c->skip) { /* nothing of it is recorded: c->s stays NULL */
        c->s = NULL;
        c->exec_ev = c->step_ev = 0;
        return;
    }
    c->s = s;
    c->sched = reg_find(tr, s, m);
    if (c->sched < 0)
        c->err = FTM_ENOMEM;
    /* the cache may hold a freed schedule's address: renew it */
    memset(c->cache, 0, sizeof c->cache);
    c->cache[0].p = s;
    c->cache[0].id = c->sched;
    c->cache_next = 1;
    c->exec = (int)epoch - 1;
    c->step = -1;
    memset(c->last_fwd, 0, sizeof c->last_fwd);
    ftm_event e = blank(FTM_EV_EXEC, chip, ftm_trace_now(tr));
    e.sched = c->sched;
    e.exec = c->exec;
    e.name = s->algo ? s->algo : "";
    e.len = s->bytes;
    c->exec_ev = push(tr, c, &e);
    snap(tr, c, c->exec_ev, buf, s->bytes);
}

void ftm_trace_exec_end(ftm_trace *tr, int chip)
{
    tr_chip *c = &tr->c[chip];
    if (c->exec_ev)
        c->ev[c->exec_ev - 1].t1 = ftm_trace_now(tr);
    c->exec_ev = 0;
    c->step_ev = 0;
    c->s = NULL;
}

void ftm_trace_step_begin(ftm_trace *tr, int chip, int k)
{
    tr_chip *c = &tr->c[chip];
    if (!c->s)
        return;
    const ftm_step *st = &c->s->prog[chip].steps[k];
    c->step = k;
    ftm_event e = blank(FTM_EV_STEP, chip, ftm_trace_now(tr));
    e.sched = c->sched;
    e.exec = c->exec;
    e.step = k;
    e.op = st->index; /* the step's number within its phase */
    e.name = st->phase ? st->phase : "";
    c->step_ev = push(tr, c, &e);
}

void ftm_trace_step_end(ftm_trace *tr, int chip, const void *buf)
{
    tr_chip *c = &tr->c[chip];
    if (!c->step_ev)
        return;
    c->ev[c->step_ev - 1].t1 = ftm_trace_now(tr);
    if (c->s)
        snap(tr, c, c->step_ev, buf, c->s->bytes);
    c->step_ev = 0;
}

void ftm_trace_op(ftm_trace *tr, int chip, int i, const ftm_op *op, size_t done, const void *buf)
{
    tr_chip *c = &tr->c[chip];
    if (!c->s || done < op->len)
        return;
    /* an op spans its step, from the step's start (when the chip issued
     * it) until its last byte moved: on this machine's clock a one-hop op
     * often moves all its bytes in one call, which has no start apart */
    double now = ftm_trace_now(tr);
    ftm_event e = blank(op->kind == FTM_OP_SEND ? FTM_EV_SEND : FTM_EV_RECV, chip, now);
    e.t0 = c->step_ev ? c->ev[c->step_ev - 1].t0 : now;
    e.red = op->red;
    e.peer = op->peer;
    e.sched = c->sched;
    e.exec = c->exec;
    e.step = c->step;
    e.op = i;
    e.tag = op->tag;
    e.off = op->off;
    e.len = op->len;
    e.name = op->kind == FTM_OP_SEND ? "send" : op->red == FTM_RED_COPY ? "recv copy" : "recv sum";
    size_t idx = push(tr, c, &e);
    snap(tr, c, idx, buf ? (const unsigned char *)buf + op->off : NULL, op->len);
}

void ftm_trace_forward(ftm_trace *tr, int chip, const ftm_sched *s, uint32_t epoch, int src,
                       uint32_t tag, int dir, size_t len)
{
    tr_chip *c = &tr->c[chip];
    if (c->stopped || past_limit(tr, epoch))
        return;
    double now = ftm_trace_now(tr);
    int id = sched_id(tr, c, s);
    size_t last = c->last_fwd[dir & 3];
    if (last && last <= c->n) {
        ftm_event *p = &c->ev[last - 1];
        if (p->kind == FTM_EV_FORWARD && p->sched == id && p->exec == (int)epoch - 1 &&
            p->tag == tag && p->peer == src && p->run == cur_run(tr)) {
            p->t1 = now;
            p->len += len;
            return;
        }
    }
    ftm_event e = blank(FTM_EV_FORWARD, chip, now);
    e.dir = (int8_t)dir;
    e.peer = src;
    e.sched = id;
    e.exec = (int)epoch - 1;
    e.tag = tag;
    e.len = len;
    e.name = "forward";
    c->last_fwd[dir & 3] = push(tr, c, &e);
}

void ftm_trace_wait(ftm_trace *tr, int chip, double t0)
{
    tr_chip *c = &tr->c[chip];
    if ((c->skip && !c->s) || c->stopped)
        return;
    ftm_event e = blank(FTM_EV_WAIT, chip, ftm_trace_now(tr));
    e.t0 = t0;
    e.sched = c->s ? c->sched : -1;
    e.exec = c->exec;
    e.step = c->s ? c->step : -1;
    e.name = "wait";
    push(tr, c, &e);
}

void ftm_trace_fail(ftm_trace *tr, int chip)
{
    tr_chip *c = &tr->c[chip];
    if (c->stopped)
        return;
    ftm_event e = blank(FTM_EV_FAIL, chip, ftm_trace_now(tr));
    e.sched = c->s ? c->sched : -1;
    e.exec = c->exec;
    e.step = c->s ? c->step : -1;
    e.name = "chip dies";
    push(tr, c, &e);
}

void ftm_trace_add(ftm_trace *tr, const ftm_event *ev)
{
    if (ev->chip < 0 || ev->chip >= tr->nchips)
        return;
    push(tr, &tr->c[ev->chip], ev);
}

int ftm_trace_nchips(const ftm_trace *tr) { return tr->nchips; }

const ftm_event *ftm_trace_events(const ftm_trace *tr, int chip, size_t *n)
{
    if (chip < 0 || chip >= tr->nchips) {
        *n = 0;
        return NULL;
    }
    *n = tr->c[chip].n;
    return tr->c[chip].ev;
}

const void *ftm_trace_snapshot(const ftm_trace *tr, const ftm_event *ev)
{
    if (!ev->snap_len || ev->chip < 0 || ev->chip >= tr->nchips)
        return NULL;
    return tr->c[ev->chip].arena + ev->snap;
}

int ftm_trace_nscheds(const ftm_trace *tr) { return tr->nreg; }

const ftm_sched *ftm_trace_sched(const ftm_trace *tr, int id, const ftm_mesh **m)
{
    if (id < 0 || id >= tr->nreg)
        return NULL;
    if (m)
        *m = &tr->reg[id].mesh;
    return &tr->reg[id].copy;
}

int ftm_trace_nruns(const ftm_trace *tr) { return tr->nruns; }

int ftm_trace_error(const ftm_trace *tr)
{
    for (int i = 0; i < tr->nchips; i++)
        if (tr->c[i].err)
            return tr->c[i].err;
    return 0;
}
