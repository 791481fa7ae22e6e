/*
 * tests/thread/test_introspect.c: what a unit can tell about itself and
 * others: where a ULT's stack is (coexec_thread_get_stack) and the stream
 * a unit last ran on (coexec_unit_get_last_rank), the CPUs a stream may
 * run on (coexec_xstream_set_cpus, coexec_xstream_get_cpus).
 *
 * Suites:
 *   stack      runtime-owned stacks (cached and other sizes) before, while
 *              and after their ULT runs, user stacks, the main ULT, the
 *              guard size reported; bad arguments and stale handles
 *   last_rank  ULTs and tasklets on given streams, the main ULT, a unit
 *              run in place by its joiner, a migrated ULT; not started;
 *              bad arguments, stale handles, before init
 *   cpus       re-pinning a stream from another thread and from itself,
 *              CPUs the machine lacks left out, counts; errors; calls
 *              racing the stream's free and the reuse of its record
 *   data       units' data areas (coexec_config_t.unit_data_size): filled
 *              before the queue by data_init, the same to the unit and its
 *              creator wherever it runs, never overlapping; another size
 *              after a finalize; no area; bad arguments, stale handles,
 *              wrong callers
 */
#define _GNU_SOURCE
#include "harness.h"

#include <pthread.h>
#include <sched.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ======================================================================= */
/* stack                                                                    */
/* ======================================================================= */

typedef struct {
    coexec_stack_info_t si;
    uintptr_t local; /* the address of a local of the ULT */
    int rc;
} stack_seen_t;

static void self_stack_ult(void *arg)
{
    stack_seen_t *s = arg;
    volatile char here = 1;
    coexec_thread_t me;
    s->rc = coexec_thread_self(&me);
    if (!s->rc)
        s->rc = coexec_thread_get_stack(me, &s->si);
    s->local = (uintptr_t)&here;
}

static bool within(const coexec_stack_info_t *si, uintptr_t a)
{
    return a >= (uintptr_t)si->base && a < (uintptr_t)si->base + si->size;
}

static size_t page_round(size_t n)
{
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    return (n + pg - 1) / pg * pg;
}

static void t_stack_runtime(void)
{
    ch_init(1);
    coexec_config_t cfg;
    CH_ASSERT_OK_FATAL(coexec_get_config(&cfg));
    size_t guard = page_round(cfg.guard_size);
    coexec_pool_t p0 = ch_main_pool(0);

    /* Cached size, then another size (mapped alone). */
    size_t sizes[2] = {0, 256 * 1024};
    for (int k = 0; k < 2; k++) {
        stack_seen_t s;
        memset(&s, 0, sizeof s);
        coexec_thread_attr_t a;
        CH_ASSERT_OK(coexec_thread_attr_init(&a));
        a.stack_size = sizes[k];
        coexec_thread_t t;
        /* Queued on our own stream: it runs when we yield. */
        CH_ASSERT_OK_FATAL(coexec_thread_create(p0, self_stack_ult, &s, &a, &t));
        coexec_stack_info_t before;
        memset(&before, 0x5a, sizeof before);
        CH_ASSERT_OK(coexec_thread_get_stack(t, &before));
        CU_ASSERT_PTR_NULL(before.base); /* taken when it first runs */
        CU_ASSERT(before.size > 0);
        CH_ASSERT_EQ(before.guard_size, guard);
        CH_ASSERT_EQ(before.user_stack, 0);
        if (sizes[k])
            CU_ASSERT(before.size >= sizes[k]);

        CH_WAIT(ch_thread_state(t) == COEXEC_UNIT_TERMINATED);
        CH_ASSERT_OK(s.rc);
        CU_ASSERT_PTR_NOT_NULL(s.si.base);
        CU_ASSERT(within(&s.si, s.local));
        CH_ASSERT_EQ(s.si.size, before.size);
        CH_ASSERT_EQ(s.si.guard_size, guard);
        CH_ASSERT_EQ(s.si.user_stack, 0);
        if (sizes[k])
            CU_ASSERT(s.si.size >= sizes[k]);

        /* Finished: the stack is given back. */
        coexec_stack_info_t after;
        CH_ASSERT_OK(coexec_thread_get_stack(t, &after));
        CU_ASSERT_PTR_NULL(after.base);
        CH_ASSERT_OK(coexec_thread_free(&t));
    }
    ch_finalize();
}

