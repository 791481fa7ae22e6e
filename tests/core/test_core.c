/*
 * tests/core/test_core.c: configuration, init/finalize, error codes,
 * version, environment parsing and caller kinds.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdarg.h>
#include <string.h>

/* ======================================================================= */
/* bounds shared by the config and env suites                               */
/* ======================================================================= */

/* The bounds runtime.h gives each numeric field and its variable: both
 * must be held to exactly these. */
enum bkind { B_INT, B_UNSIGNED, B_SIZE };
static const struct bound {
    const char *var, *field;
    size_t off;
    enum bkind kind;
    unsigned long long min, max;
    bool max_cheap; /* init at max costs little (no 1024 threads) */
} bounds[] = {
#define B(var, f, k, lo, hi, cheap)                                            \
    {var, #f, offsetof(coexec_config_t, f), k, lo, hi, cheap}
    B("COEXEC_NUM_XSTREAMS", num_xstreams, B_INT, 1, 1024, false),
    B("COEXEC_STACK_SIZE", stack_size, B_SIZE, 16384, 1ull << 30, true),
    B("COEXEC_GUARD_SIZE", guard_size, B_SIZE, 0, 64ull << 20, true),
    B("COEXEC_EVENT_FREQ", event_freq, B_UNSIGNED, 1, 1ull << 30, true),
    B("COEXEC_IDLE_SPIN_US", idle_spin_us, B_UNSIGNED, 0, 60000000, true),
    B("COEXEC_SERVICE_THREADS", service_threads, B_INT, 1, 1024, false),
    B("COEXEC_SERVICE_MAX_THREADS", service_max_threads, B_INT, 1, 1024,
      true),
    B("COEXEC_SERVICE_SPIN_US", service_spin_us, B_UNSIGNED, 0, 60000000,
      true),
#undef B
};

static void bound_set(coexec_config_t *cfg, const struct bound *b,
                      long long v)
{
    void *p = (char *)cfg + b->off;
    if (b->kind == B_INT)
        *(int *)p = (int)v;
    else if (b->kind == B_UNSIGNED)
        *(unsigned *)p = (unsigned)v;
    else
        *(size_t *)p = (size_t)v;
}

static long long bound_get(const coexec_config_t *cfg, const struct bound *b)
{
    const void *p = (const char *)cfg + b->off;
    if (b->kind == B_INT)
        return *(const int *)p;
    if (b->kind == B_UNSIGNED)
        return *(const unsigned *)p;
    return (long long)*(const size_t *)p;
}

static void fail_msg(int line, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void fail_msg(int line, const char *fmt, ...)
{
    char b[800];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b, sizeof b, fmt, ap);
    va_end(ap);
    CU_assertImplementation(CU_FALSE, line, b, __FILE__, "", CU_FALSE);
}

/*
 * Inits with var=val set (var may be NULL) and cfg (may be NULL), stderr
 * captured. Expects want: on COEXEC_OK *got (if not NULL) receives the
 * config in force and the runtime is finalized; on an error the runtime
 * is not left running, and for COEXEC_EENV the message on stderr and in
 * coexec_init_error() names var and shows val, for COEXEC_EINVAL
 * coexec_init_error() names "cfg.<field>" and no variable. Returns true
 * when all of that held.
 */
static bool init_expect(int line, const char *var, const char *val,
                        const coexec_config_t *cfg, const char *field,
                        int want, coexec_config_t *got)
{
    char err[4096], ctx[300];
    snprintf(ctx, sizeof ctx, "%s%s%s%s%s%s", var ? var : "",
             var ? "=\"" : "", var ? val : "", var ? "\"" : "",
             field ? " cfg." : "", field ? field : "");
    if (var)
        setenv(var, val, 1);
    ch_stderr_begin();
    int rc = coexec_init(cfg);
    ch_stderr_end(err, sizeof err);
    if (var)
        unsetenv(var);
    if (rc != want) {
        fail_msg(line, "%s: init returned %s, expected %s (%s)", ctx,
                 coexec_err_name(rc), coexec_err_name(want),
                 coexec_init_error());
        if (rc == COEXEC_OK)
            CH_ASSERT_OK_FATAL(coexec_finalize());
        return false;
    }
    bool ok = true;
    const char *msg = coexec_init_error();
    if (rc == COEXEC_OK) {
        if (got)
            CH_ASSERT_OK(coexec_get_config(got));
        CH_ASSERT_OK_FATAL(coexec_finalize());
        return true;
    }
    if (coexec_initialized() != 0) {
        fail_msg(line, "%s: the runtime runs after a failed init", ctx);
        return false;
    }
    if (want == COEXEC_EENV) {
        char named[128];
        snprintf(named, sizeof named, "%s=\"%s\"", var ? var : "",
                 val ? val : "");
        if (!strstr(msg, named)) {
            fail_msg(line, "%s: init_error \"%s\" does not name %s", ctx, msg,
                     named);
            ok = false;
        }
        if (ch_count_lines(err, named) != 1) {
            fail_msg(line, "%s: stderr \"%s\" does not name %s once", ctx,
                     err, named);
            ok = false;
        }
    } else if (want == COEXEC_EINVAL && field) {
        char named[128];
        snprintf(named, sizeof named, "cfg.%s ", field);
        if (!strstr(msg, named) || strstr(msg, "\"=") ||
            strstr(msg, "=\"")) {
            fail_msg(line, "%s: init_error \"%s\" does not name the field "
                     "(only)", ctx, msg);
            ok = false;
        }
    }
    return ok;
}

#define INIT_EXPECT(var, val, cfg, field, want, got)                           \
    init_expect(__LINE__, var, val, cfg, field, want, got)

/* ======================================================================= */
/* config                                                                   */
/* ======================================================================= */

static void t_config_defaults(void)
{
    coexec_config_t cfg;
    memset(&cfg, 0xa5, sizeof cfg);
    CH_ASSERT_OK(coexec_config_init(&cfg));
    CH_ASSERT_EQ(cfg.size, sizeof(coexec_config_t));
    CH_ASSERT_EQ(cfg.num_xstreams, 1);
    CH_ASSERT_EQ(cfg.stack_size, 16 * 1024);
    CH_ASSERT_EQ(cfg.sched_kind, COEXEC_SCHED_BASIC_WAIT);
    CH_ASSERT_EQ(cfg.event_freq, 64);
    CH_ASSERT_EQ(cfg.affinity, 1);
    CH_ASSERT_EQ(cfg.idle_spin_us, 50);
    CH_ASSERT_EQ(cfg.guard_size, 4096);
    CH_ASSERT_EQ(cfg.print_config, 0);
    CH_ASSERT_EQ(cfg.quiet, 0);
}

static void t_config_null(void)
{
    CH_ASSERT_RC(coexec_config_init(NULL), COEXEC_EINVAL);
}

static void t_config_env_not_applied(void)
{
    /* config_init gives the defaults; only init applies the environment. */
    setenv("COEXEC_NUM_XSTREAMS", "3", 1);
    coexec_config_t cfg;
    CH_ASSERT_OK(coexec_config_init(&cfg));
    CH_ASSERT_EQ(cfg.num_xstreams, 1);
    unsetenv("COEXEC_NUM_XSTREAMS");
}

static void t_config_get_after_init_null(void)
{
    coexec_config_t def, got;
    CH_ASSERT_OK(coexec_config_init(&def));
    CH_ASSERT_OK_FATAL(coexec_init(NULL));
    memset(&got, 0, sizeof got);
    CH_ASSERT_OK(coexec_get_config(&got));
    CH_ASSERT_EQ(got.num_xstreams, def.num_xstreams);
    CH_ASSERT_EQ(got.stack_size, def.stack_size);
    CH_ASSERT_EQ(got.sched_kind, def.sched_kind);
    CH_ASSERT_EQ(got.event_freq, def.event_freq);
    CH_ASSERT_EQ(got.affinity, def.affinity);
    CH_ASSERT_EQ(got.idle_spin_us, def.idle_spin_us);
    CH_ASSERT_EQ(got.guard_size, def.guard_size);
    CH_ASSERT_EQ(got.print_config, def.print_config);
    CH_ASSERT_EQ(got.quiet, def.quiet);
    CH_ASSERT_RC(coexec_get_config(NULL), COEXEC_EINVAL);
    ch_finalize();
}

static void t_config_get_after_init_cfg(void)
{
    coexec_config_t cfg, got;
    CH_ASSERT_OK(coexec_config_init(&cfg));
    cfg.num_xstreams = 2;
    cfg.stack_size = 64 * 1024;
    cfg.sched_kind = COEXEC_SCHED_BASIC;
    cfg.event_freq = 5;
    cfg.affinity = 0;
    cfg.idle_spin_us = 7;
    cfg.guard_size = 8192;
    cfg.quiet = 1;
    CH_ASSERT_OK_FATAL(coexec_init(&cfg));
    CH_ASSERT_OK(coexec_get_config(&got));
    CH_ASSERT_EQ(got.num_xstreams, 2);
    CH_ASSERT_EQ(got.stack_size, 64 * 1024);
    CH_ASSERT_EQ(got.sched_kind, COEXEC_SCHED_BASIC);
    CH_ASSERT_EQ(got.event_freq, 5);
    CH_ASSERT_EQ(got.affinity, 0);
    CH_ASSERT_EQ(got.idle_spin_us, 7);
    CH_ASSERT_EQ(got.guard_size, 8192);
    CH_ASSERT_EQ(got.quiet, 1);
    int n = 0;
    CH_ASSERT_OK(coexec_xstream_get_num(&n));
    CH_ASSERT_EQ(n, 2);
    ch_finalize();
}

static void t_config_bad_fields(void)
{
    coexec_config_t cfg;

    CH_ASSERT_OK(coexec_config_init(&cfg));
    cfg.num_xstreams = 0;
    CH_ASSERT_RC(coexec_init(&cfg), COEXEC_EINVAL);
    CH_ASSERT_EQ(coexec_initialized(), 0);

    CH_ASSERT_OK(coexec_config_init(&cfg));
    cfg.num_xstreams = -3;
    CH_ASSERT_RC(coexec_init(&cfg), COEXEC_EINVAL);
    CH_ASSERT_EQ(coexec_initialized(), 0);

    CH_ASSERT_OK(coexec_config_init(&cfg));
    cfg.sched_kind = (coexec_sched_kind_t)42;
    CH_ASSERT_RC(coexec_init(&cfg), COEXEC_EINVAL);
    CH_ASSERT_EQ(coexec_initialized(), 0);

    CH_ASSERT_OK(coexec_config_init(&cfg));
    cfg.event_freq = 0;
    CH_ASSERT_RC(coexec_init(&cfg), COEXEC_EINVAL);
    CH_ASSERT_EQ(coexec_initialized(), 0);

    /* After failures, init works. */
    CH_ASSERT_OK_FATAL(coexec_init(NULL));
    ch_finalize();
}

/* Every numeric field is bounded exactly as its variable: just outside
 * fails with COEXEC_EINVAL naming the field, the bounds themselves work. */
static void t_config_bounds(void)
{
    for (size_t i = 0; i < sizeof bounds / sizeof bounds[0]; i++) {
        const struct bound *b = &bounds[i];
        coexec_config_t cfg, got;
        long long bad[3];
        int nbad = 0;
        if (b->min > 0)
            bad[nbad++] = (long long)b->min - 1;
        if (b->kind == B_INT)
            bad[nbad++] = -2; /* -1 is COEXEC_NUM_XSTREAMS_ALL there */
        bad[nbad++] = (long long)b->max + 1;
        for (int k = 0; k < nbad; k++) {
            CH_ASSERT_OK(coexec_config_init(&cfg));
            bound_set(&cfg, b, bad[k]);
            INIT_EXPECT(NULL, NULL, &cfg, b->field, COEXEC_EINVAL, NULL);
        }
        unsigned long long good[2] = {b->min, b->max};
        for (int k = 0; k < (b->max_cheap ? 2 : 1); k++) {
            CH_ASSERT_OK(coexec_config_init(&cfg));
            if (b->off == offsetof(coexec_config_t, service_threads) ||
                b->off == offsetof(coexec_config_t, service_max_threads)) {
                /* Keep the pair consistent; the relation is tested apart. */
                cfg.service_threads = 1;
                cfg.service_max_threads = 1024;
            }
            bound_set(&cfg, b, (long long)good[k]);
            memset(&got, 0, sizeof got);
            if (INIT_EXPECT(NULL, NULL, &cfg, b->field, COEXEC_OK, &got) &&
                bound_get(&got, b) != (long long)good[k])
                fail_msg(__LINE__, "cfg.%s = %llu: the runtime has %lld",
                         b->field, good[k], bound_get(&got, b));
        }
    }
    /* An unsigned field far above its bound (a negative number cast). */
    coexec_config_t cfg;
    CH_ASSERT_OK(coexec_config_init(&cfg));
    cfg.idle_spin_us = (unsigned)-1;
    INIT_EXPECT(NULL, NULL, &cfg, "idle_spin_us", COEXEC_EINVAL, NULL);
    CH_ASSERT_OK(coexec_config_init(&cfg));
    cfg.service_spin_us = (unsigned)-1;
    INIT_EXPECT(NULL, NULL, &cfg, "service_spin_us", COEXEC_EINVAL, NULL);
    /* Failures left nothing behind. */
    CH_ASSERT_OK_FATAL(coexec_init(NULL));
    CU_ASSERT_STRING_EQUAL(coexec_init_error(), "");
    ch_finalize();
}

/* Booleans take 0 or 1, as their variables; enums one of the kinds their
 * variables name. */
static void t_config_bools_enums(void)
{
    static const struct {
        const char *field;
        size_t off;
        int val;
    } bad[] = {
        {"affinity", offsetof(coexec_config_t, affinity), 4},
        {"affinity", offsetof(coexec_config_t, affinity), -1},
        {"print_config", offsetof(coexec_config_t, print_config), 2},
        {"quiet", offsetof(coexec_config_t, quiet), -1},
        {"quiet", offsetof(coexec_config_t, quiet), 7},
        {"sched_kind", offsetof(coexec_config_t, sched_kind), 42},
        {"sched_kind", offsetof(coexec_config_t, sched_kind),
         COEXEC_SCHED_USER},
        {"sched_kind", offsetof(coexec_config_t, sched_kind), -1},
        {"service_io", offsetof(coexec_config_t, service_io), 3},
        {"service_io", offsetof(coexec_config_t, service_io), -1},
    };
    coexec_config_t cfg, got;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CH_ASSERT_OK(coexec_config_init(&cfg));
        *(int *)((char *)&cfg + bad[i].off) = bad[i].val;
        INIT_EXPECT(NULL, NULL, &cfg, bad[i].field, COEXEC_EINVAL, NULL);
    }
    CH_ASSERT_OK(coexec_config_init(&cfg));
    cfg.quiet = 1;
    cfg.affinity = 0;
    cfg.sched_kind = COEXEC_SCHED_PRIO;
    cfg.service_io = COEXEC_SERVICE_IO_THREADS;
    if (INIT_EXPECT(NULL, NULL, &cfg, NULL, COEXEC_OK, &got)) {
        CH_ASSERT_EQ(got.quiet, 1);
        CH_ASSERT_EQ(got.affinity, 0);
        CH_ASSERT_EQ(got.sched_kind, COEXEC_SCHED_PRIO);
        CH_ASSERT_EQ(got.service_io, COEXEC_SERVICE_IO_THREADS);
    }
}

