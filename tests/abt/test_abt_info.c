/*
 * tests/abt/test_abt_info.c: libcoexec-abt's introspection calls (test
 * program test_abt_info): where a ULT's stack is, the stream a unit last
 * ran on, stream affinity, and the info printers.
 *
 *   stack    ABT_thread_get_stack and ABT_thread_get_attr's stack, for
 *            ULTs with runtime stacks and user stacks, tasklets, the main
 *            ULT; the size given, as ABT_thread_get_stacksize; bad handles
 *   last     ABT_thread_get_last_xstream and ABT_task_get_xstream, inside
 *            the unit and after it, for units given to other streams
 *   affinity ABT_xstream_set_cpubind/set_affinity re-pin a running stream
 *            and get_cpubind/get_affinity report it; errors
 *   tool     ABT_tool_register_thread_callback: each unit's events follow
 *            its life (named, unnamed, revived, cancelled; yields, waits
 *            woken from another stream); ABT_tool_query_thread; a
 *            tasklet's FINISH, told by the tasklet as it ends
 *   dump     ABT_info_print_thread_stack of units in each state;
 *            ABT_info_print_thread_attr;
 *            ABT_info_trigger_print_all_thread_stacks: every stream stops,
 *            the dump is printed and the callback told no timeout; a stream
 *            that never reaches its event check: the timeout, told; errors
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "abt_test.h"

/* ---- stack ----------------------------------------------------------------- */

typedef struct {
    void *addr, *attr_addr;
    size_t size, attr_size;
    uintptr_t local;
    int rc;
} stack_probe_t;

static void stack_ult(void *arg)
{
    stack_probe_t *p = arg;
    volatile char here = 0;
    ABT_thread me;
    p->rc = ABT_thread_self(&me);
    if (!p->rc)
        p->rc = ABT_thread_get_stack(me, &p->addr, &p->size);
    ABT_thread_attr a;
    if (!p->rc)
        p->rc = ABT_thread_get_attr(me, &a);
    if (!p->rc) {
        p->rc = ABT_thread_attr_get_stack(a, &p->attr_addr, &p->attr_size);
        ABT_thread_attr_free(&a);
    }
    p->local = (uintptr_t)&here;
}

static void test_stack_ults(void)
{
    AT_OK(ABT_init(0, NULL));
    coexec_config_t cfg;
    CU_ASSERT_EQUAL_FATAL(coexec_get_config(&cfg), COEXEC_OK);
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    size_t guard = (cfg.guard_size + pg - 1) / pg * pg;
    ABT_xstream xs;
    AT_OK(ABT_xstream_create(ABT_SCHED_NULL, &xs));
    ABT_pool pool;
    AT_OK(ABT_xstream_get_main_pools(xs, 1, &pool));

    /* 0: the default stack; 1: a size of its own; 2: a stack of ours;
     * 3: a stack of ours 8 bytes off a 16-byte boundary (Argobots takes
     * 8-byte alignment). */
    const size_t own = 96 * 1024;
    void *mem = aligned_alloc(4096, own);
    CU_ASSERT_FATAL(mem != NULL);
    for (int k = 0; k < 4; k++) {
        void *given_stack = k == 3 ? (char *)mem + 8 : mem;
        size_t given_size = k == 3 ? own - 8 : own;
        stack_probe_t p;
        memset(&p, 0, sizeof p);
        ABT_thread_attr attr = ABT_THREAD_ATTR_NULL;
        if (k) {
            AT_OK(ABT_thread_attr_create(&attr));
            if (k == 1) {
                AT_OK(ABT_thread_attr_set_stacksize(attr, 256 * 1024));
            } else {
                AT_OK(ABT_thread_attr_set_stack(attr, given_stack,
                                                given_size));
            }
        }
        ABT_thread t;
        AT_OK(ABT_thread_create(pool, stack_ult, &p, attr, &t));
        if (attr != ABT_THREAD_ATTR_NULL) {
            AT_OK(ABT_thread_attr_free(&attr));
        }
        AT_OK(ABT_thread_join(t));
        AT_OK(p.rc);
        CU_ASSERT_PTR_NOT_NULL(p.addr);
        /* Both ways agree, and the ULT's locals are inside. */
        CU_ASSERT_PTR_EQUAL(p.addr, p.attr_addr);
        CU_ASSERT_EQUAL(p.size, p.attr_size);
        CU_ASSERT(p.local >= (uintptr_t)p.addr &&
                  p.local < (uintptr_t)p.addr + p.size);
        /* The size it was given, as ABT_thread_get_stacksize says. */
        size_t given = 0;
        AT_OK(ABT_thread_get_stacksize(t, &given));
        CU_ASSERT_EQUAL(p.size, given);
        if (k >= 2) {
            CU_ASSERT_PTR_EQUAL(p.addr, given_stack);
            CU_ASSERT_EQUAL(p.size, given_size);
        } else {
            /* A runtime stack, with a guard region below it. */
            CU_ASSERT(guard > 0);
            if (k == 1)
                CU_ASSERT_EQUAL(p.size, 256 * 1024);
        }
        /* Partial queries. */
        void *a = NULL;
        size_t n = 0;
        AT_OK(ABT_thread_get_stack(t, &a, NULL));
        AT_OK(ABT_thread_get_stack(t, NULL, &n));
        AT_OK(ABT_thread_get_stack(t, NULL, NULL));
        if (k >= 2) { /* the user's stack stays reported */
            CU_ASSERT_PTR_EQUAL(a, given_stack);
        } else { /* a finished ULT's stack is given back */
            CU_ASSERT_PTR_NULL(a);
        }
        CU_ASSERT_EQUAL(n, p.size);
        AT_OK(ABT_thread_free(&t));
    }
    free(mem);
    AT_OK(ABT_xstream_free(&xs));
    AT_OK(ABT_finalize());
}

static void stack_task(void *arg)
{
    (void)arg;
}

static void test_stack_others(void)
{
    AT_OK(ABT_init(0, NULL));
    /* The main ULT runs on the OS thread's stack, a tasklet on none: both
     * report NULL and 0, as Argobots does. */
    ABT_thread me;
    AT_OK(ABT_thread_self(&me));
    void *a = (void *)1;
    size_t n = 1;
    AT_OK(ABT_thread_get_stack(me, &a, &n));
    CU_ASSERT_PTR_NULL(a);
    CU_ASSERT_EQUAL(n, 0);
    ABT_pool pool = at_main_pool();
    ABT_task k;
    AT_OK(ABT_task_create(pool, stack_task, NULL, &k));
    a = (void *)1;
    n = 1;
    AT_OK(ABT_thread_get_stack(k, &a, &n));
    CU_ASSERT_PTR_NULL(a);
    CU_ASSERT_EQUAL(n, 0);
    ABT_thread_attr attr;
    CU_ASSERT_EQUAL(ABT_thread_get_attr(k, &attr), ABT_ERR_INV_THREAD);
    AT_OK(ABT_task_free(&k));
    /* A ULT that has not run has no stack yet, but its size is known. */
    ABT_thread t;
    AT_OK(ABT_thread_create(pool, stack_task, NULL, ABT_THREAD_ATTR_NULL, &t));
    AT_OK(ABT_thread_get_stack(t, &a, &n));
    CU_ASSERT_PTR_NULL(a);
    CU_ASSERT(n > 0);
    /* Bad handles. */
    ABT_thread stale = t;
    AT_OK(ABT_thread_free(&t));
    CU_ASSERT_EQUAL(ABT_thread_get_stack(stale, &a, &n), ABT_ERR_INV_THREAD);
    CU_ASSERT_EQUAL(ABT_thread_get_stack(ABT_THREAD_NULL, &a, &n),
                    ABT_ERR_INV_THREAD);
    AT_OK(ABT_finalize());
}

