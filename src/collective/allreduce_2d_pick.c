/* The 2-D family's picker: each registry entry of the family chooses
 * among an explicit list of candidate schedules by modeled time (the
 * build's cost parameters, ftm_sched_ctx.cost), in this order:
 *
 *   name           candidates                                    last
 *   2d             2d's own (allreduce_2d.c)                     ring check
 *   2d-concurrent  2d-concurrent's own (allreduce_2d_conc.c)     ring check
 *   2d-lines       2d-concurrent's own, then 2d-lines' variants  ring check
 *                  (allreduce_2d_lines.c): one-way whole rows,
 *                  two-way, and both again with the other row
 *                  pass count, each only where the one before
 *                  it says it differs (ar2d_lines_found); where
 *                  no row is a line, two-sided whole rows (with
 *                  each pass count)
 *
 * Among 2d-lines' variants ties keep the earlier, and against
 * 2d-concurrent's schedule 2d-lines' own. The ring check
 * (allreduce_2d_fallback.c, ar2d_build_checked) is every list's last
 * candidate: on small, thin or crowded meshes the 1-D ring's schedule
 * where it models faster. The schedule kept records which won: its name
 * (ftm_sched.algo: "2d", "2d-concurrent", "2d-lines" or "ring") and, when
 * it is not the asked algorithm's own, why (ftm_sched.fallback). Nothing
 * here builds transfers; every candidate is built in the caller's
 * context (ftm_sched_ctx), so no choice depends on how schedules are
 * stored. */
#include "ftmesh/collective.h"
#include "ftmesh/costmodel.h"
#include "ftmesh/error.h"
#include "ftmesh/test_hooks.h"
#include "allreduce_2d_int.h"
#include "keep.h"
#include "pieces.h"

#include <string.h>

int ftm_allreduce_2d_lines_build_k(ftm_sched *s, const ftm_sched_ctx *ctx, const ftm_mesh *m,
                                   size_t count, ftm_red red, int k)
{
    return ar2d_build_lines(s, ctx, m, count, red, k);
}

int ftm_allreduce_2d_lines_build_split(ftm_sched *s, const ftm_sched_ctx *ctx, const ftm_mesh *m,
                                       size_t count, ftm_red red, int k, size_t split_at)
{
    ar2d_lines_variant v = { k, split_at, 1, 0, 0 };
    return ar2d_build_lines_variant(s, ctx, m, count, red, &v, NULL);
}


/* Builds variant v into b and keeps the faster of it and *s (rs: how
 * *s's build ended); found as ar2d_build_lines_variant's. */
static int try_variant(ftm_sched *s, int rs, const ftm_sched_ctx *ctx, const ftm_mesh *m,
                       size_t count, ftm_red red, const ar2d_lines_variant *v,
                       ar2d_lines_found *found)
{
    if (rs && rs != FTM_ESTOPPED)
        return rs;
    ftm_sched b;
    int rb = ar2d_build_lines_variant(&b, ctx, m, count, red, v, found);
    return coll_keep_built(s, rs, &b, rb, m);
}

/* With one-way whole rows where they apply, and, if they did, also
 * without, keeping the faster (measured, ResNet-50 size: 32x32 2.4-4.0%
 * faster one-way, 16x32 1-14% slower); and so again with the other pass
 * count where there is one. Where no row is a line (a healthy torus),
 * also with whole rows as two-sided rings (fewer steps; 2% faster on
 * the healthy 16x32 and 32x32 tori at ResNet-50 size). */
