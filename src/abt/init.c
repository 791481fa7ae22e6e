/*
 * src/abt/init.c: ABT_init/ABT_finalize (reference counted), the running
 * unit's thread-local pointer, error codes and strings, timers and the
 * info queries.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "abt_internal.h"

struct abtx_global abtx_g;
pthread_mutex_t abtx_lock = PTHREAD_MUTEX_INITIALIZER;

/* initial-exec: a plain %fs-relative access, no __tls_get_addr call. */
_Thread_local ABT_thread abtx_cur_tls
    __attribute__((tls_model("initial-exec")));

/* Not inlined: a ULT that switched may run on another OS thread, and the
 * compiler must compute the thread-local address afresh at each call. */
__attribute__((noinline)) ABT_thread abtx_cur_get(void)
{
    ABT_thread t = abtx_cur_tls;
    __asm__ volatile("" ::: "memory");
    return t;
}

__attribute__((noinline)) void abtx_cur_set(ABT_thread t)
{
    __asm__ volatile("" ::: "memory");
    abtx_cur_tls = t;
}

/* A stream's rank never changes while its OS thread lives. It is
 * remembered with the ABT_init that it was asked under (abtx_g.epoch):
 * after a finalize, the thread that was a stream may be an external thread
 * of the next runtime, or another stream of it. An epoch of 0: not asked. */
_Thread_local struct abtx_crank_cache abtx_crank_tls
    __attribute__((tls_model("initial-exec")));

/* Out of line, for a caller that may have switched OS threads;
 * abtx_self_crank_here() is its inline check, and calls it when the
 * remembered rank is not of this epoch (or none was asked yet). */
__attribute__((noinline)) int abtx_self_crank(void)
{
    unsigned e = abtx_g.epoch;
    if (abtx_crank_tls.epoch == e)
        return abtx_crank_tls.crank;
    int r;
    if (coexec_xstream_self_rank(&r) != COEXEC_OK)
        return -1; /* not a stream (yet): not remembered */
    abtx_crank_tls.crank = r;
    abtx_crank_tls.epoch = e;
    return r;
}

/* The coexec function of every tasklet of the layer (its argument is the
 * record). A tasklet never switches: its function runs with this OS
 * thread's current unit set to t, and the thread-locals are read once
 * each, here. Its coexec unit is detached (coexec_tasklet_create_watched):
 * the end of one with a handle is told here, in the record (the stream
 * it ended on, its FINISH to a tool, then joined), which a join waits
 * for; t may be freed as soon as joined is set. A detached one's record
 * goes now. */
coexec_poll_status_t abtx_task_main(coexec_poll_t *cx, void *a)
{
    (void)cx;
    ABT_thread t = a;
    ABT_thread prev = abtx_cur_tls;
    abtx_cur_tls = t;
    if (__builtin_expect(!abtx_cancelled(t), 1))
        t->fn(t->arg);
    abtx_cur_tls = prev;
    if (__builtin_expect(t->detached, 0)) {
        abtx_detached_end(t);
        return COEXEC_READY;
    }
    t->last_crank = (int16_t)abtx_self_crank_here();
    if (__builtin_expect(atomic_load_explicit(&abtx_tool_on,
                                              memory_order_relaxed), 0))
        abtx_tool_task_end(t);
    atomic_store_explicit(&t->joined, 1, memory_order_release);
    return COEXEC_READY;
}

int abtx_err(int rc, int inv, int other)
{
    switch (rc) {
    case COEXEC_OK:
        return ABT_SUCCESS;
    case COEXEC_ENOMEM:
        return ABT_ERR_MEM;
    case COEXEC_ENOTINIT:
        return ABT_ERR_UNINITIALIZED;
    case COEXEC_EHANDLE:
        return inv;
    case COEXEC_EINVAL:
        return ABT_ERR_INV_ARG;
    case COEXEC_ENOSYS:
        return ABT_ERR_FEATURE_NA;
    case COEXEC_EAGAIN:
        return ABT_ERR_SYS;
    default:
        return other;
    }
}

/* A boolean environment variable: 1/y/yes/true/on, 0/n/no/false/off. */
static int env_bool(const char *name, int dflt)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return dflt;
    if (!strcasecmp(v, "1") || !strcasecmp(v, "y") || !strcasecmp(v, "yes") ||
        !strcasecmp(v, "true") || !strcasecmp(v, "on"))
        return 1;
    return 0;
}

