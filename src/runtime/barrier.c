/* Barriers between chips of a run (ftm_chip_barrier, with a reduction of a
 * few words), and a chip's wait after its program (rt_chip_linger): both
 * keep forwarding other chips' traffic while they wait
 * (rt_chip_idle_until, chip.c). */
#include "rt_internal.h"
#include "ftmesh/error.h"

#include <string.h>

static int all_finished(ftm_chip *chip, uint64_t unused)
{
    (void)unused;
    return atomic_load(&chip->rt->running) == 0;
}

static int barrier_passed(ftm_chip *chip, uint64_t gen)
{
    return atomic_load(&chip->rt->bar_gen) != gen;
}

void rt_bar_combine(int64_t *acc, const int64_t *v, int nsum, int nmax)
{
    for (int i = 0; i < nsum; i++) /* wraps as two's complement, never undefined */
        acc[i] = (int64_t)((uint64_t)acc[i] + (uint64_t)v[i]);
    for (int i = nsum; i < nsum + nmax; i++)
        acc[i] = v[i] > acc[i] ? v[i] : acc[i];
}

int ftm_chip_barrier_reduce(ftm_chip *chip, int64_t *v, int nsum, int nmax)
{
    ftm_rt *rt = chip->rt;
    if (nsum < 0 || nmax < 0 || nsum > FTM_BARRIER_WORDS || nmax > FTM_BARRIER_WORDS - nsum)
        return FTM_EINVAL;
    int nw = nsum + nmax;
    if (nw && !v)
        return FTM_EINVAL;
    pthread_mutex_lock(&rt->bar_mu);
    uint64_t gen = atomic_load(&rt->bar_gen);
    int64_t *acc = rt->bar_acc[gen & 1];
    if (rt->bar_count == 0) { /* the first local arrival of this barrier */
        if (nw)
            memcpy(acc, v, sizeof *acc * (size_t)nw);
        rt->bar_nsum = nsum;
        rt->bar_nmax = nmax;
    } else if (nw) {
        rt_bar_combine(acc, v, nsum, nmax);
    }
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
    int rc = rt_chip_idle_until(chip, barrier_passed, gen, "barrier");
    if (!rc && nw)
        memcpy(v, acc, sizeof *acc * (size_t)nw);
    return rc;
}

int ftm_chip_barrier(ftm_chip *chip)
{
    return ftm_chip_barrier_reduce(chip, NULL, 0, 0);
}

/* After its program a chip forwards until every chip has finished. */
int rt_chip_linger(ftm_chip *chip)
{
    int rc = rt_chip_idle_until(chip, all_finished, 0, "done");
    return rc == FTM_EHANG || rc == FTM_ECHIPDEAD || rc == FTM_ELINKDEAD ? 0 : rc;
}
