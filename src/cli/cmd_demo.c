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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DEMO_MAX_SIDE 8 /* the text fits 80 columns up to 8x8 */
#define CMD "demo"

enum { O_ALGO = CLI_O_CMD, O_FAIL_DURING, O_STEP, O_DELAY, O_NO_COLOR, O_HTML, O_TRACE,
       O_TRACE_CLOCK };

static const cli_opt demo_options[] = {
    { "algo", "NAME", O_ALGO, "tell only this algorithm on the mesh: ring, bidir,\n"
                              "tree, 2d or 2d-concurrent" },
    { "fail-during", "R,C", O_FAIL_DURING, "chip (R,C) dies mid-allreduce in the failure part" },
    { "step", NULL, O_STEP, "wait for Enter after each step" },
    { "delay", "SEC", O_DELAY, "pause SEC seconds after each step" },
    { "no-color", NULL, O_NO_COLOR, "no colours (also when NO_COLOR is set); when stdout\n"
                                    "is not a terminal: plain text and no waiting" },
    { "html", "FILE", O_HTML, "write one self-contained page that plays the recorded\n"
                              "run (open it in any browser; no network needed)" },
    CLI_OPT_TRACE(O_TRACE, O_TRACE_CLOCK),
    { "mesh", "RxC", CLI_O_MESH, "mesh size, up to 8x8 (default 4x4 without chip\n(1,1))" },
    { NULL, NULL, 0, NULL },
};
static const cli_opt *const demo_tables[] = { demo_options, cli_mesh_table, NULL };

static void usage(void)
{
    printf("usage: ftmesh demo [--mesh RxC] [--torus] [faults] [--algo NAME]\n"
           "                   [--fail-during R,C] [--step] [--delay SEC] [--no-color]\n"
           "                   [--html FILE] [--trace FILE [--trace-clock wall|modeled]]\n"
           "\n"
           "A narrated lesson: the mesh and its hole, why the ring must detour, then a\n"
           "real allreduce of small integers told step by step from what the chips\n"
           "recorded (what each chip sends and receives and its sums as they grow),\n"
           "then the 2-D algorithm on a torus with a dead host, then a chip dying in\n"
           "the middle of an allreduce and the recovery. Default mesh: 4x4 without\n"
           "chip (1,1). Meshes up to %dx%d.\n\n", DEMO_MAX_SIDE, DEMO_MAX_SIDE);
    cli_print_opts(stdout, "Options", demo_tables, 0, 1);
    printf("\n");
    cli_print_opts(stdout, "Mesh and faults", demo_tables, 1, 2);
}

typedef struct demo_args {
    cli_mesh_opts o;
    const char *algo;      /* NULL: the whole lesson */
    int step, no_color;
    double delay;
    const char *html, *trace, *fail_during;
    int trace_clock;
} demo_args;

static int demo_opt(void *ctx, int id, const char *name, const char *v)
{
    demo_args *d = ctx;
    switch (id) {
    case O_ALGO:
        if (!ftm_allreduce_find(v))
            return cli_usage_error(CMD, "--algo %s: unknown algorithm (see ftmesh demo --help)", v);
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
    case O_TRACE: d->trace = v; return 0;
    case O_TRACE_CLOCK: return cli_trace_clock(CMD, v, &d->trace_clock);
    default: return cli_mesh_set(&d->o, id, name, v);
    }
}

static const char *algo_story(const char *algo)
{
    if (!strcmp(algo, "ring"))
        return "Ring allreduce: the P chips form a ring and the buffer is cut into P\n"
               "blocks (here one number each). Reduce-scatter, P-1 steps: every chip\n"
               "passes a block to the next chip on the ring, which adds it to its own.\n"
               "After it each chip holds one block's full sum. All-gather, P-1 steps:\n"
               "the finished blocks travel on around the ring and are copied.";
    if (!strcmp(algo, "bidir"))
        return "Bidirectional ring: the same ring run both ways at once, each direction\n"
               "carrying half of the buffer, so every link works in both directions.";
    if (!strcmp(algo, "tree"))
        return "Tree: partial sums flow up a spanning tree to a root (reduce), and the\n"
               "total flows back down (broadcast). Few steps, but the root's links carry\n"
               "everything: good for tiny buffers.";
    if (!strcmp(algo, "2d"))
        return "2-D: rows first. Each row runs a ring reduce-scatter, then each column\n"
               "sums the row results it holds, then the rows all-gather. Rows and\n"
               "columns are short rings, so there are fewer steps than one long ring.";
    return "2-D concurrent: the 2-D algorithm with the buffer split in two halves,\n"
           "one going rows-then-columns and the other columns-then-rows at once.";
}

static size_t lesson_count(const ftm_mesh *m) { return (size_t)ftm_mesh_healthy_count(m); }

