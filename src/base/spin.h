/*
 * src/base/spin.h: the runtime's short-hold spin lock (test and
 * test-and-set), used for pools, wait lists and timer heaps.
 *
 * Held for a few dozen instructions at most; a waiter spins, then yields
 * the CPU so a preempted holder can finish (streams may outnumber cores).
 */
#ifndef COEXEC_BASE_SPIN_H
#define COEXEC_BASE_SPIN_H

#include <stdbool.h>

#include "arch/atomic.h"
#include "arch/compiler.h"

/* Spins, then yields the CPU, until the lock is taken (base/spin.c). */
void coexec__spin_lock_slow(atom_u32_t *l);

static ALWAYS_INLINE void spin_lock(atom_u32_t *l)
{
    uint32_t exp = 0;
    /* Acquire: pairs with the release in spin_unlock. */
    if (LIKELY(atom_cas_acq_u32(l, &exp, 1)))
        return;
    coexec__spin_lock_slow(l);
}

static ALWAYS_INLINE bool spin_trylock(atom_u32_t *l)
{
    uint32_t exp = 0;
    return atom_load_rlx_u32(l) == 0 && atom_cas_acq_u32(l, &exp, 1);
}

static ALWAYS_INLINE void spin_unlock(atom_u32_t *l)
{
    atom_store_rel_u32(l, 0);
}

#endif /* COEXEC_BASE_SPIN_H */
