/* Runtime: links, chip threads, the watchdog and link statistics. */
#include "rt_internal.h"
#include "ftmesh/error.h"
#include "core/util.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { RT_DEFAULT_DEPTH = 4 };
#define RT_DEFAULT_HANG_S 5.0
/* Mailbox memory is capped so that a 64x64 mesh fits comfortably: the
 * packet size shrinks as the number of links grows. */
#define RT_MBOX_BUDGET ((size_t)128 << 20)

int (*rt_net_attach)(ftm_rt *rt) = NULL;

/* Headers per mailbox: as many as fit a budget (a chip runs up to that
 * many descriptors ahead of a sleeping neighbour), at least depth. */
#define RT_HDR_BUDGET ((size_t)32 << 20)
static uint32_t pick_entries(size_t nlinks, uint32_t depth)
{
    uint32_t e = 64;
    while (e > 8 && nlinks * e * RT_HDR_BYTES > RT_HDR_BUDGET)
        e /= 2;
    return e > depth ? e : depth;
}

/* The mailbox depth: cfg's rounded up to a power of two, since the
 * mailboxes index slots by free-running 32-bit counters modulo it (and
 * modulo the header count, pick_entries: a power of two too), which stays
 * right across the counters' wrap only for divisors of 2^32. */
static uint32_t pick_depth(const ftm_rt_config *cfg)
{
    uint32_t want = cfg && cfg->depth > 0 ? (uint32_t)cfg->depth : RT_DEFAULT_DEPTH, d = 1;
    while (d < want && d < (1u << 20))
        d *= 2;
    return d;
}

static size_t pick_pkt_bytes(size_t nlinks, uint32_t depth)
{
    size_t pb = 32768;
    while (pb > 1024 && nlinks * depth * (pb + RT_HDR_BYTES) > RT_MBOX_BUDGET)
        pb /= 2;
    return pb;
}

size_t ftm_rt_mem_estimate(const ftm_mesh *m, const ftm_rt_config *cfg, const ftm_sched *s)
{
    size_t nlinks = 0, n = (size_t)m->nchips, live = (size_t)ftm_mesh_healthy_count(m);
    for (int c = 0; c < m->nchips; c++)
        for (int d = 0; d < FTM_NDIRS; d++)
            nlinks += ftm_mesh_link_live(m, c, d) ? 1 : 0;
    size_t depth = pick_depth(cfg);
    size_t pb = cfg && cfg->pkt_bytes ? cfg->pkt_bytes : pick_pkt_bytes(nlinks, (uint32_t)depth);
    pb = pb < FTM_RT_PKT_MAX ? pb : FTM_RT_PKT_MAX; /* ftm_rt_create refuses more */
    size_t slot = RT_HDR_BYTES + ((pb + 7) & ~(size_t)7), ops = 0;
    size_t hdrs = (size_t)pick_entries(nlinks, (uint32_t)depth) * RT_HDR_BYTES;
    for (int c = 0; s && c < s->nchips; c++) {
        size_t most = 0; /* the chip's largest step: its per-op state */
        for (int k = 0; k < s->prog[c].nsteps; k++)
            if ((size_t)s->prog[c].steps[k].nops > most)
                most = (size_t)s->prog[c].steps[k].nops;
        ops += most;
    }
    size_t link = hdrs + depth * slot * 3; /* slots, then 2 per slot in chips' queues */
    if (nlinks && link > (SIZE_MAX / 2) / nlinks)
        return SIZE_MAX; /* more than any machine has: the caller refuses */
    return sizeof(ftm_rt) + n * (sizeof(ftm_chip) + FTM_NDIRS * sizeof(rt_mbox)) + nlinks * link +
           ops * sizeof(size_t) + live * FTM_RT_STACK_TOUCHED; /* frames small, shallow */
}