/* A size in bytes, with an optional K/M/G suffix; 0 when absent or bad. */
static size_t env_size(const char *name)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return 0;
    char *end;
    unsigned long long n = strtoull(v, &end, 10);
    if (*end == 'k' || *end == 'K')
        n <<= 10;
    else if (*end == 'm' || *end == 'M')
        n <<= 20;
    else if (*end == 'g' || *end == 'G')
        n <<= 30;
    else if (*end)
        return 0;
    return (size_t)n;
}

/* Adopts what coexec_init set up on the primary: its stream, scheduler and
 * pool get records, and the main ULT its own. */
static int adopt_primary(void)
{
    coexec_xstream_t cx;
    coexec_sched_t cs;
    coexec_pool_t cp;
    int rc = coexec_xstream_self(&cx);
    if (!rc)
        rc = coexec_xstream_get_main_sched(cx, &cs);
    if (!rc)
        rc = coexec_xstream_get_main_pool(cx, &cp);
    if (rc)
        return abtx_err(rc, ABT_ERR_INV_XSTREAM, ABT_ERR_OTHER);
    ABT_pool pool = abtx_pool_wrap(cp, ABT_POOL_FIFO, ABT_POOL_ACCESS_MPMC,
                                   false, true);
    ABT_sched sched =
        pool ? abtx_sched_wrap(cs, ABT_SCHED_DEFAULT, 1, &pool, false, true)
             : NULL;
    ABT_xstream xs = calloc(1, sizeof(*xs));
    if (!sched || !xs) {
        free(xs);
        return ABT_ERR_MEM;
    }
    sched->used = true;
    xs->magic = ABTX_XSTREAM;
    xs->primary = true;
    xs->cx = cx;
    xs->sched = sched;
    ABTX_IGNORE(coexec_xstream_get_rank(cx, &xs->crank));
    xs->rank = 0;
    pthread_mutex_lock(&abtx_lock);
    xs->next = abtx_g.xstreams;
    abtx_g.xstreams = xs;
    abtx_g.by_crank[xs->crank] = xs;
    abtx_g.by_rank[0] = xs;
    abtx_g.primary = xs;
    abtx_g.primary_sched = sched;
    pthread_mutex_unlock(&abtx_lock);

    struct ABT_thread_opaque *m = &abtx_g.main_ult;
    memset(m, 0, sizeof(*m));
    m->magic = ABTX_THREAD;
    m->is_ult = 1;
    m->is_main = 1;
    m->pool = pool;
    coexec_thread_t self;
    if (coexec_thread_self(&self) == COEXEC_OK) {
        m->u = coexec_thread_unit(self);
        ABTX_IGNORE(coexec_thread_get_id(self, &m->id));
    }
    abtx_cur_set(m);
    return ABT_SUCCESS;
}

/* Serialises ABT_init and ABT_finalize, each whole, as Argobots does: a
 * nested init or finalize changes the count, the first and the last start
 * and stop the runtime, and concurrent callers (external threads, ULTs of
 * other streams) see one or the other done. */
static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;

static void refcount_set(int n)
{
    atomic_store_explicit(&abtx_g.refcount, n, memory_order_release);
}

