/*
 * src/thread/unit.h: the unit descriptor shared by ULTs and tasklets.
 *
 * Room plaque. A descriptor is 128 bytes, 64-byte aligned, taken from the
 * running stream's cache (src/mem/) and type-stable for the life of the
 * runtime: it is never handed back to malloc before finalize, so a stale
 * handle can always read its generation safely.
 *
 * Ownership of the fields:
 *  - next/prev/in_pool: the pool that holds the unit (under the pool's lock,
 *    or its single owner for a private pool). While the unit is in no pool,
 *    next is also the link of a stream's remote-wake inbox.
 *  - state: written by whoever moves the unit (pool push, the scheduler,
 *    termination); read by anyone (relaxed queries, acquire for join).
 *  - wake: the park/notify word (see run.c), any thread. While the unit
 *    is parked, prev holds its waker-page key (src/pool/mailbox.c).
 *  - join: 0, JOIN_DONE, or the address of the joiner's wait record; while
 *    RF_INPLACE, that record names the joiner running the unit in place.
 *  - sp/stack: the saved context and the stack, owned by the unit's runner.
 */
#ifndef COEXEC_THREAD_UNIT_H
#define COEXEC_THREAD_UNIT_H

#include <stdbool.h>
#include <stdint.h>

#include "arch/atomic.h"
#include "arch/compiler.h"
#include "coexec.h"

enum unit_kind {
    UNIT_ULT = 0,
    UNIT_TASKLET = 1,
    UNIT_MAIN = 2 /* the primary's main ULT: runs on the OS thread's stack */
};

/* unit->flags: fixed when the unit is created, read by anyone. */
enum unit_flag {
    UF_DETACHED = 1u << 0,   /* freed when it finishes */
    UF_USER_STACK = 1u << 1, /* stack given by the user: never freed by us */
    UF_BIG_STACK = 1u << 2,  /* stack not of the cached size: mapped alone */
    UF_NOSTEAL = 1u << 3,    /* bound to bound_rank: never stolen or migrated */
    UF_SCHED = 1u << 4,      /* the unit of a stacked scheduler */
    UF_NAMED = 1u << 5       /* has a name attribute (thread/tool.c) */
};

/* unit->rflags: written by whoever runs the unit; read by others only
 * under the pool lock that a later push of the unit released. */
enum unit_rflag {
    RF_INPLACE = 1u << 0, /* a ULT run in place by the joiner of `join` */
    RF_STARTED = 1u << 1, /* has run at least once */
    RF_RETURN = 1u << 2,  /* its starter waits in coexec__ctx_start and is
                             where it goes when it finishes: it may return */
    RF_NOSTACK = 1u << 3  /* ended without running: no stack could be had */
};

/*
 * The park/notify word: two flag bits and, above them, the low 30 bits of
 * the descriptor's generation (its "tag"). A wake names the tag it expects,
 * so one aimed at an earlier incarnation of a recycled descriptor fails its
 * compare-and-swap and does nothing.
 */
#define WAKE_PARKED 1u
#define WAKE_NOTIFIED 2u
#define WAKE_FLAGS 3u

static inline uint32_t wake_tag_of(uint64_t gen)
{
    return (uint32_t)gen << 2;
}

/* unit->join: 0 = nobody waits; JOIN_DONE = finished; JOIN_WAKING = the
 * finisher is still waking the waiter it found (whose record must stay
 * alive until it is done); JOIN_HANDED = finished, and that waiter has not
 * left yet (it stores JOIN_DONE as its last touch of the descriptor, so a
 * free cannot recycle it under the waiter); else the waiter's record. */
#define JOIN_DONE ((uintptr_t)1)
#define JOIN_WAKING ((uintptr_t)2)
#define JOIN_HANDED ((uintptr_t)3)

static inline bool join_finished(uintptr_t j)
{
    return j == JOIN_DONE || j == JOIN_HANDED;
}

struct coexec_pool_rec;
struct coexec_xstream_rec;

/*
 * A wait node: one waiter in a wait list (src/waker/wait.h). ULTs and
 * external threads keep theirs on their own stack; a tasklet's lives in
 * its descriptor (it has no stack to keep one on across polls).
 */
struct wait_node {
    struct wait_node *next, *prev;
    /* WN_ULT: the unit. WN_TASKLET: the list it is linked on, or NULL
     * (atomic: read without the list's lock). WN_EXTERNAL: unused. */
    atom_ptr_t who;
    atom_u32_t state; /* WN_WAITING, or a result (external: the futex) */
    uint32_t flags;   /* kind (WN_ULT...) and the list owner's bits */
};