/* service_threads above service_max_threads names service_threads: the
 * maximum is not raised to fit. */
static void t_config_service_threads_max(void)
{
    coexec_config_t cfg, got;
    CH_ASSERT_OK(coexec_config_init(&cfg));
    cfg.service_threads = 8;
    cfg.service_max_threads = 4;
    INIT_EXPECT(NULL, NULL, &cfg, "service_threads", COEXEC_EINVAL, NULL);
    /* service_threads above the default maximum (16) */
    CH_ASSERT_OK(coexec_config_init(&cfg));
    cfg.service_threads = 20;
    if (INIT_EXPECT(NULL, NULL, &cfg, "service_threads", COEXEC_EINVAL, NULL))
        CU_ASSERT_PTR_NOT_NULL(strstr(coexec_init_error(), "16"));
    CH_ASSERT_OK(coexec_config_init(&cfg));
    cfg.service_threads = 4;
    cfg.service_max_threads = 4;
    if (INIT_EXPECT(NULL, NULL, &cfg, NULL, COEXEC_OK, &got)) {
        CH_ASSERT_EQ(got.service_threads, 4);
        CH_ASSERT_EQ(got.service_max_threads, 4);
    }
}

/* The CPUs this process may run on: the first, the last, and the first
 * CPU number it may not run on. */
static void allowed_cpus(int *first, int *last, int *outside)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    *first = *last = *outside = -1;
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return;
    for (int c = 0; c < CPU_SETSIZE; c++) {
        if (CPU_ISSET(c, &set)) {
            if (*first < 0)
                *first = c;
            *last = c;
        } else if (*outside < 0) {
            *outside = c;
        }
    }
}

/* CPU lists that are not lists, or name CPUs the process may not run on. */
static const char *const bad_cpu_lists[] = {
    "1,", ",1", "3-1", "abc", "1 2", " 1", "1 ", "1-", "-1", "1,,2", "+1",
    "0x1", "1;2", "1-2-3", "0-1,", "1.5", "100000", "0-100000",
    "99999999999999999999",
};

