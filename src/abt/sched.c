/*
 * src/abt/sched.c: schedulers (ABT_sched_*), scheduler configurations, and
 * the calls a user-defined scheduler's loop makes (ABT_xstream_run_unit,
 * ABT_xstream_check_events).
 *
 * Predefined schedulers map onto coexec's kinds: DEFAULT, BASIC and
 * BASIC_WAIT onto BASIC_WAIT (a stream with nothing to run parks instead of
 * spinning), PRIO onto PRIO, RANDWS onto RANDWS; none steals from streams
 * it was not given pools of. A user-defined scheduler (ABT_sched_def) is a
 * coexec user scheduler whose run function calls the program's.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "abt_internal.h"

/* ---- configuration --------------------------------------------------------- */

struct ABT_sched_config_opaque {
    struct abtx_kv kv;
};

ABT_sched_config_var ABT_sched_config_var_end = {.idx = -1,
                                                 .type = ABT_SCHED_CONFIG_INT};
ABT_sched_config_var ABT_sched_basic_freq = {.idx = -2,
                                             .type = ABT_SCHED_CONFIG_INT};
ABT_sched_config_var ABT_sched_config_access = {.idx = -3,
                                                .type = ABT_SCHED_CONFIG_INT};
ABT_sched_config_var ABT_sched_config_automatic = {
    .idx = -4, .type = ABT_SCHED_CONFIG_INT};

int ABT_sched_config_set(ABT_sched_config config, int idx,
                         ABT_sched_config_type type, const void *val)
{
    if (!config)
        return ABT_ERR_INV_SCHED_CONFIG;
    return abtx_kv_set(&config->kv, idx, (int)type, val);
}

int ABT_sched_config_get(ABT_sched_config config, int idx,
                         ABT_sched_config_type *p_type, void *val)
{
    if (!config)
        return ABT_ERR_INV_SCHED_CONFIG;
    int type;
    int rc = abtx_kv_get(&config->kv, idx, &type, val);
    if (!rc && p_type)
        *p_type = (ABT_sched_config_type)type;
    return rc;
}

int ABT_sched_config_create(ABT_sched_config *config, ...)
{
    if (!config)
        return ABT_ERR_INV_ARG;
    ABT_sched_config c = calloc(1, sizeof(*c));
    if (!c)
        return ABT_ERR_MEM;
    va_list ap;
    va_start(ap, config);
    int rc = ABT_SUCCESS;
    for (;;) {
        ABT_sched_config_var var = va_arg(ap, ABT_sched_config_var);
        if (var.idx == ABT_sched_config_var_end.idx)
            break;
        if (var.type == ABT_SCHED_CONFIG_INT) {
            int v = va_arg(ap, int);
            rc = ABT_sched_config_set(c, var.idx, var.type, &v);
        } else if (var.type == ABT_SCHED_CONFIG_DOUBLE) {
            double v = va_arg(ap, double);
            rc = ABT_sched_config_set(c, var.idx, var.type, &v);
        } else if (var.type == ABT_SCHED_CONFIG_PTR) {
            void *v = va_arg(ap, void *);
            rc = ABT_sched_config_set(c, var.idx, var.type, &v);
        } else {
            rc = ABT_ERR_INV_ARG;
        }
        if (rc)
            break;
    }
    va_end(ap);
    if (rc) {
        free(c);
        *config = ABT_SCHED_CONFIG_NULL;
        return rc;
    }
    *config = abtx_live_new(c, ABTX_L_SCHED_CONFIG);
    return *config ? ABT_SUCCESS : ABT_ERR_MEM;
}

int ABT_sched_config_read(ABT_sched_config config, int num_vars, ...)
{
    if (!config)
        return ABT_ERR_INV_SCHED_CONFIG;
    va_list ap;
    va_start(ap, num_vars);
    for (int i = 0; i < num_vars; i++) {
        void *p = va_arg(ap, void *);
        if (p)
            (void)ABT_sched_config_get(config, i, NULL, p);
    }
    va_end(ap);
    return ABT_SUCCESS;
}

