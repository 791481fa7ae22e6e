/*
 * tests/core/test_stats.c: the streams' counters (coexec/stats.h) count
 * what the test did, reset, the table, and the call's errors.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <stdatomic.h>

#include "harness.h"

static coexec_xstream_stats_t stats_of(int rank)
{
    coexec_xstream_stats_t st;
    memset(&st, 0xa5, sizeof st);
    st.size = sizeof st;
    CH_ASSERT_OK(coexec_xstream_get_stats(ch_xstream(rank), &st));
    return st;
}

static coexec_poll_status_t ready(coexec_poll_t *cx, void *arg)
{
    (void)cx;
    (void)arg;
    return COEXEC_READY;
}

static void empty_ult(void *arg) { (void)arg; }

static intptr_t offloaded(void *arg) { return (intptr_t)arg + 1; }

/* Yields, runs, tasklets, offloads on one stream: exact counts. */
static void t_counts(void)
{
    ch_init(1);
    CH_ASSERT_OK(coexec_stats_reset());
    coexec_xstream_stats_t a = stats_of(0);
    CH_ASSERT_EQ(a.rank, 0);
    CH_ASSERT_EQ(a.yields, 0);
    CH_ASSERT_EQ(a.units_run, 0);
    CH_ASSERT_EQ(a.offloads, 0);

    for (int i = 0; i < 10; i++)
        CH_ASSERT_OK(coexec_yield());
    coexec_pool_t pool = ch_main_pool(0);
    coexec_tasklet_t k[5];
    for (int i = 0; i < 5; i++)
        CH_ASSERT_OK(coexec_tasklet_create(pool, ready, NULL, &k[i]));
    for (int i = 0; i < 5; i++)
        CH_ASSERT_OK(coexec_tasklet_free(&k[i]));
    coexec_thread_t t[4];
    for (int i = 0; i < 4; i++)
        CH_ASSERT_OK(coexec_thread_create(pool, empty_ult, NULL, NULL, &t[i]));
    ch_free_threads(t, 4);
    for (int i = 0; i < 3; i++) {
        intptr_t r = 0;
        CH_ASSERT_OK(coexec_offload(offloaded, (void *)(intptr_t)i, &r));
        CH_ASSERT_EQ(r, i + 1);
    }

    coexec_xstream_stats_t b = stats_of(0);
    CH_ASSERT_EQ(b.yields, 10);
    CH_ASSERT_EQ(b.tasklets_run, 5);
    CH_ASSERT_EQ(b.offloads, 3);
    /* 5 tasklets and 4 ULTs run in place, each ULT switched to and its
     * joiner resumed (an offload may park the main ULT too: more). */
    CU_ASSERT(b.units_run >= 5 + 4 + 4);
    CU_ASSERT(b.switches >= 4 + 4);
    CU_ASSERT(b.units_run - b.tasklets_run <= b.switches);
    CH_ASSERT_EQ(b.steals, 0);
    CH_ASSERT_EQ(b.stolen, 0);
    CU_ASSERT(b.busy_ns > 0);

    /* A reset starts from zero again. */
    CH_ASSERT_OK(coexec_stats_reset());
    coexec_xstream_stats_t c = stats_of(0);
    CH_ASSERT_EQ(c.yields, 0);
    CH_ASSERT_EQ(c.tasklets_run, 0);
    CH_ASSERT_EQ(c.offloads, 0);
    CH_ASSERT_OK(coexec_yield());
    CH_ASSERT_EQ(stats_of(0).yields, 1);
    ch_finalize();
}

/* An older caller's smaller struct: nothing past its size is written. */
static void t_versioned(void)
{
    ch_init(1);
    CH_ASSERT_OK(coexec_yield());
    union {
        coexec_xstream_stats_t st;
        unsigned char bytes[sizeof(coexec_xstream_stats_t)];
    } u;
    memset(&u, 0xa5, sizeof u);
    size_t old = offsetof(coexec_xstream_stats_t, yields);
    u.st.size = old;
    CH_ASSERT_OK(coexec_xstream_get_stats(ch_xstream(0), &u.st));
    CH_ASSERT_EQ(u.st.size, old);
    for (size_t i = old; i < sizeof u; i++)
        CH_ASSERT_EQ(u.bytes[i], 0xa5);
    ch_finalize();
}

static void suspender(void *arg)
{
    (void)arg;
    CH_ASSERT_OK(coexec_self_suspend());
}

/* Parks and wakes: a ULT on stream 1 suspends and the main ULT resumes
 * it; stealing between the default pools balances counts. */
