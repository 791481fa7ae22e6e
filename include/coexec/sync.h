/*
 * coexec/sync.h: ULT-aware mutex, condition variable, reader-writer lock,
 * barrier, and the xstream barrier.
 *
 * A ULT that must wait parks (its stream runs other units meanwhile); an
 * external thread sleeps in the kernel; tasklets may only use the calls
 * that never wait (trylock) and get COEXEC_ECONTEXT from the others. All of
 * them queue their waiters first-come first-served on one wait-list
 * mechanism whose nodes live on the waiter's own stack, so waiting never
 * allocates.
 *
 * Fairness: a mutex released while others wait wakes the oldest waiter to
 * compete with newcomers (a hot mutex then costs no park/wake per
 * hand-over); a woken waiter that loses keeps its place at the front, and
 * an unlock that finds the oldest waiter queued for over 200 microseconds
 * hands the mutex to it directly (newcomers queue meanwhile). So no waiter
 * starves under constant contention, even when the holder never yields. The reader-writer lock serves strictly in
 * arrival order.
 *
 * The objects live in caller storage, like pthread's: initialise them with
 * the _init call or the static initialiser. A call on a destroyed or never
 * initialised object returns COEXEC_EHANDLE where its header no longer
 * matches. Timeouts are relative, in nanoseconds (see coexec/time.h).
 *
 * At finalize, units waiting are released with COEXEC_ECANCELED, which
 * every call below that may wait (but coexec_xstream_barrier_wait, whose
 * waiters are OS threads) may also return; a barrier no longer counts
 * their arrivals. The objects keep working afterwards (see
 * coexec_finalize).
 *
 * Initialising an object that is live (initialised, statically or not,
 * and not destroyed), which pthreads leave undefined, works as destroy
 * followed by init: where destroy would return COEXEC_EBUSY (a unit or
 * thread waits on it, holds it, or is inside a barrier's wait) init does
 * too, and the object, its holders and its waiters are left as they were;
 * otherwise it starts afresh. Do not let other calls on the object race
 * with its init. Live means its header says so: memory that held an
 * object never destroyed counts as live.
 */
#ifndef COEXEC_SYNC_H
#define COEXEC_SYNC_H

#include <stddef.h>
#include <stdint.h>

#include "defs.h"
#include "types.h"

/* Object headers the static initialisers write (internal values). */
#define COEXEC__MAGIC_MUTEX 0x636f6d7574780001ull
#define COEXEC__MAGIC_MUTEX_REC 0x636f6d7574780002ull
#define COEXEC__MAGIC_COND 0x636f636f6e640001ull
#define COEXEC__MAGIC_RWLOCK 0x636f72776c6b0001ull

typedef struct coexec_mutex {
    uint64_t opaque_[8];
} coexec_mutex_t;

typedef struct coexec_cond {
    uint64_t opaque_[6];
} coexec_cond_t;

typedef struct coexec_rwlock {
    uint64_t opaque_[8];
} coexec_rwlock_t;

typedef struct coexec_barrier {
    uint64_t opaque_[6];
} coexec_barrier_t;

typedef struct coexec_xstream_barrier {
    uint64_t opaque_[4];
} coexec_xstream_barrier_t;

/* The kinds of mutex (coexec_mutex_init). */
typedef enum coexec_mutex_kind {
    COEXEC_MUTEX_PLAIN = 0,    /* locking it twice from one owner deadlocks:
                                  COEXEC_EDEADLK */
    COEXEC_MUTEX_RECURSIVE = 1 /* its owner may lock it again; unlocked
                                  after as many unlocks */
} coexec_mutex_kind_t;

/* A plain mutex, unlocked, as coexec_mutex_init(m, COEXEC_MUTEX_PLAIN)
 * makes it: for static or automatic storage. */
#define COEXEC_MUTEX_INITIALIZER {{COEXEC__MAGIC_MUTEX}}
/* A recursive mutex, unlocked (COEXEC_MUTEX_RECURSIVE). */
#define COEXEC_MUTEX_RECURSIVE_INITIALIZER {{COEXEC__MAGIC_MUTEX_REC}}
/* A condition variable with no waiter, as coexec_cond_init makes it. */
#define COEXEC_COND_INITIALIZER {{COEXEC__MAGIC_COND}}
/* A reader-writer lock, unlocked, as coexec_rwlock_init makes it. */
#define COEXEC_RWLOCK_INITIALIZER {{COEXEC__MAGIC_RWLOCK}}

COEXEC_BEGIN_DECLS

/* ---- mutex --------------------------------------------------------------- */

/*
 * Initialises m, unlocked; a live m is re-initialised (see above).
 * Context: any thread. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL (m NULL or an unknown kind);
 * COEXEC_EBUSY (m is live and locked or waited on).
 */
COEXEC_API COEXEC_NODISCARD int coexec_mutex_init(coexec_mutex_t *m,
                                                  coexec_mutex_kind_t kind);