int ABT_sched_config_free(ABT_sched_config *config)
{
    return abtx_live_free(config, ABTX_L_SCHED_CONFIG)
               ? ABT_SUCCESS
               : ABT_ERR_INV_SCHED_CONFIG;
}

int abtx_sched_config_int(ABT_sched_config c, int idx, int dflt)
{
    int v = dflt;
    if (c && ABT_sched_config_get(c, idx, NULL, &v) == ABT_SUCCESS)
        return v;
    return dflt;
}

/* ---- registry ----------------------------------------------------------------- */

/* Automatic schedulers stacked in a pool, which Argobots frees as they
 * finish: freed here at the next prune after coexec has let go of them.
 * The records stay in the registry until ABT_finalize, as every
 * scheduler's does. */
static pthread_mutex_t stacked_lock = PTHREAD_MUTEX_INITIALIZER;
static ABT_sched stacked_head;

void abtx_sched_stacked(ABT_sched s)
{
    if (!s->automatic || s->borrowed)
        return;
    pthread_mutex_lock(&stacked_lock);
    if (!s->listed) {
        s->listed = true;
        s->stacked_next = stacked_head;
        stacked_head = s;
    }
    pthread_mutex_unlock(&stacked_lock);
}

void abtx_sched_prune_stacked(void)
{
    pthread_mutex_lock(&stacked_lock);
    ABT_sched l = stacked_head, keep = NULL, *tail = &keep, drop = NULL;
    stacked_head = NULL;
    pthread_mutex_unlock(&stacked_lock);
    if (!l)
        return;
    /* Outside the lock: a release may free automatic pools. A scheduler
     * freed by the program, or made a stream's main one, leaves the list;
     * one coexec still has (EBUSY) stays. Each stays `listed` until the
     * lock is held again, so that nobody links it meanwhile. */
    while (l) {
        ABT_sched next = l->stacked_next;
        if (abtx_sched(l) && abtx_sched_is_stacked(l) &&
            abtx_sched_release(l) != 0) {
            *tail = l;
            tail = &l->stacked_next;
        } else {
            l->stacked_next = drop;
            drop = l;
        }
        l = next;
    }
    pthread_mutex_lock(&stacked_lock);
    *tail = stacked_head;
    stacked_head = keep;
    for (; drop; drop = drop->stacked_next)
        drop->listed = false;
    pthread_mutex_unlock(&stacked_lock);
}

/* ABT_finalize: the records go with the registry. */
void abtx_sched_stacked_forget(void)
{
    pthread_mutex_lock(&stacked_lock);
    stacked_head = NULL;
    pthread_mutex_unlock(&stacked_lock);
}

ABT_sched abtx_sched_wrap(coexec_sched_t cs, ABT_sched_predef predef,
                          int num_pools, const ABT_pool *pools, bool automatic,
                          bool borrowed)
{
    abtx_sched_prune_stacked();
    ABT_sched s = calloc(1, sizeof(*s));
    ABT_pool *ps = calloc(num_pools > 0 ? num_pools : 1, sizeof(*ps));
    if (!s || !ps) {
        free(s);
        free(ps);
        return NULL;
    }
    s->magic = ABTX_SCHED;
    s->ult.magic = ABTX_THREAD; /* its unit's record, once stacked */
    s->ult.is_ult = 1;
    s->cs = cs;
    s->predef = predef;
    s->automatic = automatic;
    s->borrowed = borrowed;
    s->num_pools = num_pools;
    s->pools = ps;
    for (int i = 0; i < num_pools; i++) {
        ps[i] = pools[i];
        atomic_fetch_add(&ps[i]->num_scheds, 1);
    }
    pthread_mutex_lock(&abtx_lock);
    s->next = abtx_g.scheds;
    abtx_g.scheds = s;
    pthread_mutex_unlock(&abtx_lock);
    return s;
}

ABT_sched abtx_sched_find(coexec_sched_t cs)
{
    ABT_sched s;
    pthread_mutex_lock(&abtx_lock);
    for (s = abtx_g.scheds; s; s = s->next)
        if (s->magic == ABTX_SCHED && s->cs.p == cs.p)
            break;
    pthread_mutex_unlock(&abtx_lock);
    return s;
}