static void t_stack_user(void)
{
    ch_init(2);
    const size_t sz = 64 * 1024 + 24; /* not a multiple of 16 */
    char *stack = aligned_alloc(4096, 80 * 1024);
    CU_ASSERT_FATAL(stack != NULL);
    coexec_thread_attr_t a;
    CH_ASSERT_OK(coexec_thread_attr_init(&a));
    a.stack = stack;
    a.stack_size = sz;
    stack_seen_t s;
    memset(&s, 0, sizeof s);
    coexec_thread_t t;
    CH_ASSERT_OK_FATAL(
        coexec_thread_create(ch_main_pool(1), self_stack_ult, &s, &a, &t));
    coexec_stack_info_t si;
    CH_ASSERT_OK(coexec_thread_get_stack(t, &si)); /* known at once */
    CU_ASSERT_PTR_EQUAL(si.base, stack);
    CH_ASSERT_EQ(si.size, sz & ~(size_t)15);
    CH_ASSERT_EQ(si.guard_size, 0);
    CH_ASSERT_EQ(si.user_stack, 1);
    CH_ASSERT_OK(coexec_thread_join(t)); /* what it wrote is ours to read */
    CH_ASSERT_OK(s.rc);
    CU_ASSERT_PTR_EQUAL(s.si.base, stack);
    CU_ASSERT(within(&s.si, s.local));
    /* The user's stack stays reported once its ULT has finished. */
    CH_ASSERT_OK(coexec_thread_get_stack(t, &si));
    CU_ASSERT_PTR_EQUAL(si.base, stack);
    CH_ASSERT_OK(coexec_thread_free(&t));
    free(stack);
    ch_finalize();
}

static void t_stack_main(void)
{
    ch_init(1);
    volatile char here = 0;
    coexec_thread_t me;
    CH_ASSERT_OK_FATAL(coexec_thread_self(&me));
    coexec_stack_info_t si;
    CH_ASSERT_OK(coexec_thread_get_stack(me, &si));
    CU_ASSERT_PTR_NOT_NULL(si.base);
    CU_ASSERT(within(&si, (uintptr_t)&here));
    CH_ASSERT_EQ(si.guard_size, 0);
    CH_ASSERT_EQ(si.user_stack, 0);
    ch_finalize();
}

static void t_stack_errors(void)
{
    coexec_stack_info_t si;
    coexec_thread_t none = {0};
    CH_ASSERT_RC(coexec_thread_get_stack(none, &si), COEXEC_ENOTINIT);
    ch_init(1);
    CH_ASSERT_RC(coexec_thread_get_stack(none, &si), COEXEC_EHANDLE);
    coexec_thread_t me;
    CH_ASSERT_OK_FATAL(coexec_thread_self(&me));
    CH_ASSERT_RC(coexec_thread_get_stack(me, NULL), COEXEC_EINVAL);
    /* A freed ULT. */
    coexec_thread_t t, stale;
    CH_ASSERT_OK_FATAL(
        coexec_thread_create(ch_main_pool(0), ch_count_ult, NULL, NULL, &t));
    stale = t;
    CH_ASSERT_OK(coexec_thread_free(&t));
    CH_ASSERT_RC(coexec_thread_get_stack(stale, &si), COEXEC_EHANDLE);
    /* A tasklet has no stack: its handle is not a ULT's. */
    coexec_tasklet_t k;
    CH_ASSERT_OK_FATAL(coexec_tasklet_create(ch_main_pool(0), ch_count_tasklet,
                                             NULL, &k));
    coexec_thread_t as_thread = {k.p, k.gen};
    CH_ASSERT_RC(coexec_thread_get_stack(as_thread, &si), COEXEC_EHANDLE);
    CH_ASSERT_OK(coexec_tasklet_free(&k));
    ch_finalize();
}

/* ======================================================================= */
/* last_rank                                                                */
/* ======================================================================= */

typedef struct {
    int seen;  /* the rank coexec_unit_get_last_rank gave the unit itself */
    int self;  /* the rank it ran on */
    int rc;
} rank_seen_t;

static void rank_ult(void *arg)
{
    rank_seen_t *r = arg;
    coexec_thread_t me;
    r->rc = coexec_thread_self(&me);
    if (!r->rc)
        r->rc = coexec_unit_get_last_rank(coexec_thread_unit(me), &r->seen);
    r->self = ch_self_rank();
}

static coexec_tasklet_t g_rank_tasklet;

static coexec_poll_status_t rank_tasklet(coexec_poll_t *cx, void *arg)
{
    (void)cx;
    rank_seen_t *r = arg;
    r->rc = coexec_unit_get_last_rank(coexec_tasklet_unit(g_rank_tasklet),
                                      &r->seen);
    r->self = ch_self_rank();
    return COEXEC_READY;
}

