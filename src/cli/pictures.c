/* Terminal pictures of every allreduce algorithm, for `ftmesh rings --algo`:
 * each picture is drawn from the schedule the algorithm builds (the links
 * its sends take in one phase), so it shows what the chips will do. */
#include "cli.h"
#include "ftmesh/collective.h"
#include "ftmesh/viz.h"
#include "ftmesh/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Prints caption and the picture of phase's sends from bytes [lo, hi). */
static int phase_picture(const ftm_mesh *m, const ftm_sched *s, const char *caption,
                         const char *phase, size_t lo, size_t hi, int root)
{
    char *pic = NULL;
    int err = ftm_viz_sched_ascii(m, s, phase, lo, hi, root, &pic);
    if (err) {
        fprintf(stderr, "ftmesh rings: drawing %s: %s\n", s->algo, ftm_strerror(err));
        return CLI_EXIT_FAIL;
    }
    printf("\n%s\n%s", caption, pic);
    free(pic);
    return 0;
}

/* The tree's root: the healthy chip that sends nothing up. */
static int tree_root(const ftm_mesh *m, const ftm_sched *s)
{
    for (int c = 0; c < m->nchips; c++) {
        const ftm_chip_prog *pg = &s->prog[c];
        int sends = 0;
        for (int j = 0; j < pg->nsteps; j++)
            for (int k = 0; k < pg->steps[j].nops; k++)
                sends += pg->ops[pg->steps[j].first_op + k].kind == FTM_OP_SEND &&
                         strcmp(pg->steps[j].phase, "tree-up") == 0;
        if (ftm_mesh_alive(m, c) && !sends)
            return c;
    }
    return -1;
}

static int draw_bidir(const ftm_mesh *m, const ftm_sched *s)
{
    size_t half = s->bytes / 2;
    printf("bidir: two rings through every healthy chip, running opposite ways in the\n"
           "same steps, half of the buffer each, so every link carries data both ways.\n");
    int rc = phase_picture(m, s, "ring 1, first half of the buffer:", "reduce-scatter", 0, half, -1);
    if (!rc)
        rc = phase_picture(m, s, "ring 2, second half, the other way round:", "reduce-scatter",
                           half, s->bytes, -1);
    return rc;
}

static int draw_tree(const ftm_mesh *m, const ftm_sched *s)
{
    int root = tree_root(m, s);
    printf("tree: a spanning tree over live links, rooted at R near the centre. Reduce:\n"
           "each chip adds its children's sums to its own and sends the result along its\n"
           "arrow, leaves first; broadcast: the root's total goes back down every arrow,\n"
           "reversed. 2 x depth steps instead of the ring's 2(P-1).\n");
    return phase_picture(m, s, "the tree (arrows point to the parent):", "tree-up", 0, s->bytes,
                         root);
}

/* 2d: the row phase, then the column phase; in each, a band's or column's
 * two rings carry half of the data each, one each way. */
static int draw_2d(const ftm_mesh *m, const ftm_sched *s)
{
    printf("2d: phase 1 reduce-scatters along the rows (rows touched by a hole merge into\n"
           "bands whose rings go around it), phase 2 along the columns on each chip's\n"
           "share; then the all-gathers: columns, then rows, over the same links.\n");
    int rc = phase_picture(m, s, "phase 1, rows (<-> : two rings, one each way, half the data each):",
                           "row-reduce-scatter", 0, s->bytes, -1);
    if (!rc)
        rc = phase_picture(m, s, "phase 2, columns:", "col-reduce-scatter", 0, s->bytes, -1);
    return rc;
}

static int draw_2d_concurrent(const ftm_mesh *m, const ftm_sched *s, size_t count)
{
    size_t ha = (count + 1) / 2 * sizeof(float);
    printf("2d-concurrent: half A of the buffer runs the 2d algorithm rows first, half B\n"
           "columns first, in the same steps, so all four links of a chip carry data.\n");
    static const struct { const char *cap, *phase; int half; } pics[] = {
        { "phase 1, half A along the rows:", "row-reduce-scatter", 0 },
        { "phase 1, half B along the columns (at the same time):", "row-reduce-scatter", 1 },
        { "phase 2, half A along the columns:", "col-reduce-scatter", 0 },
        { "phase 2, half B along the rows (at the same time):", "col-reduce-scatter", 1 },
    };
    int rc = 0;
    for (size_t i = 0; i < sizeof pics / sizeof pics[0] && !rc; i++)
        rc = phase_picture(m, s, pics[i].cap, pics[i].phase, pics[i].half ? ha : 0,
                           pics[i].half ? s->bytes : ha, -1);
    return rc;
}

int cli_rings_algo_pictures(const ftm_mesh *m, const char *algo)
{
    const ftm_allreduce_algo *a = ftm_allreduce_find(algo);
    if (!a)
        return CLI_EXIT_USAGE;
    if (m->cols > FTM_VIZ_MAX_COLS) {
        printf("(%d columns do not fit in %d: draw this mesh as a picture with --svg FILE)\n",
               m->cols, FTM_VIZ_WIDTH);
        return 0;
    }
    /* Enough elements that every block of every ring is non-empty. */
    size_t count = (size_t)m->nchips * (size_t)m->nchips * 2;
    ftm_sched s;
    int err = a->build(&s, m, count, FTM_RED_SUM_F32);
    if (err) {
        fprintf(stderr, "ftmesh rings: %s schedule failed: %s\n", algo, ftm_strerror(err));
        return CLI_EXIT_FAIL;
    }
    int rc = 0;
    if (strcmp(algo, "bidir") == 0)
        rc = draw_bidir(m, &s);
    else if (strcmp(algo, "tree") == 0)
        rc = draw_tree(m, &s);
    else if (strcmp(algo, "2d") == 0)
        rc = draw_2d(m, &s);
    else if (strcmp(algo, "2d-concurrent") == 0)
        rc = draw_2d_concurrent(m, &s, count);
    else
        rc = phase_picture(m, &s, algo, NULL, 0, s.bytes, -1);
    ftm_sched_free(&s);
    return rc;
}
