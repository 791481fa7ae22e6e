/*
 * src/core/init.c: coexec_init and coexec_finalize.
 *
 * init: configuration (struct, then environment), affinity, the primary
 * stream adopting the calling thread, then the secondary streams of the
 * default setup. finalize runs from the primary's main ULT: it lets the
 * primary's queued units run, stops and joins every secondary stream,
 * ends the waits of the units still blocked, reclaims every record and
 * slab, and reports what the user left behind.
 *
 * Blocked units at finalize. A stopping stream with nothing left to run
 * fires its timers early (FIN_TIMERS): sleeps and timed waits end with
 * COEXEC_ECANCELED instead of holding the stop. Once only the primary runs
 * (FIN_CANCEL), every wait of a unit that would block ends with
 * COEXEC_ECANCELED, and a sweep of every descriptor wakes the parked
 * units on the primary, where they take their wait nodes off the objects
 * themselves and go on; a tasklet is unlinked and polled again. The sweep
 * repeats while it finds parked units, a few rounds at most; units still
 * parked then (a join of a unit that never ends, a suspend loop) are
 * reclaimed as before, but none is left on an object's wait list.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/global.h"
#include "core/config.h"
#include "core/process.h"
#include "base/topology.h"
#include "fj/fj.h"
#include "pool/pool.h"
#include "sched/sched.h"
#include "service/service.h"
#include "thread/thread.h"
#include "thread/tool.h"
#include "thread/unit.h"
#include "xstream/xstream.h"

/* Serialises init and finalize against each other. */
static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;

/* fork, in the child: the runtime is off; the threads that could hold
 * these locks are gone (process.c). */
void coexec__init_atfork_child(void)
{
    atom_store_rlx_u32(&coexec__g.state, RT_OFF);
    pthread_mutex_init(&init_lock, NULL);
    pthread_mutex_init(&coexec__g.lock, NULL);
}

COEXEC_API int coexec_initialized(void)
{
    return rt_on();
}

COEXEC_API coexec_caller_t coexec_self_caller(void)
{
    if (!rt_on())
        return COEXEC_CALLER_EXTERNAL;
    struct coexec_xstream_rec *xs = coexec__xs_self();
    if (!xs)
        return COEXEC_CALLER_EXTERNAL;
    struct coexec_unit_rec *u = xs->cur;
    if (!u)
        return COEXEC_CALLER_SCHED;
    return u->kind == UNIT_TASKLET ? COEXEC_CALLER_TASKLET : COEXEC_CALLER_ULT;
}

/* Sweeps of the descriptors at finalize before what stays parked is
 * abandoned. */
#define FIN_ROUNDS 8

struct fin_sweep {
    struct coexec_pool_rec *to;
    bool wake;
    unsigned woken;
};

static void fin_sweep_one(struct coexec_unit_rec *u, void *arg)
{
    struct fin_sweep *f = arg;
    if (coexec__unit_finalize_wake(u, f->to, f->wake))
        f->woken++;
}

/* Finalize, on the main ULT, once every secondary stream has stopped:
 * ends the waits of the units still blocked (see the plaque). */
static void cancel_blocked(struct coexec_xstream_rec *xs)
{
    struct coexec_pool_rec *p = xs->default_pool;
    /* Release: a unit that sees it (acquire) sees the streams joined. */
    atom_store_rel_u32(&coexec__g.fin, FIN_CANCEL);
    struct fin_sweep f = {p, true, 0};
    for (int round = 0; round < FIN_ROUNDS; round++) {
        f.woken = 0;
        coexec__cache_each_unit(fin_sweep_one, &f);
        coexec__timerheap_cancel_all(&xs->timers);
        coexec__sched_drain_events(xs);
        bool ran = pool_size(p) > 0;
        while (pool_size(p) > 0)
            IGNORE_RESULT(coexec_yield());
        if (!f.woken && !ran && xs_next_timer(xs) == UINT64_MAX)
            break;
    }
    /* Tasklets still parked (polled again into a wait) leave their lists;
     * parked ULTs can be on none: their waits do not block any more. */
    f.wake = false;
    coexec__cache_each_unit(fin_sweep_one, &f);
}