static void t_config_cpus(void)
{
    int first, last, outside;
    allowed_cpus(&first, &last, &outside);
    CU_ASSERT_FATAL(first >= 0 && outside >= 0);
    coexec_config_t cfg, got;
    for (size_t i = 0; i < sizeof bad_cpu_lists / sizeof bad_cpu_lists[0];
         i++) {
        CH_ASSERT_OK(coexec_config_init(&cfg));
        snprintf(cfg.service_cpus, sizeof cfg.service_cpus, "%s",
                 bad_cpu_lists[i]);
        INIT_EXPECT(NULL, NULL, &cfg, "service_cpus", COEXEC_EINVAL, NULL);
    }
    /* A CPU the process may not run on, alone or in a list or range: the
     * message names it. */
    char lists[3][64];
    snprintf(lists[0], sizeof lists[0], "%d", outside);
    snprintf(lists[1], sizeof lists[1], "%d,%d", first, outside);
    snprintf(lists[2], sizeof lists[2], "%d-%d", first, outside);
    for (int i = 0; i < 3; i++) {
        CH_ASSERT_OK(coexec_config_init(&cfg));
        _Static_assert(sizeof lists[i] == sizeof cfg.service_cpus, "sizes");
        memcpy(cfg.service_cpus, lists[i], sizeof cfg.service_cpus);
        char cpu[32];
        snprintf(cpu, sizeof cpu, "CPU %d", outside);
        if (INIT_EXPECT(NULL, NULL, &cfg, "service_cpus", COEXEC_EINVAL,
                        NULL) &&
            !strstr(coexec_init_error(), cpu))
            fail_msg(__LINE__, "\"%s\": \"%s\" does not name %s", lists[i],
                     coexec_init_error(), cpu);
    }
    /* Not NUL-terminated */
    CH_ASSERT_OK(coexec_config_init(&cfg));
    memset(cfg.service_cpus, '1', sizeof cfg.service_cpus);
    INIT_EXPECT(NULL, NULL, &cfg, "service_cpus", COEXEC_EINVAL, NULL);
    /* Ranges are lists: "last-last" is the last CPU, "first-last" starts at
     * the first. */
    struct {
        char list[64];
        int cpu;
    } good[3];
    snprintf(good[0].list, 64, "%d-%d", last, last);
    good[0].cpu = last;
    snprintf(good[1].list, 64, "%d-%d", first, last);
    good[1].cpu = first;
    snprintf(good[2].list, 64, "%d,%d-%d", last, first, last);
    good[2].cpu = last;
    for (int i = 0; i < 3; i++) {
        CH_ASSERT_OK(coexec_config_init(&cfg));
        cfg.service_threads = 2;
        cfg.quiet = 1; /* the service may share a CPU with a stream */
        _Static_assert(sizeof good[i].list == sizeof cfg.service_cpus,
                       "sizes");
        memcpy(cfg.service_cpus, good[i].list, sizeof cfg.service_cpus);
        int rc = coexec_init(&cfg);
        if (rc != COEXEC_OK) {
            fail_msg(__LINE__, "service_cpus \"%s\": %s (%s)", good[i].list,
                     coexec_err_name(rc), coexec_init_error());
            continue;
        }
        CH_ASSERT_OK(coexec_get_config(&got));
        CU_ASSERT_STRING_EQUAL(got.service_cpus, good[i].list);
        coexec_service_info_t info = {.size = sizeof info};
        CH_ASSERT_OK(coexec_service_get_info(&info));
        CH_ASSERT_EQ(info.cpu, good[i].cpu);
        ch_finalize();
    }
}

/* ======================================================================= */
/* init / finalize                                                          */
/* ======================================================================= */

static void t_init_null_finalize(void)
{
    CH_ASSERT_EQ(coexec_initialized(), 0);
    CH_ASSERT_OK_FATAL(coexec_init(NULL));
    CH_ASSERT_EQ(coexec_initialized(), 1);
    CU_ASSERT_STRING_EQUAL(coexec_init_error(), "");
    int n = -1;
    CH_ASSERT_OK(coexec_xstream_get_num(&n));
    CH_ASSERT_EQ(n, 1);
    ch_finalize();
    CH_ASSERT_EQ(coexec_initialized(), 0);
}

static void t_init_twice(void)
{
    CH_ASSERT_OK_FATAL(coexec_init(NULL));
    CH_ASSERT_RC(coexec_init(NULL), COEXEC_EINIT);
    coexec_config_t cfg;
    CH_ASSERT_OK(coexec_config_init(&cfg));
    cfg.num_xstreams = 3;
    CH_ASSERT_RC(coexec_init(&cfg), COEXEC_EINIT);
    /* The running runtime was not disturbed. */
    CH_ASSERT_EQ(coexec_initialized(), 1);
    int n = -1;
    CH_ASSERT_OK(coexec_xstream_get_num(&n));
    CH_ASSERT_EQ(n, 1);
    ch_finalize();
}

static void t_finalize_twice(void)
{
    CH_ASSERT_OK_FATAL(coexec_init(NULL));
    ch_finalize();
    CH_ASSERT_RC(coexec_finalize(), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_finalize(), COEXEC_ENOTINIT);
}

static void dummy_ult(void *arg) { (void)arg; }
static coexec_poll_status_t dummy_tasklet(coexec_poll_t *cx, void *arg)
{
    (void)cx;
    (void)arg;
    return COEXEC_READY;
}

/* Every call that needs a running runtime, with plausible arguments. */
static void check_all_notinit(const char *when, coexec_thread_t t,
                              coexec_tasklet_t k, coexec_pool_t pool,
                              coexec_sched_t sched, coexec_xstream_t xs,
                              coexec_waker_t w)
{
    (void)when;
    coexec_config_t cfg;
    coexec_xstream_t xo;
    coexec_pool_t po;
    coexec_sched_t so;
    coexec_thread_t to;
    coexec_tasklet_t ko;
    coexec_unit_t uo;
    coexec_waker_t wo;
    int i;
    size_t sz;
    uint64_t id;
    coexec_unit_state_t us;
    coexec_xstream_state_t xst;
    coexec_pool_kind_t pk;
    coexec_pool_access_t pa;

    CH_ASSERT_EQ(coexec_initialized(), 0);
    CH_ASSERT_RC(coexec_finalize(), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_get_config(&cfg), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_print_config(NULL), COEXEC_ENOTINIT);
    CH_ASSERT_EQ(coexec_self_caller(), COEXEC_CALLER_EXTERNAL);

    CH_ASSERT_RC(coexec_xstream_create(NULL, &xo), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_xstream_join(xs), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_xstream_free(&xs), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_xstream_self(&xo), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_xstream_self_rank(&i), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_xstream_get_rank(xs, &i), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_xstream_by_rank(0, &xo), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_xstream_get_num(&i), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_xstream_get_state(xs, &xst), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_xstream_get_cpu(xs, &i), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_xstream_get_main_sched(xs, &so), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_xstream_get_main_pool(xs, &po), COEXEC_ENOTINIT);

    CH_ASSERT_RC(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &po),
                 COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_pool_free(&pool), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_pool_push(pool, coexec_thread_unit(t)),
                 COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_pool_pop(pool, &uo), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_pool_get_size(pool, &sz), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_pool_get_info(pool, &pk, &pa), COEXEC_ENOTINIT);

    CH_ASSERT_RC(coexec_sched_create(COEXEC_SCHED_BASIC, &pool, 1, NULL, &so),
                 COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_sched_free(&sched), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_sched_get_num_pools(sched, &i), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_sched_get_pool(sched, 0, &po), COEXEC_ENOTINIT);

    CH_ASSERT_RC(coexec_thread_create(pool, dummy_ult, NULL, NULL, &to),
                 COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_thread_create_on(xs, dummy_ult, NULL, NULL, &to),
                 COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_thread_join(t), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_thread_free(&t), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_thread_self(&to), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_thread_get_id(t, &id), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_self_id(&id), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_thread_get_state(t, &us), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_yield(), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_thread_exit(), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_self_suspend(), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_thread_resume(t), COEXEC_ENOTINIT);

    CH_ASSERT_RC(coexec_tasklet_create(pool, dummy_tasklet, NULL, &ko),
                 COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_tasklet_create_on(xs, dummy_tasklet, NULL, &ko),
                 COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_tasklet_join(k), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_tasklet_free(&k), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_tasklet_get_state(k, &us), COEXEC_ENOTINIT);

    CH_ASSERT_RC(coexec_self_waker(&wo), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_park(), COEXEC_ENOTINIT);
    if (CH_IS_NULL(w)) {
        /* a null waker: either error describes the call */
        int rc = coexec_waker_wake(w);
        CU_ASSERT(rc == COEXEC_ENOTINIT || rc == COEXEC_EINVAL);
    } else {
        CH_ASSERT_RC(coexec_waker_wake(w), COEXEC_ENOTINIT);
    }

    /* These work without a runtime. */
    CH_ASSERT_OK(coexec_config_init(&cfg));
    coexec_xstream_attr_t xa;
    CH_ASSERT_OK(coexec_xstream_attr_init(&xa));
    coexec_thread_attr_t ta;
    CH_ASSERT_OK(coexec_thread_attr_init(&ta));
    coexec_sched_config_t sc;
    CH_ASSERT_OK(coexec_sched_config_init(&sc));
    CU_ASSERT_PTR_NOT_NULL(coexec_strerror(COEXEC_EINVAL));
    CH_ASSERT_EQ(coexec_version(), COEXEC_VERSION_HEX);
}

static void t_calls_before_init(void)
{
    /* Null handles: nothing exists yet. */
    coexec_thread_t t = {0};
    coexec_tasklet_t k = {0};
    coexec_pool_t p = {0};
    coexec_sched_t s = {0};
    coexec_xstream_t x = {0};
    coexec_waker_t w = {0};
    check_all_notinit("before init", t, k, p, s, x, w);
}

static void park_ult(void *arg)
{
    coexec_waker_t *w = arg;
    CH_CHECK_RC(coexec_self_waker(w), COEXEC_OK);
}

static void t_calls_after_finalize(void)
{
    /* Real handles from a runtime that has gone. */
    CH_ASSERT_OK_FATAL(coexec_init(NULL));
    coexec_thread_t t;
    coexec_tasklet_t k;
    coexec_pool_t p, main_pool;
    coexec_sched_t s;
    coexec_xstream_t x;
    coexec_waker_t w = {0};
    CH_ASSERT_OK_FATAL(coexec_xstream_by_rank(0, &x));
    CH_ASSERT_OK_FATAL(coexec_xstream_get_main_pool(x, &main_pool));
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &p));
    CH_ASSERT_OK_FATAL(coexec_sched_create(COEXEC_SCHED_BASIC, &p, 1, NULL, &s));
    CH_ASSERT_OK_FATAL(coexec_thread_create(main_pool, park_ult, &w, NULL, &t));
    CH_ASSERT_OK_FATAL(coexec_thread_join(t));
    CH_ASSERT_OK_FATAL(coexec_tasklet_create(main_pool, dummy_tasklet, NULL, &k));
    CH_ASSERT_OK_FATAL(coexec_tasklet_join(k));
    CU_ASSERT_PTR_NOT_NULL(w.p);
    /* finalize reclaims what was not freed (with a warning). */
    ch_finalize();
    check_all_notinit("after finalize", t, k, p, s, x, w);
}

