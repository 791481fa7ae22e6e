/*
 * src/abt/pool.c: pools (ABT_pool_*), pool configurations, user-defined
 * pools and units.
 *
 * A built-in ABT pool is a coexec FIFO pool (RANDWS: a DEQUE); its units are the records of
 * the ULTs and tasklets (ABT_unit == ABT_thread). A user-defined pool, given
 * as Argobots 1.x's ABT_pool_def or made with ABT_pool_user_def_create, is a
 * coexec user pool whose operations call the program's functions: a push
 * hands the program the ABT_unit it made for the ULT, a pop turns the unit
 * it returns back into the coexec unit.
 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abt_internal.h"

/* What ABT_pool_user_def_create returns: told from Argobots 1.x's
 * ABT_pool_def (whose first field, access, is 0..4) by its first word. */
#define USER_DEF_MAGIC 0x55534446

struct user_def {
    int magic;
    struct abtx_pool_def def; /* its callbacks, copied into each pool */
};

/* ---- registry ------------------------------------------------------------ */

ABT_pool abtx_pool_wrap(coexec_pool_t cp, ABT_pool_kind kind,
                        ABT_pool_access access, bool automatic, bool borrowed)
{
    ABT_pool p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    p->magic = ABTX_POOL;
    p->cp = cp;
    p->kind = kind;
    p->access = access;
    p->automatic = automatic;
    p->borrowed = borrowed;
    pthread_mutex_lock(&abtx_lock);
    p->id = abtx_g.next_pool_id++;
    p->next = abtx_g.pools;
    abtx_g.pools = p;
    pthread_mutex_unlock(&abtx_lock);
    return p;
}

int abtx_pool_release(ABT_pool p)
{
    if (!abtx_pool(p))
        return ABT_ERR_INV_POOL;
    if (atomic_load(&p->num_scheds) > 0)
        return ABT_ERR_POOL;
    if (!p->borrowed) {
        coexec_pool_t cp = p->cp;
        int rc = coexec_pool_free(&cp);
        if (rc && rc != COEXEC_ENOTINIT)
            return abtx_err(rc, ABT_ERR_INV_POOL, ABT_ERR_POOL);
    }
    p->magic = ABTX_FREED;
    return ABT_SUCCESS;
}

/* Frees every record at the last ABT_finalize (coexec has gone). */
void abtx_registry_free(void)
{
    pthread_mutex_lock(&abtx_lock);
    for (ABT_pool p = abtx_g.pools, n; p; p = n) {
        n = p->next;
        free(p->def);
        free(p);
    }
    for (ABT_sched s = abtx_g.scheds, n; s; s = n) {
        n = s->next;
        free(s->pools);
        free(s);
    }
    for (ABT_xstream x = abtx_g.xstreams, n; x; x = n) {
        n = x->next;
        free(x);
    }
    abtx_sched_stacked_forget();
    abtx_g.pools = NULL;
    abtx_g.scheds = NULL;
    abtx_g.xstreams = NULL;
    abtx_g.primary = NULL;
    memset(abtx_g.by_rank, 0, sizeof(abtx_g.by_rank));
    memset(abtx_g.by_crank, 0, sizeof(abtx_g.by_crank));
    pthread_mutex_unlock(&abtx_lock);
}

/* ---- built-in pools -------------------------------------------------------- */

int ABT_pool_create_basic(ABT_pool_kind kind, ABT_pool_access access,
                          ABT_bool automatic, ABT_pool *newpool)
{
    if (!newpool)
        return ABT_ERR_INV_ARG;
    *newpool = ABT_POOL_NULL;
    ABTX_CHECK_INIT();
    if (kind != ABT_POOL_FIFO && kind != ABT_POOL_FIFO_WAIT &&
        kind != ABT_POOL_RANDWS)
        return ABT_ERR_INV_POOL_KIND;
    if ((unsigned)access > ABT_POOL_ACCESS_MPMC)
        return ABT_ERR_INV_POOL_ACCESS;
    /* Every ABT pool is MPMC in coexec: Argobots does not check access
     * modes by default, and programs push across streams freely. A RANDWS
     * pool is a work-stealing deque, as in Argobots: the stream whose
     * scheduler pops it first takes the newest unit (fork-join runs
     * depth-first), other streams and ABT_pool_pop elsewhere the oldest. */
    coexec_pool_t cp;
    int rc = coexec_pool_create(kind == ABT_POOL_RANDWS ? COEXEC_POOL_DEQUE
                                                        : COEXEC_POOL_FIFO,
                                COEXEC_ACCESS_MPMC, &cp);
    if (rc)
        return abtx_err(rc, ABT_ERR_INV_POOL, ABT_ERR_POOL);
    ABT_pool p = abtx_pool_wrap(cp, kind, access, automatic == ABT_TRUE, false);
    if (!p) {
        ABTX_IGNORE(coexec_pool_free(&cp));
        return ABT_ERR_MEM;
    }
    *newpool = p;
    return ABT_SUCCESS;
}

int ABT_pool_free(ABT_pool *pool)
{
    ABTX_CHECK_INIT();
    if (!pool)
        return ABT_ERR_INV_ARG;
    if (!abtx_pool(*pool) || (*pool)->borrowed)
        return ABT_ERR_INV_POOL;
    int rc = abtx_pool_release(*pool);
    if (!rc)
        *pool = ABT_POOL_NULL;
    return rc;
}

/* ---- units of user-defined pools ---------------------------------------------- */

