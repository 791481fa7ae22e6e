/*
 * coexec/types.h: the nouns of the API in one place.
 *
 * Handles are small values: a pointer to the runtime's record and the
 * generation the record had when the handle was made. Records are recycled;
 * freeing one bumps its generation, so a freed, recycled or foreign handle
 * is recognised and rejected with COEXEC_EHANDLE instead of touching the
 * wrong object. A zeroed handle ({0}) is the null handle of every kind.
 */
#ifndef COEXEC_TYPES_H
#define COEXEC_TYPES_H

#include <stddef.h>
#include <stdint.h>

#include "defs.h"

struct coexec_xstream_rec;
struct coexec_pool_rec;
struct coexec_sched_rec;
struct coexec_unit_rec;

/* An execution stream: one OS thread running a scheduler. */
typedef struct coexec_xstream {
    struct coexec_xstream_rec *p; /* the runtime's record (private) */
    uint64_t gen;                 /* the record's generation (private) */
} coexec_xstream_t;

/* A pool of ready units. */
typedef struct coexec_pool {
    struct coexec_pool_rec *p; /* the runtime's record (private) */
    uint64_t gen;              /* the record's generation (private) */
} coexec_pool_t;

/* A scheduler: the loop that takes units from pools and runs them. */
typedef struct coexec_sched {
    struct coexec_sched_rec *p; /* the runtime's record (private) */
    uint64_t gen;               /* the record's generation (private) */
} coexec_sched_t;

/* A user-level thread (ULT): a unit with its own stack. */
typedef struct coexec_thread {
    struct coexec_unit_rec *p; /* the runtime's record (private) */
    uint64_t gen;              /* the record's generation (private) */
} coexec_thread_t;

/* A tasklet: a stackless unit run on the scheduler's stack. */
typedef struct coexec_tasklet {
    struct coexec_unit_rec *p; /* the runtime's record (private) */
    uint64_t gen;              /* the record's generation (private) */
} coexec_tasklet_t;

/* Either kind of unit, as pools hold them. */
typedef struct coexec_unit {
    struct coexec_unit_rec *p; /* the runtime's record (private) */
    uint64_t gen;              /* the record's generation (private) */
} coexec_unit_t;

/*
 * A waker: makes one parked unit runnable again. Obtained by a ULT for
 * itself or by a tasklet from its poll context; see coexec/waker.h.
 */
typedef struct coexec_waker {
    struct coexec_unit_rec *p; /* the runtime's record (private) */
    uint64_t gen;              /* the record's generation (private) */
} coexec_waker_t;

/* The poll context a tasklet's function receives. */
typedef struct coexec_poll coexec_poll_t;

/* What a tasklet's function returns. */
typedef enum coexec_poll_status {
    COEXEC_READY = 0,  /* done: the tasklet has finished */
    COEXEC_PENDING = 1 /* it stored its waker: poll it again once woken */
} coexec_poll_status_t;

/* A ULT's body. */
typedef void (*coexec_thread_fn_t)(void *arg);

/* A tasklet's body: returns COEXEC_READY or COEXEC_PENDING. */
typedef coexec_poll_status_t (*coexec_tasklet_fn_t)(coexec_poll_t *cx,
                                                    void *arg);

/* Who is calling: see coexec_self_caller(). */
typedef enum coexec_caller {
    COEXEC_CALLER_EXTERNAL = 0, /* a thread that is not an xstream's */
    COEXEC_CALLER_ULT = 1,      /* a ULT (the primary's main ULT included) */
    COEXEC_CALLER_TASKLET = 2,  /* a tasklet's function */
    COEXEC_CALLER_SCHED = 3     /* a scheduler's own loop */
} coexec_caller_t;

#endif /* COEXEC_TYPES_H */