/* Records algo on m into a new recorder *tr and reads its first run. */
static int record(const ftm_mesh *m, const char *algo, int fail, ftm_trace **tr, ftm_lesson *l)
{
    size_t count = lesson_count(m);
    int rc = ftm_trace_create(tr, m->nchips, FTM_LESSON_MAX_BYTES);
    if (rc)
        return rc;
    if (count * 8 > FTM_LESSON_MAX_BYTES)
        return FTM_EINVAL;
    rc = ftm_lesson_run(m, algo, count, fail, 0, *tr, NULL);
    if (rc && !(rc == FTM_ECHIPDEAD && fail >= 0))
        return rc;
    return ftm_lesson_frames(*tr, 0, m, l);
}

/* Part 2 (and 3): one algorithm on one mesh, told step by step. */
static int tell_algo(const demo_out *o, const ftm_mesh *m, const char *algo, ftm_trace **tr,
                     ftm_lesson *l, long *wrong)
{
    printf("%s\n\nEvery chip starts with %zu numbers: chip (r,c) is chip number n = r*%d + c\n"
           "and holds 1 + (n + i) mod 9 at position #i.\n", algo_story(algo), lesson_count(m),
           m->cols);
    int rc = record(m, algo, -1, tr, l);
    if (rc)
        return rc;
    demo_table(o, l, 0);
    printf("\nIn each step below, a line  A -> B  #i: x + y = z  says: chip A sent y,\n"
           "chip B had x at position #i and now holds the partial sum z (a copy:\n"
           "#i = z). Every line is what the chips recorded while they ran.\n");
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

/* Part 4: chip `victim` dies mid-allreduce; the survivors start over. */
static int tell_failure(const demo_out *o, const ftm_mesh *m, const char *algo, int victim,
                        long *wrong)
{
    ftm_trace *tr = NULL;
    ftm_lesson l1, l2;
    memset(&l1, 0, sizeof l1);
    memset(&l2, 0, sizeof l2);
    printf("The same %s allreduce on the first mesh, but chip (%d,%d) dies halfway\n"
           "through its sends. A chip that died sends nothing more and forwards nothing.\n",
           algo, ftm_mesh_row(m, victim), ftm_mesh_col(m, victim));
    int rc = record(m, algo, victim, &tr, &l1);
    ftm_mesh m2;
    int have_m2 = 0;
    if (!rc && l1.died < 0) {
        printf("(It finished its part before the failure point: nothing failed.)\n");
    } else if (!rc) {
        demo_steps(o, &l1, l1.died_step + 1);
        printf("\nThe health monitor tells every chip at once; they stop. Their buffers are\n"
               "half-done (some blocks summed, some not), and the dead chip's numbers are\n"
               "gone, so the survivors start the allreduce over on the chips left, with a\n"
               "new ring around the new hole:\n\n");
        if (!(rc = ftm_mesh_copy(&m2, m))) {
            have_m2 = 1;
            m2.chip_dead[victim] = 1;
            ftm_ring ring = { 0 };
            int have_ring = ftm_router_ring(&m2, &ring) == 0;
            demo_mesh(o, &m2, have_ring ? &ring : NULL);
            if (have_ring)
                ftm_ring_free(&ring);
        }
        size_t count = lesson_count(&m2);
        if (!rc)
            rc = ftm_lesson_run(&m2, algo, count, -1, 0, tr, NULL);
        if (!rc)
            rc = ftm_lesson_frames(tr, 1, &m2, &l2);
        if (!rc) {
            printf("\nThe recovery run takes %d steps (told as above; here its end):\n",
                   l2.nframes - 1);
            demo_table(o, &l2, l2.nframes - 1);
            *wrong += demo_check(o, &l2);
        }
    }
    ftm_lesson_free(&l1);
    ftm_lesson_free(&l2);
    if (have_m2)
        ftm_mesh_free(&m2);
    ftm_trace_destroy(tr);
    return rc;
}

/* Part 3: the 2-D algorithm on a 4x4 torus without the host at (2,2). */
static int tell_2d(const demo_out *o, long *wrong)
{
    ftm_mesh t;
    int rc = ftm_mesh_init(&t, 4, 4, 1);
    if (rc)
        return rc;
    ftm_mesh_fail_host(&t, 2, 2);
    ftm_ring ring = { 0 };
    int have_ring = ftm_router_ring(&t, &ring) == 0;
    demo_mesh(o, &t, have_ring ? &ring : NULL);
    if (have_ring)
        ftm_ring_free(&ring);
    printf("\n");
    ftm_trace *tr = NULL;
    ftm_lesson l;
    memset(&l, 0, sizeof l);
    rc = tell_algo(o, &t, "2d", &tr, &l, wrong);
    ftm_lesson_free(&l);
    ftm_trace_destroy(tr);
    ftm_mesh_free(&t);
    return rc;
}

/* --html and --trace of the main run. */
static int write_outputs(const demo_args *d, cli_out *hf, cli_out *tf, const ftm_lesson *l,
                         const ftm_ring *ring, const ftm_trace *tr)
{
    int rc = 0, err;
    if (hf->f) {
        char title[96];
        snprintf(title, sizeof title, "ftmesh demo: %s allreduce on a %dx%d %s", l->algo,
                 l->mesh.rows, l->mesh.cols, l->mesh.torus ? "torus" : "mesh");
        err = ftm_lesson_html(hf->f, l, ring, title);
        rc = cli_out_commit(CMD, hf, err);
    }
    if (tf->f) {
        ftm_cost_params cp;
        ftm_cost_defaults(&cp);
        err = cli_trace_write(tf->f, tr, &l->mesh, d->trace_clock, &cp);
        if (cli_out_commit(CMD, tf, err))
            rc = CLI_EXIT_FAIL;
    }
    return rc;
}

/* Parses argv into d; CLI_EXIT_USAGE (printed), CLI_HELP, or 0. */
static int parse(int argc, char **argv, demo_args *d)
{
    d->o.mesh_spec = "4x4";
    int rc = cli_parse(CMD, argc, argv, demo_tables, demo_opt, d);
    if (rc)
        return rc;
    /* the default lesson: 4x4 without (1,1), a hole that forces a detour */
    if (!strcmp(d->o.mesh_spec, "4x4") && !d->o.torus && !d->o.nfail && !d->o.nfail_host &&
        !d->o.nfail_link && !d->o.random_faults)
        d->o.fail[d->o.nfail++] = "1,1";
    return 0;
}

/* Checks the mesh and options against each other; 0 or CLI_EXIT_USAGE. */
static int check_args(const demo_args *d, const ftm_mesh *m, int *victim)
{
    if (m->rows > DEMO_MAX_SIDE || m->cols > DEMO_MAX_SIDE)
        return cli_usage_error(CMD, "--mesh %dx%d: the demo is for meshes up to %dx%d "
                               "(use ftmesh allreduce for bigger ones)", m->rows, m->cols,
                               DEMO_MAX_SIDE, DEMO_MAX_SIDE);
    if (ftm_mesh_healthy_count(m) < 2)
        return cli_usage_error(CMD, "the mesh needs at least 2 healthy chips for a lesson");
    *victim = -1;
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
    if (d->o.seed_given && !d->o.random_faults_given)
        cli_warn(CMD, "--seed has no effect without --random-faults");
    return 0;
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

/* Parts 1 and 2 (and 3 and 4 for the whole lesson). */
static int lesson(const demo_args *d, const demo_out *o, const ftm_mesh *m, int victim,
                  cli_out *hf, cli_out *tf, long *wrong)
{
    const char *algo = d->algo ? d->algo : "ring";
    int whole = !d->algo;
    ftm_ring ring = { 0 };
    int have_ring = ftm_router_ring(m, &ring) == 0;
    demo_heading(o, "1. The mesh and its hole");
    demo_mesh(o, m, have_ring ? &ring : NULL);
    demo_pause(o);
    char h[80];
    snprintf(h, sizeof h, "2. %s allreduce, step by step", algo);
    demo_heading(o, h);
    ftm_trace *tr = NULL;
    ftm_lesson l;
    memset(&l, 0, sizeof l);
    int rc = tell_algo(o, m, algo, &tr, &l, wrong);
    int one_d = !strcmp(algo, "ring") || !strcmp(algo, "bidir");
    int orc = rc ? 0 : write_outputs(d, hf, tf, &l, one_d && have_ring ? &ring : NULL, tr);
    ftm_lesson_free(&l);
    ftm_trace_destroy(tr);
    if (have_ring)
        ftm_ring_free(&ring);
    if (!rc && whole) {
        demo_heading(o, "3. The 2-D algorithm on a torus with a dead host");
        rc = tell_2d(o, wrong);
    }
    if (!rc && victim >= 0) {
        demo_heading(o, whole ? "4. A chip dies in the middle" : "3. A chip dies in the middle");
        rc = tell_failure(o, m, algo, victim, wrong);
    }
    return rc ? rc : orc ? -1 : 0;
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
    demo_out out = out_mode(&d);
    long wrong = 0;
    int err = lesson(&d, &out, &m, victim, &hf, &tf, &wrong);
    cli_out_discard(&hf); /* not written: the lesson failed */
    cli_out_discard(&tf);
    if (err == FTM_EHANG)
        rc = cli_error(CMD, "the chips hung (ftmesh allreduce with the same mesh lists the "
                            "stuck chips)");
    else if (err > 0 || err < -1)
        rc = cli_error(CMD, "%s", ftm_strerror(err));
    else
        rc = err == -1 || wrong ? CLI_EXIT_FAIL : 0;
    if (err == FTM_EHANG)
        rc = CLI_EXIT_HANG;
    ftm_mesh_free(&m);
    cli_mesh_opts_free(&d.o);
    return rc;
}
