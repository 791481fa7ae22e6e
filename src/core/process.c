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
#include "base/osthread.h"
#include "base/topology.h"
#include "core/config.h"
#include "core/process.h"
#include "fj/fj.h"
#include "pool/pool.h"
#include "sched/sched.h"
#include "service/service.h"
#include "thread/thread.h"
#include "thread/unit.h"
#include "xstream/xstream.h"

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
    coexec__fj_atfork_child();
    coexec__monitor_atfork_child();
    coexec__service_atfork_child();
    coexec__cache_atfork_child(reclaim);
    coexec__affinity_atfork_release();
    if (primary_pinned)
        IGNORE_RESULT(sched_setaffinity(0, sizeof user_cpus, &user_cpus));
    coexec__os_thread_atfork_child();
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
