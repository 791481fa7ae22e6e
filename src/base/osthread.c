/*
 * src/base/osthread.c: the library's OS threads: started with the
 * asynchronous signals blocked, named, and what a child forked from one of
 * them gets back (src/base/osthread.h).
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch/compiler.h"
#include "base/osthread.h"
#include "base/topology.h"

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
    int user_signals; /* runs the user's code with the creator's mask */
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
    /* The mask first, then the name: a thread seen under its name has
     * the mask it keeps (not the creation's, which blocks everything
     * asynchronous). */
    if (st->user_signals)
        pthread_sigmask(SIG_SETMASK, &st->mask, NULL);
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
                             const char *prefix, int index, int user_signals)
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
    st->user_signals = user_signals;
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

void coexec__os_thread_atfork_child(void)
{
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
}
