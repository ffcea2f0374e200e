/* ftmesh demo: a narrated lesson on allreduce over a mesh with holes, told
 * from recorded runs (lesson.h), in the terminal and as an HTML page.
 * Options: the demo's table plus the shared mesh table (cli_parse). */
#include "cli.h"
#include "demo.h"
#include "trace_json.h"
#include "ftmesh/collective.h"
#include "ftmesh/error.h"
#include "ftmesh/lesson.h"
#include "ftmesh/router.h"
#include "ftmesh/trace.h"

#include <errno.h>
#include <ctype.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DEMO_MAX_SIDE 8 /* the text fits 80 columns up to 8x8 */
#define CMD "demo"

enum { O_ALGO = CLI_O_CMD, O_FAIL_DURING, O_STEP, O_DELAY, O_NO_COLOR, O_HTML, O_TRACE,
       O_TRACE_CLOCK, O_TEXT };
/* The algorithm of part 3: the 2-D allreduce whose lines go around holes. */
#define DEMO_2D "2d-lines"

static const cli_opt demo_options[] = {
    { "algo", "NAME", O_ALGO, "tell only this algorithm on the mesh, with its own\n"
                              "schedule: ring, bidir, tree, trees, 2d,\n"
                              "2d-concurrent, 2d-lines (any registered\n"
                              "algorithm but auto, which picks one)" },
    { "fail-during", "R,C", O_FAIL_DURING, "chip (R,C) dies mid-allreduce in the failure part" },
    { "step", NULL, O_STEP, "wait for Enter after each step" },
    { "delay", "SEC", O_DELAY, "pause SEC seconds after each step" },
    { "no-color", NULL, O_NO_COLOR, "no colours (also when NO_COLOR is set); when stdout\n"
                                    "is not a terminal: plain text and no waiting" },
    { "html", "FILE", O_HTML, "write one self-contained page that tells every part of\n"
                              "the lesson (open it in any browser; no network needed)\n"
                              "and print only 'wrote FILE'" },
    { "text", NULL, O_TEXT, "with --html: tell the lesson in the terminal too" },
    CLI_OPT_TRACE_OF(O_TRACE, O_TRACE_CLOCK, "in part 2's\nallreduce (the run told step by step; "
                     "the trace\nnumbers each chip's own steps from 0, the lesson\nnumbers "
                     "rounds of all chips from 1)"),
    { "mesh", "RxC", CLI_O_MESH, "mesh size, up to 8x8, with only the faults given\n(default: 4x4 without chip (1,1), unless --torus\nor a fault option is given)" },
    { NULL, NULL, 0, NULL },
};
static const cli_opt *const demo_tables[] = { demo_options, cli_mesh_table, NULL };

static void usage(void)
{
    printf("usage: ftmesh demo [--mesh RxC] [--torus] [faults] [--algo NAME]\n"
           "                   [--fail-during R,C] [--step] [--delay SEC] [--no-color]\n"
           "                   [--html FILE [--text]]\n"
           "                   [--trace FILE [--trace-clock wall|modeled]]\n"
           "\n"
           "A narrated lesson: the mesh and its hole, whether the ring must detour, then a\n"
           "real allreduce of small integers told step by step from what the chips\n"
           "recorded (what each chip sends and receives and its sums as they grow),\n"
           "then the 2-D allreduce around a dead host, then a chip dying in the\n"
           "middle of an allreduce, the recovery, and the chip coming back. --html:\n"
           "the same parts as one page. Default mesh: 4x4 without chip (1,1); with\n"
           "--mesh (4x4 too), --torus or any fault option the mesh has only the\n"
           "faults given. Meshes up to %dx%d. With --algo the lesson tells that\n"
           "algorithm in parts 1 and 2, and a chip's death, the recovery and the\n"
           "comeback only with --fail-during.\n\n",
           DEMO_MAX_SIDE, DEMO_MAX_SIDE);
    cli_print_opts(stdout, "Options", demo_tables, 0, 1);
    printf("\n");
    cli_print_opts(stdout, "Mesh and faults", demo_tables, 1, 2);
}

typedef struct demo_args {
    cli_mesh_opts o;
    const char *algo;      /* NULL: the whole lesson */
    int step, no_color, text;
    double delay;
    const char *html, *trace, *fail_during;
    int trace_clock, trace_clock_given;
    int default_hole;      /* 1: (1,1) is dead because no mesh was given */
} demo_args;

