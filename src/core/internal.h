/*
 * src/core/internal.h: the first include of every runtime .c file: the
 * public API, the compiler helpers, the runtime-wide record and the handle
 * checks every public entry point starts with.
 *
 * Room plaque. coexec__g is the one runtime record. `state` says whether the
 * runtime runs; `epoch` counts inits and forms the high half of every
 * handle generation, so a handle from an earlier init is rejected without
 * touching memory that may be gone. Within one init, records of every kind
 * are type-stable (recycled, never freed), so checking a stale handle's
 * generation is always a safe read. `lock` guards the stream table and the
 * lists of records; it is never taken on a hot path.
 */
#ifndef COEXEC_CORE_INTERNAL_H
#define COEXEC_CORE_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "arch/atomic.h"
#include "coexec.h"
#include "arch/compiler.h"
#include "pool/pool.h"
#include "sched/sched.h"
#include "thread/unit.h"
#include "xstream/xstream.h"

#define MAX_XSTREAMS 1024

enum rt_state { RT_OFF = 0, RT_ON = 1, RT_STOPPING = 2 };

/* How far finalize is (coexec__g.fin). */
enum fin_phase {
    FIN_NONE = 0,
    /* A stopping stream with nothing else to run ends its sleeps and
     * timed waits (COEXEC_ECANCELED) instead of waiting for them. */
    FIN_TIMERS = 1,
    /* Every other stream has stopped: a unit's wait that would block is
     * cancelled (COEXEC_ECANCELED), and finalize wakes the parked units. */
    FIN_CANCEL = 2
};

struct coexec__global {
    atom_u32_t state; /* enum rt_state */
    atom_u32_t fin;   /* enum fin_phase */
    uint32_t epoch;
    coexec_config_t cfg;
    size_t stack_size;     /* cached-size stacks, node included */
    size_t page_size;      /* the system's page size */
    size_t guard_size;     /* cfg.guard_size rounded up to pages */
    uint64_t idle_spin_ns; /* cfg.idle_spin_us in ns */
    pthread_mutex_t lock;
    struct coexec_xstream_rec *xs_by_rank[MAX_XSTREAMS];
    int num_xs;
    struct coexec_xstream_rec *primary;
    struct coexec_unit_rec *main_unit;
    /* Default pools other streams may steal from (readers: any stream,
     * without the lock; entries are type-stable pool records). */
    atom_ptr_t steal_pools[MAX_XSTREAMS];
    atom_u32_t num_steal_pools;
    atom_u64_t next_unit_id;
    atom_u64_t live_units; /* descriptors handed out and not freed */
    struct coexec_xstream_rec *xs_free;
    struct coexec_xstream_rec *xs_all[MAX_XSTREAMS];
    int num_xs_all;
    /* num_xs_all for readers without the lock (the timer keeper): stored
     * (release) once the new record's timer heap is ready. */
    atom_u32_t num_xs_seen;
};

extern struct coexec__global coexec__g;

/* Generations: epoch in the high half, a per-record counter below. */
static inline uint64_t gen_first(void)
{
    return ((uint64_t)coexec__g.epoch << 32) | 1;
}
static inline uint64_t gen_next(uint64_t g)
{
    uint64_t low = (uint32_t)(g + 1);
    return ((uint64_t)coexec__g.epoch << 32) | (low ? low : 1);
}

static inline bool rt_on(void)
{
    /* Acquire: pairs with the release store that finished init. */
    return atom_load_acq_u32(&coexec__g.state) == RT_ON;
}

/* Finalize cancels the waits of units (FIN_CANCEL). Acquire: pairs with
 * finalize's store, so a unit that sees it also sees what came before. */
static inline bool fin_cancelling(void)
{
    return UNLIKELY(atom_load_acq_u32(&coexec__g.fin) == FIN_CANCEL);
}

static inline bool handle_epoch_ok(uint64_t gen)
{
    return gen != 0 && (uint32_t)(gen >> 32) == coexec__g.epoch;
}

/* Returns 0 or the error for a handle of any record with an atom_u64_t gen. */
#define CHECK_HANDLE(h)                                                        \
    ((h).p == NULL                                                             \
         ? COEXEC_EHANDLE                                                      \
         : (!handle_epoch_ok((h).gen) ||                                       \
                    atom_load_acq_u64(&(h).p->gen) != (h).gen                  \
                ? COEXEC_EHANDLE                                               \
                : 0))

#define RT_CHECK()                                                             \
    do {                                                                       \
        if (UNLIKELY(!rt_on()))                                                \
            return COEXEC_ENOTINIT;                                            \
    } while (0)

/* One-line warnings on stderr, unless cfg.quiet. */
void coexec__warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The identity of the calling OS thread, for access-mode checks. */
void *coexec__thread_token(void);
/* The calling OS thread as a lock owner (src/waker/wait.h): odd, unique
 * to the thread for the life of the process. */
void *coexec__thread_owner(void);

/* Units (src/thread/). */
struct coexec_unit_rec *coexec__unit_new(struct coexec_xstream_rec *xs,
                                         int kind);
void coexec__unit_release(struct coexec_xstream_rec *xs,
                          struct coexec_unit_rec *u);
void coexec__run_unit(struct coexec_xstream_rec *xs,
                      struct coexec_unit_rec *u);
void coexec__post_switch(struct coexec_xstream_rec *xs);
void coexec__enqueue(struct coexec_unit_rec *u, bool yield_end);
/* Queues u, woken, in its home pool (or the pool a migration asked for). */
void coexec__enqueue_woken(struct coexec_unit_rec *u);
/* The pool units migrating to xs go to. */
struct coexec_pool_rec *coexec__migr_pool(struct coexec_xstream_rec *xs);
/* Stacked schedulers (src/sched/sched.c): their unit's yield back to the
 * level below, and making that unit. */
void coexec__unit_yield_to_sched(struct coexec_xstream_rec *xs,
                                 struct coexec_unit_rec *self);
int coexec__sched_unit_new(struct coexec_sched_rec *s, size_t stack_size,
                           coexec_thread_fn_t fn, struct coexec_unit_rec **out);
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
void coexec__unit_switch_to_sched(struct coexec_xstream_rec *xs,
                                  struct coexec_unit_rec *self);

#endif /* COEXEC_CORE_INTERNAL_H */