int ar2d_build_lines(ftm_sched *s, const ftm_sched_ctx *ctx, const ftm_mesh *m, size_t count,
                     ftm_red red, int k)
{
    size_t sp = coll_pieces_split(ctx ? ctx->cost : NULL, ftm_sched_red_elem_size(red));
    /* the candidates, in order: each after the first only where the one
     * before it says it differs */
    const ar2d_lines_variant one_way = { k, sp, 1, 0, 0 }, two_way = { k, sp, 0, 0, 0 },
                             other_one_way = { k, sp, 1, 1, 0 }, other_two_way = { k, sp, 0, 1, 0 },
                             two_sided = { k, sp, 0, 0, 1 }, other_two_sided = { k, sp, 0, 1, 1 };
    ar2d_lines_found got = { 0 }, alt = { 0 };
    int rc = ar2d_build_lines_variant(s, ctx, m, count, red, &one_way, &got);
    if (got.one_way_rows)
        rc = try_variant(s, rc, ctx, m, count, red, &two_way, NULL);
    if (got.other_passes)
        rc = try_variant(s, rc, ctx, m, count, red, &other_one_way, &alt);
    if (alt.one_way_rows)
        rc = try_variant(s, rc, ctx, m, count, red, &other_two_way, NULL);
    if (got.no_lines)
        rc = try_variant(s, rc, ctx, m, count, red, &two_sided, NULL);
    if (got.no_lines && got.other_passes)
        rc = try_variant(s, rc, ctx, m, count, red, &other_two_sided, NULL);
    return rc;
}


/* 2d-lines' own schedule, or 2d-concurrent's (algo "2d-concurrent", its
 * fallback saying why) where that models faster (measured: rows cut twice at ResNet-50 size, 16x32, two
 * hosts in the same rows, 1.957 against 1.581 ms) or where lines do not
 * apply (no usable column, a row whose segments have no helper row, a
 * single row). So 2d-lines is never slower than 2d-concurrent. The
 * concurrent schedule (a fifth of the lines' memory on the pods) is held
 * while the lines' is built: nothing is built twice. Also the
 * fallback's rebuild. */
static int build_lines_or_concurrent(ftm_sched *s, const ftm_sched_ctx *ctx, const ftm_mesh *m,
                                     size_t count, ftm_red red)
{
    ftm_sched c;
    int rc = ar2d_build_concurrent(&c, ctx, m, count, red);
    if (rc && rc != FTM_ESTOPPED)
        return rc == FTM_ENOTSUP ? ar2d_build_lines(s, ctx, m, count, red, 0) : rc;
    if (!rc)
        c.fallback = "2d-concurrent's schedule is faster here";
    int rs = ar2d_build_lines(s, ctx, m, count, red, 0);
    if (rs == FTM_ENOTSUP) {
        if (!rc) {
            *s = c;
            s->fallback = "no line layout fits this mesh";
        }
        return rc;
    }
    return coll_keep_built(s, rs, &c, rc, m);
}

/* 2d-lines' own schedule alone (build_k with k chosen): FTM_ENOTSUP where
 * lines do not apply. */
int ar2d_build_own_lines(ftm_sched *s, const ftm_sched_ctx *ctx, const ftm_mesh *m, size_t count,
                         ftm_red red)
{
    return ar2d_build_lines(s, ctx, m, count, red, 0);
}

/* 2d-lines: its candidates (build_lines_or_concurrent), then the ring
 * check. */
int ftm_allreduce_2d_lines_build(ftm_sched *s, const ftm_sched_ctx *ctx, const ftm_mesh *m,
                                 size_t count, ftm_red red)
{
    return ar2d_build_checked(s, ctx, m, count, red, build_lines_or_concurrent);
}

/* 2d and 2d-concurrent: their own schedule, then the ring check. */
int ftm_allreduce_2d_build(ftm_sched *s, const ftm_sched_ctx *ctx, const ftm_mesh *m, size_t count,
                           ftm_red red)
{
    return ar2d_build_checked(s, ctx, m, count, red, ar2d_build_own_2d);
}

int ftm_allreduce_2d_concurrent_build(ftm_sched *s, const ftm_sched_ctx *ctx, const ftm_mesh *m,
                                      size_t count, ftm_red red)
{
    return ar2d_build_checked(s, ctx, m, count, red, ar2d_build_concurrent);
}