/* A joiner's wait record, on the joiner's own stack. */
struct join_waiter {
    struct coexec_unit_rec *ult; /* the waiting ULT, or NULL: external */
    atom_u32_t futex;            /* external thread: 1 once the unit is done */
    bool keep; /* a free: leave JOIN_HANDED in place (run.c, join_leave) */
    bool held; /* ... and it did: no one else can release the unit */
    /* The unit, run in place by this joiner, finished straight back to it
     * (a ULT: unit_finish under RF_INPLACE; a tasklet: run_in_place), on
     * the joiner's own thread: the join is complete and no wake was made
     * for it. */
    bool here;
};

/*
 * The fields a query through a handle reads may change under it: stack
 * and stack_size as the unit's runner takes and gives back its stack; and
 * kind, flags, id, arg, stack and stack_size when the descriptor is reused
 * for another unit after a free through another copy of the handle (the
 * query then answers COEXEC_EHANDLE: HANDLE_STILL, base/global.h). Those
 * writes and the queries' reads are relaxed atomics (RLX_SET, RLX_GET);
 * the owner's own reads stay plain.
 */
struct coexec_unit_rec {
    struct coexec_unit_rec *next;
    struct coexec_unit_rec *prev;
    atom_ptr_t pool;              /* home pool (struct coexec_pool_rec *) */
    atom_u32_t state;             /* coexec_unit_state_t */
    atom_u32_t wake;              /* WAKE_* bits */
    atom_uptr_t join;             /* JOIN_DONE or struct join_waiter * */
    uint8_t kind;                 /* enum unit_kind */
    uint8_t in_pool;              /* queued in `pool` (pool lock) */
    uint8_t flags;                /* enum unit_flag */
    uint8_t rflags;               /* enum unit_rflag */
    uint32_t stack_size;          /* requested stack size */
    atom_u64_t gen;               /* handle generation */
    uint64_t id;
    union {
        coexec_thread_fn_t thread;
        coexec_tasklet_fn_t tasklet;
    } fn;
    void *arg;
    union {
        struct { /* ULTs */
            void *sp;          /* saved context; NULL: never run */
            void *stack;       /* lowest address of the stack */
            struct key_table *keys; /* key values (src/thread/key.c) */
            void *tsan_fiber;
        };
        struct wait_node tnode; /* tasklets: where a PENDING one waits */
    };
    int16_t bound_rank; /* UF_NOSTEAL: the rank of the only stream that
                           may run it */
    int16_t last_rank;  /* the rank of the stream it runs on or last ran
                           on, -1 before it first runs: written (relaxed)
                           by the stream that starts or resumes it, next
                           to xs->cur; read by anyone (relaxed) */
    atom_u32_t attrs;   /* UA_PRIO_MASK: priority; UA_PINNED */
    union {
        atom_ptr_t batch_next; /* while free: global free-batch link */
        atom_uptr_t dest;      /* while live: DEST_* (migration) or 0 */
    };
} CACHE_ALIGNED;

/*
 * What a parked ULT waits on, for coexec_info_print (core/info.c). It is
 * kept in the 64 bytes above the usable part of a stack the runtime
 * mapped (the stack cache's node while the stack is free, unused while a
 * ULT runs on it), or for the primary's main ULT in a global; ULTs on
 * a stack of the user's or a stacked scheduler's have none. The ULT
 * writes it before it parks; a dump reads it racily (relaxed atomics),
 * trusting it only while the unit is blocked with the id written.
 */
struct unit_wait_note {
    const char *what; /* a static name: "mutex", "join", "sleep", ... */
    const void *obj;  /* the object waited on, or NULL */
    uint64_t arg;     /* a deadline in ns (UINT64_MAX: none), or for a
                         join the id of the unit joined */
    uint64_t id;      /* the id of the unit that wrote it */
};
_Static_assert(sizeof(struct unit_wait_note) <= 64,
               "a wait note fits the stack cache's node");
extern struct unit_wait_note coexec__main_wait_note;

static ALWAYS_INLINE struct unit_wait_note *
unit_wait_note(const struct coexec_unit_rec *u)
{
    if (u->kind == UNIT_MAIN)
        return &coexec__main_wait_note;
    void *stack = __atomic_load_n(&u->stack, __ATOMIC_RELAXED);
    if (u->kind != UNIT_ULT || (u->flags & (UF_USER_STACK | UF_BIG_STACK)) ||
        !stack)
        return NULL;
    return (struct unit_wait_note *)(void *)((char *)stack +
                                             __atomic_load_n(&u->stack_size,
                                                             __ATOMIC_RELAXED));
}

