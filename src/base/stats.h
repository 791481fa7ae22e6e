/*
 * src/base/stats.h: a stream's counters (coexec/stats.h), for every room
 * that counts. The stream record holds `count[XC_N]`; only the stream's
 * own thread adds to them (a relaxed load and store: plain moves, no
 * locked instruction), and anyone reads them.
 */
#ifndef COEXEC_BASE_STATS_H
#define COEXEC_BASE_STATS_H

#include <stdint.h>

#include "arch/atomic.h"
#include "arch/compiler.h"

enum xs_count {
    XC_ULT_RUNS,       /* switches into a ULT (started or resumed) */
    XC_TASKLETS_RUN,   /* tasklet runs and polls */
    XC_SCHED_SWITCHES, /* switches from a ULT back to the scheduler */
    XC_YIELDS,
    XC_PARKS,
    XC_WAKES_LOCAL,
    XC_WAKES_REMOTE,
    XC_STEALS,
    XC_FJ_STEALS,
    XC_OFFLOADS,
    XC_IDLE_NS,
    XC_PARKED_NS,
    XC_N
};

/* Adds n to counter c of the calling thread's own stream. */
static ALWAYS_INLINE void stat_add(atom_u64_t *c, uint64_t n)
{
    atom_store_rlx_u64(c, atom_load_rlx_u64(c) + n);
}

#endif /* COEXEC_BASE_STATS_H */