static void t_last_rank_streams(void)
{
    ch_init(1);
    ch_stream_t s[2];
    CH_ASSERT_OK_FATAL(ch_stream_create(&s[0], COEXEC_SCHED_BASIC));
    CH_ASSERT_OK_FATAL(ch_stream_create(&s[1], COEXEC_SCHED_BASIC));
    for (int i = 0; i < 2; i++) {
        rank_seen_t r = {-5, -5, -5};
        coexec_thread_t t;
        CH_ASSERT_OK_FATAL(coexec_thread_create(s[i].pool, rank_ult, &r, NULL, &t));
        CH_WAIT(ch_thread_state(t) == COEXEC_UNIT_TERMINATED);
        CH_ASSERT_OK(coexec_thread_join(t)); /* finished: orders its writes */
        CH_ASSERT_OK(r.rc);
        CH_ASSERT_EQ(r.self, s[i].rank);
        CH_ASSERT_EQ(r.seen, s[i].rank);
        int rank = -5;
        CH_ASSERT_OK(coexec_unit_get_last_rank(coexec_thread_unit(t), &rank));
        CH_ASSERT_EQ(rank, s[i].rank);
        CH_ASSERT_OK(coexec_thread_free(&t));

        rank_seen_t q = {-5, -5, -5};
        /* The tasklet reads its own handle: written before it is queued. */
        CH_ASSERT_OK_FATAL(
            coexec_tasklet_create(s[i].pool, rank_tasklet, &q, &g_rank_tasklet));
        CH_WAIT(ch_tasklet_state(g_rank_tasklet) == COEXEC_UNIT_TERMINATED);
        CH_ASSERT_OK(coexec_tasklet_join(g_rank_tasklet));
        CH_ASSERT_OK(q.rc);
        CH_ASSERT_EQ(q.seen, s[i].rank);
        CH_ASSERT_OK(coexec_unit_get_last_rank(
            coexec_tasklet_unit(g_rank_tasklet), &rank));
        CH_ASSERT_EQ(rank, s[i].rank);
        CH_ASSERT_OK(coexec_tasklet_free(&g_rank_tasklet));
    }
    /* The main ULT runs on the primary. */
    coexec_thread_t me;
    int rank = -5;
    CH_ASSERT_OK_FATAL(coexec_thread_self(&me));
    CH_ASSERT_OK(coexec_unit_get_last_rank(coexec_thread_unit(me), &rank));
    CH_ASSERT_EQ(rank, 0);
    CH_ASSERT_OK(ch_stream_free(&s[0]));
    CH_ASSERT_OK(ch_stream_free(&s[1]));
    ch_finalize();
}

static void t_last_rank_not_started_and_in_place(void)
{
    ch_init(1);
    ch_stream_t s;
    CH_ASSERT_OK_FATAL(ch_stream_create(&s, COEXEC_SCHED_BASIC));
    /* A pool nobody serves: the unit waits there until joined. */
    coexec_pool_t idle;
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO,
                                          COEXEC_ACCESS_MPMC, &idle));
    rank_seen_t r = {-5, -5, -5};
    coexec_thread_t t;
    CH_ASSERT_OK_FATAL(coexec_thread_create(idle, rank_ult, &r, NULL, &t));
    int rank = 7;
    CH_ASSERT_RC(coexec_unit_get_last_rank(coexec_thread_unit(t), &rank),
                 COEXEC_ESTATE);
    CH_ASSERT_EQ(rank, -1);
    /* Joined before it started: it runs in place, on the joiner's stream. */
    CH_ASSERT_OK(coexec_thread_join(t));
    CH_ASSERT_EQ(r.self, 0);
    CH_ASSERT_OK(coexec_unit_get_last_rank(coexec_thread_unit(t), &rank));
    CH_ASSERT_EQ(rank, 0);
    CH_ASSERT_OK(coexec_thread_free(&t));
    CH_ASSERT_OK(coexec_pool_free(&idle));
    CH_ASSERT_OK(ch_stream_free(&s));
    ch_finalize();
}

typedef struct {
    coexec_xstream_t to;
    int before, after, rc;
} mig_t;

static void migrating_ult(void *arg)
{
    mig_t *m = arg;
    coexec_thread_t me;
    m->rc = coexec_thread_self(&me);
    if (!m->rc)
        m->rc = coexec_unit_get_last_rank(coexec_thread_unit(me), &m->before);
    if (!m->rc)
        m->rc = coexec_thread_migrate_to_xstream(me, m->to);
    if (!m->rc)
        m->rc = coexec_unit_get_last_rank(coexec_thread_unit(me), &m->after);
}

static void t_last_rank_migrated(void)
{
    ch_init(1);
    ch_stream_t s[2];
    CH_ASSERT_OK_FATAL(ch_stream_create(&s[0], COEXEC_SCHED_BASIC));
    CH_ASSERT_OK_FATAL(ch_stream_create(&s[1], COEXEC_SCHED_BASIC));
    mig_t m = {s[1].xs, -5, -5, -5};
    coexec_thread_t t;
    CH_ASSERT_OK_FATAL(coexec_thread_create(s[0].pool, migrating_ult, &m, NULL, &t));
    CH_WAIT(ch_thread_state(t) == COEXEC_UNIT_TERMINATED);
    CH_ASSERT_OK(coexec_thread_join(t));
    CH_ASSERT_OK(m.rc);
    CH_ASSERT_EQ(m.before, s[0].rank);
    CH_ASSERT_EQ(m.after, s[1].rank);
    int rank = -5;
    CH_ASSERT_OK(coexec_unit_get_last_rank(coexec_thread_unit(t), &rank));
    CH_ASSERT_EQ(rank, s[1].rank);
    CH_ASSERT_OK(coexec_thread_free(&t));
    CH_ASSERT_OK(ch_stream_free(&s[0]));
    CH_ASSERT_OK(ch_stream_free(&s[1]));
    ch_finalize();
}