static int init_locked(void)
{
    int n = atomic_load_explicit(&abtx_g.refcount, memory_order_relaxed);
    if (n > 0) {
        refcount_set(n + 1);
        return ABT_SUCCESS;
    }
    coexec_config_t cfg;
    if (coexec_config_init(&cfg))
        return ABT_ERR_OTHER;
    /* Argobots starts the primary stream only; the program makes the
     * others. Streams are pinned only when ABT_SET_AFFINITY asks. */
    cfg.num_xstreams = 1;
    cfg.affinity = env_bool("ABT_SET_AFFINITY", 0);
    /* ABT_STACK_OVERFLOW_CHECK=mprotect or mprotect_strict: guard pages
     * the program watches itself, as Argobots' are: faults in them go to
     * its SIGSEGV handler, and it may open them with mprotect (see
     * abtx_thread_stack and the user stacks in thread.c). */
    const char *soc = getenv("ABT_STACK_OVERFLOW_CHECK");
    abtx_g.stack_check = !soc                              ? 0
                         : !strcmp(soc, "mprotect")        ? 2
                         : !strcmp(soc, "mprotect_strict") ? 3
                                                           : 0;
    cfg.guard_app = abtx_g.stack_check != 0;
    /* Argobots' streams are pthreads with their creator's signal mask: a
     * ULT's raise() reaches its handler there. */
    cfg.stream_signals = 1;
    size_t ss = env_size("ABT_THREAD_STACKSIZE");
    if (!ss)
        ss = env_size("ABT_ENV_THREAD_STACKSIZE");
    if (ss)
        cfg.stack_size = ss < 16384 ? 16384 : ss;
    /* ABT_MAX_NUM_XSTREAMS (ABT_NUM_XSTREAMS in older releases) is what
     * the info query reports; streams are created by the program. */
    const char *mx = getenv("ABT_MAX_NUM_XSTREAMS");
    if (!mx)
        mx = getenv("ABT_NUM_XSTREAMS");
    int max_xs = mx ? atoi(mx) : 0;
    abtx_g.max_xstreams = max_xs > 0 && max_xs <= ABTX_MAX_XSTREAMS
                              ? max_xs
                              : ABTX_MAX_XSTREAMS;
    int rc = coexec_init(&cfg);
    if (rc == COEXEC_EINIT) {
        /* The program started libcoexec itself: share its runtime. */
        rc = COEXEC_OK;
    }
    if (rc)
        return abtx_err(rc, ABT_ERR_OTHER, ABT_ERR_OTHER);
    coexec_config_t in_force;
    if (coexec_get_config(&in_force) != COEXEC_OK)
        in_force = cfg;
    abtx_g.stacksize = in_force.stack_size;
    /* A program that started libcoexec itself chose its guards. */
    if (!in_force.guard_app)
        abtx_g.stack_check = 0;
    abtx_g.epoch++;
    refcount_set(1);
    rc = adopt_primary();
    if (!rc)
        rc = abtx_dump_start();
    if (rc) {
        refcount_set(0);
        ABTX_IGNORE(coexec_finalize());
    }
    return rc;
}

int ABT_init(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    pthread_mutex_lock(&init_lock);
    int rc = init_locked();
    pthread_mutex_unlock(&init_lock);
    return rc;
}

/* Yields until the pools of the primary's main scheduler are empty. */
static void drain_primary(ABT_thread self)
{
    ABT_xstream x = abtx_g.primary;
    for (;;) {
        ABT_sched s = abtx_xstream(x) ? x->sched : NULL;
        size_t queued = 0;
        if (abtx_sched(s))
            ABTX_IGNORE(ABT_sched_get_size(s, &queued));
        if (queued == 0)
            return;
        ABTX_IGNORE(coexec_yield());
        abtx_cur_set(self);
    }
}

static int finalize_locked(void)
{
    int n = atomic_load_explicit(&abtx_g.refcount, memory_order_relaxed);
    if (n == 0)
        return ABT_ERR_UNINITIALIZED;
    if (n > 1) {
        refcount_set(n - 1);
        return ABT_SUCCESS;
    }
    ABT_thread self = abtx_cur_get();
    if (self != &abtx_g.main_ult)
        return ABT_ERR_INV_XSTREAM;
    /* As in Argobots, what is still queued in the primary's pools runs
     * before the runtime stops; units that run meanwhile (and during
     * coexec_finalize) still see an initialised runtime. */
    drain_primary(self);
    abtx_dump_stop();
    abtx_xstream_restore_primary();
    abtx_keys_release(self);
    abtx_unit_release(self); /* a user-defined pool's unit for main */
    abtx_tool_release(); /* coexec's finalize frees what it replaced */
    int rc = coexec_finalize();
    refcount_set(0);
    abtx_cur_set(NULL);
    abtx_thread_cache_drain();
    abtx_registry_free();
    abtx_g.main_ult.magic = ABTX_FREED;
    return abtx_err(rc, ABT_ERR_OTHER, ABT_ERR_OTHER);
}

/* The last one runs on the main ULT, which stays on the primary's OS
 * thread: the lock is released by the thread that took it. */
int ABT_finalize(void)
{
    pthread_mutex_lock(&init_lock);
    int rc = finalize_locked();
    pthread_mutex_unlock(&init_lock);
    return rc;
}

int ABT_initialized(void)
{
    return abtx_initialized() ? ABT_SUCCESS : ABT_ERR_UNINITIALIZED;
}

/* ---- error strings -------------------------------------------------- */