/*
 * The units a user-defined pool makes are the program's own values; as in
 * Argobots 1.1 and later, the pool's u_get_thread (often left unset) is not
 * called: a hash table maps each live unit to its ULT or tasklet. A unit is
 * made when its unit first enters the pool and released when it moves to
 * another pool or is freed.
 */
#define UMAP_BUCKETS 4096
#define UMAP_LOCKS 64

struct umap_node {
    ABT_unit unit;
    ABT_thread thread;
    struct umap_node *next;
};

static struct umap_node *umap[UMAP_BUCKETS];
static pthread_mutex_t umap_lock[UMAP_LOCKS] = {
    [0 ... UMAP_LOCKS - 1] = PTHREAD_MUTEX_INITIALIZER};

static size_t umap_hash(ABT_unit u)
{
    uintptr_t x = (uintptr_t)u;
    return (size_t)((x >> 4) ^ (x >> 16)) & (UMAP_BUCKETS - 1);
}

static void umap_put(ABT_unit u, ABT_thread t)
{
    struct umap_node *n = malloc(sizeof(*n));
    if (!n)
        return; /* the unit is then unknown: ABT_unit_get_thread fails */
    size_t h = umap_hash(u);
    n->unit = u;
    n->thread = t;
    pthread_mutex_lock(&umap_lock[h % UMAP_LOCKS]);
    n->next = umap[h];
    umap[h] = n;
    pthread_mutex_unlock(&umap_lock[h % UMAP_LOCKS]);
}

static ABT_thread umap_get(ABT_unit u, bool remove)
{
    size_t h = umap_hash(u);
    ABT_thread t = NULL;
    pthread_mutex_lock(&umap_lock[h % UMAP_LOCKS]);
    for (struct umap_node **pp = &umap[h]; *pp; pp = &(*pp)->next) {
        if ((*pp)->unit != u)
            continue;
        struct umap_node *n = *pp;
        t = n->thread;
        if (remove) {
            *pp = n->next;
            free(n);
        }
        break;
    }
    pthread_mutex_unlock(&umap_lock[h % UMAP_LOCKS]);
    return t;
}

void abtx_unit_release(ABT_thread t)
{
    if (t->unit && t->unit_pool && t->unit_pool->def) {
        struct abtx_pool_def *d = t->unit_pool->def;
        (void)umap_get(t->unit, true);
        if (d->free_unit)
            d->free_unit(t->unit_pool, t->unit);
        else if (d->d.u_free)
            d->d.u_free(&t->unit);
    }
    t->unit = NULL;
    t->unit_pool = NULL;
}

/* The program's unit of t in pool p, made (and an older one released) if
 * t last belonged to another pool. */
static ABT_unit unit_for(ABT_pool p, ABT_thread t)
{
    struct abtx_pool_def *d = p->def;
    if (t->unit && t->unit_pool == p)
        return t->unit;
    abtx_unit_release(t);
    t->unit = d->create_unit ? d->create_unit(p, t)
                             : d->d.u_create_from_thread(t);
    t->unit_pool = p;
    abtx_rec_cold(t);
    if (t->unit)
        umap_put(t->unit, t);
    return t->unit;
}

void abtx_unit_make(ABT_pool p, ABT_thread t)
{
    if (p->def)
        (void)unit_for(p, t);
}

ABT_thread abtx_thread_of_unit(ABT_unit u)
{
    if (!u)
        return NULL;
    ABT_thread t = umap_get(u, false);
    return t ? t : abtx_thread((ABT_thread)u);
}

/* ---- user-defined pools ------------------------------------------------------ */

static int up_init(coexec_pool_t cp, void *arg, void **state)
{
    ABT_pool p = arg;
    p->cp = cp;
    *state = p;
    int rc = ABT_SUCCESS;
    if (p->def->init)
        rc = p->def->init(p, p->config);
    else if (p->def->d.p_init)
        rc = p->def->d.p_init(p, p->config);
    p->init_rc = rc; /* ABT_pool_create returns it, as Argobots */
    return rc ? COEXEC_EINVAL : COEXEC_OK;
}

static void up_free(void *state)
{
    ABT_pool p = state;
    if (p->def->free)
        p->def->free(p);
    else if (p->def->d.p_free)
        (void)p->def->d.p_free(p);
}

/*
 * What the layer's own call asks of a user-defined pool's callbacks beyond
 * a plain pop or push: coexec calls up_pop and up_push synchronously, on
 * the thread that called coexec_pool_pop or coexec_pool_push, so the call
 * leaves its request in a thread-local for them (a scheduler's pops and
 * pushes find none). Nothing between setting it and clearing it switches.
 */
enum req_op {
    REQ_POP,      /* pop(ctx) */
    REQ_POP_WAIT, /* pop_wait(secs, ctx) */
    REQ_POP_MANY, /* pop_many(ctx) once, then hand its units out one by
                     one (REQ_STASH) */
    REQ_STASH,
    REQ_PUSH_MANY /* collect the units pushed, for one push_many after */
};

struct pool_req {
    ABT_pool pool;
    enum req_op op;
    ABT_pool_context ctx;
    double secs;
    ABT_thread *many;  /* pop_many's results */
    ABT_unit *units;   /* push_many's units */
    size_t max, got, next;
};

static _Thread_local struct pool_req *pool_req
    __attribute__((tls_model("initial-exec")));

static struct pool_req *req_for(ABT_pool p)
{
    struct pool_req *r = pool_req;
    return r && r->pool == p ? r : NULL;
}

/* The context a push of t carries: the one its call gave, else the push
 * kind's. */