static int demo_opt(void *ctx, int id, const char *name, const char *v)
{
    demo_args *d = ctx;
    switch (id) {
    case O_ALGO:
        if (!strcmp(v, "auto"))
            return cli_usage_error(CMD, "--algo auto: not available in the demo, which shows "
                                   "one algorithm's own schedule; name one (see ftmesh demo --help)");
        if (!ftm_allreduce_find(v))
            return cli_unknown_algo(CMD, "--algo", v, 0);
        d->algo = v;
        return 0;
    case O_STEP: d->step = 1; return 0;
    case O_NO_COLOR: d->no_color = 1; return 0;
    case O_DELAY:
        if (cli_parse_double(v, 0, 60, &d->delay))
            return cli_usage_error(CMD, "--delay %s: expected seconds, 0..60", v);
        return 0;
    case O_FAIL_DURING: d->fail_during = v; return 0;
    case O_HTML: d->html = v; return 0;
    case O_TEXT: d->text = 1; return 0;
    case O_TRACE: d->trace = v; return 0;
    case O_TRACE_CLOCK:
        d->trace_clock_given = 1;
        return cli_trace_clock(CMD, v, &d->trace_clock);
    default: return cli_mesh_set(&d->o, id, name, v);
    }
}

/* Which chips own nothing in 2d-lines on m, and why, into b: a column
 * with a dead chip cannot sum across every row (half A), a row with one
 * cannot sum across every column (half B). "" for other algorithms. */
static void lines_owners(const ftm_mesh *m, const char *algo, char *b, size_t n)
{
    b[0] = 0;
    if (strcmp(algo, DEMO_2D))
        return;
    size_t u = (size_t)snprintf(b, n, "Usable columns (all chips alive):");
    int badc = 0, badr = 0;
    for (int c = 0; c < m->cols && u < n; c++) {
        int ok = 1;
        for (int r = 0; r < m->rows; r++)
            ok &= ftm_mesh_alive(m, ftm_mesh_chip(m, r, c));
        badc += !ok;
        if (ok)
            u += (size_t)snprintf(b + u, n - u, " %d", c);
    }
    u += u < n ? (size_t)snprintf(b + u, n - u, "; usable rows:") : 0;
    for (int r = 0; r < m->rows && u < n; r++) {
        int ok = 1;
        for (int c = 0; c < m->cols; c++)
            ok &= ftm_mesh_alive(m, ftm_mesh_chip(m, r, c));
        badr += !ok;
        if (ok)
            u += (size_t)snprintf(b + u, n - u, " %d", r);
    }
    if (u < n && (badc || badr))
        snprintf(b + u, n - u, ". In half A the healthy chips of the other columns own "
                 "nothing: their column has a hole, so it cannot add up across all rows; their "
                 "row's owners take their share, and they get the sums back in their row's "
                 "all-gather. In half B the same holds for the chips of the other rows. A "
                 "usable column shares its part of the half among its chips, and where that "
                 "part has fewer numbers than the column has chips, some of them own nothing "
                 "either.");
    else if (u < n)
        snprintf(b + u, n - u, ". Every chip owns a share.");
}

/* Records algo on m into a new recorder *tr and reads its first run. */
int demo_record(const ftm_mesh *m, const char *algo, ftm_trace **tr, ftm_lesson *l)
{
    size_t count = demo_lesson_count(m, algo);
    int rc = ftm_trace_create(tr, m->nchips, FTM_LESSON_MAX_BYTES);
    if (rc)
        return rc;
    if (count * 8 > FTM_LESSON_MAX_BYTES)
        return FTM_EINVAL;
    rc = ftm_lesson_run(m, algo, count, *tr, NULL);
    return rc ? rc : ftm_lesson_frames(*tr, 0, m, l);
}

/* Where `ftmesh allreduce --algo algo` (its default 8 MiB of floats) runs
 * another algorithm's schedule on m, a sentence saying so into b; else
 * "". The lesson always shows algo's own schedule. */
