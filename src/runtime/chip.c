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
 *
 * Single copy. A one-hop send over a local link posts a descriptor (the
 * range of the sender's buffer) instead of copying packets; the receiver
 * reduces straight from the sender's memory, as a DMA engine would, and
 * releases it. The send op completes when the descriptor is posted (as an
 * eager send would), so no chip waits for a slower receiver within a
 * step; what keeps the data right is that the sender never writes a range
 * a neighbour may still read: a step whose receives overlap memory not yet
 * read copies that range aside first (the neighbour reads the copy; see
 * rt_expo_bounce_blocking for why it does not wait), and ftm_chip_exec
 * returns only when every exposure is read or copied (the caller owns the
 * buffer again); that wait drains and forwards like any other. The schedule's
 * own rule (the writes of a step never touch the ranges it sends) makes
 * the in-step case safe.
 *
 * Wake-ups (bell.c: the protocol). A chip that found nothing to do arms
 * its bell (reads it, then announces what it would sleep for) and makes one
 * more full pass; only if that pass moved nothing too does it sleep until
 * the bell changes. Whoever makes work for it publishes first and rings
 * only if it announced sleep (rt_poke), so a busy chip costs its
 * neighbours no system call.
 */
#include "rt_internal.h"
#include "ftmesh/error.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>

/* Counts a packet moved, for the watchdog (single writer: no RMW). */
static void count_moved(ftm_chip *c)
{
    uint64_t m = atomic_load_explicit(&c->moved, memory_order_relaxed);
    atomic_store_explicit(&c->moved, m + 1, memory_order_relaxed);
}

int ftm_chip_id(const ftm_chip *chip) { return chip->id; }
ftm_rt *ftm_chip_rt(ftm_chip *chip) { return chip->rt; }

typedef struct exec_ctx {
    ftm_chip *chip;
    const ftm_sched *s;
    unsigned char *buf;
    const ftm_step *step;
    const ftm_op *ops;       /* the step's ops */
    rt_op_state *st;
    uint64_t epoch_tag;      /* epoch << 32 */
    const char *idle;        /* not executing a step: what the chip waits for */
    int hold;                /* HOLD_ALL: at the end, waiting for releases
                                (nothing is delivered) */
    int want;                /* RT_WANT_* the last pass found it waits for */
} exec_ctx;

enum { HOLD_NONE = 0, HOLD_ALL };

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

/* ---- memory exposed by descriptors (expo.c) ------------------------ */

/* The exposures that block x (rt_expo_blocking's terms). */
static const rt_expo *expo_blocking(const exec_ctx *x)
{
    return rt_expo_blocking(x->chip, x->hold == HOLD_ALL, x->ops, x->step ? x->step->nops : 0);
}

static int expo_bounce_blocking(exec_ctx *x)
{
    return rt_expo_bounce_blocking(x->chip, x->hold == HOLD_ALL, x->ops,
                                   x->step ? x->step->nops : 0);
}

/* The receiver has read a descriptor's memory: the sender may reuse it. */
static void expo_release(ftm_chip *c, const rt_hdr *h)
{
    atomic_store_explicit(&h->expo->state, RT_EXPO_DONE, memory_order_release);
    count_moved(c);
    rt_poke_later(c, &c->rt->chips[h->src], RT_WANT_RELEASE, h->len);
}

/* ---- packets -------------------------------------------------------- */

/* Applies a packet (or descriptor) addressed to this chip if the current
 * step expects it, with the schedule's reduction kernel (an int64 sum is
 * exact or FTM_ERANGE, never a silent wrap). Returns 1 if applied, 0 if
 * not, or a negative error. */
static int try_deliver(exec_ctx *x, const unsigned char *pkt)
{
    const rt_hdr *h = (const rt_hdr *)(const void *)pkt;
    if (!x->step || x->hold || h->sched != x->s)
        return 0;
    for (int i = 0; i < x->step->nops; i++) {
        const ftm_op *op = &x->ops[i];
        if (op->kind != FTM_OP_RECV || op->peer != h->src ||
            (x->epoch_tag | op->tag) != h->tag)
            continue;
        const unsigned char *src = h->expo ? rt_expo_claim(h) : h->data;
        int rc = src ? ftm_sched_reduce(x->buf + op->off + h->off, src, h->len, (ftm_red)op->red)
                     : FTM_ENOMEM; /* withdrawn: its sender stopped, out of memory */
        if (h->expo)
            expo_release(x->chip, h);
        x->st[i].done += h->len;
        if (RT_TRACE(x->chip))
            ftm_trace_op(RT_TRACE(x->chip), x->chip->id, i, op, x->st[i].done, x->buf);
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

static void publish(ftm_chip *c, int d, int payload, size_t bytes)
{
    rt_mbox *mb = c->out[d];
    rt_mbox_push(mb, payload);
    count_moved(c);
    if (!mb->local && c->rt->net->pushed)
        c->rt->net->pushed(c->rt, c->id, d);
    else
        rt_poke_later(c, mb->to, RT_WANT_DATA, bytes);
}

/* Copies a packet into link d, counting it. Returns 1 on success, 0 if the
 * link is full. */
static int link_put(ftm_chip *c, int d, const unsigned char *pkt)
{
    rt_mbox *mb = c->out[d];
    unsigned char *slot = rt_mbox_slot_in(mb, 1);
    if (!slot)
        return 0;
    const rt_hdr *h = (const rt_hdr *)(const void *)pkt;
    unsigned char *pay = rt_mbox_payload_in(mb);
    memcpy(slot, pkt, RT_HDR_BYTES);
    memcpy(pay, h->data, h->len);
    ((rt_hdr *)(void *)slot)->data = pay;
    ((rt_hdr *)(void *)slot)->hop++;
    mb->bytes += h->len;
    mb->pkts++;
    if (RT_TRACE(c)) /* link_put carries transit traffic only */
        ftm_trace_forward(RT_TRACE(c), c->id, h->sched, (uint32_t)(h->tag >> 32), h->src,
                          (uint32_t)h->tag, d, h->len);
    publish(c, d, 1, h->len);
    return 1;
}

/* Keeps a packet that cannot move on in the chip's memory: early data (a
 * descriptor's header only: its data stays exposed) or blocked transit. */
static int keep(ftm_chip *c, const unsigned char *pkt, int home)
{
    const rt_hdr *h = (const rt_hdr *)(const void *)pkt;
    rt_pkt *p = pkt_get(c);
    if (!p)
        return FTM_ENOMEM;
    memcpy(p->data, pkt, RT_HDR_BYTES);
    if (!h->expo) { /* a descriptor's data stays in the sender's memory */
        memcpy(p->data + RT_HDR_BYTES, h->data, h->len);
        ((rt_hdr *)(void *)p->data)->data = p->data + RT_HDR_BYTES;
    }
    if (home) {
        p->next = c->early;
        c->early = p;
    } else {
        outq_append(c, next_dir(h), p);
    }
    return 0;
}

/* One packet out of an inbound mailbox: applied, forwarded or kept.
 * 0 or a negative error. */
static int take(exec_ctx *x, const unsigned char *pkt)
{
    ftm_chip *c = x->chip;
    const rt_hdr *h = (const rt_hdr *)(const void *)pkt;
    /* A route may pass its destination on the way (2-D column rings
     * can): the packet is home only at its last hop. */
    int home = h->hop == h->sched->routes[h->route].nhops;
    int kept;
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
    return kept ? 0 : keep(c, pkt, home);
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
        const unsigned char *pkt;
        while ((pkt = rt_mbox_slot_out(mb)) != NULL) {
            const rt_hdr *h = (const rt_hdr *)(const void *)pkt;
            int payload = !h->expo;
            size_t len = h->len;
            int rc = take(x, pkt);
            if (rc < 0)
                return rc;
            rt_mbox_pop(mb, payload);
            rt_poke_later(c, mb->from, RT_WANT_SLOT, len);
            moved = 1;
        }
    }
    return moved;
}

/* Moves queued transit packets onto their links while there is room. */
static int flush_outq(ftm_chip *c, int *want)
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
        if (c->outq_head[d])
            *want |= RT_WANT_SLOT;
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

/* ---- the step's own sends ------------------------------------------- */

/* Fills the header of the next piece of send op i: n bytes at done. */
static rt_hdr *fill_hdr(exec_ctx *x, int i, unsigned char *slot, size_t n)
{
    const ftm_op *op = &x->ops[i];
    rt_hdr *h = (rt_hdr *)(void *)slot;
    h->sched = x->s;
    h->tag = x->epoch_tag | op->tag;
    h->src = x->chip->id;
    h->dst = op->peer;
    h->route = op->route;
    h->hop = 1;
    h->len = n;
    h->off = x->st[i].done;
    h->data = NULL;
    h->expo = NULL;
    return h;
}

/* Bytes and packets of the next piece of send op i: one packet, or (a
 * descriptor) the rest of the op, cut where an armed failure fires so
 * that it strikes after the same packet as on the packet path. */
static size_t piece(const exec_ctx *x, int i, int desc, uint64_t *npk)
{
    const ftm_chip *c = x->chip;
    size_t pb = c->rt->pkt_bytes, n = x->ops[i].len - x->st[i].done;
    if (!desc) {
        *npk = 1;
        return n < pb ? n : pb;
    }
    *npk = (n + pb - 1) / pb;
    if (c->fail_after > c->sent_pkts && c->fail_after - c->sent_pkts < *npk) {
        *npk = c->fail_after - c->sent_pkts;
        n = (size_t)*npk * pb;
    }
    return n;
}

/* Posts the next piece of send op i into link d (slot is free; a
 * descriptor if desc). 0, or FTM_ECHIPDEAD / FTM_ENOMEM. */
static int post(exec_ctx *x, int i, int d, int desc, unsigned char *slot)
{
    ftm_chip *c = x->chip;
    const ftm_op *op = &x->ops[i];
    rt_mbox *mb = c->out[d];
    uint64_t npk;
    size_t n = piece(x, i, desc, &npk);
    rt_hdr *h = fill_hdr(x, i, slot, n);
    const unsigned char *data = x->buf + op->off + x->st[i].done;
    if (desc) {
        rt_expo *e = rt_expo_get(c);
        if (!e)
            return FTM_ENOMEM;
        e->lo = op->off + x->st[i].done;
        e->hi = e->lo + n;
        e->peer = op->peer;
        e->dir = d;
        e->base = data;
        h->data = data;
        h->expo = e;
    } else {
        unsigned char *pay = rt_mbox_payload_in(mb);
        memcpy(pay, data, n);
        h->data = pay;
    }
    mb->bytes += n;
    mb->pkts += npk;
    x->st[i].done += n;
    if (RT_TRACE(c))
        ftm_trace_op(RT_TRACE(c), c->id, i, op, x->st[i].done, x->buf);
    publish(c, d, !desc, n);
    c->sent_pkts += npk;
    if (c->fail_after && c->sent_pkts == c->fail_after) /* injected (inject.c) */
        return rt_fire(c); /* a chip killed records its death in ftm_chip_exec */
    return 0;
}

/* Send i over a route of no hops (a local copy) into its receive, which
 * ftm_sched_xfer put in the same step: done at once, since the schedule
 * keeps a step's writes off the ranges it reads (ftm_sched_exec_data).
 * 1, or an error (FTM_EINVAL: the receive is not in this step). */
static int local_xfer(exec_ctx *x, int i)
{
    const ftm_op *op = &x->ops[i];
    for (int j = 0; j < x->step->nops; j++) {
        const ftm_op *rv = &x->ops[j];
        if (rv->kind != FTM_OP_RECV || rv->tag != op->tag)
            continue;
        x->st[i].done = op->len;
        if (RT_TRACE(x->chip))
            ftm_trace_op(RT_TRACE(x->chip), x->chip->id, i, op, op->len, x->buf);
        int rc = ftm_sched_reduce(x->buf + rv->off, x->buf + op->off, op->len, (ftm_red)rv->red);
        x->st[j].done = rv->len;
        if (RT_TRACE(x->chip))
            ftm_trace_op(RT_TRACE(x->chip), x->chip->id, j, rv, rv->len, x->buf);
        return rc ? rc : 1;
    }
    return FTM_EINVAL;
}

/* Pushes the step's own sends behind queued transit. */
static int push_sends(exec_ctx *x)
{
    ftm_chip *c = x->chip;
    int moved = 0;
    for (int i = 0; i < x->step->nops; i++) {
        const ftm_op *op = &x->ops[i];
        if (op->kind != FTM_OP_SEND)
            continue;
        const ftm_route *r = &x->s->routes[op->route];
        if (r->nhops == 0) { /* a local copy: at once */
            int rc = x->st[i].done < op->len ? local_xfer(x, i) : 0;
            if (rc < 0)
                return rc;
            moved |= rc;
            continue;
        }
        int d = x->s->dirs[r->first];
        if (!c->out[d])
            return FTM_ENOROUTE;
        /* One hop over shared memory: single copy (unless packets_only). */
        int desc = c->rt->single_copy && c->out[d]->local && r->nhops == 1;
        while (x->st[i].done < op->len && !c->outq_head[d]) {
            if (rt_link_dead(c, d, 0))
                return rt_notice(c, d, 0, "send failed");
            unsigned char *slot = rt_mbox_slot_in(c->out[d], !desc);
            if (!slot) {
                x->want |= RT_WANT_SLOT;
                break;
            }
            int rc = post(x, i, d, desc, slot);
            if (rc)
                return rc;
            moved = 1;
        }
    }
    return moved;
}

/* ---- waiting -------------------------------------------------------- */

/* What the chip waits for, for the hang report (under mu). */
static void note_wait(exec_ctx *x)
{
    ftm_stuck *w = &x->chip->why;
    w->chip = x->chip->id;
    w->dir = -1;
    if (x->idle) {
        w->wait = FTM_WAIT_DONE;
        w->phase = x->idle;
        return;
    }
    w->phase = x->step->phase ? x->step->phase : "";
    w->step = x->step->index;
    w->wait = FTM_WAIT_NONE;
    for (int i = 0; !x->hold && i < x->step->nops; i++) {
        const ftm_op *op = &x->ops[i];
        if (x->st[i].done >= op->len)
            continue;
        const ftm_route *r = &x->s->routes[op->route];
        w->peer = op->peer;
        w->missing = op->len - x->st[i].done;
        if (op->kind == FTM_OP_RECV) {
            w->wait = FTM_WAIT_RECV;
            w->dir = r->nhops ? ftm_dir_opposite(x->s->dirs[r->first + r->nhops - 1]) : -1;
        } else {
            w->wait = FTM_WAIT_SEND;
            w->dir = r->nhops ? x->s->dirs[r->first] : -1;
        }
        return;
    }
    const rt_expo *e = expo_blocking(x); /* the step waits for a release */
    if (e) {
        w->wait = FTM_WAIT_SEND;
        w->peer = e->peer;
        w->dir = e->dir;
        w->missing = e->hi - e->lo;
    }
}

/* A receive that can only arrive over a dead link (its last hop) that
 * holds nothing more: the chip notices. */
static int recv_dead(exec_ctx *x)
{
    ftm_chip *c = x->chip;
    for (int i = 0; x->step && !x->hold && i < x->step->nops; i++) {
        const ftm_op *op = &x->ops[i];
        if (op->kind != FTM_OP_RECV || x->st[i].done >= op->len)
            continue;
        const ftm_route *r = &x->s->routes[op->route];
        if (r->nhops == 0) /* local: done with its send */
            continue;
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
static int wait_bell(exec_ctx *x, uint32_t seen)
{
    ftm_chip *c = x->chip;
    double t0 = RT_TRACE(c) ? ftm_trace_now(RT_TRACE(c)) : 0;
    pthread_mutex_lock(&c->mu);
    note_wait(x);
    c->waiting = 1;
    pthread_mutex_unlock(&c->mu);
    rt_bell_wait(c, seen);
    pthread_mutex_lock(&c->mu);
    c->waiting = 0;
    pthread_mutex_unlock(&c->mu);
    if (RT_TRACE(c) && !x->idle)
        ftm_trace_wait(RT_TRACE(c), c->id, t0);
    return atomic_load(&c->rt->abort) ? rt_abort_code(c->rt) : 0;
}

/* The wake-up protocol's chip side, after a pass of the loop that moved
 * something or not: the first idle pass announces sleep and reads the
 * bell, the second sleeps. 0 (look again) or the run's abort code. */
typedef struct nap {
    int armed;
    uint32_t seen;
} nap;

static int doze(exec_ctx *x, nap *n, int moved)
{
    ftm_chip *c = x->chip;
    if (!moved)
        rt_poke_flush(c); /* out of work: the neighbours' turn */
    if (moved || !n->armed) {
        n->armed = !moved;
        if (n->armed)
            n->seen = rt_bell_arm(c, x->want);
        else
            atomic_store_explicit(&c->asleep, 0, memory_order_relaxed);
        return 0;
    }
    int rc = recv_dead(x);
    if (!rc)
        rc = wait_bell(x, n->seen);
    n->armed = 0;
    atomic_store_explicit(&c->asleep, 0, memory_order_relaxed);
    return rc;
}

static void wake_up(ftm_chip *c, nap *n)
{
    if (n->armed)
        atomic_store_explicit(&c->asleep, 0, memory_order_relaxed);
    n->armed = 0;
}

/* Drains and forwards (nothing is delivered) until no exposure blocks x
 * (hold: HOLD_ALL: any exposure). 0 or an error. */
static int settle(exec_ctx *x, int hold)
{
    ftm_chip *c = x->chip;
    nap n = { 0, 0 };
    int rc = 0;
    x->hold = hold;
    for (;;) {
        rt_expo_reap(c);
        if (!expo_blocking(x))
            break;
        x->want = RT_WANT_DATA | RT_WANT_RELEASE;
        int a = drain_inbound(x);
        int b = a < 0 ? a : flush_outq(c, &x->want);
        if ((rc = a < 0 ? a : b) < 0 || (rc = doze(x, &n, a || b)))
            break;
    }
    wake_up(c, &n);
    x->hold = HOLD_NONE;
    return rc;
}

/* Runs step k of the chip's program to its end. 0 or an error. */
static int run_step(exec_ctx *x)
{
    ftm_chip *chip = x->chip;
    int rc = chip->expo_busy ? expo_bounce_blocking(x) : 0;
    if (rc)
        return rc;
    rc = apply_early(x);
    if (rc < 0)
        return rc;
    nap n = { 0, 0 };
    for (;;) {
        x->want = RT_WANT_DATA;
        int a = drain_inbound(x);
        int b = a < 0 ? a : flush_outq(chip, &x->want);
        int c = b < 0 ? b : push_sends(x);
        if ((rc = a < 0 ? a : b < 0 ? b : c) < 0)
            break;
        rc = 0;
        if (step_done(x) || (rc = doze(x, &n, a || b || c)))
            break;
    }
    wake_up(chip, &n);
    return rc;
}

int ftm_chip_exec(ftm_chip *chip, const ftm_sched *s, void *buf)
{
    if (chip->id >= s->nchips || s->packed || s->dry) /* chips read ops in place */
        return FTM_EINVAL;
    const ftm_chip_prog *prog = &s->prog[chip->id];
    int rc = rt_chip_op_room(chip, prog);
    if (rc)
        return rc;
    exec_ctx x = { chip, s, buf, NULL, NULL, chip->op_state, (uint64_t)(++chip->epoch) << 32,
                   NULL, HOLD_NONE, 0 };
    ftm_trace *tr = RT_TRACE(chip);
    if (tr)
        ftm_trace_exec_begin(tr, chip->id, s, &chip->rt->mesh, buf, chip->epoch);
    for (int k = 0; k < prog->nsteps && !rc; k++) {
        if (tr && k > 0)
            ftm_trace_step_end(tr, chip->id, buf);
        if (tr)
            ftm_trace_step_begin(tr, chip->id, k);
        x.step = &prog->steps[k];
        x.ops = prog->ops + x.step->first_op;
        if (x.step->nops)
            memset(x.st, 0, sizeof *x.st * (size_t)x.step->nops);
        rc = run_step(&x);
    }
    /* The caller owns buf again on return: every exposure released, or,
     * when the run stops (a neighbour may then never read what it was
     * offered, or read it only after we return), copied aside. */
    if (!rc && chip->expo_busy && !rt_expo_reap(chip))
        rc = settle(&x, HOLD_ALL);
    if (rc && chip->expo_busy)
        rt_expo_withdraw(chip);
    rt_poke_flush(chip);
    if (rc) /* inside the step it died in */
        rt_trace_death(chip);
    if (tr && x.step) /* the last step, or (no snapshot) the one an error cut short */
        ftm_trace_step_end(tr, chip->id, rc ? NULL : buf);
    if (tr)
        ftm_trace_exec_end(tr, chip->id);
    return rc;
}

/* rt_internal.h: forwarding while waiting (barrier.c's waits). */
int rt_chip_idle_until(ftm_chip *chip, int (*done)(ftm_chip *, uint64_t), uint64_t arg,
                       const char *what)
{
    ftm_sched none = { 0 };
    exec_ctx x = { chip, &none, NULL, NULL, NULL, NULL, 0, what, HOLD_NONE, 0 };
    nap n = { 0, 0 };
    int rc = 0;
    for (;;) {
        if (done(chip, arg))
            break;
        x.want = RT_WANT_DATA;
        int a = drain_inbound(&x);
        int b = a < 0 ? a : flush_outq(chip, &x.want);
        if ((rc = a < 0 ? a : b) < 0)
            break;
        rc = doze(&x, &n, a || b);
        /* A barrier that completed still counts, so the step before it is
         * reported even if a failure follows at once. */
        if (rc) {
            rc = done(chip, arg) ? 0 : rc;
            break;
        }
    }
    wake_up(chip, &n);
    return rc;
}