static const ch_test_t stack_tests[] = {{"ults", test_stack_ults},
                                        {"main_tasklet_errors", test_stack_others},
                                        {NULL, NULL}};

/* ---- last ------------------------------------------------------------------ */

static atomic_int g_last_bad;

static void last_ult(void *arg)
{
    (void)arg;
    ABT_xstream self, last;
    ABT_thread me;
    if (ABT_xstream_self(&self) || ABT_thread_self(&me) ||
        ABT_thread_get_last_xstream(me, &last) || last != self)
        atomic_fetch_add(&g_last_bad, 1);
}

static void last_task(void *arg)
{
    (void)arg;
    ABT_xstream self, last;
    ABT_task me;
    if (ABT_xstream_self(&self) || ABT_task_self(&me) ||
        ABT_task_get_xstream(me, &last) || last != self)
        atomic_fetch_add(&g_last_bad, 1);
}

static void test_last_xstream(void)
{
    enum { NX = 3 };
    AT_OK(ABT_init(0, NULL));
    atomic_store(&g_last_bad, 0);
    ABT_xstream xs[NX];
    AT_OK(ABT_xstream_self(&xs[0]));
    for (int i = 1; i < NX; i++)
        AT_OK(ABT_xstream_create(ABT_SCHED_NULL, &xs[i]));
    ABT_thread t[NX];
    ABT_task k[NX];
    for (int i = 0; i < NX; i++) {
        AT_OK(ABT_thread_create_on_xstream(xs[i], last_ult, NULL,
                                           ABT_THREAD_ATTR_NULL, &t[i]));
        AT_OK(ABT_task_create_on_xstream(xs[i], last_task, NULL, &k[i]));
    }
    /* Joined at once, maybe before their stream took them: they still run
     * on the stream they were given to. */
    for (int i = 0; i < NX; i++) {
        ABT_xstream last = ABT_XSTREAM_NULL;
        AT_OK(ABT_thread_join(t[i]));
        AT_OK(ABT_thread_get_last_xstream(t[i], &last));
        CU_ASSERT_PTR_EQUAL(last, xs[i]);
        AT_OK(ABT_task_join(k[i]));
        AT_OK(ABT_task_get_xstream(k[i], &last));
        CU_ASSERT_PTR_EQUAL(last, xs[i]);
        AT_OK(ABT_thread_free(&t[i]));
        AT_OK(ABT_task_free(&k[i]));
    }
    CU_ASSERT_EQUAL(atomic_load(&g_last_bad), 0);
    /* The main ULT runs on the primary. */
    ABT_thread me;
    ABT_xstream last;
    AT_OK(ABT_thread_self(&me));
    AT_OK(ABT_thread_get_last_xstream(me, &last));
    CU_ASSERT_PTR_EQUAL(last, xs[0]);
    /* Not run yet: no stream (a pool that no stream serves). */
    ABT_pool idle;
    AT_OK(ABT_pool_create_basic(ABT_POOL_FIFO, ABT_POOL_ACCESS_MPMC, ABT_TRUE,
                                &idle));
    ABT_thread w;
    AT_OK(ABT_thread_create(idle, last_ult, NULL, ABT_THREAD_ATTR_NULL, &w));
    AT_OK(ABT_thread_get_last_xstream(w, &last));
    CU_ASSERT_PTR_EQUAL(last, ABT_XSTREAM_NULL);
    /* A join never runs it on the joiner's stream (as in Argobots): moved
     * to a stream, it runs there. */
    AT_OK(ABT_thread_migrate_to_xstream(w, xs[1]));
    AT_OK(ABT_thread_join(w));
    AT_OK(ABT_thread_get_last_xstream(w, &last));
    CU_ASSERT_PTR_EQUAL(last, xs[1]);
    AT_OK(ABT_thread_free(&w));
    /* Bad handles. */
    CU_ASSERT_EQUAL(ABT_thread_get_last_xstream(ABT_THREAD_NULL, &last),
                    ABT_ERR_INV_THREAD);
    CU_ASSERT_EQUAL(ABT_task_get_xstream(ABT_TASK_NULL, &last),
                    ABT_ERR_INV_TASK);
    for (int i = 1; i < NX; i++)
        AT_OK(ABT_xstream_free(&xs[i]));
    AT_OK(ABT_pool_free(&idle));
    AT_OK(ABT_finalize());
}

static const ch_test_t last_tests[] = {{"units_on_streams", test_last_xstream},
                                       {NULL, NULL}};

/* ---- affinity ---------------------------------------------------------------- */

static void affinity_ult(void *arg)
{
    int *rc = arg;
    ABT_xstream me;
    int cpu = -1, n = 0;
    *rc = ABT_xstream_self(&me);
    if (!*rc)
        *rc = ABT_xstream_set_cpubind(me, 0);
    if (!*rc)
        *rc = ABT_xstream_get_cpubind(me, &cpu);
    if (!*rc)
        *rc = ABT_xstream_get_affinity(me, 0, NULL, &n);
    if (!*rc && (cpu != 0 || n != 1))
        *rc = ABT_ERR_OTHER;
}

static void test_affinity(void)
{
    AT_OK(ABT_init(0, NULL));
    ABT_bool on = ABT_FALSE;
    AT_OK(ABT_info_query_config(ABT_INFO_QUERY_KIND_ENABLED_AFFINITY, &on));
    CU_ASSERT_EQUAL(on, ABT_TRUE);
    ABT_xstream xs;
    AT_OK(ABT_xstream_create(ABT_SCHED_NULL, &xs));
    /* Every CPU number up to 63: those the machine lacks are left out, as
     * the kernel does. */
    int wide[64], cpus[64], n = -1, cpu = -1;
    for (int i = 0; i < 64; i++)
        wide[i] = i;
    AT_OK(ABT_xstream_set_affinity(xs, 64, wide));
    AT_OK(ABT_xstream_get_affinity(xs, 64, cpus, &n));
    CU_ASSERT_FATAL(n >= 1);
    int last = cpus[n - 1];
    AT_OK(ABT_xstream_set_cpubind(xs, last));
    AT_OK(ABT_xstream_get_cpubind(xs, &cpu));
    CU_ASSERT_EQUAL(cpu, last);
    AT_OK(ABT_xstream_get_affinity(xs, 64, cpus, &n));
    CU_ASSERT_EQUAL(n, 1);
    CU_ASSERT_EQUAL(cpus[0], last);
    /* From a ULT of the stream itself. */
    ABT_pool pool;
    AT_OK(ABT_xstream_get_main_pools(xs, 1, &pool));
    int rc = -1;
    ABT_thread t;
    AT_OK(ABT_thread_create(pool, affinity_ult, &rc, ABT_THREAD_ATTR_NULL, &t));
    AT_OK(ABT_thread_free(&t));
    CU_ASSERT_EQUAL(rc, ABT_SUCCESS);
    /* Errors: no usable CPU, bad handles, a joined stream. */
    CU_ASSERT_EQUAL(ABT_xstream_set_cpubind(xs, 100000), ABT_ERR_CPUID);
    CU_ASSERT_EQUAL(ABT_xstream_set_affinity(xs, 0, wide), ABT_ERR_CPUID);
    CU_ASSERT_EQUAL(ABT_xstream_set_cpubind(ABT_XSTREAM_NULL, 0),
                    ABT_ERR_INV_XSTREAM);
    CU_ASSERT_EQUAL(ABT_xstream_get_cpubind(ABT_XSTREAM_NULL, &cpu),
                    ABT_ERR_INV_XSTREAM);
    AT_OK(ABT_xstream_join(xs));
    CU_ASSERT_EQUAL(ABT_xstream_get_cpubind(xs, &cpu), ABT_ERR_CPUID);
    CU_ASSERT_EQUAL(ABT_xstream_set_cpubind(xs, 0), ABT_ERR_XSTREAM_STATE);
    AT_OK(ABT_xstream_free(&xs));
    AT_OK(ABT_finalize());
}

