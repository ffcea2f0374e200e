/* A recorded allreduce with small integers, read back as frames (see
 * include/ftmesh/lesson.h). */
#include "ftmesh/lesson.h"
#include "ftmesh/collective.h"
#include "ftmesh/error.h"
#include "ftmesh/runtime.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The input of element k on chip c: 1 + (c + k) mod 9. */
static int64_t lesson_input(int chip, size_t k) { return 1 + (int64_t)(((size_t)chip + k) % 9); }

int64_t ftm_lesson_expected(const ftm_mesh *m, size_t k)
{
    int64_t s = 0;
    for (int c = 0; c < m->nchips; c++)
        if (ftm_mesh_alive(m, c))
            s += lesson_input(c, k);
    return s;
}

int ftm_lesson_xfer_final(const ftm_lesson *l, const ftm_lesson_xfer *x)
{
    if (!x->sent)
        return 0;
    for (size_t j = 0; j < x->n; j++)
        if (x->sent[j] != ftm_lesson_expected(&l->mesh, x->first + j))
            return 0;
    return 1;
}

typedef struct ljob {
    const ftm_sched *s;
    int64_t **bufs;
    size_t count;
} ljob;

static int lesson_chip(ftm_chip *chip, void *arg)
{
    ljob *j = arg;
    int id = ftm_chip_id(chip);
    for (size_t k = 0; k < j->count; k++)
        j->bufs[id][k] = lesson_input(id, k);
    return ftm_chip_exec(chip, j->s, j->bufs[id]);
}

/* The algorithm's own schedule: never another algorithm's in its place. */
static int build_own(ftm_sched *s, const ftm_mesh *m, const char *algo, size_t count)
{
    return ftm_allreduce_build_own(algo, s, NULL, m, count, FTM_RED_SUM_I64);
}

int ftm_lesson_run(const ftm_mesh *m, const char *algo, size_t count, ftm_trace *tr,
                   uint64_t *wrong)
{
    if (!tr || count == 0 || ftm_trace_nchips(tr) != m->nchips)
        return FTM_EINVAL;
    ftm_sched s;
    int rc = build_own(&s, m, algo, count);
    if (rc)
        return rc;
    int64_t **bufs = calloc((size_t)m->nchips, sizeof *bufs);
    rc = bufs ? 0 : FTM_ENOMEM;
    for (int c = 0; c < m->nchips && !rc; c++)
        if (!(bufs[c] = calloc(count, sizeof(int64_t))))
            rc = FTM_ENOMEM;
    ftm_rt *rt = NULL;
    if (!rc)
        rc = ftm_rt_create(&rt, m, NULL);
    if (!rc)
        rc = ftm_rt_set_trace(rt, tr);
    ljob j = { &s, bufs, count };
    if (!rc)
        rc = ftm_rt_run(rt, lesson_chip, &j);
    if (wrong)
        *wrong = 0;
    for (int c = 0; c < m->nchips && !rc && wrong; c++)
        for (size_t k = 0; k < count && ftm_mesh_alive(m, c); k++)
            *wrong += bufs[c][k] != ftm_lesson_expected(m, k);
    ftm_rt_destroy(rt);
    for (int c = 0; bufs && c < m->nchips; c++)
        free(bufs[c]);
    free(bufs);
    ftm_sched_free(&s);
    return rc;
}

void ftm_lesson_free(ftm_lesson *l)
{
    for (int k = 0; k < l->nframes && l->frame; k++) {
        free(l->frame[k].vals);
        free(l->frame[k].done);
        free(l->frame[k].steps_done);
        free(l->frame[k].x);
    }
    free(l->frame);
    free(l->nsteps);
    free(l->priv);
    if (l->mesh.chip_dead)
        ftm_mesh_free(&l->mesh);
    memset(l, 0, sizeof *l);
}

/* 1 when transfer x starts at, ends at or passes through chip. */
static int xfer_touches(const ftm_mesh *m, const ftm_lesson_xfer *x, int chip)
{
    int at = x->src;
    for (int h = 0; h < x->nhops && at != chip; h++)
        at = ftm_mesh_neighbor(m, at, x->dirs[h]);
    return at == chip || x->dst == chip;
}