#define DEMO_ALLREDUCE_COUNT ((8u << 20) / 4)
void demo_fallback_words(const ftm_mesh *m, const char *algo, char *b, size_t n)
{
    b[0] = 0;
    const ftm_allreduce_algo *a = ftm_allreduce_find(algo);
    ftm_sched s;
    if (!a || a->build(&s, NULL, m, DEMO_ALLREDUCE_COUNT, FTM_RED_SUM_F32))
        return;
    if (s.fallback && s.algo && strcmp(s.algo, algo))
        snprintf(b, n, "Shown here: %s's own schedule. On this mesh `ftmesh allreduce --algo "
                 "%s` (at its default --size 8M) runs the %s schedule instead (%s).", algo, algo,
                 s.algo, s.fallback);
    ftm_sched_free(&s);
}

/* How to read the step headers, where they name positions: "#2-#16",
 * or "8 in #2-#16" where the positions are too scattered to list. */
static void headers_words(const ftm_lesson *l)
{
    int named = 0, npos = 0, lo = 0, hi = 0;
    for (int k = 1; k < l->nframes; k++) {
        char h[256];
        ftm_lesson_phase_words(l, k, h, sizeof h);
        named |= strchr(h, '#') != NULL;
        const char *in = strstr(h, " in #"); /* "8 in #2-#16": the first one, as an example */
        while (!npos && in && in > h && in[-1] >= '0' && in[-1] <= '9')
            in--;
        if (!npos && in && sscanf(in, "%d in #%d-#%d", &npos, &lo, &hi) != 3)
            npos = 0;
    }
    char w[240];
    if (npos)
        snprintf(w, sizeof w, "A step's header names the positions its transfers carry "
                 "(\"%d in #%d-#%d\": %d positions between #%d and #%d, where they are too "
                 "scattered to list).", npos, lo, hi, npos, lo, hi);
    else
        snprintf(w, sizeof w, "A step's header names the positions its transfers carry.");
    if (named)
        demo_wrap(w);
}

/* trees' part 1 on the page: which tree it draws, as the text says. */
static void trees_words(const ftm_mesh *m, size_t count, char *b, size_t n)
{
    ftm_sched s;
    char first[300];
    if (n < 2 || ftm_allreduce_find("trees")->build(&s, NULL, m, count, FTM_RED_SUM_F32))
        return;
    if (!s.fallback && !cli_trees_first(m, &s, count, first, sizeof first))
        snprintf(b, n, " %s: each arrow points to a chip's parent, the gold box is its root; "
                 "its positions go up these links and come back down them.", first);
    ftm_sched_free(&s);
}

/* Part 1's words on the page where no ring runs: the mesh, and what its
 * picture draws (the text's part 1 says the same). */
static void picture_words(const ftm_mesh *m, const char *algo, int bands, char *b, size_t n)
{
    demo_mesh_words(m, demo_lesson_count(m, algo), b, n);
    size_t u = strlen(b);
    const char *draws =
        !strcmp(algo, "tree")  ? "The tree it runs: each arrow points to a chip's parent; the "
                                 "gold box is the root, where the partial sums meet."
        : !strcmp(algo, "trees") ? "" /* trees_words */
        : bands                  ? "The pale bands are the rings of the bands that go around a "
                                   "fault, both ways."
                                 : "";
    if (draws[0] && u < n)
        u += (size_t)snprintf(b + u, n - u, " %s", draws);
    if (!strcmp(algo, "trees") && u < n)
        trees_words(m, demo_lesson_count(m, algo), b + u, n - u);
    char why[512];
    if (bands && u < n && !cli_bands_why(m, why, sizeof why))
        snprintf(b + u, n - u, " %s", why);
}

