/*
 * src/pool/user.c: user-defined pools: the pool_impl that drives a
 * coexec_pool_ops_t.
 *
 * Room plaque. The user's functions store the units; the runtime keeps
 * the bookkeeping every pool has: the unit's home stays the user pool
 * (u->pool) while in_pool says INPOOL_USER, and p->size counts the units
 * handed to push and not yet taken back, with atomic adds, because the
 * user pool's own locking is none of our business. The count goes up
 * before push and down after a pop, so it never reads empty while a unit
 * is inside. While push and pop run, coexec_pool_push/pop on inner pools
 * keep the unit's home (see wrap_* in pool.c), so a user pool may be a
 * thin policy around built-in ones.
 */
#include <stdlib.h>
#include <string.h>

#include "base/global.h"
#include "pool/pool.h"
#include "sched/sched.h"
#include "thread/thread.h"
#include "thread/unit.h"
#include "xstream/xstream.h"

struct user_pool {
    coexec_pool_ops_t ops;
    void *state;
};

static struct user_pool *up_of(struct coexec_pool_rec *p)
{
    return p->istate;
}

static coexec_unit_t handle_of(struct coexec_unit_rec *u)
{
    coexec_unit_t h = {u, atom_load_rlx_u64(&u->gen)};
    return h;
}

static bool up_push(struct coexec_pool_rec *p, struct coexec_unit_rec *u,
                    int how)
{
    struct user_pool *up = up_of(p);
    struct coexec_unit_rec *su;
    struct coexec_pool_rec *sp;
    unit_inpool_set(u, INPOOL_USER);
    atom_fadd_rlx_u64(&p->size, 1);
    coexec__pool_wrap_enter(u, NULL, &su, &sp);
    up->ops.push(up->state, handle_of(u), (coexec_push_kind_t)how);
    coexec__pool_wrap_leave(su, sp);
    pool_wake_sleepers(p);
    return false;
}

/* A unit the user pool gave back: it is ours again. */
static struct coexec_unit_rec *taken(struct coexec_pool_rec *p,
                                     coexec_unit_t h)
{
    struct coexec_unit_rec *u = h.p;
    if (!u)
        return NULL;
    unit_inpool_set(u, 0);
    atom_store_rlx_ptr(&u->pool, p);
    atom_fsub_rlx_u64(&p->size, 1);
    return u;
}

/* A unit the caller may not take goes back (rare: bound units). */
static void give_back(struct coexec_pool_rec *p, struct coexec_unit_rec *u)
{
    IGNORE_RESULT(up_push(p, u, PUSH_NEW));
}

static struct coexec_unit_rec *up_pop(struct coexec_pool_rec *p,
                                      struct coexec_xstream_rec *xs)
{
    struct user_pool *up = up_of(p);
    struct coexec_unit_rec *su;
    struct coexec_pool_rec *sp;
    coexec__pool_wrap_enter(NULL, p, &su, &sp);
    coexec_unit_t h = up->ops.pop(up->state);
    coexec__pool_wrap_leave(su, sp);
    struct coexec_unit_rec *u = taken(p, h);
    if (u && UNLIKELY(!pool_may_take(u, xs))) {
        give_back(p, u);
        return NULL;
    }
    return u;
}

static bool up_remove(struct coexec_pool_rec *p, struct coexec_unit_rec *u,
                      bool started_ok)
{
    struct user_pool *up = up_of(p);
    if (!up->ops.remove || unit_inpool(u) != INPOOL_USER ||
        (!started_ok && (u->rflags & RF_STARTED)))
        return false;
    if (!up->ops.remove(up->state, handle_of(u)))
        return false;
    taken(p, handle_of(u));
    return true;
}

static struct coexec_unit_rec *up_steal(struct coexec_pool_rec *p,
                                        struct coexec_xstream_rec *xs,
                                        struct coexec_pool_rec *into)
{
    (void)into;
    struct user_pool *up = up_of(p);
    if (!up->ops.steal)
        return NULL;
    struct coexec_unit_rec *su;
    struct coexec_pool_rec *sp;
    coexec__pool_wrap_enter(NULL, p, &su, &sp);
    coexec_unit_t h = up->ops.steal(up->state);
    coexec__pool_wrap_leave(su, sp);
    struct coexec_unit_rec *u = taken(p, h);
    if (u && UNLIKELY(!pool_may_steal(u, xs))) {
        give_back(p, u);
        return NULL;
    }
    return u;
}

static struct coexec_unit_rec *up_drain(struct coexec_pool_rec *p)
{
    struct coexec_unit_rec *head = NULL, **tail = &head;
    struct coexec_unit_rec *u;
    while ((u = up_pop(p, NULL)) != NULL) {
        *tail = u;
        tail = &u->next;
    }
    *tail = NULL;
    return head;
}

static void up_fini(struct coexec_pool_rec *p)
{
    struct user_pool *up = up_of(p);
    if (up->ops.free)
        up->ops.free(up->state);
    free(up);
}

static const struct pool_impl user_impl = {
    .push = up_push,
    .pop = up_pop,
    .remove = up_remove,
    .steal = up_steal,
    .drain = up_drain,
    .fini = up_fini,
};

int coexec__user_pool_init(struct coexec_pool_rec *p,
                           const coexec_pool_ops_t *ops, coexec_pool_t self,
                           void *arg)
{
    struct user_pool *up = calloc(1, sizeof *up);
    if (!up)
        return COEXEC_ENOMEM;
    /* Copy what the caller knows of; later fields stay NULL. */
    memcpy(&up->ops, ops, sizeof up->ops < ops->size ? sizeof up->ops
                                                     : ops->size);
    up->ops.size = sizeof up->ops;
    if (up->ops.init) {
        int rc = up->ops.init(self, arg, &up->state);
        if (rc) {
            free(up);
            return rc;
        }
    }
    p->istate = up;
    p->impl = &user_impl;
    return COEXEC_OK;
}

void *coexec__user_pool_data(struct coexec_pool_rec *p)
{
    return p->impl == &user_impl ? up_of(p)->state : NULL;
}

bool coexec__user_pool_can_remove(struct coexec_pool_rec *p)
{
    return p->impl != &user_impl || up_of(p)->ops.remove != NULL;
}
