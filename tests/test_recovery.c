/* Training through fault scripts and checkpoints: chips, hosts and links
 * dying at any step and phase, a second failure during a recovery, random
 * scripts and a seeded soak, all in exact mode (bitwise equal to one chip,
 * every step reported exactly once); checkpoints resumed bitwise, the stop
 * flag, refused scripts and files.
 *
 * Models are shrunk as in test_train.c (milliseconds per step). */
#include <check.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "ftmesh/checkpoint.h"
#include "ftmesh/error.h"
#include "ftmesh/train.h"
#include "test_train_util.h"
#include "test_util.h"

static void tiny_opts(ftm_train_opts *o, int kind)
{
    test_tiny_opts(o, kind, 4);
    o->exact = 1;
}

/* Counts reports per step: each must come exactly once. */
typedef struct seen {
    int count[64];
    double loss[64];
} seen;

static void on_step(void *ctx, const ftm_train_step *s)
{
    seen *v = ctx;
    if (s->step >= 0 && s->step < 64) {
        v->count[s->step]++;
        v->loss[s->step] = s->loss;
    }
}

static void add(ftm_fault_script *s, const char *text)
{
    ftm_fault_event e;
    char why[200] = "";
    ck_assert_msg(ftm_fault_parse(text, FTM_FAULT_TRAIN, &e, why, sizeof why) == 0, "%s: %s", text, why);
    ck_assert_int_eq(ftm_fault_script_add(s, &e), 0);
}

/* Runs o on m with script s and the checks every run must pass: success,
 * every step reported once with a positive finite loss, bitwise equal to
 * one chip. */
static void run_ok(const ftm_mesh *m, ftm_train_opts *o, const ftm_fault_script *s,
                   ftm_train_result *r)
{
    seen v;
    memset(&v, 0, sizeof v);
    ftm_train_callbacks cb = { on_step, NULL, &v, NULL };
    o->faults = s;
    o->check = 1;
    int rc = ftm_train_run(m, o, &cb, r);
    ck_assert_msg(rc == 0, "train: %s (%s)", ftm_strerror(rc), r->detail);
    for (long i = r->start_step; i < o->steps; i++) {
        ck_assert_msg(v.count[i] == 1, "step %ld reported %d times", i, v.count[i]);
        ck_assert_msg(v.loss[i] > 0 && isfinite(v.loss[i]), "step %ld loss %g", i, v.loss[i]);
        ck_assert(r->step[i].loss == v.loss[i] && r->step[i].wall_s > 0);
    }
    ck_assert_msg(r->bitwise_equal, "%s[%zu] = %.9g, one chip %.9g", r->diff_name, r->diff_index,
                  r->diff_val, r->diff_ref);
    ck_assert(r->replicas_equal);
    ck_assert(r->check_pass);
}

/* A dying link kills no chip: the chips at its ends notice, the rings are
 * rebuilt around it, and the step is redone. */
START_TEST(link_dies_kills_no_chip)
{
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, 3, 3, 0), 0);
    ftm_train_opts o;
    tiny_opts(&o, _i ? FTM_MODEL_BERT : FTM_MODEL_RESNET);
    ftm_fault_script s;
    ftm_fault_script_init(&s, FTM_FAULT_TRAIN);
    add(&s, _i ? "link:0,0-0,1@1:allreduce:1" : "link:0,0-0,1@1:forward");
    ftm_train_result r;
    run_ok(&m, &o, &s, &r);
    ck_assert_int_eq(r.chips, 9);
    ck_assert_int_eq(r.nevents, 1);
    const ftm_train_event *e = &r.events[0];
    ck_assert(e->noticed);
    ck_assert_int_eq(e->chips_after, 9);
    ck_assert_int_eq(e->when, 1);
    ck_assert_int_eq(e->resumed, 1);
    ck_assert_str_eq(e->what, "link (0,0)-(0,1)");
    ck_assert_msg(strstr(e->detected_by, "failed") && (strstr(e->detected_by, "(0,0)") ||
                                                       strstr(e->detected_by, "(0,1)")),
                  "%s", e->detected_by);
    ck_assert(e->lost_wall_s > 0 && e->lost_modeled_s > 0 && e->modeled_after_s > 0);
    ck_assert_int_eq(r.died_chip, -1);
    ftm_train_result_free(&r);
    ftm_fault_script_free(&s);
    ftm_mesh_free(&m);
}
END_TEST

