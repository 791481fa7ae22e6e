/*
 * coexec/eventual.h: eventuals and futures, values that units wait for.
 *
 * An eventual is a single-assignment value of up to `size` bytes that any
 * number of waiters wait for; a future is complete when all of its N
 * compartments are set, and may run a callback when it completes. Both
 * live in caller storage (embed them in your own structures; initialising
 * one allocates only for a value larger than 16 bytes or a future's
 * compartment array) and are waited on in three ways:
 *
 *  - a ULT blocks (parks; its stream runs other units meanwhile);
 *  - an external thread blocks in the kernel (futex);
 *  - a tasklet polls: the _poll call returns COEXEC_READY, or registers the
 *    tasklet and returns COEXEC_PENDING, which the tasklet's function
 *    returns in turn; it is polled again once the object is set.
 *
 * Use after destroy, or of memory never initialised, is reported as
 * COEXEC_EHANDLE where the object's header no longer matches.
 *
 * At finalize, units waiting (or tasklets registered) are released with
 * COEXEC_ECANCELED, which every wait and poll call below may also return
 * (see coexec_finalize); the objects keep working afterwards.
 *
 * Initialising an object that is live (initialised and not destroyed) is
 * allowed and works as destroy followed by init: while units or threads
 * wait on it (or, for a future, while its completing set runs the
 * callback) it fails with COEXEC_EBUSY and the object and its waiters are
 * left as they were; otherwise the old value buffer or compartment array
 * is released and the object starts afresh, unset. Do not let other
 * calls on the object race with its init. Live means its header says so:
 * memory that held an object never destroyed counts as live.
 */
#ifndef COEXEC_EVENTUAL_H
#define COEXEC_EVENTUAL_H

#include <stddef.h>
#include <stdint.h>

#include "defs.h"
#include "types.h"

/* The object header COEXEC_EVENTUAL_INITIALIZER writes (an internal
 * value). */
#define COEXEC__MAGIC_EVENTUAL 0x636f6576656e0001ull

/* An eventual. Initialise with coexec_eventual_init, or, for a pure event
 * in static or automatic storage, with COEXEC_EVENTUAL_INITIALIZER. */
typedef struct coexec_eventual {
    uint64_t opaque_[10];
} coexec_eventual_t;

/* An unset eventual of no value (a pure event), as
 * coexec_eventual_init(ev, 0) makes it. It needs no destroy: it holds no
 * memory (coexec_eventual_destroy is allowed, as for any eventual). */
#define COEXEC_EVENTUAL_INITIALIZER {{COEXEC__MAGIC_EVENTUAL}}

/* A future of N compartments. Initialise with coexec_future_init. */
typedef struct coexec_future {
    uint64_t opaque_[10];
} coexec_future_t;

/* Called once, by the set that completes the future, with the N values in
 * the order they were set, before any waiter is released. */
typedef void (*coexec_future_cb_t)(void **values, size_t n, void *arg);

COEXEC_BEGIN_DECLS

/* ---- eventuals ---------------------------------------------------------- */

/*
 * Initialises ev, unset, for values of up to size bytes (0: a pure event);
 * a live ev is re-initialised (see above).
 * Context: any thread. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL (ev NULL); COEXEC_ENOMEM (a live ev is
 * left as it was); COEXEC_EBUSY (ev is live and waited on).
 */
COEXEC_API COEXEC_NODISCARD int coexec_eventual_init(coexec_eventual_t *ev,
                                                     size_t size);

/*
 * Destroys ev and releases its value buffer. Later calls on it return
 * COEXEC_EHANDLE.
 * Context: any thread. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL (NULL); COEXEC_EHANDLE; COEXEC_EBUSY
 * (units or threads are waiting on it).
 */
COEXEC_API COEXEC_NODISCARD int coexec_eventual_destroy(coexec_eventual_t *ev);

/*
 * Stores size bytes from value (value may be NULL when size is 0) and
 * releases every waiter.
 * Context: any thread, tasklets included. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL (NULL ev, size above the eventual's,
 * or value NULL with size > 0); COEXEC_EHANDLE; COEXEC_ESTATE (already
 * set: reset it first).
 */
COEXEC_API COEXEC_NODISCARD int
coexec_eventual_set(coexec_eventual_t *ev, const void *value, size_t size);

/*
 * Waits until ev is set; *value (if value is not NULL) then points to the
 * stored bytes, which stay valid until ev is reset or destroyed.
 * Context: a ULT or an external thread. Switches: yes (a ULT, when unset).
 * Returns: COEXEC_OK; COEXEC_EINVAL; COEXEC_EHANDLE; COEXEC_ECONTEXT (a
 * tasklet: use coexec_eventual_poll; or a scheduler loop).
 */
COEXEC_API COEXEC_NODISCARD int coexec_eventual_wait(coexec_eventual_t *ev,
                                                     void **value);

/*
 * coexec_eventual_wait with a timeout of timeout_ns nanoseconds.
 * Context and Switches: as coexec_eventual_wait.
 * Returns: as coexec_eventual_wait, and COEXEC_ETIMEDOUT; COEXEC_ENOMEM (a
 * ULT whose stream's timer heap could not grow; see coexec/time.h).
 */
COEXEC_API COEXEC_NODISCARD int
coexec_eventual_wait_timed(coexec_eventual_t *ev, uint64_t timeout_ns,
                           void **value);

/*
 * Tells whether ev is set without waiting: *is_set 1 (and *value as for
 * wait, if value is not NULL) or 0.
 * Context: any thread. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL; COEXEC_EHANDLE.
 */
COEXEC_API COEXEC_NODISCARD int
coexec_eventual_test(coexec_eventual_t *ev, void **value, int *is_set);

