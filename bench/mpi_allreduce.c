/* MPI_Allreduce on the same job as `ftmesh allreduce`: a float32 sum of
 * `bytes` per rank over all ranks, median wall time of `iters` (the slowest
 * rank's time of each iteration), busbw = bytes/time * 2(P-1)/P as in
 * nccl-tests and ftmesh. Inputs are small integers, so the sum is exact and
 * every element is checked. Built with mpicc by bench/run.sh:
 *   mpirun -np P mpi_allreduce BYTES [iters]
 * Prints: mpi P=.. bytes=.. wall_s=.. busbw_GBps=.. wrong=.. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int P, rank;
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    long bytes = argc > 1 ? atol(argv[1]) : 1L << 20;
    int iters = argc > 2 ? atoi(argv[2]) : 10;
    size_t n = (size_t)bytes / sizeof(float);
    float *s = malloc(n * sizeof(float)), *r = malloc(n * sizeof(float));
    double *t = malloc(sizeof(double) * (size_t)(iters > 0 ? iters : 1));
    if (!s || !r || !t || n == 0 || iters <= 0) {
        if (rank == 0)
            fprintf(stderr, "mpi_allreduce: bad size or out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (size_t i = 0; i < n; i++) {
        s[i] = (float)((rank + (long)i) % 7);
        r[i] = 0.0f;
    }
    MPI_Allreduce(s, r, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); /* warm-up */
    for (int k = 0; k < iters; k++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        MPI_Allreduce(s, r, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        double dt = MPI_Wtime() - t0;
        MPI_Reduce(&dt, &t[k], 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    }
    long wrong = 0, all = 0;
    for (size_t i = 0; i < n; i++) {
        long want = 0;
        for (int p = 0; p < P; p++)
            want += (p + (long)i) % 7;
        wrong += r[i] != (float)want;
    }
    MPI_Reduce(&wrong, &all, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        qsort(t, (size_t)iters, sizeof(double), cmp_d);
        double med = t[iters / 2];
        printf("mpi P=%d bytes=%ld wall_s=%.6g busbw_GBps=%.4g wrong=%ld\n", P, bytes, med,
               (double)bytes / med * 2.0 * (P - 1) / P * 1e-9, all);
    }
    free(s); free(r); free(t);
    MPI_Finalize();
    return 0;
}
