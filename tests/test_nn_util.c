#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "test_nn_util.h"

int ref_load(ref_case *rc, const char *file)
{
    const char *dir = getenv("FTMESH_TEST_DATA");
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir ? dir : "tests/data", file);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    memset(rc, 0, sizeof *rc);
    char word[64];
    while (fscanf(f, "%63s", word) == 1) {
        if (word[0] == '#') {
            int c;
            while ((c = fgetc(f)) != EOF && c != '\n')
                ;
        } else if (!strcmp(word, "param") && rc->np < 8) {
            if (fscanf(f, "%31s %lf", rc->pname[rc->np], &rc->pval[rc->np]) != 2)
                break;
            rc->np++;
        } else if (!strcmp(word, "tensor") && rc->nt < REF_MAX) {
            ref_tensor *t = &rc->t[rc->nt++];
            if (fscanf(f, "%31s", t->name) != 1)
                break;
            t->n = 1;
            int c;
            while ((c = fgetc(f)) == ' ') {
                if (fscanf(f, "%d", &t->dims[t->ndim]) != 1)
                    break;
                t->n *= (size_t)t->dims[t->ndim++];
            }
            t->v = malloc(sizeof(float) * t->n);
            for (size_t i = 0; i < t->n; i++)
                if (fscanf(f, "%f", &t->v[i]) != 1) {
                    fclose(f);
                    return -1;
                }
        }
    }
    fclose(f);
    return rc->nt > 0 ? 0 : -1;
}

void ref_free(ref_case *rc)
{
    for (int i = 0; i < rc->nt; i++)
        free(rc->t[i].v);
    rc->nt = 0;
}

ref_tensor *ref_get(ref_case *rc, const char *name)
{
    for (int i = 0; i < rc->nt; i++)
        if (!strcmp(rc->t[i].name, name))
            return &rc->t[i];
    return NULL;
}

double ref_param(const ref_case *rc, const char *name, double def)
{
    for (int i = 0; i < rc->np; i++)
        if (!strcmp(rc->pname[i], name))
            return rc->pval[i];
    return def;
}

double rel_err(const float *a, const float *b, size_t n)
{
    double mx = 1.0, d = 0.0;
    for (size_t i = 0; i < n; i++) {
        if (fabs(b[i]) > mx)
            mx = fabs(b[i]);
        double e = fabs((double)a[i] - (double)b[i]);
        if (e > d || isnan(e))
            d = isnan(e) ? INFINITY : e;
    }
    return d / mx;
}

void fill_rand(float *x, size_t n, unsigned seed, float lo, float hi)
{
    uint64_t s = seed * 2654435761u + 12345;
    for (size_t i = 0; i < n; i++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        x[i] = lo + (hi - lo) * (float)((s >> 40) * (1.0 / 16777216.0));
    }
}

double fd_check(fd_loss f, void *ctx, float *x, const float *g, size_t n,
                float eps, double atol, double rtol, size_t maxcheck)
{
    size_t stride = n > maxcheck ? n / maxcheck : 1;
    double worst = 0.0;
    for (size_t i = 0; i < n; i += stride) {
        float x0 = x[i];
        x[i] = x0 + eps;
        double lp = f(ctx);
        x[i] = x0 - eps;
        double lm = f(ctx);
        x[i] = x0;
        double num = (lp - lm) / (2.0 * (double)eps);
        double r = fabs(num - g[i]) / (atol + rtol * fabs(num));
        if (r > worst || isnan(r))
            worst = isnan(r) ? INFINITY : r;
    }
    return worst;
}