static void t_parks_wakes(void)
{
    ch_init(2);
    CH_ASSERT_OK(coexec_stats_reset());
    coexec_thread_t t;
    ch_spawn_on(1, suspender, NULL, &t);
    /* Wait until it is suspended, without deciding on timing. */
    double t0 = ch_now();
    while (ch_thread_state(t) != COEXEC_UNIT_BLOCKED &&
           ch_now() - t0 < CH_WAIT_LIMIT_S)
        ch_relax();
    CH_ASSERT_EQ_FATAL(ch_thread_state(t), COEXEC_UNIT_BLOCKED);
    CH_ASSERT_OK(coexec_thread_resume(t));
    ch_free_threads(&t, 1);
    coexec_xstream_stats_t s0 = stats_of(0), s1 = stats_of(1);
    /* (A resume may reach it before its park commits: then it never
     * parked. A sleep parks for sure: only its own timer ends it.) */
    CH_ASSERT_OK(coexec_sleep_ns(1000000));
    CU_ASSERT(stats_of(0).parks >= 1);
    /* The resume was a wake made on stream 0, however it went. */
    CU_ASSERT(s0.wakes_local + s0.wakes_remote >= 1);
    CH_ASSERT_EQ(s0.steals + s1.steals, s0.stolen + s1.stolen);
    ch_finalize();
}

COEXEC_FJ_TASK_1(long, sfib, int, n)
{
    if (n < 2)
        return n;
    COEXEC_FJ_SPAWN(sfib, n - 1);
    long b = COEXEC_FJ_CALL(sfib, n - 2);
    return COEXEC_FJ_SYNC(sfib) + b;
}

/* Fork-join steals made equal steals suffered, over all streams. */
static void t_fj_balance(void)
{
    ch_init(4);
    CH_ASSERT_OK(coexec_stats_reset());
    long r = 0;
    for (int i = 0; i < 5; i++) {
        CH_ASSERT_OK(COEXEC_FJ_RUN(sfib, &r, 20));
        CH_ASSERT_EQ(r, 6765);
    }
    uint64_t made = 0, suffered = 0;
    for (int rank = 0; rank < 4; rank++) {
        coexec_xstream_stats_t s = stats_of(rank);
        made += s.fj_steals;
        suffered += s.fj_stolen;
    }
    CH_ASSERT_EQ(made, suffered);
    ch_finalize();
}

/* The table: a header, a row per stream starting with its rank, totals. */
static void t_print(void)
{
    ch_init(2);
    CH_ASSERT_OK(coexec_yield());
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    CU_ASSERT_FATAL(f != NULL);
    CH_ASSERT_OK(coexec_stats_print(f));
    fclose(f);
    CU_ASSERT(strstr(buf, "\nrank ") != NULL);
    CU_ASSERT(strstr(buf, "\n0 ") != NULL);
    CU_ASSERT(strstr(buf, "\n1 ") != NULL);
    CU_ASSERT(strstr(buf, "\nall ") != NULL);
    CU_ASSERT(strstr(buf, "\nservice: ") != NULL);
    /* No line wider than 100 characters. */
    for (char *l = buf, *e; *l; l = e + 1) {
        e = strchr(l, '\n');
        if (!e)
            break;
        CU_ASSERT(e - l <= 100);
    }
    free(buf);
    ch_finalize();
}

static void t_errors(void)
{
    coexec_xstream_stats_t st = {.size = sizeof st};
    coexec_xstream_t none = {NULL, 0};
    CH_ASSERT_RC(coexec_xstream_get_stats(none, &st), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_stats_reset(), COEXEC_ENOTINIT);
    CH_ASSERT_RC(coexec_stats_print(NULL), COEXEC_ENOTINIT);
    ch_init(1);
    CH_ASSERT_RC(coexec_xstream_get_stats(ch_xstream(0), NULL), COEXEC_EINVAL);
    st.size = 0;
    CH_ASSERT_RC(coexec_xstream_get_stats(ch_xstream(0), &st), COEXEC_EINVAL);
    st.size = sizeof st;
    CH_ASSERT_RC(coexec_xstream_get_stats(none, &st), COEXEC_EHANDLE);
    coexec_xstream_t xs;
    CH_ASSERT_OK(coexec_xstream_create(NULL, &xs));
    CH_ASSERT_OK(coexec_xstream_free(&xs));
    coexec_xstream_t stale = ch_xstream(0);
    stale.gen ^= 1;
    CH_ASSERT_RC(coexec_xstream_get_stats(stale, &st), COEXEC_EHANDLE);
    ch_finalize();
}