/*
 * The tasklet form of wait: COEXEC_READY (0) with *value as for wait when
 * ev is set; else registers the tasklet being polled and returns
 * COEXEC_PENDING, and the tasklet is polled again once ev is set.
 * Context: a tasklet's function, with its cx. Switches: never.
 * Returns: COEXEC_READY; COEXEC_PENDING; COEXEC_EINVAL (NULL ev or cx);
 * COEXEC_EHANDLE.
 */
COEXEC_API COEXEC_NODISCARD int
coexec_eventual_poll(coexec_eventual_t *ev, coexec_poll_t *cx, void **value);

/*
 * Makes ev unset again, for the next round of set and wait. Waiters
 * released by the previous set are not affected; pointers they hold to
 * the value see the next set's bytes.
 * Context: any thread. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL; COEXEC_EHANDLE.
 */
COEXEC_API COEXEC_NODISCARD int coexec_eventual_reset(coexec_eventual_t *ev);

/* ---- futures ------------------------------------------------------------ */

/*
 * Initialises f with n empty compartments; cb (may be NULL) runs once, when
 * the n-th value is set, with arg. A live f is re-initialised (see above).
 * Context: any thread. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL (f NULL or n == 0); COEXEC_ENOMEM (a
 * live f is left as it was); COEXEC_EBUSY (f is live and waited on, or its
 * callback runs).
 */
COEXEC_API COEXEC_NODISCARD int coexec_future_init(coexec_future_t *f,
                                                   size_t n,
                                                   coexec_future_cb_t cb,
                                                   void *arg);

/*
 * Destroys f. Context: any thread. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL; COEXEC_EHANDLE; COEXEC_EAGAIN (the
 * set that completed f still runs the callback: call again once it has
 * returned); COEXEC_EBUSY (waiters).
 */
COEXEC_API COEXEC_NODISCARD int coexec_future_destroy(coexec_future_t *f);

/*
 * Stores value in the next empty compartment. The set that fills the last
 * one runs the callback, then releases every waiter.
 * Context: any thread, tasklets included. Switches: never (the callback
 * runs on the caller).
 * Returns: COEXEC_OK; COEXEC_EINVAL; COEXEC_EHANDLE; COEXEC_ESTATE (all n
 * compartments are already set).
 */
COEXEC_API COEXEC_NODISCARD int coexec_future_set(coexec_future_t *f,
                                                  void *value);

/*
 * Waits until all compartments are set.
 * Context: a ULT or an external thread. Switches: yes (a ULT).
 * Returns: COEXEC_OK; COEXEC_EINVAL; COEXEC_EHANDLE; COEXEC_ECONTEXT.
 */
COEXEC_API COEXEC_NODISCARD int coexec_future_wait(coexec_future_t *f);

/*
 * coexec_future_wait, waiting at most timeout_ns.
 * Context and Switches: as coexec_future_wait.
 * Returns: as coexec_future_wait, plus COEXEC_ETIMEDOUT, and COEXEC_ENOMEM
 * as coexec_eventual_wait_timed.
 */
COEXEC_API COEXEC_NODISCARD int coexec_future_wait_timed(coexec_future_t *f,
                                                         uint64_t timeout_ns);

/*
 * *is_ready: 1 if all compartments are set, else 0.
 * Context: any thread. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL; COEXEC_EHANDLE.
 */
COEXEC_API COEXEC_NODISCARD int coexec_future_test(coexec_future_t *f,
                                                   int *is_ready);

/*
 * The tasklet form of wait: COEXEC_READY, or COEXEC_PENDING after
 * registering the tasklet being polled.
 * Context: a tasklet's function. Switches: never.
 * Returns: COEXEC_READY; COEXEC_PENDING; COEXEC_EINVAL; COEXEC_EHANDLE.
 */
COEXEC_API COEXEC_NODISCARD int coexec_future_poll(coexec_future_t *f,
                                                   coexec_poll_t *cx);

/*
 * *value = the value of compartment i (in set order), or NULL if not set.
 * Context: any thread. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL (NULL, or i >= n); COEXEC_EHANDLE.
 */
COEXEC_API COEXEC_NODISCARD int coexec_future_get(coexec_future_t *f,
                                                  size_t i, void **value);

/*
 * Empties every compartment, for the next round; the callback will run
 * again on the next completion.
 * Context: any thread. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL; COEXEC_EHANDLE; COEXEC_EAGAIN (the
 * set that completed f still runs the callback: call again once it has
 * returned, as it then releases the waiters); COEXEC_EBUSY (f is not
 * complete and a waiter is registered).
 */
COEXEC_API COEXEC_NODISCARD int coexec_future_reset(coexec_future_t *f);

/*
 * when_all: waits until every one of the n futures is complete.
 * Context: a ULT or an external thread. Switches: yes (a ULT).
 * Returns: COEXEC_OK; COEXEC_EINVAL (fs NULL, n == 0 or an entry NULL);
 * COEXEC_EHANDLE (the first bad future); COEXEC_ECONTEXT.
 */
COEXEC_API COEXEC_NODISCARD int
coexec_future_wait_all(coexec_future_t *const *fs, size_t n);

/*
 * when_all for tasklets: COEXEC_READY when all n futures are complete,
 * else COEXEC_PENDING with the tasklet registered on one that is not.
 * Context: a tasklet's function. Switches: never.
 * Returns: COEXEC_READY; COEXEC_PENDING; COEXEC_EINVAL; COEXEC_EHANDLE.
 */
COEXEC_API COEXEC_NODISCARD int
coexec_future_poll_all(coexec_future_t *const *fs, size_t n,
                       coexec_poll_t *cx);

COEXEC_END_DECLS

#endif /* COEXEC_EVENTUAL_H */