static const char *const err_names[] = {
    "ABT_SUCCESS", "ABT_ERR_UNINITIALIZED", "ABT_ERR_MEM", "ABT_ERR_OTHER",
    "ABT_ERR_INV_XSTREAM", "ABT_ERR_INV_XSTREAM_RANK",
    "ABT_ERR_INV_XSTREAM_BARRIER", "ABT_ERR_INV_SCHED",
    "ABT_ERR_INV_SCHED_KIND", "ABT_ERR_INV_SCHED_PREDEF",
    "ABT_ERR_INV_SCHED_TYPE", "ABT_ERR_INV_SCHED_CONFIG", "ABT_ERR_INV_POOL",
    "ABT_ERR_INV_POOL_KIND", "ABT_ERR_INV_POOL_ACCESS", "ABT_ERR_INV_UNIT",
    "ABT_ERR_INV_THREAD", "ABT_ERR_INV_THREAD_ATTR", "ABT_ERR_INV_TASK",
    "ABT_ERR_INV_KEY", "ABT_ERR_INV_MUTEX", "ABT_ERR_INV_MUTEX_ATTR",
    "ABT_ERR_INV_COND", "ABT_ERR_INV_RWLOCK", "ABT_ERR_INV_EVENTUAL",
    "ABT_ERR_INV_FUTURE", "ABT_ERR_INV_BARRIER", "ABT_ERR_INV_TIMER",
    "ABT_ERR_INV_QUERY_KIND", "ABT_ERR_XSTREAM", "ABT_ERR_XSTREAM_STATE",
    "ABT_ERR_XSTREAM_BARRIER", "ABT_ERR_SCHED", "ABT_ERR_SCHED_CONFIG",
    "ABT_ERR_POOL", "ABT_ERR_UNIT", "ABT_ERR_THREAD", "ABT_ERR_TASK",
    "ABT_ERR_KEY", "ABT_ERR_MUTEX", "ABT_ERR_MUTEX_LOCKED", "ABT_ERR_COND",
    "ABT_ERR_COND_TIMEDOUT", "ABT_ERR_RWLOCK", "ABT_ERR_EVENTUAL",
    "ABT_ERR_FUTURE", "ABT_ERR_BARRIER", "ABT_ERR_TIMER",
    "ABT_ERR_MIGRATION_TARGET", "ABT_ERR_MIGRATION_NA",
    "ABT_ERR_MISSING_JOIN", "ABT_ERR_FEATURE_NA", "ABT_ERR_INV_TOOL_CONTEXT",
    "ABT_ERR_INV_ARG", "ABT_ERR_SYS", "ABT_ERR_CPUID",
    "ABT_ERR_INV_POOL_CONFIG", "ABT_ERR_INV_POOL_USER_DEF"};

int ABT_error_get_str(int err, char *str, size_t *len)
{
    if (err < 0 || (size_t)err >= sizeof(err_names) / sizeof(err_names[0]))
        return ABT_ERR_OTHER;
    const char *s = err_names[err];
    if (str)
        strcpy(str, s);
    if (len)
        *len = strlen(s);
    return ABT_SUCCESS;
}

/* ---- time and timers ------------------------------------------------ */

double ABT_get_wtime(void)
{
    return (double)coexec_now_ns() * 1e-9;
}

struct ABT_timer_opaque {
    uint64_t start, stop;
};

int ABT_timer_create(ABT_timer *newtimer)
{
    if (!newtimer)
        return ABT_ERR_INV_ARG;
    *newtimer = abtx_live_new(calloc(1, sizeof(struct ABT_timer_opaque)),
                              ABTX_L_TIMER);
    return *newtimer ? ABT_SUCCESS : ABT_ERR_MEM;
}

int ABT_timer_dup(ABT_timer timer, ABT_timer *newtimer)
{
    if (!newtimer)
        return ABT_ERR_INV_ARG;
    if (!timer)
        return ABT_ERR_INV_TIMER;
    int rc = ABT_timer_create(newtimer);
    if (!rc)
        **newtimer = *timer;
    return rc;
}

int ABT_timer_free(ABT_timer *timer)
{
    return abtx_live_free(timer, ABTX_L_TIMER) ? ABT_SUCCESS
                                               : ABT_ERR_INV_TIMER;
}

int ABT_timer_start(ABT_timer timer)
{
    if (!timer)
        return ABT_ERR_INV_TIMER;
    timer->start = coexec_now_ns();
    return ABT_SUCCESS;
}

int ABT_timer_stop(ABT_timer timer)
{
    if (!timer)
        return ABT_ERR_INV_TIMER;
    timer->stop = coexec_now_ns();
    return ABT_SUCCESS;
}

