/* Helpers shared by the nn and model tests: reading the PyTorch reference
 * files (tests/data/README.md gives the format) and comparing arrays. */
#ifndef TEST_NN_UTIL_H
#define TEST_NN_UTIL_H
#include <stddef.h>

#define REF_MAX 32
typedef struct ref_tensor {
    char name[32];
    int ndim, dims[6];
    size_t n;
    float *v;
} ref_tensor;

typedef struct ref_case {
    int nt, np;
    ref_tensor t[REF_MAX];
    char pname[8][32];
    double pval[8];
} ref_case;

/* Loads $FTMESH_TEST_DATA/<file>; 0 on success. */
int ref_load(ref_case *rc, const char *file);
void ref_free(ref_case *rc);
/* Tensor by name (NULL if absent) and parameter by name (def if absent). */
ref_tensor *ref_get(ref_case *rc, const char *name);
double ref_param(const ref_case *rc, const char *name, double def);
/* max |a-b| / max(1, max|b|): error relative to the tensor's scale. */
double rel_err(const float *a, const float *b, size_t n);
/* Deterministic pseudo-random floats in [lo, hi). */
void fill_rand(float *x, size_t n, unsigned seed, float lo, float hi);
/* Central differences of f (a double-valued loss of the float buffer x) for
 * up to maxcheck elements of x, compared with the float gradient g: returns
 * the max over checked i of |num - g| / (atol + rtol |num|) (<= 1 passes). */
typedef double (*fd_loss)(void *ctx);
double fd_check(fd_loss f, void *ctx, float *x, const float *g, size_t n,
                float eps, double atol, double rtol, size_t maxcheck);
#endif
