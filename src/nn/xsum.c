/* Exact binned sums (include/ftmesh/xsum.h). */
#include <math.h>
#include <string.h>
#include "ftmesh/error.h"
#include "ftmesh/xsum.h"

#define NC FTM_XSUM_CHUNKS
#define SPECIAL NC                      /* index of the out-of-range count */
#define DIGIT ((int64_t)1 << FTM_XSUM_BITS)

/* Cuts v into chunks: c[k] = the bits of v of weight 2^(LO + 32k) ..
 * 2^(LO + 32k + 31) as a signed integer (all with v's sign), from the top:
 * each step removes exactly the bits it took (r - q 2^e keeps the low bits
 * of r, which a double holds exactly), and what is below 2^LO is dropped. */
static void cut(double v, int64_t *c)
{
    double r = v;
    for (int k = NC - 1; k >= 0; k--) {
        int e = FTM_XSUM_LO + FTM_XSUM_BITS * k;
        double q = trunc(ldexp(r, -e));
        c[k] = (int64_t)q;
        r -= ldexp(q, e);
    }
}

int ftm_xsum_merge(int64_t *acc, const int64_t *b)
{
    int64_t t[FTM_XSUM_WORDS];
    for (int k = 0; k < FTM_XSUM_WORDS; k++)
        if (__builtin_add_overflow(acc[k], b[k], &t[k]))
            return FTM_ERANGE;
    memcpy(acc, t, sizeof t);
    return 0;
}

int ftm_xsum_add(int64_t *acc, double v)
{
    int64_t c[FTM_XSUM_WORDS] = {0};
    if (!(fabs(v) < ldexp(1.0, FTM_XSUM_HI)))   /* also NaN */
        c[SPECIAL] = 1;
    else
        cut(v, c);
    return ftm_xsum_merge(acc, c);
}

int ftm_xsum_add_n(int64_t *acc, const double *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int rc = ftm_xsum_add(acc + i * FTM_XSUM_WORDS, v[i]);
        if (rc)
            return rc;
    }
    return 0;
}

double ftm_xsum_value(const int64_t *acc)
{
    if (acc[SPECIAL])
        return NAN;
    /* Carry pass: every word becomes a digit in [0, 2^32) plus a carry into
     * the next; word = lo + hi 2^32 with |hi| <= 2^31, so no sum overflows.
     * w[NC] is the signed top. */
    int64_t w[NC + 1], carry = 0;
    for (int k = 0; k < NC; k++) {
        int64_t lo = acc[k] & (DIGIT - 1), hi = (acc[k] - lo) / DIGIT;
        int64_t d = lo + carry;
        int64_t dlo = d & (DIGIT - 1);
        carry = hi + (d - dlo) / DIGIT;
        w[k] = dlo;
    }
    w[NC] = carry;
    /* Negative: negate the digits (with borrows), so every term is >= 0
     * and the top-down double sum below has no cancellation. */
    int neg = w[NC] < 0;
    if (neg) {
        int64_t borrow = 0;
        for (int k = 0; k < NC; k++) {
            int64_t d = -w[k] - borrow;
            borrow = d < 0;
            w[k] = d + (borrow ? DIGIT : 0);
        }
        w[NC] = -w[NC] - borrow;
    }
    double v = 0.0;
    for (int k = NC; k >= 0; k--)
        v += ldexp((double)w[k], FTM_XSUM_LO + FTM_XSUM_BITS * k);
    return neg ? -v : v;
}

void ftm_xsum_value_n(double *out, const int64_t *acc, size_t n)
{
    for (size_t i = 0; i < n; i++)
        out[i] = ftm_xsum_value(acc + i * FTM_XSUM_WORDS);
}
