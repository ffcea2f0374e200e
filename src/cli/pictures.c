/* Terminal pictures of every allreduce algorithm, for `ftmesh rings --algo`:
 * each picture is drawn from the schedule the algorithm builds (the links
 * its sends take in one phase), so it shows what the chips will do. */
#include "cli.h"
#include "ftmesh/collective.h"
#include "ftmesh/plan2d.h"
#include "ftmesh/viz.h"
#include "ftmesh/svg.h"
#include "ftmesh/train.h"
#include "ftmesh/error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Prints caption and the picture of phase's sends from bytes [lo, hi). */
static int phase_picture(const ftm_mesh *m, const ftm_sched *s, const char *caption,
                         const char *phase, size_t lo, size_t hi, int root)
{
    char *pic = NULL;
    int err = ftm_viz_sched_ascii(m, s, phase, lo, hi, 0, root, &pic);
    if (err)
        return cli_error("rings", "drawing %s: %s", s->algo, ftm_strerror(err));
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

/* Marks (add) or counts the marked (add 0) directed links ring r crosses. */
static int ring_links(const ftm_mesh *m, const ftm_ring *r, unsigned char *used, int add)
{
    int hits = 0;
    for (int i = 0; i < r->n; i++)
        for (int k = r->path_off[i], a = r->chips[i]; k < r->path_off[i + 1]; k++) {
            unsigned char *u = &used[a * FTM_NDIRS + r->dirs[k]];
            hits += !add && *u;
            *u |= (unsigned char)add;
            a = ftm_mesh_neighbor(m, a, r->dirs[k]);
        }
    return hits;
}

/* Directed links that both rings of a band around a fault cross, over
 * all such bands; -1 on no memory. */
static int bands_shared(const ftm_mesh *m, const ftm_plan2d *p)
{
    int shared = 0;
    for (int b = 0; b < p->nbands && shared >= 0; b++) {
        const ftm_plan2d_band *bd = &p->bands[b];
        unsigned char *used = bd->alternate ? calloc((size_t)m->nchips * FTM_NDIRS, 1) : NULL;
        if (bd->alternate && !used)
            return -1;
        if (used) {
            ring_links(m, &bd->fwd, used, 1);
            shared += ring_links(m, &bd->rev, used, 0);
        }
        free(used);
    }
    return shared;
}

int cli_bands_why(const ftm_mesh *m, char *b, size_t n)
{
    ftm_plan2d p;
    int rc = ftm_plan2d_build(m, &p), shared = rc ? 0 : bands_shared(m, &p);
    if (!rc)
        ftm_plan2d_free(&p);
    if (!rc && shared < 0)
        rc = FTM_ENOMEM;
    char here[96] = " Here no link carries both rings the same way.";
    if (shared > 0)
        snprintf(here, sizeof here, " Here %d link%s carr%s both rings the same way: there the "
                 "steps take longer.", shared, shared == 1 ? "" : "s", shared == 1 ? "ies" : "y");
    snprintf(b, n, "Both halves run at once, so a band's ring the other way is routed to avoid, "
             "where it can, the links its first one uses in the same direction (a link carrying "
             "both takes twice as long): that is why it may detour between two neighbours, or "
             "visit the chips in another order.%s", here);
    return rc;
}

void cli_drift_why(const ftm_mesh *m, char *b, size_t n)
{
    int holes = 0;
    for (int c = 0; c < m->cols; c++) {
        int dead = 0;
        for (int r = 0; r < m->rows; r++)
            dead |= !ftm_mesh_alive(m, ftm_mesh_chip(m, r, c));
        holes += dead;
    }
    snprintf(b, n, "%d of the %d columns hold%s a dead chip, %s", holes, m->cols,
             holes == 1 ? "s" : "",
             holes == m->cols ? "so no column can run a ring"
                              : "more than the 1/8 whose shares the other columns' rings adopt");
}

/* 2d's bands whose ring goes around a fault (the others run along their
 * rows), each drawn: part 2's detours are theirs. */
static int demo_bands_picture(const ftm_mesh *m)
{
    ftm_plan2d p;
    int rc = ftm_plan2d_build(m, &p), drawn = 0;
    if (rc)
        return rc;
    for (int b = 0; !rc && b < p.nbands; b++) {
        const ftm_plan2d_band *bd = &p.bands[b];
        for (int way = 0; way < 2 && bd->alternate && !rc; way++) {
            char *pic = NULL;
            rc = ftm_viz_ring_ascii(m, way ? &bd->rev : &bd->fwd, &pic);
            if (!rc)
                printf("\nBand rows %d-%d, around its faults: its ring %s:\n%s", bd->row0,
                       bd->row0 + bd->nrows - 1,
                       way ? "the other way (the other half)" : "one way (half the numbers)",
                       pic);
            free(pic);
            drawn += way;
        }
    }
    ftm_plan2d_free(&p);
    char why[512];
    if (drawn && !rc && !(rc = cli_bands_why(m, why, sizeof why)))
        cli_print_wrapped(stdout, 0, 0, why);
    return rc;
}

/* trees: the root of the tree that sums element i (the live chip that
 * never receives a copy of it), or -1. */
static int elem_root(const ftm_mesh *m, const ftm_sched *s, size_t i)
{
    size_t at = i * sizeof(float);
    for (int c = 0; c < m->nchips; c++) {
        int copies = 0;
        for (int k = 0; k < s->prog[c].nops; k++) {
            const ftm_op *o = &s->prog[c].ops[k];
            copies += o->kind == FTM_OP_RECV && o->red == FTM_RED_COPY && o->off <= at &&
                      at < o->off + o->len;
        }
        if (ftm_mesh_alive(m, c) && !copies)
            return c;
    }
    return -1;
}

int cli_trees_first(const ftm_mesh *m, const ftm_sched *s, size_t count, char *b, size_t n)
{
    int *root = malloc(sizeof(int) * (count ? count : 1)), trees = 0, mine = 0;
    if (!root)
        return FTM_ENOMEM;
    for (size_t i = 0; i < count; i++) {
        root[i] = elem_root(m, s, i);
        int seen = 0;
        for (size_t j = 0; j < i && !seen; j++)
            seen = root[j] == root[i];
        trees += !seen;
        mine += root[i] == root[0];
    }
    size_t u = (size_t)snprintf(b, n, "The tree of position #0, one of the %d trees that carry "
                                "the %zu positions here (this one %s", trees, count,
                                mine == 1 ? "carries #0 alone" : "carries #0");
    for (size_t i = 1, k = 1; i < count && u < n && mine > 1; i++)
        if (root[i] == root[0] && k++ < 6)
            u += (size_t)snprintf(b + u, n - u, ", #%zu", i);
    if (u < n)
        snprintf(b + u, n - u, "%s)", mine > 6 ? ", ..." : "");
    free(root);
    return 0;
}

int cli_demo_own_picture(const ftm_mesh *m, const char *algo, size_t count)
{
    if (!strcmp(algo, "2d"))
        return m->cols > FTM_VIZ_MAX_COLS ? 0 : demo_bands_picture(m);
    int tree = strcmp(algo, "tree") == 0, bidir = strcmp(algo, "bidir") == 0;
    if ((!tree && !bidir && strcmp(algo, "trees")) || m->cols > FTM_VIZ_MAX_COLS)
        return 0;
    ftm_sched s;
    char *pic = NULL;
    int err = ftm_allreduce_find(algo)->build(&s, NULL, m, count, FTM_RED_SUM_F32);
    if (err)
        return err;
    if (bidir) /* the second half's ring: its detours take their own routes */
        err = ftm_viz_sched_ascii(m, &s, "reduce-scatter", s.bytes / 2, s.bytes, 0, -1, &pic);
    else if (tree)
        err = ftm_viz_sched_ascii(m, &s, "tree-up", 0, s.bytes, 0, tree_root(m, &s), &pic);
    else if (!s.fallback) /* else part 2 says what runs */
        err = ftm_viz_sched_ascii(m, &s, NULL, 0, 1, 1, elem_root(m, &s, 0), &pic);
    int detours = 0; /* the second ring's detours may take other routes */
    for (int i = 0; i < s.nroutes; i++)
        detours |= s.routes[i].nhops > 1;
    char first[400] = "";
    if (pic && !tree && !bidir && !(err = cli_trees_first(m, &s, count, first, sizeof first - 100)))
        strcat(first, ": arrows point to the parent, R is its root; its positions go up these "
                      "links and come back down them:");
    if (pic && first[0]) {
        printf("\n");
        cli_print_wrapped(stdout, 0, 0, first);
        fputs(pic, stdout);
    } else if (pic) {
        printf("\n%s\n%s", !bidir ? "The tree it runs (arrows point to the parent; R: the root):"
                           : detours ? "bidir runs this ring one way on the first half of the "
                                       "numbers and\nthe ring below, the other way round, on the "
                                       "second half (a detour\nmay take another route there):"
                                     : "bidir runs this ring one way on the first half of the "
                                       "numbers and\nthe ring below, the other way round, on the "
                                       "second half:",
               pic);
    }
    free(pic);
    ftm_sched_free(&s);
    return err;
}

static int draw_trees(const ftm_mesh *m, const ftm_sched *s)
{
    printf("trees: the buffer in equal shares, one per spanning tree of the live links;\n"
           "each share is summed up its tree to the root and copied back down, in\n"
           "chunks, all trees at once (ftmesh demo --algo trees tells the steps).\n"
           "Together they use every live link both ways.\n");
    return phase_picture(m, s, "the first tree, rooted at R (its first chunk goes up these links\n"
                               "and comes back down them):", NULL, 0, 1, elem_root(m, s, 0));
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
           "reversed. About 2 x depth steps (a parent takes its children's sums one step\n"
           "each, so a few more going up) instead of the ring's 2(P-1).\n");
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
        { "phase 1, half B along the columns (at the same time):", "+col-reduce-scatter", 1 },
        { "phase 2, half A along the columns:", "col-reduce-scatter", 0 },
        { "phase 2, half B along the rows (at the same time):", "+row-reduce-scatter", 1 },
    };
    int rc = 0;
    for (size_t i = 0; i < sizeof pics / sizeof pics[0] && !rc; i++)
        rc = phase_picture(m, s, pics[i].cap, pics[i].phase, pics[i].half ? ha : 0,
                           pics[i].half ? s->bytes : ha, -1);
    return rc;
}

