/* Ring allreduce over the router's ring, and its bidirectional variant.
 *
 * Reduce-scatter, then all-gather (Open MPI coll_base_allreduce.c's ring,
 * rebuilt here as a schedule). With n chips the buffer is split into n
 * balanced blocks; position i of the ring sends to position i+1:
 *
 *   reduce-scatter step k (k = 0 .. n-2): i sends block (i - k) mod n,
 *       i+1 adds it into its copy of that block;
 *   all-gather step k (k = 0 .. n-2):     i sends block (i + 1 - k) mod n,
 *       i+1 overwrites its copy.
 * (In ftm_allreduce_ring_step's terms: position i owns block (i + 1) mod n,
 * ftm_allreduce_ring_owned_balanced.)
 *
 *   n = 3, blocks a b c; "a+" = partly summed, "A" = complete
 *            chip0   chip1   chip2
 *   rs k=0   a->     b->     c->        1 gets a+, 2 gets b+, 0 gets c+
 *   rs k=1   c+->    a+->    b+->       1 has A, 2 has B, 0 has C
 *   ag k=0   C->     A->     B->        ... copies travel on
 *   ag k=1   B->     C->     A->        everyone has A B C
 *
 * Each chip moves 2(n-1)/n of the buffer. A ring edge that is a detour is
 * just a longer route: the chips on it forward the blocks.
 */
#include "ftmesh/collective.h"
#include "ftmesh/router.h"
#include "ftmesh/error.h"
#include "core/util.h"
#include "pieces.h"

#include <stdlib.h>

static const char *const PH_RS = "reduce-scatter";
static const char *const PH_AG = "all-gather";


int ftm_allreduce_ring_step(ftm_sched *s, const ftm_ring_owned *r, size_t elem, ftm_red red, int k)
{
    int n = r->n;
    if (n < 2 || k < 0 || k >= ftm_ring_nsteps(n))
        return n < 2 ? 0 : FTM_EINVAL;
    int rs = k < n - 1, kk = rs ? k : k - (n - 1);
    size_t split = coll_pieces_split(s->cost, elem);
    for (int i = 0; i < n; i++) {
        int b = rs ? core_mod(i - kk - 1, n) : core_mod(i - kk, n), to = (i + 1) % n;
        for (int j = r->ro[b]; j < r->ro[b + 1]; j++) {
            size_t f = r->rf[j], len = r->rn[j];
            int valid = !r->vf || (f >= r->vf[to] && f + len <= r->vf[to] + r->vn[to]);
            int rc = coll_xfer(s, r->route[i], f, len, elem, rs && valid ? red : FTM_RED_COPY,
                               split);
            if (rc)
                return rc;
        }
    }
    return 0;
}

void ftm_allreduce_ring_owned_balanced(int n, size_t first, size_t count, int *ro, size_t *rf, size_t *rn)
{
    for (int i = 0; i < n; i++) {
        ftm_sched_block(count, n, (i + 1) % n, &rf[i], &rn[i]);
        rf[i] += first;
        ro[i] = i;
    }
    ro[n] = n;
}

/* Registers the ring's edges as routes; route[i] gets edge i's id. */
static int add_ring_routes(ftm_sched *s, const ftm_ring *r, int *route)
{
    for (int i = 0; i < r->n; i++) {
        int a = r->chips[i], b = r->chips[(i + 1) % r->n];
        if (r->n == 1)
            b = a;
        int id = ftm_sched_route(s, a, b, r->dirs + r->path_off[i],
                                 r->path_off[i + 1] - r->path_off[i]);
        if (id < 0)
            return id;
        route[i] = id;
    }
    return 0;
}

/* Opens step k (of a 2(n-1)-step ring allreduce) on every chip of ring r. */
static int open_steps(ftm_sched *s, const ftm_ring *r, int k)
{
    int n = r->n;
    const char *ph = k < n - 1 ? PH_RS : PH_AG;
    int idx = k < n - 1 ? k : k - (n - 1);
    for (int i = 0; i < n; i++) {
        int rc = ftm_sched_step(s, r->chips[i], ph, idx);
        if (rc)
            return rc;
    }
    return 0;
}

/* Builds ring (nrings == 1) or bidir (nrings == 2: the buffer's first half
 * on the forward ring, the second half on the counter-rotating ring, in the
 * same steps so both directions of every link carry data at once). */
static int build_rings(ftm_sched *s, const ftm_sched_ctx *ctx, const ftm_mesh *m, size_t count,
                       ftm_red red, int nrings, const char *algo)
{
    ftm_ring ring[2] = { { 0 } };
    int *route[2] = { NULL, NULL }, *ro[2] = { NULL, NULL };
    size_t *rf[2] = { NULL, NULL }, *rn[2] = { NULL, NULL };
    size_t elem = ftm_sched_red_elem_size(red);
    int rc = ftm_sched_init(s, ctx, algo, m->nchips, count * elem);
    if (rc)
        return rc;
    rc = ftm_router_ring(m, &ring[0]);
    if (!rc && nrings == 2)
        rc = ftm_router_reverse(m, &ring[0], &ring[1]);
    int n = ring[0].n;
    size_t half = nrings == 2 ? (count + 1) / 2 : count;
    ftm_ring_owned own[2];
    for (int j = 0; j < nrings && !rc; j++) {
        size_t nn = (size_t)n + 1;
        route[j] = malloc(sizeof(int) * nn);
        ro[j] = malloc(sizeof(int) * nn);
        rf[j] = malloc(sizeof(size_t) * nn);
        rn[j] = malloc(sizeof(size_t) * nn);
        rc = route[j] && ro[j] && rf[j] && rn[j] ? add_ring_routes(s, &ring[j], route[j])
                                                 : FTM_ENOMEM;
        if (!rc)
            ftm_allreduce_ring_owned_balanced(n, j ? half : 0, j ? count - half : half, ro[j], rf[j],
                                    rn[j]);
        own[j] = (ftm_ring_owned){ n, route[j], ro[j], rf[j], rn[j], NULL, NULL };
    }
    /* Exact room: every ring chip sends and receives once per ring and step. */
    for (int i = 0; i < n && !rc; i++)
        rc = ftm_sched_reserve(s, ring[0].chips[i], ftm_ring_nsteps(n),
                               2 * nrings * ftm_ring_nsteps(n));
    for (int k = 0; !rc && k < ftm_ring_nsteps(n); k++) {
        rc = open_steps(s, &ring[0], k);
        for (int j = 0; j < nrings && !rc; j++)
            rc = ftm_allreduce_ring_step(s, &own[j], elem, red, k);
    }
    for (int j = 0; j < 2; j++) {
        free(route[j]);
        free(ro[j]);
        free(rf[j]);
        free(rn[j]);
        ftm_router_ring_free(&ring[j]);
    }
    if (rc)
        ftm_sched_free(s);
    return rc;
}

int ftm_allreduce_ring_build(ftm_sched *s, const ftm_sched_ctx *ctx, const ftm_mesh *m,
                             size_t count, ftm_red red)
{
    return build_rings(s, ctx, m, count, red, 1, "ring");
}

int ftm_allreduce_bidir_build(ftm_sched *s, const ftm_sched_ctx *ctx, const ftm_mesh *m,
                              size_t count, ftm_red red)
{
    return build_rings(s, ctx, m, count, red, 2, "bidir");
}
