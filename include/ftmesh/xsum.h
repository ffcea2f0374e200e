/* xsum: exact, order-independent sums of doubles in int64 words.
 *
 * Why: a sum whose bits do not depend on the order of its terms is what
 * makes exact mode bitwise equal on any mesh, with any holes and any
 * allreduce algorithm (batch-norm statistics, losses). A fixed point with a
 * fixed number of fractional bits would do that too, but its precision is
 * absolute: statistics of small activations lose most of their digits.
 *
 * How: fixed binning (Neal, "Fast exact summation using small and large
 * superaccumulators", 2015, arXiv:1505.05571, the "small superaccumulator";
 * the same bins-at-fixed-exponents idea as ReproBLAS's binned sums, Ahrens,
 * Demmel, Nguyen, "Algorithms for efficient reproducible floating point
 * summation", ACM TOMS 46(3), 2020, without its index, which would need a
 * reduction operator of its own). A value is cut at fixed binary points
 * into FTM_XSUM_CHUNKS chunks of FTM_XSUM_BITS bits; chunk k carries the
 * bits of weight 2^(FTM_XSUM_LO + 32k) to 2^(FTM_XSUM_LO + 32k + 31), with
 * the value's sign, in an int64 word of its own. Sums add word by word:
 * integer additions, exact and associative, so any order, grouping or split
 * over chips gives the same words, and a plain int64 SUM allreduce
 * (FTM_RED_SUM_I64) combines the accumulators of many chips. The 31 spare
 * bits of a word leave room for 2^31 terms.
 *
 * Precision is relative at any scale inside the range: a term keeps its
 * bits down to 2^FTM_XSUM_LO (2^-160, so every bit of a double from about
 * 1e-32 up); |term| must be below 2^FTM_XSUM_HI (2^96, about 8e28). A term
 * that is not finite or out of range is counted in the last word, and the
 * sum's value is then NaN (never an error in the middle of a collective).
 * An accumulator is FTM_XSUM_WORDS int64 words; all zero is the empty sum.
 *
 * Functions are pure and reentrant (any thread, disjoint accumulators).
 */
#ifndef FTMESH_XSUM_H
#define FTMESH_XSUM_H

#include <stddef.h>
#include <stdint.h>

#define FTM_XSUM_BITS 32
#define FTM_XSUM_CHUNKS 8
#define FTM_XSUM_LO (-160)
#define FTM_XSUM_HI (FTM_XSUM_LO + FTM_XSUM_BITS * FTM_XSUM_CHUNKS)
/* the chunks, then the count of terms that were not finite or in range */
#define FTM_XSUM_WORDS (FTM_XSUM_CHUNKS + 1)

/* acc (FTM_XSUM_WORDS words) += v. 0, or FTM_ERANGE if a word would
 * overflow (more than 2^31 terms), and then acc is unchanged. */
int ftm_xsum_add(int64_t *acc, double v);
/* acc[i] += v[i] for n accumulators (acc: n * FTM_XSUM_WORDS words). */
int ftm_xsum_add_n(int64_t *acc, const double *v, size_t n);
/* acc += b word by word (merging two sums); FTM_ERANGE on overflow, acc
 * unchanged. */
int ftm_xsum_merge(int64_t *acc, const int64_t *b);
/* The sum's value, a pure function of the words (so equal words give
 * equal bits): carries propagated, then rounded to double, within a few
 * units in the last place of the exact sum. NaN if a term was not finite
 * or out of range. */
double ftm_xsum_value(const int64_t *acc);
/* out[i] = ftm_xsum_value(acc + i * FTM_XSUM_WORDS) for i < n. */
void ftm_xsum_value_n(double *out, const int64_t *acc, size_t n);

#endif