static ABT_pool_context push_ctx_of(ABT_thread t, coexec_push_kind_t kind)
{
    if (t->has_push_ctx) {
        t->has_push_ctx = 0;
        return t->push_ctx;
    }
    return kind == COEXEC_PUSH_YIELD  ? ABT_POOL_CONTEXT_OP_THREAD_YIELD
           : kind == COEXEC_PUSH_WAKE ? ABT_POOL_CONTEXT_OP_THREAD_RESUME
                                      : ABT_POOL_CONTEXT_OP_THREAD_CREATE;
}

void abtx_push_ctx_set(ABT_thread t, ABT_pool_context ctx)
{
    t->push_ctx = ctx;
    t->has_push_ctx = 1;
}

void abtx_push_ctx_clear(ABT_thread t)
{
    t->has_push_ctx = 0;
}

static void up_push(void *state, coexec_unit_t cu, coexec_push_kind_t kind)
{
    ABT_pool p = state;
    ABT_thread t = abtx_thread_of(cu);
    if (!t) {
        /* Not the layer's: a scheduler created through coexec directly.
         * Refused where it is stacked (ABT_pool_add_sched takes ABT
         * records only), so this is not reached; dropping it would lose
         * it, so say so loudly. */
        fprintf(stderr, "libcoexec-abt: a unit unknown to the layer was "
                        "pushed into a user-defined pool and is lost\n");
        return;
    }
    abtx_thread_learn_unit(t, cu);
    t->pool = p;
    ABT_unit u = unit_for(p, t);
    ABT_pool_context ctx = push_ctx_of(t, kind);
    struct pool_req *r = req_for(p);
    if (r && r->op == REQ_PUSH_MANY && r->got < r->max) {
        r->units[r->got++] = u; /* given to push_many by the caller */
        return;
    }
    if (p->def->push)
        p->def->push(p, u, ctx);
    else
        p->def->d.p_push(p, u);
}

/* The user pool's answer to the request r (NULL: a plain pop). */
static ABT_thread user_pop(ABT_pool p, struct pool_req *r)
{
    const struct abtx_pool_def *d = p->def;
    if (!d->pop)
        return abtx_thread_of_unit(d->d.p_pop(p));
    if (!r)
        return abtx_thread(d->pop(p, ABT_POOL_CONTEXT_OP_POOL_OTHER));
    switch (r->op) {
    case REQ_POP_WAIT:
        if (d->pop_wait)
            return abtx_thread(d->pop_wait(p, r->secs, r->ctx));
        break;
    case REQ_POP_MANY:
        r->got = r->next = 0;
        d->pop_many(p, r->many, r->max, &r->got, r->ctx);
        if (r->got > r->max)
            r->got = r->max;
        r->op = REQ_STASH;
        /* fall through */
    case REQ_STASH:
        return r->next < r->got ? abtx_thread(r->many[r->next++]) : NULL;
    default:
        break;
    }
    return abtx_thread(d->pop(p, r->ctx));
}

static coexec_unit_t up_pop(void *state)
{
    ABT_pool p = state;
    ABT_thread t = user_pop(p, req_for(p));
    return t ? t->u : (coexec_unit_t){0};
}

static int up_remove(void *state, coexec_unit_t cu)
{
    ABT_pool p = state;
    ABT_thread t = abtx_thread_of(cu);
    if (!t || !p->def->d.p_remove || t->unit_pool != p)
        return 0;
    return p->def->d.p_remove(p, t->unit) == ABT_SUCCESS;
}

static size_t up_get_size(void *state)
{
    ABT_pool p = state;
    if (p->def->get_size)
        return p->def->get_size(p);
    if (p->def->d.p_get_size)
        return p->def->d.p_get_size(p);
    if (p->def->is_empty)
        return p->def->is_empty(p) ? 0 : 1;
    return 0;
}

static const coexec_pool_ops_t user_pool_ops = {
    .size = sizeof(coexec_pool_ops_t),
    .init = up_init,
    .free = up_free,
    .push = up_push,
    .pop = up_pop,
    .get_size = up_get_size,
};

static const coexec_pool_ops_t user_pool_ops_remove = {
    .size = sizeof(coexec_pool_ops_t),
    .init = up_init,
    .free = up_free,
    .push = up_push,
    .pop = up_pop,
    .remove = up_remove,
    .get_size = up_get_size,
};

