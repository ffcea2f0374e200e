/* Exact binned sums (xsum.h): exactness, bitwise independence of order and
 * grouping, relative precision at small and large scales, range. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "ftmesh/error.h"
#include "ftmesh/xsum.h"
#include "test_util.h"

#define W FTM_XSUM_WORDS

static uint64_t lcg(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return *s >> 11;
}

/* A double with a random 53-bit mantissa, sign, and exponent in [lo, hi]. */
static double rand_val(uint64_t *s, int lo, int hi, int signs)
{
    double m = (double)(lcg(s) | (1ULL << 52)) * 0x1p-53; /* [0.5, 1) */
    int e = lo + (int)(lcg(s) % (uint64_t)(hi - lo + 1));
    double v = ldexp(m, e);
    return signs && (lcg(s) & 1) ? -v : v;
}

/* Sum of v[0..n) by Neumaier's compensated summation: within about one
 * rounding of the exact sum for the data used here (no huge cancellation). */
static double neumaier(const double *v, int n)
{
    double s = 0, c = 0;
    for (int i = 0; i < n; i++) {
        double t = s + v[i];
        c += fabs(s) >= fabs(v[i]) ? (s - t) + v[i] : (v[i] - t) + s;
        s = t;
    }
    return s + c;
}

static double sum_of(const double *v, int n)
{
    int64_t a[W] = {0};
    for (int i = 0; i < n; i++)
        ck_assert_int_eq(ftm_xsum_add(a, v[i]), 0);
    return ftm_xsum_value(a);
}

START_TEST(exact_small_cases)
{
    ck_assert(sum_of(NULL, 0) == 0.0);
    double a[] = { 1e20, 1.0, -1e20 };           /* float sums give 0 */
    ck_assert(sum_of(a, 3) == 1.0);
    double b[] = { 0.1, 0.2, -0.3 };  /* the doubles' exact sum is 2^-55 */
    ck_assert(sum_of(b, 3) == 0x1p-55);
    double c[] = { 3.5, -7.25, 0x1p-150, 0x1p95, -0x1p95 };
    ck_assert(sum_of(c, 5) == 3.5 - 7.25 + 0x1p-150);
    double d[] = { -0x1p-160, -1.0 };             /* negative, lowest bit kept */
    ck_assert(sum_of(d, 2) == -1.0 - 0x1p-160);
    double e[] = { 0x1p-161, 0x1p-200 };           /* below the lowest bin: dropped */
    ck_assert(sum_of(e, 2) == 0.0);
    double f[] = { -0.0 };
    ck_assert(sum_of(f, 1) == 0.0);
}
END_TEST

/* Shuffled and regrouped (as chips would split the terms), the words and
 * the value are the same bits; _i picks the scale. */
START_TEST(order_and_grouping)
{
    static const int scale[][2] = { { -150, 90 }, { -60, -20 }, { 20, 60 }, { -5, 5 } };
    enum { N = 400 };
    double v[N];
    uint64_t s = 77 + (uint64_t)_i;
    for (int i = 0; i < N; i++)
        v[i] = rand_val(&s, scale[_i][0], scale[_i][1], 1);
    int64_t ref[W] = {0};
    for (int i = 0; i < N; i++)
        ck_assert_int_eq(ftm_xsum_add(ref, v[i]), 0);
    for (int trial = 0; trial < 20; trial++) {
        for (int i = N - 1; i > 0; i--) { /* Fisher-Yates */
            int j = (int)(lcg(&s) % (uint64_t)(i + 1));
            double t = v[i]; v[i] = v[j]; v[j] = t;
        }
        int parts = 1 + trial % 6;
        int64_t part[6][W], tot[W] = {0};
        memset(part, 0, sizeof part);
        for (int i = 0; i < N; i++)
            ck_assert_int_eq(ftm_xsum_add(part[lcg(&s) % (uint64_t)parts], v[i]), 0);
        for (int p = parts - 1; p >= 0; p--)
            ck_assert_int_eq(ftm_xsum_merge(tot, part[p]), 0);
        ck_assert_mem_eq(tot, ref, sizeof ref);
        double a = ftm_xsum_value(tot), b = ftm_xsum_value(ref);
        ck_assert_mem_eq(&a, &b, sizeof a);
    }
}
END_TEST