int ftm_lesson_kill(ftm_lesson *l, int chip, int round)
{
    if (!l || round < 1 || round >= l->nframes || chip < 0 || chip >= l->mesh.nchips)
        return FTM_EINVAL;
    size_t cnt = l->count;
    for (int k = round + 1; k < l->nframes; k++) {
        free(l->frame[k].vals);
        free(l->frame[k].done);
        free(l->frame[k].steps_done);
        free(l->frame[k].x);
    }
    l->nframes = round + 1;
    ftm_lesson_frame *f = &l->frame[round];
    int64_t *st = f->vals; /* replayed again from the round before, without the lost */
    memcpy(st, l->frame[round - 1].vals, (size_t)l->mesh.nchips * cnt * sizeof *st);
    for (int i = 0; i < f->nx; i++) {
        ftm_lesson_xfer *x = &f->x[i];
        if (xfer_touches(&l->mesh, x, chip)) {
            /* its ends wait for it: their step in this round never ends */
            x->after = NULL;
            f->steps_done[x->src] = l->frame[round - 1].steps_done[x->src];
            f->steps_done[x->dst] = l->frame[round - 1].steps_done[x->dst];
            continue;
        }
        int64_t *b = (int64_t *)x->before, *z = (int64_t *)x->after; /* the lesson's storage */
        int64_t *d = st + (size_t)x->dst * cnt + x->first;
        for (size_t j = 0; j < x->n; j++) {
            b[j] = d[j];
            z[j] = d[j] = x->red ? d[j] + x->sent[j] : x->sent[j];
        }
    }
    f->done[chip] = 0;
    l->died = chip;
    l->died_step = round - 1;
    return 0;
}

int ftm_lesson_send_round(const ftm_lesson *l, int chip, int k, int *nsent)
{
    int n = 0, at = -1;
    for (int r = 1; r < l->nframes; r++)
        for (int i = 0; i < l->frame[r].nx; i++)
            if (l->frame[r].x[i].src == chip && n++ == k)
                at = r;
    if (nsent)
        *nsent = n;
    return at;
}

