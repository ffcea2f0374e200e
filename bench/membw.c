/* The memory floor of this machine, one thread: memcpy and a[i] += b[i]
 * (the reduction an allreduce does) on buffers far larger than the caches,
 * median of `iters`. An allreduce that copies or reduces every byte cannot
 * beat these. Bandwidth is counted as traffic: memcpy reads n and writes n
 * bytes (2n), the add reads 2n and writes n (3n); "rate" is n per second.
 *   membw [MiB] [iters]      (default 64 MiB, 10) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void add(float *restrict a, const float *restrict b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        a[i] += b[i];
}

int main(int argc, char **argv)
{
    size_t mib = argc > 1 ? (size_t)atol(argv[1]) : 64;
    int iters = argc > 2 ? atoi(argv[2]) : 10;
    if (mib == 0 || iters <= 0) {
        fprintf(stderr, "usage: membw [MiB] [iters]\n");
        return 2;
    }
    size_t bytes = mib << 20, n = bytes / sizeof(float);
    float *a = malloc(bytes), *b = malloc(bytes);
    double *tc = malloc(sizeof(double) * (size_t)iters), *ta = malloc(sizeof(double) * (size_t)iters);
    if (!a || !b || !tc || !ta) {
        fprintf(stderr, "membw: out of memory\n");
        return 1;
    }
    for (size_t i = 0; i < n; i++) {   /* touch every page before timing */
        a[i] = 1.0f;
        b[i] = 0.0f;
    }
    for (int k = 0; k < iters; k++) {
        double t0 = now_s();
        memcpy(a, b, bytes);
        tc[k] = now_s() - t0;
        t0 = now_s();
        add(a, b, n);
        ta[k] = now_s() - t0;
    }
    qsort(tc, (size_t)iters, sizeof(double), cmp_d);
    qsort(ta, (size_t)iters, sizeof(double), cmp_d);
    double c = tc[iters / 2], s = ta[iters / 2];
    printf("membw bytes=%zu memcpy_GBps=%.2f memcpy_traffic_GBps=%.2f add_GBps=%.2f "
           "add_traffic_GBps=%.2f check=%g\n", bytes, bytes / c * 1e-9, 2.0 * bytes / c * 1e-9,
           bytes / s * 1e-9, 3.0 * bytes / s * 1e-9, (double)a[n / 2]);
    free(a); free(b); free(tc); free(ta);
    return 0;
}
