/* Schedule construction: growable per-chip programs and a route table. */
#include "ftmesh/sched.h"
#include "ftmesh/mesh.h"
#include "ftmesh/error.h"
#include "sched_lib.h"
#include "sched_int.h"
#include "sched_code.h"

#include <limits.h>
#include <stdint.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

void ftm_sched_unwatch(ftm_sched *s)
{
    free(s->wsum);
    s->wsum = NULL;
    s->watch = NULL;
}

/* Chip's bound with a send of route r and len bytes in its open step: 1
 * once it passes the watch's limit (the caller keeps the watch alive
 * until it unwatches s). */
static int watch_send(ftm_sched *s, const ftm_route *r, size_t len, ftm_red red)
{
    const ftm_sched_watch *wt = s->watch;
    double d = wt->floor(wt->ctx, r->nhops, len, r->src == r->dst && red != FTM_RED_COPY);
    double *w = &s->wsum[2 * r->src];
    if (d > w[1])
        w[1] = d;
    return wt->limit < (w[0] + w[1]) * (1 - 1e-9);
}

/* Sets *cap to nc elements of size sz (*p reallocated unless store is 0,
 * as for a dry schedule's steps and ops). */
static int set_cap(const ftm_sched *s, void **p, int *cap, int nc, size_t sz, int store)
{
    if (nc > *cap && sched_room(s, (size_t)(nc - *cap) * sz))
        return FTM_ENOMEM;
    if (store) {
        void *q = realloc(*p, (size_t)nc * sz);
        if (!q)
            return FTM_ENOMEM;
        *p = q;
    }
    sched_acct(s, nc > *cap ? (size_t)(nc - *cap) * sz : 0, nc < *cap ? (size_t)(*cap - nc) * sz : 0);
    *cap = nc;
    return 0;
}

/* Grows *p (elements of size sz) so that it holds at least need elements. */
static int grow(const ftm_sched *s, void **p, int *cap, int need, size_t sz, int store)
{
    if (need <= *cap)
        return 0;
    int nc = *cap ? *cap : 8;
    while (nc < need)
        nc = nc > INT_MAX / 2 ? INT_MAX : nc * 2; /* no int overflow past 2^30 */
    return set_cap(s, p, cap, nc, sz, store);
}

int ftm_sched_init(ftm_sched *s, const ftm_sched_ctx *ctx, const char *algo, int nchips,
                   size_t bytes)
{
    if (nchips < 1 || nchips > FTM_SCHED_MAX_IDS || bytes >= FTM_SCHED_MAX_BYTES)
        return FTM_EINVAL;
    static const ftm_sched_ctx plain = { 0 };
    if (!ctx)
        ctx = &plain;
    memset(s, 0, sizeof *s);
    s->dry = ctx->dry ? SCHED_DRY : SCHED_REAL;
    s->meter = ctx->meter;
    s->cost = ctx->cost;
    if (sched_room(s, sizeof *s + (size_t)nchips * sizeof *s->prog) ||
        !(s->prog = calloc((size_t)nchips, sizeof *s->prog))) {
        memset(s, 0, sizeof *s);
        return FTM_ENOMEM;
    }
    s->algo = algo;
    s->nchips = nchips;
    s->bytes = bytes;
    s->packed = ctx->packed != 0;
    if (ctx->watch && !s->dry) { /* O(chips), like prog: not worth counting apart */
        if (!(s->wsum = calloc(2 * (size_t)nchips, sizeof *s->wsum))) {
            free(s->prog);
            memset(s, 0, sizeof *s);
            return FTM_ENOMEM;
        }
        s->watch = ctx->watch;
    }
    static _Atomic uint64_t serials;
    s->serial = atomic_fetch_add_explicit(&serials, 1, memory_order_relaxed) + 1;
    sched_acct(s, sizeof *s + (size_t)nchips * sizeof *s->prog, 0);
    return 0;
}

ftm_sched_ctx sched_ctx_of(const ftm_sched *s)
{
    return (ftm_sched_ctx){ .dry = s->dry != 0, .packed = s->packed, .watch = s->watch,
                            .meter = s->meter, .cost = s->cost };
}

void sched_clear_chip(ftm_sched *s, int chip)
{
    s->nchange++;
    if (s->wsum)
        s->wsum[2 * chip] = s->wsum[2 * chip + 1] = 0;
    ftm_chip_prog *p = &s->prog[chip];
    sched_acct(s, 0, (size_t)p->cap_steps * sizeof(ftm_step) + (size_t)p->cap_ops * sizeof(ftm_op) +
                         SCHED_CODE(p)->cap_code);
    free(p->steps);
    free(p->ops);
    free(SCHED_CODE(p)->code);
    memset(p, 0, sizeof *p);
}

void ftm_sched_free(ftm_sched *s)
{
    if (s->prog) {
        sched_acct(s, 0, ftm_sched_mem_bytes(s));
        for (int i = 0; i < s->nchips; i++) {
            free(s->prog[i].steps);
            free(s->prog[i].ops);
            free(SCHED_CODE(&s->prog[i])->code);
        }
    }
    free(s->prog);
    free(s->wsum);
    free(s->phases);
    free(s->routes);
    free(s->dirs);
    memset(s, 0, sizeof *s);
}

