/*
 * src/abt/dump.c: the stack calls of Argobots' info group.
 *
 * ABT_info_print_thread_stack prints one unit through coexec's
 * coexec_info_print_unit. ABT_info_trigger_print_all_thread_stacks may be
 * called from a signal handler, so it only stores its arguments and posts
 * a semaphore (both async-signal-safe). A helper thread, started by
 * ABT_init and sleeping on that semaphore, does the rest: it posts a
 * "stop" tasklet to every stream (coexec_xstream_post: it runs at the
 * stream's next event check, parked streams are woken for it), waits
 * until all of them have stopped in it or the timeout has passed, prints
 * every unit with its call stack (coexec_info_print), calls the
 * callback, and lets the streams go. A stop tasklet that arrives after its
 * round has ended (a stream that was busy past the timeout) returns at
 * once.
 */
#include <errno.h>
#include <inttypes.h>
#include <semaphore.h>
#include <time.h>

#include "abt_internal.h"

enum { ROUND_IDLE, ROUND_WAIT };

static struct {
    sem_t sem;
    pthread_t thread;
    bool started;
    atomic_bool quit;
    /* The trigger's arguments, last call wins. */
    _Atomic(FILE *) fp;
    _Atomic double timeout;
    _Atomic(void (*)(ABT_bool, void *)) cb;
    _Atomic(void *) arg;
    /* The current round, under lock. */
    pthread_mutex_t lock;
    pthread_cond_t cv;
    uintptr_t gen;
    int state;
    int arrived;
} dump = {.lock = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

/* Runs on a stream at its event check: stays there while its round
 * waits. */
static coexec_poll_status_t stop_here(coexec_poll_t *cx, void *arg)
{
    (void)cx;
    uintptr_t gen = (uintptr_t)arg;
    pthread_mutex_lock(&dump.lock);
    if (dump.gen == gen && dump.state == ROUND_WAIT) {
        dump.arrived++;
        pthread_cond_broadcast(&dump.cv);
        while (dump.gen == gen && dump.state == ROUND_WAIT)
            pthread_cond_wait(&dump.cv, &dump.lock);
    }
    pthread_mutex_unlock(&dump.lock);
    return COEXEC_READY;
}

/* The streams asked to stop in the current round (the helper's own). */
static coexec_xstream_t asked[ABTX_MAX_XSTREAMS];

/* Asks every live stream to stop; the number asked. */
static int stop_streams(uintptr_t gen)
{
    int n = 0;
    pthread_mutex_lock(&abtx_lock);
    /* (A joined stream refuses the post: x->joined is its joiner's.) */
    for (ABT_xstream x = abtx_g.xstreams; x; x = x->next)
        if (x->magic == ABTX_XSTREAM && n < ABTX_MAX_XSTREAMS &&
            coexec_xstream_post(x->cx, stop_here, (void *)gen) == COEXEC_OK)
            asked[n++] = x->cx;
    pthread_mutex_unlock(&abtx_lock);
    return n;
}

/* Of the n streams asked, those that have ended since: they will not
 * stop here (a stream stops in stop_here until the round ends, so none
 * of them is among those that arrived). */
static int streams_gone(int n)
{
    int gone = 0;
    for (int i = 0; i < n; i++) {
        coexec_xstream_state_t st = COEXEC_XSTREAM_RUNNING;
        if (coexec_xstream_get_state(asked[i], &st) != COEXEC_OK ||
            st == COEXEC_XSTREAM_TERMINATED)
            gone++;
    }
    return gone;
}

/* CLOCK_REALTIME (what pthread_cond_timedwait reads) in nanoseconds, and
 * back. */
static uint64_t realtime_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static struct timespec timespec_of(uint64_t ns)
{
    struct timespec t = {(time_t)(ns / 1000000000u),
                         (long)(ns % 1000000000u)};
    return t;
}

static void one_round(void)
{
    FILE *fp = atomic_load(&dump.fp);
    double timeout = atomic_load(&dump.timeout);
    void (*cb)(ABT_bool, void *) = atomic_load(&dump.cb);
    void *arg = atomic_load(&dump.arg);

    pthread_mutex_lock(&dump.lock);
    uintptr_t gen = ++dump.gen;
    dump.state = ROUND_WAIT;
    dump.arrived = 0;
    pthread_mutex_unlock(&dump.lock);

    int n = stop_streams(gen);
    uint64_t deadline =
        timeout >= 0 ? realtime_ns() + (uint64_t)(timeout * 1e9) : UINT64_MAX;
    pthread_mutex_lock(&dump.lock);
    int gone = 0;
    /* In 10 ms slices, to see streams that end meanwhile (freed while
     * asked); ABT_finalize ends the wait: its primary is no longer
     * scheduling. */
    for (;;) {
        if (dump.arrived + gone >= n || atomic_load(&dump.quit))
            break;
        uint64_t now = realtime_ns();
        if (now >= deadline)
            break;
        struct timespec end = timespec_of(
            deadline - now < 10000000u ? deadline : now + 10000000u);
        pthread_cond_timedwait(&dump.cv, &dump.lock, &end);
        pthread_mutex_unlock(&dump.lock);
        gone = streams_gone(n);
        pthread_mutex_lock(&dump.lock);
    }
    int arrived = dump.arrived;
    pthread_mutex_unlock(&dump.lock);

    /* The streams that arrived stay stopped while this prints. */
    bool forced = arrived + gone < n;
    if (fp) {
        if (forced)
            fprintf(fp,
                    "ABT_info_trigger_print_all_thread_stacks: timeout "
                    "(only %d of %d ESs stop)\n",
                    arrived, n);
        ABTX_IGNORE(coexec_info_print(fp, COEXEC_INFO_STREAMS |
                                              COEXEC_INFO_UNITS |
                                              COEXEC_INFO_BACKTRACE));
        fflush(fp);
    }
    if (cb)
        cb(forced ? ABT_TRUE : ABT_FALSE, arg);

    pthread_mutex_lock(&dump.lock);
    dump.state = ROUND_IDLE;
    pthread_cond_broadcast(&dump.cv);
    pthread_mutex_unlock(&dump.lock);
}

static void *helper(void *unused)
{
    (void)unused;
    for (;;) {
        while (sem_wait(&dump.sem) != 0 && errno == EINTR)
            ;
        if (atomic_load(&dump.quit))
            return NULL;
        one_round();
    }
}

int abtx_dump_start(void)
{
    if (sem_init(&dump.sem, 0, 0))
        return ABT_ERR_SYS;
    atomic_store(&dump.quit, false);
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, 256 * 1024);
    int rc = pthread_create(&dump.thread, &a, helper, NULL);
    pthread_attr_destroy(&a);
    if (rc) {
        sem_destroy(&dump.sem);
        return ABT_ERR_SYS;
    }
    dump.started = true;
    return ABT_SUCCESS;
}

