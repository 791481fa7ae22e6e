/*
 * src/thread/api.c: the public ULT and tasklet calls: create, join, free,
 * queries, resume. The machinery they stand on is in thread.c.
 */
#include "core/config.h"
#include "core/internal.h"

/* Resolves the pool a unit is created into, checking the access mode. */
static int create_unit(struct coexec_pool_rec *p, int kind, void *fn,
                       void *arg, const coexec_thread_attr_t *attr,
                       bool detached, struct coexec_unit_rec **out)
{
    size_t ss = 0;
    void *ustack = NULL;
    if (attr) {
        ss = attr->stack_size;
        ustack = attr->stack;
        if (ustack && (((uintptr_t)ustack & 15) || ss < COEXEC__USER_MIN_STACK))
            return COEXEC_EINVAL;
        if (ss && (ss < COEXEC__USER_MIN_STACK || ss > COEXEC_MAX_STACK))
            return COEXEC_EINVAL;
    }
    int rc = coexec__pool_check_push(p);
    if (rc)
        return rc;
    struct coexec_xstream_rec *xs = coexec__xs_self();
    struct coexec_unit_rec *u = coexec__unit_new(xs, kind);
    if (UNLIKELY(!u))
        return COEXEC_ENOMEM;
    if (kind == UNIT_TASKLET) {
        u->fn.tasklet = (coexec_tasklet_fn_t)fn;
    } else {
        u->fn.thread = (coexec_thread_fn_t)fn;
        if (ustack) {
            u->flags |= UF_USER_STACK;
            u->stack = ustack;
            u->stack_size = (uint32_t)(ss & ~(size_t)15);
        } else if (ss && ss != coexec__g.cfg.stack_size) {
            u->flags |= UF_BIG_STACK;
            u->stack_size = (uint32_t)((ss + 4095) & ~(size_t)4095);
        } else {
            u->stack_size = (uint32_t)(coexec__g.stack_size - STACK_NODE_SIZE);
        }
    }
    u->arg = arg;
    if (detached)
        u->flags |= UF_DETACHED;
    *out = u;
    coexec__pool_push(p, u, false);
    return COEXEC_OK;
}

static int pool_of_xstream(coexec_xstream_t xs, struct coexec_pool_rec **p)
{
    int rc = CHECK_HANDLE(xs);
    if (rc)
        return rc;
    struct coexec_sched_rec *s = xs.p->sched;
    if (!s || s->npools < 1)
        return COEXEC_ESTATE;
    *p = s->pools[0];
    return COEXEC_OK;
}

#define SET_OUT(out, u)                                                        \
    do {                                                                       \
        if (out) {                                                             \
            (out)->p = (u);                                                    \
            (out)->gen = atom_load_rlx_u64(&(u)->gen);                         \
        }                                                                      \
    } while (0)

COEXEC_API int coexec_thread_attr_init(coexec_thread_attr_t *attr)
{
    if (!attr)
        return COEXEC_EINVAL;
    attr->size = sizeof *attr;
    attr->stack_size = 0;
    attr->stack = NULL;
    return COEXEC_OK;
}

COEXEC_API int coexec_thread_create(coexec_pool_t pool, coexec_thread_fn_t fn,
                                    void *arg, const coexec_thread_attr_t *attr,
                                    coexec_thread_t *out)
{
    RT_CHECK();
    if (!fn)
        return COEXEC_EINVAL;
    int rc = CHECK_HANDLE(pool);
    if (rc)
        return rc;
    struct coexec_unit_rec *u;
    rc = create_unit(pool.p, UNIT_ULT, (void *)fn, arg, attr, out == NULL, &u);
    if (rc)
        return rc;
    SET_OUT(out, u);
    return COEXEC_OK;
}

COEXEC_API int coexec_thread_create_on(coexec_xstream_t xs,
                                       coexec_thread_fn_t fn, void *arg,
                                       const coexec_thread_attr_t *attr,
                                       coexec_thread_t *out)
{
    RT_CHECK();
    if (!fn)
        return COEXEC_EINVAL;
    struct coexec_pool_rec *p;
    int rc = pool_of_xstream(xs, &p);
    if (rc)
        return rc;
    struct coexec_unit_rec *u;
    rc = create_unit(p, UNIT_ULT, (void *)fn, arg, attr, out == NULL, &u);
    if (rc)
        return rc;
    SET_OUT(out, u);
    return COEXEC_OK;
}

COEXEC_API int coexec_tasklet_create(coexec_pool_t pool, coexec_tasklet_fn_t fn,
                                     void *arg, coexec_tasklet_t *out)
{
    RT_CHECK();
    if (!fn)
        return COEXEC_EINVAL;
    int rc = CHECK_HANDLE(pool);
    if (rc)
        return rc;
    struct coexec_unit_rec *u;
    rc = create_unit(pool.p, UNIT_TASKLET, (void *)fn, arg, NULL, out == NULL,
                     &u);
    if (rc)
        return rc;
    SET_OUT(out, u);
    return COEXEC_OK;
}