int ABT_pool_create(ABT_pool_user_def def, ABT_pool_config config,
                    ABT_pool *newpool)
{
    if (!newpool)
        return ABT_ERR_INV_ARG;
    *newpool = ABT_POOL_NULL;
    ABTX_CHECK_INIT();
    if (!def)
        return ABT_ERR_INV_POOL_USER_DEF;
    struct abtx_pool_def *d = calloc(1, sizeof(*d));
    if (!d)
        return ABT_ERR_MEM;
    const struct user_def *ud = (const struct user_def *)(void *)def;
    if (ud->magic == USER_DEF_MAGIC) {
        *d = ud->def;
        d->d.access = ABT_POOL_ACCESS_MPMC;
    } else {
        /* Only what Argobots 1.x requires is read: u_get_type,
         * u_get_thread, u_get_task and u_create_from_task may be unset. */
        d->d.access = def->access;
        d->d.u_create_from_thread = def->u_create_from_thread;
        d->d.u_free = def->u_free;
        d->d.p_init = def->p_init;
        d->d.p_get_size = def->p_get_size;
        d->d.p_push = def->p_push;
        d->d.p_pop = def->p_pop;
        d->d.p_remove = def->p_remove;
        d->d.p_free = def->p_free;
        d->d.p_print_all = def->p_print_all;
        if (!d->d.p_push || !d->d.p_pop || !d->d.u_create_from_thread ||
            !d->d.u_free || !d->d.p_get_size) {
            free(d);
            return ABT_ERR_INV_POOL_USER_DEF;
        }
    }
    ABT_pool p = abtx_pool_wrap((coexec_pool_t){0}, ABT_POOL_FIFO,
                                d->d.access, false, false);
    if (!p) {
        free(d);
        return ABT_ERR_MEM;
    }
    p->def = d;
    p->config = config;
    if (config) {
        int automatic = ABT_FALSE;
        if (ABT_pool_config_get(config, ABT_pool_config_automatic.key, NULL,
                                &automatic) == ABT_SUCCESS)
            p->automatic = automatic == ABT_TRUE;
    }
    coexec_pool_t cp;
    int rc = coexec_pool_create_user(d->d.p_remove ? &user_pool_ops_remove
                                                   : &user_pool_ops,
                                     COEXEC_ACCESS_MPMC, p, &cp);
    if (rc) {
        p->magic = ABTX_FREED;
        return p->init_rc ? p->init_rc
                          : abtx_err(rc, ABT_ERR_INV_POOL_USER_DEF,
                                     ABT_ERR_POOL);
    }
    p->cp = cp;
    *newpool = p;
    return ABT_SUCCESS;
}

int ABT_pool_user_def_create(ABT_pool_user_create_unit_fn p_create_unit,
                             ABT_pool_user_free_unit_fn p_free_unit,
                             ABT_pool_user_is_empty_fn p_is_empty,
                             ABT_pool_user_pop_fn p_pop,
                             ABT_pool_user_push_fn p_push,
                             ABT_pool_user_def *newdef)
{
    if (!newdef)
        return ABT_ERR_INV_ARG;
    if (!p_create_unit || !p_free_unit || !p_is_empty || !p_pop || !p_push)
        return ABT_ERR_INV_ARG;
    struct user_def *ud =
        abtx_live_new(calloc(1, sizeof(*ud)), ABTX_L_POOL_USER_DEF);
    if (!ud)
        return ABT_ERR_MEM;
    ud->magic = USER_DEF_MAGIC;
    ud->def.create_unit = p_create_unit;
    ud->def.free_unit = p_free_unit;
    ud->def.is_empty = p_is_empty;
    ud->def.pop = p_pop;
    ud->def.push = p_push;
    *newdef = (ABT_pool_user_def)(void *)ud;
    return ABT_SUCCESS;
}

/* The user_def behind def, or NULL when def is not one. */
static struct user_def *user_def(ABT_pool_user_def def)
{
    struct user_def *ud = (struct user_def *)(void *)def;
    return ud && ud->magic == USER_DEF_MAGIC ? ud : NULL;
}

int ABT_pool_user_def_free(ABT_pool_user_def *def)
{
    if (!def || !abtx_live_remove(*def, ABTX_L_POOL_USER_DEF))
        return ABT_ERR_INV_POOL_USER_DEF;
    user_def(*def)->magic = 0;
    free(*def);
    *def = ABT_POOL_USER_DEF_NULL;
    return ABT_SUCCESS;
}

#define USER_DEF_SETTER(fn_name, field, type)                                  \
    int fn_name(ABT_pool_user_def def, type f)                                 \
    {                                                                          \
        struct user_def *ud = user_def(def);                                   \
        if (!ud)                                                               \
            return ABT_ERR_INV_POOL_USER_DEF;                                  \
        ud->def.field = f;                                                     \
        return ABT_SUCCESS;                                                    \
    }
USER_DEF_SETTER(ABT_pool_user_def_set_init, init, ABT_pool_user_init_fn)
USER_DEF_SETTER(ABT_pool_user_def_set_free, free, ABT_pool_user_free_fn)
USER_DEF_SETTER(ABT_pool_user_def_set_get_size, get_size,
                ABT_pool_user_get_size_fn)

USER_DEF_SETTER(ABT_pool_user_def_set_pop_wait, pop_wait,
                ABT_pool_user_pop_wait_fn)
USER_DEF_SETTER(ABT_pool_user_def_set_pop_many, pop_many,
                ABT_pool_user_pop_many_fn)
USER_DEF_SETTER(ABT_pool_user_def_set_push_many, push_many,
                ABT_pool_user_push_many_fn)
USER_DEF_SETTER(ABT_pool_user_def_set_print_all, print_all,
                ABT_pool_user_print_all_fn)

/* ---- pool configuration ------------------------------------------------------ */

struct ABT_pool_config_opaque {
    struct abtx_kv kv;
};

const ABT_pool_config_var ABT_pool_config_automatic = {
    .key = -2, .type = ABT_POOL_CONFIG_INT};

int ABT_pool_config_create(ABT_pool_config *config)
{
    if (!config)
        return ABT_ERR_INV_ARG;
    *config = abtx_live_new(calloc(1, sizeof(**config)), ABTX_L_POOL_CONFIG);
    return *config ? ABT_SUCCESS : ABT_ERR_MEM;
}

int ABT_pool_config_free(ABT_pool_config *config)
{
    return abtx_live_free(config, ABTX_L_POOL_CONFIG)
               ? ABT_SUCCESS
               : ABT_ERR_INV_POOL_CONFIG;
}