static const ch_test_t affinity_tests[] = {{"set_get", test_affinity},
                                           {NULL, NULL}};

/* ---- dump ------------------------------------------------------------------- */

static atomic_int g_go, g_spin_stop, g_cb_calls, g_cb_timeout;
static void *g_cb_arg;

static void yield_until_go(void *arg)
{
    (void)arg;
    while (!atomic_load(&g_go))
        AT_CHECK_OK(ABT_thread_yield());
}

static void spin_until_told(void *arg)
{
    (void)arg;
    while (!atomic_load(&g_spin_stop))
        ;
}

static void dump_cb(ABT_bool timeout, void *arg)
{
    atomic_store(&g_cb_timeout, timeout == ABT_TRUE);
    g_cb_arg = arg;
    atomic_fetch_add(&g_cb_calls, 1);
    atomic_store(&g_go, 1);
}

static void test_print_thread_stack(void)
{
    AT_OK(ABT_init(0, NULL));
    atomic_store(&g_go, 0);
    ABT_pool idle, pool = at_main_pool();
    AT_OK(ABT_pool_create_basic(ABT_POOL_FIFO, ABT_POOL_ACCESS_MPMC,
                                ABT_FALSE, &idle));
    ABT_thread ran, never, me;
    AT_OK(ABT_thread_create(pool, yield_until_go, NULL, ABT_THREAD_ATTR_NULL,
                            &ran));
    AT_OK(ABT_thread_yield()); /* ran has run, and yielded */
    AT_OK(ABT_thread_create(idle, yield_until_go, NULL, ABT_THREAD_ATTR_NULL,
                            &never));
    AT_OK(ABT_thread_self(&me));
    mem_t m;
    mem_open(&m);
    AT_OK(ABT_info_print_thread_stack(m.f, ran));
    AT_OK(ABT_info_print_thread_stack(m.f, never));
    AT_OK(ABT_info_print_thread_stack(m.f, me));
    char *s = mem_close(&m);
    CU_ASSERT_PTR_NOT_NULL(strstr(s, "(ULT): ready"));
    CU_ASSERT_PTR_NOT_NULL(strstr(s, "    stack 0x"));
    CU_ASSERT_PTR_NOT_NULL(strstr(s, "(not started yet)"));
    CU_ASSERT_PTR_NOT_NULL(strstr(s, "(main ULT): running"));
    free(s);
    CU_ASSERT_EQUAL(ABT_info_print_thread_stack(stdout, ABT_THREAD_NULL),
                    ABT_ERR_INV_THREAD);
    atomic_store(&g_go, 1);
    AT_OK(ABT_thread_migrate_to_pool(never, pool));
    AT_OK(ABT_thread_free(&ran));
    /* Joined, not freed: the record prints the unit's id, the one
     * ABT_thread_get_id gives, though its id was never asked before. */
    AT_OK(ABT_thread_join(never));
    mem_open(&m);
    AT_OK(ABT_info_print_thread_stack(m.f, never));
    AT_OK(ABT_info_print_thread(m.f, never));
    s = mem_close(&m);
    ABT_thread_id id = 0;
    AT_OK(ABT_thread_get_id(never, &id));
    char want[64];
    snprintf(want, sizeof want, "ULT %llu: no stack", (unsigned long long)id);
    CU_ASSERT_PTR_NOT_NULL(strstr(s, want));
    snprintf(want, sizeof want, "ULT %llu (", (unsigned long long)id);
    CU_ASSERT_PTR_NOT_NULL(strstr(s, want));
    CU_ASSERT_NOT_EQUAL(id, 0);
    free(s);
    AT_OK(ABT_thread_free(&never));
    AT_OK(ABT_pool_free(&idle));
    AT_OK(ABT_finalize());
    CU_ASSERT_EQUAL(ABT_info_print_thread_stack(stdout, me),
                    ABT_ERR_UNINITIALIZED);
}

/* Three more streams, each running ULTs that yield; the main ULT asks for
 * the dump (as a signal handler would) and yields until the callback. */
static void test_trigger_all_stop(void)
{
    enum { NX = 4, PER = 3 };
    CU_ASSERT_EQUAL(ABT_info_trigger_print_all_thread_stacks(stdout, -1.0,
                                                             dump_cb, NULL),
                    ABT_ERR_UNINITIALIZED);
    AT_OK(ABT_init(0, NULL));
    atomic_store(&g_go, 0);
    atomic_store(&g_cb_calls, 0);
    atomic_store(&g_cb_timeout, -1);
    ABT_xstream xs[NX];
    ABT_thread t[NX * PER];
    AT_OK(ABT_xstream_self(&xs[0]));
    for (int i = 1; i < NX; i++)
        AT_OK(ABT_xstream_create(ABT_SCHED_NULL, &xs[i]));
    for (int i = 0; i < NX * PER; i++)
        AT_OK(ABT_thread_create_on_xstream(xs[i % NX], yield_until_go, NULL,
                                           ABT_THREAD_ATTR_NULL, &t[i]));
    mem_t m;
    mem_open(&m);
    AT_OK(ABT_info_trigger_print_all_thread_stacks(m.f, -1.0, dump_cb,
                                                   (void *)&g_go));
    while (!atomic_load(&g_go))
        AT_OK(ABT_thread_yield());
    for (int i = 0; i < NX * PER; i++)
        AT_OK(ABT_thread_free(&t[i]));
    char *s = mem_close(&m);
    CU_ASSERT_EQUAL(atomic_load(&g_cb_calls), 1);
    CU_ASSERT_EQUAL(atomic_load(&g_cb_timeout), 0);
    CU_ASSERT_PTR_EQUAL(g_cb_arg, (void *)&g_go);
    CU_ASSERT_PTR_NOT_NULL(strstr(s, "stream 3:"));
    CU_ASSERT_PTR_NOT_NULL(strstr(s, "(ULT): ready"));
    CU_ASSERT_PTR_NULL(strstr(s, "timeout"));
    free(s);
    for (int i = 1; i < NX; i++)
        AT_OK(ABT_xstream_free(&xs[i]));
    AT_OK(ABT_finalize());
}