/* ---- coexec_info_print ------------------------------------------------------ */


static void wait_blocked(coexec_thread_t t)
{
    double t0 = ch_now();
    while (ch_thread_state(t) != COEXEC_UNIT_BLOCKED &&
           ch_now() - t0 < CH_WAIT_LIMIT_S)
        ch_relax();
    CH_ASSERT_EQ_FATAL(ch_thread_state(t), COEXEC_UNIT_BLOCKED);
}

static coexec_mutex_t dmx;
static coexec_eventual_t dev;

static void lock_ult(void *arg)
{
    (void)arg;
    CH_ASSERT_OK(coexec_mutex_lock(&dmx));
    CH_ASSERT_OK(coexec_mutex_unlock(&dmx));
}

static void eventual_ult(void *arg)
{
    (void)arg;
    CH_ASSERT_OK(coexec_eventual_wait(&dev, NULL));
}

static void join_ult(void *arg)
{
    CH_ASSERT_OK(coexec_thread_join(*(coexec_thread_t *)arg));
}

/* A ULT blocked on a mutex, one on an eventual, one joining it: the dump
 * names each, with the object's address and the joined unit's id. */
static void t_dump_blocked(void)
{
    ch_init(2);
    CH_ASSERT_OK(coexec_mutex_init(&dmx, COEXEC_MUTEX_PLAIN));
    CH_ASSERT_OK(coexec_eventual_init(&dev, 0));
    CH_ASSERT_OK(coexec_mutex_lock(&dmx));
    coexec_thread_t t[3];
    ch_spawn_on(1, lock_ult, NULL, &t[0]);
    ch_spawn_on(1, eventual_ult, NULL, &t[1]);
    wait_blocked(t[0]);
    wait_blocked(t[1]);
    ch_spawn_on(1, join_ult, &t[1], &t[2]);
    wait_blocked(t[2]);
    uint64_t id[3];
    for (int i = 0; i < 3; i++)
        CH_ASSERT_OK(coexec_thread_get_id(t[i], &id[i]));

    char *s = ch_info_dump(0);
    char want[128];
    snprintf(want, sizeof want, "unit %llu (ULT): blocked on mutex %p",
             (unsigned long long)id[0], (void *)&dmx);
    CU_ASSERT_PTR_NOT_NULL(strstr(s, want));
    snprintf(want, sizeof want, "unit %llu (ULT): blocked on eventual %p",
             (unsigned long long)id[1], (void *)&dev);
    CU_ASSERT_PTR_NOT_NULL(strstr(s, want));
    snprintf(want, sizeof want, "unit %llu (ULT): blocked on a join of unit %llu",
             (unsigned long long)id[2], (unsigned long long)id[1]);
    CU_ASSERT_PTR_NOT_NULL(strstr(s, want));
    CU_ASSERT_PTR_NOT_NULL(strstr(s, "stream 0: running, cpu"));
    CU_ASSERT_PTR_NOT_NULL(strstr(s, "stream 1: running"));
    CU_ASSERT_PTR_NOT_NULL(strstr(s, "main scheduler: basic_wait"));
    CU_ASSERT_PTR_NOT_NULL(strstr(s, "3 blocked"));
    if (!strstr(s, want))
        fputs(s, stderr);
    free(s);

    /* With call stacks: at least the frame the switch saved. */
    s = ch_info_dump(COEXEC_INFO_BLOCKED | COEXEC_INFO_BACKTRACE);
    CU_ASSERT(strstr(s, "      #0 ") ||
              strstr(s, "not shown with this context switch"));
    CU_ASSERT_PTR_NULL(strstr(s, "stream 0:"));
    free(s);
    /* Every live unit: the main ULT runs. */
    s = ch_info_dump(COEXEC_INFO_UNITS);
    CU_ASSERT_PTR_NOT_NULL(strstr(s, "(main ULT): running"));
    free(s);

    CH_ASSERT_OK(coexec_mutex_unlock(&dmx));
    CH_ASSERT_OK(coexec_eventual_set(&dev, NULL, 0));
    /* t[2] joins t[1]: free it first, then t[1] has no joiner. */
    coexec_thread_t order[3] = {t[0], t[2], t[1]};
    ch_free_threads(order, 3);
    CH_ASSERT_OK(coexec_mutex_destroy(&dmx));
    CH_ASSERT_OK(coexec_eventual_destroy(&dev));
    ch_finalize();
}

static void sleep_ult(void *arg)
{
    (void)arg;
    CH_ASSERT_RC(coexec_sleep_ns(3600ull * 1000000000ull), COEXEC_ECANCELED);
}