int ftm_rt_create(ftm_rt **out, const ftm_mesh *m, const ftm_rt_config *cfg)
{
    if (cfg && cfg->pkt_bytes > FTM_RT_PKT_MAX)
        return FTM_EINVAL;
    ftm_rt *rt = calloc(1, sizeof *rt);
    if (!rt)
        return FTM_ENOMEM;
    int rc = ftm_mesh_copy(&rt->mesh, m);
    if (rc) {
        free(rt);
        return rc;
    }
    int n = m->nchips;
    size_t nlinks = 0;
    for (int c = 0; c < n; c++)
        for (int d = 0; d < FTM_NDIRS; d++)
            nlinks += ftm_mesh_link_live(m, c, d) ? 1 : 0;
    rt->depth = pick_depth(cfg);
    rt->pkt_bytes = cfg && cfg->pkt_bytes ? cfg->pkt_bytes : pick_pkt_bytes(nlinks, rt->depth);
    rt->pkt_bytes = (rt->pkt_bytes + 7) & ~(size_t)7; /* whole int64 elements */
    rt->entries = pick_entries(nlinks, rt->depth);
    rt->hang_timeout_s = cfg && cfg->hang_timeout_s > 0 ? cfg->hang_timeout_s : RT_DEFAULT_HANG_S;
    rt->single_copy = !(cfg && cfg->packets_only);
    rt->chips = calloc((size_t)n, sizeof *rt->chips);
    rt->mbox = calloc((size_t)n * FTM_NDIRS, sizeof *rt->mbox);
    rt->killed = calloc((size_t)n, 1);
    if (!rt->chips || !rt->mbox || !rt->killed) { /* nothing initialised yet to destroy */
        free(rt->chips);
        free(rt->mbox);
        free(rt->killed);
        ftm_mesh_free(&rt->mesh);
        free(rt);
        return FTM_ENOMEM;
    }
    pthread_mutex_init(&rt->mu, NULL);
    pthread_cond_init(&rt->cv, NULL);
    pthread_mutex_init(&rt->bar_mu, NULL);
    atomic_init(&rt->died, -1);
    for (int c = 0; c < n; c++) {
        ftm_chip *ch = &rt->chips[c];
        ch->rt = rt;
        ch->id = c;
        pthread_mutex_init(&ch->mu, NULL);
        pthread_cond_init(&ch->cv, NULL);
    }
    for (int c = 0; c < n; c++) {
        for (int d = 0; d < FTM_NDIRS; d++) {
            if (!ftm_mesh_link_live(m, c, d))
                continue; /* a dead link carries nothing: it has no mailbox */
            rt_mbox *mb = &rt->mbox[c * FTM_NDIRS + d];
            if (rt_mbox_init(mb, rt->entries, rt->depth, rt->pkt_bytes)) {
                ftm_rt_destroy(rt);
                return FTM_ENOMEM;
            }
            int nb = ftm_mesh_neighbor(m, c, d);
            mb->from = &rt->chips[c];
            mb->to = &rt->chips[nb];
            rt->chips[c].out[d] = mb;
            rt->chips[nb].in[ftm_dir_opposite(d)] = mb;
        }
    }
    rt->nlocal = ftm_mesh_healthy_count(m);
    if (rt_net_attach && (rc = rt_net_attach(rt)) != 0) {
        ftm_rt_destroy(rt);
        return rc;
    }
    *out = rt;
    return 0;
}

static void free_expos(rt_expo *e)
{
    while (e) {
        rt_expo *next = e->next;
        free(e->bounce);
        free(e);
        e = next;
    }
}

static void free_list(rt_pkt *p)
{
    while (p) {
        rt_pkt *next = p->next;
        free(p->data);
        free(p);
        p = next;
    }
}

void ftm_rt_destroy(ftm_rt *rt)
{
    if (!rt)
        return;
    if (rt->net)
        rt->net->detach(rt);
    if (rt->chips) {
        for (int c = 0; c < rt->mesh.nchips; c++) {
            ftm_chip *ch = &rt->chips[c];
            free(ch->op_state);
            free_list(ch->pool);
            free_list(ch->early);
            free_expos(ch->expo_busy);
            free_expos(ch->expo_free);
            free_expos(ch->expo_lost);
            for (int d = 0; d < FTM_NDIRS; d++)
                free_list(ch->outq_head[d]);
            pthread_mutex_destroy(&ch->mu);
            pthread_cond_destroy(&ch->cv);
        }
        pthread_mutex_destroy(&rt->mu);
        pthread_cond_destroy(&rt->cv);
        pthread_mutex_destroy(&rt->bar_mu);
    }
    if (rt->mbox)
        for (int i = 0; i < rt->mesh.nchips * FTM_NDIRS; i++)
            rt_mbox_free(&rt->mbox[i]);
    free(rt->mbox);
    free(rt->chips);
    free(rt->killed);
    ftm_mesh_free(&rt->mesh);
    free(rt);
}