/* 1 when some step of s belongs to phase (a 2-D algorithm on a small or
 * crowded mesh runs the ring's schedule when the cost model finds it
 * faster: then it has no row phase, and the ring is what to draw). */
static int has_phase(const ftm_sched *s, const char *phase)
{
    for (int c = 0; c < s->nchips; c++)
        for (int j = 0; j < s->prog[c].nsteps; j++)
            if (ftm_sched_phase_match(s->prog[c].steps[j].phase, phase))
                return 1;
    return 0;
}

int cli_too_wide(const ftm_mesh *m, const char *svg)
{
    if (m->cols <= FTM_VIZ_MAX_COLS)
        return 0;
    if (svg)
        printf("(%d columns do not fit in %d: the picture is in %s)\n", m->cols, FTM_VIZ_WIDTH, svg);
    else
        printf("(%d columns do not fit in %d: draw this mesh as a picture with --svg FILE)\n",
               m->cols, FTM_VIZ_WIDTH);
    return 1;
}

int cli_rings_algo_pictures(const ftm_mesh *m, const char *algo, size_t count, const char *svg)
{
    const ftm_allreduce_algo *a = ftm_allreduce_find(algo);
    if (!a)
        return CLI_EXIT_USAGE;
    if (cli_too_wide(m, svg))
        return 0;
    ftm_sched s;
    int err = a->build(&s, NULL, m, count, FTM_RED_SUM_F32);
    if (err)
        return cli_error("rings", "%s schedule failed: %s", algo, ftm_strerror(err));
    /* the schedule names what runs (a 2-D fallback to the ring, trees' to another) */
    int rc = 0, ring = strncmp(algo, "2d", 2) == 0 && strcmp(s.algo, "ring") == 0;
    int fell = ring || (strcmp(algo, "trees") == 0 && s.fallback);
    char size[32];
    cli_size_text(count * 4, size, sizeof size);
    if (ring)
        printf("%s runs the ring's schedule on this mesh at --size %s: the cost model\n"
               "finds it faster than rows then columns (small, thin or crowded meshes).\n\n",
               algo, size);
    else if (fell)
        printf("trees runs the %s's schedule here: %s.\n\n", s.algo, s.fallback);
    else if (s.fallback) /* never the ring's: drawn as what it is */
        printf("%s runs %s's schedule here at --size %s: %s.\n\n", algo, s.algo, size,
               s.fallback);
    char cap[96];
    snprintf(cap, sizeof cap, "the %s's schedule, which %s runs here", s.algo, algo);
    if (fell)
        rc = phase_picture(m, &s, cap, NULL, 0, s.bytes, -1);
    else if (strcmp(algo, "bidir") == 0)
        rc = draw_bidir(m, &s);
    else if (strcmp(algo, "tree") == 0)
        rc = draw_tree(m, &s);
    else if (strcmp(algo, "trees") == 0)
        rc = draw_trees(m, &s);
    else if (strcmp(algo, "2d") == 0)
        rc = draw_2d(m, &s);
    else if (strcmp(algo, "2d-concurrent") == 0)
        rc = draw_2d_concurrent(m, &s, count);
    else
        rc = phase_picture(m, &s, algo, NULL, 0, s.bytes, -1);
    ftm_sched_free(&s);
    return rc;
}