/* Part 2 (and 3): one algorithm on one mesh, told step by step. */
static int tell_algo(const demo_out *o, const ftm_mesh *m, const char *algo, ftm_trace **tr,
                     ftm_lesson *l, long *wrong)
{
    char bands[DEMO_BANDS_MAX];
    demo_bands_words(m, algo, bands, sizeof bands);
    char fb[320], own[600];
    demo_fallback_words(m, algo, fb, sizeof fb);
    lines_owners(m, algo, own, sizeof own);
    printf("%s\n", demo_algo_story(algo));
    if (bands[0])
        demo_wrap(bands);
    if (own[0])
        demo_wrap(own);
    if (fb[0])
        demo_wrap(fb);
    printf("\nEvery chip starts with %zu numbers: chip (r,c) is chip number n = r*%d + c\n"
           "and holds 1 + (n + i) mod 9 at position #i.\n", demo_lesson_count(m, algo), m->cols);
    int rc = demo_record(m, algo, tr, l);
    if (rc)
        return rc;
    demo_table(o, l, 0);
    printf("\nIn each step below, a line  A -> B  #i: x + y = z  says: chip A sent y,\n"
           "chip B had x at position #i and now holds the partial sum z (a copy:\n"
           "#i = z). Every value is what the chips recorded while they ran. Chips do\n"
           "not march in lockstep, so the steps are one global order: a transfer is\n"
           "in step n when the last transfer it waits for (its sender's and its\n"
           "receiver's earlier steps) is in step n - 1; within a step, lines come in\n"
           "the order the cost model's replay completes them. So y is what A held\n"
           "after the step before, and x what B held just before the line.\n");
    headers_words(l);
    demo_pause(o);
    demo_steps(o, l, -1);
    printf("\n%sAfter the last step%s:\n", demo_c(o, D_BOLD), demo_c(o, D_OFF));
    demo_table(o, l, l->nframes - 1);
    *wrong += demo_check(o, l);
    demo_pause(o);
    return 0;
}

/* The chip that dies by default: the last healthy chip whose loss leaves
 * the others connected (at least two of them). */
static int default_victim(const ftm_mesh *m)
{
    ftm_mesh t;
    if (ftm_mesh_healthy_count(m) < 3 || ftm_mesh_copy(&t, m))
        return -1;
    int pick = -1;
    for (int c = m->nchips - 1; c >= 0 && pick < 0; c--) {
        if (!ftm_mesh_alive(m, c))
            continue;
        t.chip_dead[c] = 1;
        if (ftm_mesh_check_connected(&t, NULL, NULL) == 0)
            pick = c;
        t.chip_dead[c] = 0;
    }
    ftm_mesh_free(&t);
    return pick;
}

/* Part 3: the 2-D algorithm on a 4x4 torus without the host at (2,2). */
static int tell_2d(const demo_out *o, demo_story *st, long *wrong)
{
    ftm_mesh t;
    int rc = ftm_mesh_init(&t, 4, 4, 1);
    if (rc)
        return rc;
    ftm_mesh_fail_host(&t, 2, 2);
    demo_mesh_picture(&t, NULL, demo_lesson_count(&t, DEMO_2D)); /* no ring runs here */
    char own[600];
    lines_owners(&t, DEMO_2D, own, sizeof own); /* tell_algo tells it; the page too */
    printf("\n");
    ftm_trace *tr = NULL;
    ftm_lesson l;
    memset(&l, 0, sizeof l);
    long w = 0;
    rc = tell_algo(o, &t, DEMO_2D, &tr, &l, &w);
    *wrong += w;
    ftm_lesson_part *p = rc ? NULL : demo_story_add(st, "3. The 2-D algorithm around a dead host", &l, tr, NULL);
    if (p) {
        p->verified = w == 0;
        char fb[320];
        demo_fallback_words(&t, DEMO_2D, fb, sizeof fb);
        snprintf(st->intro[st->n - 1], sizeof st->intro[0], "Shown on a fixed 4x4 torus with a "
                 "dead host at (2,2), whatever --mesh is. %s %s%s%s", demo_algo_story(DEMO_2D), own,
                 fb[0] ? " " : "", fb);
        tr = NULL;
    }
    ftm_lesson_free(&l);
    ftm_trace_destroy(tr);
    ftm_mesh_free(&t);
    return rc;
}

/* --html (the story's parts) and --trace (the main run). */
static int write_outputs(const demo_args *d, cli_out *hf, cli_out *tf, const demo_story *st)
{
    int rc = 0, err;
    const ftm_lesson *l = &st->les[st->main_part - 1];
    if (hf->f) {
        char title[96];
        snprintf(title, sizeof title, "ftmesh demo: %s allreduce on a %dx%d %s", l->algo,
                 l->mesh.rows, l->mesh.cols, cli_mesh_kind(&l->mesh));
        err = ftm_lesson_html_parts(hf->f, st->part, st->n, st->main_part, title);
        rc = cli_out_commit(CMD, hf, err);
    }
    if (tf->f) {
        ftm_cost_params cp;
        ftm_cost_defaults(&cp);
        cli_faults_meta fm = { &d->o, &l->mesh, NULL, 0 };
        err = cli_trace_write_meta(tf->f, st->tr[st->main_part - 1], &l->mesh, d->trace_clock,
                                   &cp, cli_faults_record_meta, &fm);
        int out = cli_out_commit(CMD, tf, err);
        rc = out ? out : rc;
    }
    return rc;
}