static atomic_int g_rep_count;

static void count_ult(void *arg)
{
    (void)arg;
    atomic_fetch_add(&g_rep_count, 1);
}

static void t_init_finalize_repeated(void)
{
    long n = ch_iters(50, 10);
    for (long i = 0; i < n; i++) {
        coexec_config_t cfg;
        CH_ASSERT_OK(coexec_config_init(&cfg));
        cfg.num_xstreams = 1 + (int)(i % 4);
        cfg.sched_kind = (i & 1) ? COEXEC_SCHED_BASIC : COEXEC_SCHED_BASIC_WAIT;
        cfg.quiet = 1;
        CH_ASSERT_RC_FATAL(coexec_init(&cfg), COEXEC_OK);
        int num = 0;
        CH_ASSERT_OK(coexec_xstream_get_num(&num));
        CH_ASSERT_EQ_FATAL(num, cfg.num_xstreams);
        /* Run something on every stream, joined or detached. */
        atomic_store(&g_rep_count, 0);
        coexec_thread_t t[4];
        for (int r = 0; r < num; r++) {
            coexec_xstream_t xs;
            CH_ASSERT_OK_FATAL(coexec_xstream_by_rank(r, &xs));
            CH_ASSERT_OK_FATAL(coexec_thread_create_on(xs, count_ult, NULL,
                                                       NULL, &t[r]));
            CH_ASSERT_OK_FATAL(coexec_thread_create_on(xs, count_ult, NULL,
                                                       NULL, NULL));
        }
        for (int r = 0; r < num; r++)
            CH_ASSERT_OK(coexec_thread_free(&t[r]));
        CH_WAIT(atomic_load(&g_rep_count) == 2 * num);
        CH_ASSERT_OK_FATAL(coexec_finalize());
        CH_ASSERT_EQ(coexec_initialized(), 0);
        CH_ASSERT_EQ(atomic_load(&g_rep_count), 2 * num);
    }
}

/* finalize from callers other than the main ULT */

typedef struct {
    atomic_int rc;
    atomic_int done;
} fin_probe_t;

static void fin_from_ult(void *arg)
{
    fin_probe_t *p = arg;
    atomic_store(&p->rc, coexec_finalize());
    atomic_store(&p->done, 1);
}

static coexec_poll_status_t fin_from_tasklet(coexec_poll_t *cx, void *arg)
{
    fin_probe_t *p = arg;
    atomic_store(&p->rc, coexec_finalize());
    atomic_store(&p->done, 1);
    return COEXEC_READY;
}

static void *fin_from_pthread(void *arg)
{
    fin_probe_t *p = arg;
    atomic_store(&p->rc, coexec_finalize());
    atomic_store(&p->done, 1);
    return NULL;
}

static void *init_from_pthread(void *arg)
{
    fin_probe_t *p = arg;
    atomic_store(&p->rc, coexec_init(NULL));
    atomic_store(&p->done, 1);
    return NULL;
}

static void t_finalize_wrong_caller(void)
{
    ch_init(2);
    coexec_xstream_t x0, x1;
    CH_ASSERT_OK_FATAL(coexec_xstream_by_rank(0, &x0));
    CH_ASSERT_OK_FATAL(coexec_xstream_by_rank(1, &x1));

    fin_probe_t p;
    coexec_thread_t t;
    coexec_tasklet_t k;

    /* A ULT on the primary stream. */
    atomic_init(&p.rc, 1);
    atomic_init(&p.done, 0);
    CH_ASSERT_OK(coexec_thread_create_on(x0, fin_from_ult, &p, NULL, &t));
    CH_ASSERT_OK(coexec_thread_free(&t));
    CH_ASSERT_EQ(atomic_load(&p.done), 1);
    CH_ASSERT_RC(atomic_load(&p.rc), COEXEC_ECONTEXT);
    CH_ASSERT_EQ(coexec_initialized(), 1);

    /* A ULT on a secondary stream. */
    atomic_store(&p.rc, 1);
    atomic_store(&p.done, 0);
    CH_ASSERT_OK(coexec_thread_create_on(x1, fin_from_ult, &p, NULL, &t));
    CH_ASSERT_OK(coexec_thread_free(&t));
    CH_ASSERT_RC(atomic_load(&p.rc), COEXEC_ECONTEXT);
    CH_ASSERT_EQ(coexec_initialized(), 1);

    /* A tasklet. */
    atomic_store(&p.rc, 1);
    CH_ASSERT_OK(coexec_tasklet_create_on(x1, fin_from_tasklet, &p, &k));
    CH_ASSERT_OK(coexec_tasklet_free(&k));
    CH_ASSERT_RC(atomic_load(&p.rc), COEXEC_ECONTEXT);
    CH_ASSERT_EQ(coexec_initialized(), 1);

    /* An external thread; and init from it while running -> EINIT. */
    ch_pthread_t th;
    atomic_store(&p.rc, 1);
    ch_pthread_start(&th, fin_from_pthread, &p);
    ch_pthread_join(&th);
    CH_ASSERT_RC(atomic_load(&p.rc), COEXEC_ECONTEXT);
    CH_ASSERT_EQ(coexec_initialized(), 1);
    atomic_store(&p.rc, 1);
    ch_pthread_start(&th, init_from_pthread, &p);
    ch_pthread_join(&th);
    CH_ASSERT_RC(atomic_load(&p.rc), COEXEC_EINIT);

    /* The runtime still works and the real finalize succeeds. */
    atomic_store(&p.rc, 1);
    CH_ASSERT_OK(coexec_thread_create_on(x1, dummy_ult, NULL, NULL, &t));
    CH_ASSERT_OK(coexec_thread_free(&t));
    ch_finalize();
}

typedef struct {
    atomic_int phase;
    atomic_int init_rc, fin_rc, caller;
} other_primary_t;

static void *other_primary_pthread(void *arg)
{
    other_primary_t *o = arg;
    atomic_store(&o->init_rc, coexec_init(NULL));
    if (atomic_load(&o->init_rc) != COEXEC_OK) {
        atomic_store(&o->phase, 3);
        return NULL;
    }
    atomic_store(&o->caller, (int)coexec_self_caller());
    atomic_store(&o->phase, 1);
    while (atomic_load(&o->phase) != 2)
        sched_yield();
    atomic_store(&o->fin_rc, coexec_finalize());
    atomic_store(&o->phase, 3);
    return NULL;
}

static void t_init_from_other_thread(void)
{
    /* Any thread may start the runtime; it then is the primary, and the
     * main thread is an external thread that may not finalize. */
    other_primary_t o;
    atomic_init(&o.phase, 0);
    atomic_init(&o.init_rc, 1);
    atomic_init(&o.fin_rc, 1);
    atomic_init(&o.caller, -1);
    ch_pthread_t th;
    ch_pthread_start(&th, other_primary_pthread, &o);
    CH_WAIT(atomic_load(&o.phase) != 0);
    CH_ASSERT_RC(atomic_load(&o.init_rc), COEXEC_OK);
    if (atomic_load(&o.phase) == 1) {
        CH_ASSERT_EQ(atomic_load(&o.caller), COEXEC_CALLER_ULT);
        CH_ASSERT_EQ(coexec_initialized(), 1);
        CH_ASSERT_EQ(coexec_self_caller(), COEXEC_CALLER_EXTERNAL);
        CH_ASSERT_RC(coexec_finalize(), COEXEC_ECONTEXT);
        CH_ASSERT_RC(coexec_init(NULL), COEXEC_EINIT);
        coexec_xstream_t xs;
        CH_ASSERT_RC(coexec_xstream_self(&xs), COEXEC_ECONTEXT);
        CH_ASSERT_RC(coexec_yield(), COEXEC_ECONTEXT);
        atomic_store(&o.phase, 2);
    }
    ch_pthread_join(&th);
    CH_ASSERT_RC(atomic_load(&o.fin_rc), COEXEC_OK);
    CH_ASSERT_EQ(coexec_initialized(), 0);
    /* And the main thread can start it again. */
    CH_ASSERT_OK_FATAL(coexec_init(NULL));
    CH_ASSERT_EQ(coexec_self_caller(), COEXEC_CALLER_ULT);
    ch_finalize();
}

/* One warning line at finalize for what the user did not free. */
static void leak_ult(void *arg) { (void)arg; }