/* rings --algo NAME --svg FILE: the links of the algorithm's first phase
 * (bidir's two rings; the tree; 2d-concurrent's rows and columns of the two
 * halves; trees' first tree). Returns 0 or an FTM_E* code. */
int cli_rings_algo_svg(FILE *f, const ftm_mesh *m, const char *algo, size_t count)
{
    const ftm_allreduce_algo *a = ftm_allreduce_find(algo);
    if (!a)
        return FTM_EINVAL;
    ftm_sched s;
    int err = a->build(&s, NULL, m, count, FTM_RED_SUM_F32);
    if (err)
        return err;
    int first_tree = strcmp(algo, "trees") == 0 && !s.fallback;
    const char *phase = strcmp(algo, "tree") == 0 ? "tree-up"
                        : first_tree ? "trees"
                        : has_phase(&s, "row-reduce-scatter") ? "row-reduce-scatter"
                        : has_phase(&s, "2d-lines") ? "2d-lines" /* one phase: every send */
                                                    : "reduce-scatter";
    char title[160];
    int halves = !s.fallback && strcmp(algo, "2d-concurrent") == 0;
    if (first_tree)
        snprintf(title, sizeof title, "%s allreduce, the first tree", algo);
    else if (halves) /* its merged steps carry both halves' sends */
        snprintf(title, sizeof title, "%s, phase 1: half A rows, half B columns", algo);
    else if (!strcmp(phase, "2d-lines"))
        snprintf(title, sizeof title, "%s allreduce, every link its sends take", algo);
    else
        snprintf(title, sizeof title, "%s allreduce, phase %s", algo, phase);
    /* The first tree: the sends of the buffer's first byte (see draw_trees). */
    ftm_svg_picture q = { .title = title, .sched = &s, .phase = phase, .hi = first_tree };
    err = ftm_svg_draw(f, m, &q);
    ftm_sched_free(&s);
    return err;
}