static void t_last_rank_errors(void)
{
    int rank;
    coexec_unit_t none = {0};
    CH_ASSERT_RC(coexec_unit_get_last_rank(none, &rank), COEXEC_ENOTINIT);
    ch_init(1);
    CH_ASSERT_RC(coexec_unit_get_last_rank(none, &rank), COEXEC_EHANDLE);
    coexec_thread_t me;
    CH_ASSERT_OK_FATAL(coexec_thread_self(&me));
    CH_ASSERT_RC(coexec_unit_get_last_rank(coexec_thread_unit(me), NULL),
                 COEXEC_EINVAL);
    coexec_thread_t t;
    CH_ASSERT_OK_FATAL(
        coexec_thread_create(ch_main_pool(0), ch_count_ult, NULL, NULL, &t));
    coexec_unit_t stale = coexec_thread_unit(t);
    CH_ASSERT_OK(coexec_thread_free(&t));
    CH_ASSERT_RC(coexec_unit_get_last_rank(stale, &rank), COEXEC_EHANDLE);
    ch_finalize();
}

/* ======================================================================= */
/* cpus                                                                     */
/* ======================================================================= */

typedef struct {
    int cpus[8];
    int n, rc;
} cpus_seen_t;

/* Re-pins its own stream to CPU 0 only, then reads the binding back. */
static void repin_self_ult(void *arg)
{
    cpus_seen_t *c = arg;
    coexec_xstream_t me;
    int zero = 0;
    c->rc = coexec_xstream_self(&me);
    if (!c->rc)
        c->rc = coexec_xstream_set_cpus(me, &zero, 1);
    if (!c->rc)
        c->rc = coexec_xstream_get_cpus(me, c->cpus, 8, &c->n);
}

