/* A chip's side of the runtime: executing its program of a schedule while
 * forwarding transit traffic.
 *
 * Deadlock freedom. Mailboxes are bounded, and routes around holes share
 * links, so a chip that blocked on a full link while packets piled up in
 * its own inbound mailboxes could close a cycle of chips each waiting for
 * the next. Here a chip never leaves an inbound mailbox full: every pass
 * of its loop empties all of them. A packet for this chip is applied to
 * its buffer if the current step expects it, else kept in the chip's own
 * memory ("early", like MPI's unexpected queue); a transit packet goes to
 * the next link, or, when that link is full, to a per-direction queue in
 * the chip's memory that keeps link order. Only the chip's own sends wait
 * for link space, and they never stop the draining.
 */
#include "rt_internal.h"
#include "ftmesh/error.h"

#include <stdlib.h>
#include <string.h>

void rt_wake(ftm_chip *c)
{
    pthread_mutex_lock(&c->mu);
    c->bell++;
    pthread_cond_signal(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

int ftm_chip_id(const ftm_chip *chip) { return chip->id; }
ftm_rt *ftm_chip_rt(ftm_chip *chip) { return chip->rt; }

/* Per-op progress of the current step. */
typedef struct op_state {
    size_t done;     /* bytes sent (sends) or received (receives) */
} op_state;

typedef struct exec_ctx {
    ftm_chip *chip;
    const ftm_sched *s;
    unsigned char *buf;
    const ftm_step *step;
    const ftm_op *ops;       /* the step's ops */
    op_state *st;
    uint64_t epoch_tag;      /* epoch << 32 */
} exec_ctx;

static rt_pkt *pkt_get(ftm_chip *c)
{
    rt_pkt *p = c->pool;
    if (p) {
        c->pool = p->next;
        return p;
    }
    p = malloc(sizeof *p);
    if (!p)
        return NULL;
    if (posix_memalign((void **)&p->data, 64, RT_HDR_BYTES + c->rt->pkt_bytes)) {
        free(p);
        return NULL;
    }
    return p;
}

static void pkt_put(ftm_chip *c, rt_pkt *p)
{
    p->next = c->pool;
    c->pool = p;
}

/* Applies a packet addressed to this chip if the current step expects it,
 * with the schedule's reduction kernel (an int64 sum is exact or
 * FTM_ERANGE, never a silent wrap). Returns 1 if applied, 0 if not, or a
 * negative error. */
static int try_deliver(exec_ctx *x, const unsigned char *pkt)
{
    const rt_hdr *h = (const rt_hdr *)(const void *)pkt;
    if (!x->step || h->sched != x->s)
        return 0;
    for (int i = 0; i < x->step->nops; i++) {
        const ftm_op *op = &x->ops[i];
        if (op->kind != FTM_OP_RECV || op->peer != h->src ||
            (x->epoch_tag | op->tag) != h->tag)
            continue;
        int rc = ftm_sched_reduce(x->buf + op->off + h->off, pkt + RT_HDR_BYTES, h->len,
                                  (ftm_red)op->red);
        x->st[i].done += h->len;
        if (RT_TRACE(x->chip))
            ftm_trace_op(RT_TRACE(x->chip), x->chip->id, i, op, x->st[i].done - h->len,
                         x->st[i].done, x->buf);
        return rc ? rc : 1;
    }
    return 0;
}

static void outq_append(ftm_chip *c, int d, rt_pkt *p)
{
    p->next = NULL;
    if (c->outq_tail[d])
        c->outq_tail[d]->next = p;
    else
        c->outq_head[d] = p;
    c->outq_tail[d] = p;
}

/* Direction of the next hop of a packet currently at this chip. */
static int next_dir(const rt_hdr *h)
{
    const ftm_route *r = &h->sched->routes[h->route];
    return h->sched->dirs[r->first + h->hop];
}

static void publish(ftm_chip *c, int d)
{
    rt_mbox_push(c->out[d]);
    atomic_fetch_add_explicit(&c->rt->progress, 1, memory_order_relaxed);
    rt_wake(c->out[d]->to);
}

/* Copies a packet into link d, counting it. Returns 1 on success, 0 if the
 * link is full. */
static int link_put(ftm_chip *c, int d, const unsigned char *pkt)
{
    rt_mbox *mb = c->out[d];
    unsigned char *slot = rt_mbox_slot_in(mb);
    if (!slot)
        return 0;
    const rt_hdr *h = (const rt_hdr *)(const void *)pkt;
    memcpy(slot, pkt, RT_HDR_BYTES + h->len);
    ((rt_hdr *)(void *)slot)->hop++;
    mb->bytes += h->len;
    mb->pkts++;
    if (RT_TRACE(c)) /* link_put carries transit traffic only */
        ftm_trace_forward(RT_TRACE(c), c->id, h->sched, (uint32_t)(h->tag >> 32), h->src,
                          (uint32_t)h->tag, d, h->len);
    publish(c, d);
    return 1;
}

/* Empties every inbound mailbox. Returns 1 if anything moved, or a
 * negative error. */
static int drain_inbound(exec_ctx *x)
{
    ftm_chip *c = x->chip;
    int moved = 0;
    for (int d = 0; d < FTM_NDIRS; d++) {
        rt_mbox *mb = c->in[d];
        if (!mb)
            continue;
        unsigned char *pkt;
        while ((pkt = rt_mbox_slot_out(mb)) != NULL) {
            const rt_hdr *h = (const rt_hdr *)(const void *)pkt;
            int kept = 0;
            /* A route may pass its destination on the way (2-D column
             * rings can): the packet is home only at its last hop. */
            int home = h->hop == h->sched->routes[h->route].nhops;
            if (home) {
                kept = try_deliver(x, pkt);
                if (kept < 0)
                    return kept;
            } else {
                int nd = next_dir(h);
                if (!c->out[nd])
                    return FTM_ENOROUTE;
                if (rt_link_dead(c, nd, 0))
                    return rt_notice(c, nd, 0, "forward failed");
                kept = !c->outq_head[nd] && link_put(c, nd, pkt);
            }
            if (!kept) {
                /* Keep it in the chip's memory: early data or blocked transit. */
                rt_pkt *p = pkt_get(c);
                if (!p)
                    return FTM_ENOMEM;
                memcpy(p->data, pkt, RT_HDR_BYTES + h->len);
                if (home) {
                    p->next = c->early;
                    c->early = p;
                } else {
                    outq_append(c, next_dir(h), p);
                }
            }
            rt_mbox_pop(mb);
            rt_wake(mb->from);
            moved = 1;
        }
    }
    return moved;
}

/* Moves queued transit packets onto their links while there is room. */
static int flush_outq(ftm_chip *c)
{
    int moved = 0;
    for (int d = 0; d < FTM_NDIRS; d++) {
        if (c->outq_head[d] && rt_link_dead(c, d, 0))
            return rt_notice(c, d, 0, "forward failed");
        while (c->outq_head[d] && link_put(c, d, c->outq_head[d]->data)) {
            rt_pkt *p = c->outq_head[d];
            c->outq_head[d] = p->next;
            if (!c->outq_head[d])
                c->outq_tail[d] = NULL;
            pkt_put(c, p);
            moved = 1;
        }
    }
    return moved;
}

/* Applies early packets that the current step expects. */
static int apply_early(exec_ctx *x)
{
    int moved = 0;
    rt_pkt **pp = &x->chip->early;
    while (*pp) {
        rt_pkt *p = *pp;
        int d = try_deliver(x, p->data);
        if (d < 0)
            return d;
        if (d) {
            *pp = p->next;
            pkt_put(x->chip, p);
            moved = 1;
        } else {
            pp = &p->next;
        }
    }
    return moved;
}

/* Pushes the step's own sends, packet by packet, behind queued transit. */
static int push_sends(exec_ctx *x)
{
    ftm_chip *c = x->chip;
    size_t pb = c->rt->pkt_bytes;
    int moved = 0;
    for (int i = 0; i < x->step->nops; i++) {
        const ftm_op *op = &x->ops[i];
        if (op->kind != FTM_OP_SEND)
            continue;
        const ftm_route *r = &x->s->routes[op->route];
        if (r->nhops == 0)
            return FTM_EINVAL;
        int d = x->s->dirs[r->first];
        if (!c->out[d])
            return FTM_ENOROUTE;
        while (x->st[i].done < op->len && !c->outq_head[d]) {
            if (rt_link_dead(c, d, 0))
                return rt_notice(c, d, 0, "send failed");
            unsigned char *slot = rt_mbox_slot_in(c->out[d]);
            if (!slot)
                break;
            size_t n = op->len - x->st[i].done;
            if (n > pb)
                n = pb;
            rt_hdr *h = (rt_hdr *)(void *)slot;
            h->sched = x->s;
            h->tag = x->epoch_tag | op->tag;
            h->src = c->id;
            h->dst = op->peer;
            h->route = op->route;
            h->hop = 1;
            h->len = (uint32_t)n;
            h->off = x->st[i].done;
            memcpy(slot + RT_HDR_BYTES, x->buf + op->off + x->st[i].done, n);
            c->out[d]->bytes += n;
            c->out[d]->pkts++;
            x->st[i].done += n;
            if (RT_TRACE(c))
                ftm_trace_op(RT_TRACE(c), c->id, i, op, x->st[i].done - n, x->st[i].done, x->buf);
            publish(c, d);
            moved = 1;
            /* Injected failure, mid-collective (inject.c). */
            if (++c->sent_pkts == c->fail_after) {
                int rc = rt_fire(c);
                if (rc) {
                    if (RT_TRACE(c) && c->rt->killed[c->id])
                        ftm_trace_fail(RT_TRACE(c), c->id);
                    return rc;
                }
            }
        }
    }
    return moved;
}

/* First unfinished op of the step, for the hang report. */
static void note_wait(exec_ctx *x)
{
    ftm_stuck *w = &x->chip->why;
    w->chip = x->chip->id;
    w->phase = x->step->phase ? x->step->phase : "";
    w->step = x->step->index;
    w->wait = FTM_WAIT_NONE;
    for (int i = 0; i < x->step->nops; i++) {
        const ftm_op *op = &x->ops[i];
        if (x->st[i].done >= op->len)
            continue;
        const ftm_route *r = &x->s->routes[op->route];
        w->peer = op->peer;
        w->missing = op->len - x->st[i].done;
        if (op->kind == FTM_OP_RECV) {
            w->wait = FTM_WAIT_RECV;
            w->dir = ftm_dir_opposite(x->s->dirs[r->first + r->nhops - 1]);
        } else {
            w->wait = FTM_WAIT_SEND;
            w->dir = x->s->dirs[r->first];
        }
        return;
    }
}

/* A receive that can only arrive over a dead link (its last hop) that
 * holds nothing more: the chip notices. */
static int recv_dead(exec_ctx *x)
{
    ftm_chip *c = x->chip;
    for (int i = 0; i < x->step->nops; i++) {
        const ftm_op *op = &x->ops[i];
        if (op->kind != FTM_OP_RECV || x->st[i].done >= op->len)
            continue;
        const ftm_route *r = &x->s->routes[op->route];
        int d = ftm_dir_opposite(x->s->dirs[r->first + r->nhops - 1]);
        if (rt_link_dead(c, d, 1) && !rt_mbox_slot_out(c->in[d]))
            return rt_notice(c, d, 1, "receive failed");
    }
    return 0;
}

static int step_done(const exec_ctx *x)
{
    for (int i = 0; i < x->step->nops; i++)
        if (x->st[i].done < x->ops[i].len)
            return 0;
    return 1;
}

/* Sleeps until the doorbell rings after `seen`, or the run is aborted. */
static int wait_bell(exec_ctx *x, uint64_t seen)
{
    ftm_chip *c = x->chip;
    double t0 = RT_TRACE(c) ? ftm_trace_now(RT_TRACE(c)) : 0;
    pthread_mutex_lock(&c->mu);
    note_wait(x);
    c->waiting = 1;
    while (c->bell == seen && !atomic_load(&c->rt->abort))
        pthread_cond_wait(&c->cv, &c->mu);
    c->waiting = 0;
    pthread_mutex_unlock(&c->mu);
    if (RT_TRACE(c))
        ftm_trace_wait(RT_TRACE(c), c->id, t0);
    return atomic_load(&c->rt->abort) ? rt_abort_code(c->rt) : 0;
}

static uint64_t read_bell(ftm_chip *c)
{
    pthread_mutex_lock(&c->mu);
    uint64_t b = c->bell;
    pthread_mutex_unlock(&c->mu);
    return b;
}

int ftm_chip_exec(ftm_chip *chip, const ftm_sched *s, void *buf)
{
    if (chip->id >= s->nchips)
        return FTM_EINVAL;
    const ftm_chip_prog *prog = &s->prog[chip->id];
    int maxops = 0;
    for (int k = 0; k < prog->nsteps; k++)
        if (prog->steps[k].nops > maxops)
            maxops = prog->steps[k].nops;
    if (maxops > chip->op_state_cap) { /* allocated once, reused by every call */
        void *p = realloc(chip->op_state, sizeof(op_state) * (size_t)maxops);
        if (!p)
            return FTM_ENOMEM;
        chip->op_state = p;
        chip->op_state_cap = maxops;
    }
    op_state *st = chip->op_state;
    exec_ctx x = { chip, s, buf, NULL, NULL, st, (uint64_t)(++chip->epoch) << 32 };
    ftm_trace *tr = RT_TRACE(chip);
    if (tr)
        ftm_trace_exec_begin(tr, chip->id, s, &chip->rt->mesh, buf, chip->epoch);
    int rc = 0;
    for (int k = 0; k < prog->nsteps && !rc; k++) {
        if (tr && k > 0)
            ftm_trace_step_end(tr, chip->id, buf);
        if (tr)
            ftm_trace_step_begin(tr, chip->id, k);
        x.step = &prog->steps[k];
        x.ops = prog->ops + x.step->first_op;
        if (x.step->nops)
            memset(st, 0, sizeof *st * (size_t)x.step->nops);
        if ((rc = apply_early(&x)) < 0)
            break;
        rc = 0;
        for (;;) {
            uint64_t seen = read_bell(chip);
            int a = drain_inbound(&x);
            int b = a < 0 ? a : flush_outq(chip);
            int c = b < 0 ? b : push_sends(&x);
            if (a < 0 || b < 0 || c < 0) {
                rc = a < 0 ? a : b < 0 ? b : c;
                break;
            }
            if (step_done(&x))
                break;
            if (!a && !b && !c && ((rc = recv_dead(&x)) || (rc = wait_bell(&x, seen))))
                break;
        }
    }
    if (tr && x.step) /* the last step, or (no snapshot) the one an error cut short */
        ftm_trace_step_end(tr, chip->id, rc ? NULL : buf);
    if (tr)
        ftm_trace_exec_end(tr, chip->id);
    return rc;
}

/* Forwards transit traffic (and keeps early data) until done(chip, arg)
 * holds or the run is aborted: a chip between programs, in a barrier or
 * finished, still carries other chips' traffic. */
static int idle_until(ftm_chip *chip, int (*done)(ftm_chip *, uint64_t), uint64_t arg,
                      const char *what)
{
    ftm_sched none = { 0 };
    exec_ctx x = { chip, &none, NULL, NULL, NULL, NULL, 0 };
    for (;;) {
        uint64_t seen = read_bell(chip);
        if (done(chip, arg))
            return 0;
        int a = drain_inbound(&x);
        int b = a < 0 ? a : flush_outq(chip);
        if (a < 0 || b < 0)
            return a < 0 ? a : b;
        if (a || b)
            continue;
        pthread_mutex_lock(&chip->mu);
        chip->waiting = 1;
        chip->why.chip = chip->id;
        chip->why.wait = FTM_WAIT_DONE;
        chip->why.phase = what;
        chip->why.dir = -1;
        while (chip->bell == seen && !atomic_load(&chip->rt->abort))
            pthread_cond_wait(&chip->cv, &chip->mu);
        chip->waiting = 0;
        pthread_mutex_unlock(&chip->mu);
        /* A barrier that completed still counts, so the step before it is
         * reported even if a failure follows at once. */
        if (atomic_load(&chip->rt->abort))
            return done(chip, arg) ? 0 : rt_abort_code(chip->rt);
    }
}

static int all_finished(ftm_chip *chip, uint64_t unused)
{
    (void)unused;
    return atomic_load(&chip->rt->running) == 0;
}

static int barrier_passed(ftm_chip *chip, uint64_t gen)
{
    return atomic_load(&chip->rt->bar_gen) != gen;
}

int ftm_chip_barrier(ftm_chip *chip)
{
    ftm_rt *rt = chip->rt;
    pthread_mutex_lock(&rt->bar_mu);
    uint64_t gen = atomic_load(&rt->bar_gen);
    int last = ++rt->bar_count == rt->nlocal;
    if (last) {
        rt->bar_count = 0;
        if (!rt->net)
            atomic_store(&rt->bar_gen, gen + 1);
    }
    pthread_mutex_unlock(&rt->bar_mu);
    if (last && rt->net) /* the transport opens it once every process is in */
        rt->net->barrier(rt, gen);
    else if (last)
        rt_wake_all(rt);
    return idle_until(chip, barrier_passed, gen, "barrier");
}

/* After its program a chip forwards until every chip has finished. */
int rt_chip_linger(ftm_chip *chip)
{
    int rc = idle_until(chip, all_finished, 0, "done");
    return rc == FTM_EHANG || rc == FTM_ECHIPDEAD || rc == FTM_ELINKDEAD ? 0 : rc;
}
