/* What the 2-D tests share (test_2d.c: exactness, test_2d_model.c: the
 * modeled times; test_pod.c): the inputs, the sweep's meshes, the plan
 * check and the pod scenarios.
 * Static inline: each program uses what it needs. */
#ifndef FTMESH_TEST_2D_UTIL_H
#define FTMESH_TEST_2D_UTIL_H

#include <check.h>
#include <stdlib.h>
#include <string.h>
#include "ftmesh/mesh.h"
#include "ftmesh/plan2d.h"
#include "ftmesh/rng.h"
#include "ftmesh/sweep.h"

/* The pod scenario named name (sweep.h's list, scenarios.c: the one place
 * each pod fault is written). */
static inline const ftm_sweep_scenario *pod_scenario(const char *name)
{
    const ftm_sweep_pod *pod = ftm_sweep_pod_data();
    for (int i = 0; i < pod->nscen; i++)
        if (!strcmp(pod->scen[i].name, name))
            return &pod->scen[i];
    ck_abort_msg("no scenario %s", name);
    return NULL;
}

/* Small integers: every float sum over <= 4096 chips is exact. */
static inline float input(int chip, size_t k) { return (float)((int)((chip * 13 + (int)(k % 1000) * 7) % 9) - 4); }

/* Mesh number i of the sweep: sizes 2x2 .. 8x8, open and torus, faults of
 * kind 0 none, 1 random chips, 2 a host, 3 links (both ways and one way),
 * 4 a mix; all drawn from the seed i. Returns 0 if the faults leave the
 * healthy chips connected. */
static inline int sweep_mesh(int i, ftm_mesh *m)
{
    int rows = 2 + i % 7, cols = 2 + (i / 7) % 7, torus = (i / 49) % 2, kind = (i / 98) % 5;
    ck_assert_int_eq(ftm_mesh_init(m, rows, cols, torus), 0);
    uint64_t seed = 1000 + (uint64_t)i;
    int n = rows * cols;
    if (kind == 1 || kind == 4)
        ftm_mesh_fail_random(m, 1 + (int)(ftm_rng_u64(seed, 1, 0, 0, 0) % (uint64_t)(n / 4 + 1)), seed);
    if ((kind == 2 || kind == 4) && rows >= 2 && cols >= 2) {
        int r = (int)(ftm_rng_u64(seed, 2, 0, 0, 0) % (uint64_t)(rows - 1));
        int c = (int)(ftm_rng_u64(seed, 3, 0, 0, 0) % (uint64_t)(cols - 1));
        ftm_mesh_fail_host(m, r, c);
    }
    if (kind == 3 || kind == 4)
        for (int j = 0; j < 3; j++) {
            int a = (int)(ftm_rng_u64(seed, 4, (uint64_t)j, 0, 0) % (uint64_t)n);
            int d = (int)(ftm_rng_u64(seed, 5, (uint64_t)j, 0, 0) % 4);
            int b = ftm_mesh_neighbor(m, a, d);
            if (b >= 0)
                ftm_mesh_fail_link(m, a / cols, a % cols, b / cols, b % cols, j == 1);
        }
    int x, y;
    if (ftm_mesh_healthy_count(m) == 0)
        return -1;
    return ftm_mesh_check_connected(m, &x, &y);
}

/* Every band ring edge follows live links from its chip to the next, and
 * the bands cover every healthy chip exactly once. */
static inline void check_plan(const ftm_mesh *m, const ftm_plan2d *p)
{
    int *seen = calloc((size_t)m->nchips, sizeof(int));
    for (int b = 0; b < p->nbands; b++) {
        const ftm_plan2d_band *bd = &p->bands[b];
        ck_assert_int_eq(bd->fwd.n, bd->n);
        ck_assert_int_eq(bd->rev.n, bd->n);
        for (int i = 0; i < bd->n; i++)
            seen[bd->owners[i]]++;
        for (int r = 0; r < 2; r++) {
            const ftm_ring *g = r ? &bd->rev : &bd->fwd;
            for (int i = 0; i < g->n; i++) {
                int at = g->chips[i];
                ck_assert_int_eq(ftm_mesh_row(m, at) >= bd->row0 && ftm_mesh_row(m, at) < bd->row0 + bd->nrows, 1);
                for (int k = g->path_off[i]; k < g->path_off[i + 1]; k++) {
                    ck_assert(ftm_mesh_link_live(m, at, g->dirs[k]));
                    at = ftm_mesh_neighbor(m, at, g->dirs[k]);
                }
                ck_assert_int_eq(at, g->n > 1 ? g->chips[(i + 1) % g->n] : g->chips[i]);
            }
        }
    }
    for (int c = 0; c < m->nchips; c++)
        ck_assert_int_eq(seen[c], ftm_mesh_alive(m, c) ? 1 : 0);
    free(seen);
}

#endif