void abtx_dump_stop(void)
{
    if (!dump.started)
        return;
    pthread_mutex_lock(&dump.lock);
    atomic_store(&dump.quit, true);
    pthread_cond_broadcast(&dump.cv);
    pthread_mutex_unlock(&dump.lock);
    sem_post(&dump.sem);
    pthread_join(dump.thread, NULL);
    sem_destroy(&dump.sem);
    dump.started = false;
}

int ABT_info_trigger_print_all_thread_stacks(FILE *fp, double timeout,
                                             void (*cb_func)(ABT_bool, void *),
                                             void *arg)
{
    /* Async-signal-safe: lock-free atomic stores and sem_post only. */
    if (!dump.started)
        return ABT_ERR_UNINITIALIZED;
    atomic_store(&dump.fp, fp);
    atomic_store(&dump.timeout, timeout);
    atomic_store(&dump.cb, cb_func);
    atomic_store(&dump.arg, arg);
    sem_post(&dump.sem);
    return ABT_SUCCESS;
}

int ABT_info_print_thread_stack(FILE *fp, ABT_thread thread)
{
    ABTX_CHECK_INIT();
    if (!abtx_thread(thread))
        return ABT_ERR_INV_THREAD;
    if (!fp)
        return ABT_ERR_INV_ARG;
    int rc = coexec_info_print_unit(fp, thread->u, COEXEC_INFO_BACKTRACE);
    if (rc == COEXEC_EHANDLE) {
        /* Its coexec unit is gone (a freed or never-started record). */
        fprintf(fp, "%s %" PRIu64 ": no stack\n",
                thread->is_ult ? "ULT" : "tasklet", abtx_unit_id(thread));
        return ABT_SUCCESS;
    }
    return abtx_err(rc, ABT_ERR_INV_THREAD, ABT_ERR_OTHER);
}
