/* Injected failures: chips and hosts that die (a health monitor tells
 * everyone at once), links that die silently and are noticed by the chips
 * that next need them (see include/ftmesh/runtime.h). */
#include "rt_internal.h"
#include "ftmesh/error.h"

#include <string.h>

/* A total order of notices, the same in every process. */
static int notice_cmp(const ftm_rt_notice *a, const ftm_rt_notice *b)
{
    if (a->chip != b->chip)
        return a->chip < b->chip ? -1 : 1;
    if (a->dir != b->dir)
        return a->dir < b->dir ? -1 : 1;
    return strcmp(a->how, b->how);
}

void rt_notice_add(ftm_rt *rt, ftm_rt_notice nt)
{
    int most = 0;
    for (int i = 0; i < rt->nnotice; i++) {
        if (notice_cmp(&rt->notice[i], &nt) == 0)
            return;
        if (notice_cmp(&rt->notice[i], &rt->notice[most]) > 0)
            most = i;
    }
    if (rt->nnotice < RT_MAX_NOTICE)
        rt->notice[rt->nnotice++] = nt;
    else if (notice_cmp(&nt, &rt->notice[most]) < 0)
        rt->notice[most] = nt;
}

int rt_chip_kill_chips(ftm_chip *self, const int *chips, int n)
{
    ftm_rt *rt = self->rt;
    pthread_mutex_lock(&rt->mu);
    for (int i = 0; i < n && i < 4; i++) {
        if (chips[i] < 0 || chips[i] >= rt->mesh.nchips)
            continue;
        rt->killed[chips[i]] = 1;
        int none = -1;
        atomic_compare_exchange_strong(&rt->died, &none, chips[i]);
    }
    rt_notice_add(rt, (ftm_rt_notice){ -1, -1, -1, "heartbeat lost" });
    pthread_mutex_unlock(&rt->mu);
    atomic_store(&rt->abort, 1);
    rt_wake_all(rt);
    return FTM_ECHIPDEAD;
}

int ftm_rt_kill_link(ftm_rt *rt, int chip, int dir, int oneway)
{
    if (chip < 0 || chip >= rt->mesh.nchips || dir < 0 || dir >= FTM_NDIRS)
        return FTM_EINVAL;
    int nb = ftm_mesh_neighbor(&rt->mesh, chip, dir), back = ftm_dir_opposite(dir);
    if (nb < 0)
        return FTM_EINVAL;
    ftm_chip *a = &rt->chips[chip], *b = &rt->chips[nb];
    /* A both-ways kill of a link dead one way already (no mailbox that
     * way) still kills the other way. */
    int fwd = a->out[dir] != NULL, rev = !oneway && b->out[back] != NULL;
    if (!fwd && !rev)
        return FTM_EINVAL;
    if (rt->net) /* marks the links on the sending side, in every process */
        rt->net->link_killed(rt, chip, dir, oneway);
    if (fwd && !rt->net)
        atomic_store(&a->out[dir]->dead, 1);
    if (rev && !rt->net)
        atomic_store(&b->out[back]->dead, 1);
    /* Wake both ends: a chip waiting on this link should look again. */
    rt_wake(a);
    rt_wake(b);
    return 0;
}

int ftm_rt_kill_chip_after(ftm_rt *rt, int chip, uint64_t pkts)
{
    if (chip < 0 || chip >= rt->mesh.nchips || !ftm_mesh_alive(&rt->mesh, chip))
        return FTM_EINVAL;
    ftm_chip *c = &rt->chips[chip];
    memset(&c->pending, 0, sizeof c->pending);
    c->pending.nchips = 1;
    c->pending.chips[0] = chip;
    c->fail_after = pkts;
    return 0;
}

