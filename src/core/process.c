/*
 * src/core/process.c: the library's OS threads: blocked signals, names.
 * See process.h.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "core/process.h"

/* ---- the library's OS threads -------------------------------------------- */

/* What a library thread runs. The record lives as long as the thread. */
struct os_start {
    void *(*fn)(void *);
    void *arg;
    char name[16];
};

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
    /* The thread names itself (a prctl): naming another thread opens a
     * file under /proc, a descriptor a concurrent fork would inherit. */
    IGNORE_RESULT(pthread_setname_np(pthread_self(), st->name));
    void *(*fn)(void *) = st->fn;
    void *fn_arg = st->arg;
    free(st);
    return fn(fn_arg);
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
    int e = pthread_create(t, attr, os_thread_main, st);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (e)
        free(st);
    errno = saved;
    return e;
}