int ftm_sched_route(ftm_sched *s, int src, int dst, const unsigned char *dirs, int nhops)
{
    if (src < 0 || src >= s->nchips || dst < 0 || dst >= s->nchips || nhops < 0 ||
        (nhops == 0) != (src == dst) || s->nroutes >= FTM_SCHED_MAX_IDS)
        return FTM_EINVAL;
    if (nhops > INT_MAX - s->ndirs)
        return FTM_ENOMEM; /* the hop directions' array is int-indexed */
    for (int h = 0; h < nhops; h++)
        if (dirs[h] >= FTM_NDIRS)
            return FTM_EINVAL;
    s->nchange++;
    if (grow(s, (void **)&s->routes, &s->cap_routes, s->nroutes + 1, sizeof *s->routes, 1) ||
        grow(s, (void **)&s->dirs, &s->cap_dirs, s->ndirs + nhops, 1, 1))
        return FTM_ENOMEM;
    ftm_route *r = &s->routes[s->nroutes];
    r->src = src;
    r->dst = dst;
    r->nhops = nhops;
    r->first = s->ndirs;
    if (nhops)
        memcpy(s->dirs + s->ndirs, dirs, (size_t)nhops);
    s->ndirs += nhops;
    return s->nroutes++;
}

int sched_hop_route(ftm_sched *s, int *cache, int a, int d, int b)
{
    int *id = &cache[a * FTM_NDIRS + d];
    if (*id < 0) {
        unsigned char dir = (unsigned char)d;
        *id = ftm_sched_route(s, a, b, &dir, 1);
    }
    return *id;
}

int ftm_sched_step(ftm_sched *s, int chip, const char *phase, int index)
{
    if (chip < 0 || chip >= s->nchips)
        return FTM_EINVAL;
    s->nchange++;
    if (s->wsum) { /* the open step closes: its longest send joins the sum */
        s->wsum[2 * chip] += s->wsum[2 * chip + 1];
        s->wsum[2 * chip + 1] = 0;
    }
    if (s->packed)
        return sched_pack_step(s, chip, phase, index);
    ftm_chip_prog *p = &s->prog[chip];
    if (grow(s, (void **)&p->steps, &p->cap_steps, p->nsteps + 1, sizeof *p->steps, !s->dry))
        return FTM_ENOMEM;
    if (s->dry) {
        p->nsteps++;
        return 0;
    }
    ftm_step *st = &p->steps[p->nsteps++];
    st->first_op = p->nops;
    st->nops = 0;
    st->phase = phase;
    st->index = index;
    return 0;
}

/* Sets *cap to exactly need (need > *cap) without the doubling. */
static int grow_exact(const ftm_sched *s, void **p, int *cap, int need, size_t sz)
{
    return need <= *cap ? 0 : set_cap(s, p, cap, need, sz, !s->dry);
}

int ftm_sched_reserve(ftm_sched *s, int chip, int nsteps, int nops)
{
    if (chip < 0 || chip >= s->nchips || nsteps < 0 || nops < 0)
        return FTM_EINVAL;
    ftm_chip_prog *p = &s->prog[chip];
    if (nsteps > INT_MAX - p->nsteps || nops > INT_MAX - p->nops)
        return FTM_ENOMEM;
    if (s->packed)
        return 0; /* sizes unknown before the ops are encoded */
    if (grow_exact(s, (void **)&p->steps, &p->cap_steps, p->nsteps + nsteps, sizeof *p->steps) ||
        grow_exact(s, (void **)&p->ops, &p->cap_ops, p->nops + nops, sizeof *p->ops))
        return FTM_ENOMEM;
    return 0;
}

static int add_op(ftm_sched *s, int chip, const ftm_op *op, int lane)
{
    ftm_chip_prog *p = &s->prog[chip];
    if (p->nsteps == 0)
        return FTM_EINVAL; /* no open step */
    s->nchange++;
    if (s->packed) {
        int rc = sched_pack_op(s, chip, op, lane);
        p->nops += !rc;
        if (!rc && SCHED_CODE(p)->cur_nops > s->max_step_ops)
            s->max_step_ops = SCHED_CODE(p)->cur_nops;
        return rc;
    }
    if (grow(s, (void **)&p->ops, &p->cap_ops, p->nops + 1, sizeof *p->ops, !s->dry))
        return FTM_ENOMEM;
    if (s->dry) {
        p->nops++;
        p->dry_used = p->nsteps;
        return 0;
    }
    p->ops[p->nops++] = *op;
    int n = ++p->steps[p->nsteps - 1].nops;
    if (n > s->max_step_ops)
        s->max_step_ops = n;
    return 0;
}

int sched_put_op(ftm_sched *s, int chip, const ftm_op *op, int lane)
{
    if (chip < 0 || chip >= s->nchips || op->route >= (unsigned)s->nroutes)
        return FTM_EINVAL;
    return add_op(s, chip, op, lane);
}

