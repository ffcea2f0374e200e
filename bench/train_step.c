/* One-chip training step time, the ftmesh side of bench/torch_train.py:
 * the default ResNet or BERT with its default optimizer, micro-batch =
 * batch, `warmup` untimed steps, then `steps` timed steps; prints the
 * median wall and thread-CPU time per step (ms) and the sgemm share.
 *   train_step resnet|bert [batch] [steps] [warmup]
 * Output (one line): model=.. batch=.. wall_ms=.. cpu_ms=.. sgemm_share=..
 * CPU time is what a shared machine cannot steal; both are medians. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "ftmesh/error.h"
#include "ftmesh/model.h"

static double clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, long n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int main(int argc, char **argv)
{
    const char *name = argc > 1 ? argv[1] : "resnet";
    int kind = !strcmp(name, "bert") ? FTM_MODEL_BERT : FTM_MODEL_RESNET;
    long batch = argc > 2 ? atol(argv[2]) : 32, steps = argc > 3 ? atol(argv[3]) : 10;
    long warmup = argc > 4 ? atol(argv[4]) : 2;
    if (batch <= 0 || steps <= 0 || warmup < 0) {
        fprintf(stderr, "usage: train_step resnet|bert [batch] [steps] [warmup]\n");
        return 2;
    }
    ftm_model_config cfg;
    ftm_model_config_default(&cfg, kind);
    cfg.max_batch = (int)batch;
    ftm_optim_config oc;
    ftm_optim_config_default(&oc, kind);
    ftm_model *m;
    ftm_optim *o;
    int rc = ftm_model_create(&m, &cfg);
    if (!rc && (rc = ftm_optim_create(&o, &oc, ftm_model_nparams(m))))
        ftm_model_destroy(m);
    if (rc) {
        fprintf(stderr, "train_step: %s\n", ftm_strerror(rc));
        return 1;
    }
    double *wall = malloc(sizeof(double) * (size_t)steps);
    double *cpu = malloc(sizeof(double) * (size_t)steps);
    double gemm_s = 0.0, total_s = 0.0, loss = 0.0;
    ftm_gemm_stats *g = ftm_model_gemm_stats(m);
    for (long s = 0; !rc && s < warmup + steps; s++) {
        double w0 = clock_s(CLOCK_MONOTONIC), c0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
        double g0 = g->seconds;
        rc = ftm_model_train_step(m, o, (uint64_t)s, batch, (int)batch, &loss);
        if (s < warmup)
            continue;
        wall[s - warmup] = clock_s(CLOCK_MONOTONIC) - w0;
        cpu[s - warmup] = clock_s(CLOCK_THREAD_CPUTIME_ID) - c0;
        gemm_s += g->seconds - g0;
        total_s += wall[s - warmup];
    }
    if (rc) {
        fprintf(stderr, "train_step: %s\n", ftm_strerror(rc));
        return 1;
    }
    printf("model=%s batch=%ld steps=%ld wall_ms=%.2f cpu_ms=%.2f sgemm_share=%.2f loss=%.4f\n",
           name, batch, steps, 1e3 * median(wall, steps), 1e3 * median(cpu, steps),
           gemm_s / total_s, loss);
    free(wall);
    free(cpu);
    ftm_optim_destroy(o);
    ftm_model_destroy(m);
    return 0;
}