/* A stream busy in a ULT that never yields: the dump comes after the
 * timeout, which the callback is told; the stream's late stop returns at
 * once. */
static void test_trigger_timeout(void)
{
    AT_OK(ABT_init(0, NULL));
    atomic_store(&g_go, 0);
    atomic_store(&g_spin_stop, 0);
    atomic_store(&g_cb_calls, 0);
    ABT_xstream xs;
    AT_OK(ABT_xstream_create(ABT_SCHED_NULL, &xs));
    ABT_thread spinner;
    AT_OK(ABT_thread_create_on_xstream(xs, spin_until_told, NULL,
                                       ABT_THREAD_ATTR_NULL, &spinner));
    mem_t m;
    mem_open(&m);
    AT_OK(ABT_info_trigger_print_all_thread_stacks(m.f, 0.05, dump_cb, NULL));
    while (!atomic_load(&g_go))
        AT_OK(ABT_thread_yield());
    atomic_store(&g_spin_stop, 1);
    AT_OK(ABT_thread_free(&spinner));
    char *s = mem_close(&m);
    CU_ASSERT_EQUAL(atomic_load(&g_cb_calls), 1);
    CU_ASSERT_EQUAL(atomic_load(&g_cb_timeout), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(s, "timeout (only 1 of 2 ESs stop)"));
    free(s);
    /* The stream goes on: a unit given to it now runs. */
    atomic_store(&g_go, 1);
    ABT_thread again;
    AT_OK(ABT_thread_create_on_xstream(xs, yield_until_go, NULL,
                                       ABT_THREAD_ATTR_NULL, &again));
    AT_OK(ABT_thread_free(&again));
    AT_OK(ABT_xstream_free(&xs));
    AT_OK(ABT_finalize());
}

/* A dump asked for just before ABT_finalize: the primary never gets to
 * its event check, yet finalize returns; the round, if it began, ends as
 * timed out. With a stream freed in between, the primary stops while it
 * joins it: the dump is complete. */
static void test_trigger_then_finalize(void)
{
    FILE *null = fopen("/dev/null", "w");
    CU_ASSERT_FATAL(null != NULL);
    for (int r = 0; r < (int)ch_iters(20, 3); r++) {
        AT_OK(ABT_init(0, NULL));
        atomic_store(&g_cb_calls, 0);
        atomic_store(&g_cb_timeout, -1);
        AT_OK(ABT_info_trigger_print_all_thread_stacks(null, -1.0, dump_cb,
                                                       NULL));
        AT_OK(ABT_finalize());
        CU_ASSERT(atomic_load(&g_cb_calls) <= 1);
        if (atomic_load(&g_cb_calls) == 1)
            CU_ASSERT_EQUAL(atomic_load(&g_cb_timeout), 1);

        AT_OK(ABT_init(0, NULL));
        atomic_store(&g_cb_calls, 0);
        ABT_xstream xs;
        AT_OK(ABT_xstream_create(ABT_SCHED_NULL, &xs));
        AT_OK(ABT_info_trigger_print_all_thread_stacks(null, -1.0, dump_cb,
                                                       NULL));
        AT_OK(ABT_xstream_free(&xs));
        AT_OK(ABT_finalize());
        CU_ASSERT(atomic_load(&g_cb_calls) <= 1);
    }
    fclose(null);
}

/* ABT_info_print_thread_attr prints what the attribute holds. */
static void test_print_thread_attr(void)
{
    AT_OK(ABT_init(0, NULL));
    ABT_thread_attr attr;
    AT_OK(ABT_thread_attr_create(&attr));
    AT_OK(ABT_thread_attr_set_stacksize(attr, 65536));
    AT_OK(ABT_thread_attr_set_migratable(attr, ABT_FALSE));
    mem_t m;
    mem_open(&m);
    AT_OK(ABT_info_print_thread_attr(m.f, attr));
    char *out = mem_close(&m);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "stacksize:65536"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "migratable:FALSE"));
    free(out);
    CU_ASSERT_EQUAL(ABT_info_print_thread_attr(stderr, ABT_THREAD_ATTR_NULL),
                    ABT_ERR_INV_THREAD_ATTR);
    CU_ASSERT_EQUAL(ABT_info_print_thread_attr(NULL, attr), ABT_ERR_INV_ARG);
    AT_OK(ABT_thread_attr_free(&attr));
    AT_OK(ABT_finalize());
}

static const ch_test_t dump_tests[] = {
    {"print_thread_stack", test_print_thread_stack},
    {"trigger_all_stop", test_trigger_all_stop},
    {"trigger_timeout", test_trigger_timeout},
    {"trigger_then_finalize", test_trigger_then_finalize},
    {"print_thread_attr", test_print_thread_attr},
    {NULL, NULL}};

/* ---- tool ------------------------------------------------------------------ */

/* A unit's life as ABT's tool events tell it: each event must come in a
 * state that allows it (a unit first seen by its CREATE; the main ULT
 * runs from the start). */
enum tl { TL_NONE, TL_READY, TL_RUNNING, TL_BLOCKED, TL_FINISHED, TL_JOINED };
#define TL_SLOTS 1024
static struct {
    pthread_mutex_t lock;
    ABT_thread t[TL_SLOTS];
    unsigned char st[TL_SLOTS];
    long bad, count[12];
    long ext_creates, pool_ok, pool_bad;
    ABT_pool want_pool;
} tl = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* A unit's legal ABT event order: the states each event may come from,
 * and the state it leaves (FREE, which ends the record, is checked on
 * its own). An event not listed is illegal. */
#define TL_BIT(s) (1u << (s))
static const struct {
    uint64_t ev;
    unsigned from;
    unsigned char to;
} tl_moves[] = {
    {ABT_TOOL_EVENT_THREAD_CREATE, TL_BIT(TL_NONE), TL_READY},
    {ABT_TOOL_EVENT_THREAD_RUN, TL_BIT(TL_READY), TL_RUNNING},
    {ABT_TOOL_EVENT_THREAD_YIELD, TL_BIT(TL_RUNNING), TL_READY},
    {ABT_TOOL_EVENT_THREAD_SUSPEND, TL_BIT(TL_RUNNING), TL_BLOCKED},
    {ABT_TOOL_EVENT_THREAD_RESUME, TL_BIT(TL_BLOCKED), TL_READY},
    {ABT_TOOL_EVENT_THREAD_FINISH, TL_BIT(TL_RUNNING), TL_FINISHED},
    {ABT_TOOL_EVENT_THREAD_CANCEL, TL_BIT(TL_READY), TL_FINISHED},
    {ABT_TOOL_EVENT_THREAD_JOIN, TL_BIT(TL_FINISHED) | TL_BIT(TL_JOINED),
     TL_JOINED},
    {ABT_TOOL_EVENT_THREAD_REVIVE, TL_BIT(TL_JOINED), TL_READY},
};

static int ev_index(uint64_t ev)
{
    for (int i = 0; i < 12; i++)
        if (ev == ((uint64_t)1 << i))
            return i;
    return -1;
}

