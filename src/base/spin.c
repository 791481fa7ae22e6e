/*
 * src/base/spin.c: the spin lock's slow path (src/base/spin.h).
 */
#include <sched.h>

#include "base/spin.h"

void coexec__spin_lock_slow(atom_u32_t *l)
{
    unsigned spins = 0;
    for (;;) {
        uint32_t exp = 0;
        /* Acquire: pairs with the release in spin_unlock. */
        if (atom_load_rlx_u32(l) == 0 && atom_cas_acq_u32(l, &exp, 1))
            return;
        if (++spins < 128)
            cpu_relax();
        else
            sched_yield(); /* the holder may have been preempted */
    }
}
