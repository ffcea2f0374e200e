/* The one sgemm wrapper every layer uses, plus one-time OpenBLAS setup. */
#include <pthread.h>
#include <string.h>
#include <time.h>
#include <cblas.h>
#include "ftmesh/nn.h"
#include "core/util.h"

static pthread_once_t nn_once = PTHREAD_ONCE_INIT;

/* The Debian OpenBLAS is the pthread build: without this every call from a
 * chip thread would fan out to its own pool (2 cores, 1000 chips). */
static void nn_init_once(void)
{
    openblas_set_num_threads(1);
}

void ftm_nn_init(void)
{
    pthread_once(&nn_once, nn_init_once);
}

static void count_shape(ftm_gemm_stats *st, int ta, int tb, int M, int N,
                        int K, uint64_t calls)
{
    for (int i = 0; i < st->nshapes; i++) {
        ftm_gemm_shape *s = &st->shapes[i];
        if (s->ta == ta && s->tb == tb && s->M == M && s->N == N && s->K == K) {
            s->calls += calls;
            return;
        }
    }
    if (st->nshapes < FTM_GEMM_MAX_SHAPES) {
        ftm_gemm_shape *s = &st->shapes[st->nshapes++];
        s->ta = ta; s->tb = tb; s->M = M; s->N = N; s->K = K; s->calls = calls;
    }
}

void ftm_nn_sgemm(ftm_gemm_stats *st, int ta, int tb, int M, int N, int K,
                  float alpha, const float *A, int lda, const float *B, int ldb,
                  float beta, float *C, int ldc)
{
    double t0 = st ? core_now_s() : 0.0;
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
                tb ? CblasTrans : CblasNoTrans, M, N, K, alpha, A, lda, B, ldb,
                beta, C, ldc);
    if (st) {
        st->seconds += core_now_s() - t0;
        st->calls++;
        st->flops += 2.0 * M * N * K;
        count_shape(st, ta ? 1 : 0, tb ? 1 : 0, M, N, K, 1);
    }
}

void ftm_nn_gemm_stats_add(ftm_gemm_stats *dst, const ftm_gemm_stats *src)
{
    dst->calls += src->calls;
    dst->flops += src->flops;
    dst->seconds += src->seconds;
    for (int i = 0; i < src->nshapes; i++) {
        const ftm_gemm_shape *s = &src->shapes[i];
        count_shape(dst, s->ta, s->tb, s->M, s->N, s->K, s->calls);
    }
}