static void t_finalize_reports_leaks(void)
{
    char buf[8192];
    for (int quiet = 0; quiet < 2; quiet++) {
        coexec_config_t cfg;
        CH_ASSERT_OK(coexec_config_init(&cfg));
        cfg.quiet = quiet;
        CH_ASSERT_OK_FATAL(coexec_init(&cfg));
        coexec_xstream_t x0;
        coexec_pool_t p0, pool;
        coexec_sched_t sched;
        coexec_thread_t t[3];
        coexec_tasklet_t k;
        CH_ASSERT_OK_FATAL(coexec_xstream_by_rank(0, &x0));
        CH_ASSERT_OK_FATAL(coexec_xstream_get_main_pool(x0, &p0));
        for (int i = 0; i < 3; i++)
            CH_ASSERT_OK(coexec_thread_create(p0, leak_ult, NULL, NULL, &t[i]));
        CH_ASSERT_OK(coexec_thread_join(t[0])); /* finished, not freed */
        CH_ASSERT_OK(coexec_tasklet_create(p0, dummy_tasklet, NULL, &k));
        CH_ASSERT_OK(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &pool));
        CH_ASSERT_OK(coexec_sched_create(COEXEC_SCHED_BASIC, &pool, 1, NULL, &sched));
        ch_stderr_begin();
        int rc = coexec_finalize();
        ch_stderr_end(buf, sizeof buf);
        CH_ASSERT_OK(rc);
        CH_ASSERT_EQ(ch_count_lines(buf, ""), quiet ? 0 : 1);
    }
    /* only a pool and a scheduler left over: still one line */
    {
        CH_ASSERT_OK_FATAL(coexec_init(NULL));
        coexec_pool_t pool;
        coexec_sched_t sched;
        CH_ASSERT_OK(coexec_pool_create(COEXEC_POOL_LIFO, COEXEC_ACCESS_MPSC, &pool));
        CH_ASSERT_OK(coexec_sched_create(COEXEC_SCHED_BASIC_WAIT, &pool, 1, NULL, &sched));
        ch_stderr_begin();
        int rc = coexec_finalize();
        ch_stderr_end(buf, sizeof buf);
        CH_ASSERT_OK(rc);
        CH_ASSERT_EQ(ch_count_lines(buf, ""), 1);
    }
    /* nothing left over: nothing printed */
    CH_ASSERT_OK_FATAL(coexec_init(NULL));
    coexec_xstream_t x0;
    coexec_thread_t t;
    CH_ASSERT_OK(coexec_xstream_by_rank(0, &x0));
    CH_ASSERT_OK(coexec_thread_create_on(x0, leak_ult, NULL, NULL, &t));
    CH_ASSERT_OK(coexec_thread_free(&t));
    ch_stderr_begin();
    int rc = coexec_finalize();
    ch_stderr_end(buf, sizeof buf);
    CH_ASSERT_OK(rc);
    CH_ASSERT_EQ(ch_count_lines(buf, ""), 0);
}

/* ======================================================================= */
/* errors                                                                   */
/* ======================================================================= */