int ABT_pool_config_set(ABT_pool_config config, int key,
                        ABT_pool_config_type type, const void *val)
{
    if (!config)
        return ABT_ERR_INV_POOL_CONFIG;
    return abtx_kv_set(&config->kv, key, (int)type, val);
}

int ABT_pool_config_get(ABT_pool_config config, int key,
                        ABT_pool_config_type *p_type, void *val)
{
    if (!config)
        return ABT_ERR_INV_POOL_CONFIG;
    int type;
    int rc = abtx_kv_get(&config->kv, key, &type, val);
    if (!rc && p_type)
        *p_type = (ABT_pool_config_type)type;
    return rc;
}

/* ---- push and pop ---------------------------------------------------------- */

int abtx_pool_push_thread(ABT_pool p, ABT_thread t)
{
    /* t->pool is written before the push: once queued, another stream may
     * pop and run t (and read it) at once. */
    ABT_pool old = t->pool;
    if (!p->def)
        t->pool = p;
    int rc = coexec_pool_push(p->cp, t->u);
    if (rc) {
        t->pool = old;
        return abtx_err(rc, ABT_ERR_INV_THREAD,
                        rc == COEXEC_ESTATE ? ABT_ERR_THREAD : ABT_ERR_POOL);
    }
    return ABT_SUCCESS;
}

/* Takes one unit out of p through coexec (which keeps its books). */
static ABT_thread pool_take(ABT_pool p)
{
    coexec_unit_t cu;
    if (coexec_pool_pop(p->cp, &cu) != COEXEC_OK || !cu.p)
        return NULL;
    ABT_thread t = abtx_thread_of(cu);
    if (t) {
        abtx_thread_learn_unit(t, cu);
        /* Its last pool is this one, whatever moved it here (libcoexec
         * re-homes the primary's main ULT when the primary's scheduler
         * changes): ABT_self_schedule(t, ABT_POOL_NULL) gives it back
         * this home. */
        t->pool = p;
    }
    return t;
}

/* The same, with request r for a user-defined pool's callbacks. */
static ABT_thread pool_take_req(ABT_pool p, struct pool_req *r)
{
    pool_req = r;
    ABT_thread t = pool_take(p);
    pool_req = NULL;
    return t;
}

/* A pop with context ctx: a user-defined pool's pop is told it. */
static ABT_thread pool_take_ctx(ABT_pool p, ABT_pool_context ctx)
{
    struct pool_req r = {.pool = p, .op = REQ_POP, .ctx = ctx};
    return pool_take_req(p, &r);
}

static int pop_thread(ABT_pool pool, ABT_thread *thread, ABT_pool_context ctx)
{
    ABTX_CHECK_INIT();
    if (!abtx_pool(pool))
        return ABT_ERR_INV_POOL;
    if (!thread)
        return ABT_ERR_INV_ARG;
    *thread = pool_take_ctx(pool, ctx);
    return ABT_SUCCESS;
}

int ABT_pool_pop_thread(ABT_pool pool, ABT_thread *thread)
{
    return pop_thread(pool, thread, ABT_POOL_CONTEXT_OP_POOL_OTHER);
}

int ABT_pool_pop_thread_ex(ABT_pool pool, ABT_thread *thread,
                           ABT_pool_context pool_ctx)
{
    return pop_thread(pool, thread, pool_ctx);
}

int ABT_pool_pop_threads_ex(ABT_pool pool, ABT_thread *threads, size_t len,
                            size_t *num, ABT_pool_context pool_ctx)
{
    ABTX_CHECK_INIT();
    if (!abtx_pool(pool))
        return ABT_ERR_INV_POOL;
    if (!num || (len && !threads))
        return ABT_ERR_INV_ARG;
    size_t n = 0;
    if (len && pool->def && pool->def->pop_many) {
        /* One pop_many; coexec then takes its units one by one (each
         * take hands out the next of them: REQ_STASH). Every unit the
         * user pool gave is taken, so none stays counted in the pool. */
        struct pool_req r = {.pool = pool, .op = REQ_POP_MANY,
                             .ctx = pool_ctx, .many = threads, .max = len};
        ABT_thread t = pool_take_req(pool, &r);
        if (t)
            threads[n++] = t;
        while (r.op == REQ_STASH && r.next < r.got)
            if ((t = pool_take_req(pool, &r)) != NULL)
                threads[n++] = t;
    } else {
        ABT_thread t;
        while (n < len && (t = pool_take_ctx(pool, pool_ctx)) != NULL)
            threads[n++] = t;
    }
    *num = n;
    return ABT_SUCCESS;
}

int ABT_pool_pop_threads(ABT_pool pool, ABT_thread *threads, size_t len,
                         size_t *num)
{
    return ABT_pool_pop_threads_ex(pool, threads, len, num,
                                   ABT_POOL_CONTEXT_OP_POOL_OTHER);
}

int ABT_pool_push_thread_ex(ABT_pool pool, ABT_thread thread,
                            ABT_pool_context pool_ctx)
{
    ABTX_CHECK_INIT();
    if (!abtx_pool(pool))
        return ABT_ERR_INV_POOL;
    if (!abtx_thread(thread))
        return ABT_ERR_INV_THREAD;
    if (pool->def)
        abtx_push_ctx_set(thread, pool_ctx);
    int rc = abtx_pool_push_thread(pool, thread);
    if (rc && pool->def)
        abtx_push_ctx_clear(thread);
    return rc;
}

int ABT_pool_push_thread(ABT_pool pool, ABT_thread thread)
{
    return ABT_pool_push_thread_ex(pool, thread,
                                   ABT_POOL_CONTEXT_OP_POOL_OTHER);
}