/* A sleeping ULT (detached: finalize ends its sleep and frees it):
 * "sleep" and the time left. */
static void t_dump_sleep(void)
{
    ch_init(1);
    CH_ASSERT_OK(coexec_thread_create(ch_main_pool(0), sleep_ult, NULL, NULL,
                                      NULL));
    char *s = NULL;
    double t0 = ch_now();
    do {
        free(s);
        CH_ASSERT_OK(coexec_yield());
        s = ch_info_dump(COEXEC_INFO_BLOCKED);
    } while (!strstr(s, "blocked on sleep, ") &&
             ch_now() - t0 < CH_WAIT_LIMIT_S);
    CU_ASSERT_PTR_NOT_NULL(strstr(s, "blocked on sleep, "));
    CU_ASSERT_PTR_NOT_NULL(strstr(s, " ms left"));
    free(s);
    ch_finalize();
}

/* What coexec_info_print_unit prints now, in a malloc'ed string. */
static char *dump_unit(coexec_unit_t u, unsigned flags)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    CU_ASSERT_FATAL(f != NULL);
    CH_ASSERT_OK(coexec_info_print_unit(f, u, flags));
    fclose(f);
    return buf;
}

static void yield_ult(void *arg)
{
    while (!atomic_load((atomic_int *)arg))
        CH_CHECK_RC(coexec_yield(), COEXEC_OK);
}

/* One unit: blocked on a mutex, with its stack and call stack; one not
 * started yet; the running caller (no call stack read); errors. */
static void t_dump_unit(void)
{
    ch_init(2);
    CH_ASSERT_OK(coexec_mutex_init(&dmx, COEXEC_MUTEX_PLAIN));
    CH_ASSERT_OK(coexec_mutex_lock(&dmx));
    atomic_int go;
    atomic_store(&go, 0);
    coexec_thread_t t[2];
    ch_spawn_on(1, lock_ult, NULL, &t[0]);
    ch_spawn_on(1, yield_ult, &go, &t[1]);
    wait_blocked(t[0]);
    uint64_t id;
    CH_ASSERT_OK(coexec_thread_get_id(t[0], &id));
    char want[128];
    snprintf(want, sizeof want, "unit %llu (ULT): blocked on mutex %p",
             (unsigned long long)id, (void *)&dmx);
    char *s = dump_unit(coexec_thread_unit(t[0]), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(s, want));
    CU_ASSERT_PTR_NULL(strstr(s, "stack "));
    free(s);
    s = dump_unit(coexec_thread_unit(t[0]), COEXEC_INFO_BACKTRACE);
    CU_ASSERT_PTR_NOT_NULL(strstr(s, want));
    CU_ASSERT_PTR_NOT_NULL(strstr(s, "    stack 0x"));
    CU_ASSERT(strstr(s, "      #0 ") ||
              strstr(s, "not shown with this context switch"));
    free(s);
    /* Not started: in a pool no stream serves. */
    coexec_pool_t idle;
    CH_ASSERT_OK(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &idle));
    coexec_thread_t n;
    CH_ASSERT_OK(coexec_thread_create(idle, yield_ult, &go, NULL, &n));
    s = dump_unit(coexec_thread_unit(n), COEXEC_INFO_BACKTRACE);
    CU_ASSERT_PTR_NOT_NULL(strstr(s, "(ULT): ready"));
    CU_ASSERT_PTR_NOT_NULL(strstr(s, "(not started yet)"));
    free(s);
    /* The running caller: no call stack is read. */
    coexec_thread_t self;
    CH_ASSERT_OK(coexec_thread_self(&self));
    s = dump_unit(coexec_thread_unit(self), COEXEC_INFO_BACKTRACE);
    CU_ASSERT_PTR_NOT_NULL(strstr(s, "(main ULT): running"));
    CU_ASSERT_PTR_NULL(strstr(s, "#0"));
    free(s);
    /* Errors. */
    coexec_unit_t none = {NULL, 0};
    CH_ASSERT_RC(coexec_info_print_unit(NULL, none, 0), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_info_print_unit(NULL, coexec_thread_unit(n), 0x1),
                 COEXEC_EINVAL);
    atomic_store(&go, 1);
    CH_ASSERT_OK(coexec_mutex_unlock(&dmx));
    CH_ASSERT_OK(coexec_thread_migrate_to_xstream(n, ch_xstream(1)));
    coexec_thread_t all[3] = {t[0], t[1], n};
    ch_free_threads(all, 3);
    CH_ASSERT_OK(coexec_pool_free(&idle));
    CH_ASSERT_OK(coexec_mutex_destroy(&dmx));
    ch_finalize();
}

