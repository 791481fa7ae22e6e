/*
 * coexec/sched.h: schedulers.
 *
 * BASIC takes from its pools in order (the first non-empty pool wins, so
 * pool 0 has the highest priority) and spins when they are all empty.
 * BASIC_WAIT does the same, but when every pool stays empty for the spin
 * budget it parks on a futex; a push into any of its pools, from any thread,
 * wakes it, so an idle stream burns no CPU.
 *
 * With stealing on, a scheduler whose pools are empty takes the oldest unit
 * from the default pools of the other streams (the default setup turns it
 * on). Every event_freq iterations the scheduler checks its stream's events
 * (remote wakes, stop requests).
 */
#ifndef COEXEC_SCHED_H
#define COEXEC_SCHED_H

#include "defs.h"
#include "runtime.h"
#include "types.h"

typedef struct coexec_sched_config {
    size_t size;           /* sizeof(coexec_sched_config_t); set by _init */
    unsigned event_freq;   /* 0 = the runtime's configuration */
    int idle_spin_us;      /* BASIC_WAIT spin budget; -1 = the runtime's */
    int steal;             /* 1 = steal from other streams' default pools */
} coexec_sched_config_t;

COEXEC_BEGIN_DECLS

/*
 * Fills cfg with the defaults (runtime's event_freq and spin budget, no
 * stealing).
 * Context: any thread. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL if cfg is NULL.
 */
COEXEC_API COEXEC_NODISCARD int
coexec_sched_config_init(coexec_sched_config_t *cfg);

/*
 * Creates a scheduler of the given kind over num_pools pools (1..64), taken
 * in the order given. cfg may be NULL (defaults). A pool may serve several
 * schedulers if its access mode allows several consumers.
 * Context: any thread while the runtime runs. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL (bad kind, pools NULL, num_pools out of
 * range, out NULL); COEXEC_EHANDLE (a bad pool); COEXEC_ENOMEM;
 * COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int
coexec_sched_create(coexec_sched_kind_t kind, const coexec_pool_t *pools,
                    int num_pools, const coexec_sched_config_t *cfg,
                    coexec_sched_t *out);

/*
 * Frees a scheduler no stream uses and clears *sched. Its pools stay.
 * Context: any thread. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL; COEXEC_EHANDLE; COEXEC_EBUSY (a stream
 * runs it); COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int coexec_sched_free(coexec_sched_t *sched);

/*
 * The number of pools of sched, and the pool at index idx.
 * Context: any thread. Switches: never.
 * Returns: COEXEC_OK; COEXEC_EINVAL (NULL out, idx out of range);
 * COEXEC_EHANDLE; COEXEC_ENOTINIT.
 */
COEXEC_API COEXEC_NODISCARD int coexec_sched_get_num_pools(coexec_sched_t sched,
                                                           int *num);
COEXEC_API COEXEC_NODISCARD int coexec_sched_get_pool(coexec_sched_t sched,
                                                      int idx,
                                                      coexec_pool_t *out);

COEXEC_END_DECLS

#endif /* COEXEC_SCHED_H */