/* A phase in words a student follows (the schedules' names are terse). */
static const char *phase_words(const char *p)
{
    static const char *const map[][2] = {
        { "tree-reduce", "up the tree" },         { "tree-up", "up the tree" },
        { "tree-bcast", "down the tree" },        { "tree-recv", "down the tree" },
        { "row-reduce-scatter", "row reduce-scatter" },
        { "row-all-gather", "row all-gather" },
        { "col-reduce-scatter", "column reduce-scatter" },
        { "col-all-gather", "column all-gather" },
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (!strcmp(p, map[i][0]))
            return map[i][1];
    return p;
}

/* A merged step's phase "PA+PB" (2d-concurrent: half A's and half B's,
 * which need not line up) in words: "rows (half A) and columns (half B)
 * reduce-scatter" where the halves do the same thing, else each half's. */
/* One half's phases, one or two distinct ones ("row-reduce-scatter"),
 * as words: "row reduce-scatter", "row and column reduce-scatter", or
 * "row reduce-scatter and column all-gather". */
static void half_words(char *b, size_t n, const char *p1, const char *p2)
{
    if (!p2[0] || !strcmp(p1, p2))
        snprintf(b, n, "%s", phase_words(p1));
    else if (strlen(p1) > 4 && !strcmp(p1 + 4, p2 + 4)) /* "row-"/"col-" */
        snprintf(b, n, "%s and %s %s", p1[0] == 'r' ? "row" : "column",
                 p2[0] == 'r' ? "row" : "column", p1 + 4);
    else
        snprintf(b, n, "%s and %s", phase_words(p1), phase_words(p2));
}

/* Splits "PA+PB" into its halves' names (either may be empty). */
static void split_halves(const char *phase, char *pa, char *pb, size_t n)
{
    const char *plus = strchr(phase, '+');
    snprintf(pa, n, "%.*s", (int)(plus - phase), phase);
    snprintf(pb, n, "%s", plus + 1);
}

/* A round of 2d-concurrent's merged steps "PA+PB" (and a second such
 * phase when the round holds steps of two): each half's phases once. */
static void halves_words(char *b, size_t n, const char *phase, const char *phase2)
{
    char a1[40], b1[40], a2[40] = "", b2[40] = "", wa[96], wb[96];
    split_halves(phase, a1, b1, sizeof a1);
    if (phase2)
        split_halves(phase2, a2, b2, sizeof a2);
    if (!a1[0]) /* a half idle in one step may run in the other */
        snprintf(a1, sizeof a1, "%s", a2);
    if (!b1[0])
        snprintf(b1, sizeof b1, "%s", b2);
    int one_a = !a2[0] || !strcmp(a1, a2), one_b = !b2[0] || !strcmp(b1, b2);
    if (a1[0] && b1[0] && one_a && one_b && strlen(a1) > 4 && !strcmp(a1 + 4, b1 + 4)) {
        snprintf(b, n, "%s (half A) and %s (half B) %s", a1[0] == 'r' ? "rows" : "columns",
                 b1[0] == 'r' ? "rows" : "columns", a1 + 4);
        return;
    }
    half_words(wa, sizeof wa, a1, a2);
    half_words(wb, sizeof wb, b1, b2);
    if (a1[0] && b1[0])
        snprintf(b, n, "half A %s, half B %s", wa, wb);
    else
        snprintf(b, n, "half %s %s", a1[0] ? "A" : "B", a1[0] ? wa : wb);
}

/* Positions a round touched, per way (rows, columns, either): the ranges
 * a header names are those, not the lowest to the highest (a schedule's
 * chunks wrap around the buffer). */
#define LESSON_MAX_COUNT (FTM_LESSON_MAX_BYTES / 8)
typedef struct touched {
    unsigned char on[3][LESSON_MAX_COUNT];
    size_t count;
    int any[3];
} touched;

/* "#0-#4, #11-#14" for the positions on, into b from u; with more than
 * LESSON_MAX_RANGES ranges "6 in #13-#23" (6 positions; a header stays
 * within 80 columns). Returns the new length. */
#define LESSON_MAX_RANGES 2
static size_t ranges(char *b, size_t n, size_t u, const unsigned char *on, size_t count)
{
    size_t nr = 0, npos = 0, lo = count, hi = 0;
    for (size_t i = 0; i < count; i++)
        if (on[i]) {
            nr += !i || !on[i - 1];
            npos++;
            lo = i < lo ? i : lo;
            hi = i;
        }
    if (nr > LESSON_MAX_RANGES) {
        u += (size_t)snprintf(b + u, n - u, "%zu in #%zu-#%zu", npos, lo, hi);
        return u < n ? u : n;
    }
    for (size_t i = 0, first = 1; i < count && u < n; i++) {
        if (!on[i] || (i && on[i - 1]))
            continue;
        size_t j = i;
        while (j + 1 < count && on[j + 1])
            j++;
        u += j > i ? (size_t)snprintf(b + u, n - u, "%s#%zu-#%zu", first ? "" : ", ", i, j)
                   : (size_t)snprintf(b + u, n - u, "%s#%zu", first ? "" : ", ", i);
        first = 0;
    }
    return u < n ? u : n;
}

/* The packed trees' round: each position's chunk is summed up its tree
 * to the root and the finished chunk copied back down; the schedule names
 * one phase for both, so the round says which way its transfers went. */
static void trees_words(char *b, size_t n, const touched *t, int sums, int final, int nx)
{
    if (!t->any[2]) {
        snprintf(b, n, "the trees");
        return;
    }
    size_t u = (size_t)snprintf(b, n, "%s", sums == nx ? "up the trees: partial sums of "
                                : sums ? "up and down the trees, "
                                : final == nx ? "down the trees: finished sums of "
                                : "down the trees: partial sums of ");
    u = ranges(b, n, u < n ? u : n, t->on[2], t->count);
    if (u < n)
        snprintf(b + u, n - u, "%s", sums == nx ? ", adding" : sums ? "" : ", copying");
}

static void mark_touched(touched *t, const ftm_lesson_xfer *x)
{
    int d = x->nhops ? x->dirs[0] : FTM_DIR_E, col = d == FTM_DIR_N || d == FTM_DIR_S;
    for (size_t j = x->first; j < x->first + x->n && j < t->count; j++)
        t->on[col][j] = t->on[2][j] = 1;
    t->any[col] = t->any[2] = 1;
}

/* Round k's phase: the schedule's phase words, or where the schedule
 * names one phase for everything (2d-lines), which positions moved along
 * rows and which along columns: by the links they took, since there one
 * half's row phase and the other's column phase both run along rows. */
void ftm_lesson_phase_words(const ftm_lesson *l, int k, char *b, size_t n)
{
    const ftm_lesson_frame *f = &l->frame[k];
    if (n == 0)
        return;
    if (strchr(f->phase, '+')) { /* a round may hold steps of two such phases */
        halves_words(b, n, f->phase, f->phase2 && strchr(f->phase2, '+') ? f->phase2 : NULL);
        return;
    }
    if (f->phase[0] && (!l->algo || strcmp(f->phase, l->algo))) {
        snprintf(b, n, "%s%s%s", phase_words(f->phase), f->phase2 ? " and " : "",
                 f->phase2 ? phase_words(f->phase2) : "");
        return;
    }
    touched *t = calloc(1, sizeof *t);
    if (!t) {
        snprintf(b, n, "%s", f->phase);
        return;
    }
    t->count = l->count < LESSON_MAX_COUNT ? l->count : LESSON_MAX_COUNT;
    int sums = 0, final = 0;
    for (int i = 0; i < f->nx; i++) {
        mark_touched(t, &f->x[i]);
        sums += f->x[i].red != 0;
        final += !f->x[i].red && ftm_lesson_xfer_final(l, &f->x[i]);
    }
    if (l->algo && !strcmp(l->algo, "trees")) {
        trees_words(b, n, t, sums, final, f->nx);
        free(t);
        return;
    }
    /* one phase name for everything: say what moved where */
    size_t u = 0;
    b[0] = 0;
    for (int col = 0; col < 2 && u < n; col++)
        if (t->any[col]) {
            u += (size_t)snprintf(b + u, n - u, "%salong %s ", u ? ", " : "",
                                  col ? "columns" : "rows");
            u = ranges(b, n, u < n ? u : n, t->on[col], t->count);
        }
    if (u < n)
        snprintf(b + u, n - u, "%s", sums == f->nx ? ", adding" : sums ? "" : ", copying");
    free(t);
}
