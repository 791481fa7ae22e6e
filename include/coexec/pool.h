/*
 * coexec/pool.h: pools of ready units.
 *
 * Kinds: FIFO (oldest first) and LIFO (newest first). Whatever the kind, a
 * unit that yields is queued behind every other unit of its pool, so yield
 * is fair; stealing takes the unit the owner would take last.
 *
 * Access modes say who may push and pop: PRIV (one thread does both, with no
 * atomic read-modify-write at all), SPSC, MPSC, SPMC, MPMC. "Single" means
 * one thread for the life of the pool: the first thread that pushes (pops)
 * becomes the producer (consumer). In builds with COEXEC_CHECKS (Debug), a
 * push or pop from a thread the mode forbids returns COEXEC_EACCESS and
 * leaves the pool unchanged; without checks it is undefined.
 */
#ifndef COEXEC_POOL_H
#define COEXEC_POOL_H

#include <stddef.h>

#include "defs.h"
#include "types.h"

typedef enum coexec_pool_kind {
    COEXEC_POOL_FIFO = 0,
    COEXEC_POOL_LIFO = 1
} coexec_pool_kind_t;

typedef enum coexec_pool_access {
    COEXEC_ACCESS_PRIV = 0,
    COEXEC_ACCESS_SPSC = 1,
    COEXEC_ACCESS_MPSC = 2,
    COEXEC_ACCESS_SPMC = 3,
    COEXEC_ACCESS_MPMC = 4
} coexec_pool_access_t;

COEXEC_BEGIN_DECLS

/*
 * Creates an empty pool.
 * Context: any thread while the runtime runs. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL (bad kind or access, out NULL);
 * COEXEC_ENOMEM; COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int coexec_pool_create(coexec_pool_kind_t kind,
                                                   coexec_pool_access_t access,
                                                   coexec_pool_t *out);

/*
 * Frees an empty pool that no scheduler uses and clears *pool.
 * Context: any thread. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL (NULL); COEXEC_EHANDLE; COEXEC_EBUSY
 * (units queued, or a scheduler uses it); COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int coexec_pool_free(coexec_pool_t *pool);

/*
 * Queues a ready unit that belongs to no pool (one just popped, or one
 * created into no pool) into pool; it becomes the unit's home pool.
 * Context: any thread the access mode allows. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EHANDLE (bad pool or unit); COEXEC_ESTATE (the
 * unit is queued, running, parked or finished); COEXEC_EACCESS;
 * COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int coexec_pool_push(coexec_pool_t pool,
                                                 coexec_unit_t unit);

/*
 * Takes the next unit out of pool. The unit is then in no pool: the caller
 * owns it until it pushes it into a pool again. *out is the null handle
 * when the pool is empty.
 * Context: any thread the access mode allows. Switches: never.
 * Returns: COEXEC_OK (also when empty); COEXEC_EINVAL; COEXEC_EHANDLE;
 * COEXEC_EACCESS; COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int coexec_pool_pop(coexec_pool_t pool,
                                                coexec_unit_t *out);

/*
 * The number of units queued in pool (a snapshot when others push or pop).
 * Context: any thread. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL; COEXEC_EHANDLE; COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int coexec_pool_get_size(coexec_pool_t pool,
                                                     size_t *size);

/*
 * The kind and access mode pool was created with (either pointer may be
 * NULL).
 * Context: any thread. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EHANDLE; COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int
coexec_pool_get_info(coexec_pool_t pool, coexec_pool_kind_t *kind,
                     coexec_pool_access_t *access);

COEXEC_END_DECLS

#endif /* COEXEC_POOL_H */
