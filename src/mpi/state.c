/* The failure state of a run (who died, who noticed what) as one message,
 * so that every rank of a run ends with the same picture of it. */
#include "mpi_int.h"
#include "ftmesh/error.h"

#include <stdlib.h>
#include <string.h>

/* The runtime's notice texts (inject.c, chip.c) travel as their index. */
static const char *const hows[] = { "send failed", "forward failed", "receive failed",
                                    "heartbeat lost" };
enum { NHOWS = sizeof hows / sizeof hows[0], ST_HEAD = 5, ST_NOTICE = 4 };

static int how_index(const char *how)
{
    for (int i = 0; i < NHOWS; i++)
        if (how && strcmp(how, hows[i]) == 0)
            return i;
    return -1;
}

size_t mpi_state_bytes(const ftm_rt *rt)
{
    return sizeof(int32_t) * (ST_HEAD + ST_NOTICE * RT_MAX_NOTICE) + (size_t)rt->mesh.nchips;
}

void mpi_state_pack(const ftm_rt *rt, unsigned char *buf)
{
    ftm_rt *w = (ftm_rt *)rt; /* the lock only */
    int32_t v[ST_HEAD + ST_NOTICE * RT_MAX_NOTICE] = { 0 };
    pthread_mutex_lock(&w->mu);
    v[0] = atomic_load(&rt->died);
    v[1] = atomic_load(&rt->link_seen);
    v[2] = atomic_load(&rt->hung);
    v[3] = atomic_load(&rt->abort);
    v[4] = rt->nnotice;
    for (int i = 0; i < rt->nnotice; i++) {
        const ftm_rt_notice *no = &rt->notice[i];
        int32_t *e = v + ST_HEAD + ST_NOTICE * i;
        e[0] = no->chip;
        e[1] = no->dir;
        e[2] = no->peer;
        e[3] = how_index(no->how);
    }
    memcpy(buf, v, sizeof v);
    memcpy(buf + sizeof v, rt->killed, (size_t)rt->mesh.nchips);
    pthread_mutex_unlock(&w->mu);
}

unsigned mpi_state_sig(const ftm_rt *rt)
{
    ftm_rt *w = (ftm_rt *)rt; /* the lock only */
    unsigned k = 0;
    pthread_mutex_lock(&w->mu); /* chips add notices and deaths under it */
    for (int c = 0; c < rt->mesh.nchips; c++)
        k += rt->killed[c];
    k = k * 65537u + (unsigned)rt->nnotice * 131u;
    pthread_mutex_unlock(&w->mu);
    return k + (unsigned)(atomic_load(&rt->died) + 1) * 7919u +
           (unsigned)atomic_load(&rt->link_seen) * 17u + (unsigned)atomic_load(&rt->hung) * 3u +
           (unsigned)atomic_load(&rt->abort);
}

static void add_notice(ftm_rt *rt, const int32_t *e)
{
    if (e[3] >= 0)
        rt_notice_add(rt, (ftm_rt_notice){ e[0], e[1], e[2], hows[e[3]] });
}

/* Stops the run here (as a hang when hang: rank 0 decided). */
void mpi_stop_run(ftm_rt *rt, int hang)
{
    if (hang)
        atomic_store(&rt->hung, 1);
    atomic_store(&rt->abort, 1);
    rt_wake_all(rt);
    pthread_mutex_lock(&rt->mu);
    pthread_cond_signal(&rt->cv);
    pthread_mutex_unlock(&rt->mu);
}

void mpi_state_merge(mpi_net *n, const unsigned char *buf)
{
    ftm_rt *rt = n->rt;
    int32_t v[ST_HEAD + ST_NOTICE * RT_MAX_NOTICE];
    memcpy(v, buf, sizeof v);
    const unsigned char *killed = buf + sizeof v;
    pthread_mutex_lock(&rt->mu);
    int none = -1;
    if (v[0] >= 0)
        atomic_compare_exchange_strong(&rt->died, &none, v[0]);
    if (v[1])
        atomic_store(&rt->link_seen, 1);
    for (int i = 0; i < v[4] && i < RT_MAX_NOTICE; i++)
        add_notice(rt, v + ST_HEAD + ST_NOTICE * i);
    for (int c = 0; c < rt->mesh.nchips; c++)
        rt->killed[c] |= killed[c];
    pthread_mutex_unlock(&rt->mu);
    if (v[3] && !atomic_load(&rt->abort))
        mpi_stop_run(rt, v[2]);
    else if (v[2] && !atomic_load(&rt->hung))
        mpi_stop_run(rt, 1);
}

void mpi_mark_dead(mpi_net *n, int chip, int dir)
{
    ftm_rt *rt = n->rt;
    rt_mbox *mb = rt->chips[chip].out[dir];
    if (!mb)
        return;
    int a = n->owner[chip], b = n->owner[ftm_mesh_neighbor(&rt->mesh, chip, dir)];
    /* Receiving side of a link from another rank: its marker marks it,
     * after the packets already on the link (as a dying mailbox). */
    if (a == n->rank || b != n->rank)
        atomic_store(&mb->dead, 1);
}

int mpi_queue_kill(mpi_net *n, int chip, int dir, int oneway)
{
    pthread_mutex_lock(&n->bell.mu);
    int rc = 0;
    if (n->nkills + 3 > n->cap_kills) {
        int cap = n->cap_kills ? 2 * n->cap_kills : 24;
        int *k = realloc(n->kills, sizeof *k * (size_t)cap);
        if (k) {
            n->kills = k;
            n->cap_kills = cap;
        } else {
            rc = FTM_ENOMEM;
        }
    }
    if (!rc) {
        n->kills[n->nkills++] = chip;
        n->kills[n->nkills++] = dir;
        n->kills[n->nkills++] = oneway;
    }
    pthread_mutex_unlock(&n->bell.mu);
    return rc;
}