static void tl_event(ABT_thread t, ABT_xstream x, uint64_t ev,
                     ABT_tool_context ctx, void *arg)
{
    (void)x;
    pthread_mutex_lock(&tl.lock);
    int e = ev_index(ev);
    if (e < 0 || arg != &tl) {
        tl.bad++;
        pthread_mutex_unlock(&tl.lock);
        return;
    }
    tl.count[e]++;
    size_t h = ((uintptr_t)t >> 4) % TL_SLOTS;
    while (tl.t[h] && tl.t[h] != t)
        h = (h + 1) % TL_SLOTS;
    if (!tl.t[h]) {
        tl.t[h] = t;
        ABT_bool primary = ABT_FALSE;
        tl.st[h] = ABT_thread_is_primary(t, &primary) == ABT_SUCCESS && primary
                       ? TL_RUNNING
                       : TL_NONE;
    }
    unsigned char *st = &tl.st[h];
    bool ok = false;
    if (ev == ABT_TOOL_EVENT_THREAD_FREE) {
        ABT_bool unnamed = ABT_FALSE;
        ok = ABT_thread_is_unnamed(t, &unnamed) == ABT_SUCCESS &&
             (*st == TL_JOINED || (unnamed && *st == TL_FINISHED));
        /* Its record may serve another unit now: a tombstone keeps the
         * probe chains whole, and that unit gets a fresh slot. */
        tl.t[h] = (ABT_thread)(uintptr_t)1;
    } else {
        for (size_t i = 0; i < sizeof tl_moves / sizeof tl_moves[0]; i++) {
            if (tl_moves[i].ev != ev)
                continue;
            ok = (tl_moves[i].from & TL_BIT(*st)) != 0;
            *st = tl_moves[i].to;
            break;
        }
    }
    if (!ok)
        tl.bad++;
    if (ev == ABT_TOOL_EVENT_THREAD_RUN || ev == ABT_TOOL_EVENT_THREAD_YIELD ||
        ev == ABT_TOOL_EVENT_THREAD_SUSPEND) {
        /* Every unit here runs under its stream's main scheduler. */
        int depth = -1;
        if (ABT_tool_query_thread(ctx, ev, ABT_TOOL_QUERY_KIND_STACK_DEPTH,
                                  &depth) != ABT_SUCCESS ||
            depth != 1)
            tl.bad++;
    }
    if (ev == ABT_TOOL_EVENT_THREAD_CREATE) {
        ABT_exec_entity_type type = ABT_EXEC_ENTITY_TYPE_THREAD;
        ABT_pool pool = ABT_POOL_NULL;
        if (ABT_tool_query_thread(ctx, ev, ABT_TOOL_QUERY_KIND_CALLER_TYPE,
                                  &type) != ABT_SUCCESS ||
            ABT_tool_query_thread(ctx, ev, ABT_TOOL_QUERY_KIND_POOL, &pool) !=
                ABT_SUCCESS)
            tl.bad++;
        tl.ext_creates += type == ABT_EXEC_ENTITY_TYPE_EXT;
        if (tl.want_pool) {
            if (pool == tl.want_pool)
                tl.pool_ok++;
            else
                tl.pool_bad++;
        }
    }
    pthread_mutex_unlock(&tl.lock);
}

static ABT_eventual tl_ev;

static void tl_yielder(void *arg)
{
    (void)arg;
    for (int i = 0; i < 3; i++)
        AT_CHECK_OK(ABT_thread_yield());
}

static void tl_waiter(void *arg)
{
    (void)arg;
    AT_CHECK_OK(ABT_eventual_wait(tl_ev, NULL));
}

static void tl_task(void *arg)
{
    (void)arg;
}

static void *tl_ext_create(void *arg)
{
    ABT_thread t;
    CH_CHECK_EQ(ABT_thread_create(arg, tl_task, NULL, ABT_THREAD_ATTR_NULL,
                                  &t), ABT_SUCCESS);
    CH_CHECK_EQ(ABT_thread_free(&t), ABT_SUCCESS);
    return NULL;
}

/* ABT_init; false (finalized again, the test skipped) when the library
 * was built without tool events. */
static bool tool_init(void)
{
    CU_ASSERT_EQUAL_FATAL(ABT_init(0, NULL), ABT_SUCCESS);
    ABT_bool on = ABT_FALSE;
    CU_ASSERT_EQUAL_FATAL(
        ABT_info_query_config(ABT_INFO_QUERY_KIND_ENABLED_TOOL, &on),
        ABT_SUCCESS);
    if (on)
        return true;
    printf("(skipped: built without tool events) ");
    CU_ASSERT_EQUAL(ABT_finalize(), ABT_SUCCESS);
    return false;
}

/* ABT_tool_register_thread_callback: named and unnamed ULTs and tasklets,
 * yields, waits woken from another stream, joins run in place, a revive
 * and a cancel, on two streams: each unit's events follow its life, the
 * context answers the queries (the pool, an external creator, a depth of
 * 1 under a stream's main scheduler), and once
 * the callback is removed nothing more is told. */
static void test_tool_events(void)
{
    if (!tool_init())
        return;
    memset(tl.t, 0, sizeof tl.t);
    memset(tl.count, 0, sizeof tl.count);
    tl.bad = tl.ext_creates = tl.pool_ok = tl.pool_bad = 0;
    ABT_pool p0 = at_main_pool(), p1;
    ABT_xstream es1;
    AT_OK(ABT_xstream_create(ABT_SCHED_NULL, &es1));
    AT_OK(ABT_xstream_get_main_pools(es1, 1, &p1));
    AT_OK(ABT_tool_register_thread_callback(tl_event, ABT_TOOL_EVENT_THREAD_ALL,
                                            &tl));
    tl.want_pool = p1;
    ABT_thread t;
    AT_OK(ABT_thread_create(p1, tl_task, NULL, ABT_THREAD_ATTR_NULL, &t));
    AT_OK(ABT_thread_free(&t));
    tl.want_pool = ABT_POOL_NULL;
    for (int round = 0; round < 10; round++) {
        ABT_thread u[6];
        ABT_task k;
        AT_OK(ABT_eventual_create(0, &tl_ev));
        for (int i = 0; i < 3; i++)
            AT_OK(ABT_thread_create(i % 2 ? p1 : p0, tl_yielder, NULL,
                                    ABT_THREAD_ATTR_NULL, &u[i]));
        for (int i = 3; i < 6; i++)
            AT_OK(ABT_thread_create(i % 2 ? p1 : p0, tl_waiter, NULL,
                                    ABT_THREAD_ATTR_NULL, &u[i]));
        AT_OK(ABT_task_create(p0, tl_task, NULL, &k));
        AT_OK(ABT_thread_create(p0, tl_task, NULL, ABT_THREAD_ATTR_NULL,
                                NULL)); /* unnamed */
        AT_OK(ABT_thread_yield());
        AT_OK(ABT_eventual_set(tl_ev, NULL, 0));
        for (int i = 0; i < 6; i++)
            AT_OK(ABT_thread_join(u[i]));
        AT_OK(ABT_thread_revive(p0, tl_task, NULL, &u[0]));
        AT_OK(ABT_thread_cancel(u[1]));
        AT_OK(ABT_thread_free_many(6, u));
        AT_OK(ABT_task_free(&k));
        AT_OK(ABT_eventual_free(&tl_ev));
    }
    pthread_t ext;
    pthread_create(&ext, NULL, tl_ext_create, p1); /* es1 runs it */
    pthread_join(ext, NULL);
    AT_OK(ABT_thread_yield()); /* the unnamed ones still queued */
    pthread_mutex_lock(&tl.lock);
    long bad = tl.bad, creates = tl.count[0], frees = tl.count[2];
    long revives = tl.count[3], resumes = tl.count[9];
    pthread_mutex_unlock(&tl.lock);
    CH_ASSERT_EQ(bad, 0);
    CU_ASSERT(creates >= 1 + 10 * 8 + 1);
    CU_ASSERT(frees >= 1 + 10 * 7 + 1);
    CH_ASSERT_EQ(revives, 10);
    CU_ASSERT(resumes > 0);
    CH_ASSERT_EQ(tl.pool_ok, 1);
    CH_ASSERT_EQ(tl.pool_bad, 0);
    CH_ASSERT_EQ(tl.ext_creates, 1);
    /* Removed: nothing more. */
    AT_OK(ABT_tool_register_thread_callback(NULL, ABT_TOOL_EVENT_THREAD_NONE,
                                            NULL));
    AT_OK(ABT_thread_create(p0, tl_task, NULL, ABT_THREAD_ATTR_NULL, &t));
    AT_OK(ABT_thread_free(&t));
    CH_ASSERT_EQ(tl.count[0], creates);
    /* Queries out of a callback: no context. */
    void *v = NULL;
    CU_ASSERT_EQUAL(ABT_tool_query_thread(ABT_TOOL_CONTEXT_NULL, 0,
                                          ABT_TOOL_QUERY_KIND_POOL, &v),
                    ABT_ERR_INV_TOOL_CONTEXT);
    AT_OK(ABT_xstream_free(&es1));
    AT_OK(ABT_finalize());
}