const ftm_mesh *ftm_rt_mesh(const ftm_rt *rt) { return &rt->mesh; }
size_t ftm_rt_pkt_bytes(const ftm_rt *rt) { return rt->pkt_bytes; }


static void *chip_main(void *p)
{
    ftm_chip *c = p;
    ftm_rt *rt = c->rt;
    c->rc = rt->fn(c, rt->arg);
    rt_trace_death(c); /* killed outside an exec (a phase's kill, a host-mate's) */
    if (c->rc && c->rc != FTM_EHANG && c->rc != FTM_ECHIPDEAD && c->rc != FTM_ELINKDEAD) {
        /* A failed chip would leave its partners waiting: stop the run. */
        atomic_store(&rt->abort, 1);
        rt_wake_all(rt);
    }
    pthread_mutex_lock(&c->mu);
    c->finished = 1;
    pthread_mutex_unlock(&c->mu);
    if (rt->net)
        rt->net->chip_done(rt);
    if (atomic_fetch_sub(&rt->running, 1) == 1) {
        rt_wake_all(rt);
        pthread_mutex_lock(&rt->mu);
        pthread_cond_signal(&rt->cv);
        pthread_mutex_unlock(&rt->mu);
    }
    if (!c->rc) {
        int rc = rt_chip_linger(c);
        if (rc)
            c->rc = rc;
    }
    return NULL;
}

/* Packets moved so far by all chips (each counts its own). */
static uint64_t progress(ftm_rt *rt)
{
    uint64_t n = 0;
    for (int c = 0; c < rt->mesh.nchips; c++)
        n += atomic_load_explicit(&rt->chips[c].moved, memory_order_relaxed);
    return n;
}

/* 1 when every chip still running its program is asleep waiting. */
static int all_waiting(ftm_rt *rt)
{
    int all = 1;
    for (int c = 0; c < rt->mesh.nchips && all; c++) {
        ftm_chip *ch = &rt->chips[c];
        if (!ch->started)
            continue;
        pthread_mutex_lock(&ch->mu);
        if (!ch->finished && !ch->waiting)
            all = 0;
        pthread_mutex_unlock(&ch->mu);
    }
    return all;
}

/* Watchdog: declares a hang when no packet moved and every running chip
 * was asleep for hang_timeout_s. Chips busy computing are not stuck. */
static void watch(ftm_rt *rt)
{
    const double tick = 0.05;
    uint64_t last = progress(rt);
    double stall_since = -1;
    pthread_mutex_lock(&rt->mu);
    while (atomic_load(&rt->running) > 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += (long)(tick * 1e9);
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&rt->cv, &rt->mu, &ts);
        if (atomic_load(&rt->running) == 0 || atomic_load(&rt->abort))
            break;
        pthread_mutex_unlock(&rt->mu);
        uint64_t cur = progress(rt);
        if (cur != last || !all_waiting(rt)) {
            last = cur;
            stall_since = -1;
        } else if (stall_since < 0) {
            stall_since = core_now_s();
        } else if (rt->net) {
            /* chips elsewhere may still move: the transport decides */
        } else if (core_now_s() - stall_since >= rt->hang_timeout_s) {
            atomic_store(&rt->hung, 1);
            atomic_store(&rt->abort, 1);
            rt_wake_all(rt);
            pthread_mutex_lock(&rt->mu);
            break;
        }
        atomic_store(&rt->stalled, stall_since >= 0);
        pthread_mutex_lock(&rt->mu);
    }
    pthread_mutex_unlock(&rt->mu);
}