static void t_dump_errors(void)
{
    CH_ASSERT_RC(coexec_info_print(NULL, 0), COEXEC_ENOTINIT);
    ch_init(1);
    CH_ASSERT_RC(coexec_info_print(NULL, 0x100), COEXEC_EINVAL);
    ch_finalize();
}

/* ---- the monitor thread ------------------------------------------------------ */

/* stderr goes to a file while the runtime runs; returns the file. */
static FILE *stderr_to_file(int *saved)
{
    FILE *f = tmpfile();
    CU_ASSERT_FATAL(f != NULL);
    fflush(stderr);
    *saved = dup(2);
    dup2(fileno(f), 2);
    return f;
}

static void stderr_back(int saved)
{
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
}

/* Whether file f holds `what` yet. */
static bool file_has(FILE *f, const char *what)
{
    char buf[8192];
    ssize_t n = pread(fileno(f), buf, sizeof buf - 1, 0);
    if (n <= 0)
        return false;
    buf[n] = 0;
    return strstr(buf, what) != NULL;
}

struct setter {
    FILE *f;
    const char *what;
    bool seen;
};

/* An external thread: once the file shows `what`, sets the eventual the
 * main ULT waits on (a hang guard ends the wait otherwise). */
static void *set_when_seen(void *arg)
{
    struct setter *st = arg;
    double t0 = ch_now();
    while (!(st->seen = file_has(st->f, st->what)) &&
           ch_now() - t0 < CH_WAIT_LIMIT_S)
        usleep(10000);
    if (coexec_eventual_set(&dev, NULL, 0) != COEXEC_OK)
        st->seen = false;
    return NULL;
}

static void monitor_case(const char *var, const char *val, const char *what,
                         bool raise_signal)
{
    int saved;
    FILE *f = stderr_to_file(&saved);
    setenv(var, val, 1);
    ch_init(2);
    unsetenv(var);
    CH_ASSERT_OK(coexec_eventual_init(&dev, 0));
    struct setter st = {f, what, false};
    pthread_t th;
    CH_ASSERT_EQ_FATAL(pthread_create(&th, NULL, set_when_seen, &st), 0);
    if (raise_signal)
        CH_ASSERT_EQ(kill(getpid(), SIGUSR2), 0);
    /* Blocked, and nothing else runs: a stall. */
    CH_ASSERT_OK(coexec_eventual_wait(&dev, NULL));
    pthread_join(th, NULL);
    CH_ASSERT_OK(coexec_eventual_destroy(&dev));
    ch_finalize();
    stderr_back(saved);
    CU_ASSERT(st.seen);
    CU_ASSERT(file_has(f, "units blocked:"));
    fclose(f);
}

static void t_hang_dump(void)
{
    monitor_case("COEXEC_HANG_DUMP", "1", "no unit started or resumed", false);
}

static void t_dump_signal(void)
{
    monitor_case("COEXEC_DUMP_SIGNAL", "SIGUSR2", "coexec: signal 12: dump",
                 true);
}

static const ch_test_t dump_tests[] = {
    {"blocked", t_dump_blocked},
    {"sleep", t_dump_sleep},
    {"unit", t_dump_unit},
    {"errors", t_dump_errors},
    {"hang", t_hang_dump},
    {"signal", t_dump_signal},
    {NULL, NULL}};

/* ---- tool callbacks ------------------------------------------------------------ */

static atomic_long tool_seen[COEXEC_TOOL_NUM_EVENTS];
static atomic_long tool_bad;

static void count_event(const coexec_tool_info_t *in, void *arg)
{
    if (arg != (void *)tool_seen || in->event >= COEXEC_TOOL_NUM_EVENTS)
        tool_bad++;
    else
        tool_seen[in->event]++;
    if (in->event == COEXEC_TOOL_UNIT_FINISH && in->unit_fn == (void *)empty_ult &&
        (in->unit_id == 0 || in->unit_is_tasklet))
        tool_bad++;
}

/* Built with -DCOEXEC_TOOLS=OFF: the tool calls say so, and the cases
 * that need them are skipped. */
static bool tools_built(void)
{
    if (coexec_tool_set_callback(count_event, COEXEC_TOOL_ALL, NULL) ==
        COEXEC_ENOSYS) {
        printf("(skipped: built without tool events) ");
        return false;
    }
    CH_ASSERT_OK(coexec_tool_set_callback(NULL, 0, NULL));
    return true;
}

