/*
 * coexec/poller.h: progress pollers, for work that completes outside the
 * runtime (a network, a device, another library's requests) and must wake
 * the units that wait for it.
 *
 * A poller is a function the built-in schedulers call: on a stream with
 * nothing to run, at every idle round, and on a busy stream once per
 * event check (every `event_freq` units run, see coexec_config_t). It
 * tests what it waits for, wakes the units whose operations completed
 * (coexec_waker_wake) and returns how many operations it still waits for.
 * While it returns more than 0, the stream that called it from its idle
 * loop does not park: it keeps polling (yielding its CPU now and then when
 * streams outnumber cores). When it returns 0 the streams park as usual,
 * so a poller with nothing pending costs no CPU. User-defined schedulers
 * call the pollers through coexec_sched_check_events and coexec_sched_idle.
 *
 * One stream at a time calls a given poller (a stream that finds it taken
 * skips it), so its function needs no lock of its own against itself, and
 * a poller limited to one stream (rank) is only ever called there (the way
 * to keep a library that must be called from one OS thread on that
 * thread). A poller's function runs on the scheduler's context: it must
 * not block or switch (calls that would, return COEXEC_ECONTEXT there),
 * and should do a bounded amount of work per call, since a busy stream
 * runs no unit meanwhile.
 *
 * Pollers are dropped at coexec_finalize: their handles then read as
 * stale (COEXEC_EHANDLE).
 */
#ifndef COEXEC_POLLER_H
#define COEXEC_POLLER_H

#include <stdint.h>

#include "defs.h"
#include "types.h"

COEXEC_BEGIN_DECLS

/* A registered poller. */
typedef struct coexec_poller {
    struct coexec_poller_rec *p; /* the runtime's record (private) */
    uint64_t gen;                /* the record's generation (private) */
} coexec_poller_t;

/* A poller's function: tests and wakes, returns the number of operations
 * it still waits for (0: none; idle streams may park). */
typedef int (*coexec_poller_fn_t)(void *arg);

/* coexec_poller_register's rank: any stream may call the poller. */
#define COEXEC_POLLER_ANY_XSTREAM (-1)

/* Pollers registered at once, at most. */
#define COEXEC_POLLER_MAX 16

/*
 * Registers fn(arg) as a poller, called by the stream of rank `rank` only,
 * or by any stream with COEXEC_POLLER_ANY_XSTREAM; the handle goes to
 * *out. It is called from the next scheduler step on.
 * Context: any thread. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL (fn or out NULL, rank below -1 or not
 * below the streams' bound of 1,024); COEXEC_EAGAIN (COEXEC_POLLER_MAX
 * pollers registered already); COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int coexec_poller_register(coexec_poller_fn_t fn,
                                                       void *arg, int rank,
                                                       coexec_poller_t *out);

/*
 * Unregisters *p and sets it to a null handle. When a stream is calling
 * the poller's function, waits until that call returns (unless the caller
 * is that very function, which may unregister its own poller): once it
 * returns, fn is never called again.
 * Context: any thread. Switches: never (the wait spins and yields the OS
 * thread).
 * Returns: COEXEC_OK; COEXEC_EINVAL (p NULL); COEXEC_EHANDLE (a null,
 * unregistered or stale handle, e.g. from before a finalize);
 * COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int coexec_poller_unregister(coexec_poller_t *p);

/*
 * Whether p is registered: COEXEC_OK if it is, COEXEC_EHANDLE if it is not
 * (null, unregistered, or dropped by a finalize); COEXEC_ENOTINIT.
 * A library that registers its poller lazily checks its handle with this.
 * Context: any thread. Switches: never.
 */
COEXEC_API COEXEC_NODISCARD int coexec_poller_check(coexec_poller_t p);

COEXEC_END_DECLS

#endif /* COEXEC_POLLER_H */
