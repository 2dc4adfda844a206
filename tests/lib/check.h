/*
 * check: a tiny header-only assertion helper for the test executables.
 *
 * Each CHECK_* macro counts one check; a failed one prints file:line, the
 * expression and both values, and the test carries on so that one run shows
 * every failure. main() ends with `return check_finish();`, which prints
 * "N checks, M failed" and returns the process exit code. The counters are
 * atomic, so checks may run in several threads at once.
 */
#ifndef LC_TEST_CHECK_H
#define LC_TEST_CHECK_H

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "core/error.h"

static atomic_int check_count_;
static atomic_int check_failed_;

static inline int check_result_(int ok, const char *file, int line)
{
    atomic_fetch_add(&check_count_, 1);
    if (!ok) {
        atomic_fetch_add(&check_failed_, 1);
        fprintf(stderr, "%s:%d: check failed: ", file, line);
    }
    return ok;
}

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!check_result_(!!(cond), __FILE__, __LINE__))                                          \
            fprintf(stderr, "%s\n", #cond);                                                        \
    } while (0)

#define CHECK_EQ_INT(a, b)                                                                         \
    do {                                                                                           \
        long long check_a_ = (long long)(a), check_b_ = (long long)(b);                            \
        if (!check_result_(check_a_ == check_b_, __FILE__, __LINE__))                              \
            fprintf(stderr, "%s == %s: %lld != %lld\n", #a, #b, check_a_, check_b_);               \
    } while (0)

#define CHECK_EQ_U64(a, b)                                                                         \
    do {                                                                                           \
        unsigned long long check_a_ = (unsigned long long)(a);                                     \
        unsigned long long check_b_ = (unsigned long long)(b);                                     \
        if (!check_result_(check_a_ == check_b_, __FILE__, __LINE__))                              \
            fprintf(stderr, "%s == %s: %llu != %llu\n", #a, #b, check_a_, check_b_);               \
    } while (0)

#define CHECK_EQ_STR(a, b)                                                                         \
    do {                                                                                           \
        const char *check_a_ = (a), *check_b_ = (b);                                               \
        int check_eq_ =                                                                            \
            check_a_ && check_b_ ? strcmp(check_a_, check_b_) == 0 : check_a_ == check_b_;         \
        if (!check_result_(check_eq_, __FILE__, __LINE__))                                         \
            fprintf(stderr, "%s == %s: \"%s\" != \"%s\"\n", #a, #b,                                \
                    check_a_ ? check_a_ : "(null)", check_b_ ? check_b_ : "(null)");               \
    } while (0)

#define CHECK_NEAR(a, b, eps)                                                                      \
    do {                                                                                           \
        double check_a_ = (double)(a), check_b_ = (double)(b), check_e_ = (double)(eps);           \
        if (!check_result_(fabs(check_a_ - check_b_) <= check_e_, __FILE__, __LINE__))             \
            fprintf(stderr, "%s ~= %s: %.9g vs %.9g (eps %g)\n", #a, #b, check_a_, check_b_,       \
                    check_e_);                                                                     \
    } while (0)

/* expr must return 0; otherwise print the code and its lc_strerror text. */
#define CHECK_OK(expr)                                                                             \
    do {                                                                                           \
        int check_rc_ = (expr);                                                                    \
        if (!check_result_(check_rc_ == 0, __FILE__, __LINE__))                                    \
            fprintf(stderr, "%s returned %d (%s)\n", #expr, check_rc_, lc_strerror(check_rc_));    \
    } while (0)

static inline int check_failures(void)
{
    return atomic_load(&check_failed_);
}

static inline int check_finish(void)
{
    int n = atomic_load(&check_count_), failed = atomic_load(&check_failed_);
    printf("%d checks, %d failed\n", n, failed);
    return failed ? 1 : 0;
}

#endif