int abtx_sched_release(ABT_sched s)
{
    if (!abtx_sched(s))
        return ABT_ERR_INV_SCHED;
    if (abtx_sched_taken(s))
        return ABT_ERR_SCHED;
    if (!s->borrowed) {
        coexec_sched_t cs = s->cs;
        int rc = coexec_sched_free(&cs);
        if (rc == COEXEC_EBUSY)
            return ABT_ERR_SCHED;
        if (rc && rc != COEXEC_ENOTINIT)
            return abtx_err(rc, ABT_ERR_INV_SCHED, ABT_ERR_SCHED);
    }
    s->magic = ABTX_FREED;
    abtx_keys_release(&s->ult);
    for (int i = 0; i < s->num_pools; i++) {
        ABT_pool p = s->pools[i];
        if (atomic_fetch_sub(&p->num_scheds, 1) == 1 && p->automatic)
            (void)abtx_pool_release(p);
    }
    return ABT_SUCCESS;
}

/* Frees the pools of pools[0..n) that pools_fill made (given NULL or
 * ABT_POOL_NULL there): a creation that failed after it leaves none. */
static void pools_unfill(int n, const ABT_pool *given, const ABT_pool *pools)
{
    for (int i = 0; i < n; i++)
        if (!given || given[i] == ABT_POOL_NULL)
            ABTX_IGNORE(abtx_pool_release(pools[i]));
}

/* Fills pools[0..n) from given (entries may be ABT_POOL_NULL, or given
 * NULL): missing ones are new automatic FIFO pools. On an error, none of
 * those it made is left. */
static int pools_fill(int n, const ABT_pool *given, ABT_pool *pools,
                      coexec_pool_t *cpools)
{
    for (int i = 0; i < n; i++) {
        ABT_pool p = given ? given[i] : ABT_POOL_NULL;
        int rc = ABT_SUCCESS;
        if (p == ABT_POOL_NULL)
            rc = ABT_pool_create_basic(ABT_POOL_FIFO, ABT_POOL_ACCESS_MPSC,
                                       ABT_TRUE, &p);
        else if (!abtx_pool(p))
            rc = ABT_ERR_INV_POOL;
        if (rc) {
            pools_unfill(i, given, pools);
            return rc;
        }
        pools[i] = p;
        cpools[i] = p->cp;
    }
    return ABT_SUCCESS;
}

int abtx_sched_new_basic(ABT_sched_predef predef, int num_pools,
                         const ABT_pool *pools, ABT_sched_config config,
                         ABT_sched *out)
{
    coexec_sched_kind_t kind;
    switch (predef) {
    case ABT_SCHED_DEFAULT:
    case ABT_SCHED_BASIC:
    case ABT_SCHED_BASIC_WAIT:
        kind = COEXEC_SCHED_BASIC_WAIT;
        break;
    case ABT_SCHED_PRIO:
        kind = COEXEC_SCHED_PRIO;
        break;
    case ABT_SCHED_RANDWS:
        kind = COEXEC_SCHED_RANDWS;
        break;
    default:
        return ABT_ERR_INV_SCHED_PREDEF;
    }
    int n = num_pools;
    if (!pools || n <= 0) {
        pools = NULL;
        n = predef == ABT_SCHED_PRIO ? ABTX_PRIO_POOLS : 1;
    }
    ABT_pool ps[n];
    coexec_pool_t cps[n];
    int rc = pools_fill(n, pools, ps, cps);
    if (rc)
        return rc;
    coexec_sched_config_t cfg;
    ABTX_IGNORE(coexec_sched_config_init(&cfg));
    cfg.steal = 0;
    if (kind == COEXEC_SCHED_PRIO)
        cfg.aging = COEXEC_SCHED_AGING_NONE; /* Argobots' PRIO is strict */
    int freq = abtx_sched_config_int(config, ABT_sched_basic_freq.idx, 0);
    if (freq > 0)
        cfg.event_freq = (unsigned)freq;
    coexec_sched_t cs;
    rc = coexec_sched_create(kind, cps, n, &cfg, &cs);
    if (rc) {
        pools_unfill(n, pools, ps);
        return abtx_err(rc, ABT_ERR_INV_POOL, ABT_ERR_SCHED);
    }
    bool automatic =
        abtx_sched_config_int(config, ABT_sched_config_automatic.idx,
                              ABT_TRUE) == ABT_TRUE;
    ABT_sched s = abtx_sched_wrap(cs, predef, n, ps, automatic, false);
    if (!s) {
        ABTX_IGNORE(coexec_sched_free(&cs));
        pools_unfill(n, pools, ps);
        return ABT_ERR_MEM;
    }
    s->config = config;
    *out = s;
    return ABT_SUCCESS;
}