int ABT_pool_push_threads_ex(ABT_pool pool, const ABT_thread *threads,
                             size_t num, ABT_pool_context pool_ctx)
{
    ABTX_CHECK_INIT();
    if (!abtx_pool(pool))
        return ABT_ERR_INV_POOL;
    if (num && !threads)
        return ABT_ERR_INV_ARG;
    /* A user pool with push_many gets the units in one call: coexec's
     * pushes (which keep the books) only collect them (REQ_PUSH_MANY). */
    struct pool_req r = {.pool = pool, .op = REQ_PUSH_MANY, .ctx = pool_ctx,
                         .max = num};
    if (num && pool->def && pool->def->push_many)
        r.units = malloc(num * sizeof(*r.units));
    int rc = ABT_SUCCESS;
    pool_req = r.units ? &r : NULL;
    for (size_t i = 0; i < num && !rc; i++)
        rc = ABT_pool_push_thread_ex(pool, threads[i], pool_ctx);
    pool_req = NULL;
    if (r.got)
        pool->def->push_many(pool, r.units, r.got, pool_ctx);
    free(r.units);
    return rc;
}

int ABT_pool_push_threads(ABT_pool pool, const ABT_thread *threads,
                          size_t num)
{
    return ABT_pool_push_threads_ex(pool, threads, num,
                                    ABT_POOL_CONTEXT_OP_POOL_OTHER);
}

/* Pops, polling until the deadline (coexec's pools do not block); a user
 * pool's pop_wait, when it has one, does the waiting itself. */
static ABT_thread pool_take_wait(ABT_pool p, double secs, ABT_pool_context ctx)
{
    if (p->def && p->def->pop_wait) {
        struct pool_req r = {.pool = p, .op = REQ_POP_WAIT, .ctx = ctx,
                             .secs = secs};
        return pool_take_req(p, &r);
    }
    uint64_t deadline = coexec_now_ns() + (secs > 0 ? (uint64_t)(secs * 1e9) : 0);
    for (;;) {
        ABT_thread t = pool_take_ctx(p, ctx);
        if (t || coexec_now_ns() >= deadline)
            return t;
        sched_yield();
    }
}

int ABT_pool_pop_wait_thread_ex(ABT_pool pool, ABT_thread *thread,
                                double time_secs, ABT_pool_context pool_ctx)
{
    ABTX_CHECK_INIT();
    if (!abtx_pool(pool))
        return ABT_ERR_INV_POOL;
    if (!thread)
        return ABT_ERR_INV_ARG;
    *thread = pool_take_wait(pool, time_secs, pool_ctx);
    return ABT_SUCCESS;
}

int ABT_pool_pop_wait_thread(ABT_pool pool, ABT_thread *thread,
                             double time_secs)
{
    return ABT_pool_pop_wait_thread_ex(pool, thread, time_secs,
                                       ABT_POOL_CONTEXT_OP_POOL_OTHER);
}

/* The ABT_unit of t as p's users see it. */
static ABT_unit unit_of(ABT_pool p, ABT_thread t)
{
    if (!t)
        return ABT_UNIT_NULL;
    return p->def && t->unit ? t->unit : (ABT_unit)t;
}

/* The checks of the ABT_pool_pop calls; *unit is ABT_UNIT_NULL after an
 * error (as in Argobots 1.x). */
static int pop_check(ABT_pool pool, ABT_unit *unit)
{
    if (!unit)
        return ABT_ERR_INV_ARG;
    *unit = ABT_UNIT_NULL;
    ABTX_CHECK_INIT();
    return abtx_pool(pool) ? ABT_SUCCESS : ABT_ERR_INV_POOL;
}

int ABT_pool_pop(ABT_pool pool, ABT_unit *unit)
{
    int rc = pop_check(pool, unit);
    if (rc)
        return rc;
    *unit = unit_of(pool, pool_take(pool));
    return ABT_SUCCESS;
}

int ABT_pool_pop_wait(ABT_pool pool, ABT_unit *unit, double time_secs)
{
    int rc = pop_check(pool, unit);
    if (rc)
        return rc;
    *unit = unit_of(pool, pool_take_wait(pool, time_secs,
                                         ABT_POOL_CONTEXT_OP_POOL_OTHER));
    return ABT_SUCCESS;
}

int ABT_pool_pop_timedwait(ABT_pool pool, ABT_unit *unit, double abstime_secs)
{
    int rc = pop_check(pool, unit);
    if (rc)
        return rc;
    double secs = abstime_secs - ABT_get_wtime();
    *unit = unit_of(pool, pool_take_wait(pool, secs > 0 ? secs : 0,
                                         ABT_POOL_CONTEXT_OP_POOL_OTHER));
    return ABT_SUCCESS;
}

int ABT_pool_push(ABT_pool pool, ABT_unit unit)
{
    ABTX_CHECK_INIT();
    if (!abtx_pool(pool))
        return ABT_ERR_INV_POOL;
    ABT_thread t = abtx_thread_of_unit(unit);
    if (!t)
        return ABT_ERR_INV_UNIT;
    return ABT_pool_push_thread_ex(pool, t, ABT_POOL_CONTEXT_OP_POOL_OTHER);
}

int ABT_unit_get_thread(ABT_unit unit, ABT_thread *thread)
{
    if (!thread)
        return ABT_ERR_INV_ARG;
    if (!unit)
        return ABT_ERR_INV_UNIT;
    ABT_thread t = abtx_thread_of_unit(unit);
    if (!t)
        return ABT_ERR_INV_UNIT;
    *thread = t;
    return ABT_SUCCESS;
}

