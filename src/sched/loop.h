/*
 * src/sched/loop.h: what the scheduler room's files share (loop.c, idle.c,
 * steal.c, sched.c): which unit a built-in scheduler runs next, and the
 * idle and stealing steps of the loop. Not for other rooms.
 */
#ifndef COEXEC_SCHED_LOOP_H
#define COEXEC_SCHED_LOOP_H

#include <stdbool.h>
#include <stdint.h>

#include "arch/clock.h"
#include "pool/pool.h"
#include "sched/sched.h"
#include "xstream/xstream.h"

static inline uint64_t now_ns(void)
{
    return clock_now_ns();
}

static inline bool own_pool(struct coexec_sched_rec *s, struct coexec_pool_rec *p)
{
    for (int i = 0; i < s->npools; i++)
        if (s->pools[i] == p)
            return true;
    return false;
}

/* Does s steal from the other streams' default pools (the registry)?
 * RANDWS with several pools steals from its own pools 1.. instead. */
static inline bool steals_registry(struct coexec_sched_rec *s)
{
    return s->steals && s->steal_registry;
}

/* Steals one unit for s (src/sched/steal.c), or NULL. */
struct coexec_unit_rec *coexec__sched_steal_one(struct coexec_xstream_rec *xs,
                                               struct coexec_sched_rec *s);

/* PRIO's choice (src/sched/prio.c). */
struct coexec_unit_rec *coexec__sched_prio_pick(struct coexec_xstream_rec *xs,
                                               struct coexec_sched_rec *s);

/* The unit a built-in scheduler runs next: its own pick (PRIO), or its
 * first npop pools in order; when they are empty, a stolen one if it
 * steals. Read from the record's fields, never from its kind. */
static ALWAYS_INLINE struct coexec_unit_rec *
next_unit(struct coexec_xstream_rec *xs, struct coexec_sched_rec *s)
{
    struct coexec_unit_rec *u = NULL;
    if (UNLIKELY(s->pick != NULL)) {
        u = s->pick(xs, s);
    } else {
        int i = 0; /* npop >= 1: sched_make takes 1 pool or more */
        do
            u = coexec__pool_pop(s->pools[i], xs);
        while (!u && ++i < s->npop);
    }
    return u || !s->steal_empty ? u : coexec__sched_steal_one(xs, s);
}

/* Are all of s's pools empty (a relaxed look)? */
static inline bool pools_empty(struct coexec_sched_rec *s)
{
    for (int i = 0; i < s->npools; i++)
        if (pool_size(s->pools[i]) != 0)
            return false;
    return true;
}

/* Sleeper nodes one parking scheduler puts on pools: its own pools (at
 * most SCHED_MAX_POOLS), and a stacked scheduler's victims. */
#define MAX_SLEEP_POOLS 64

/* What a parking scheduler registered, to be undone once it is awake. */
struct sleep_reg {
    struct sleeper nodes[MAX_SLEEP_POOLS];
    struct coexec_pool_rec *pools[MAX_SLEEP_POOLS];
    int n;
    struct sleeper thief; /* a stream in the set of parked thieves */
    bool abort;   /* a pool has work: do not sleep */
    bool partial; /* a stacked scheduler with too many victims for nodes */
};

/* Registers the sleeper (stream xs, or unit `unit`) on s's pools and, when
 * s steals, on its victims (src/sched/idle.c). */
void coexec__sched_sleep_register(struct coexec_xstream_rec *xs,
                                  struct coexec_unit_rec *unit,
                                  struct coexec_sched_rec *s,
                                  struct sleep_reg *r);
void coexec__sched_sleep_unregister(struct sleep_reg *r);
/* Parks the stream until work, a stop or its earliest timer. */
void coexec__sched_park_stream(struct coexec_xstream_rec *xs,
                               struct coexec_sched_rec *s);
/* Tells the stacked schedulers that are units of s's pools to finish
 * (src/sched/sched.c); true if it woke any. */
bool coexec__sched_finish_children(struct coexec_sched_rec *s);
/* The body of a stacked scheduler's unit (src/sched/loop.c). */
void coexec__sched_stacked_main(void *arg);

#endif /* COEXEC_SCHED_LOOP_H */
