/*
 * src/core/process.c: the library's OS threads (blocked signals, names,
 * what a child forked from one of them gets back) and the fork handlers.
 * See process.h for the protocol.
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "base/global.h"
#include "core/process.h"
#include "pool/pool.h"
#include "sched/sched.h"
#include "thread/thread.h"
#include "thread/unit.h"
#include "xstream/xstream.h"

/* ---- the library's OS threads -------------------------------------------- */

/* What a library thread runs, and what it was started with: its creator's
 * signal mask, CPU affinity and name (the creator's own origin when the
 * creator is itself a library thread). A child process forked from the
 * thread gets them back. The record lives as long as the thread. */
struct os_start {
    void *(*fn)(void *);
    void *arg;
    char name[16];
    sigset_t mask;
    cpu_set_t cpus;
    int have_cpus;
    char origin_name[16];
};

/* The calling thread's record; NULL in threads the library did not start
 * (the primary is the user's thread). */
static __thread struct os_start *self_start;

/* What a library thread blocks: every signal but the synchronous ones. A
 * synchronous signal is raised by the thread's own instruction (a fault,
 * a breakpoint, a system call a seccomp filter traps), must reach that
 * thread, and would kill the process if it were blocked. The kernel does
 * not let SIGKILL and SIGSTOP be blocked, nor glibc its own two. */
static void async_signals(sigset_t *s)
{
    static const int sync_signals[] = {SIGSEGV, SIGBUS,  SIGILL,
                                       SIGFPE,  SIGTRAP, SIGSYS};
    sigfillset(s);
    for (size_t i = 0; i < sizeof sync_signals / sizeof sync_signals[0]; i++)
        sigdelset(s, sync_signals[i]);
}

static void *os_thread_main(void *arg)
{
    struct os_start *st = arg;
    self_start = st;
    /* The thread names itself (a prctl): naming another thread opens a
     * file under /proc, a descriptor a concurrent fork would inherit. */
    IGNORE_RESULT(pthread_setname_np(pthread_self(), st->name));
    void *ret = st->fn(st->arg);
    self_start = NULL;
    free(st);
    return ret;
}

int coexec__os_thread_create(pthread_t *t, const pthread_attr_t *attr,
                             void *(*fn)(void *), void *arg,
                             const char *prefix, int index)
{
    int saved = errno; /* the library never sets errno */
    struct os_start *st = malloc(sizeof *st);
    if (!st)
        return ENOMEM;
    st->fn = fn;
    st->arg = arg;
    if (index >= 0)
        snprintf(st->name, sizeof st->name, "%s%d", prefix, index);
    else
        snprintf(st->name, sizeof st->name, "%s", prefix);
    /* The new thread inherits the mask in force while it is created: it
     * starts with the signals blocked, there is no window. */
    sigset_t block, old;
    async_signals(&block);
    pthread_sigmask(SIG_BLOCK, &block, &old);
    struct os_start *mine = self_start;
    if (mine) {
        st->mask = mine->mask;
        st->cpus = mine->cpus;
        st->have_cpus = mine->have_cpus;
        memcpy(st->origin_name, mine->origin_name, sizeof st->origin_name);
    } else {
        st->mask = old;
        /* The primary pinned by init: the binding it had before. */
        st->have_cpus =
            coexec__affinity_primary_saved(&st->cpus) ||
            sched_getaffinity(0, sizeof st->cpus, &st->cpus) == 0;
        if (pthread_getname_np(pthread_self(), st->origin_name,
                               sizeof st->origin_name) != 0)
            st->origin_name[0] = '\0';
    }
    int e = pthread_create(t, attr, os_thread_main, st);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (e)
        free(st);
    errno = saved;
    return e;
}

/* ---- fork ------------------------------------------------------------------ */

/* Set in a child forked on a unit's stack, and kept in its own children:
 * such a child may exec or exit, not start the runtime again. */
static bool on_unit_stack;
static bool registered; /* under init's lock */

static void fork_prepare(void)
{
    int saved = errno;
    /* The state the child keeps (the topology) or reclaims (the slabs)
     * must be whole: wait for whoever changes it. Neither lock is held
     * while running user code or waiting for another thread. */
    coexec__affinity_atfork_prepare();
    coexec__cache_atfork_prepare();
    errno = saved;
}

static void fork_parent(void)
{
    int saved = errno;
    coexec__cache_atfork_parent();
    coexec__affinity_atfork_release();
    errno = saved;
}

/*
 * In the child only the forking thread exists. Everything the runtime was
 * is reset, without waiting on any lock (the locks that guard discarded
 * state are re-initialised: their holders are gone). Reclaimed: the slabs
 * of descriptors and stacks and the primary's scheduler stack, unless the
 * child runs on one of them; the ring's descriptors and mappings. Left
 * allocated (leaked): the records of the parent's streams, pools,
 * schedulers, service threads and slabs, and stacks mapped one per unit.
 * The handler calls no allocator: with glibc's it could, but an allocator
 * another thread held at fork (a sanitizer's) would never be released.
 */
static void fork_child(void)
{
    int saved = errno;
    struct coexec_xstream_rec *xs = xs_self_entry();
    /* Only the primary's main ULT runs on a thread's own stack. */
    if (xs && !(xs->is_primary && xs->cur && xs->cur == coexec__g.main_unit))
        on_unit_stack = true;
    bool reclaim = !on_unit_stack;
    /* The primary is the user's thread: its binding from before init. */
    cpu_set_t user_cpus;
    bool primary_pinned = coexec__affinity_primary_saved(&user_cpus);
    coexec__init_atfork_child();
    coexec__xstream_atfork_child(reclaim);
    coexec__pool_atfork_child();
    coexec__sched_atfork_child();
    coexec__service_atfork_child();
    coexec__cache_atfork_child(reclaim);
    coexec__affinity_atfork_release();
    if (primary_pinned)
        IGNORE_RESULT(sched_setaffinity(0, sizeof user_cpus, &user_cpus));
    /* A child of a library thread is the user's process again: the
     * signal mask, affinity and name the thread was started with. */
    struct os_start *st = self_start;
    if (st) {
        self_start = NULL;
        pthread_sigmask(SIG_SETMASK, &st->mask, NULL);
        if (st->have_cpus)
            IGNORE_RESULT(sched_setaffinity(0, sizeof st->cpus, &st->cpus));
        if (st->origin_name[0])
            IGNORE_RESULT(pthread_setname_np(pthread_self(), st->origin_name));
    }
    errno = saved;
}

int coexec__fork_setup(void)
{
    if (on_unit_stack)
        return COEXEC_ECONTEXT;
    if (!registered) {
        if (pthread_atfork(fork_prepare, fork_parent, fork_child) != 0)
            return COEXEC_ENOMEM;
        registered = true;
    }
    return COEXEC_OK;
}