int ABT_pool_remove(ABT_pool pool, ABT_unit unit)
{
    ABTX_CHECK_INIT();
    if (!abtx_pool(pool))
        return ABT_ERR_INV_POOL;
    /* As in Argobots, a pool defined without p_remove cannot (an
     * ABT_pool_user_def has none). */
    if (pool->def && !pool->def->d.p_remove)
        return ABT_ERR_POOL;
    ABT_thread t = abtx_thread_of_unit(unit);
    if (!t || !t->u.p || abtx_unit_joined(t))
        return ABT_ERR_INV_UNIT;
    /* The unit is then in no pool, as after ABT_pool_pop: the caller
     * pushes it somewhere again. Not queued in pool: ABT_ERR_POOL. */
    int rc = coexec_pool_remove(pool->cp, t->u);
    return abtx_err(rc, ABT_ERR_INV_UNIT,
                    rc == COEXEC_EACCESS ? ABT_ERR_INV_POOL_ACCESS
                                         : ABT_ERR_POOL);
}

/* ---- queries --------------------------------------------------------------- */

int ABT_pool_get_access(ABT_pool pool, ABT_pool_access *access)
{
    if (!access)
        return ABT_ERR_INV_ARG;
    ABTX_CHECK_INIT();
    if (!abtx_pool(pool))
        return ABT_ERR_INV_POOL;
    *access = pool->access;
    return ABT_SUCCESS;
}

int ABT_pool_get_size(ABT_pool pool, size_t *size)
{
    if (!size)
        return ABT_ERR_INV_ARG;
    ABTX_CHECK_INIT();
    if (!abtx_pool(pool))
        return ABT_ERR_INV_POOL;
    if (pool->def && (pool->def->get_size || pool->def->d.p_get_size)) {
        *size = up_get_size(pool);
        return ABT_SUCCESS;
    }
    int rc = coexec_pool_get_size(pool->cp, size);
    return abtx_err(rc, ABT_ERR_INV_POOL, ABT_ERR_POOL);
}

int ABT_pool_get_total_size(ABT_pool pool, size_t *size)
{
    /* Blocked units are not counted by coexec's pools. */
    return ABT_pool_get_size(pool, size);
}

int ABT_pool_is_empty(ABT_pool pool, ABT_bool *is_empty)
{
    if (!is_empty)
        return ABT_ERR_INV_ARG;
    ABTX_CHECK_INIT();
    if (abtx_pool(pool) && pool->def && pool->def->is_empty) {
        *is_empty = pool->def->is_empty(pool) ? ABT_TRUE : ABT_FALSE;
        return ABT_SUCCESS;
    }
    size_t n = 0;
    int rc = ABT_pool_get_size(pool, &n);
    if (!rc)
        *is_empty = n == 0 ? ABT_TRUE : ABT_FALSE;
    return rc;
}

int ABT_pool_set_data(ABT_pool pool, void *data)
{
    ABTX_CHECK_INIT();
    if (!abtx_pool(pool))
        return ABT_ERR_INV_POOL;
    pool->data = data;
    return ABT_SUCCESS;
}

int ABT_pool_get_data(ABT_pool pool, void **data)
{
    if (!data)
        return ABT_ERR_INV_ARG;
    ABTX_CHECK_INIT();
    if (!abtx_pool(pool))
        return ABT_ERR_INV_POOL;
    *data = pool->data;
    return ABT_SUCCESS;
}

int ABT_pool_get_id(ABT_pool pool, int *id)
{
    if (!id)
        return ABT_ERR_INV_ARG;
    ABTX_CHECK_INIT();
    if (!abtx_pool(pool))
        return ABT_ERR_INV_POOL;
    *id = pool->id;
    return ABT_SUCCESS;
}

int ABT_pool_add_sched(ABT_pool pool, ABT_sched sched)
{
    ABTX_CHECK_INIT();
    if (!abtx_pool(pool))
        return ABT_ERR_INV_POOL;
    /* An automatic one that has finished is freed here, as Argobots
     * would have freed it already; one stacked before is refused by coexec
     * until it has finished. */
    abtx_sched_prune_stacked();
    if (!abtx_sched(sched) || abtx_sched_taken(sched))
        return ABT_ERR_INV_SCHED;
    int rc = coexec_pool_add_sched(pool->cp, sched->cs);
    if (rc == COEXEC_EBUSY || rc == COEXEC_EINVAL)
        return ABT_ERR_INV_SCHED;
    if (rc)
        return abtx_err(rc, ABT_ERR_INV_POOL, ABT_ERR_POOL);
    sched->used = true;
    abtx_sched_set_stacked(sched, true);
    abtx_sched_stacked(sched);
    return ABT_SUCCESS;
}

/* ---- listing a pool's units ---------------------------------------------- */

/* ABT_info_print_thread_stacks_in_pool gathers the units' coexec handles
 * (up to cap), to print them outside the pool's lock. */
struct stack_list {
    coexec_unit_t *u;
    size_t n, cap, more;
};

/* Where a listing hands each unit: as an ABT_thread, as an ABT_unit, or
 * its coexec handle into a stack list. */
struct list_to {
    void (*on_thread)(void *arg, ABT_thread t);
    void (*on_unit)(void *arg, ABT_unit u);
    void *arg;
    ABT_pool pool;
    struct stack_list *stacks;
};