/* A host takes its four chips at once, at any phase. */
START_TEST(host_dies)
{
    static const char *const when[] = { "1", "1:forward", "1:backward", "1:allreduce",
                                        "1:optimizer", "2:allreduce:0" };
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, 4, 4, 0), 0);
    ftm_train_opts o;
    tiny_opts(&o, _i % 2 ? FTM_MODEL_BERT : FTM_MODEL_RESNET);
    ftm_fault_script s;
    ftm_fault_script_init(&s, FTM_FAULT_TRAIN);
    char ev[64];
    snprintf(ev, sizeof ev, "host:2,2@%s", when[_i % 6]);
    add(&s, ev);
    ftm_train_result r;
    run_ok(&m, &o, &s, &r);
    ck_assert_int_eq(r.chips, 12);
    ck_assert_int_eq(r.nevents, 1);
    ck_assert_int_eq(r.events[0].chips_after, 12);
    ck_assert(strstr(r.events[0].detected_by, "health monitor") != NULL);
    ck_assert_int_eq(r.died_chip, ftm_mesh_chip(&m, 2, 2));
    ftm_train_result_free(&r);
    ftm_fault_script_free(&s);
    ftm_mesh_free(&m);
}
END_TEST

/* The second event is armed in the first attempt but that attempt stops
 * before it strikes; it strikes while step 1 is being redone. */
START_TEST(second_failure_during_recovery)
{
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, 4, 4, 0), 0);
    ftm_train_opts o;
    tiny_opts(&o, _i ? FTM_MODEL_BERT : FTM_MODEL_RESNET);
    ftm_fault_script s;
    ftm_fault_script_init(&s, FTM_FAULT_TRAIN);
    add(&s, "1,1@1:allreduce:1");
    add(&s, "2,2@1:allreduce:1000000");
    add(&s, "link:3,0-3,1@1:allreduce:2000000");
    ftm_train_result r;
    run_ok(&m, &o, &s, &r);
    ck_assert_int_eq(r.chips, 14);
    ck_assert_int_ge(r.nevents, 2);
    ck_assert_int_eq(r.events[0].resumed, 1);
    ck_assert_int_eq(r.events[1].resumed, 1);
    ck_assert_int_eq(r.events[1].chips_after, 14);
    ftm_train_result_free(&r);
    ftm_fault_script_free(&s);
    ftm_mesh_free(&m);
}
END_TEST

/* Random scripts over steps, phases and fault kinds, both models. */
START_TEST(random_scripts)
{
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, 4, 4, _i % 3 == 2), 0);
    ftm_train_opts o;
    tiny_opts(&o, _i % 2 ? FTM_MODEL_BERT : FTM_MODEL_RESNET);
    o.algo = (const char *[]){ "ring", "tree", "bidir", "auto" }[_i % 4];
    ftm_fault_script s;
    ftm_fault_script_init(&s, FTM_FAULT_TRAIN);
    int k = 1 + _i % 4;
    char why[200] = "";
    ck_assert_int_eq(ftm_fault_script_random(&s, &m, k, 1000 + (uint64_t)_i, o.steps,
                                             FTM_FAULT_KINDS_ALL, 0, 0, why, sizeof why), 0);
    ftm_train_result r;
    run_ok(&m, &o, &s, &r);
    ck_assert_int_eq(r.nevents, k);
    for (int i = 0; i < r.nevents; i++)
        ck_assert(!r.events[i].noticed || r.events[i].chips_after == r.chips ||
                  r.events[i].chips_after >= r.chips);
    ftm_train_result_free(&r);
    ftm_fault_script_free(&s);
    ftm_mesh_free(&m);
}
END_TEST

/* Many events in one run, seeded, bounded in time. */
START_TEST(soak)
{
    int small = sanitizer_scale();
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, small ? 4 : 6, small ? 4 : 6, 1), 0);
    ftm_train_opts o;
    tiny_opts(&o, FTM_MODEL_BERT);
    o.steps = small ? 5 : 8;
    o.batch = 16;
    ftm_fault_script s;
    ftm_fault_script_init(&s, FTM_FAULT_TRAIN);
    int k = small ? 5 : 12;
    ck_assert_int_eq(ftm_fault_script_random(&s, &m, k, 20261201, o.steps, FTM_FAULT_KINDS_ALL, 0, 0,
                                             NULL, 0), 0);
    ftm_train_result r;
    run_ok(&m, &o, &s, &r);
    ck_assert_int_eq(r.nevents, k);
    ftm_train_result_free(&r);
    ftm_fault_script_free(&s);
    ftm_mesh_free(&m);
}
END_TEST

