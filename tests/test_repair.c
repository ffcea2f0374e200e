/* Repairs: chips, hosts and links that come back during training. Kill and
 * repair scripts in exact mode stay bitwise equal to one chip with every
 * step reported exactly once: kills and repairs in different phases, a
 * chip that dies, comes back and dies again, a repair in the same step as
 * another kill, and random kill-and-repair scripts from a fixed list of
 * seeds (more with FTMESH_TEST_SCALE=full). Also the grammar and the
 * pre-run check of repairs.
 *
 * Models are shrunk as in test_train.c (milliseconds per step). */
#include <check.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "ftmesh/error.h"
#include "ftmesh/train.h"
#include "test_train_util.h"
#include "test_util.h"

static void tiny_opts(ftm_train_opts *o, int kind)
{
    test_tiny_opts(o, kind, 6);
    o->exact = 1;
}

typedef struct seen {
    int count[64];
    int chips[64];
    int repairs_told;
} seen;

static void on_step(void *ctx, const ftm_train_step *s)
{
    seen *v = ctx;
    if (s->step >= 0 && s->step < 64) {
        v->count[s->step]++;
        v->chips[s->step] = s->chips;
    }
}

static void on_event(void *ctx, const ftm_train_event *e)
{
    seen *v = ctx;
    v->repairs_told += e->repair && e->noticed; /* not one skipped with its kill */
}

static void add_lines(ftm_fault_script *s, const char *const *lines)
{
    for (int i = 0; lines[i]; i++) {
        ftm_fault_event e;
        char why[200] = "";
        ck_assert_msg(ftm_fault_parse_line(lines[i], FTM_FAULT_TRAIN, &e, why, sizeof why) == 0,
                      "%s: %s", lines[i], why);
        ck_assert_int_eq(ftm_fault_script_add(s, &e), 0);
    }
}

/* Runs o on m with s: success, every step once, bitwise equal to one chip,
 * replicas equal, every repair told. */
static void run_ok(const ftm_mesh *m, ftm_train_opts *o, const ftm_fault_script *s,
                   ftm_train_result *r, seen *v)
{
    memset(v, 0, sizeof *v);
    ftm_train_callbacks cb = { on_step, NULL, v, on_event };
    o->faults = s;
    o->check = 1;
    int rc = ftm_train_run(m, o, &cb, r);
    ck_assert_msg(rc == 0, "train: %s (%s)", ftm_strerror(rc), r->detail);
    for (long i = 0; i < o->steps; i++)
        ck_assert_msg(v->count[i] == 1, "step %ld reported %d times", i, v->count[i]);
    ck_assert_msg(r->bitwise_equal, "%s[%zu] = %.9g, one chip %.9g", r->diff_name, r->diff_index,
                  r->diff_val, r->diff_ref);
    ck_assert(r->replicas_equal && r->check_pass);
    ck_assert_int_eq(v->repairs_told, r->repairs);
    long alive = 0;
    for (long i = 0; i < o->steps; i++)
        alive += v->chips[i];
    ck_assert_int_eq(r->chip_steps, alive);
    ck_assert_int_eq(r->chip_steps_all, (long)m->nchips * o->steps);
}

static const char *const script_host[] = { "host:2,2@1", "repair host:2,2@3", NULL };
static const char *const script_same_step[] = { "0,1@1:forward", "repair 0,1@3", "2,2@3",
                                                "1,2@3:optimizer", "repair 2,2@5", NULL };
static const char *const script_links[] = { "link:0,0-0,1@1:allreduce:1", "repair link:0,0-0,1@2",
                                            "link:1,1>1,2@2:backward", "repair link:1,1>1,2@4",
                                            "3,3@4:allreduce", "repair 3,3@5", NULL };

/* What each scripted run must end with: repairs and chips at the end. */
static const struct {
    const char *const *lines;
    int repairs, chips_end;
} scripts[] = {
    { script_host, 1, 16 },
    { script_same_step, 2, 15 },
    { script_links, 3, 16 },
};

START_TEST(scripted)
{
    int k = _i % 3;
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, 4, 4, 0), 0);
    ftm_train_opts o;
    tiny_opts(&o, _i < 3 ? FTM_MODEL_RESNET : FTM_MODEL_BERT);
    ftm_fault_script s;
    ftm_fault_script_init(&s, FTM_FAULT_TRAIN);
    add_lines(&s, scripts[k].lines);
    ftm_train_result r;
    seen v;
    run_ok(&m, &o, &s, &r, &v);
    ck_assert_int_eq(r.repairs, scripts[k].repairs);
    ck_assert_int_eq(r.chips, scripts[k].chips_end);
    for (int i = 0; i < r.nevents; i++) {
        const ftm_train_event *e = &r.events[i];
        if (!e->repair)
            continue;
        ck_assert_int_ge(e->chips_after, v.chips[e->when]); /* a kill may follow */
        ck_assert(e->modeled_after_s > 0 && e->resumed == -1);
        if (strncmp(e->what, "link", 4)) { /* chips came back: state sent */
            ck_assert_msg(e->from[0] == '(' && e->state_bytes > 0, "%s from '%s'", e->what, e->from);
            ck_assert(e->lost_modeled_s > 0);
        } else {
            ck_assert(!e->from[0] && e->state_bytes == 0);
        }
    }
    ftm_train_result_free(&r);
    ftm_fault_script_free(&s);
    ftm_mesh_free(&m);
}
END_TEST