static void t_cpus(void)
{
    ch_init(1);
    ch_stream_t s;
    CH_ASSERT_OK_FATAL(ch_stream_create(&s, COEXEC_SCHED_BASIC));
    /* Every CPU number: those the process may not use are left out, as
     * the kernel does, and what remains is the process's binding. */
    static int wide[CPU_SETSIZE + 1];
    for (int i = 0; i <= CPU_SETSIZE; i++)
        wide[i] = i;
    int n = -1, nall = -1;
    static int all[CPU_SETSIZE], got[CPU_SETSIZE];
    CH_ASSERT_OK(coexec_xstream_set_cpus(s.xs, wide, CPU_SETSIZE + 1));
    CH_ASSERT_OK(coexec_xstream_get_cpus(s.xs, NULL, 0, &nall)); /* count */
    CU_ASSERT_FATAL(nall >= 1);
    CH_ASSERT_OK(coexec_xstream_get_cpus(s.xs, all, CPU_SETSIZE, &n));
    CH_ASSERT_EQ(n, nall);
    for (int i = 1; i < nall; i++)
        CU_ASSERT(all[i] > all[i - 1]); /* increasing */
    CH_ASSERT_OK(coexec_xstream_get_cpus(s.xs, got, 1, &n)); /* truncated */
    CH_ASSERT_EQ(n, nall);
    CH_ASSERT_EQ(got[0], all[0]);
    /* One CPU, from another thread than the stream's. */
    CH_ASSERT_OK(coexec_xstream_set_cpus(s.xs, &all[nall - 1], 1));
    CH_ASSERT_OK(coexec_xstream_get_cpus(s.xs, got, CPU_SETSIZE, &n));
    CH_ASSERT_EQ(n, 1);
    CH_ASSERT_EQ(got[0], all[nall - 1]);
    bool have0 = all[0] == 0;

    /* From a unit of the stream itself. */
    if (have0) {
        cpus_seen_t c = {{0}, -1, -1};
        CH_ASSERT_OK(ch_run_ult_in(s.pool, repin_self_ult, &c));
        CH_ASSERT_OK(c.rc);
        CH_ASSERT_EQ(c.n, 1);
        CH_ASSERT_EQ(c.cpus[0], 0);
    }

    /* Errors. */
    int none = CPU_SETSIZE + 1, neg = -1;
    CH_ASSERT_RC(coexec_xstream_set_cpus(s.xs, &none, 1), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_xstream_set_cpus(s.xs, &neg, 1), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_xstream_set_cpus(s.xs, NULL, 1), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_xstream_set_cpus(s.xs, all, 0), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_xstream_get_cpus(s.xs, NULL, 1, &n), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_xstream_get_cpus(s.xs, got, 1, NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_xstream_get_cpus(s.xs, got, -1, &n), COEXEC_EINVAL);
    coexec_xstream_t null_xs = {0};
    CH_ASSERT_RC(coexec_xstream_set_cpus(null_xs, all, 1), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_xstream_get_cpus(null_xs, got, 1, &n), COEXEC_EHANDLE);
    coexec_xstream_t stale = s.xs;
    CH_ASSERT_OK(ch_stream_free(&s));
    CH_ASSERT_RC(coexec_xstream_set_cpus(stale, all, 1), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_xstream_get_cpus(stale, got, 1, &n), COEXEC_EHANDLE);
    /* The primary too. */
    coexec_xstream_t x0 = ch_xstream(0);
    CH_ASSERT_OK(coexec_xstream_set_cpus(x0, all, nall));
    CH_ASSERT_OK(coexec_xstream_get_cpus(x0, got, CPU_SETSIZE, &n));
    CH_ASSERT_EQ(n, nall);
    ch_finalize();
    CH_ASSERT_RC(coexec_xstream_get_cpus(x0, got, 1, &n), COEXEC_ENOTINIT);
}


/* ======================================================================= */
/* data                                                                     */
/* ======================================================================= */

#define DATA_BYTES 100 /* rounded up to 128 */
#define DATA_MAGIC 0x64617461u

/* What a unit's area holds: the creator's stamp at the front, then the
 * unit's own pattern over the rest of the area. */
typedef struct {
    uint32_t magic;
    uint32_t index;
} stamp_t;

static void stamp_init(void *data, void *ctx)
{
    stamp_t *st = data;
    st->magic = DATA_MAGIC;
    st->index = (uint32_t)(uintptr_t)ctx;
}

static atomic_long g_data_bad, g_data_ran;
static size_t g_data_len; /* bytes of each area the units fill */

/* Fills the area after the stamp with a pattern of index, and checks it. */
static void pattern_fill(unsigned char *a, uint32_t index)
{
    for (size_t i = sizeof(stamp_t); i < g_data_len; i++)
        a[i] = (unsigned char)(index * 31u + i);
}
static bool pattern_ok(const unsigned char *a, uint32_t index)
{
    for (size_t i = sizeof(stamp_t); i < g_data_len; i++)
        if (a[i] != (unsigned char)(index * 31u + i))
            return false;
    return true;
}

/* A unit's check of its own area: what coexec_self_get_data gives is
 * aligned, stamped by its creation with the index it was given, and keeps
 * the pattern the unit wrote across yields (and the moves those allow). */
static bool data_self_check(uint32_t index, void **first)
{
    void *d = NULL;
    if (coexec_self_get_data(&d) != COEXEC_OK || !d ||
        ((uintptr_t)d & 63) != 0)
        return false;
    stamp_t *st = d;
    if (st->magic != DATA_MAGIC || st->index != index)
        return false;
    if (*first == NULL) {
        *first = d;
        pattern_fill(d, index);
        return true;
    }
    return d == *first && pattern_ok(d, index);
}

static void data_ult(void *arg)
{
    uint32_t index = (uint32_t)(uintptr_t)arg;
    void *first = NULL;
    bool ok = data_self_check(index, &first);
    for (int i = 0; i < 3 && ok; i++) {
        CH_CHECK_RC(coexec_yield(), COEXEC_OK);
        ok = data_self_check(index, &first);
    }
    if (!ok)
        atomic_fetch_add(&g_data_bad, 1);
    atomic_fetch_add(&g_data_ran, 1);
}

static coexec_poll_status_t data_tasklet(coexec_poll_t *cx, void *arg)
{
    (void)cx;
    void *first = NULL;
    if (!data_self_check((uint32_t)(uintptr_t)arg, &first))
        atomic_fetch_add(&g_data_bad, 1);
    atomic_fetch_add(&g_data_ran, 1);
    return COEXEC_READY;
}

static void data_init_rt(int nxs, size_t bytes)
{
    coexec_config_t cfg;
    CH_ASSERT_OK_FATAL(coexec_config_init(&cfg));
    cfg.num_xstreams = nxs;
    cfg.sched_kind = COEXEC_SCHED_RANDWS; /* units move between streams */
    cfg.unit_data_size = bytes;
    CH_ASSERT_OK_FATAL(coexec_init(&cfg));
}

/* ULTs and tasklets on every stream's pool, each made with a data_init:
 * each sees its own stamped area, the same the creator sees, at the same
 * address across yields; the areas of units alive together never overlap
 * (each keeps the pattern it wrote over all of its area); the creator
 * reads the unit's last pattern after its join. */
static void data_areas(int nxs, size_t bytes, size_t len)
{
    data_init_rt(nxs, bytes);
    g_data_len = len;
    atomic_store(&g_data_bad, 0);
    atomic_store(&g_data_ran, 0);
    long n = ch_iters(4000, 200);
    coexec_thread_t *t = calloc((size_t)n, sizeof *t);
    coexec_tasklet_t *k = calloc((size_t)n, sizeof *k);
    CU_ASSERT_FATAL(t && k);
    coexec_thread_attr_t attr;
    CH_ASSERT_OK(coexec_thread_attr_init(&attr));
    attr.data_init = stamp_init;
    long wrong_creator_view = 0;
    for (long i = 0; i < n; i++) {
        coexec_pool_t pool = ch_main_pool((int)(i % nxs));
        uint32_t ti = (uint32_t)(2 * i), ki = (uint32_t)(2 * i + 1);
        attr.data_ctx = (void *)(uintptr_t)ti;
        CH_ASSERT_OK_FATAL(coexec_thread_create(pool, data_ult,
                                                (void *)(uintptr_t)ti, &attr,
                                                &t[i]));
        CH_ASSERT_OK_FATAL(coexec_tasklet_create_init(
            pool, data_tasklet, (void *)(uintptr_t)ki, stamp_init,
            (void *)(uintptr_t)ki, &k[i]));
    }
    for (long i = 0; i < n; i++) {
        void *dt = NULL, *dk = NULL;
        CH_ASSERT_OK(coexec_thread_join(t[i]));
        CH_ASSERT_OK(coexec_tasklet_join(k[i]));
        CH_ASSERT_OK(coexec_unit_get_data(coexec_thread_unit(t[i]), &dt));
        CH_ASSERT_OK(coexec_unit_get_data(coexec_tasklet_unit(k[i]), &dk));
        wrong_creator_view +=
            !dt || !dk || dt == dk || ((stamp_t *)dt)->index != 2 * i ||
            ((stamp_t *)dk)->index != 2 * i + 1 ||
            !pattern_ok(dt, (uint32_t)(2 * i)) ||
            !pattern_ok(dk, (uint32_t)(2 * i + 1));
    }
    for (long i = 0; i < n; i++) {
        CH_ASSERT_OK(coexec_thread_free(&t[i]));
        CH_ASSERT_OK(coexec_tasklet_free(&k[i]));
    }
    CH_ASSERT_EQ(atomic_load(&g_data_ran), 2 * n);
    CH_ASSERT_EQ(atomic_load(&g_data_bad), 0);
    CH_ASSERT_EQ(wrong_creator_view, 0);
    free(t);
    free(k);
    ch_finalize();
}

static void t_data_areas(void) { data_areas(4, DATA_BYTES, 128); }

/* The size is fixed from init to finalize: a later init with the largest
 * size lays its descriptors out anew, and the main ULT has an area too. */
static void t_data_resize(void)
{
    data_areas(3, 64, 64);
    data_areas(3, 1024, 1024);
    data_init_rt(1, 1);
    void *d = NULL;
    CH_ASSERT_OK(coexec_self_get_data(&d));
    CU_ASSERT(d != NULL && ((uintptr_t)d & 63) == 0);
    if (d)
        memset(d, 0x5a, 64); /* rounded up to 64: all of it is ours */
    ch_finalize();
}

static void data_from_thread(void *arg)
{
    int *rc = arg;
    void *d = (void *)1;
    *rc = coexec_self_get_data(&d);
    if (d)
        *rc = 12345; /* must be cleared on error */
}

static coexec_poll_status_t plain_tasklet(coexec_poll_t *cx, void *arg)
{
    (void)cx;
    (void)arg;
    return COEXEC_READY;
}

static void t_data_errors(void)
{
    void *d = (void *)1;
    coexec_unit_t none = {0};
    /* Before init. */
    CH_ASSERT_RC(coexec_self_get_data(&d), COEXEC_ENOTINIT);
    CU_ASSERT(d == NULL);
    d = (void *)1;
    CH_ASSERT_RC(coexec_unit_get_data(none, &d), COEXEC_ENOTINIT);
    CU_ASSERT(d == NULL);
    /* Beyond the largest size. */
    coexec_config_t cfg;
    CH_ASSERT_OK(coexec_config_init(&cfg));
    CU_ASSERT_EQUAL(cfg.unit_data_size, 0);
    cfg.unit_data_size = 1025;
    CH_ASSERT_RC(coexec_init(&cfg), COEXEC_EINVAL);
    CU_ASSERT(!coexec_initialized());

    /* No area (the default). */
    ch_init(2);
    coexec_pool_t pool = ch_main_pool(1);
    coexec_tasklet_t k;
    CH_ASSERT_OK(coexec_tasklet_create(pool, plain_tasklet, NULL, &k));
    d = (void *)1;
    CH_ASSERT_RC(coexec_unit_get_data(coexec_tasklet_unit(k), &d),
                 COEXEC_ENOENT);
    CU_ASSERT(d == NULL);
    d = (void *)1;
    CH_ASSERT_RC(coexec_self_get_data(&d), COEXEC_ENOENT);
    CU_ASSERT(d == NULL);
    CH_ASSERT_OK(coexec_tasklet_free(&k));
    size_t before = 0, after = 0;
    CH_ASSERT_OK(coexec_pool_get_size(pool, &before));
    coexec_tasklet_t k2 = {0};
    CH_ASSERT_RC(coexec_tasklet_create_init(pool, plain_tasklet, NULL,
                                            stamp_init, NULL, &k2),
                 COEXEC_ENOENT);
    coexec_thread_attr_t attr;
    CH_ASSERT_OK(coexec_thread_attr_init(&attr));
    CU_ASSERT(attr.data_init == NULL && attr.data_ctx == NULL);
    attr.data_init = stamp_init;
    coexec_thread_t t;
    CH_ASSERT_RC(coexec_thread_create(pool, data_ult, NULL, &attr, &t),
                 COEXEC_ENOENT);
    CH_ASSERT_OK(coexec_pool_get_size(pool, &after));
    CH_ASSERT_EQ(after, before); /* nothing was created */
    ch_finalize();

    /* With an area: the wrong arguments and callers. */
    data_init_rt(2, 64);
    pool = ch_main_pool(0);
    CH_ASSERT_RC(coexec_tasklet_create_init(pool, plain_tasklet, NULL, NULL,
                                            NULL, &k2),
                 COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_tasklet_create_init(pool, NULL, NULL, stamp_init,
                                            NULL, &k2),
                 COEXEC_EINVAL);
    coexec_pool_t stale;
    CH_ASSERT_OK(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC,
                                    &stale));
    coexec_pool_t copy = stale;
    CH_ASSERT_OK(coexec_pool_free(&stale));
    CH_ASSERT_RC(coexec_tasklet_create_init(copy, plain_tasklet, NULL,
                                            stamp_init, NULL, &k2),
                 COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_unit_get_data(none, NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_self_get_data(NULL), COEXEC_EINVAL);
    d = (void *)1;
    CH_ASSERT_RC(coexec_unit_get_data(none, &d), COEXEC_EHANDLE);
    CU_ASSERT(d == NULL);
    /* A freed unit's handle. */
    CH_ASSERT_OK(coexec_tasklet_create_init(pool, plain_tasklet, NULL,
                                            stamp_init, (void *)7, &k));
    coexec_tasklet_t kcopy = k;
    void *dk = NULL;
    CH_ASSERT_OK(coexec_unit_get_data(coexec_tasklet_unit(k), &dk));
    CU_ASSERT(dk && ((stamp_t *)dk)->magic == DATA_MAGIC &&
              ((stamp_t *)dk)->index == 7);
    CH_ASSERT_OK(coexec_tasklet_free(&k));
    d = (void *)1;
    CH_ASSERT_RC(coexec_unit_get_data(coexec_tasklet_unit(kcopy), &d),
                 COEXEC_EHANDLE);
    CU_ASSERT(d == NULL);
    /* From a thread that is no unit. */
    int rc = 0;
    ch_pthread_t th;
    ch_pthread_run(&th, data_from_thread, &rc);
    ch_pthread_join(&th);
    CH_ASSERT_RC(rc, COEXEC_ECONTEXT);
    /* A stacked scheduler's unit: its area is the runtime's. */
    coexec_pool_t q, sp;
    coexec_sched_t s;
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC,
                                          &q));
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC,
                                          &sp));
    CH_ASSERT_OK_FATAL(coexec_sched_create(COEXEC_SCHED_BASIC, &sp, 1, NULL,
                                           &s));
    CH_ASSERT_OK_FATAL(coexec_pool_add_sched(q, s));
    coexec_unit_t su;
    CH_ASSERT_OK_FATAL(coexec_pool_pop(q, &su));
    d = (void *)1;
    CH_ASSERT_RC(coexec_unit_get_data(su, &d), COEXEC_ENOENT);
    CU_ASSERT(d == NULL);
    CH_ASSERT_OK(coexec_sched_finish(s));
    CH_ASSERT_OK(coexec_pool_push(pool, su));
    rc = COEXEC_EBUSY;
    CH_WAIT((rc = coexec_sched_free(&s)) != COEXEC_EBUSY);
    CH_ASSERT_OK(rc);
    CH_ASSERT_OK(coexec_pool_free(&q));
    CH_ASSERT_OK(coexec_pool_free(&sp));
    /* Detached, the area is filled all the same (the unit checks it). */
    atomic_store(&g_data_bad, 0);
    atomic_store(&g_data_ran, 0);
    g_data_len = 64;
    CH_ASSERT_OK(coexec_tasklet_create_init(pool, data_tasklet, (void *)9,
                                            stamp_init, (void *)9, NULL));
    CH_WAIT(atomic_load(&g_data_ran) == 1);
    CH_ASSERT_EQ(atomic_load(&g_data_bad), 0);
    ch_finalize();
}

