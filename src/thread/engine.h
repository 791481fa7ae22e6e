/*
 * src/thread/engine.h: what the unit engine (src/thread/run.c) and the
 * units' cold calls (src/thread/thread.c) share: the calling unit, handle
 * checks, the poll context of a tasklet.
 */
#ifndef COEXEC_THREAD_ENGINE_H
#define COEXEC_THREAD_ENGINE_H

#include "base/global.h"
#include "thread/unit.h"
#include "xstream/xstream.h"

/* A tasklet's poll context (coexec_poll_t): the tasklet polled. */
struct coexec_poll {
    struct coexec_unit_rec *u;
};

/* The calling ULT and its stream, or NULL with *err: COEXEC_ENOTINIT, or
 * COEXEC_ECONTEXT (a tasklet, a scheduler loop, an external thread). */
static ALWAYS_INLINE struct coexec_unit_rec *self_ult(struct coexec_xstream_rec **xsp,
                                                     int *err)
{
    if (UNLIKELY(!rt_on())) {
        *err = COEXEC_ENOTINIT;
        return NULL;
    }
    struct coexec_xstream_rec *xs = xs_self_entry();
    struct coexec_unit_rec *u = xs ? xs->cur : NULL;
    if (UNLIKELY(!u || u->kind == UNIT_TASKLET)) {
        *err = COEXEC_ECONTEXT;
        return NULL;
    }
    *xsp = xs;
    return u;
}

/* Stores unit u as the handle *out (if out). */
#define SET_OUT(out, u)                                                        \
    do {                                                                       \
        if (out) {                                                             \
            (out)->p = (u);                                                    \
            (out)->gen = atom_load_rlx_u64(&(u)->gen);                         \
        }                                                                      \
    } while (0)

/* Handle check plus the kind the handle type promises. */
static inline int check_unit(struct coexec_unit_rec *p, uint64_t gen, bool tasklet)
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

#endif /* COEXEC_THREAD_ENGINE_H */
