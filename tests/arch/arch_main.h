/*
 * tests/arch/arch_main.h: how the tests/arch binaries run the suites they
 * registered with CUnit (they link only the files under test, not the
 * test harness). Include after CUnit (or cunit_shim.h).
 */
#ifndef COEXEC_TEST_ARCH_MAIN_H
#define COEXEC_TEST_ARCH_MAIN_H

#include <stdio.h>

/*
 * Runs the suite named by argv[1], or every suite, and cleans up the
 * registry. Returns the exit status: 0 when everything passed, 1 when an
 * assertion failed, 2 when argv[1] names no suite.
 */
static inline int arch_run_suites(int argc, char **argv)
{
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_ErrorCode rc;
    if (argc > 1) {
        CU_pSuite only = CU_get_suite(argv[1]);
        if (only == NULL) {
            fprintf(stderr, "no suite named %s\n", argv[1]);
            CU_cleanup_registry();
            return 2;
        }
        rc = CU_basic_run_suite(only);
    } else {
        rc = CU_basic_run_tests();
    }
    /* CUnit returns success even when assertions failed: the exit code
     * must come from the failure counts. */
    unsigned bad = CU_get_number_of_suites_failed() +
                   CU_get_number_of_tests_failed();
    CU_cleanup_registry();
    return (rc != CUE_SUCCESS || bad) ? 1 : 0;
}

#endif /* COEXEC_TEST_ARCH_MAIN_H */