COEXEC_API int coexec_tasklet_create_on(coexec_xstream_t xs,
                                        coexec_tasklet_fn_t fn, void *arg,
                                        coexec_tasklet_t *out)
{
    RT_CHECK();
    if (!fn)
        return COEXEC_EINVAL;
    struct coexec_pool_rec *p;
    int rc = pool_of_xstream(xs, &p);
    if (rc)
        return rc;
    struct coexec_unit_rec *u;
    rc = create_unit(p, UNIT_TASKLET, (void *)fn, arg, NULL, out == NULL, &u);
    if (rc)
        return rc;
    SET_OUT(out, u);
    return COEXEC_OK;
}

/* Handle check plus the kind the handle type promises. */
static int check_unit(struct coexec_unit_rec *p, uint64_t gen, bool tasklet)
{
    struct {
        struct coexec_unit_rec *p;
        uint64_t gen;
    } h = {p, gen};
    int rc = CHECK_HANDLE(h);
    if (rc)
        return rc;
    if ((p->kind == UNIT_TASKLET) != tasklet)
        return COEXEC_EHANDLE;
    return COEXEC_OK;
}

static int join_common(struct coexec_unit_rec *p, uint64_t gen, bool tasklet)
{
    RT_CHECK();
    int rc = check_unit(p, gen, tasklet);
    if (rc)
        return rc;
    if (p->kind == UNIT_MAIN) {
        struct coexec_xstream_rec *xs = coexec__xs_self();
        return xs && xs->cur == p ? COEXEC_EDEADLK : COEXEC_EPERM;
    }
    return coexec__join_unit(p);
}

static int free_common(struct coexec_unit_rec **pp, uint64_t *gp, bool tasklet)
{
    int rc = join_common(*pp, *gp, tasklet);
    if (rc)
        return rc;
    coexec__unit_release(coexec__xs_self(), *pp);
    *pp = NULL;
    *gp = 0;
    return COEXEC_OK;
}

COEXEC_API int coexec_thread_join(coexec_thread_t t)
{
    return join_common(t.p, t.gen, false);
}

COEXEC_API int coexec_thread_free(coexec_thread_t *t)
{
    if (!t)
        return COEXEC_EINVAL;
    return free_common(&t->p, &t->gen, false);
}

COEXEC_API int coexec_tasklet_join(coexec_tasklet_t k)
{
    return join_common(k.p, k.gen, true);
}

COEXEC_API int coexec_tasklet_free(coexec_tasklet_t *k)
{
    if (!k)
        return COEXEC_EINVAL;
    return free_common(&k->p, &k->gen, true);
}

COEXEC_API int coexec_thread_self(coexec_thread_t *out)
{
    if (!out)
        return COEXEC_EINVAL;
    RT_CHECK();
    struct coexec_xstream_rec *xs = coexec__xs_self();
    struct coexec_unit_rec *u = xs ? xs->cur : NULL;
    if (!u || u->kind == UNIT_TASKLET)
        return COEXEC_ECONTEXT;
    SET_OUT(out, u);
    return COEXEC_OK;
}

COEXEC_API int coexec_self_id(uint64_t *id)
{
    if (!id)
        return COEXEC_EINVAL;
    RT_CHECK();
    struct coexec_xstream_rec *xs = coexec__xs_self();
    struct coexec_unit_rec *u = xs ? xs->cur : NULL;
    if (!u)
        return COEXEC_ECONTEXT;
    *id = u->id;
    return COEXEC_OK;
}

COEXEC_API int coexec_thread_get_id(coexec_thread_t t, uint64_t *id)
{
    if (!id)
        return COEXEC_EINVAL;
    RT_CHECK();
    int rc = check_unit(t.p, t.gen, false);
    if (rc)
        return rc;
    *id = t.p->id;
    return COEXEC_OK;
}

static int get_state(struct coexec_unit_rec *p, uint64_t gen, bool tasklet,
                     coexec_unit_state_t *s)
{
    if (!s)
        return COEXEC_EINVAL;
    RT_CHECK();
    int rc = check_unit(p, gen, tasklet);
    if (rc)
        return rc;
    if (atom_load_acq_uptr(&p->join) == JOIN_DONE)
        *s = COEXEC_UNIT_TERMINATED;
    else
        *s = (coexec_unit_state_t)atom_load_acq_u32(&p->state);
    return COEXEC_OK;
}

COEXEC_API int coexec_thread_get_state(coexec_thread_t t, coexec_unit_state_t *s)
{
    return get_state(t.p, t.gen, false, s);
}

COEXEC_API int coexec_tasklet_get_state(coexec_tasklet_t k,
                                        coexec_unit_state_t *s)
{
    return get_state(k.p, k.gen, true, s);
}

COEXEC_API int coexec_thread_resume(coexec_thread_t t)
{
    RT_CHECK();
    int rc = check_unit(t.p, t.gen, false);
    if (rc)
        return rc;
    if (atom_load_acq_u32(&t.p->state) == COEXEC_UNIT_TERMINATED)
        return COEXEC_ESTATE;
    coexec__wake_unit(t.p);
    return COEXEC_OK;
}

COEXEC_API coexec_unit_t coexec_thread_unit(coexec_thread_t t)
{
    coexec_unit_t u = {t.p, t.gen};
    return u;
}

COEXEC_API coexec_unit_t coexec_tasklet_unit(coexec_tasklet_t k)
{
    coexec_unit_t u = {k.p, k.gen};
    return u;
}