static void t_error_table(void)
{
#define CHECK_ENTRY(name, value, text)                                         \
    do {                                                                       \
        CH_ASSERT_EQ(COEXEC_##name, (value));                                  \
        CU_ASSERT_STRING_EQUAL(coexec_strerror(value), text);                  \
        CU_ASSERT_STRING_EQUAL(coexec_err_name(value), #name);                 \
        if ((value) != 0)                                                      \
            CU_ASSERT((value) < 0);                                            \
    } while (0);
    COEXEC_ERROR_TABLE(CHECK_ENTRY)
#undef CHECK_ENTRY
}

static void t_error_values(void)
{
    CH_ASSERT_EQ(COEXEC_EINVAL, -EINVAL);
    CH_ASSERT_EQ(COEXEC_ENOMEM, -ENOMEM);
    CH_ASSERT_EQ(COEXEC_EAGAIN, -EAGAIN);
    CH_ASSERT_EQ(COEXEC_EDEADLK, -EDEADLK);
    /* Runtime-only codes in -4001..-4095, all distinct. */
    int codes[] = {
#define LIST(name, value, text) value,
        COEXEC_ERROR_TABLE(LIST)
#undef LIST
    };
    int n = (int)(sizeof codes / sizeof codes[0]);
    for (int i = 0; i < n; i++) {
        for (int j = i + 1; j < n; j++)
            CU_ASSERT(codes[i] != codes[j]);
        if (codes[i] <= -4000)
            CU_ASSERT(codes[i] >= -4095 && codes[i] <= -4001);
    }
}

static void t_error_unknown(void)
{
    int unknown[] = {1,     2,     12345,   -4000, -4009,   -4095, -4096,
                     -9999, -ENOSPC, -EMFILE, INT_MIN, INT_MAX, -INT_MAX};
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
        const char *s = coexec_strerror(unknown[i]);
        const char *n = coexec_err_name(unknown[i]);
        CU_ASSERT_PTR_NOT_NULL_FATAL(s);
        CU_ASSERT_PTR_NOT_NULL_FATAL(n);
        CU_ASSERT_STRING_EQUAL(s, "unknown error");
        CU_ASSERT_STRING_EQUAL(n, "UNKNOWN");
    }
}

static void *strerror_pthread(void *arg)
{
    (void)arg;
    for (int i = 0; i < 1000; i++) {
        CH_CHECK(strcmp(coexec_strerror(COEXEC_EBUSY),
                        "object is busy or still in use") == 0);
        CH_CHECK(strcmp(coexec_err_name(COEXEC_ECLOSED), "ECLOSED") == 0);
    }
    return NULL;
}

static void t_error_any_thread(void)
{
    /* Usable from any thread, with and without a runtime. */
    ch_pthread_t a, b;
    ch_pthread_start(&a, strerror_pthread, NULL);
    ch_pthread_start(&b, strerror_pthread, NULL);
    ch_pthread_join(&a);
    ch_pthread_join(&b);
    CH_ASSERT_OK_FATAL(coexec_init(NULL));
    CU_ASSERT_STRING_EQUAL(coexec_err_name(COEXEC_EINIT), "EINIT");
    ch_pthread_start(&a, strerror_pthread, NULL);
    ch_pthread_join(&a);
    ch_finalize();
}

/* ======================================================================= */
/* version                                                                  */
/* ======================================================================= */

static void t_version(void)
{
    CH_ASSERT_EQ(coexec_version(), COEXEC_VERSION_HEX);
    CH_ASSERT_EQ(COEXEC_VERSION_HEX, (COEXEC_VERSION_MAJOR << 16) |
                                         (COEXEC_VERSION_MINOR << 8) |
                                         COEXEC_VERSION_PATCH);
    char buf[64];
    snprintf(buf, sizeof buf, "%d.%d.%d", COEXEC_VERSION_MAJOR,
             COEXEC_VERSION_MINOR, COEXEC_VERSION_PATCH);
    CU_ASSERT_PTR_NOT_NULL_FATAL(coexec_version_string());
    CU_ASSERT_STRING_EQUAL(coexec_version_string(), buf);
    CU_ASSERT(COEXEC_VERSION_AT_LEAST(COEXEC_VERSION_MAJOR, COEXEC_VERSION_MINOR));
    CU_ASSERT(COEXEC_VERSION_AT_LEAST(0, 0));
    CU_ASSERT(!COEXEC_VERSION_AT_LEAST(COEXEC_VERSION_MAJOR, COEXEC_VERSION_MINOR + 1));
    CU_ASSERT(!COEXEC_VERSION_AT_LEAST(COEXEC_VERSION_MAJOR + 1, 0));
    /* The same after init. */
    CH_ASSERT_OK_FATAL(coexec_init(NULL));
    CH_ASSERT_EQ(coexec_version(), COEXEC_VERSION_HEX);
    ch_finalize();
}

/* ======================================================================= */
/* environment                                                              */
/* ======================================================================= */

/* init with one variable set; returns the config in force (then finalizes). */
static int env_init_get(const char *var, const char *val,
                        const coexec_config_t *cfg, coexec_config_t *out)
{
    setenv(var, val, 1);
    int rc = coexec_init(cfg);
    unsetenv(var);
    if (rc != COEXEC_OK) {
        char buf[256];
        snprintf(buf, sizeof buf, "init with %s=\"%s\": %s (%s)", var, val,
                 coexec_err_name(rc), coexec_init_error());
        CU_assertImplementation(CU_FALSE, __LINE__, buf, __FILE__, "", CU_FALSE);
        return rc;
    }
    CH_ASSERT_OK(coexec_get_config(out));
    return rc;
}

#define ENV_EXPECT(var, val, field, want)                                      \
    do {                                                                       \
        coexec_config_t got_;                                                  \
        memset(&got_, 0, sizeof got_);                                         \
        if (env_init_get(var, val, NULL, &got_) == COEXEC_OK) {                \
            if ((long long)got_.field != (long long)(want)) {                  \
                char b_[256];                                                  \
                snprintf(b_, sizeof b_, "%s=\"%s\": %s == %lld, expected %lld", \
                         var, val, #field, (long long)got_.field,              \
                         (long long)(want));                                   \
                CU_assertImplementation(CU_FALSE, __LINE__, b_, __FILE__, "",  \
                                        CU_FALSE);                             \
            } else {                                                           \
                CU_PASS(var);                                                  \
            }                                                                  \
            CH_ASSERT_OK(coexec_finalize());                                   \
        }                                                                      \
    } while (0)

static int online_cpus(void);

static void t_env_num_xstreams(void)
{
    ENV_EXPECT("COEXEC_NUM_XSTREAMS", "3", num_xstreams, 3);
    ENV_EXPECT("COEXEC_NUM_XSTREAMS", "1", num_xstreams, 1);
    /* The streams really exist. */
    setenv("COEXEC_NUM_XSTREAMS", "4", 1);
    CH_ASSERT_OK_FATAL(coexec_init(NULL));
    unsetenv("COEXEC_NUM_XSTREAMS");
    int n = 0;
    CH_ASSERT_OK(coexec_xstream_get_num(&n));
    CH_ASSERT_EQ(n, 4);
    ch_finalize();
    /* "all": one per CPU of the binding, whatever the case (counted
     * before init pins this thread). */
    int cpus = online_cpus();
    setenv("COEXEC_NUM_XSTREAMS", "All", 1);
    CH_ASSERT_OK_FATAL(coexec_init(NULL));
    unsetenv("COEXEC_NUM_XSTREAMS");
    CH_ASSERT_OK(coexec_xstream_get_num(&n));
    CH_ASSERT_EQ(n, cpus);
    ch_finalize();
    /* ... and COEXEC_NUM_XSTREAMS_ALL in the struct. */
    coexec_config_t cfg;
    CH_ASSERT_OK(coexec_config_init(&cfg));
    cfg.num_xstreams = COEXEC_NUM_XSTREAMS_ALL;
    CH_ASSERT_OK_FATAL(coexec_init(&cfg));
    CH_ASSERT_OK(coexec_xstream_get_num(&n));
    CH_ASSERT_EQ(n, cpus);
    ch_finalize();
}

static void t_env_stack_size(void)
{
    ENV_EXPECT("COEXEC_STACK_SIZE", "65536", stack_size, 65536);
    ENV_EXPECT("COEXEC_STACK_SIZE", "64K", stack_size, 64 * 1024);
    ENV_EXPECT("COEXEC_STACK_SIZE", "1M", stack_size, 1024 * 1024);
    ENV_EXPECT("COEXEC_STACK_SIZE", "3M", stack_size, 3 * 1024 * 1024);
    ENV_EXPECT("COEXEC_STACK_SIZE", "1G", stack_size, 1024LL * 1024 * 1024);
}

static void t_env_sched(void)
{
    ENV_EXPECT("COEXEC_SCHED", "basic", sched_kind, COEXEC_SCHED_BASIC);
    ENV_EXPECT("COEXEC_SCHED", "basic_wait", sched_kind,
               COEXEC_SCHED_BASIC_WAIT);
}

static void t_env_event_freq(void)
{
    ENV_EXPECT("COEXEC_EVENT_FREQ", "7", event_freq, 7);
    ENV_EXPECT("COEXEC_EVENT_FREQ", "1", event_freq, 1);
    ENV_EXPECT("COEXEC_EVENT_FREQ", "1000", event_freq, 1000);
}

static void t_env_guard_size(void)
{
    ENV_EXPECT("COEXEC_GUARD_SIZE", "0", guard_size, 0);
    ENV_EXPECT("COEXEC_GUARD_SIZE", "8K", guard_size, 8192);
    ENV_EXPECT("COEXEC_GUARD_SIZE", "65536", guard_size, 65536);
    ENV_EXPECT("COEXEC_GUARD_SIZE", "64M", guard_size, 64 << 20);
}

static void t_env_idle_spin(void)
{
    ENV_EXPECT("COEXEC_IDLE_SPIN_US", "0", idle_spin_us, 0);
    ENV_EXPECT("COEXEC_IDLE_SPIN_US", "1000", idle_spin_us, 1000);
}

static void t_env_booleans(void)
{
    static const struct {
        const char *s;
        int v;
    } b[] = {{"0", 0},     {"1", 1},    {"yes", 1}, {"no", 0},
             {"true", 1},  {"false", 0}, {"on", 1}, {"off", 0}};
    for (size_t i = 0; i < sizeof b / sizeof b[0]; i++) {
        ENV_EXPECT("COEXEC_AFFINITY", b[i].s, affinity, b[i].v);
        ENV_EXPECT("COEXEC_QUIET", b[i].s, quiet, b[i].v);
    }
    ENV_EXPECT("COEXEC_PRINT_CONFIG", "1", print_config, 1);
    ENV_EXPECT("COEXEC_PRINT_CONFIG", "off", print_config, 0);
}

static void t_env_affinity_effect(void)
{
    setenv("COEXEC_AFFINITY", "0", 1);
    setenv("COEXEC_NUM_XSTREAMS", "2", 1);
    CH_ASSERT_OK_FATAL(coexec_init(NULL));
    for (int r = 0; r < 2; r++) {
        coexec_xstream_t xs;
        int cpu = 123;
        CH_ASSERT_OK(coexec_xstream_by_rank(r, &xs));
        CH_ASSERT_OK(coexec_xstream_get_cpu(xs, &cpu));
        CH_ASSERT_EQ(cpu, -1);
    }
    ch_finalize();
}

static void t_env_overrides_cfg(void)
{
    coexec_config_t cfg, got;
    CH_ASSERT_OK(coexec_config_init(&cfg));
    cfg.num_xstreams = 2;
    cfg.stack_size = 32 * 1024;
    cfg.sched_kind = COEXEC_SCHED_BASIC_WAIT;
    cfg.event_freq = 3;
    cfg.affinity = 1;
    cfg.idle_spin_us = 9;
    setenv("COEXEC_NUM_XSTREAMS", "3", 1);
    setenv("COEXEC_STACK_SIZE", "128K", 1);
    setenv("COEXEC_SCHED", "basic", 1);
    setenv("COEXEC_EVENT_FREQ", "11", 1);
    setenv("COEXEC_AFFINITY", "off", 1);
    setenv("COEXEC_IDLE_SPIN_US", "0", 1);
    CH_ASSERT_OK_FATAL(coexec_init(&cfg));
    CH_ASSERT_OK(coexec_get_config(&got));
    CH_ASSERT_EQ(got.num_xstreams, 3);
    CH_ASSERT_EQ(got.stack_size, 128 * 1024);
    CH_ASSERT_EQ(got.sched_kind, COEXEC_SCHED_BASIC);
    CH_ASSERT_EQ(got.event_freq, 11);
    CH_ASSERT_EQ(got.affinity, 0);
    CH_ASSERT_EQ(got.idle_spin_us, 0);
    /* The caller's struct is not modified. */
    CH_ASSERT_EQ(cfg.num_xstreams, 2);
    CH_ASSERT_EQ(cfg.stack_size, 32 * 1024);
    ch_finalize();
    /* Fields the environment does not set keep the cfg value. */
    unsetenv("COEXEC_NUM_XSTREAMS");
    unsetenv("COEXEC_STACK_SIZE");
    unsetenv("COEXEC_SCHED");
    unsetenv("COEXEC_EVENT_FREQ");
    unsetenv("COEXEC_AFFINITY");
    unsetenv("COEXEC_IDLE_SPIN_US");
    setenv("COEXEC_EVENT_FREQ", "13", 1);
    CH_ASSERT_OK_FATAL(coexec_init(&cfg));
    CH_ASSERT_OK(coexec_get_config(&got));
    CH_ASSERT_EQ(got.num_xstreams, 2);
    CH_ASSERT_EQ(got.stack_size, 32 * 1024);
    CH_ASSERT_EQ(got.event_freq, 13);
    CH_ASSERT_EQ(got.idle_spin_us, 9);
    ch_finalize();
}

static void t_env_malformed(void)
{
    static const struct {
        const char *var, *val;
    } bad[] = {
        {"COEXEC_NUM_XSTREAMS", "abc"},  {"COEXEC_NUM_XSTREAMS", "0"},
        {"COEXEC_NUM_XSTREAMS", "-1"},   {"COEXEC_NUM_XSTREAMS", ""},
        {"COEXEC_NUM_XSTREAMS", "3x"},   {"COEXEC_NUM_XSTREAMS", "2.5"},
        {"COEXEC_NUM_XSTREAMS", "99999999999999999999"},
        {"COEXEC_SCHED", "bogus"},       {"COEXEC_SCHED", ""},
        {"COEXEC_SCHED", "basic_waitx"},
        {"COEXEC_STACK_SIZE", "12Q"},    {"COEXEC_STACK_SIZE", ""},
        {"COEXEC_STACK_SIZE", "abc"},    {"COEXEC_STACK_SIZE", "K"},
        {"COEXEC_STACK_SIZE", "-64K"},   {"COEXEC_STACK_SIZE", "64KK"},
        {"COEXEC_STACK_SIZE", "99999999999999999999G"},
        {"COEXEC_EVENT_FREQ", "0"},      {"COEXEC_EVENT_FREQ", ""},
        {"COEXEC_EVENT_FREQ", "x"},      {"COEXEC_EVENT_FREQ", "-3"},
        {"COEXEC_AFFINITY", "maybe"},    {"COEXEC_AFFINITY", ""},
        {"COEXEC_AFFINITY", "2"},
        {"COEXEC_IDLE_SPIN_US", "-1"},   {"COEXEC_IDLE_SPIN_US", "abc"},
        {"COEXEC_IDLE_SPIN_US", ""},
        {"COEXEC_GUARD_SIZE", "perhaps"}, {"COEXEC_GUARD_SIZE", ""},
        {"COEXEC_GUARD_SIZE", "65M"},    {"COEXEC_GUARD_SIZE", "-4K"},
        {"COEXEC_PRINT_CONFIG", "xyz"},  {"COEXEC_QUIET", "nah"},
        {"COEXEC_QUIET", ""},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (!ch_init_env_refused(bad[i].var, bad[i].val, NULL, 0))
            continue;
        char ctx[200];
        snprintf(ctx, sizeof ctx, "%s=\"%s\"", bad[i].var, bad[i].val);
        const char *msg = coexec_init_error();
        CU_ASSERT_PTR_NOT_NULL_FATAL(msg);
        if (!strstr(msg, bad[i].var)) {
            char b[600];
            snprintf(b, sizeof b, "%s: init_error \"%s\" does not name the variable",
                     ctx, msg);
            CU_assertImplementation(CU_FALSE, __LINE__, b, __FILE__, "", CU_FALSE);
        }
        if (bad[i].val[0] && !strstr(msg, bad[i].val)) {
            char b[600];
            snprintf(b, sizeof b, "%s: init_error \"%s\" does not show the value",
                     ctx, msg);
            CU_assertImplementation(CU_FALSE, __LINE__, b, __FILE__, "", CU_FALSE);
        }
        /* Nothing left running; init works again. */
        CH_ASSERT_RC(coexec_finalize(), COEXEC_ENOTINIT);
        int rc2 = coexec_init(NULL);
        CH_ASSERT_RC_FATAL(rc2, COEXEC_OK);
        CU_ASSERT_STRING_EQUAL(coexec_init_error(), "");
        CH_ASSERT_OK_FATAL(coexec_finalize());
    }
}

static void t_env_malformed_with_good_cfg(void)
{
    /* The environment is checked even when cfg is given. */
    coexec_config_t cfg;
    CH_ASSERT_OK(coexec_config_init(&cfg));
    cfg.num_xstreams = 2;
    setenv("COEXEC_SCHED", "round_robin", 1);
    CH_ASSERT_RC(coexec_init(&cfg), COEXEC_EENV);
    CU_ASSERT_PTR_NOT_NULL(strstr(coexec_init_error(), "COEXEC_SCHED"));
    unsetenv("COEXEC_SCHED");
    CH_ASSERT_EQ(coexec_initialized(), 0);
    CH_ASSERT_OK_FATAL(coexec_init(&cfg));
    int n = 0;
    CH_ASSERT_OK(coexec_xstream_get_num(&n));
    CH_ASSERT_EQ(n, 2);
    ch_finalize();
}

/* Every numeric variable has exactly its field's bounds: just outside
 * fails with COEXEC_EENV naming the variable, the bounds themselves are
 * applied. */
static void t_env_bounds(void)
{
    for (size_t i = 0; i < sizeof bounds / sizeof bounds[0]; i++) {
        const struct bound *b = &bounds[i];
        char v[64];
        if (b->min > 0) {
            snprintf(v, sizeof v, "%llu", b->min - 1);
            INIT_EXPECT(b->var, v, NULL, NULL, COEXEC_EENV, NULL);
        }
        snprintf(v, sizeof v, "%llu", b->max + 1);
        INIT_EXPECT(b->var, v, NULL, NULL, COEXEC_EENV, NULL);
        unsigned long long good[2] = {b->min, b->max};
        for (int k = 0; k < (b->max_cheap ? 2 : 1); k++) {
            coexec_config_t cfg, got;
            CH_ASSERT_OK(coexec_config_init(&cfg));
            cfg.service_max_threads = 1024; /* the relation is tested apart */
            snprintf(v, sizeof v, "%llu", good[k]);
            memset(&got, 0, sizeof got);
            if (INIT_EXPECT(b->var, v, &cfg, NULL, COEXEC_OK, &got) &&
                bound_get(&got, b) != (long long)good[k])
                fail_msg(__LINE__, "%s=%s: the runtime has %lld", b->var, v,
                         bound_get(&got, b));
        }
    }
    /* Sizes out of bounds with a suffix. */
    INIT_EXPECT("COEXEC_STACK_SIZE", "15K", NULL, NULL, COEXEC_EENV, NULL);
    INIT_EXPECT("COEXEC_STACK_SIZE", "2G", NULL, NULL, COEXEC_EENV, NULL);
    INIT_EXPECT("COEXEC_GUARD_SIZE", "1G", NULL, NULL, COEXEC_EENV, NULL);
    /* A variable out of bounds fails even when the field is fine. */
    coexec_config_t cfg;
    CH_ASSERT_OK(coexec_config_init(&cfg));
    cfg.idle_spin_us = 10;
    INIT_EXPECT("COEXEC_IDLE_SPIN_US", "60000001", &cfg, NULL, COEXEC_EENV,
                NULL);
    /* A good variable overrides a field out of bounds: the field is not
     * what the runtime would use. */
    CH_ASSERT_OK(coexec_config_init(&cfg));
    cfg.idle_spin_us = 60000001;
    coexec_config_t got;
    if (INIT_EXPECT("COEXEC_IDLE_SPIN_US", "5", &cfg, NULL, COEXEC_OK, &got))
        CH_ASSERT_EQ(got.idle_spin_us, 5);
}

/* COEXEC_SERVICE_THREADS above the maximum fails naming it (the maximum
 * is not raised to fit); so does COEXEC_SERVICE_MAX_THREADS below the
 * threads kept. */
static void t_env_service_threads_max(void)
{
    /* 20 with the default maximum of 16 */
    if (INIT_EXPECT("COEXEC_SERVICE_THREADS", "20", NULL, NULL, COEXEC_EENV,
                    NULL)) {
        const char *msg = coexec_init_error();
        CU_ASSERT_PTR_NOT_NULL(strstr(msg, "COEXEC_SERVICE_MAX_THREADS"));
        CU_ASSERT_PTR_NOT_NULL(strstr(msg, "16"));
        CU_ASSERT_PTR_NULL(strstr(msg, "cfg."));
    }
    /* with a maximum from the struct */
    coexec_config_t cfg, got;
    CH_ASSERT_OK(coexec_config_init(&cfg));
    cfg.service_max_threads = 1;
    INIT_EXPECT("COEXEC_SERVICE_THREADS", "2", &cfg, NULL, COEXEC_EENV, NULL);
    /* a maximum below the struct's kept threads names the maximum */
    CH_ASSERT_OK(coexec_config_init(&cfg));
    cfg.service_threads = 8;
    cfg.service_max_threads = 8;
    INIT_EXPECT("COEXEC_SERVICE_MAX_THREADS", "4", &cfg, NULL, COEXEC_EENV,
                NULL);
    /* both set, inconsistent: the kept threads are named */
    setenv("COEXEC_SERVICE_MAX_THREADS", "2", 1);
    INIT_EXPECT("COEXEC_SERVICE_THREADS", "3", NULL, NULL, COEXEC_EENV, NULL);
    /* both set, consistent: 20 threads run */
    setenv("COEXEC_SERVICE_MAX_THREADS", "24", 1);
    setenv("COEXEC_SERVICE_THREADS", "20", 1);
    int rc = coexec_init(NULL);
    unsetenv("COEXEC_SERVICE_MAX_THREADS");
    unsetenv("COEXEC_SERVICE_THREADS");
    CH_ASSERT_RC_FATAL(rc, COEXEC_OK);
    CH_ASSERT_OK(coexec_get_config(&got));
    CH_ASSERT_EQ(got.service_threads, 20);
    CH_ASSERT_EQ(got.service_max_threads, 24);
    coexec_service_info_t info = {.size = sizeof info};
    CU_ASSERT(CH_WAIT(coexec_service_get_info(&info) == COEXEC_OK &&
                      info.threads == 20));
    ch_finalize();
}

static intptr_t where_fn(void *arg)
{
    (void)arg;
    return sched_getcpu();
}

/* COEXEC_SERVICE_CPUS: lists and ranges of CPUs the process may run on;
 * anything else fails naming the variable (never a thread left unpinned). */
static void t_env_cpus(void)
{
    int first, last, outside;
    allowed_cpus(&first, &last, &outside);
    CU_ASSERT_FATAL(first >= 0 && outside >= 0);
    for (size_t i = 0; i < sizeof bad_cpu_lists / sizeof bad_cpu_lists[0];
         i++)
        INIT_EXPECT("COEXEC_SERVICE_CPUS", bad_cpu_lists[i], NULL, NULL,
                    COEXEC_EENV, NULL);
    INIT_EXPECT("COEXEC_SERVICE_CPUS", "", NULL, NULL, COEXEC_EENV, NULL);
    char v[96];
    memset(v, 0, sizeof v);
    memset(v, '1', 64); /* longer than the field */
    INIT_EXPECT("COEXEC_SERVICE_CPUS", v, NULL, NULL, COEXEC_EENV, NULL);
    char cpu[32];
    snprintf(cpu, sizeof cpu, "CPU %d", outside);
    snprintf(v, sizeof v, "%d", outside);
    if (INIT_EXPECT("COEXEC_SERVICE_CPUS", v, NULL, NULL, COEXEC_EENV, NULL))
        CU_ASSERT_PTR_NOT_NULL(strstr(coexec_init_error(), cpu));
    snprintf(v, sizeof v, "%d-%d", first, outside);
    if (INIT_EXPECT("COEXEC_SERVICE_CPUS", v, NULL, NULL, COEXEC_EENV, NULL))
        CU_ASSERT_PTR_NOT_NULL(strstr(coexec_init_error(), cpu));
    /* Also with affinity off: the list is wrong either way. */
    coexec_config_t cfg, got;
    CH_ASSERT_OK(coexec_config_init(&cfg));
    cfg.affinity = 0;
    INIT_EXPECT("COEXEC_SERVICE_CPUS", v, &cfg, NULL, COEXEC_EENV, NULL);
    /* A bad field is not checked when the variable replaces it. */
    CH_ASSERT_OK(coexec_config_init(&cfg));
    snprintf(cfg.service_cpus, sizeof cfg.service_cpus, "1,");
    snprintf(v, sizeof v, "%d", last);
    cfg.quiet = 1;
    if (INIT_EXPECT("COEXEC_SERVICE_CPUS", v, &cfg, NULL, COEXEC_OK, &got))
        CU_ASSERT_STRING_EQUAL(got.service_cpus, v);

    /* Ranges: the service's first CPU is the list's first; its calls run
     * on the CPUs listed. */
    struct {
        char list[64];
        int cpu;
    } good[3];
    snprintf(good[0].list, 64, "%d-%d", last, last);
    good[0].cpu = last;
    snprintf(good[1].list, 64, "%d-%d", first, last);
    good[1].cpu = first;
    snprintf(good[2].list, 64, "%d,%d-%d", last, first, last);
    good[2].cpu = last;
    CH_ASSERT_OK(coexec_config_init(&cfg));
    cfg.quiet = 1; /* the service may share a CPU with a stream */
    for (int i = 0; i < 3; i++) {
        setenv("COEXEC_SERVICE_CPUS", good[i].list, 1);
        int rc = coexec_init(&cfg);
        unsetenv("COEXEC_SERVICE_CPUS");
        if (rc != COEXEC_OK) {
            fail_msg(__LINE__, "COEXEC_SERVICE_CPUS=\"%s\": %s (%s)",
                     good[i].list, coexec_err_name(rc), coexec_init_error());
            continue;
        }
        CH_ASSERT_OK(coexec_get_config(&got));
        CU_ASSERT_STRING_EQUAL(got.service_cpus, good[i].list);
        coexec_service_info_t info = {.size = sizeof info};
        CH_ASSERT_OK(coexec_service_get_info(&info));
        CH_ASSERT_EQ(info.cpu, good[i].cpu);
        intptr_t where = -1;
        CH_ASSERT_OK(coexec_offload(where_fn, NULL, &where));
        CU_ASSERT(where >= first && where <= last);
        if (i == 0)
            CH_ASSERT_EQ(where, last);
        ch_finalize();
    }
}

static int online_cpus(void)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return 1;
    return CPU_COUNT(&set);
}