/* Every event told, in order, for the cancel test. */
#define TC_MAX 64
static struct {
    pthread_mutex_t lock;
    ABT_thread t[TC_MAX];
    uint64_t ev[TC_MAX];
    ABT_sync_event_type sync[TC_MAX]; /* YIELD and SUSPEND: what it waits */
    void *obj[TC_MAX];                /* on, as the context answers */
    int n;
} tc = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void tc_event(ABT_thread t, ABT_xstream x, uint64_t ev,
                     ABT_tool_context ctx, void *arg)
{
    (void)x;
    (void)arg;
    ABT_sync_event_type type = ABT_SYNC_EVENT_TYPE_UNKNOWN;
    void *obj = NULL;
    if (ev == ABT_TOOL_EVENT_THREAD_YIELD ||
        ev == ABT_TOOL_EVENT_THREAD_SUSPEND) {
        CH_CHECK_EQ(ABT_tool_query_thread(ctx, ev,
                                          ABT_TOOL_QUERY_KIND_SYNC_OBJECT_TYPE,
                                          &type), ABT_SUCCESS);
        CH_CHECK_EQ(ABT_tool_query_thread(
                        ctx, ev, ABT_TOOL_QUERY_KIND_SYNC_OBJECT_HANDLE, &obj),
                    ABT_SUCCESS);
    }
    pthread_mutex_lock(&tc.lock);
    if (tc.n < TC_MAX) {
        tc.t[tc.n] = t;
        tc.ev[tc.n] = ev;
        tc.sync[tc.n] = type;
        tc.obj[tc.n] = obj;
    }
    tc.n++;
    pthread_mutex_unlock(&tc.lock);
}

/* The first event ev told of t: its index, or -1. */
static int tc_find(ABT_thread t, uint64_t ev)
{
    int at = -1;
    pthread_mutex_lock(&tc.lock);
    for (int i = 0; i < tc.n && i < TC_MAX && at < 0; i++)
        if (tc.t[i] == t && tc.ev[i] == ev)
            at = i;
    pthread_mutex_unlock(&tc.lock);
    return at;
}

/* The events told of t, in order, into out (at most max); their number. */
static int tc_of(ABT_thread t, uint64_t *out, int max)
{
    int k = 0;
    pthread_mutex_lock(&tc.lock);
    for (int i = 0; i < tc.n && i < TC_MAX; i++)
        if (tc.t[i] == t && k < max)
            out[k++] = tc.ev[i];
    pthread_mutex_unlock(&tc.lock);
    return k;
}

static atomic_int tc_ran, tc_stop;

static void tc_mark(void *arg)
{
    (void)arg;
    atomic_fetch_add(&tc_ran, 1);
}

static void tc_yielder(void *arg)
{
    (void)arg;
    atomic_fetch_add(&tc_ran, 1);
    while (!atomic_load(&tc_stop))
        AT_CHECK_OK(ABT_thread_yield());
}

/* A ULT and a tasklet cancelled before they run are told CREATE, CANCEL,
 * then their JOIN and FREE (their functions never run: no RUN, no
 * FINISH), as in Argobots. A ULT cancelled while it yields ends there:
 * its YIELD is followed by CANCEL in place of the RUN that would resume
 * it, and no FINISH. */
static void test_tool_cancel(void)
{
    if (!tool_init())
        return;
    tc.n = 0;
    atomic_store(&tc_ran, 0);
    atomic_store(&tc_stop, 0);
    ABT_pool p0 = at_main_pool();
    AT_OK(ABT_tool_register_thread_callback(tc_event, ABT_TOOL_EVENT_THREAD_ALL,
                                            NULL));
    ABT_thread a, r;
    ABT_task k;
    AT_OK(ABT_thread_create(p0, tc_mark, NULL, ABT_THREAD_ATTR_NULL, &a));
    AT_OK(ABT_task_create(p0, tc_mark, NULL, &k));
    AT_OK(ABT_thread_cancel(a));
    AT_OK(ABT_task_cancel(k));
    ABT_thread ta = a, tk = k;
    AT_OK(ABT_thread_free(&a));
    AT_OK(ABT_task_join(k));
    AT_OK(ABT_task_free(&k));
    CH_ASSERT_EQ(atomic_load(&tc_ran), 0);
    static const uint64_t want[] = {
        ABT_TOOL_EVENT_THREAD_CREATE, ABT_TOOL_EVENT_THREAD_CANCEL,
        ABT_TOOL_EVENT_THREAD_JOIN, ABT_TOOL_EVENT_THREAD_FREE};
    uint64_t got[TC_MAX];
    CH_ASSERT_EQ(tc_of(ta, got, TC_MAX), 4);
    for (int i = 0; i < 4; i++)
        CH_ASSERT_EQ(got[i], want[i]);
    /* A join, then a free: JOIN told by each. */
    CH_ASSERT_EQ(tc_of(tk, got, TC_MAX), 5);
    for (int i = 0; i < 3; i++)
        CH_ASSERT_EQ(got[i], want[i]);
    CH_ASSERT_EQ(got[3], ABT_TOOL_EVENT_THREAD_JOIN);
    CH_ASSERT_EQ(got[4], ABT_TOOL_EVENT_THREAD_FREE);
    /* Running: one stream, so while this ULT runs the yielder is queued. */
    tc.n = 0;
    AT_OK(ABT_thread_create(p0, tc_yielder, NULL, ABT_THREAD_ATTR_NULL, &r));
    while (atomic_load(&tc_ran) < 1)
        AT_OK(ABT_thread_yield());
    AT_OK(ABT_thread_cancel(r));
    ABT_thread tr = r;
    AT_OK(ABT_thread_free(&r));
    int n = tc_of(tr, got, TC_MAX);
    CU_ASSERT(n >= 6 && n <= TC_MAX);
    if (n >= 6) {
        CH_ASSERT_EQ(got[0], ABT_TOOL_EVENT_THREAD_CREATE);
        CH_ASSERT_EQ(got[1], ABT_TOOL_EVENT_THREAD_RUN);
        CH_ASSERT_EQ(got[n - 4], ABT_TOOL_EVENT_THREAD_YIELD);
        CH_ASSERT_EQ(got[n - 3], ABT_TOOL_EVENT_THREAD_CANCEL);
        CH_ASSERT_EQ(got[n - 2], ABT_TOOL_EVENT_THREAD_JOIN);
        CH_ASSERT_EQ(got[n - 1], ABT_TOOL_EVENT_THREAD_FREE);
        for (int i = 0; i < n; i++)
            CU_ASSERT(got[i] != ABT_TOOL_EVENT_THREAD_FINISH);
    }
    AT_OK(ABT_tool_register_thread_callback(NULL, ABT_TOOL_EVENT_THREAD_NONE,
                                            NULL));
    AT_OK(ABT_finalize());
}