int ABT_sched_create_basic(ABT_sched_predef predef, int num_pools,
                           ABT_pool *pools, ABT_sched_config config,
                           ABT_sched *newsched)
{
    if (!newsched)
        return ABT_ERR_INV_ARG;
    *newsched = ABT_SCHED_NULL;
    ABTX_CHECK_INIT();
    return abtx_sched_new_basic(predef, num_pools, pools, config, newsched);
}

/* ---- user-defined schedulers ------------------------------------------------- */

static int us_init(coexec_sched_t cs, void *arg, void **state)
{
    ABT_sched s = arg;
    s->cs = cs;
    *state = s;
    /* ABT_sched_create returns what a failed init returned, as Argobots. */
    s->init_rc = s->def.init ? s->def.init(s, s->config) : ABT_SUCCESS;
    return s->init_rc ? COEXEC_EINVAL : COEXEC_OK;
}

/* The user scheduler whose run function this OS thread is in (a
 * scheduler's context never changes OS thread), for abtx_sched_block. */
static _Thread_local ABT_sched running_sched;

static void us_run(coexec_sched_t cs, void *state)
{
    (void)cs;
    ABT_sched s = state;
    ABT_thread prev = abtx_cur_get();
    ABT_sched outer = running_sched;
    s->ult.magic = ABTX_THREAD;
    s->ult.is_ult = 1;
    s->ult.pool = s->num_pools > 0 ? s->pools[0] : NULL;
    abtx_cur_set(&s->ult);
    running_sched = s;
    s->def.run(s);
    running_sched = outer;
    abtx_cur_set(prev);
}

/* A blocking call made by a user scheduler's run function (Argobots runs
 * schedulers as ULTs, so they may wait; libcoexec's scheduler contexts
 * may not park): the call runs in a ULT of the scheduler's first pool,
 * and the scheduler goes on running its pools until that ULT is done. */
struct sched_job {
    int (*fn)(void *);
    void *arg;
    int rc;
    atomic_int done;
};

static void sched_job_main(void *a)
{
    struct sched_job *j = a;
    j->rc = j->fn(j->arg);
    atomic_store_explicit(&j->done, 1, memory_order_release); /* last */
}

bool abtx_sched_block(int (*fn)(void *), void *arg, int *rc)
{
    ABT_sched s = running_sched;
    if (!s || abtx_cur_get() != &s->ult || s->num_pools < 1)
        return false;
    struct sched_job j = {.fn = fn, .arg = arg, .rc = 0};
    atomic_init(&j.done, 0);
    if (coexec_thread_create(s->pools[0]->cp, sched_job_main, &j, NULL,
                             NULL) != COEXEC_OK) {
        *rc = COEXEC_ENOMEM;
        return true;
    }
    while (!atomic_load_explicit(&j.done, memory_order_acquire)) {
        bool ran = false;
        for (int i = 0; i < s->num_pools; i++) {
            coexec_unit_t u;
            if (coexec_sched_pop(s->cs, i, &u) == COEXEC_OK && u.p) {
                ABTX_IGNORE(coexec_sched_run_unit(s->cs, u));
                abtx_cur_set(&s->ult);
                ran = true;
                break;
            }
        }
        if (!ran)
            ABTX_IGNORE(coexec_sched_idle(s->cs));
        ABTX_IGNORE(coexec_sched_check_events(s->cs));
        abtx_cur_set(&s->ult);
    }
    *rc = j.rc;
    return true;
}

