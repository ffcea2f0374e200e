/* Small helpers shared by the library's modules (not installed): a
 * monotonic clock, a non-negative modulo and qsort comparators. Static
 * inline, so each module keeps no exported symbol for them. */
#ifndef FTMESH_CORE_UTIL_H
#define FTMESH_CORE_UTIL_H

#include <stddef.h>
#include <time.h>

/* Seconds on the monotonic clock (differences only). */
static inline double core_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* a mod n in [0, n) for n > 0, also for negative a. */
static inline int core_mod(int a, int n) { return ((a % n) + n) % n; }

/* qsort comparators, ascending. */
static inline int core_cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return (x > y) - (x < y);
}

static inline int core_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

#endif