/* train --svg: the mesh as training left it (a chip that died marked
 * dead), its links' heat for one gradient allreduce (r->nparams floats over
 * r->algo), and the loss per step with the fault events. Returns 0 or an
 * FTM_E* code. */
/* The markers of the loss curve and timeline: the static holes, then
 * every failure and repair of the run (at most max). */
static int train_svg_events(const ftm_mesh *m0, const ftm_train_result *r, ftm_svg_event *ev,
                            char (*lab)[128], int max)
{
    int nev = 0, dead0 = m0->nchips - ftm_mesh_healthy_count(m0);
    if (dead0) {
        snprintf(lab[0], sizeof lab[0], "start: %d chip%s dead", dead0, cli_s(dead0));
        ev[nev++] = (ftm_svg_event){ 0, lab[0], 0 };
    }
    for (int i = 0; i < r->nevents && nev + 1 < max; i++) {
        const ftm_train_event *e = &r->events[i];
        if (e->repair) {
            snprintf(lab[nev], sizeof lab[nev], "%s back at step %ld on %d chips", e->what, e->when,
                     e->chips_after);
            ev[nev] = (ftm_svg_event){ e->when, lab[nev], 1 };
            nev++;
            continue;
        }
        if (!e->noticed)
            continue;
        if (e->resumed == e->when) { /* one mark: the step it died in is redone */
            snprintf(lab[nev], sizeof lab[nev], "%s dies in step %ld, redone on %d chips",
                     e->what, e->when, e->chips_after);
            ev[nev] = (ftm_svg_event){ e->when, lab[nev], 0 };
            nev++;
            continue;
        }
        snprintf(lab[nev], sizeof lab[nev], "%s dies in step %ld", e->what, e->when);
        ev[nev] = (ftm_svg_event){ e->when, lab[nev], 0 };
        nev++;
        snprintf(lab[nev], sizeof lab[nev], "resumed at step %ld on %d chips", e->resumed,
                 e->chips_after);
        ev[nev] = (ftm_svg_event){ e->resumed, lab[nev], 0 };
        nev++;
    }
    return nev;
}

