/*
 * src/core/process.h: what the runtime does about the process around it:
 * fork.
 *
 * Room plaque. The library's own OS threads are started by
 * src/base/osthread.c, with the asynchronous signals blocked.
 *
 * fork: handlers registered at the first coexec_init. prepare takes the
 * locks of the state the child keeps or reclaims (the topology, the slab
 * list); parent releases them; child releases them, resets every other
 * piece of runtime state without taking a lock (re-initialising the locks
 * that guard it: the threads that could hold them are gone), so that the
 * child is uninitialised and coexec_init starts afresh. See fork_child
 * in process.c for what the child reclaims and what it leaks.
 */
#ifndef COEXEC_CORE_PROCESS_H
#define COEXEC_CORE_PROCESS_H

#include <pthread.h>
#include <stdbool.h>

/* Init, under its lock: registers the fork handlers (once per process).
 * COEXEC_OK; COEXEC_ECONTEXT in a child forked on a unit's stack (it may
 * only exec or exit); COEXEC_ENOMEM when the handlers cannot be had. */
int coexec__fork_setup(void);

/* The pieces of the fork protocol each room owns are declared in the
 * room's header (coexec__<room>_atfork_*); process.c calls them in order.
 * reclaim: the child runs on a stack of its own (not a unit's), so the
 * parent's slabs and stacks may be unmapped. */
void coexec__init_atfork_child(void);

#endif /* COEXEC_CORE_PROCESS_H */