/* A chip that dies, comes back and dies again. */
START_TEST(dies_twice)
{
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, 3, 3, 0), 0);
    ftm_train_opts o;
    tiny_opts(&o, FTM_MODEL_RESNET);
    ftm_fault_script s;
    ftm_fault_script_init(&s, FTM_FAULT_TRAIN);
    static const char *const lines[] = { "1,1@1:allreduce", "repair 1,1@2", "1,1@3:backward",
                                         "repair 1,1@5", NULL };
    add_lines(&s, lines);
    ftm_train_result r;
    seen v;
    run_ok(&m, &o, &s, &r, &v);
    ck_assert_int_eq(r.repairs, 2);
    ck_assert_int_eq(r.nevents, 4);
    static const int chips[6] = { 9, 8, 9, 8, 8, 9 };
    for (int i = 0; i < 6; i++)
        ck_assert_int_eq(v.chips[i], chips[i]);
    ck_assert_int_eq(r.chip_steps, 51);
    /* (1,1)'s neighbours are one hop away: 1 hop of state each time */
    ck_assert_str_eq(r.events[1].from, "(0,1)");
    ftm_train_result_free(&r);
    ftm_fault_script_free(&s);
    ftm_mesh_free(&m);
}
END_TEST

/* Random kills, each repaired a few steps later: seeds from a fixed list
 * (the full suite tries more). Scripts the pre-run check refuses are
 * skipped, but most must run. */
START_TEST(fuzzed)
{
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, 3, 4, _i & 1), 0);
    ftm_train_opts o;
    tiny_opts(&o, FTM_MODEL_RESNET);
    o.steps = 7;
    ftm_fault_script s;
    ftm_fault_script_init(&s, FTM_FAULT_TRAIN);
    uint64_t seed = 1000 + (uint64_t)_i * 7919;
    char why[256];
    int rc = ftm_fault_script_random(&s, &m, 3, seed, o.steps, FTM_FAULT_KINDS_ALL, 0, 0, why, sizeof why);
    if (!rc)
        rc = ftm_fault_script_repair_after(&s, &m, 1 + _i % 3, o.steps);
    if (!rc)
        rc = ftm_fault_script_check(&s, &m, o.steps, NULL, why, sizeof why);
    if (rc == 0) {
        ftm_train_result r;
        seen v;
        run_ok(&m, &o, &s, &r, &v);
        ftm_train_result_free(&r);
    }
    ftm_fault_script_free(&s);
    ftm_mesh_free(&m);
}
END_TEST

/* A checkpoint keeps the mesh and the events to come: --resume goes on
 * with them (the repair and the later kill happen), bitwise equal. */
static atomic_int stop_flag;
static void stop_after_2(void *ctx, const ftm_train_step *s)
{
    on_step(ctx, s);
    if (s->step == 2)
        stop_flag = 1;
}

START_TEST(checkpoint_keeps_mesh_and_script)
{
    char path[] = "/tmp/ftmesh-repair-ckpt-XXXXXX";
    int fd = mkstemp(path);
    ck_assert(fd >= 0);
    close(fd);
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, 4, 4, 0), 0);
    ftm_train_opts o;
    tiny_opts(&o, FTM_MODEL_RESNET);
    o.steps = 7;
    ftm_fault_script s;
    ftm_fault_script_init(&s, FTM_FAULT_TRAIN);
    static const char *const lines[] = { "host:2,2@1:allreduce", "repair host:2,2@4",
                                         "0,1@5:forward", NULL };
    add_lines(&s, lines);
    ck_assert_int_eq(ftm_fault_script_check(&s, &m, o.steps, NULL, NULL, 0), 0);
    seen v;
    memset(&v, 0, sizeof v);
    ftm_train_callbacks cb = { stop_after_2, NULL, &v, on_event };
    ftm_train_result r;
    o.faults = &s;
    o.checkpoint = path;
    stop_flag = 0;
    o.stop = &stop_flag;
    ck_assert_int_eq(ftm_train_run(&m, &o, &cb, &r), 0);
    /* the flag is seen at the next step's barrier: 4 steps done */
    ck_assert_msg(r.interrupted && r.steps_done == 4 && r.chips == 12, "%d %ld %d", r.interrupted,
                  r.steps_done, r.chips);
    ftm_train_result_free(&r);
    /* resumed with no script of its own: the checkpoint's */
    o.faults = NULL;
    o.checkpoint = NULL;
    o.stop = NULL;
    o.resume = path;
    o.check = 1;
    memset(&v, 0, sizeof v);
    cb.step = on_step;
    int rc = ftm_train_run(&m, &o, &cb, &r);
    ck_assert_msg(rc == 0, "%s: %s", ftm_strerror(rc), r.detail);
    ck_assert_int_eq(r.start_step, 4);
    for (long i = 4; i < o.steps; i++)
        ck_assert_int_eq(v.count[i], 1);
    ck_assert_int_eq(v.chips[4], 16);
    ck_assert_int_eq(v.chips[5], 15);
    ck_assert_int_eq(r.repairs, 1);
    ck_assert(r.bitwise_equal && r.replicas_equal);
    ftm_train_result_free(&r);
    remove(path);
    ftm_fault_script_free(&s);
    ftm_mesh_free(&m);
}
END_TEST