int ftm_sched_xfer(ftm_sched *s, int route, size_t soff, size_t doff, size_t len, ftm_red red)
{
    if (route < 0 || route >= s->nroutes || len > s->bytes || soff > s->bytes - len ||
        doff > s->bytes - len) /* (no soff + len: it could wrap) */
        return FTM_EINVAL;
    size_t el = ftm_sched_red_elem_size(red); /* a sum takes whole, aligned elements */
    if (red != FTM_RED_COPY && (soff % el || doff % el || len % el))
        return FTM_EINVAL;
    if (len == 0)
        return 0;
    const ftm_route *r = &s->routes[route];
    if (r->nhops == 0 && soff < doff + len && doff < soff + len)
        return FTM_EINVAL; /* a local copy onto itself */
    if (s->prog[r->src].nsteps == 0 || s->prog[r->dst].nsteps == 0)
        return FTM_EINVAL; /* checked before the send goes in: no half transfer */
    if (s->next_tag == UINT32_MAX)
        return FTM_ENOMEM; /* tags are 32-bit */
    ftm_op snd = { .off = soff, .peer = (unsigned)r->dst, .len = len, .route = (unsigned)route,
                   .tag = s->next_tag, .kind = FTM_OP_SEND, .red = (uint8_t)red };
    ftm_op rcv = snd;
    rcv.off = doff;
    rcv.peer = (unsigned)r->src;
    rcv.kind = FTM_OP_RECV;
    int rc = add_op(s, r->src, &snd, 0);
    if (!rc)
        rc = add_op(s, r->dst, &rcv, 0);
    if (!rc)
        s->next_tag++;
    if (!rc && s->wsum && watch_send(s, r, len, red))
        rc = FTM_ESTOPPED;
    return rc;
}

/* Shrinks *p (cap elements of size sz) to n > 0 elements; keeps it when
 * realloc fails (the capacity is only a hint then). */
static void shrink(const ftm_sched *s, void **p, int *cap, int n, size_t sz, int store)
{
    if (n > 0 && n < *cap)
        (void)set_cap(s, p, cap, n, sz, store);
}

void ftm_sched_trim(ftm_sched *s)
{
    s->nchange++;
    for (int i = 0; i < s->nchips; i++) {
        ftm_chip_prog *p = &s->prog[i];
        if (s->packed) {
            sched_pack_trim(s, p);
            continue;
        }
        if (s->dry)
            p->nsteps = p->dry_used;
        while (!s->dry && p->nsteps > 0 && p->steps[p->nsteps - 1].nops == 0)
            p->nsteps--;
        shrink(s, (void **)&p->steps, &p->cap_steps, p->nsteps, sizeof *p->steps, !s->dry);
        shrink(s, (void **)&p->ops, &p->cap_ops, p->nops, sizeof *p->ops, !s->dry);
    }
    shrink(s, (void **)&s->routes, &s->cap_routes, s->nroutes, sizeof *s->routes, 1);
    shrink(s, (void **)&s->dirs, &s->cap_dirs, s->ndirs, 1, 1);
}

int sched_dry_fill(ftm_sched *s, int chip, int nsteps, int nops, int used)
{
    if (!s->dry || chip < 0 || chip >= s->nchips || s->prog[chip].nsteps || s->prog[chip].nops ||
        nsteps < 0 || nops < 0 || used < 0 || used > nsteps)
        return FTM_EINVAL;
    int rc = ftm_sched_reserve(s, chip, nsteps, nops);
    if (!rc) {
        s->prog[chip].nsteps = nsteps;
        s->prog[chip].nops = nops;
        s->prog[chip].dry_used = used;
    }
    return rc;
}

void ftm_sched_block(size_t count, int p, int b, size_t *first, size_t *n)
{
    if (p < 1 || b < 0) {
        *first = *n = 0;
        return;
    }
    size_t q = count / (size_t)p, r = count % (size_t)p, ub = (size_t)b;
    *n = q + (ub < r ? 1 : 0);
    *first = ub * q + (ub < r ? ub : r);
}

int ftm_sched_block_of(size_t count, int p, size_t x)
{
    if (p < 1 || x >= count)
        return -1;
    size_t q = count / (size_t)p, r = count % (size_t)p;
    if (x < r * (q + 1))
        return (int)(x / (q + 1));
    return (int)(r + (x - r * (q + 1)) / q);
}

size_t ftm_sched_red_elem_size(ftm_red red)
{
    switch (red) {
    case FTM_RED_SUM_F32: return 4;
    case FTM_RED_SUM_I64: return 8;
    default: return 1;
    }
}

int ftm_sched_reduce(void *dst, const void *src, size_t len, ftm_red red)
{
    if (red == FTM_RED_SUM_F32) {
        float *d = dst;
        const float *x = src;
        for (size_t i = 0; i < len / 4; i++)
            d[i] += x[i];
    } else if (red == FTM_RED_SUM_I64) {
        int64_t *d = dst;
        const int64_t *x = src;
        for (size_t i = 0; i < len / 8; i++)
            if (__builtin_add_overflow(d[i], x[i], &d[i]))
                return FTM_ERANGE;
    } else {
        memcpy(dst, src, len);
    }
    return 0;
}