/* Clears what the previous run left on the runtime and its chips. */
static void run_reset(ftm_rt *rt, ftm_chip_fn fn, void *arg)
{
    rt->fn = fn;
    rt->arg = arg;
    if (rt->trace)
        ftm_trace_begin_run(rt->trace);
    atomic_store(&rt->hung, 0);
    rt->bar_count = 0;
    atomic_store(&rt->died, -1);
    atomic_store(&rt->link_seen, 0);
    rt->nnotice = 0;
    atomic_store(&rt->abort, 0);
    atomic_store(&rt->running, ftm_mesh_healthy_count(&rt->mesh));
    atomic_store(&rt->stalled, 0);
    for (int c = 0; c < rt->mesh.nchips; c++) {
        ftm_chip *ch = &rt->chips[c];
        ch->started = 0;
        ch->fail_traced = 0;
        ch->finished = 0;
        ch->waiting = 0;
        ch->rc = 0;
        ch->sent_pkts = 0;
        /* Memory a run cut short left exposed may still be named by a
         * stale descriptor: its records are never reused. */
        while (ch->expo_busy) {
            rt_expo *e = ch->expo_busy;
            ch->expo_busy = e->next;
            e->next = ch->expo_lost;
            ch->expo_lost = e;
        }
        memset(&ch->why, 0, sizeof ch->why);
        ch->why.dir = -1;
    }
}

/* Starts a thread for every live local chip; FTM_ETHREAD (the run is
 * aborted, chips never started count as finished) if one cannot start. */
static int run_start(ftm_rt *rt)
{
    int n = rt->mesh.nchips, rc = 0;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    /* The chip threads block the stop signals (they inherit this mask): the
     * caller's thread, which waits for them, gets every SIGINT, SIGTERM
     * and SIGHUP, so its handler sees them in the order sent. */
    sigset_t stop, old;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &stop, &old);
    /* 1024+ chip threads: keep stacks modest (the nn layers use the heap). */
    pthread_attr_setstacksize(&attr, FTM_RT_STACK_BYTES);
    for (int c = 0; c < n; c++) {
        ftm_chip *ch = &rt->chips[c];
        if (!ftm_mesh_alive(&rt->mesh, c) || !rt_is_local(rt, c))
            continue; /* a dead chip runs nothing and forwards nothing */
        ch->started = 1; /* before the thread exists: others read it */
        if (pthread_create(&ch->thread, &attr, chip_main, ch)) {
            ch->started = 0;
            rc = FTM_ETHREAD;
            int left = 0;
            for (int j = c; j < n; j++)
                left += ftm_mesh_alive(&rt->mesh, j) && rt_is_local(rt, j);
            atomic_fetch_sub(&rt->running, left);
            atomic_store(&rt->abort, 1);
            break;
        }
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
    return rc;
}

/* The run's outcome once every thread has joined: a hang, a death, a
 * dead link, then the first chip error that is not a hang. */
static int run_outcome(const ftm_rt *rt)
{
    int n = rt->mesh.nchips;
    if (atomic_load(&rt->hung))
        return FTM_EHANG;
    if (atomic_load(&rt->died) >= 0)
        return FTM_ECHIPDEAD;
    if (atomic_load(&rt->link_seen))
        return FTM_ELINKDEAD;
    for (int c = 0; c < n; c++)
        if (rt->chips[c].started && rt->chips[c].rc && rt->chips[c].rc != FTM_EHANG)
            return rt->chips[c].rc;
    for (int c = 0; c < n; c++)
        if (rt->chips[c].started && rt->chips[c].rc)
            return rt->chips[c].rc;
    return 0;
}

int ftm_rt_run(ftm_rt *rt, ftm_chip_fn fn, void *arg)
{
    int n = rt->mesh.nchips, rc;
    if (rt->spent)
        return FTM_EINVAL;
    run_reset(rt, fn, arg);
    if (rt->net && (rc = rt->net->run_begin(rt)) != 0)
        return rc;
    rc = run_start(rt);
    if (!rc)
        watch(rt);
    else
        rt_wake_all(rt);
    for (int c = 0; c < n; c++)
        if (rt->chips[c].started)
            pthread_join(rt->chips[c].thread, NULL);
    for (int c = 0; c < n; c++) { /* an injected failure is for one run only */
        ftm_chip *ch = &rt->chips[c];
        ch->armed_left = ch->fail_after > ch->sent_pkts;
        ch->fail_after = 0;
    }
    if (rt->net) { /* settles the links; every process learns the outcome */
        int e = rt->net->run_end(rt);
        rc = rc ? rc : e;
    }
    rc = rc ? rc : run_outcome(rt);
    /* A run stopped part-way leaves packets in the mailboxes and chips at
     * different schedule counts: no later run could match them. The
     * outcome, not this process's abort flag, which every process learns. */
    rt->spent = rc != 0;
    return rc;
}


