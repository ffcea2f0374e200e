/* Small helpers shared by the library's modules (not installed): a
 * clock in seconds, a non-negative modulo and qsort comparators. Static
 * inline, so each module keeps no exported symbol for them. */
#ifndef FTMESH_CORE_UTIL_H
#define FTMESH_CORE_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <time.h>

/* Seconds on clock id (0 when the clock cannot be read): the one
 * conversion every module uses, whichever clock it reads. */
static inline double core_clock_s(clockid_t id)
{
    struct timespec ts;
    if (clock_gettime(id, &ts))
        return 0.0;
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Seconds on the monotonic clock (differences only). */
static inline double core_now_s(void) { return core_clock_s(CLOCK_MONOTONIC); }

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

/* Writes a one-line detail (when the caller gave a buffer) and returns rc:
 * the library's errors are codes, the detail says which input and why. */
static inline int core_fail_detail(int rc, char *detail, size_t dlen, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static inline int core_fail_detail(int rc, char *detail, size_t dlen, const char *fmt, ...)
{
    if (detail && dlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(detail, dlen, fmt, ap);
        va_end(ap);
    }
    return rc;
}

#endif
