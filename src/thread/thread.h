/*
 * src/thread/thread.h: the unit engine's calls for the other rooms:
 * descriptors, running and finishing, queueing, parking and waking,
 * joining, keys (src/thread/run.c, src/thread/thread.c, src/thread/key.c).
 */
#ifndef COEXEC_THREAD_THREAD_H
#define COEXEC_THREAD_THREAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/atomic.h"
#include "coexec.h"

struct coexec_pool_rec;
struct coexec_sched_rec;
struct coexec_unit_rec;
struct coexec_xstream_rec;

struct coexec_unit_rec *coexec__unit_new(struct coexec_xstream_rec *xs,
                                         int kind);
void coexec__unit_release(struct coexec_xstream_rec *xs,
                          struct coexec_unit_rec *u);
void coexec__run_unit(struct coexec_xstream_rec *xs,
                      struct coexec_unit_rec *u);
/* coexec__run_unit of a tasklet (the scheduler's loop calls it directly). */
void coexec__run_tasklet_unit(struct coexec_xstream_rec *xs,
                              struct coexec_unit_rec *u);
void coexec__post_switch(struct coexec_xstream_rec *xs);
void coexec__enqueue(struct coexec_unit_rec *u, bool yield_end);
/* Queues u, woken, in its home pool (or the pool a migration asked for). */
void coexec__enqueue_woken(struct coexec_unit_rec *u);
/* The pool units migrating to xs go to. */
struct coexec_pool_rec *coexec__migr_pool(struct coexec_xstream_rec *xs);
/* Stacked schedulers (src/sched/loop.c): their unit's yield back to the
 * level below, and making that unit. */
void coexec__unit_yield_to_sched(struct coexec_xstream_rec *xs,
                                 struct coexec_unit_rec *self);
int coexec__sched_unit_new(struct coexec_sched_rec *s, size_t stack_size,
                           coexec_thread_fn_t fn, struct coexec_unit_rec **out);
/* Progress pollers waiting for operations (set by src/sched/poller.c, an
 * upward signal): while not 0, coexec_yield goes through the scheduler
 * instead of handing over directly, so that the loop's between-units poll
 * (sched/loop.c) sees every yield. */
extern atom_u32_t coexec__pollers_hot;

void coexec__wake_unit(struct coexec_unit_rec *u);
/* Wakes u if its incarnation's tag is still `tag`; false if stale. */
bool coexec__wake_tagged(struct coexec_unit_rec *u, uint32_t tag);
/* Drops a wake recorded while u ran (u itself calls this). */
void coexec__wake_clear(struct coexec_unit_rec *u);
/* Parks the calling ULT self until woken. */
void coexec__park_current(struct coexec_unit_rec *self);
/* Runs the key destructors of the calling ULT u and frees its table. */
void coexec__keys_destroy(struct coexec_unit_rec *u);
/* Forgets every key (init). */
void coexec__keys_reset(void);
int coexec__join_unit(struct coexec_unit_rec *u);
/* Finalize (FIN_CANCEL, only the primary running), for a descriptor u
 * that may be free: if u is a parked ULT or tasklet, unlinks a tasklet
 * from the list it waits on and, if `wake`, makes `to` its home and wakes
 * it. True if it woke u. */
bool coexec__unit_finalize_wake(struct coexec_unit_rec *u,
                                struct coexec_pool_rec *to, bool wake);

#endif /* COEXEC_THREAD_THREAD_H */