/* ======================================================================= */

static const ch_test_t stack_tests[] = {
    {"runtime_stacks", t_stack_runtime},
    {"user_stack", t_stack_user},
    {"main_ult", t_stack_main},
    {"errors", t_stack_errors},
    {NULL, NULL}};
static const ch_test_t last_rank_tests[] = {
    {"streams_ults_tasklets_main", t_last_rank_streams},
    {"not_started_and_in_place", t_last_rank_not_started_and_in_place},
    {"migrated", t_last_rank_migrated},
    {"errors", t_last_rank_errors},
    {NULL, NULL}};

/* Affinity calls on copies of a stream's handle while the stream is freed
 * (its OS thread joined) and another takes its record: every call is
 * COEXEC_OK, COEXEC_ESTATE or COEXEC_EHANDLE, and none touches an ended
 * thread (the thread waits for a call in progress before it exits), nor
 * the next stream's (a call that read the record while it was reused
 * answers EHANDLE). On an ended thread glibc's calls act on the caller:
 * a racer's own binding must never change. */
static struct {
    coexec_xstream_t cur; /* the stream being churned, under `lock` */
    pthread_mutex_t lock; /* also over the counts */
    atomic_int done;
    long ok, refused, bad, self_pinned;
    int bad_rc;
} g_ar = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* Racing threads: more than the cores, so that some are preempted inside
 * a call while the stream's thread ends and its record is reused. */