int ABT_timer_read(ABT_timer timer, double *secs)
{
    if (!timer)
        return ABT_ERR_INV_TIMER;
    if (!secs)
        return ABT_ERR_INV_ARG;
    *secs = timer->stop > timer->start
                ? (double)(timer->stop - timer->start) * 1e-9
                : 0.0;
    return ABT_SUCCESS;
}

int ABT_timer_stop_and_read(ABT_timer timer, double *secs)
{
    int rc = ABT_timer_stop(timer);
    return rc ? rc : ABT_timer_read(timer, secs);
}

int ABT_timer_stop_and_add(ABT_timer timer, double *secs)
{
    double t = 0.0;
    int rc = ABT_timer_stop_and_read(timer, &t);
    if (!rc)
        *secs += t;
    return rc;
}

int ABT_timer_get_overhead(double *overhead)
{
    if (!overhead)
        return ABT_ERR_INV_ARG;
    uint64_t a = coexec_now_ns();
    for (int i = 0; i < 99; i++)
        ABTX_IGNORE(coexec_now_ns());
    *overhead = (double)(coexec_now_ns() - a) * 1e-11;
    return ABT_SUCCESS;
}

/* ---- info ----------------------------------------------------------- */

int ABT_info_query_config(ABT_info_query_kind query_kind, void *val)
{
    ABTX_CHECK_INIT(); /* Argobots 1.x: the runtime must be initialised */
    if (!val)
        return ABT_ERR_INV_ARG;
    coexec_config_t cfg;
    if (coexec_get_config(&cfg) != COEXEC_OK)
        ABTX_IGNORE(coexec_config_init(&cfg));
    switch (query_kind) {
    case ABT_INFO_QUERY_KIND_ENABLED_DEBUG:
    case ABT_INFO_QUERY_KIND_ENABLED_PRINT_ERRNO:
    case ABT_INFO_QUERY_KIND_ENABLED_LOG:
    case ABT_INFO_QUERY_KIND_ENABLED_VALGRIND:
    case ABT_INFO_QUERY_KIND_ENABLED_CHECK_POOL_PRODUCER:
    case ABT_INFO_QUERY_KIND_ENABLED_CHECK_POOL_CONSUMER:
    case ABT_INFO_QUERY_KIND_ENABLED_PRINT_CONFIG:
    case ABT_INFO_QUERY_KIND_DYNAMIC_PROMOTION:
    case ABT_INFO_QUERY_KIND_ENABLED_STACK_UNWIND:
        *(ABT_bool *)val = ABT_FALSE;
        return ABT_SUCCESS;
    case ABT_INFO_QUERY_KIND_ENABLED_CHECK_ERROR:
    case ABT_INFO_QUERY_KIND_ENABLED_THREAD_CANCEL:
    case ABT_INFO_QUERY_KIND_ENABLED_TASK_CANCEL:
    case ABT_INFO_QUERY_KIND_ENABLED_PRESERVE_FPU:
    case ABT_INFO_QUERY_KIND_ENABLED_MIGRATION:
    case ABT_INFO_QUERY_KIND_ENABLED_STACKABLE_SCHED:
    case ABT_INFO_QUERY_KIND_ENABLED_EXTERNAL_THREAD:
    case ABT_INFO_QUERY_KIND_ENABLED_SCHED_SLEEP:
    case ABT_INFO_QUERY_KIND_FCONTEXT:
    case ABT_INFO_QUERY_KIND_ENABLED_LAZY_STACK_ALLOC:
        *(ABT_bool *)val = ABT_TRUE;
        return ABT_SUCCESS;
    case ABT_INFO_QUERY_KIND_ENABLED_TOOL:
#ifdef COEXEC_NO_TOOLS
        *(ABT_bool *)val = ABT_FALSE;
#else
        *(ABT_bool *)val = ABT_TRUE;
#endif
        return ABT_SUCCESS;
    case ABT_INFO_QUERY_KIND_ENABLED_AFFINITY:
        /* The affinity calls work (ABT_xstream_set_cpubind and the
         * others), unless ABT_SET_AFFINITY turns the feature off; streams
         * are pinned when they start only if it is on. */
        *(ABT_bool *)val = cfg.affinity || !getenv("ABT_SET_AFFINITY") ||
                                   env_bool("ABT_SET_AFFINITY", 1)
                               ? ABT_TRUE
                               : ABT_FALSE;
        return ABT_SUCCESS;
    case ABT_INFO_QUERY_KIND_ENABLED_STACK_OVERFLOW_CHECK:
        /* Guard regions (cfg.guard_size) below every runtime-owned stack,
         * PROT_NONE, and a stack whose guard cannot be made is never
         * handed out: Argobots' "mprotect_strict" (3), unless
         * ABT_STACK_OVERFLOW_CHECK=mprotect asked for "mprotect" (2). */
        *(int *)val = !cfg.guard_size ? 0 : abtx_g.stack_check == 2 ? 2 : 3;
        return ABT_SUCCESS;
    case ABT_INFO_QUERY_KIND_MAX_NUM_XSTREAMS:
        *(int *)val = abtx_g.max_xstreams ? abtx_g.max_xstreams
                                          : ABTX_MAX_XSTREAMS;
        return ABT_SUCCESS;
    case ABT_INFO_QUERY_KIND_DEFAULT_THREAD_STACKSIZE:
        *(size_t *)val = abtx_g.stacksize ? abtx_g.stacksize : cfg.stack_size;
        return ABT_SUCCESS;
    case ABT_INFO_QUERY_KIND_DEFAULT_SCHED_STACKSIZE:
        *(size_t *)val = 65536;
        return ABT_SUCCESS;
    case ABT_INFO_QUERY_KIND_DEFAULT_SCHED_EVENT_FREQ:
        *(uint64_t *)val = cfg.event_freq;
        return ABT_SUCCESS;
    case ABT_INFO_QUERY_KIND_DEFAULT_SCHED_SLEEP_NSEC:
        *(uint64_t *)val = (uint64_t)cfg.idle_spin_us * 1000;
        return ABT_SUCCESS;
    case ABT_INFO_QUERY_KIND_WAIT_POLICY:
        *(int *)val = 1; /* passive: idle streams park */
        return ABT_SUCCESS;
    default:
        return ABT_ERR_INV_QUERY_KIND;
    }
}

