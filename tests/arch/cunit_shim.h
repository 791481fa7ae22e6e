/*
 * tests/arch/cunit_shim.h: the few CUnit calls the arch tests use, for
 * builds where CUnit itself is not available (the aarch64 cross build run
 * under qemu: Debian ships no arm64 CUnit without multiarch). Selected by
 * defining COEXEC_CUNIT_SHIM; the native builds use the real CUnit.
 *
 * Semantics follow CUnit's basic interface closely enough for these tests:
 * a failed CU_ASSERT marks the running test failed and carries on, a failed
 * CU_ASSERT_FATAL abandons the test (longjmp, like CUnit), and the run ends
 * with CUnit's "Run Summary" table so that logs read the same either way.
 * Everything is static: include it from exactly one translation unit.
 */
#ifndef COEXEC_TESTS_CUNIT_SHIM_H
#define COEXEC_TESTS_CUNIT_SHIM_H

#include <setjmp.h>
#include <stdio.h>
#include <string.h>

typedef enum { CUE_SUCCESS = 0, CUE_NOMEMORY = 1, CUE_NOSUITE = 20 } CU_ErrorCode;
typedef enum { CU_BRM_NORMAL = 0, CU_BRM_SILENT, CU_BRM_VERBOSE } CU_BasicRunMode;
typedef void (*CU_TestFunc)(void);
typedef int (*CU_InitializeFunc)(void);
typedef int (*CU_CleanupFunc)(void);

#define CU_SHIM_MAX_SUITES 32
#define CU_SHIM_MAX_TESTS 256

typedef struct CU_Suite {
    const char *name;
    CU_InitializeFunc init;
    CU_CleanupFunc clean;
} CU_Suite, *CU_pSuite;

typedef struct CU_Test {
    const char *name;
    CU_TestFunc fn;
    CU_pSuite suite;
} CU_Test, *CU_pTest;

static struct {
    CU_Suite suites[CU_SHIM_MAX_SUITES];
    CU_Test tests[CU_SHIM_MAX_TESTS];
    unsigned nsuites, ntests;
    unsigned suites_ran, suites_failed;
    unsigned tests_ran, tests_failed;
    unsigned asserts, asserts_failed;
    int current_failed;
    jmp_buf fatal;
} cu_shim;

static CU_ErrorCode CU_initialize_registry(void)
{
    memset(&cu_shim, 0, sizeof cu_shim);
    return CUE_SUCCESS;
}

static void CU_cleanup_registry(void) {}

static CU_pSuite CU_add_suite(const char *name, CU_InitializeFunc init,
                              CU_CleanupFunc clean)
{
    if (cu_shim.nsuites == CU_SHIM_MAX_SUITES)
        return NULL;
    CU_pSuite s = &cu_shim.suites[cu_shim.nsuites++];
    s->name = name;
    s->init = init;
    s->clean = clean;
    return s;
}

static CU_pTest CU_add_test(CU_pSuite suite, const char *name, CU_TestFunc fn)
{
    if (suite == NULL || cu_shim.ntests == CU_SHIM_MAX_TESTS)
        return NULL;
    CU_pTest t = &cu_shim.tests[cu_shim.ntests++];
    t->name = name;
    t->fn = fn;
    t->suite = suite;
    return t;
}

static CU_pSuite CU_get_suite(const char *name)
{
    for (unsigned i = 0; i < cu_shim.nsuites; i++)
        if (strcmp(cu_shim.suites[i].name, name) == 0)
            return &cu_shim.suites[i];
    return NULL;
}

static void CU_basic_set_mode(CU_BasicRunMode mode) { (void)mode; }

static unsigned CU_get_number_of_suites_failed(void)
{
    return cu_shim.suites_failed;
}

static unsigned CU_get_number_of_tests_failed(void)
{
    return cu_shim.tests_failed;
}

static int cu_shim_assert(int ok, int fatal, const char *expr,
                          const char *file, int line)
{
    cu_shim.asserts++;
    if (ok)
        return 1;
    cu_shim.asserts_failed++;
    cu_shim.current_failed = 1;
    printf("\n    FAILED %s:%d: %s", file, line, expr);
    if (fatal)
        longjmp(cu_shim.fatal, 1);
    return 0;
}