static void t_env_print_and_quiet(void)
{
    char buf[8192];
    /* COEXEC_PRINT_CONFIG=1 prints the configuration at init */
    setenv("COEXEC_PRINT_CONFIG", "1", 1);
    ch_stderr_begin();
    int rc = coexec_init(NULL);
    ch_stderr_end(buf, sizeof buf);
    unsetenv("COEXEC_PRINT_CONFIG");
    CH_ASSERT_OK_FATAL(rc);
    CU_ASSERT(ch_count_lines(buf, "") >= 1);
    ch_finalize();
    /* default: a quiet init */
    ch_stderr_begin();
    rc = coexec_init(NULL);
    ch_stderr_end(buf, sizeof buf);
    CH_ASSERT_OK_FATAL(rc);
    CH_ASSERT_EQ(ch_count_lines(buf, ""), 0);
    ch_finalize();
    /* more streams than cores: placement wraps (one warning; the service
     * stream sharing the last cpu is the documented default, said only
     * when COEXEC_SERVICE_CPUS chose it), none with COEXEC_QUIET */
    char n[16];
    snprintf(n, sizeof n, "%d", online_cpus() + 2);
    setenv("COEXEC_NUM_XSTREAMS", n, 1);
    for (int quiet = 0; quiet < 2; quiet++) {
        setenv("COEXEC_QUIET", quiet ? "yes" : "no", 1);
        ch_stderr_begin();
        rc = coexec_init(NULL);
        ch_stderr_end(buf, sizeof buf);
        CH_ASSERT_OK_FATAL(rc);
        CH_ASSERT_EQ(ch_count_lines(buf, ""), quiet ? 0 : 1);
        ch_finalize();
    }
    /* a service cpu chosen to overlap a compute stream: said */
    setenv("COEXEC_SERVICE_CPUS", "0", 1);
    setenv("COEXEC_QUIET", "no", 1);
    ch_stderr_begin();
    rc = coexec_init(NULL);
    ch_stderr_end(buf, sizeof buf);
    unsetenv("COEXEC_SERVICE_CPUS");
    CH_ASSERT_OK_FATAL(rc);
    CH_ASSERT_EQ(ch_count_lines(buf, "COEXEC_SERVICE_CPUS"), 1);
    ch_finalize();
    unsetenv("COEXEC_QUIET");
    unsetenv("COEXEC_NUM_XSTREAMS");
    /* a malformed variable: the message is printed on stderr too */
    setenv("COEXEC_SCHED", "fastest", 1);
    ch_stderr_begin();
    rc = coexec_init(NULL);
    ch_stderr_end(buf, sizeof buf);
    unsetenv("COEXEC_SCHED");
    CH_ASSERT_RC(rc, COEXEC_EENV);
    CH_ASSERT_EQ(ch_count_lines(buf, "COEXEC_SCHED"), 1);
}

