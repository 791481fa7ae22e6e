/*
 * src/sched/sched.h: the scheduler record and the stream's run loop.
 *
 * Room plaque. A scheduler is a kind (BASIC, BASIC_WAIT), an ordered array
 * of pools, and its tuning. `in_use` is set while a stream runs it as its
 * main scheduler. The loop itself lives in src/sched/sched.c; what it runs
 * (and how units come back to it) lives in src/thread/.
 */
#ifndef COEXEC_SCHED_SCHED_H
#define COEXEC_SCHED_SCHED_H

#include "arch/atomic.h"
#include "pool/pool.h"

#define SCHED_MAX_POOLS 64

struct coexec_sched_rec {
    int kind;
    int npools;
    struct coexec_pool_rec *pools[SCHED_MAX_POOLS];
    unsigned event_freq;
    uint64_t idle_spin_ns;
    int steal;
    uint8_t is_default;   /* made by the runtime for a default setup */
    uint8_t user_created;
    uint8_t live; /* made and not yet released (under coexec__g.lock) */
    atom_u32_t in_use;
    atom_u64_t gen;
    struct coexec_sched_rec *free_next;
    struct coexec_sched_rec *all_next;
};

struct coexec_xstream_rec;

struct coexec_sched_rec *coexec__sched_new(int kind,
                                           struct coexec_pool_rec **pools,
                                           int npools, unsigned event_freq,
                                           uint64_t idle_spin_ns, int steal);
void coexec__sched_release(struct coexec_sched_rec *s);
void coexec__sched_free_all(void);
int coexec__sched_count_user_live(void);

/* Runs xs's main scheduler until a stop request is honoured. */
void coexec__sched_run(struct coexec_xstream_rec *xs);

/* Drains xs's inbox (remote wakes) into the units' home pools. */

#endif /* COEXEC_SCHED_SCHED_H */