/* Parses argv into d; CLI_EXIT_USAGE (printed), CLI_HELP, or 0. */
static int parse(int argc, char **argv, demo_args *d)
{
    static const char default_mesh[] = "4x4";
    d->o.mesh_spec = default_mesh;
    d->o.max_side = DEMO_MAX_SIDE;
    d->o.min_healthy = 2; /* a lesson needs two chips */
    int rc = cli_parse(CMD, argc, argv, demo_tables, demo_opt, d);
    if (rc)
        return rc;
    /* the default lesson: 4x4 without (1,1), a hole that forces a detour;
     * a mesh the user names (--mesh 4x4 too) has only the faults given */
    if (d->o.mesh_spec == default_mesh && !d->o.torus && !d->o.nfail && !d->o.nfail_host &&
        !d->o.nfail_link && !d->o.random_faults) {
        d->o.fail[d->o.nfail++] = "1,1";
        d->default_hole = 1;
    }
    return 0;
}

/* The demo's options that do nothing with the others given. */
static void warn_unused(const demo_args *d)
{
    if (d->trace_clock_given && !d->trace)
        cli_warn(CMD, "--trace-clock has no effect without --trace FILE");
    if (d->text && !d->html)
        cli_warn(CMD, "--text has no effect without --html (the lesson is told in the "
                 "terminal anyway)");
    if (d->html && !d->text && (d->step || d->delay > 0))
        cli_warn(CMD, "%s ha%s no effect with --html alone: no lesson is told in the "
                 "terminal (add --text)", d->step && d->delay > 0 ? "--step and --delay"
                 : d->step ? "--step" : "--delay", d->step && d->delay > 0 ? "ve" : "s");
    if (d->html && !d->text && d->no_color)
        cli_warn(CMD, "--no-color has no effect with --html alone: no lesson is told in the "
                 "terminal (add --text)");
}

/* Checks the mesh and options against each other; 0 or CLI_EXIT_USAGE. */
static int check_args(const demo_args *d, const ftm_mesh *m, int *victim)
{
    if (m->rows > DEMO_MAX_SIDE || m->cols > DEMO_MAX_SIDE)
        return cli_usage_error(CMD, "--mesh %dx%d: the demo is for meshes up to %dx%d "
                               "(use ftmesh allreduce for bigger ones)", m->rows, m->cols,
                               DEMO_MAX_SIDE, DEMO_MAX_SIDE);
    if (ftm_mesh_healthy_count(m) < 2)
        return cli_usage_error(CMD, "the mesh needs at least 2 healthy chips for a lesson: "
                               "give a larger --mesh or fewer faults");
    *victim = -1;
    int r, c;
    if (d->fail_during && d->default_hole && !ftm_mesh_parse_coord(d->fail_during, &r, &c) &&
        r == 1 && c == 1)
        return cli_usage_error(CMD, "--fail-during 1,1: (1,1) is the default lesson's hole, "
                               "dead from the start; pick another chip, or give --mesh 4x4 "
                               "for a mesh without it");
    if (d->fail_during) {
        int rc = cli_fail_during_chip(CMD, m, d->fail_during, victim);
        if (rc)
            return rc;
        if (ftm_mesh_healthy_count(m) < 3)
            return cli_usage_error(CMD, "--fail-during %s: a lesson needs at least 2 chips "
                                   "left after the failure; use a larger mesh", d->fail_during);
    } else if (!d->algo) {
        *victim = default_victim(m);
    }
    cli_mesh_warn_seeds(&d->o, 0, -1);
    warn_unused(d);
    return demo_own_ok(d->algo ? d->algo : "ring", m, *victim);
}

static demo_out out_mode(const demo_args *d)
{
    demo_out o;
    o.tty = isatty(STDOUT_FILENO);
    const char *nc = getenv("NO_COLOR");
    o.color = o.tty && !d->no_color && !(nc && nc[0]);
    o.step = d->step;
    o.delay = d->delay;
    return o;
}

