/* sgemm benchmark: runs a few one-chip training steps of a model, takes the
 * GEMM shapes (and call counts) its sgemm wrapper recorded, then times
 * direct cblas_sgemm on the same shapes, and prints per-shape and total
 * GFLOP/s of both plus the share of step time spent in sgemm.
 *   sgemm_bench resnet|bert [batch] [steps] [depth] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cblas.h>
#include "ftmesh/error.h"
#include "ftmesh/model.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    int kind = argc > 1 && !strcmp(argv[1], "bert") ? FTM_MODEL_BERT : FTM_MODEL_RESNET;
    long batch = argc > 2 ? atol(argv[2]) : 32, steps = argc > 3 ? atol(argv[3]) : 5;
    ftm_model_config cfg;
    ftm_model_config_default(&cfg, kind);
    cfg.max_batch = (int)batch;
    if (argc > 4 && atoi(argv[4]) > 0)
        cfg.depth = atoi(argv[4]);
    ftm_optim_config oc;
    ftm_optim_config_default(&oc, kind);
    ftm_model *m;
    ftm_optim *o;
    int rc = ftm_model_create(&m, &cfg);
    if (!rc)
        rc = ftm_optim_create(&o, &oc, ftm_model_nparams(m));
    if (rc) {
        fprintf(stderr, "sgemm_bench: %s\n", ftm_strerror(rc));
        return 1;
    }
    double loss;
    ftm_model_train_step(m, o, 0, batch, (int)batch, &loss); /* warm-up, untimed */
    ftm_gemm_stats *st = ftm_model_gemm_stats(m);
    memset(st, 0, sizeof *st);
    double t0 = now_s();
    for (long s = 1; s <= steps && !rc; s++)
        rc = ftm_model_train_step(m, o, (uint64_t)s, batch, (int)batch, &loss);
    double step_s = (now_s() - t0) / (double)steps;
    if (rc) {
        fprintf(stderr, "sgemm_bench: %s\n", ftm_strerror(rc));
        return 1;
    }
    printf("%s depth %d batch %ld: %.2f ms/step, %.0f examples/s\n", argv[1] ? argv[1] : "resnet",
           cfg.depth, batch, step_s * 1e3, (double)batch / step_s);
    printf("  wrapper: %lu calls/step, %.3f GFLOP/step, sgemm %.1f%% of step time, %.2f GFLOP/s\n",
           (unsigned long)(st->calls / (uint64_t)steps), st->flops / (double)steps * 1e-9,
           100.0 * st->seconds / (step_s * (double)steps), st->flops / st->seconds * 1e-9);
    /* direct cblas_sgemm on the same shapes, same number of calls */
    double dflops = 0.0, dsec = 0.0;
    printf("  %-3s %-3s %6s %6s %6s %8s %10s %10s\n", "tA", "tB", "M", "N", "K", "calls/st",
           "direct GF/s", "share");
    for (int i = 0; i < st->nshapes; i++) {
        const ftm_gemm_shape *s = &st->shapes[i];
        size_t na = (size_t)s->M * s->K, nb = (size_t)s->K * s->N, nc = (size_t)s->M * s->N;
        float *A = malloc(na * sizeof(float)), *B = malloc(nb * sizeof(float)),
              *C = calloc(nc, sizeof(float));
        for (size_t k = 0; k < na; k++) A[k] = (float)(k % 7) * 0.1f;
        for (size_t k = 0; k < nb; k++) B[k] = (float)(k % 5) * 0.1f;
        double f = 2.0 * s->M * s->N * s->K * (double)s->calls, t1 = now_s();
        for (uint64_t c = 0; c < s->calls; c++)
            cblas_sgemm(CblasRowMajor, s->ta ? CblasTrans : CblasNoTrans,
                        s->tb ? CblasTrans : CblasNoTrans, s->M, s->N, s->K, 1.0f, A,
                        s->ta ? s->M : s->K, B, s->tb ? s->K : s->N, 0.0f, C, s->N);
        double dt = now_s() - t1;
        dflops += f;
        dsec += dt;
        printf("  %-3s %-3s %6d %6d %6d %8.1f %10.2f %9.1f%%\n", s->ta ? "T" : "N",
               s->tb ? "T" : "N", s->M, s->N, s->K, (double)s->calls / (double)steps,
               f / dt * 1e-9, 100.0 * f / st->flops);
        free(A); free(B); free(C);
    }
    printf("  direct cblas_sgemm on the same shapes: %.2f GFLOP/s (wrapper/direct = %.2f)\n",
           dflops / dsec * 1e-9, (st->flops / st->seconds) / (dflops / dsec));
    ftm_optim_destroy(o);
    ftm_model_destroy(m);
    return 0;
}