static void us_free(void *state)
{
    ABT_sched s = state;
    if (s->def.free)
        (void)s->def.free(s);
}

static coexec_pool_t us_get_migr_pool(coexec_sched_t cs, void *state)
{
    (void)cs;
    ABT_sched s = state;
    ABT_pool p = s->def.get_migr_pool(s);
    return abtx_pool(p) ? p->cp : s->pools[0]->cp;
}

static const coexec_sched_ops_t user_sched_ops = {
    .size = sizeof(coexec_sched_ops_t),
    .init = us_init,
    .run = us_run,
    .free = us_free,
};

static const coexec_sched_ops_t user_sched_ops_migr = {
    .size = sizeof(coexec_sched_ops_t),
    .init = us_init,
    .run = us_run,
    .free = us_free,
    .get_migr_pool = us_get_migr_pool,
};

int ABT_sched_create(ABT_sched_def *def, int num_pools, ABT_pool *pools,
                     ABT_sched_config config, ABT_sched *newsched)
{
    if (!newsched)
        return ABT_ERR_SCHED; /* Argobots 1.x's code for it */
    *newsched = ABT_SCHED_NULL;
    ABTX_CHECK_INIT();
    if (!def || !def->run)
        return ABT_ERR_INV_ARG;
    int n = num_pools > 0 ? num_pools : 1;
    ABT_pool ps[n];
    coexec_pool_t cps[n];
    const ABT_pool *given = num_pools > 0 ? pools : NULL;
    int rc = pools_fill(n, given, ps, cps);
    if (rc)
        return rc;
    bool automatic = abtx_sched_config_int(config, ABT_sched_config_automatic.idx,
                                           ABT_FALSE) == ABT_TRUE;
    ABT_sched s = abtx_sched_wrap((coexec_sched_t){0}, ABT_SCHED_DEFAULT, n,
                                  ps, automatic, false);
    if (!s) {
        pools_unfill(n, given, ps);
        return ABT_ERR_MEM;
    }
    s->def = *def;
    s->config = config;
    coexec_sched_config_t cfg;
    ABTX_IGNORE(coexec_sched_config_init(&cfg));
    cfg.steal = 0;
    coexec_sched_t cs;
    rc = coexec_sched_create_user(def->get_migr_pool ? &user_sched_ops_migr
                                                     : &user_sched_ops,
                                  cps, n, &cfg, s, &cs);
    if (rc) {
        s->magic = ABTX_FREED;
        for (int i = 0; i < n; i++)
            atomic_fetch_sub(&ps[i]->num_scheds, 1);
        pools_unfill(n, given, ps);
        return s->init_rc ? s->init_rc
                          : abtx_err(rc, ABT_ERR_INV_POOL, ABT_ERR_SCHED);
    }
    s->cs = cs;
    *newsched = s;
    return ABT_SUCCESS;
}

int ABT_sched_free(ABT_sched *sched)
{
    ABTX_CHECK_INIT();
    if (!sched)
        return ABT_ERR_INV_ARG;
    if (!abtx_sched(*sched))
        return ABT_ERR_INV_SCHED;
    /* A stream runs it (Argobots 1.x); a stacked one may go once coexec
     * no longer has it in a pool nor runs it (abtx_sched_release). */
    if (abtx_sched_taken(*sched))
        return ABT_ERR_SCHED;
    if ((*sched)->borrowed)
        return ABT_ERR_INV_SCHED;
    int rc = abtx_sched_release(*sched);
    if (!rc)
        *sched = ABT_SCHED_NULL;
    return rc;
}

/* ---- queries ------------------------------------------------------------------ */

int ABT_sched_set_data(ABT_sched sched, void *data)
{
    ABTX_CHECK_INIT();
    if (!abtx_sched(sched))
        return ABT_ERR_INV_SCHED;
    sched->data = data;
    return ABT_SUCCESS;
}