START_TEST(grammar_and_check)
{
    ftm_fault_event e;
    char why[256], buf[128];
    ck_assert_int_eq(ftm_fault_parse_line("repair host:2,2@6", FTM_FAULT_TRAIN, &e, why, sizeof why), 0);
    ck_assert(e.repair && e.kind == FTM_FAULT_HOST && e.when == 6 && e.phase == FTM_PHASE_START);
    ftm_fault_format(&e, FTM_FAULT_TRAIN, buf, sizeof buf);
    ck_assert_str_eq(buf, "repair host:2,2@6");
    ck_assert_int_eq(ftm_fault_parse_line("kill 1,1@2:forward", FTM_FAULT_TRAIN, &e, why, sizeof why), 0);
    ck_assert(!e.repair && e.phase == FTM_PHASE_FORWARD);
    ck_assert_int_eq(ftm_fault_parse_line("repair 1,1@2:forward", FTM_FAULT_TRAIN, &e, why, sizeof why),
                     FTM_EINVAL);
    ck_assert_msg(strstr(why, "start of a step"), "%s", why);
    ck_assert_int_eq(ftm_fault_parse_line("repair1,1@2", FTM_FAULT_TRAIN, &e, why, sizeof why), FTM_EINVAL);
    ck_assert_int_eq(ftm_fault_parse("repair 1,1@2", FTM_FAULT_TRAIN, &e, why, sizeof why), FTM_EINVAL);

    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, 4, 4, 0), 0);
    static const struct { const char *const lines[3]; int rc; } cases[] = {
        { { "repair 1,1@3", NULL }, FTM_EINVAL },                 /* alive */
        { { "1,1@2", "repair 1,1@2", NULL }, FTM_EINVAL },        /* repairs come first */
        { { "1,1@2:forward", "repair 1,1@3", NULL }, 0 },
        { { "1,1@2", "repair 5,5@3", NULL }, FTM_ERANGE },
        { { "1,1@2", "repair 1,1@9", NULL }, FTM_ERANGE },        /* past the run */
        { { "link:0,0>0,1@1", "repair link:0,1>0,0@2", NULL }, FTM_EINVAL },
        { { "host:0,0@1", "repair 1,1@2", NULL }, 0 },            /* a chip of a dead host */
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        ftm_fault_script s;
        ftm_fault_script_init(&s, FTM_FAULT_TRAIN);
        for (int i = 0; cases[k].lines[i]; i++) {
            ck_assert_int_eq(ftm_fault_parse_line(cases[k].lines[i], FTM_FAULT_TRAIN, &e, why, sizeof why), 0);
            ck_assert_int_eq(ftm_fault_script_add(&s, &e), 0);
        }
        ftm_fault_verdict v;
        int rc = ftm_fault_script_check(&s, &m, 6, &v, why, sizeof why);
        ck_assert_msg(rc == cases[k].rc, "case %zu: %d (%s)", k, rc, why);
        ftm_fault_script_free(&s);
    }
    /* --repair-after: every kill comes back, none past the run */
    ftm_fault_script s;
    ftm_fault_script_init(&s, FTM_FAULT_TRAIN);
    static const char *const kills[] = { "1,1@1:backward", "link:0,0-0,1@4", "host:2,2@5", NULL };
    add_lines(&s, kills);
    ck_assert_int_eq(ftm_fault_script_repair_after(&s, NULL, 2, 7), 0); /* 7 is past the run */
    ck_assert_int_eq(s.n, 5);
    ck_assert(s.ev[3].repair && s.ev[3].when == 3 && s.ev[4].repair && s.ev[4].when == 6);
    ck_assert_int_eq(ftm_fault_script_check(&s, &m, 7, NULL, why, sizeof why), 0);
    ftm_fault_script_free(&s);
    ftm_mesh_free(&m);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("repair");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, grammar_and_check);
    tcase_add_loop_test(tc, scripted, 0, 4);
    tcase_add_test(tc, dies_twice);
    tcase_add_test(tc, checkpoint_keeps_mesh_and_script);
    int n = full_scale() ? 40 : sanitizer_scale() ? 2 : 6;
    tcase_add_loop_test(tc, fuzzed, 0, n);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return test_run(suite());
}