static void teardown(void)
{
    coexec__monitor_stop();
    coexec__trace_end();
    coexec__unit_names_clear();
    coexec__tool_reap();
    coexec__primary_teardown();
    coexec__fj_teardown();
    coexec__fault_handler_remove();
    coexec__sched_free_all();
    coexec__pool_free_all();
    coexec__cache_destroy_all();
}

COEXEC_API int coexec_init(const coexec_config_t *cfg_in)
{
    pthread_mutex_lock(&init_lock);
    if (atom_load_acq_u32(&coexec__g.state) != RT_OFF) {
        pthread_mutex_unlock(&init_lock);
        return COEXEC_EINIT;
    }
    int fork_rc = coexec__fork_setup();
    if (fork_rc != COEXEC_OK) {
        pthread_mutex_unlock(&init_lock);
        return fork_rc;
    }
    coexec__set_init_error("%s", "");
    coexec_config_t cfg;
    int rc = coexec_config_init(&cfg);
    if (cfg_in) {
        /* Copy only what the caller's version of the struct has. */
        size_t n = cfg_in->size && cfg_in->size < sizeof cfg ? cfg_in->size
                                                             : sizeof cfg;
        memcpy(&cfg, cfg_in, n);
        cfg.size = sizeof cfg;
    }
    uint32_t from_env = 0;
    if ((rc = coexec__config_apply_env(&cfg, &from_env)) != COEXEC_OK ||
        (rc = coexec__config_validate(&cfg, from_env)) != COEXEC_OK) {
        pthread_mutex_unlock(&init_lock);
        return rc;
    }
    coexec__g.cfg = cfg;
    atom_store_rlx_u32(&coexec__g.fin, FIN_NONE);
    coexec__g.epoch++;
    if (coexec__g.epoch == 0)
        coexec__g.epoch = 1;
    long pg = sysconf(_SC_PAGESIZE);
    size_t page = pg > 0 ? (size_t)pg : 4096;
    coexec__g.page_size = page;
    coexec__g.stack_size = (cfg.stack_size + page - 1) & ~(page - 1);
    coexec__g.guard_size = (cfg.guard_size + page - 1) & ~(page - 1);
    coexec__g.unit_data = (cfg.unit_data_size + 63) & ~(size_t)63;
    coexec__g.idle_spin_ns = (uint64_t)cfg.idle_spin_us * 1000;
    coexec__pool_bias_setup();
    memset(coexec__xsr.by_rank, 0, sizeof coexec__xsr.by_rank);
    coexec__xsr.num = 0;
    atom_store_rlx_u32(&coexec__steal.num, 0);
    atom_store_rlx_u64(&coexec__g.live_units, 0);
    atom_store_rlx_u64(&coexec__g.next_unit_id, 1);
    coexec__keys_reset();
    coexec__pollers_reset();
    coexec__fj_setup();
    if ((rc = coexec__trace_init()) != COEXEC_OK)
        coexec__warn("coexec_init: no trace (%s)", coexec_strerror(rc));

    struct coexec__local local;
    if ((rc = coexec__local_detect(&local)) != COEXEC_OK ||
        (rc = coexec__affinity_init(&local)) != COEXEC_OK ||
        (coexec__g.guard_size &&
         (rc = coexec__fault_handler_install()) != COEXEC_OK))
        goto fail;
    if (cfg.num_xstreams == COEXEC_NUM_XSTREAMS_ALL) {
        int n = coexec__affinity_ncpus();
        cfg.num_xstreams = n < 1 ? 1 : n > MAX_XSTREAMS ? MAX_XSTREAMS : n;
        coexec__g.cfg.num_xstreams = cfg.num_xstreams;
    }
    /* Records of this epoch may now be made: mark the runtime as starting so
     * internal calls work, but public calls from other threads still see
     * RT_OFF until the release store below. */
    if ((rc = coexec__primary_setup()) != COEXEC_OK)
        goto fail;
    atom_store_rel_u32(&coexec__g.state, RT_ON);
    if ((rc = coexec__monitor_start()) != COEXEC_OK)
        coexec__warn("coexec_init: no monitor thread (%s): "
                     "COEXEC_DUMP_SIGNAL and COEXEC_HANG_DUMP are off",
                     coexec_strerror(rc));
    rc = COEXEC_OK;
    for (int i = 1; i < cfg.num_xstreams; i++) {
        struct coexec_xstream_rec *xs;
        if ((rc = coexec__xstream_start(NULL, -1, &xs)) != COEXEC_OK) {
            atom_store_rel_u32(&coexec__g.state, RT_STOPPING);
            for (int r = 1; r < MAX_XSTREAMS; r++)
                if (coexec__xsr.by_rank[r])
                    coexec__xstream_stop_and_join(coexec__xsr.by_rank[r]);
            goto fail;
        }
    }
    if ((rc = coexec__service_start()) != COEXEC_OK) {
        atom_store_rel_u32(&coexec__g.state, RT_STOPPING);
        for (int r = 1; r < MAX_XSTREAMS; r++)
            if (coexec__xsr.by_rank[r])
                coexec__xstream_stop_and_join(coexec__xsr.by_rank[r]);
        goto fail;
    }
    pthread_mutex_unlock(&init_lock);
    if (cfg.print_config)
        IGNORE_RESULT(coexec_print_config(NULL));
    return COEXEC_OK;

fail:
    if (!*coexec_init_error())
        coexec__set_init_error("coexec_init: %s", coexec_strerror(rc));
    teardown();
    atom_store_rel_u32(&coexec__g.state, RT_OFF);
    pthread_mutex_unlock(&init_lock);
    return rc;
}