int ABT_sched_get_data(ABT_sched sched, void **data)
{
    if (!data)
        return ABT_ERR_INV_ARG;
    ABTX_CHECK_INIT();
    if (!abtx_sched(sched))
        return ABT_ERR_INV_SCHED;
    *data = sched->data;
    return ABT_SUCCESS;
}

int ABT_sched_get_num_pools(ABT_sched sched, int *num_pools)
{
    if (!num_pools)
        return ABT_ERR_INV_ARG;
    ABTX_CHECK_INIT();
    if (!abtx_sched(sched))
        return ABT_ERR_INV_SCHED;
    *num_pools = sched->num_pools;
    return ABT_SUCCESS;
}

int ABT_sched_get_pools(ABT_sched sched, int max_pools, int idx,
                        ABT_pool *pools)
{
    ABTX_CHECK_INIT();
    if (!abtx_sched(sched))
        return ABT_ERR_INV_SCHED;
    if (max_pools < 0 || idx < 0 || (max_pools > 0 && !pools))
        return ABT_ERR_INV_ARG;
    /* In long arithmetic: idx + max_pools may pass INT_MAX. */
    if ((long long)idx + max_pools > sched->num_pools)
        return ABT_ERR_SCHED;
    for (int i = 0; i < max_pools; i++)
        pools[i] = sched->pools[idx + i];
    return ABT_SUCCESS;
}

int ABT_sched_get_size(ABT_sched sched, size_t *size)
{
    if (!size)
        return ABT_ERR_INV_ARG;
    *size = 0;
    ABTX_CHECK_INIT();
    if (!abtx_sched(sched))
        return ABT_ERR_INV_SCHED;
    size_t sum = 0;
    for (int i = 0; i < sched->num_pools; i++) {
        size_t n = 0;
        ABTX_IGNORE(coexec_pool_get_size(sched->pools[i]->cp, &n));
        sum += n;
    }
    *size = sum;
    return ABT_SUCCESS;
}

int ABT_sched_get_total_size(ABT_sched sched, size_t *size)
{
    return ABT_sched_get_size(sched, size);
}

/* The live stream sched is the main scheduler of, or NULL. */
static ABT_xstream main_stream_of(ABT_sched sched)
{
    ABT_xstream found = NULL;
    pthread_mutex_lock(&abtx_lock);
    for (ABT_xstream x = abtx_g.xstreams; x && !found; x = x->next)
        if (x->magic == ABTX_XSTREAM && !x->joined && x->sched == sched)
            found = x;
    pthread_mutex_unlock(&abtx_lock);
    return found;
}

int ABT_sched_finish(ABT_sched sched)
{
    ABTX_CHECK_INIT();
    if (!abtx_sched(sched))
        return ABT_ERR_INV_SCHED;
    int rc = coexec_sched_finish(sched->cs);
    if (rc == COEXEC_ESTATE) {
        /* Not stacked. A stream's main scheduler: as in Argobots, its
         * stream ends once its pools are empty (the primary cannot end:
         * ABT_ERR_SCHED). One that nothing runs has nothing to finish. */
        ABT_xstream x = main_stream_of(sched);
        if (!x)
            return ABT_SUCCESS;
        if (x->primary)
            return ABT_ERR_SCHED;
        rc = coexec_xstream_stop(x->cx);
        if (rc == COEXEC_ESTATE)
            return ABT_SUCCESS; /* stopping or stopped already */
    }
    return abtx_err(rc, ABT_ERR_INV_SCHED, ABT_ERR_SCHED);
}

int ABT_sched_exit(ABT_sched sched)
{
    return ABT_sched_finish(sched);
}