static void t_tool_events(void)
{
    if (!tools_built())
        return;
    ch_init(1);
    for (int i = 0; i < COEXEC_TOOL_NUM_EVENTS; i++)
        tool_seen[i] = 0;
    CH_ASSERT_RC(coexec_tool_set_callback(count_event, 1u << 30, NULL),
                 COEXEC_EINVAL);
    CH_ASSERT_OK(coexec_tool_set_callback(count_event, COEXEC_TOOL_ALL,
                                          (void *)tool_seen));
    coexec_thread_t t[10];
    for (int i = 0; i < 10; i++)
        CH_ASSERT_OK(coexec_thread_create(ch_main_pool(0), empty_ult, NULL,
                                          NULL, &t[i]));
    ch_free_threads(t, 10);
    coexec_tasklet_t k;
    CH_ASSERT_OK(coexec_tasklet_create(ch_main_pool(0), ready, NULL, &k));
    CH_ASSERT_OK(coexec_tasklet_free(&k));
    CH_ASSERT_OK(coexec_tool_set_callback(NULL, 0, NULL));
    CH_ASSERT_EQ(tool_bad, 0);
    CH_ASSERT_EQ(tool_seen[COEXEC_TOOL_UNIT_CREATE], 11);
    CH_ASSERT_EQ(tool_seen[COEXEC_TOOL_UNIT_FINISH], 11);
    /* Each ULT run in place: it runs, and its joiner blocked for it. */
    CU_ASSERT(tool_seen[COEXEC_TOOL_UNIT_RUN] >= 11);
    CU_ASSERT(tool_seen[COEXEC_TOOL_UNIT_BLOCK] >= 10);
    /* Removed: nothing more is counted. */
    long before = tool_seen[COEXEC_TOOL_UNIT_CREATE];
    CH_ASSERT_OK(coexec_thread_create(ch_main_pool(0), empty_ult, NULL, NULL,
                                      &t[0]));
    ch_free_threads(t, 1);
    CH_ASSERT_EQ(tool_seen[COEXEC_TOOL_UNIT_CREATE], before);
    ch_finalize();
}

/* Each unit's events follow its life (coexec/tool.h): a checker keyed by
 * the unit's descriptor, for the units whose CREATE it saw and the main
 * ULT (running from the start). */
enum life { L_NONE, L_READY, L_RUNNING, L_BLOCKED, L_FINISHED };
#define LIFE_SLOTS 4096
static struct {
    pthread_mutex_t lock;
    const void *unit[LIFE_SLOTS];
    unsigned char state[LIFE_SLOTS];
    unsigned char ran[LIFE_SLOTS]; /* a RUN was told since its CREATE */
    int rank[LIFE_SLOTS]; /* the stream of its last RUN */
    long bad, resumes, blocks, marked;
} life = {.lock = PTHREAD_MUTEX_INITIALIZER};
static int life_marker;

static void life_event(const coexec_tool_info_t *in, void *arg)
{
    (void)arg;
    if (!in->unit)
        return;
    pthread_mutex_lock(&life.lock);
    size_t h = ((uintptr_t)in->unit >> 6) % LIFE_SLOTS;
    while (life.unit[h] && life.unit[h] != in->unit)
        h = (h + 1) % LIFE_SLOTS;
    unsigned char *st = &life.state[h];
    if (!life.unit[h]) {
        life.unit[h] = in->unit;
        *st = in->unit_is_main ? L_RUNNING : L_NONE;
        life.ran[h] = (unsigned char)in->unit_is_main;
    }
    /* unit_first_run: set on the RUN that starts the unit, only there. */
    if (in->unit_first_run &&
        (in->event != COEXEC_TOOL_UNIT_RUN || life.ran[h]))
        life.bad++;
    bool known = *st != L_NONE || in->event == COEXEC_TOOL_UNIT_CREATE;
    unsigned char want = L_NONE, next = *st;
    switch (in->event) {
    case COEXEC_TOOL_UNIT_CREATE:
        if (*st != L_NONE && *st != L_FINISHED)
            life.bad++;
        next = L_READY;
        life.marked += in->unit_arg == &life_marker;
        life.ran[h] = 0;
        break;
    case COEXEC_TOOL_UNIT_RUN:
        want = L_READY, next = L_RUNNING;
        life.rank[h] = in->rank;
        if (known && !in->unit_first_run && !life.ran[h])
            life.bad++; /* its first run, not told as one */
        life.ran[h] = 1;
        break;
    case COEXEC_TOOL_UNIT_YIELD:
        want = L_RUNNING, next = L_READY;
        break;
    case COEXEC_TOOL_UNIT_BLOCK:
        want = L_RUNNING, next = L_BLOCKED;
        life.blocks++;
        break;
    case COEXEC_TOOL_UNIT_RESUME:
        want = L_BLOCKED, next = L_READY;
        life.resumes++;
        break;
    case COEXEC_TOOL_UNIT_FINISH:
        want = L_RUNNING, next = L_FINISHED;
        break;
    default:
        break;
    }
    if (known && want != L_NONE) {
        if (*st != want)
            life.bad++;
        else if (in->event != COEXEC_TOOL_UNIT_RUN &&
                 in->event != COEXEC_TOOL_UNIT_RESUME &&
                 in->rank != life.rank[h] && !in->unit_is_main)
            life.bad++; /* a stop told on another stream than its run */
    }
    if (known)
        *st = next;
    pthread_mutex_unlock(&life.lock);
}