/* t, queued in the pool listed; cu its coexec handle when the listing
 * knows it (a built-in pool's), else the null handle. */
static void list_hand(struct list_to *to, ABT_thread t, coexec_unit_t cu)
{
    if (to->stacks) {
        struct stack_list *l = to->stacks;
        if (!cu.p && !abtx_unit_joined(t))
            cu = t->u;
        if (!cu.p)
            return;
        if (l->n < l->cap)
            l->u[l->n++] = cu;
        else
            l->more++;
    } else if (to->on_thread) {
        to->on_thread(to->arg, t);
    } else {
        /* A built-in pool's unit is its record (unit_of); only a
         * program's pool has units of its own. */
        bool own = to->pool->def && t->unit && t->unit_pool == to->pool;
        to->on_unit(to->arg, own ? t->unit : (ABT_unit)t);
    }
}

/* A built-in pool's unit, visited under the pool's lock: only what needs
 * no other lock (a stacked scheduler's unit, found through the registry's
 * lock, is left out), and nothing written to its record (a thief may have
 * taken it from a deque meanwhile). */
static void list_builtin_visit(void *arg, coexec_unit_t cu)
{
    void *a = NULL;
    if (coexec_unit_get_arg(cu, &a) != COEXEC_OK)
        return;
    ABT_thread t = a ? abtx_thread((ABT_thread)a)
                     : cu.p == abtx_g.main_ult.u.p ? &abtx_g.main_ult : NULL;
    if (t)
        list_hand(arg, t, cu);
}

/* A program's pool lists its units itself: its print_all (threads) or
 * p_print_all (units), translated to what the caller asked for. */
static void list_from_thread(void *arg, ABT_thread t)
{
    if (abtx_thread(t))
        list_hand(arg, t, (coexec_unit_t){0});
}

static void list_from_unit(void *arg, ABT_unit u)
{
    ABT_thread t = abtx_thread_of_unit(u);
    if (t)
        list_hand(arg, t, (coexec_unit_t){0});
}

/* Hands every unit queued in pool to `to`: ABT_ERR_POOL for a program's
 * pool that defines no way to list them. */
static int list_units(ABT_pool pool, struct list_to *to)
{
    struct abtx_pool_def *d = pool->def;
    if (d && d->print_all) {
        d->print_all(pool, to, list_from_thread);
        return ABT_SUCCESS;
    }
    if (d && d->d.p_print_all) {
        d->d.p_print_all(pool, to, list_from_unit);
        return ABT_SUCCESS;
    }
    if (d)
        return ABT_ERR_POOL;
    int rc = coexec_pool_foreach(pool->cp, list_builtin_visit, to);
    return abtx_err(rc, ABT_ERR_INV_POOL,
                    rc == COEXEC_EACCESS ? ABT_ERR_INV_POOL_ACCESS
                                         : ABT_ERR_POOL);
}

int ABT_pool_print_all(ABT_pool pool, void *arg,
                       void (*print_fn)(void *arg, ABT_unit))
{
    ABTX_CHECK_INIT();
    if (!abtx_pool(pool))
        return ABT_ERR_INV_POOL;
    if (!print_fn)
        return ABT_ERR_INV_ARG;
    /* A program's p_print_all gets the caller's arguments themselves. */
    if (pool->def && pool->def->d.p_print_all) {
        pool->def->d.p_print_all(pool, arg, print_fn);
        return ABT_SUCCESS;
    }
    struct list_to to = {NULL, print_fn, arg, pool, NULL};
    return list_units(pool, &to);
}

int ABT_pool_print_all_threads(ABT_pool pool, void *arg,
                               void (*print_fn)(void *arg, ABT_thread))
{
    ABTX_CHECK_INIT();
    if (!abtx_pool(pool))
        return ABT_ERR_INV_POOL;
    if (!print_fn)
        return ABT_ERR_INV_ARG;
    /* A program's print_all gets the caller's arguments themselves. */
    if (pool->def && pool->def->print_all) {
        pool->def->print_all(pool, arg, print_fn);
        return ABT_SUCCESS;
    }
    struct list_to to = {print_fn, NULL, arg, pool, NULL};
    return list_units(pool, &to);
}

/* A header line, then each queued unit's stack: the units are listed
 * first and printed once the pool's lock is released (one that ran and
 * went meanwhile is skipped by coexec_info_print_unit). */
int ABT_info_print_thread_stacks_in_pool(FILE *fp, ABT_pool pool)
{
    ABTX_CHECK_INIT();
    if (!abtx_pool(pool))
        return ABT_ERR_INV_POOL;
    if (!fp)
        return ABT_ERR_INV_ARG;
    size_t size = 0;
    (void)ABT_pool_get_size(pool, &size);
    struct stack_list l = {NULL, 0, size + 64, 0};
    if (!(l.u = malloc(l.cap * sizeof *l.u)))
        return ABT_ERR_MEM;
    struct list_to to = {NULL, NULL, NULL, pool, &l};
    int rc = list_units(pool, &to);
    if (rc == ABT_SUCCESS) {
        fprintf(fp, "== pool %d (%p): %zu units ==\n", pool->id, (void *)pool,
                l.n + l.more);
        for (size_t i = 0; i < l.n; i++)
            ABTX_IGNORE(
                coexec_info_print_unit(fp, l.u[i], COEXEC_INFO_BACKTRACE));
        if (l.more)
            fprintf(fp, "(and %zu more, queued while the list was taken)\n",
                    l.more);
        fflush(fp);
    }
    free(l.u);
    return rc;
}