/*
 * Destroys m. Context: any thread. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL; COEXEC_EHANDLE; COEXEC_EBUSY (locked).
 */
COEXEC_API COEXEC_NODISCARD int coexec_mutex_destroy(coexec_mutex_t *m);

/*
 * Locks m, waiting while another owner holds it. The owner is the calling
 * ULT, or the calling thread for an external thread.
 * Context: a ULT or an external thread. Switches: yes (a ULT, when held).
 * Returns: COEXEC_OK; COEXEC_EINVAL; COEXEC_EHANDLE; COEXEC_EDEADLK (a
 * plain mutex the caller holds); COEXEC_ECONTEXT (a tasklet, a scheduler).
 */
COEXEC_API COEXEC_NODISCARD int coexec_mutex_lock(coexec_mutex_t *m);

/*
 * coexec_mutex_lock, waiting at most timeout_ns.
 * Context and Switches: as coexec_mutex_lock.
 * Returns: as coexec_mutex_lock, plus COEXEC_ETIMEDOUT, and COEXEC_ENOMEM
 * (a ULT whose stream's timer heap could not grow; see coexec/time.h).
 */
COEXEC_API COEXEC_NODISCARD int coexec_mutex_lock_timed(coexec_mutex_t *m,
                                                        uint64_t timeout_ns);

/*
 * Locks m only if that needs no wait.
 * Context: any thread, tasklets included (the tasklet is then the owner,
 * until it unlocks). Switches: never.
 * Returns: COEXEC_OK; COEXEC_EBUSY (held, by another owner or, for a plain
 * mutex, by the caller); COEXEC_EINVAL; COEXEC_EHANDLE.
 */
COEXEC_API COEXEC_NODISCARD int coexec_mutex_trylock(coexec_mutex_t *m);

/*
 * Unlocks m; if units or threads wait, the oldest is released to take it
 * (or, once it has waited over 200 microseconds, made the owner at once).
 * Context: the owner. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL; COEXEC_EHANDLE; COEXEC_EPERM (the
 * caller does not hold m).
 */
COEXEC_API COEXEC_NODISCARD int coexec_mutex_unlock(coexec_mutex_t *m);

/* ---- condition variable ---------------------------------------------- */

/*
 * Initialises c; a live c is re-initialised (see above).
 * Context: any thread. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL; COEXEC_EBUSY (c is live and waited
 * on).
 */
COEXEC_API COEXEC_NODISCARD int coexec_cond_init(coexec_cond_t *c);

/*
 * Destroys c. Context: any thread. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL; COEXEC_EHANDLE; COEXEC_EBUSY (waiters).
 */
COEXEC_API COEXEC_NODISCARD int coexec_cond_destroy(coexec_cond_t *c);

/*
 * Atomically unlocks m (held by the caller; a recursive mutex is released
 * whatever its depth) and waits for a signal or broadcast on c; locks m
 * again, at the same depth, before returning, whatever the result. As with pthreads, a waiter may return without a signal after a
 * broadcast races with it: re-check the predicate.
 * Context: a ULT or an external thread. Switches: yes.
 * Returns: COEXEC_OK; COEXEC_EINVAL (NULL, or m is bound to c's other
 * waiters' mutex and differs); COEXEC_EHANDLE; COEXEC_EPERM (m not held);
 * COEXEC_ECONTEXT.
 */
COEXEC_API COEXEC_NODISCARD int coexec_cond_wait(coexec_cond_t *c,
                                                 coexec_mutex_t *m);

/*
 * coexec_cond_wait, waiting at most timeout_ns.
 * Context and Switches: as coexec_cond_wait.
 * Returns: as coexec_cond_wait, plus COEXEC_ETIMEDOUT (with m locked
 * again), and COEXEC_ENOMEM as coexec_mutex_lock_timed. Both return
 * COEXEC_ECANCELED at finalize, m locked again too.
 */
COEXEC_API COEXEC_NODISCARD int coexec_cond_wait_timed(coexec_cond_t *c,
                                                       coexec_mutex_t *m,
                                                       uint64_t timeout_ns);

/*
 * Releases the oldest waiter of c (signal) or all of them (broadcast);
 * nothing if none waits.
 * Context: any thread, tasklets included. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL; COEXEC_EHANDLE.
 */
COEXEC_API COEXEC_NODISCARD int coexec_cond_signal(coexec_cond_t *c);
COEXEC_API COEXEC_NODISCARD int coexec_cond_broadcast(coexec_cond_t *c);

/* ---- reader-writer lock ------------------------------------------------ */

/*
 * Initialises l; a live l is re-initialised (see above).
 * Context: any thread. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL; COEXEC_EBUSY (l is live and held or
 * waited on).
 */
COEXEC_API COEXEC_NODISCARD int coexec_rwlock_init(coexec_rwlock_t *l);

/*
 * Destroys l. Context: any thread. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL; COEXEC_EHANDLE; COEXEC_EBUSY (held).
 */
COEXEC_API COEXEC_NODISCARD int coexec_rwlock_destroy(coexec_rwlock_t *l);