enum { AFFINITY_RACERS = 3 };

static void *affinity_racer(void *arg)
{
    (void)arg;
    int cpus[CPU_SETSIZE];
    cpu_set_t mine, now;
    if (sched_getaffinity(0, sizeof mine, &mine) != 0)
        return NULL;
    long ok = 0, refused = 0, bad = 0, self_pinned = 0;
    int bad_rc = 0;
    while (!atomic_load(&g_ar.done)) {
        pthread_mutex_lock(&g_ar.lock);
        coexec_xstream_t x = g_ar.cur;
        pthread_mutex_unlock(&g_ar.lock);
        int n = 0, zero = 0;
        int rcs[2] = {coexec_xstream_get_cpus(x, cpus, CPU_SETSIZE, &n),
                      coexec_xstream_set_cpus(x, &zero, 1)};
        if (sched_getaffinity(0, sizeof now, &now) == 0 &&
            !CPU_EQUAL(&now, &mine)) {
            self_pinned++;
            if (sched_setaffinity(0, sizeof mine, &mine) != 0)
                break;
        }
        for (int j = 0; j < 2; j++) {
            if (rcs[j] == COEXEC_OK)
                ok++;
            else if (rcs[j] == COEXEC_ESTATE || rcs[j] == COEXEC_EHANDLE)
                refused++;
            else if (bad++ == 0)
                bad_rc = rcs[j];
        }
    }
    pthread_mutex_lock(&g_ar.lock);
    g_ar.ok += ok;
    g_ar.refused += refused;
    g_ar.self_pinned += self_pinned;
    if (bad && g_ar.bad == 0)
        g_ar.bad_rc = bad_rc;
    g_ar.bad += bad;
    pthread_mutex_unlock(&g_ar.lock);
    return NULL;
}

