/* Shared by the Check test programs: the test scale and the runner.
 *
 * FTMESH_TEST_SCALE picks how much of each heavy test runs:
 *   unset      make check: every test, the heavy ones on a subset (a minute)
 *   full       make check-full: the full property sweeps and pod ratchets
 *   sanitizer  the sanitizer builds of CI: the smallest subsets
 */
#ifndef FTMESH_TEST_UTIL_H
#define FTMESH_TEST_UTIL_H

#include <check.h>
#include <stdlib.h>
#include <string.h>

static inline int test_scale_is(const char *name)
{
    const char *e = getenv("FTMESH_TEST_SCALE");
    return e && strcmp(e, name) == 0;
}

/* The sanitizer builds' scale. */
static inline int sanitizer_scale(void)
{
    return test_scale_is("sanitizer");
}

/* make check-full: today's whole sweeps. */
static inline int full_scale(void)
{
    return test_scale_is("full");
}

/* make check and the sanitizer builds: the heavy tests' subsets. */
static inline int small_scale(void)
{
    return !full_scale();
}

/* make check alone (not the sanitizer builds). */
static inline int quick_scale(void)
{
    return !full_scale() && !sanitizer_scale();
}

/* Check's ck_assert* record where each one passed (a write(2) in fork
 * mode): in a loop over elements or ops, millions of system calls and
 * most of a test's time. test_assert records nothing unless it fails;
 * test_check is it with Check's message. */
#define test_assert(expr, ...)                                                                     \
    do {                                                                                           \
        if (!(expr))                                                                               \
            ck_abort_msg(__VA_ARGS__);                                                             \
    } while (0)
#define test_check(expr) test_assert(expr, "Assertion '%s' failed", #expr)

/* Runs the suite (Check's default fork mode); the exit status of main. */
static inline int test_run(Suite *s)
{
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif
