/*
 * tests/abt/abt_test.h: what the suites of test_abt share: each test starts
 * the ABT runtime (ABT_init) and stops it (ABT_finalize) itself.
 */
#ifndef COEXEC_TEST_ABT_H
#define COEXEC_TEST_ABT_H

#include <stdio.h>

#include <abt.h>

#include "harness.h"

#define AT_OK(expr) CU_ASSERT_EQUAL_FATAL((expr), ABT_SUCCESS)
#define AT_CHECK_OK(expr) CH_CHECK_EQ((expr), ABT_SUCCESS)

/* The first main pool of the calling stream (a failure ends the test). */
static inline ABT_pool at_main_pool(void)
{
    ABT_xstream self;
    ABT_pool pool = ABT_POOL_NULL;
    AT_OK(ABT_xstream_self(&self));
    AT_OK(ABT_xstream_get_main_pools(self, 1, &pool));
    return pool;
}

/* A stream in memory for a printer's output, and what it holds once
 * closed (the caller frees it). */
typedef struct {
    FILE *f;
    char *buf;
    size_t len;
} mem_t;

static inline void mem_open(mem_t *m)
{
    m->buf = NULL;
    m->len = 0;
    m->f = open_memstream(&m->buf, &m->len);
    CU_ASSERT_FATAL(m->f != NULL);
}

static inline char *mem_close(mem_t *m)
{
    fclose(m->f);
    return m->buf;
}

extern const ch_test_t abt_eventual_tests[];
extern const ch_test_t abt_future_tests[];
extern const ch_test_t abt_mutex_tests[];
extern const ch_test_t abt_cond_tests[];
extern const ch_test_t abt_rwlock_tests[];
extern const ch_test_t abt_barrier_tests[];
extern const ch_test_t abt_key_tests[];
extern const ch_test_t abt_v1x_tests[];

#endif /* COEXEC_TEST_ABT_H */