/* Records what ULT u (the caller) is about to park on. */
static ALWAYS_INLINE void unit_note_wait(struct coexec_unit_rec *u,
                                        const char *what, const void *obj,
                                        uint64_t arg)
{
    struct unit_wait_note *n = unit_wait_note(u);
    if (!n)
        return;
    __atomic_store_n(&n->what, what, __ATOMIC_RELAXED);
    __atomic_store_n(&n->obj, obj, __ATOMIC_RELAXED);
    __atomic_store_n(&n->arg, arg, __ATOMIC_RELAXED);
    __atomic_store_n(&n->id, u->id, __ATOMIC_RELAXED);
}

/* unit->attrs: set by anyone at any time (atomic), read when pushing
 * (priority) and stealing or migrating (pinned). */
#define UA_PRIO_MASK 0xffffu
#define UA_PINNED (1u << 16)
/* A wake made it runnable: its next run ends a flow arrow (core/trace.c). */
#define UA_TRACE_WOKEN (1u << 17)
/* Its last tool event was BLOCK, with no RESUME yet (thread/tool.c). */
#define UA_TOOL_BLOCKED (1u << 18)

/* unit->dest: a pool pointer | DEST_MOVE is a migration request, applied
 * when the unit next goes back to a pool (it yields or is woken); an
 * xstream pointer | DEST_BOUND keeps thieves off the unit until it has run
 * on that stream once (coexec_thread_migrate_to_xstream). */
#define DEST_MOVE ((uintptr_t)1)
#define DEST_BOUND ((uintptr_t)2)
#define DEST_HELD ((uintptr_t)4)
#define DEST_TAGS ((uintptr_t)7)

/* A unit coexec_pool_pop or coexec_pool_steal handed out (in no pool, no
 * home) has its popper in dest: popper | DEST_HELD, the popping unit, or
 * the popping stream for a scheduler loop (NULL: an external thread).
 * Only the popper may join it in place; anyone else's join waits for the
 * popper to run or push it. Set if dest was free, cleared by whoever gives
 * the unit a home (a push, a run, a yield_to, the popper's join). */
static ALWAYS_INLINE void unit_held_set(struct coexec_unit_rec *u, void *popper)
{
    uintptr_t none = 0;
    atom_cas_ar_uptr(&u->dest, &none, (uintptr_t)popper | DEST_HELD);
}

static ALWAYS_INLINE void unit_held_clear(struct coexec_unit_rec *u)
{
    uintptr_t d = atom_load_acq_uptr(&u->dest);
    if (d & DEST_HELD)
        atom_cas_ar_uptr(&u->dest, &d, 0);
}

static ALWAYS_INLINE bool unit_held_by(struct coexec_unit_rec *u,
                                       const void *popper)
{
    uintptr_t d = atom_load_acq_uptr(&u->dest);
    return (d & DEST_HELD) && (d & ~DEST_TAGS) == (uintptr_t)popper;
}

/* unit->in_pool is written under the lock of the pool that holds the unit
 * and read by others too (a joiner or a migration checking, under another
 * pool's lock, whether the unit is queued where it thinks): atomic, set
 * with release after the unit's home (u->pool) was set, read with acquire
 * before the home, so a reader that sees it set sees the home it was set
 * for. Plain moves on x86. */
static ALWAYS_INLINE uint8_t unit_inpool(const struct coexec_unit_rec *u)
{
    return __atomic_load_n(&u->in_pool, __ATOMIC_ACQUIRE);
}

static ALWAYS_INLINE void unit_inpool_set(struct coexec_unit_rec *u,
                                          uint8_t v)
{
    __atomic_store_n(&u->in_pool, v, __ATOMIC_RELEASE);
}

static ALWAYS_INLINE unsigned unit_prio(struct coexec_unit_rec *u)
{
    return atom_load_rlx_u32(&u->attrs) & UA_PRIO_MASK;
}

static ALWAYS_INLINE struct coexec_pool_rec *
unit_pool(struct coexec_unit_rec *u)
{
    return (struct coexec_pool_rec *)atom_load_rlx_ptr(&u->pool);
}

_Static_assert(sizeof(struct coexec_unit_rec) <= 128,
               "unit descriptor must fit two cache lines");

/* u's data area (coexec_config_t.unit_data_size, coexec__g.unit_data
 * bytes): right after the record in its slab (src/mem/cache.c). */
static ALWAYS_INLINE void *unit_data(struct coexec_unit_rec *u)
{
    return (char *)u + sizeof *u;
}

#endif /* COEXEC_THREAD_UNIT_H */