int ABT_info_print_config(FILE *fp)
{
    ABTX_CHECK_INIT();
    return abtx_err(coexec_print_config(fp), ABT_ERR_OTHER, ABT_ERR_OTHER);
}

int ABT_info_print_all_xstreams(FILE *fp)
{
    ABTX_CHECK_INIT();
    int n = 0;
    ABTX_IGNORE(coexec_xstream_get_num(&n));
    fprintf(fp, "# of created ESs: %d\n", n);
    pthread_mutex_lock(&abtx_lock);
    for (ABT_xstream x = abtx_g.xstreams; x; x = x->next)
        if (x->magic == ABTX_XSTREAM)
            fprintf(fp, "ES rank %d%s\n", x->rank,
                    x->primary ? " (primary)" : "");
    pthread_mutex_unlock(&abtx_lock);
    fflush(fp);
    return ABT_SUCCESS;
}

int ABT_info_print_xstream(FILE *fp, ABT_xstream xstream)
{
    ABTX_CHECK_INIT();
    if (!abtx_xstream(xstream))
        return ABT_ERR_INV_XSTREAM;
    fprintf(fp, "ES rank %d (%p)\n", xstream->rank, (void *)xstream);
    return ABT_SUCCESS;
}

int ABT_info_print_sched(FILE *fp, ABT_sched sched)
{
    ABTX_CHECK_INIT();
    if (!abtx_sched(sched))
        return ABT_ERR_INV_SCHED;
    fprintf(fp, "scheduler %p: %d pool(s)\n", (void *)sched, sched->num_pools);
    return ABT_SUCCESS;
}

int ABT_info_print_pool(FILE *fp, ABT_pool pool)
{
    ABTX_CHECK_INIT();
    if (!abtx_pool(pool))
        return ABT_ERR_INV_POOL;
    size_t n = 0;
    ABTX_IGNORE(coexec_pool_get_size(pool->cp, &n));
    fprintf(fp, "pool %d (%p): %zu unit(s)\n", pool->id, (void *)pool, n);
    return ABT_SUCCESS;
}

int ABT_info_print_thread(FILE *fp, ABT_thread thread)
{
    ABTX_CHECK_INIT();
    if (!abtx_thread(thread))
        return ABT_ERR_INV_THREAD;
    fprintf(fp, "%s %" PRIu64 " (%p)\n", thread->is_ult ? "ULT" : "tasklet",
            abtx_unit_id(thread), (void *)thread);
    return ABT_SUCCESS;
}

int ABT_info_print_task(FILE *fp, ABT_task task)
{
    ABTX_CHECK_INIT();
    return abtx_thread(task) ? ABT_info_print_thread(fp, task)
                             : ABT_ERR_INV_TASK;
}