static void life_waiter(void *arg)
{
    CH_CHECK_RC(coexec_eventual_wait(arg, NULL), COEXEC_OK);
}

static void life_yielder(void *arg)
{
    (void)arg;
    for (int i = 0; i < 3; i++)
        CH_CHECK_RC(coexec_yield(), COEXEC_OK);
}

/* A tasklet that wakes itself and returns PENDING on its first poll. */
static coexec_poll_status_t life_pending(coexec_poll_t *cx, void *arg)
{
    int *polls = arg;
    if ((*polls)++ > 0)
        return COEXEC_READY;
    coexec_waker_t w;
    CH_CHECK_RC(coexec_poll_waker(cx, &w), COEXEC_OK);
    CH_CHECK_RC(coexec_waker_wake(w), COEXEC_OK);
    return COEXEC_PENDING;
}

/* Joins run in place, waits woken from another stream, yields, a tasklet
 * polled twice, on two streams: every unit's events follow its life
 * (only the run that starts a unit is told as its first), a wait that
 * ended by its joiner coming back is told resumed, and the event names
 * its unit's argument. */
static void t_tool_lifecycle(void)
{
    if (!tools_built())
        return;
    ch_init(2);
    life.bad = life.resumes = life.blocks = life.marked = 0;
    memset(life.unit, 0, sizeof life.unit);
    CH_ASSERT_OK(coexec_tool_set_callback(life_event, COEXEC_TOOL_ALL, NULL));
    for (int round = 0; round < 20; round++) {
        coexec_thread_t t[8];
        for (int i = 0; i < 4; i++)
            CH_ASSERT_OK(coexec_thread_create(ch_main_pool(i % 2), life_yielder,
                                              &life_marker, NULL, &t[i]));
        coexec_eventual_t ev;
        CH_ASSERT_OK(coexec_eventual_init(&ev, 0));
        for (int i = 4; i < 8; i++)
            CH_ASSERT_OK(coexec_thread_create(ch_main_pool(i % 2), life_waiter,
                                              &ev, NULL, &t[i]));
        int polls = 0;
        coexec_tasklet_t k;
        CH_ASSERT_OK(coexec_tasklet_create(ch_main_pool(round % 2),
                                           life_pending, &polls, &k));
        CH_ASSERT_OK(coexec_yield());
        CH_ASSERT_OK(coexec_eventual_set(&ev, NULL, 0));
        ch_free_threads(t, 8);
        CH_ASSERT_OK(coexec_tasklet_free(&k));
        CH_ASSERT_EQ(polls, 2);
        CH_ASSERT_OK(coexec_eventual_destroy(&ev));
    }
    CH_ASSERT_OK(coexec_tool_set_callback(NULL, 0, NULL));
    CH_ASSERT_EQ(life.bad, 0);
    CH_ASSERT_EQ(life.marked, 20 * 4);
    CU_ASSERT(life.blocks > 0);
    CU_ASSERT(life.resumes > 0);
    ch_finalize();
}

/* ---- the trace ------------------------------------------------------------------ */

static void yielder(void *arg)
{
    (void)arg;
    for (int i = 0; i < 3; i++)
        CH_ASSERT_OK(coexec_yield());
}

/* Occurrences of s in buf. */
static int count_of(const char *buf, const char *s)
{
    int n = 0;
    for (const char *p = buf; (p = strstr(p, s)); p++)
        n++;
    return n;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    CU_ASSERT_FATAL(buf && fread(buf, 1, (size_t)n, f) == (size_t)n);
    buf[n] = 0;
    fclose(f);
    return buf;
}

/* A 2-stream run: valid JSON, spans on both streams' tracks, the unit's
 * name, an offload span on a service thread's track. */