/*
 * Takes l shared (rdlock) or exclusive (wrlock), waiting as needed. Waiters
 * are served in arrival order: a reader that arrives while a writer waits
 * queues behind it, so writers never starve.
 * Context: a ULT or an external thread. Switches: yes (a ULT).
 * Returns: COEXEC_OK; COEXEC_EINVAL; COEXEC_EHANDLE; COEXEC_EDEADLK
 * (either call by the writer that holds l); COEXEC_ECONTEXT.
 */
COEXEC_API COEXEC_NODISCARD int coexec_rwlock_rdlock(coexec_rwlock_t *l);
COEXEC_API COEXEC_NODISCARD int coexec_rwlock_wrlock(coexec_rwlock_t *l);

/*
 * rdlock and wrlock, waiting at most timeout_ns.
 * Context and Switches: as coexec_rwlock_rdlock and coexec_rwlock_wrlock.
 * Returns: as they do, plus COEXEC_ETIMEDOUT, and COEXEC_ENOMEM as
 * coexec_mutex_lock_timed.
 */
COEXEC_API COEXEC_NODISCARD int
coexec_rwlock_rdlock_timed(coexec_rwlock_t *l, uint64_t timeout_ns);
COEXEC_API COEXEC_NODISCARD int
coexec_rwlock_wrlock_timed(coexec_rwlock_t *l, uint64_t timeout_ns);

/*
 * Take l only if that needs no wait.
 * Context: any thread. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EBUSY (also for the writer that holds l);
 * COEXEC_EINVAL; COEXEC_EHANDLE.
 */
COEXEC_API COEXEC_NODISCARD int coexec_rwlock_tryrdlock(coexec_rwlock_t *l);
COEXEC_API COEXEC_NODISCARD int coexec_rwlock_trywrlock(coexec_rwlock_t *l);

/*
 * Releases the caller's hold of l (shared or exclusive) and hands it to the
 * waiters that can now go.
 * Context: a holder. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL; COEXEC_EHANDLE; COEXEC_EPERM (l is not
 * held, or write-held by another owner).
 */
COEXEC_API COEXEC_NODISCARD int coexec_rwlock_unlock(coexec_rwlock_t *l);

/* ---- barrier ------------------------------------------------------------ */

/*
 * Initialises b for groups of n waiters; a live b is re-initialised (see
 * above).
 * Context: any thread. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL (b NULL or n == 0); COEXEC_EBUSY (b is
 * live and waited on).
 */
COEXEC_API COEXEC_NODISCARD int coexec_barrier_init(coexec_barrier_t *b,
                                                    unsigned n);

/*
 * Destroys b. Context: any thread. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL; COEXEC_EHANDLE; COEXEC_EBUSY (waiters).
 */
COEXEC_API COEXEC_NODISCARD int coexec_barrier_destroy(coexec_barrier_t *b);

/*
 * Waits until n callers have arrived, then releases them all and starts
 * the next generation. *serial (if not NULL) is 1 for exactly one caller
 * of each generation (the last to arrive), 0 for the others.
 * Context: a ULT or an external thread. Switches: yes (a ULT).
 * Returns: COEXEC_OK; COEXEC_EINVAL; COEXEC_EHANDLE; COEXEC_ECONTEXT;
 * COEXEC_ECANCELED (finalize: the caller's arrival is taken back).
 */
COEXEC_API COEXEC_NODISCARD int coexec_barrier_wait(coexec_barrier_t *b,
                                                    int *serial);

/* ---- xstream barrier --------------------------------------------------- */

/*
 * Initialises b for n OS threads (typically one ULT on each of n streams,
 * or streams' schedulers and external threads). Unlike coexec_barrier_t,
 * waiting blocks the whole OS thread: the caller's stream runs nothing else
 * until the barrier opens (it spins briefly, then sleeps in the kernel).
 * A live b is re-initialised (see above).
 * Context: any thread. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL (b NULL or n == 0); COEXEC_EBUSY (b is
 * live and a thread is inside coexec_xstream_barrier_wait: retry).
 */
COEXEC_API COEXEC_NODISCARD int
coexec_xstream_barrier_init(coexec_xstream_barrier_t *b, unsigned n);

/*
 * Destroys b. Context: any thread. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL; COEXEC_EHANDLE; COEXEC_EBUSY (a thread
 * is inside coexec_xstream_barrier_wait, including one the last arrival
 * released that has not returned yet: retry).
 */
COEXEC_API COEXEC_NODISCARD int
coexec_xstream_barrier_destroy(coexec_xstream_barrier_t *b);

/*
 * Blocks the calling OS thread until n threads have arrived.
 * Context: any thread (a tasklet blocks its stream too). Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL; COEXEC_EHANDLE.
 */
COEXEC_API COEXEC_NODISCARD int
coexec_xstream_barrier_wait(coexec_xstream_barrier_t *b);

COEXEC_END_DECLS

#endif /* COEXEC_SYNC_H */