/* Parts 1 and 2: the mesh and the allreduce step by step, into st. */
static int tell_main(const demo_out *o, const ftm_mesh *m, const char *algo, demo_story *st,
                     long *wrong)
{
    ftm_ring ring = { 0 }, ring2 = { 0 };
    int one_d = demo_runs_ring(algo), rc = 0;
    /* the router's ring only for the algorithms that run it */
    int have_ring = demo_story_ring(m, algo, &ring);
    demo_heading(o, demo_mesh_title(m));
    if (one_d)
        demo_mesh(o, m, have_ring ? &ring : NULL, demo_lesson_count(m, algo));
    else
        demo_mesh_picture(m, NULL, demo_lesson_count(m, algo));
    if ((rc = cli_demo_own_picture(m, algo, demo_lesson_count(m, algo)))) {
        if (ring.n)
            ftm_router_ring_free(&ring);
        return rc;
    }
    demo_pause(o);
    char h[80];
    snprintf(h, sizeof h, "2. %s allreduce, step by step", algo);
    demo_heading(o, h);
    ftm_trace *tr = NULL;
    ftm_lesson l;
    memset(&l, 0, sizeof l);
    long w = 0;
    rc = tell_algo(o, m, algo, &tr, &l, &w);
    *wrong += w;
    if (!rc && have_ring)
        rc = ftm_router_ring(m, &ring2);
    st->n = 1; /* part 1 (a picture of part 2's mesh) is filled below */
    ftm_lesson_part *p = rc ? NULL : demo_story_add(st, h, &l, tr, one_d ? &ring2 : NULL);
    if (p) {
        tr = NULL;
        p->verified = w == 0;
        st->main_part = 2;
        char bands[DEMO_BANDS_MAX], fb[320], own[600];
        demo_bands_words(m, algo, bands, sizeof bands);
        demo_fallback_words(m, algo, fb, sizeof fb);
        lines_owners(m, algo, own, sizeof own);
        snprintf(st->intro[1], sizeof st->intro[1], "%s %s%s%s%s%s%sEvery chip starts with %zu "
                 "numbers: chip (r,c) is chip number n = r*%d + c and holds 1 + (n + i) mod 9 "
                 "at position #i. Each step is one round of one global order: a transfer is "
                 "in step n when the last transfer it waits for is in step n - 1.",
                 demo_algo_story(algo), bands, bands[0] ? " " : "", own, own[0] ? " " : "",
                 fb, fb[0] ? " " : "", demo_lesson_count(m, algo), m->cols);
        ftm_lesson_part *p1 = &st->part[0];
        memset(p1, 0, sizeof *p1);
        snprintf(st->title[0], sizeof st->title[0], "%s", demo_mesh_title(m));
        p1->title = st->title[0];
        p1->l = &st->les[1];
        p1->picture = 1;
        p1->chessboard = one_d; /* the two-colour argument is about rings */
        if (have_ring) {
            st->ring[0] = ring;
            memset(&ring, 0, sizeof ring);
            p1->ring = &st->ring[0];
            demo_story_ring2(st, 0);
        }
        rc = demo_story_bands(st, 0, m, algo); /* the bands' rings, as the ring's */
        if (!rc)
            rc = demo_story_bands(st, 1, m, algo);
        if (one_d)
            demo_two_colour_words(m, p1->ring, st->intro[0], sizeof st->intro[0]);
        else
            picture_words(m, algo, p1->nbands > 0, st->intro[0], sizeof st->intro[0]);
        p1->intro = st->intro[0];
    } else {
        st->n = 0;
    }
    ftm_lesson_free(&l);
    ftm_trace_destroy(tr);
    if (ring.n)
        ftm_router_ring_free(&ring);
    if (ring2.n)
        ftm_router_ring_free(&ring2);
    return rc;
}

/* Why the lesson has no failure parts: said after the last part, and at
 * the end of its words on the page. */
static void no_failure_note(demo_story *st, const char *why)
{
    char line[256];
    snprintf(line, sizeof line, "(The lesson ends here: %s.)", why);
    demo_wrap(line);
    if (st->n < 1)
        return;
    char *in = st->intro[st->n - 1];
    size_t len = strlen(in);
    snprintf(in + len, sizeof st->intro[0] - len, "%sThe lesson ends here: %s.",
             len ? " " : "", why);
    st->part[st->n - 1].intro = in;
}

