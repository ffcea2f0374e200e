/* Readers of whole schedules, in either form (packed or not): the bytes
 * each link carries, the packets a chip sends, and the unpacked copy of a
 * packed schedule. They read through ftm_sched_read_step (sched_pack.c)
 * and build with sched.c, so they sit above both. */
#include "ftmesh/sched.h"
#include "ftmesh/mesh.h"
#include "ftmesh/error.h"
#include "sched_int.h"

#include <stdlib.h>
#include <string.h>

/* Adds a send's bytes to every link of its route. */
static void count_send(const ftm_sched *s, const ftm_mesh *m, const ftm_op *op, uint64_t *lb)
{
    const ftm_route *r = &s->routes[op->route];
    int at = r->src;
    for (int h = 0; h < r->nhops; h++) {
        int d = s->dirs[r->first + h];
        lb[at * FTM_NDIRS + d] += op->len;
        at = ftm_mesh_neighbor(m, at, d);
    }
}

void ftm_sched_link_bytes(const ftm_sched *s, const ftm_mesh *m, uint64_t *link_bytes)
{
    memset(link_bytes, 0, sizeof(uint64_t) * (size_t)m->nchips * FTM_NDIRS);
    ftm_sched_view v = { 0 };
    for (int c = 0; c < s->nchips; c++) {
        ftm_sched_cur cur = { 0 };
        while (ftm_sched_read_step(s, c, &cur, &v) > 0)
            for (int k = 0; k < v.nops; k++)
                if (v.ops[k].kind == FTM_OP_SEND)
                    count_send(s, m, &v.ops[k], link_bytes);
    }
    ftm_sched_view_free(&v);
}

uint64_t ftm_sched_chip_packets(const ftm_sched *s, int chip, size_t pkt)
{
    uint64_t n = 0;
    ftm_sched_view v = { 0 };
    ftm_sched_cur cur = { 0 };
    if (pkt == 0)
        return 0;
    while (ftm_sched_read_step(s, chip, &cur, &v) > 0)
        for (int k = 0; k < v.nops; k++)
            if (v.ops[k].kind == FTM_OP_SEND && s->routes[v.ops[k].route].nhops > 0)
                n += v.ops[k].len / pkt + (v.ops[k].len % pkt != 0); /* no overflow */
    ftm_sched_view_free(&v);
    return n;
}

/* Chip c of s into out, step by step. */
static int unpack_chip(const ftm_sched *s, ftm_sched *out, int c, ftm_sched_view *v)
{
    ftm_sched_cur cur = { 0 };
    int rc = ftm_sched_reserve(out, c, s->prog[c].nsteps, s->prog[c].nops);
    while (!rc && (rc = ftm_sched_read_step(s, c, &cur, v)) > 0) {
        rc = ftm_sched_step(out, c, v->phase, v->index);
        for (int k = 0; k < v->nops && !rc; k++)
            rc = sched_put_op(out, c, &v->ops[k], 0);
    }
    return rc;
}

int ftm_sched_unpack(const ftm_sched *s, ftm_sched *out)
{
    int rc = ftm_sched_init(out, NULL, s->algo, s->nchips, s->bytes);
    if (rc)
        return rc;
    out->fallback = s->fallback;
    ftm_sched_view v = { 0 };
    for (int i = 0; i < s->nroutes && rc >= 0; i++) {
        const ftm_route *r = &s->routes[i];
        rc = ftm_sched_route(out, r->src, r->dst, s->dirs + r->first, r->nhops);
    }
    rc = rc < 0 ? rc : 0;
    for (int c = 0; c < s->nchips && !rc; c++)
        rc = unpack_chip(s, out, c, &v);
    ftm_sched_view_free(&v);
    out->next_tag = s->next_tag;
    if (rc)
        ftm_sched_free(out);
    return rc;
}
