/*
 * src/base/timerheap.h: timers in a heap ordered by deadline: each stream
 * has one (src/xstream/), its owner fires the expired timers from its
 * scheduler loop, any thread may add or cancel one under the heap's lock.
 * Fire runs under the same lock, so once cancel returns nothing touches
 * the timer.
 */
#ifndef COEXEC_BASE_TIMERHEAP_H
#define COEXEC_BASE_TIMERHEAP_H

#include <stdbool.h>
#include <stdint.h>

#include "arch/atomic.h"
#include "base/global.h"

struct timer_heap;

/* A timer: fire(t, false) runs under the heap's lock once deadline has
 * passed (on the heap's stream, or on the timer keeper: see
 * src/sched/keeper.c), unless cancelled first; fire(t, true) when
 * finalize ends it early. */
struct timer {
    uint64_t deadline;
    void (*fire)(struct timer *t, bool cancel);
    struct timer_heap *heap; /* the heap it is in */
    uint32_t idx;                  /* position in the heap; TIMER_OFF: none */
};
#define TIMER_OFF UINT32_MAX

struct timer_heap {
    atom_u32_t lock;
    uint32_t n, cap;
    struct timer **a;
    atom_u64_t next; /* the earliest deadline, UINT64_MAX when empty */
};

/* Adds t (its deadline and fire set); COEXEC_OK or COEXEC_ENOMEM. When t
 * becomes the earliest, calls coexec__timerheap_note(deadline) if set. */
int coexec__timer_add(struct timer_heap *h, struct timer *t);
/* Takes t out of its heap; false if it was not there (it has fired). */
bool coexec__timer_cancel(struct timer *t);
/* Fires the expired timers; returns the next deadline or UINT64_MAX. */
uint64_t coexec__timerheap_run(struct timer_heap *h, uint64_t now);
/* The same with h's lock held. */
uint64_t coexec__timerheap_run_locked(struct timer_heap *h, uint64_t now);
/* Finalize: fires every timer now, as cancelled. */
void coexec__timerheap_cancel_all(struct timer_heap *h);
/* Frees the heap's array (finalize). */
void coexec__timerheap_free(struct timer_heap *h);

/* Every stream's heap, for the timer keeper (src/sched/keeper.c), which
 * reads it without a lock: a heap is added (under coexec__g.lock) when a
 * stream record is made, and stays valid until finalize forgets them all
 * (records are type-stable). */
struct timerheap_registry {
    struct timer_heap *all[MAX_XSTREAMS];
    atom_u32_t num; /* stored (release) once all[num - 1] is ready */
};
extern struct timerheap_registry coexec__timerheaps;
void coexec__timerheap_register(struct timer_heap *h);
void coexec__timerheap_forget_all(void);

/* void (*)(uint64_t deadline): set by the rooms above (the timer keeper,
 * src/sched/keeper.c); called when a timer becomes its heap's earliest. */
extern atom_ptr_t coexec__timerheap_note;

#endif /* COEXEC_BASE_TIMERHEAP_H */