static void t_trace_file(void)
{
    if (!tools_built())
        return;
    char path[64];
    snprintf(path, sizeof path, "/tmp/coexec-trace-%d.json", (int)getpid());
    ch_init(2);
    CH_ASSERT_RC(coexec_trace_flush(), COEXEC_ESTATE);
    CH_ASSERT_RC(coexec_trace_start(NULL), COEXEC_EINVAL);
    CH_ASSERT_OK(coexec_trace_start(path));
    CH_ASSERT_RC(coexec_trace_start(path), COEXEC_EBUSY);
    coexec_thread_attr_t attr;
    CH_ASSERT_OK(coexec_thread_attr_init(&attr));
    attr.name = "named-unit";
    coexec_thread_t t[2];
    for (int r = 0; r < 2; r++) {
        coexec_pool_t p = ch_main_pool(r);
        CH_ASSERT_OK(coexec_thread_create(p, yielder, NULL, &attr, &t[r]));
    }
    /* Let each run on its own stream, not in place. */
    for (int r = 0; r < 2; r++) {
        double t0 = ch_now();
        while (ch_thread_state(t[r]) != COEXEC_UNIT_TERMINATED &&
               ch_now() - t0 < CH_WAIT_LIMIT_S)
            ch_relax();
    }
    ch_free_threads(t, 2);
    intptr_t ret;
    CH_ASSERT_OK(coexec_offload(offloaded, NULL, &ret));
    CH_ASSERT_OK(coexec_trace_flush());
    ch_finalize();

    char *buf = slurp(path);
    CU_ASSERT(strncmp(buf, "{\"displayTimeUnit\"", 18) == 0);
    CU_ASSERT(count_of(buf, "\"name\":\"named-unit\"") >= 2);
    CU_ASSERT(count_of(buf, "\"ph\":\"B\",\"pid\":1,\"tid\":0,") >= 1);
    CU_ASSERT(count_of(buf, "\"ph\":\"B\",\"pid\":1,\"tid\":1,") >= 1);
    CU_ASSERT(count_of(buf, "\"name\":\"offload ") >= 1);
    CU_ASSERT(count_of(buf, "\"args\":{\"name\":\"stream 1\"}") == 1);
    CU_ASSERT(count_of(buf, "\"dropped\":0") == 1);
    free(buf);
    /* Strict JSON, where python3 is there to say so. */
    if (system("command -v python3 >/dev/null 2>&1") == 0) {
        char cmd[160];
        snprintf(cmd, sizeof cmd, "python3 -m json.tool %s >/dev/null", path);
        CH_ASSERT_EQ(system(cmd), 0);
    }
    unlink(path);
}

/* Buffers that overflow: the drops are counted in the file. */
static void t_trace_dropped(void)
{
    if (!tools_built())
        return;
    char path[64];
    snprintf(path, sizeof path, "/tmp/coexec-trace-d%d.json", (int)getpid());
    setenv("COEXEC_TRACE", path, 1);
    setenv("COEXEC_TRACE_EVENTS", "1024", 1);
    ch_init(1);
    unsetenv("COEXEC_TRACE");
    unsetenv("COEXEC_TRACE_EVENTS");
    for (int i = 0; i < 2000; i++)
        CH_ASSERT_OK(coexec_yield());
    coexec_thread_t t[600];
    for (int i = 0; i < 600; i++)
        CH_ASSERT_OK(coexec_thread_create(ch_main_pool(0), empty_ult, NULL,
                                          NULL, &t[i]));
    ch_free_threads(t, 600);
    ch_finalize(); /* writes the file */
    char *buf = slurp(path);
    CU_ASSERT(count_of(buf, "\"events\":1024,") == 1);
    CU_ASSERT(count_of(buf, "\"dropped\":0") == 0);
    free(buf);
    unlink(path);
}

static const ch_test_t tool_tests[] = {
    {"events", t_tool_events},
    {"lifecycle", t_tool_lifecycle},
    {"trace_file", t_trace_file},
    {"trace_dropped", t_trace_dropped},
    {NULL, NULL}};

static const ch_test_t count_tests[] = {
    {"counts", t_counts},
    {"versioned", t_versioned},
    {"parks_wakes", t_parks_wakes},
    {"fj_balance", t_fj_balance},
    {"print", t_print},
    {"errors", t_errors},
    {NULL, NULL}};

static const ch_suite_t suites[] = {
    {"counters", count_tests}, {"dump", dump_tests}, {"tool", tool_tests},
    {NULL, NULL}};

int main(int argc, char **argv) { return ch_main(argc, argv, suites); }
