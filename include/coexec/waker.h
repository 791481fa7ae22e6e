/*
 * coexec/waker.h: wakers, the one mechanism that makes a parked unit
 * runnable again.
 *
 * A waker names one unit and the generation it had. coexec_waker_wake() is
 * idempotent, lock-free and callable from any thread. It works like a
 * permit: waking a parked unit makes it runnable; waking a unit that is
 * runnable already (running, or queued and not yet running) records one
 * wake in the unit's state word, however many arrive, so the unit's next
 * park returns at once and the one after blocks. So no wake is ever lost,
 * and waits built on wakers re-check their condition after a park. A
 * waker whose unit has finished and been recycled is recognised by its
 * generation and does nothing.
 */
#ifndef COEXEC_WAKER_H
#define COEXEC_WAKER_H

#include "defs.h"
#include "types.h"

COEXEC_BEGIN_DECLS

/*
 * A waker for the calling ULT.
 * Context: a ULT. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL (out NULL); COEXEC_ECONTEXT;
 * COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int coexec_self_waker(coexec_waker_t *out);

/*
 * A waker for the tasklet being polled with cx. Store it, return
 * COEXEC_PENDING, and the tasklet is polled again after a wake.
 * Context: the tasklet's function. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL (cx or out NULL).
 */
COEXEC_API COEXEC_NODISCARD int coexec_poll_waker(coexec_poll_t *cx,
                                                  coexec_waker_t *out);

/*
 * Parks the calling ULT until its waker is woken (at once if a wake is
 * already recorded).
 * Context: a ULT. Switches: yes.
 * Returns: COEXEC_OK; COEXEC_ECONTEXT; COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int coexec_park(void);

/*
 * Makes w's unit runnable: queued in its home pool when parked, recorded
 * (once) when it is runnable already. A stale waker does nothing and
 * returns COEXEC_OK.
 * Context: any thread. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL (null waker); COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int coexec_waker_wake(coexec_waker_t w);

COEXEC_END_DECLS

#endif /* COEXEC_WAKER_H */
