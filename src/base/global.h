/*
 * src/base/global.h: what is truly global to the runtime: whether it runs,
 * its configuration and derived sizes, the init epoch that every handle
 * generation carries, the one cold lock, and the handle checks every
 * public entry point starts with.
 *
 * Room plaque. coexec__g (base/global.c) is written by init and finalize
 * (src/core/init.c) and read everywhere. `state` says whether the runtime
 * runs; `epoch` counts inits and forms the high half of every handle
 * generation, so a handle from an earlier init is rejected without
 * touching memory that may be gone. Within one init, records of every kind
 * are type-stable (recycled, never freed), so checking a stale handle's
 * generation is always a safe read. The registries of records live with
 * their rooms: streams in src/xstream/ (coexec__xsr), pools that may be
 * stolen from in src/pool/ (coexec__steal), pool, scheduler and key
 * records in their own files; `lock` guards all of them.
 */
#ifndef COEXEC_BASE_GLOBAL_H
#define COEXEC_BASE_GLOBAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "arch/atomic.h"
#include "arch/compiler.h"
#include "coexec.h"

struct coexec_xstream_rec;
struct coexec_unit_rec;

#define MAX_XSTREAMS 1024

/* Bounds of the configuration's stack fields. */
#define COEXEC_MIN_STACK (16u * 1024)
#define COEXEC_MAX_STACK (1024u * 1024 * 1024)
/* The smallest stack a user may ask for or provide. */
#define COEXEC__USER_MIN_STACK (8u * 1024)
/* Guard regions below runtime-mapped stacks (cfg.guard_size). */
#define COEXEC__DEFAULT_GUARD ((size_t)4096)
#define COEXEC__MAX_GUARD ((size_t)64 * 1024 * 1024)
/* The largest data area a unit descriptor may carry (cfg.unit_data_size). */
#define COEXEC__MAX_UNIT_DATA ((size_t)1024)

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
    size_t unit_data;      /* cfg.unit_data_size rounded up to 64: the data
                              area after each unit descriptor */
    uint64_t idle_spin_ns; /* cfg.idle_spin_us in ns */
    bool pool_bias;        /* shared list pools may be biased (pool.h) */
    /* Guards the stream registry (src/xstream/), the lists of pool and
     * scheduler records, the key table and stacking checks; never taken
     * on a hot path. */
    pthread_mutex_t lock;
    /* The primary stream and the main ULT: opaque here, read by every
     * room that needs them. */
    struct coexec_xstream_rec *primary;
    struct coexec_unit_rec *main_unit;
    atom_u64_t next_unit_id;
    atom_u64_t live_units; /* descriptors handed out and not freed */
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
    /* The epoch is never 0 (init skips it), so neither is a good gen. */
    return (uint32_t)(gen >> 32) == coexec__g.epoch;
}

/* Returns 0 or the error for a handle of any record with an atom_u64_t gen. */
#define CHECK_HANDLE(h)                                                        \
    ((h).p == NULL                                                             \
         ? COEXEC_EHANDLE                                                      \
         : (!handle_epoch_ok((h).gen) ||                                       \
                    atom_load_acq_u64(&(h).p->gen) != (h).gen                  \
                ? COEXEC_EHANDLE                                               \
                : 0))

/*
 * After a query through handle h, checked with CHECK_HANDLE, read fields
 * of its record: whether the record was still h's when they were read. A
 * free through another copy of h and a reuse of the record may have come
 * between; the values may then be the next unit's, and the query answers
 * COEXEC_EHANDLE. The acquire fence pairs with the release fence a reuse
 * makes before its first write (unit_reset, tasklet_create_fast): a read
 * that saw such a write sees the new generation here.
 */
static inline bool handle_still(atom_u64_t *gen, uint64_t want)
{
    atom_fence_acq();
    return atom_load_rlx_u64(gen) == want;
}
#define HANDLE_STILL(h) handle_still(&(h).p->gen, (h).gen)

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

#endif /* COEXEC_BASE_GLOBAL_H */
