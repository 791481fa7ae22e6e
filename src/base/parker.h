/*
 * src/base/parker.h: a park word: one thread sleeps on it, any thread
 * kicks it.
 *
 * The sleeper stores 0 (seq_cst) before its last look for work, then
 * sleeps on the futex while the word reads 0; a kicker first makes its
 * work visible, then exchanges 1 in (seq_cst) and wakes the futex if the
 * word was 0. Dekker: either the sleeper's look sees the work, or the
 * kicker's exchange sees the 0 and wakes it. Only the first kick after a
 * reset pays the system call.
 */
#ifndef COEXEC_BASE_PARKER_H
#define COEXEC_BASE_PARKER_H

#include <time.h>

#include "arch/atomic.h"
#include "arch/futex.h"

/* Before the sleeper's last look for work. */
static inline void parker_reset(atom_u32_t *w)
{
    atom_store_sc_u32(w, 0);
}

/* Sleeps until kicked or until *ts (NULL: no limit); may return early. */
static inline void parker_sleep(atom_u32_t *w, const struct timespec *ts)
{
    coexec__futex_wait(w, 0, ts);
}

static inline void parker_kick(atom_u32_t *w)
{
    if (atom_xchg_sc_u32(w, 1) == 0)
        coexec__futex_wake(w, 1);
}

/* Was it kicked since the reset? */
static inline bool parker_kicked(atom_u32_t *w)
{
    return atom_load_rlx_u32(w) != 0;
}

#endif /* COEXEC_BASE_PARKER_H */