/* The whole lesson (or parts 1, 2 and the failure for --algo). */
static int lesson(const demo_args *d, const demo_out *o, const ftm_mesh *m, int victim,
                  demo_story *st, long *wrong)
{
    const char *algo = d->algo ? d->algo : "ring";
    int rc = tell_main(o, m, algo, st, wrong);
    if (!rc && !d->algo) {
        demo_heading(o, "3. The 2-D algorithm around a dead host");
        printf("Shown on a fixed 4x4 torus with a dead host at (2,2), whatever --mesh\n"
               "is.\n\n");
        rc = tell_2d(o, st, wrong);
    }
    if (!rc && victim >= 0) {
        char h[80];
        snprintf(h, sizeof h, "%d. A chip dies in the middle", st->n + 1);
        demo_heading(o, h);
        rc = demo_tell_failure(o, m, algo, victim, h, st, wrong);
    }
    if (!rc && victim < 0)
        no_failure_note(st, ftm_mesh_healthy_count(m) < 3
                                ? "no chip dies in it, since a death would leave one chip and "
                                  "an allreduce needs two"
                            : default_victim(m) < 0
                                ? "no chip dies in it, since the death of any chip would cut "
                                  "the mesh apart"
                                : "with --fail-during R,C a chip dies too, and the recovery "
                                  "and its comeback follow");
    return rc;
}

int cli_demo(int argc, char **argv)
{
    demo_args d;
    memset(&d, 0, sizeof d);
    if (cli_mesh_opts_init(&d.o, CMD, argc + 1)) /* + 1: room for the default hole */
        return CLI_EXIT_FAIL;
    int rc = parse(argc, argv, &d), victim = -1, have_m = 0;
    if (rc == CLI_HELP)
        usage();
    if (!rc && cli_ranks_count() > 1)
        rc = cli_usage_error(CMD, "the lesson runs in one process: start it without mpirun "
                             "(or with mpirun -np 1)");
    ftm_mesh m;
    if (!rc && !(rc = cli_build_mesh(&d.o, &m)))
        have_m = 1;
    if (!rc)
        rc = check_args(&d, &m, &victim);
    cli_out hf = { .slot = -1 }, tf = { .slot = -1 }; /* written whole or not at all */
    if (!rc && d.html)
        rc = cli_out_open(CMD, &hf, "--html", d.html);
    if (!rc && d.trace)
        rc = cli_out_open(CMD, &tf, "--trace", d.trace);
    if (rc) {
        cli_out_discard(&hf);
        if (have_m)
            ftm_mesh_free(&m);
        cli_mesh_opts_free(&d.o);
        return rc == CLI_HELP ? 0 : rc;
    }
    cli_warn_flush(); /* the checks passed: before the lesson */
    demo_out out = out_mode(&d);
    long wrong = 0;
    demo_story st;
    memset(&st, 0, sizeof st);
    int quiet = d.html && !d.text, saved = -1;
    if (quiet) { /* the page only: the text lesson goes nowhere */
        fflush(stdout);
        saved = dup(STDOUT_FILENO);
        int null = open("/dev/null", O_WRONLY);
        if (null >= 0 && saved >= 0)
            dup2(null, STDOUT_FILENO);
        if (null >= 0)
            close(null);
        out.tty = 0;
    }
    int err = lesson(&d, &out, &m, victim, &st, &wrong);
    if (quiet && saved >= 0) {
        fflush(stdout);
        dup2(saved, STDOUT_FILENO);
        close(saved);
    }
    int orc = err ? 0 : write_outputs(&d, &hf, &tf, &st);
    cli_out_discard(&hf); /* not written: the lesson failed */
    cli_out_discard(&tf);
    if (!err && !orc && d.html)
        printf("wrote %s\n", d.html);
    demo_story_free(&st);
    err = err ? err : orc ? -1 : 0;
    if (err == FTM_EHANG)
        rc = cli_error(CMD, "the chips hung (ftmesh allreduce with the same mesh lists the "
                            "stuck chips)");
    else if (err > 0 || err < -1)
        rc = cli_error(CMD, "%s", ftm_strerror(err));
    else
        rc = err == -1 ? orc : wrong ? CLI_EXIT_FAIL : 0; /* orc: CLI_EXIT_PIPE, quiet, too */
    if (err == FTM_EHANG)
        rc = CLI_EXIT_HANG;
    ftm_mesh_free(&m);
    cli_mesh_opts_free(&d.o);
    return rc;
}