#define SVG_MAX_EVENTS 16

int cli_train_svg(FILE *f, const ftm_mesh *m0, const ftm_train_result *r, int exact)
{
    const ftm_mesh *m = r->have_mesh_after ? &r->mesh_after : m0; /* as training left it */
    long n = r->steps > 0 ? r->steps : 1;
    uint64_t *lb = calloc((size_t)m->nchips * FTM_NDIRS, sizeof *lb);
    double *loss = malloc(sizeof *loss * (size_t)n), *secs = malloc(sizeof *secs * (size_t)n);
    int *chips = malloc(sizeof *chips * (size_t)n);
    ftm_sched s;
    const ftm_allreduce_algo *a = ftm_allreduce_find(r->algo ? r->algo : "ring");
    /* the gradients' schedule as the run built it: int64 sums in exact mode */
    ftm_red red = exact ? FTM_RED_SUM_I64 : FTM_RED_SUM_F32;
    int have = lb && loss && a && a->build(&s, NULL, m, r->nparams, red) == 0;
    if (have)
        ftm_sched_link_bytes(&s, m, lb);
    for (long i = 0; loss && secs && chips && i < r->steps; i++) {
        loss[i] = r->step[i].loss;
        secs[i] = r->step[i].wall_s;
        chips[i] = r->step[i].chips;
    }
    char lab[SVG_MAX_EVENTS][128], title[160];
    ftm_svg_event ev[SVG_MAX_EVENTS];
    int nev = train_svg_events(m0, r, ev, lab, SVG_MAX_EVENTS);
    snprintf(title, sizeof title, "training: gradient allreduce %s, one step's bytes",
             r->algo ? r->algo : "ring");
    ftm_svg_picture q = { .title = title, .sched = have ? &s : NULL, .only_detours = 1,
                          .link_bytes = have ? lb : NULL, .loss = loss,
                          .nloss = loss ? r->steps : 0, .events = ev, .nevents = nev,
                          .chips = r->nevents ? chips : NULL, .step_s = r->nevents ? secs : NULL };
    int err = loss && secs && chips ? ftm_svg_draw(f, m, &q) : FTM_ENOMEM;
    if (have)
        ftm_sched_free(&s);
    free(lb);
    free(loss);
    free(secs);
    free(chips);
    return err;
}