#define CU_ASSERT(value)                                                       \
    ((void)cu_shim_assert(!!(value), 0, #value, __FILE__, __LINE__))
#define CU_ASSERT_FATAL(value)                                                 \
    ((void)cu_shim_assert(!!(value), 1, #value, __FILE__, __LINE__))
#define CU_ASSERT_TRUE(value) CU_ASSERT(value)
#define CU_ASSERT_FALSE(value) CU_ASSERT(!(value))
#define CU_ASSERT_EQUAL(actual, expected)                                      \
    ((void)cu_shim_assert((actual) == (expected), 0,                           \
                          "CU_ASSERT_EQUAL(" #actual "," #expected ")",        \
                          __FILE__, __LINE__))
#define CU_ASSERT_NOT_EQUAL(actual, expected)                                  \
    ((void)cu_shim_assert((actual) != (expected), 0,                           \
                          "CU_ASSERT_NOT_EQUAL(" #actual "," #expected ")",    \
                          __FILE__, __LINE__))
#define CU_ASSERT_PTR_NOT_NULL(value)                                          \
    ((void)cu_shim_assert((value) != NULL, 0,                                  \
                          "CU_ASSERT_PTR_NOT_NULL(" #value ")", __FILE__,      \
                          __LINE__))
#define CU_ASSERT_PTR_NOT_NULL_FATAL(value)                                    \
    ((void)cu_shim_assert((value) != NULL, 1,                                  \
                          "CU_ASSERT_PTR_NOT_NULL_FATAL(" #value ")",          \
                          __FILE__, __LINE__))

static void cu_shim_run_suite(CU_pSuite s)
{
    printf("Suite: %s\n", s->name);
    cu_shim.suites_ran++;
    if (s->init != NULL && s->init() != 0) {
        printf("  suite initialization failed\n");
        cu_shim.suites_failed++;
        return;
    }
    for (unsigned i = 0; i < cu_shim.ntests; i++) {
        CU_pTest t = &cu_shim.tests[i];
        if (t->suite != s)
            continue;
        printf("  Test: %s ...", t->name);
        fflush(stdout);
        cu_shim.current_failed = 0;
        cu_shim.tests_ran++;
        if (setjmp(cu_shim.fatal) == 0)
            t->fn();
        if (cu_shim.current_failed) {
            cu_shim.tests_failed++;
            printf("\n  Test: %s ...FAILED\n", t->name);
        } else {
            printf("passed\n");
        }
        fflush(stdout);
    }
    /* Like CUnit, a suite counts as failed only when its init or cleanup
     * fails; failed tests are counted on their own. */
    if (s->clean != NULL && s->clean() != 0)
        cu_shim.suites_failed++;
}

static void cu_shim_summary(void)
{
    printf("\nRun Summary:    Type  Total    Ran Passed Failed Inactive\n");
    printf("              suites %6u %6u    n/a %6u        0\n",
           cu_shim.nsuites, cu_shim.suites_ran, cu_shim.suites_failed);
    printf("               tests %6u %6u %6u %6u        0\n", cu_shim.ntests,
           cu_shim.tests_ran, cu_shim.tests_ran - cu_shim.tests_failed,
           cu_shim.tests_failed);
    printf("             asserts %6u %6u %6u %6u      n/a\n", cu_shim.asserts,
           cu_shim.asserts, cu_shim.asserts - cu_shim.asserts_failed,
           cu_shim.asserts_failed);
    fflush(stdout);
}

static CU_ErrorCode CU_basic_run_suite(CU_pSuite s)
{
    if (s == NULL)
        return CUE_NOSUITE;
    printf("\n     CUnit-compatible shim (tests/arch/cunit_shim.h)\n\n");
    cu_shim_run_suite(s);
    cu_shim_summary();
    return CUE_SUCCESS;
}

static CU_ErrorCode CU_basic_run_tests(void)
{
    printf("\n     CUnit-compatible shim (tests/arch/cunit_shim.h)\n\n");
    for (unsigned i = 0; i < cu_shim.nsuites; i++)
        cu_shim_run_suite(&cu_shim.suites[i]);
    cu_shim_summary();
    return CUE_SUCCESS;
}

#endif /* COEXEC_TESTS_CUNIT_SHIM_H */