int ftm_chip_kill_chips_after(ftm_chip *self, uint64_t pkts, const int *chips, int n)
{
    if (pkts < 1 || n < 1 || n > 4)
        return FTM_EINVAL;
    for (int i = 0; i < n; i++)
        if (chips[i] < 0 || chips[i] >= self->rt->mesh.nchips)
            return FTM_EINVAL;
    memset(&self->pending, 0, sizeof self->pending);
    self->pending.nchips = n;
    memcpy(self->pending.chips, chips, sizeof(int) * (size_t)n);
    self->fail_after = self->sent_pkts + pkts;
    return 0;
}

int ftm_chip_kill_link_after(ftm_chip *self, uint64_t pkts, int chip, int dir, int oneway)
{
    if (pkts < 1 || chip < 0 || chip >= self->rt->mesh.nchips || dir < 0 || dir >= FTM_NDIRS ||
        ftm_mesh_neighbor(&self->rt->mesh, chip, dir) < 0) /* no link there (open mesh edge) */
        return FTM_EINVAL;
    memset(&self->pending, 0, sizeof self->pending);
    self->pending.link_chip = chip;
    self->pending.link_dir = dir;
    self->pending.oneway = oneway;
    self->fail_after = self->sent_pkts + pkts;
    return 0;
}

int rt_chip_disarm(ftm_chip *self)
{
    int armed = self->fail_after > self->sent_pkts;
    self->fail_after = 0;
    return armed;
}

void rt_trace_death(ftm_chip *c)
{
    if (!RT_TRACE(c) || c->fail_traced)
        return;
    pthread_mutex_lock(&c->rt->mu);
    int killed = c->rt->killed[c->id];
    pthread_mutex_unlock(&c->rt->mu);
    if (killed) {
        ftm_trace_fail(RT_TRACE(c), c->id);
        c->fail_traced = 1;
    }
}

int rt_fire(ftm_chip *c)
{
    c->fail_after = 0;
    rt_action a = c->pending;
    if (a.nchips)
        return rt_chip_kill_chips(c, a.chips, a.nchips);
    /* armed on a link that exists (ftm_chip_kill_link_after); dead by now
     * (with a chip at its end) it has nothing left to kill */
    ftm_rt_kill_link(c->rt, a.link_chip, a.link_dir, a.oneway);
    return 0;
}

int rt_link_dead(const ftm_chip *c, int d, int inbound)
{
    const rt_mbox *mb = inbound ? c->in[d] : c->out[d];
    return mb && atomic_load(&mb->dead);
}

int rt_notice(ftm_chip *c, int d, int inbound, const char *how)
{
    ftm_rt *rt = c->rt;
    /* the chip at the other end, either way (its mailbox may end at a
     * transport, src/mpi) */
    (void)inbound;
    int peer = ftm_mesh_neighbor(&rt->mesh, c->id, d);
    pthread_mutex_lock(&rt->mu);
    rt_notice_add(rt, (ftm_rt_notice){ c->id, d, peer, how });
    pthread_mutex_unlock(&rt->mu);
    atomic_store(&rt->link_seen, 1);
    atomic_store(&rt->abort, 1);
    rt_wake_all(rt);
    return FTM_ELINKDEAD;
}

int ftm_rt_killed_chips(const ftm_rt *rt, int *out, int max)
{
    int k = 0;
    for (int c = 0; c < rt->mesh.nchips; c++)
        if (rt->killed[c] && k < max)
            out[k++] = c;
    return k;
}

int ftm_rt_killed_links(const ftm_rt *rt, int *chip, int *dir, int max)
{
    int k = 0;
    for (int c = 0; c < rt->mesh.nchips; c++)
        for (int d = 0; d < FTM_NDIRS; d++)
            if (rt->chips[c].out[d] && atomic_load(&rt->chips[c].out[d]->dead) && k < max) {
                chip[k] = c;
                dir[k++] = d;
            }
    return k;
}

int ftm_rt_notices(const ftm_rt *rt, ftm_rt_notice *out, int max)
{
    int k = rt->nnotice < max ? rt->nnotice : max;
    memcpy(out, rt->notice, sizeof *out * (size_t)k);
    return k;
}
