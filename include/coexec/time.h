/*
 * coexec/time.h: the runtime's clock, and sleeping.
 *
 * Every timeout in the API is a relative duration in nanoseconds on this
 * monotonic clock; a timed wait that runs out returns COEXEC_ETIMEDOUT. A
 * ULT's timed wait puts a timer in its stream's heap: when the heap cannot
 * grow, the wait returns COEXEC_ENOMEM at once.
 * A sleeping ULT is parked on its stream's timer heap: the stream keeps
 * running other units meanwhile, and a stream whose units all sleep parks
 * its OS thread until the earliest deadline (it burns no CPU). The stream
 * fires its timers at its event checks and when idle; when it is too busy
 * (a long unit, or its thread off the CPU), an idle stream or the service
 * stream fires them about 200 us late, and the woken ULT, unless pinned,
 * may then run on whichever stream takes it first.
 */
#ifndef COEXEC_TIME_H
#define COEXEC_TIME_H

#include <stdint.h>

#include "defs.h"

COEXEC_BEGIN_DECLS

/*
 * Nanoseconds on the monotonic clock (CLOCK_MONOTONIC) from an arbitrary
 * origin; the clock of every deadline in the API.
 * Context: any thread, before or after coexec_init. Switches: never.
 */
COEXEC_API uint64_t coexec_now_ns(void);

/*
 * Suspends the caller for at least ns nanoseconds. A ULT is parked on its
 * stream's timers and never returns early, even if its waker is woken or
 * coexec_thread_resume is called on it meanwhile, except at finalize
 * (COEXEC_ECANCELED, see coexec_finalize); an external thread sleeps in
 * the kernel. ns == 0 yields once (a ULT) or returns at once.
 * Context: a ULT or an external thread, which may sleep without the
 * runtime (before coexec_init or after coexec_finalize). Switches: yes (a
 * ULT).
 * Returns: COEXEC_OK; COEXEC_ECANCELED (a ULT, at finalize);
 * COEXEC_ECONTEXT (a tasklet or a scheduler loop); COEXEC_ENOMEM (a ULT:
 * its stream's timer heap could not grow).
 */
COEXEC_API COEXEC_NODISCARD int coexec_sleep_ns(uint64_t ns);

/*
 * Suspends the caller until coexec_now_ns() >= deadline_ns; returns at once
 * if that time has passed.
 * Context, switches and errors: as coexec_sleep_ns.
 */
COEXEC_API COEXEC_NODISCARD int coexec_sleep_until(uint64_t deadline_ns);

COEXEC_END_DECLS

#endif /* COEXEC_TIME_H */