int ABT_sched_has_to_stop(ABT_sched sched, ABT_bool *stop)
{
    if (!stop)
        return ABT_ERR_INV_ARG;
    *stop = ABT_FALSE;
    ABTX_CHECK_INIT();
    if (!abtx_sched(sched))
        return ABT_ERR_INV_SCHED;
    if (coexec_self_caller() == COEXEC_CALLER_EXTERNAL)
        return ABT_ERR_INV_XSTREAM; /* Argobots 1.x */
    int s = 0;
    int rc = coexec_sched_has_to_stop(sched->cs, &s);
    *stop = s ? ABT_TRUE : ABT_FALSE;
    return abtx_err(rc, ABT_ERR_INV_SCHED, ABT_ERR_SCHED);
}

/* ---- for a scheduler's loop --------------------------------------------------- */


int ABT_xstream_run_unit(ABT_unit unit, ABT_pool pool)
{
    ABTX_CHECK_INIT();
    if (!abtx_pool(pool))
        return ABT_ERR_INV_POOL;
    ABT_thread t = abtx_thread_of_unit(unit);
    if (!t)
        return ABT_ERR_INV_UNIT;
    /* From a ULT (Argobots lets any ULT act as a scheduler): as
     * ABT_self_schedule. */
    ABT_thread caller = abtx_cur_get();
    if (coexec_self_caller() == COEXEC_CALLER_ULT &&
        !(running_sched && caller == &running_sched->ult))
        return ABT_self_schedule(t, pool);
    coexec_sched_t cs;
    int rc = coexec_sched_self(&cs);
    if (rc)
        return abtx_err(rc, ABT_ERR_INV_XSTREAM, ABT_ERR_INV_XSTREAM);
    ABT_thread prev = abtx_cur_get();
    /* pool becomes its associated pool: where it goes when it yields. */
    if (pool != t->pool)
        (void)abtx_thread_set_home(t, pool);
    rc = coexec_sched_run_unit(cs, t->u);
    abtx_cur_set(prev);
    return abtx_err(rc, ABT_ERR_INV_UNIT, ABT_ERR_UNIT);
}

int ABT_xstream_check_events(ABT_sched sched)
{
    ABTX_CHECK_INIT();
    if (!abtx_sched(sched))
        return ABT_ERR_INV_SCHED;
    ABT_thread prev = abtx_cur_get();
    int rc = coexec_sched_check_events(sched->cs);
    abtx_cur_set(prev);
    return abtx_err(rc, ABT_ERR_INV_SCHED, ABT_ERR_INV_XSTREAM);
}

/* Runs thread (one the caller popped) as its child: from a user
 * scheduler's run function, as ABT_xstream_run_unit; from a ULT, by a
 * direct hand-off (the caller goes back to its pool and runs again once
 * scheduled, whether the child yields or finishes). pool, or else the
 * pool thread is associated with, is where thread goes when it yields. */
int ABT_self_schedule(ABT_thread thread, ABT_pool pool)
{
    ABTX_CHECK_INIT();
    if (!abtx_thread(thread))
        return ABT_ERR_INV_THREAD;
    if (pool != ABT_POOL_NULL && !abtx_pool(pool))
        return ABT_ERR_INV_POOL;
    ABT_thread self = abtx_cur_get();
    if (!self || coexec_self_caller() == COEXEC_CALLER_EXTERNAL)
        return ABT_ERR_INV_XSTREAM;
    if (!self->is_ult || thread == self)
        return ABT_ERR_INV_THREAD;
    ABT_pool home = pool != ABT_POOL_NULL ? pool : thread->pool;
    if (abtx_pool(home))
        (void)abtx_thread_set_home(thread, home);
    ABT_sched s = running_sched;
    int rc;
    if (s && self == &s->ult) {
        rc = coexec_sched_run_unit(s->cs, thread->u);
    } else if (thread->is_ult) {
        rc = coexec_yield_to(thread->th);
    } else if (abtx_pool(home)) {
        /* A tasklet cannot be switched to: it is queued, and we yield. */
        rc = coexec_pool_push(home->cp, thread->u);
        if (!rc)
            rc = coexec_yield();
    } else {
        rc = COEXEC_ESTATE;
    }
    abtx_cur_set(self);
    return abtx_err(rc, ABT_ERR_INV_THREAD, ABT_ERR_THREAD);
}