int ftm_rt_died(const ftm_rt *rt)
{
    return atomic_load(&rt->died);
}

/* The started chips waiting in a transfer (idle 0) or idle between
 * programs (idle 1), at most max into out; how many. */
static int stuck_list(const ftm_rt *rt, ftm_stuck *out, int max, int idle)
{
    int k = 0;
    for (int c = 0; c < rt->mesh.nchips && k < max; c++) {
        const ftm_chip *ch = &rt->chips[c];
        if (ch->started && ch->why.wait != FTM_WAIT_NONE &&
            (ch->why.wait == FTM_WAIT_DONE) == idle)
            out[k++] = ch->why;
    }
    return k;
}

int ftm_rt_stuck(const ftm_rt *rt, ftm_stuck *out, int max)
{
    if (!atomic_load(&rt->hung))
        return 0;
    /* None in a transfer (a chip skipped a barrier, or over ranks they
     * wait on another process): the idle ones, so the report names some. */
    int k = stuck_list(rt, out, max, 0);
    return k ? k : stuck_list(rt, out, max, 1);
}

void ftm_rt_link_stats(const ftm_rt *rt, int chip, int dir, uint64_t *bytes, uint64_t *pkts)
{
    if (chip < 0 || chip >= rt->mesh.nchips || dir < 0 || dir >= FTM_NDIRS) {
        if (bytes)
            *bytes = 0;
        if (pkts)
            *pkts = 0;
        return;
    }
    const rt_mbox *mb = &rt->mbox[chip * FTM_NDIRS + dir];
    if (bytes)
        *bytes = mb->bytes;
    if (pkts)
        *pkts = mb->pkts;
}

void ftm_rt_reset_stats(ftm_rt *rt)
{
    for (int i = 0; i < rt->mesh.nchips * FTM_NDIRS; i++)
        rt->mbox[i].bytes = rt->mbox[i].pkts = 0;
}

int ftm_rt_set_trace(ftm_rt *rt, ftm_trace *tr)
{
    if (tr && ftm_trace_nchips(tr) != rt->mesh.nchips)
        return FTM_EINVAL;
    rt->trace = tr;
    return 0;
}

int ftm_rt_is_local(const ftm_rt *rt, int chip)
{
    return chip >= 0 && chip < rt->mesh.nchips && rt_is_local(rt, chip);
}

int ftm_rt_declare_sched(ftm_rt *rt, const ftm_sched *s)
{
    return rt->net ? rt->net->declare(rt, s) : 0;
}

int ftm_rt_sum_u64(ftm_rt *rt, uint64_t *v, size_t n)
{
    return rt->net ? rt->net->combine(rt, v, n, RT_COMBINE_SUM_U64) : 0;
}

int ftm_rt_max_f64(ftm_rt *rt, double *v, size_t n)
{
    return rt->net ? rt->net->combine(rt, v, n, RT_COMBINE_MAX_F64) : 0;
}

int ftm_rt_sum_f64(ftm_rt *rt, double *v, size_t n)
{
    return rt->net ? rt->net->combine(rt, v, n, RT_COMBINE_SUM_F64) : 0;
}

int ftm_rt_bcast(ftm_rt *rt, void *buf, size_t bytes, int chip)
{
    if (chip < 0 || chip >= rt->mesh.nchips)
        return FTM_EINVAL;
    return rt->net ? rt->net->bcast(rt, buf, bytes, chip) : 0;
}

int rt_chip_op_room(ftm_chip *chip, const ftm_chip_prog *prog)
{
    int maxops = 0;
    for (int k = 0; k < prog->nsteps; k++)
        if (prog->steps[k].nops > maxops)
            maxops = prog->steps[k].nops;
    if (maxops > chip->op_state_cap) {
        void *p = realloc(chip->op_state, sizeof(rt_op_state) * (size_t)maxops);
        if (!p)
            return FTM_ENOMEM;
        chip->op_state = p;
        chip->op_state_cap = maxops;
    }
    return 0;
}