static void t_cpus_free_race(void)
{
    ch_init(1);
    long rounds = ch_iters(300, 30);
    ch_pthread_t th[AFFINITY_RACERS];
    CH_ASSERT_OK(coexec_xstream_create(NULL, &g_ar.cur));
    for (int i = 0; i < AFFINITY_RACERS; i++)
        ch_pthread_start(&th[i], affinity_racer, NULL);
    for (long r = 0; r < rounds; r++) {
        coexec_xstream_t next;
        CH_ASSERT_OK(coexec_xstream_create(NULL, &next));
        pthread_mutex_lock(&g_ar.lock);
        coexec_xstream_t old = g_ar.cur;
        if (r % 2)
            g_ar.cur = next; /* half the time the racers hold the old one */
        pthread_mutex_unlock(&g_ar.lock);
        CH_ASSERT_OK(coexec_xstream_free(&old));
        if (!(r % 2)) {
            pthread_mutex_lock(&g_ar.lock);
            g_ar.cur = next;
            pthread_mutex_unlock(&g_ar.lock);
        }
    }
    atomic_store(&g_ar.done, 1);
    for (int i = 0; i < AFFINITY_RACERS; i++)
        ch_pthread_join(&th[i]);
    CH_ASSERT_OK(coexec_xstream_free(&g_ar.cur));
    if (g_ar.bad)
        ch_fail_at(__FILE__, __LINE__, "%ld affinity calls gave neither OK, "
                   "ESTATE nor EHANDLE (the first: %s)", g_ar.bad,
                   coexec_err_name(g_ar.bad_rc));
    CH_CHECK(g_ar.ok > 0);
    CH_ASSERT_EQ(g_ar.self_pinned, 0);
    ch_finalize();
}

static const ch_test_t cpus_tests[] = {{"set_get", t_cpus},
                                        {"free_race", t_cpus_free_race},
                                        {NULL, NULL}};
static const ch_test_t data_tests[] = {{"areas", t_data_areas},
                                       {"resize", t_data_resize},
                                       {"errors", t_data_errors},
                                       {NULL, NULL}};

static const ch_suite_t suites[] = {{"stack", stack_tests},
                                    {"last_rank", last_rank_tests},
                                    {"cpus", cpus_tests},
                                    {"data", data_tests},
                                    {NULL, NULL}};

int main(int argc, char **argv) { return ch_main(argc, argv, suites); }