/* The primary's main ULT yields until the primary's pool p and inbox are
 * empty (a yield into an empty pool does not look at the inbox). */
static void run_primary_queue(struct coexec_xstream_rec *xs,
                              struct coexec_pool_rec *p)
{
    do {
        coexec__sched_drain_events(xs);
        while (pool_size(p) > 0)
            IGNORE_RESULT(coexec_yield());
    } while (xs_events_pending(xs));
}

COEXEC_API int coexec_finalize(void)
{
    if (!rt_on())
        return COEXEC_ENOTINIT;
    struct coexec_xstream_rec *xs = coexec__xs_self();
    if (!xs || !xs->is_primary || xs->cur != coexec__g.main_unit)
        return COEXEC_ECONTEXT;
    pthread_mutex_lock(&init_lock);
    if (!rt_on()) {
        pthread_mutex_unlock(&init_lock);
        return COEXEC_ENOTINIT;
    }
    /* Let the primary's queued units run first, and what was posted to it
     * (coexec_xstream_post) or woken for it through its inbox. */
    struct coexec_pool_rec *p = xs->default_pool;
    run_primary_queue(xs, p);
    /* No new service requests; queued ones are cancelled, running ones
     * finish (or are abandoned after a grace period): their waiters wake. */
    coexec__service_close();
    /* Stop the secondary streams: each finishes its pools first, then
     * ends its sleeps and timed waits rather than wait for them. */
    atom_store_rel_u32(&coexec__g.fin, FIN_TIMERS);
    for (int r = MAX_XSTREAMS - 1; r >= 1; r--) {
        struct coexec_xstream_rec *s = coexec__xsr.by_rank[r];
        if (s)
            coexec__xstream_stop_and_join(s);
    }
    /* Units that stealers moved back here, or that were woken meanwhile,
     * then every unit still blocked, here or on a stream now gone. */
    run_primary_queue(xs, p);
    cancel_blocked(xs);
    if (xs->cur->keys)
        coexec__keys_destroy(xs->cur);
    coexec__monitor_stop();
    if (coexec__g.cfg.stats)
        coexec__stats_print(stderr);
    coexec__service_stop();
    coexec__trace_end();
    atom_store_rel_u32(&coexec__g.state, RT_STOPPING);
    uint64_t live = atom_load_acq_u64(&coexec__g.live_units) +
                    (uint64_t)xs->live_units;
    int pools = coexec__pool_count_user_live();
    int scheds = coexec__sched_count_user_live();
    if (live > 0 || pools > 0 || scheds > 0)
        coexec__warn("coexec_finalize: %llu unit(s), %d pool(s) and %d "
                     "scheduler(s) were never freed (or units never "
                     "finished); their memory is reclaimed",
                     (unsigned long long)live, pools, scheds);
    teardown();
    atom_store_rlx_u32(&coexec__g.fin, FIN_NONE);
    atom_store_rel_u32(&coexec__g.state, RT_OFF);
    pthread_mutex_unlock(&init_lock);
    return COEXEC_OK;
}