/* A script that cuts the healthy chips apart is refused before the run. */
START_TEST(partition_refused)
{
    ftm_mesh m;
    ck_assert_int_eq(ftm_mesh_init(&m, 3, 3, 0), 0);
    ck_assert_int_eq(ftm_mesh_fail_chip(&m, 0, 1), 0);
    ftm_train_opts o;
    tiny_opts(&o, FTM_MODEL_RESNET);
    ftm_fault_script s;
    ftm_fault_script_init(&s, FTM_FAULT_TRAIN);
    add(&s, "1,0@1:allreduce");
    o.faults = &s;
    ftm_train_result r;
    ck_assert_int_eq(ftm_train_run(&m, &o, NULL, &r), FTM_EPARTITION);
    ck_assert_msg(strstr(r.detail, "(0,0)") != NULL, "%s", r.detail);
    ftm_train_result_free(&r);
    ftm_fault_script_free(&s);
    ftm_mesh_free(&m);
}
END_TEST

/* Stopped after 2 steps with a checkpoint, resumed to 5 (here or on a
 * faulty mesh): the same losses and final parameters, bit for bit, as 5
 * steps without a stop. */
START_TEST(checkpoint_resume_bitwise)
{
    char dir[] = "/tmp/ftm_resume_XXXXXX", path[96];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/ck", dir);
    ftm_mesh m, m2;
    ck_assert_int_eq(ftm_mesh_init(&m, 3, 3, 0), 0);
    ck_assert_int_eq(ftm_mesh_init(&m2, 3, 3, 0), 0);
    ck_assert_int_eq(ftm_mesh_fail_chip(&m2, 1, 1), 0);
    ftm_train_opts o;
    tiny_opts(&o, _i ? FTM_MODEL_BERT : FTM_MODEL_RESNET);
    o.steps = 5;
    ftm_train_result full, part, res;
    run_ok(&m, &o, NULL, &full);
    atomic_int stop = 0;
    o.checkpoint = path;
    o.checkpoint_every = 1;
    o.steps = 2;
    run_ok(&m, &o, NULL, &part);
    ck_assert_int_eq(part.checkpoints, 2);
    o.checkpoint = NULL;
    o.steps = 5;
    o.resume = path;
    o.stop = &stop;
    run_ok(&m2, &o, NULL, &res);
    ck_assert_int_eq(res.start_step, 2);
    ck_assert_int_eq(memcmp(res.params, full.params, sizeof(float) * full.nparams), 0);
    for (int i = 0; i < 5; i++) /* exact losses: equal up to the loss sum's rounding */
        ck_assert(fabs(res.step[i].loss - full.step[i].loss) <= 1e-12 * full.step[i].loss);
    ftm_train_result_free(&res);
    /* The stop flag: one more step, the checkpoint, stop. */
    stop = 1;
    o.checkpoint = path;
    ck_assert_int_eq(ftm_train_run(&m, &o, NULL, &res), 0);
    ck_assert(res.interrupted);
    ck_assert_int_eq(res.steps_done, 3);
    ck_assert_int_eq(res.checkpoints, 1);
    ftm_ckpt_state st;
    char why[256];
    ck_assert_int_eq(ftm_ckpt_load(path, NULL, NULL, &st, why, sizeof why), 0);
    ck_assert_int_eq(st.step, 3);
    ftm_ckpt_state_free(&st);
    ftm_train_result_free(&res);
    /* Another model: refused, nothing loaded. */
    ftm_train_opts b;
    tiny_opts(&b, _i ? FTM_MODEL_RESNET : FTM_MODEL_BERT);
    b.resume = path;
    ck_assert_int_eq(ftm_train_run(&m, &b, NULL, &res), FTM_ECONFIG);
    ck_assert_msg(strstr(res.detail, "another model") != NULL, "%s", res.detail);
    ftm_train_result_free(&res);
    ftm_train_result_free(&full);
    ftm_train_result_free(&part);
    unlink(path);
    rmdir(dir);
    ftm_mesh_free(&m);
    ftm_mesh_free(&m2);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("recovery");
    TCase *tc = tcase_create("recovery");
    tcase_set_timeout(tc, 240);
    tcase_add_loop_test(tc, link_dies_kills_no_chip, 0, 2);
    tcase_add_loop_test(tc, host_dies, 0, 6);
    tcase_add_loop_test(tc, second_failure_during_recovery, 0, 2);
    tcase_add_loop_test(tc, random_scripts, 0, sanitizer_scale() ? 4 : 12);
    tcase_add_test(tc, soak);
    tcase_add_test(tc, partition_refused);
    tcase_add_loop_test(tc, checkpoint_resume_bitwise, 0, 2);
    suite_add_tcase(s, tc);
    return test_run(s);
}