static void t_print_config(void)
{
    CH_ASSERT_OK_FATAL(coexec_init(NULL));
    FILE *f = tmpfile();
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CH_ASSERT_OK(coexec_print_config(f));
    fflush(f);
    long len = ftell(f);
    CU_ASSERT(len > 0);
    fclose(f);
    ch_finalize();
}

/* ======================================================================= */
/* caller kinds                                                             */
/* ======================================================================= */

typedef struct {
    atomic_int caller;
    atomic_int rc;
} caller_probe_t;

static void caller_ult(void *arg)
{
    caller_probe_t *p = arg;
    atomic_store(&p->caller, (int)coexec_self_caller());
}

static coexec_poll_status_t caller_tasklet(coexec_poll_t *cx, void *arg)
{
    caller_probe_t *p = arg;
    atomic_store(&p->caller, (int)coexec_self_caller());
    return COEXEC_READY;
}

static void *caller_pthread(void *arg)
{
    caller_probe_t *p = arg;
    atomic_store(&p->caller, (int)coexec_self_caller());
    return NULL;
}

static void t_caller_kinds(void)
{
    CH_ASSERT_EQ(coexec_self_caller(), COEXEC_CALLER_EXTERNAL);
    ch_init(2);
    CH_ASSERT_EQ(coexec_self_caller(), COEXEC_CALLER_ULT);

    caller_probe_t p;
    atomic_init(&p.caller, -1);
    coexec_xstream_t x0, x1;
    CH_ASSERT_OK_FATAL(coexec_xstream_by_rank(0, &x0));
    CH_ASSERT_OK_FATAL(coexec_xstream_by_rank(1, &x1));
    coexec_xstream_t xs[2] = {x0, x1};
    for (int i = 0; i < 2; i++) {
        coexec_thread_t t;
        coexec_tasklet_t k;
        atomic_store(&p.caller, -1);
        CH_ASSERT_OK(coexec_thread_create_on(xs[i], caller_ult, &p, NULL, &t));
        CH_ASSERT_OK(coexec_thread_free(&t));
        CH_ASSERT_EQ(atomic_load(&p.caller), COEXEC_CALLER_ULT);
        atomic_store(&p.caller, -1);
        CH_ASSERT_OK(coexec_tasklet_create_on(xs[i], caller_tasklet, &p, &k));
        CH_ASSERT_OK(coexec_tasklet_free(&k));
        CH_ASSERT_EQ(atomic_load(&p.caller), COEXEC_CALLER_TASKLET);
    }
    ch_pthread_t th;
    atomic_store(&p.caller, -1);
    ch_pthread_start(&th, caller_pthread, &p);
    ch_pthread_join(&th);
    CH_ASSERT_EQ(atomic_load(&p.caller), COEXEC_CALLER_EXTERNAL);
    ch_finalize();
    CH_ASSERT_EQ(coexec_self_caller(), COEXEC_CALLER_EXTERNAL);
}

/* ======================================================================= */

static const ch_test_t config_tests[] = {
    {"defaults", t_config_defaults},
    {"null", t_config_null},
    {"env_not_applied_by_config_init", t_config_env_not_applied},
    {"get_config_after_init_null", t_config_get_after_init_null},
    {"get_config_after_init_cfg", t_config_get_after_init_cfg},
    {"bad_fields_einval", t_config_bad_fields},
    {"bounds_like_env", t_config_bounds},
    {"bools_enums", t_config_bools_enums},
    {"service_threads_max", t_config_service_threads_max},
    {"service_cpus", t_config_cpus},
    {"print_config", t_print_config},
    {NULL, NULL}};

static const ch_test_t init_tests[] = {
    {"init_null_finalize", t_init_null_finalize},
    {"init_twice_einit", t_init_twice},
    {"finalize_twice_enotinit", t_finalize_twice},
    {"calls_before_init_enotinit", t_calls_before_init},
    {"calls_after_finalize_enotinit", t_calls_after_finalize},
    {"init_finalize_repeated", t_init_finalize_repeated},
    {"finalize_wrong_caller_econtext", t_finalize_wrong_caller},
    {"init_from_other_thread", t_init_from_other_thread},
    {"finalize_reports_leaks_once", t_finalize_reports_leaks},
    {NULL, NULL}};

static const ch_test_t errors_tests[] = {
    {"table", t_error_table},
    {"values", t_error_values},
    {"unknown", t_error_unknown},
    {"any_thread", t_error_any_thread},
    {NULL, NULL}};

static const ch_test_t version_tests[] = {{"version", t_version}, {NULL, NULL}};

static const ch_test_t env_tests[] = {
    {"num_xstreams", t_env_num_xstreams},
    {"stack_size_suffixes", t_env_stack_size},
    {"sched", t_env_sched},
    {"event_freq", t_env_event_freq},
    {"idle_spin_us", t_env_idle_spin},
    {"guard_size", t_env_guard_size},
    {"booleans", t_env_booleans},
    {"affinity_effect", t_env_affinity_effect},
    {"env_overrides_cfg", t_env_overrides_cfg},
    {"malformed_eenv", t_env_malformed},
    {"malformed_with_cfg", t_env_malformed_with_good_cfg},
    {"bounds_like_cfg", t_env_bounds},
    {"service_threads_max", t_env_service_threads_max},
    {"service_cpus", t_env_cpus},
    {"print_config_and_quiet", t_env_print_and_quiet},
    {NULL, NULL}};

static const ch_test_t caller_tests[] = {{"kinds", t_caller_kinds},
                                         {NULL, NULL}};

static const ch_suite_t suites[] = {
    {"config", config_tests}, {"init", init_tests},
    {"errors", errors_tests}, {"version", version_tests},
    {"env", env_tests},       {"caller", caller_tests},
    {NULL, NULL}};

int main(int argc, char **argv) { return ch_main(argc, argv, suites); }
