/*
 * src/xstream/xstream.h: the execution-stream record.
 *
 * Room plaque. Fields in the first block are touched only by the stream's
 * own OS thread (the current unit, the pending post-switch action, the
 * caches). The second block, on its own cache line, is written by other
 * threads: the remote-wake inbox, the park word, the stop request.
 *
 * The post-switch action: a context that switches away records in
 * (post_op, post_unit) what must happen to it once its registers are
 * saved (queued again, parked, or finished and its stack released); the
 * context that resumes runs coexec__post_switch() first thing. This is
 * what keeps a half-saved ULT from being resumed by another stream.
 */
#ifndef COEXEC_XSTREAM_XSTREAM_H
#define COEXEC_XSTREAM_XSTREAM_H

#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

#include "arch/atomic.h"
#include "base/global.h"
#include "base/self.h"
#include "base/stats.h"
#include "base/timerheap.h"
#include "base/topology.h"
#include "mem/cache.h"
#include "mem/guard.h"
#include "pool/mailbox.h"
#include "sched/sched.h"

enum post_op {
    POST_NONE = 0,
    POST_REQUEUE, /* yield: queue post_unit again at the yield end */
    POST_PARK,    /* park post_unit unless a wake is already recorded */
    POST_FINISH,  /* post_unit's function returned: release its stack */
    POST_REQUEUE_LOCKED, /* yield: queue post_unit in post_pool, whose lock
                           the leaving context holds, then unlock it */
    POST_REQUEUE_NEW    /* queue post_unit as a new unit (child first) */
};

/* Victim distances a stream remembers (CPUs 0..XS_DIST_CACHE-1). */
#define XS_DIST_CACHE 256
struct coexec_xstream_rec {
    int rank; /* first: read by the rooms below (base/self.h) */
    /* Owner-only. */
    struct coexec_unit_rec *cur; /* running unit; NULL in the scheduler */
    void *sched_sp;              /* the scheduler's saved context */
    int post_op;
    struct coexec_unit_rec *post_unit;
    struct coexec_pool_rec *post_pool;
    uint8_t post_hold; /* POST_REQUEUE_LOCKED: how post_pool is held
                          (enum pool_hold) */
    struct coexec_unit_rec *run_next; /* run before popping */
    unsigned direct_yields;
    /* Set by a yield that went through the scheduler after event_freq
     * direct hand-offs: the loop checks its events at once. */
    uint8_t events_due;
    /* 1 while a fork-join region or a stolen task runs here (src/fj):
     * the scheduler's own steps refuse then. */
    uint8_t in_fj;
    /* When the loop may next call the pollers between units while one of
     * them waits for operations (sched/poller.c). */
    uint64_t poll_at;
    /* The main scheduler (struct coexec_sched_rec *): written by the
     * stream's own thread (release) when replaced, read by others with
     * acquire. */
    atom_ptr_t sched;
    struct coexec_sched_rec *cur_sched; /* the innermost level running */
    uint32_t rng;                       /* victim choice (xorshift) */
    struct unit_cache ucache;
    struct stack_cache scache;
    void *sched_stack_lo; /* the scheduler context's stack, for sanitizers */
    size_t sched_stack_size;
    void *sched_fiber;
    void *sched_stack_own; /* primary: the stack we mapped for the scheduler */
    struct coexec_altstack altstack; /* the signal stack we gave its thread */
    int cpu;
    int is_primary;
    int steal_index;
    int joined; /* stopped and joined: only the record remains */
    atom_u32_t join_claim; /* public join/free: 0, 1 joining, 2 joined */
    /* 1 once the stream's thread is ending: no caller may take `thread`
     * (xs_thread_enter) from then on. */
    atom_u32_t thread_gone;
    int64_t live_units; /* descriptors made minus freed here (may be < 0) */
    uint64_t id_next, id_end; /* a block of unit ids taken from the global */
    pthread_t thread;
    uint8_t dist[XS_DIST_CACHE]; /* distance to CPU i; 0xff: not known yet */

    /* Counters (base/stats.h): added to by this thread only, read by
     * anyone; lines of their own, so the owner's other fields keep their
     * places. */
    atom_u64_t count[XC_N] CACHE_ALIGNED;

    /* Written by other threads. */
    struct mailbox mb CACHE_ALIGNED; /* remote wakes, the park word */
    atom_u32_t stop;
    atom_ptr_t sched_req; /* coexec_xstream_set_main_sched's request */
    atom_ptr_t sched_req_waiters; /* its ULTs that wait for the switch */
    /* coexec_xstream_post's lock, and 1 once the loop has ended for good:
     * a post either lands before the stream's last look at its inbox or
     * is refused. */
    atom_u32_t post_lock;
    uint32_t post_closed;
    atom_u32_t state; /* coexec_xstream_state_t */
    atom_u32_t done;  /* futex: 1 once the OS thread left the loop */
    /* ULTs parked until done, or until join_claim is 2 (struct
     * xs_waiter lists, xstream.c). */
    atom_ptr_t done_waiters;
    atom_ptr_t claim_waiters;
    atom_u64_t gen;
    struct coexec_pool_rec *default_pool;
    struct coexec_sched_rec *default_sched; /* NULL: not a default setup */
    struct coexec_xstream_rec *free_next;
    /* coexec_stats_reset's snapshot, and when the stream started and
     * stopped running (core/stats.c, under coexec__g.lock). */
    uint64_t count_base[XC_N + 2];
    uint64_t since_ns;
    atom_u64_t stop_ns;
    atom_u64_t stolen_at_stop; /* its pools' `stolen` when it stopped */
    /* Timers of units parked here: the owner fires them, any stream may
     * cancel one (under the lock). */
    struct timer_heap timers CACHE_ALIGNED;
    /* Callers using `thread` from outside (xs_thread_enter); the thread
     * waits for none to be left before it exits (thread_users_out). Past
     * `timers`, so a reuse of the record leaves it alone: a caller of the
     * last incarnation may still be on its way out. */
    atom_u32_t thread_users;
};

/* The stream registry (src/xstream/xstream.c), under coexec__g.lock. */
struct coexec__xs_registry {
    struct coexec_xstream_rec *by_rank[MAX_XSTREAMS];
    int num;                         /* streams with a rank */
    struct coexec_xstream_rec *free; /* stopped records, for reuse */
    struct coexec_xstream_rec *all[MAX_XSTREAMS]; /* every record made */
    int num_all;
};
extern struct coexec__xs_registry coexec__xsr;

_Static_assert(offsetof(struct coexec_xstream_rec, rank) == 0,
               "base/self.h reads a stream's rank as its first member");

/* Wakes xs if it is parked (idempotent). */
static inline void xs_kick(struct coexec_xstream_rec *xs)
{
    parker_kick(&xs->mb.park);
}

static inline bool xs_events_pending(struct coexec_xstream_rec *xs)
{
    return mb_pending(&xs->mb);
}

/* Timers (src/base/timerheap.h; the keeper: src/sched/keeper.c). */
static inline uint64_t xs_next_timer(struct coexec_xstream_rec *xs)
{
    return atom_load_acq_u64(&xs->timers.next);
}

int coexec__xstream_start(struct coexec_sched_rec *sched, int cpu,
                          struct coexec_xstream_rec **out);
int coexec__xstream_stop_and_join(struct coexec_xstream_rec *xs);
int coexec__primary_setup(void);
void coexec__primary_teardown(void);

/* fork, in the child (src/core/process.c): forgets every stream. */
void coexec__xstream_atfork_child(bool reclaim);

#endif /* COEXEC_XSTREAM_XSTREAM_H */