static ABT_eventual ts_ev;
static ABT_mutex ts_mutex;

static void ts_wait(void *arg)
{
    (void)arg;
    AT_CHECK_OK(ABT_eventual_wait(ts_ev, NULL));
}

static void ts_lock(void *arg)
{
    (void)arg;
    AT_CHECK_OK(ABT_mutex_lock(ts_mutex));
    AT_CHECK_OK(ABT_mutex_unlock(ts_mutex));
}

static void ts_yield(void *arg)
{
    (void)arg;
    AT_CHECK_OK(ABT_thread_yield());
}

/* A YIELD or SUSPEND tells what the unit waits on, as Argobots does: USER
 * for ABT_thread_yield, EVENTUAL, MUTEX and THREAD_JOIN with the handle
 * waited on. One stream: each unit leaves while the main ULT yields. */
static void test_tool_sync_objects(void)
{
    if (!tool_init())
        return;
    tc.n = 0;
    ABT_pool p0 = at_main_pool();
    AT_OK(ABT_eventual_create(0, &ts_ev));
    AT_OK(ABT_mutex_create(&ts_mutex));
    AT_OK(ABT_tool_register_thread_callback(tc_event, ABT_TOOL_EVENT_THREAD_ALL,
                                            NULL));
    ABT_thread w, l, y, self;
    AT_OK(ABT_self_get_thread(&self));
    AT_OK(ABT_mutex_lock(ts_mutex));
    AT_OK(ABT_thread_create(p0, ts_wait, NULL, ABT_THREAD_ATTR_NULL, &w));
    AT_OK(ABT_thread_create(p0, ts_lock, NULL, ABT_THREAD_ATTR_NULL, &l));
    AT_OK(ABT_thread_create(p0, ts_yield, NULL, ABT_THREAD_ATTR_NULL, &y));
    ABT_thread_state st = ABT_THREAD_STATE_READY;
    while (st != ABT_THREAD_STATE_BLOCKED) {
        AT_OK(ABT_thread_yield());
        AT_OK(ABT_thread_get_state(l, &st));
    }
    /* The waiter and the locker are blocked; the frees below wait for
     * each unit that has not finished (THREAD_JOIN). */
    AT_OK(ABT_mutex_unlock(ts_mutex));
    AT_OK(ABT_eventual_set(ts_ev, NULL, 0));
    ABT_thread wj = w, lj = l, yj = y;
    AT_OK(ABT_thread_free(&l));
    AT_OK(ABT_thread_free(&y));
    AT_OK(ABT_thread_free(&w));
    AT_OK(ABT_tool_register_thread_callback(NULL, ABT_TOOL_EVENT_THREAD_NONE,
                                            NULL));
    int i = tc_find(wj, ABT_TOOL_EVENT_THREAD_SUSPEND);
    CU_ASSERT(i >= 0);
    if (i >= 0) {
        CH_ASSERT_EQ(tc.sync[i], ABT_SYNC_EVENT_TYPE_EVENTUAL);
        CU_ASSERT_PTR_EQUAL(tc.obj[i], ts_ev);
    }
    i = tc_find(lj, ABT_TOOL_EVENT_THREAD_SUSPEND);
    CU_ASSERT(i >= 0);
    if (i >= 0) {
        CH_ASSERT_EQ(tc.sync[i], ABT_SYNC_EVENT_TYPE_MUTEX);
        CU_ASSERT_PTR_EQUAL(tc.obj[i], ts_mutex);
    }
    i = tc_find(yj, ABT_TOOL_EVENT_THREAD_YIELD);
    CU_ASSERT(i >= 0);
    if (i >= 0) {
        CH_ASSERT_EQ(tc.sync[i], ABT_SYNC_EVENT_TYPE_USER);
        CU_ASSERT_PTR_EQUAL(tc.obj[i], NULL);
    }
    /* The main ULT's yields are USER; a join that waited, THREAD_JOIN. */
    int joins = 0, bad = 0;
    for (int k = 0; k < tc.n && k < TC_MAX; k++) {
        if (tc.t[k] != self)
            continue;
        if (tc.ev[k] == ABT_TOOL_EVENT_THREAD_YIELD)
            bad += tc.sync[k] != ABT_SYNC_EVENT_TYPE_USER;
        if (tc.ev[k] == ABT_TOOL_EVENT_THREAD_SUSPEND) {
            joins++;
            bad += tc.sync[k] != ABT_SYNC_EVENT_TYPE_THREAD_JOIN ||
                   (tc.obj[k] != lj && tc.obj[k] != yj && tc.obj[k] != wj);
        }
    }
    CH_ASSERT_EQ(bad, 0);
    CU_ASSERT(joins >= 1);
    AT_OK(ABT_mutex_free(&ts_mutex));
    AT_OK(ABT_eventual_free(&ts_ev));
    AT_OK(ABT_finalize());
}

/* The RUN, FINISH and CANCEL events of tasklets, for the test below; a
 * tasklet is known by its argument, &tf_arg[i]. */
#define TF_MAX 512
static char tf_arg[TF_MAX];
static struct {
    pthread_mutex_t lock;
    int runs[TF_MAX], finishes[TF_MAX], cancels[TF_MAX];
    int run_depth[TF_MAX], finish_depth[TF_MAX];
    ABT_xstream run_x[TF_MAX], finish_x[TF_MAX];
    ABT_thread run_t[TF_MAX], finish_t[TF_MAX], finish_caller[TF_MAX];
    ABT_exec_entity_type finish_type[TF_MAX];
    long bad_query;
} tf = {.lock = PTHREAD_MUTEX_INITIALIZER};
static ABT_xstream tf_ran_on[TF_MAX];
static atomic_int tf_ran[TF_MAX];

