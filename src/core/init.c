/*
 * src/core/init.c: coexec_init and coexec_finalize.
 *
 * init: configuration (struct, then environment), affinity, the primary
 * stream adopting the calling thread, then the secondary streams of the
 * default setup. finalize runs from the primary's main ULT: it lets the
 * primary's queued units run, stops and joins every secondary stream,
 * reclaims every record and slab, and reports what the user left behind.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "core/internal.h"
#include "core/process.h"
#include "service/service.h"

struct coexec__global coexec__g = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
};

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

void coexec__warn(const char *fmt, ...)
{
    if (coexec__g.cfg.quiet)
        return;
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    fprintf(stderr, "coexec: warning: %s\n", buf);
}

static __thread char thread_token_;

void *coexec__thread_token(void)
{
    return &thread_token_;
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

static void teardown(void)
{
    coexec__primary_teardown();
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
    if ((rc = coexec__config_apply_env(&cfg)) != COEXEC_OK ||
        (rc = coexec__config_validate(&cfg)) != COEXEC_OK) {
        pthread_mutex_unlock(&init_lock);
        return rc;
    }
    coexec__g.cfg = cfg;
    coexec__g.epoch++;
    if (coexec__g.epoch == 0)
        coexec__g.epoch = 1;
    coexec__g.stack_size = (cfg.stack_size + 4095) & ~(size_t)4095;
    coexec__g.idle_spin_ns = (uint64_t)cfg.idle_spin_us * 1000;
    memset(coexec__g.xs_by_rank, 0, sizeof coexec__g.xs_by_rank);
    coexec__g.num_xs = 0;
    atom_store_rlx_u32(&coexec__g.num_steal_pools, 0);
    atom_store_rlx_u64(&coexec__g.live_units, 0);
    atom_store_rlx_u64(&coexec__g.next_unit_id, 1);
    coexec__keys_reset();

    if ((rc = coexec__affinity_init()) != COEXEC_OK)
        goto fail;
    /* Records of this epoch may now be made: mark the runtime as starting so
     * internal calls work, but public calls from other threads still see
     * RT_OFF until the release store below. */
    if ((rc = coexec__primary_setup()) != COEXEC_OK)
        goto fail;
    atom_store_rel_u32(&coexec__g.state, RT_ON);
    for (int i = 1; i < cfg.num_xstreams; i++) {
        struct coexec_xstream_rec *xs;
        if ((rc = coexec__xstream_start(NULL, -1, &xs)) != COEXEC_OK) {
            atom_store_rel_u32(&coexec__g.state, RT_STOPPING);
            for (int r = 1; r < MAX_XSTREAMS; r++)
                if (coexec__g.xs_by_rank[r])
                    coexec__xstream_stop_and_join(coexec__g.xs_by_rank[r]);
            goto fail;
        }
    }
    if ((rc = coexec__service_start()) != COEXEC_OK) {
        atom_store_rel_u32(&coexec__g.state, RT_STOPPING);
        for (int r = 1; r < MAX_XSTREAMS; r++)
            if (coexec__g.xs_by_rank[r])
                coexec__xstream_stop_and_join(coexec__g.xs_by_rank[r]);
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
    /* Let the primary's queued units run first. */
    struct coexec_pool_rec *p = xs->default_pool;
    while (pool_size(p) > 0)
        IGNORE_RESULT(coexec_yield());
    /* No new service requests; queued ones are cancelled, running ones
     * finish (or are abandoned after a grace period): their waiters wake. */
    coexec__service_close();
    /* Stop the secondary streams: each finishes its pools first. */
    for (int r = MAX_XSTREAMS - 1; r >= 1; r--) {
        struct coexec_xstream_rec *s = coexec__g.xs_by_rank[r];
        if (s)
            coexec__xstream_stop_and_join(s);
    }
    /* Units that stealers moved back here, or that were woken meanwhile,
     * and units sleeping on the primary's timers. */
    for (;;) {
        while (pool_size(p) > 0)
            IGNORE_RESULT(coexec_yield());
        uint64_t next = xs_next_timer(xs), now = coexec_now_ns();
        if (next == UINT64_MAX)
            break;
        if (next <= now)
            coexec__timers_run(xs, now); /* due: fire them here */
        else
            IGNORE_RESULT(coexec_sleep_until(next));
    }
    if (xs->cur->keys)
        coexec__keys_destroy(xs->cur);
    coexec__service_stop();
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
    atom_store_rel_u32(&coexec__g.state, RT_OFF);
    pthread_mutex_unlock(&init_lock);
    return COEXEC_OK;
}