/* Relative precision at any scale: positive terms (no cancellation) at
 * scales from 1e-30 to 1e20, within 4 units of 2^-52 of a compensated
 * sum; a fixed point with 24 fractional bits would return 0 at the small
 * scales. Mixed signs: within 1e-15 of the sum of absolute values. */
START_TEST(relative_precision)
{
    static const int scale[] = { -100, -60, -30, -10, 0, 30, 60 };
    enum { N = 1000 };
    double v[N], av[N];
    uint64_t s = 5;
    for (size_t k = 0; k < sizeof scale / sizeof *scale; k++)
        for (int signs = 0; signs < 2; signs++) {
            for (int i = 0; i < N; i++) {
                v[i] = rand_val(&s, scale[k] - 8, scale[k], signs);
                av[i] = fabs(v[i]);
            }
            double x = sum_of(v, N), ref = neumaier(v, N), mag = neumaier(av, N);
            double tol = signs ? 1e-15 * mag : 4 * 0x1p-52 * fabs(ref);
            ck_assert_msg(fabs(x - ref) <= tol, "scale 2^%d signs %d: %.17g vs %.17g",
                          scale[k], signs, x, ref);
            ck_assert(x != 0.0);
        }
}
END_TEST

/* Out of range or not finite: counted, and the value is NaN (not an
 * error in the middle of a collective); word overflow is FTM_ERANGE with
 * the accumulator unchanged. */
START_TEST(range)
{
    double big[] = { 1.0, ldexp(1.0, FTM_XSUM_HI) };
    ck_assert(isnan(sum_of(big, 2)));
    double just[] = { ldexp(1.0, FTM_XSUM_HI) * (1 - 0x1p-53) };
    ck_assert(sum_of(just, 1) == just[0]);
    double inf[] = { INFINITY }, nan_[] = { NAN }, ninf[] = { -INFINITY, 1.0 };
    ck_assert(isnan(sum_of(inf, 1)));
    ck_assert(isnan(sum_of(nan_, 1)));
    ck_assert(isnan(sum_of(ninf, 2)));
    int64_t a[W] = {0}, b[W], keep[W];
    ck_assert_int_eq(ftm_xsum_add(a, 1.0), 0);
    for (int k = 0; k < W; k++)
        b[k] = INT64_MAX;
    memcpy(keep, a, sizeof a);
    ck_assert_int_eq(ftm_xsum_merge(a, b), FTM_ERANGE);
    ck_assert_mem_eq(a, keep, sizeof a);
    /* near-full words still convert without overflow: 2^31 terms of the
     * largest chunk in every word */
    for (int k = 0; k < W - 1; k++)
        b[k] = (INT64_C(1) << 31) * (INT64_C(0xffffffff));
    b[W - 1] = 0;
    double x = ftm_xsum_value(b);
    ck_assert(isfinite(x) && x > 0x1p126);
    for (int k = 0; k < W - 1; k++)
        b[k] = -b[k];
    ck_assert(ftm_xsum_value(b) == -x);
}
END_TEST

START_TEST(arrays)
{
    double v[3] = { 1.5, -2.0, 0x1p-100 }, out[3];
    int64_t a[3 * W] = {0};
    ck_assert_int_eq(ftm_xsum_add_n(a, v, 3), 0);
    ck_assert_int_eq(ftm_xsum_add_n(a, v, 3), 0);
    ftm_xsum_value_n(out, a, 3);
    ck_assert(out[0] == 3.0 && out[1] == -4.0 && out[2] == 0x1p-99);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("xsum");
    TCase *tc = tcase_create("xsum");
    tcase_add_test(tc, exact_small_cases);
    tcase_add_loop_test(tc, order_and_grouping, 0, 4);
    tcase_add_test(tc, relative_precision);
    tcase_add_test(tc, range);
    tcase_add_test(tc, arrays);
    suite_add_tcase(s, tc);
    return test_run(s);
}
