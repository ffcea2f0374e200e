/* One-chip training driver: trains the default ResNet or BERT on the
 * default (synthetic) data and prints step, loss, examples/s and the sgemm
 * share, to show the loss falling (README numbers come from here).
 *   nn_train resnet|bert [steps] [batch] [seed] [depth] [lr] [optim]
 * optim: sgd, adamw, lamb (default: the model's default optimizer). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "ftmesh/error.h"
#include "ftmesh/model.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct { ftm_model *m; long batch, steps; double t0, first; } ctx;

static void on_step(void *p, long step, double loss, double sec)
{
    ctx *c = p;
    if (step == 0)
        c->first = loss;
    if (step % 10 == 0 || step == c->steps - 1) {
        ftm_gemm_stats *g = ftm_model_gemm_stats(c->m);
        double el = now_s() - c->t0;
        printf("step %5ld  loss %.4f  %.1f ex/s  sgemm %.0f%% of time, %.2f GFLOP/s\n", step,
               loss, (double)c->batch / sec, 100.0 * g->seconds / el,
               g->flops / g->seconds * 1e-9);
        fflush(stdout);
    }
}

int main(int argc, char **argv)
{
    int kind = argc > 1 && !strcmp(argv[1], "bert") ? FTM_MODEL_BERT : FTM_MODEL_RESNET;
    long steps = argc > 2 ? atol(argv[2]) : 300, batch = argc > 3 ? atol(argv[3]) : 32;
    ftm_model_config cfg;
    ftm_model_config_default(&cfg, kind);
    cfg.seed = argc > 4 ? strtoull(argv[4], NULL, 10) : 1;
    if (argc > 5 && atoi(argv[5]) > 0)
        cfg.depth = atoi(argv[5]);
    cfg.max_batch = (int)batch;
    ftm_optim_config oc;
    ftm_optim_config_default(&oc, kind);
    if (argc > 6 && atof(argv[6]) > 0)
        oc.lr = (float)atof(argv[6]);
    if (argc > 7)
        oc.kind = !strcmp(argv[7], "sgd") ? FTM_OPTIM_SGD
                : !strcmp(argv[7], "lamb") ? FTM_OPTIM_LAMB : FTM_OPTIM_ADAMW;
    ftm_model *m;
    ftm_optim *o;
    int rc = ftm_model_create(&m, &cfg);
    if (!rc)
        rc = ftm_optim_create(&o, &oc, ftm_model_nparams(m));
    if (rc) {
        fprintf(stderr, "nn_train: %s\n", ftm_strerror(rc));
        return 1;
    }
    printf("%s depth %d, %zu params, batch %ld, lr %g, optim %d\n", argv[1] ? argv[1] : "resnet",
           cfg.depth, ftm_model_nparams(m), batch, oc.lr, oc.kind);
    double *losses = malloc(sizeof(double) * (size_t)steps);
    ctx c = {m, batch, steps, now_s(), 0};
    rc = ftm_model_train(m, o, steps, batch, (int)batch, losses, on_step, &c);
    if (rc) {
        fprintf(stderr, "nn_train: %s\n", ftm_strerror(rc));
        return 1;
    }
    double tail = 0;
    int k = steps < 10 ? (int)steps : 10;
    for (int i = 0; i < k; i++)
        tail += losses[steps - 1 - i] / k;
    printf("first loss %.4f, mean of last %d %.4f, ratio %.3f, %.1f s\n", c.first, k, tail,
           tail / c.first, now_s() - c.t0);
    free(losses);
    ftm_optim_destroy(o);
    ftm_model_destroy(m);
    return 0;
}