static void tf_event(ABT_thread t, ABT_xstream x, uint64_t ev,
                     ABT_tool_context ctx, void *arg)
{
    (void)arg;
    void *a = NULL;
    if (ABT_thread_get_arg(t, &a) != ABT_SUCCESS)
        return;
    uintptr_t at = (uintptr_t)a, lo = (uintptr_t)tf_arg;
    if (at < lo || at >= lo + TF_MAX)
        return; /* not one of the tasklets (the main ULT) */
    int i = (int)(at - lo);
    int depth = -1;
    ABT_thread caller = ABT_THREAD_NULL;
    ABT_exec_entity_type type = ABT_EXEC_ENTITY_TYPE_EXT;
    int q = ABT_tool_query_thread(ctx, ev, ABT_TOOL_QUERY_KIND_STACK_DEPTH,
                                  &depth) |
            ABT_tool_query_thread(ctx, ev, ABT_TOOL_QUERY_KIND_CALLER_HANDLE,
                                  &caller) |
            ABT_tool_query_thread(ctx, ev, ABT_TOOL_QUERY_KIND_CALLER_TYPE,
                                  &type);
    pthread_mutex_lock(&tf.lock);
    tf.bad_query += q != ABT_SUCCESS;
    if (ev == ABT_TOOL_EVENT_THREAD_RUN) {
        tf.runs[i]++;
        tf.run_depth[i] = depth;
        tf.run_x[i] = x;
        tf.run_t[i] = t;
    } else if (ev == ABT_TOOL_EVENT_THREAD_FINISH) {
        tf.finishes[i]++;
        tf.finish_depth[i] = depth;
        tf.finish_x[i] = x;
        tf.finish_t[i] = t;
        tf.finish_caller[i] = caller;
        tf.finish_type[i] = type;
    } else if (ev == ABT_TOOL_EVENT_THREAD_CANCEL) {
        tf.cancels[i]++;
    }
    pthread_mutex_unlock(&tf.lock);
}

static void tf_body(void *arg)
{
    int i = (int)((char *)arg - tf_arg);
    ABT_xstream x = ABT_XSTREAM_NULL;
    AT_CHECK_OK(ABT_xstream_self(&x));
    tf_ran_on[i] = x;
    atomic_fetch_add(&tf_ran[i], 1);
}

/* A tasklet's FINISH is told by the tasklet itself as it ends, before its
 * join can return: with a callback for RUN, FINISH and CANCEL, tasklets
 * on two streams (the primary's, run while the main ULT waits in its
 * joins, and another) are each told RUN once and FINISH once by the time
 * they are joined; FINISH comes from the stream the tasklet ran on, with
 * the depth of its RUN (1, under a stream's main scheduler), the tasklet
 * as its caller (a unit, not an external thread). A tasklet cancelled
 * before it ran is told CANCEL only: no RUN, no FINISH, and its function
 * does not run. */
static void test_tool_task_finish(void)
{
    if (!tool_init())
        return;
    int n = (int)ch_iters(400, 20);
    if (n > TF_MAX - 1)
        n = TF_MAX - 1;
    int c = n; /* the cancelled one */
    pthread_mutex_lock(&tf.lock);
    memset(tf.runs, 0, sizeof tf.runs);
    memset(tf.finishes, 0, sizeof tf.finishes);
    memset(tf.cancels, 0, sizeof tf.cancels);
    tf.bad_query = 0;
    pthread_mutex_unlock(&tf.lock);
    for (int i = 0; i <= n; i++)
        atomic_store(&tf_ran[i], 0);
    ABT_pool p0 = at_main_pool(), p1;
    ABT_xstream es0, es1;
    AT_OK(ABT_xstream_self(&es0));
    AT_OK(ABT_xstream_create(ABT_SCHED_NULL, &es1));
    AT_OK(ABT_xstream_get_main_pools(es1, 1, &p1));
    AT_OK(ABT_tool_register_thread_callback(
        tf_event,
        ABT_TOOL_EVENT_THREAD_RUN | ABT_TOOL_EVENT_THREAD_FINISH |
            ABT_TOOL_EVENT_THREAD_CANCEL,
        NULL));
    ABT_task *k = calloc((size_t)n + 1, sizeof *k);
    CU_ASSERT_FATAL(k != NULL);
    /* The main ULT does not yield between the creation and the cancel:
     * the cancelled one has not run. */
    AT_OK(ABT_task_create(p0, tf_body, &tf_arg[c], &k[c]));
    AT_OK(ABT_task_cancel(k[c]));
    for (int i = 0; i < n; i++)
        AT_OK(ABT_task_create(i % 2 ? p1 : p0, tf_body, &tf_arg[i], &k[i]));
    for (int i = 0; i <= n; i++)
        AT_OK(ABT_task_join(k[i]));
    /* Everything was told before the joins returned. */
    pthread_mutex_lock(&tf.lock);
    long finishes = 0, bad = 0;
    for (int i = 0; i < n; i++) {
        ABT_xstream want = i % 2 ? es1 : es0;
        finishes += tf.finishes[i];
        bad += tf.runs[i] != 1 || tf.finishes[i] != 1 || tf.cancels[i] != 0;
        bad += tf.finish_depth[i] != tf.run_depth[i] || tf.run_depth[i] != 1;
        bad += tf.finish_t[i] != k[i] || tf.run_t[i] != k[i];
        bad += tf.finish_caller[i] != k[i] ||
               tf.finish_type[i] != ABT_EXEC_ENTITY_TYPE_THREAD;
        bad += tf.finish_x[i] != want || tf.run_x[i] != want ||
               tf_ran_on[i] != want;
        bad += atomic_load(&tf_ran[i]) != 1;
    }
    int c_runs = tf.runs[c], c_finishes = tf.finishes[c];
    int c_cancels = tf.cancels[c];
    long bad_query = tf.bad_query;
    pthread_mutex_unlock(&tf.lock);
    AT_OK(ABT_tool_register_thread_callback(NULL, ABT_TOOL_EVENT_THREAD_NONE,
                                            NULL));
    CH_ASSERT_EQ(finishes, n);
    CH_ASSERT_EQ(bad, 0);
    CH_ASSERT_EQ(bad_query, 0);
    CH_ASSERT_EQ(c_cancels, 1);
    CH_ASSERT_EQ(c_runs, 0);
    CH_ASSERT_EQ(c_finishes, 0);
    CH_ASSERT_EQ(atomic_load(&tf_ran[c]), 0);
    for (int i = 0; i <= n; i++)
        AT_OK(ABT_task_free(&k[i]));
    free(k);
    AT_OK(ABT_xstream_free(&es1));
    AT_OK(ABT_finalize());
}

static const ch_test_t tool_tests[] = {{"events", test_tool_events},
                                       {"sync_objects", test_tool_sync_objects},
                                       {"cancel", test_tool_cancel},
                                       {"task_finish", test_tool_task_finish},
                                       {NULL, NULL}};

static const ch_suite_t suites[] = {{"stack", stack_tests},
                                    {"last", last_tests},
                                    {"affinity", affinity_tests},
                                    {"dump", dump_tests},
                                    {"tool", tool_tests},
                                    {NULL, NULL}};

int main(int argc, char **argv) { return ch_main(argc, argv, suites); }
