/*
 * src/abt/abt_internal.h: the records behind the ABT_* handles of
 * libcoexec-abt, the Argobots 1.x layer over libcoexec's public API.
 *
 * Every ABT handle is a pointer to one of the records below, which holds
 * the coexec handle of the object it stands for plus the little state the
 * Argobots API exposes and coexec does not (ranks chosen by the user, the
 * data pointers of pools and schedulers, an automatic flag). The layer
 * includes only <coexec.h>: no libcoexec internals.
 *
 * Units: a ULT or a tasklet is created in coexec with a trampoline whose
 * argument is its struct ABT_thread_opaque, so coexec_unit_get_arg maps a
 * coexec unit back to its handle. Records come from slabs through
 * per-OS-thread free lists (src/abt/thread.c), so creating and freeing units
 * does not call malloc in steady state. The running ABT unit is kept in a thread-local pointer that
 * every layer call which may switch saves before and restores after (a
 * resumed ULT may be on another OS thread); accesses go through non-inlined
 * functions so that no thread-local address is cached across a switch.
 *
 * Pools, schedulers and streams are few: their records stay allocated in a
 * global registry until the last ABT_finalize, so a stale handle is
 * recognised (its state says freed) instead of pointing into freed memory.
 */
#ifndef COEXEC_ABT_INTERNAL_H
#define COEXEC_ABT_INTERNAL_H

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <coexec.h>

#include "abt.h"

#define ABTX_MAX_XSTREAMS 1024
#define ABTX_PRIO_POOLS 3

/* The kind of a record, checked on every handle (a stale or foreign
 * pointer is refused with the call's ABT_ERR_INV_* code). */
enum abtx_magic {
    ABTX_FREED = 0,
    ABTX_THREAD = 0x41425454,
    ABTX_POOL = 0x41425450,
    ABTX_SCHED = 0x41425453,
    ABTX_XSTREAM = 0x41425458
};

struct ABT_thread_opaque {
    /* ---- The first cache line: all that creating, running, joining and
     * freeing a unit touch in the common case. ---- */
    uint32_t magic;
    uint8_t is_ult;      /* 1: ULT, 0: tasklet */
    uint8_t detached;    /* created without a handle: freed when done */
    uint8_t is_main;     /* the primary's main ULT */
    uint8_t migratable;
    /* has_push_ctx: push_ctx is the ABT_pool_context of its next push
     * into a user-defined pool, given by the call that pushes it when it
     * says more than coexec's push kind (create_to, revive, yield_to, a
     * push by the program...). Set by that call before it pushes, cleared
     * by the push or after it. */
    uint8_t has_push_ctx;
    /* 1 once its coexec unit is gone or going: a ULT's once a join has
     * released it (coexec_thread_wait_free); a tasklet's as its function
     * returns (its trampoline, init.c: coexec runs it detached and
     * releases it just after, so its end costs no atomic read-modify-
     * write and a join only waits for this flag). The record alone stands
     * for the finished unit from then on, with the rank of the stream it
     * ended on (last_crank, written before). Release, read with acquire:
     * whoever sees it sees what the unit did. */
    _Atomic uint8_t joined;
    int16_t last_crank;
    atomic_flag klock;   /* guards keys (src/abt/key.c) */
    /* ABT_thread_cancel / ABT_task_cancel asked (1): its function does not
     * start, and a ULT already running exits at its next yield or
     * suspend (thread.c). 2: asked before the run that starts it, which
     * the tool was told as THREAD_CANCEL in place of THREAD_RUN (its
     * FINISH is not told; src/abt/tool.c). Cleared by each creation and
     * revive. */
    _Atomic uint8_t cancel;
    /* Its next creation event is told as THREAD_REVIVE (src/abt/tool.c). */
    uint8_t tool_revive;
    /* 1 while, with a tool callback registered, the unit is in its own
     * ABT_thread_yield, ABT_self_yield or ABT_self_suspend, where a cancel
     * ends it: the run that resumes it there is told as THREAD_CANCEL if
     * one was asked (tool.c). Set and cleared around that call only, so 0
     * at every creation (slabs are carved zeroed). */
    _Atomic uint8_t at_yield;
    /* 1 once a field of the second line was given a value its release must
     * undo (unit and unit_pool, id, keys, guard_page: abtx_rec_cold), so
     * a record with 0 here is taken and given back without touching that
     * line. Cleared with those fields when the record is freed. */
    _Atomic uint8_t cold;
    /* With a tool callback registered: the scheduler depth a tasklet's RUN
     * was told at, which its FINISH, told by its trampoline, repeats. */
    int8_t tool_depth;
    union {              /* the coexec ULT or tasklet, written by its
                            creation call before the unit is queued (a
                            detached one: at its first push) */
        coexec_unit_t u;
        coexec_thread_t th;
        coexec_tasklet_t tk;
    };
    union {
        void (*fn)(void *);
        struct ABT_thread_opaque *next; /* free: the record cache's list */
    };
    void *arg;
    ABT_pool pool;       /* the pool it was last pushed into */
    /* ---- The second line. ---- */
    ABT_pool_context push_ctx;
    ABT_unit unit;       /* its unit in a user-defined pool, if any */
    ABT_pool unit_pool;  /* the pool that made that unit */
    size_t stacksize;    /* a ULT's (tasklets: not set) */
    void *user_stack;    /* the program's stack (ABT_thread_attr_set_stack) */
    uint64_t id;
    struct abtx_ktab *keys; /* ABT_key values, or NULL */
    /* Under ABT_STACK_OVERFLOW_CHECK, the page of its user stack made
     * read-only as its guard (thread.c), or NULL. */
    void *guard_page;
};

/* Notes that t's second line holds a value its release must clear: called
 * by whoever sets unit, id, keys or guard_page. */
static inline void abtx_rec_cold(struct ABT_thread_opaque *t)
{
    atomic_store_explicit(&t->cold, 1, memory_order_relaxed);
}

/* Does t's second line hold something its release must clear? */
static inline bool abtx_rec_is_cold(struct ABT_thread_opaque *t)
{
    return atomic_load_explicit(&t->cold, memory_order_relaxed) != 0;
}

/* A pool defined by ABT_pool_def (1.x) or ABT_pool_user_def. */
struct abtx_pool_def {
    ABT_pool_def d;
    /* ABT_pool_user_def callbacks; create_unit non-NULL selects them. */
    ABT_pool_user_create_unit_fn create_unit;
    ABT_pool_user_free_unit_fn free_unit;
    ABT_pool_user_is_empty_fn is_empty;
    ABT_pool_user_pop_fn pop;
    ABT_pool_user_push_fn push;
    ABT_pool_user_init_fn init;
    ABT_pool_user_free_fn free;
    ABT_pool_user_get_size_fn get_size;
    ABT_pool_user_pop_wait_fn pop_wait;
    ABT_pool_user_pop_many_fn pop_many;
    ABT_pool_user_push_many_fn push_many;
    ABT_pool_user_print_all_fn print_all;
};

struct ABT_pool_opaque {
    uint32_t magic;
    int id;
    coexec_pool_t cp;
    ABT_pool_kind kind;
    ABT_pool_access access;
    bool automatic;
    bool borrowed;           /* coexec's own pool: never freed here */
    atomic_int num_scheds;   /* schedulers using it */
    void *data;              /* ABT_pool_set_data */
    struct abtx_pool_def *def; /* NULL: a built-in kind */
    ABT_pool_config config;
    int init_rc;             /* what the user's init returned, if it failed */
    struct ABT_pool_opaque *next; /* the registry */
};

struct ABT_sched_opaque {
    uint32_t magic;
    coexec_sched_t cs;
    ABT_sched_predef predef;
    bool automatic;
    bool borrowed;           /* coexec's own scheduler */
    bool used;               /* main scheduler of a stream, or stacked */
    /* used by ABT_pool_add_sched: coexec then says when it is free again
     * (its free, a new stacking or a stream's start under it are EBUSY
     * while it is stacked in a pool or runs), so that a stacked scheduler
     * that has finished can be freed, stacked again or made main, as in
     * Argobots. Cleared when it becomes a stream's main scheduler. */
    bool stacked;
    /* On the list of automatic stacked schedulers (abtx_sched_stacked),
     * freed once coexec has let go of them; under that list's lock. */
    bool listed;
    void *data;              /* ABT_sched_set_data */
    ABT_sched_def def;       /* user-defined: def.run non-NULL */
    ABT_sched_config config;
    int init_rc;             /* what def.init returned, if it failed */
    int num_pools;
    ABT_pool *pools;
    /* The handle ABT_self_get_thread gives inside a user scheduler's run
     * function (Argobots runs schedulers as ULTs). */
    struct ABT_thread_opaque ult;
    struct ABT_sched_opaque *retired_next; /* the stream's replaced ones */
    struct ABT_sched_opaque *stacked_next; /* abtx_sched_stacked's list */
    struct ABT_sched_opaque *next;
};

struct ABT_xstream_opaque {
    uint32_t magic;
    int rank;                /* the ABT rank (the user may choose it) */
    int crank;               /* coexec's rank of the stream */
    bool primary;
    bool joined;
    coexec_xstream_t cx;
    ABT_sched sched;         /* main scheduler */
    ABT_sched retired;       /* automatic schedulers it replaced, freed
                                with the stream */
    struct ABT_xstream_opaque *next;
};

/* Runtime state (src/abt/init.c). */
struct abtx_global {
    /* ABT_init calls not yet finalized; changed under init.c's lock (the
     * whole of ABT_init and ABT_finalize runs under it, as in Argobots),
     * read anywhere (abtx_initialized). */
    _Atomic int refcount;
    unsigned epoch;          /* ABT_inits from zero, from 1 on (init.c) */
    ABT_xstream primary;
    ABT_sched primary_sched; /* coexec's own scheduler of the primary */
    struct ABT_thread_opaque main_ult;
    size_t stacksize;
    /* ABT_STACK_OVERFLOW_CHECK: 0, or 2 (mprotect) or 3 (mprotect_strict):
     * the guards are the program's (coexec's guard_app). */
    int stack_check;
    int max_xstreams;        /* ABT_MAX_NUM_XSTREAMS, as queried */
    int next_pool_id;
    ABT_xstream by_crank[ABTX_MAX_XSTREAMS]; /* coexec rank -> record */
    ABT_xstream by_rank[ABTX_MAX_XSTREAMS];  /* ABT rank -> record */
    struct ABT_pool_opaque *pools;
    struct ABT_sched_opaque *scheds;
    struct ABT_xstream_opaque *xstreams;
};
/* The layer's own globals: hidden, so that a read is one instruction. */
#define ABTX_HIDDEN __attribute__((visibility("hidden")))
extern ABTX_HIDDEN struct abtx_global abtx_g;
extern ABTX_HIDDEN pthread_mutex_t abtx_lock;

/* The running ABT unit of this OS thread (NULL: none). abtx_cur_get and
 * abtx_cur_set are out of line, for a caller that may have switched OS
 * threads; abtx_cur_here and abtx_cur_set_here read and write the
 * thread-local inline, only in a call that has not switched since it
 * began (as abtx_self_crank_here). */
ABT_thread abtx_cur_get(void);
void abtx_cur_set(ABT_thread t);
extern _Thread_local ABT_thread abtx_cur_tls
    __attribute__((tls_model("initial-exec")));
static inline ABT_thread abtx_cur_here(void)
{
    return abtx_cur_tls;
}
static inline void abtx_cur_set_here(ABT_thread t)
{
    abtx_cur_tls = t;
}

/* One turn of a wait for another unit's progress: a ULT yields, any other
 * caller (a tasklet, an external thread) gives up the CPU. */
static inline void abtx_wait_turn(void)
{
    if (coexec_yield() != COEXEC_OK)
        sched_yield();
}

/* Is the caller a tasklet of the layer (at a call's entry)? Argobots 1.x
 * refuses some calls to tasklets, whatever the state of their object. */
static inline bool abtx_in_tasklet(void)
{
    ABT_thread c = abtx_cur_here();
    return c && !c->is_ult;
}

/* The coexec rank of the stream this OS thread is (-1: none). */
int abtx_self_crank(void);
/* Its cache (src/abt/init.c): the rank, asked under ABT_init number
 * `epoch` (0: not asked). */
struct abtx_crank_cache {
    int crank;
    unsigned epoch;
};
extern _Thread_local struct abtx_crank_cache abtx_crank_tls
    __attribute__((tls_model("initial-exec")));
/* abtx_self_crank() with the thread-local read inline: only in a call
 * that has not switched since it began (a compiler may keep the
 * thread-local's address for the whole function). */
static inline int abtx_self_crank_here(void)
{
    if (__builtin_expect(abtx_crank_tls.epoch == abtx_g.epoch, 1))
        return abtx_crank_tls.crank;
    return abtx_self_crank();
}

/* The layer's stream of coexec rank crank, or NULL (a rank out of range,
 * or a stream without a record: not the layer's, or not yet filled in). */
static inline ABT_xstream abtx_xstream_of_crank(int crank)
{
    if ((unsigned)crank >= ABTX_MAX_XSTREAMS)
        return NULL;
    return __atomic_load_n(&abtx_g.by_crank[crank], __ATOMIC_ACQUIRE);
}
/* t's id (coexec's, fetched and kept on first use; src/abt/thread.c). */
uint64_t abtx_unit_id(ABT_thread t);
/* The coexec function of the layer's tasklets (init.c); the end of a
 * detached unit, whose record goes (thread.c). */
coexec_poll_status_t abtx_task_main(coexec_poll_t *cx, void *a);
void abtx_detached_end(ABT_thread t);

/* A coexec error turned into Argobots' code; inv is the call's
 * ABT_ERR_INV_* for a bad handle, other its code for a wrong state. */
int abtx_err(int rc, int inv, int other);

/* Drops a result that does not matter (the calls are NODISCARD). */
#define ABTX_IGNORE(call)                                                      \
    do {                                                                       \
        if (call) {                                                            \
        }                                                                      \
    } while (0)

/* Is the runtime initialised? Acquire: pairs with ABT_init's release of
 * the count, so what ABT_init set up is seen. */
static inline bool abtx_initialized(void)
{
    return atomic_load_explicit(&abtx_g.refcount, memory_order_acquire) != 0;
}

#define ABTX_CHECK_INIT()                                                      \
    do {                                                                       \
        if (!abtx_initialized())                                               \
            return ABT_ERR_UNINITIALIZED;                                      \
    } while (0)

/* Handle checks: the record, or NULL for a null/stale one. */
static inline ABT_thread abtx_thread(ABT_thread t)
{
    return t && t->magic == ABTX_THREAD ? t : NULL;
}
static inline ABT_pool abtx_pool(ABT_pool p)
{
    return p && p->magic == ABTX_POOL ? p : NULL;
}
static inline ABT_sched abtx_sched(ABT_sched s)
{
    return s && s->magic == ABTX_SCHED ? s : NULL;
}
static inline ABT_xstream abtx_xstream(ABT_xstream x)
{
    return x && x->magic == ABTX_XSTREAM ? x : NULL;
}

/* True once a join released t's coexec unit: the record alone stands for
 * the finished unit (struct ABT_thread_opaque, joined). */
static inline bool abtx_unit_joined(ABT_thread t)
{
    return atomic_load_explicit(&t->joined, memory_order_acquire) != 0;
}

/* Has a cancel been asked for t (ABT_thread_cancel)? */
static inline bool abtx_cancelled(ABT_thread t)
{
    return atomic_load_explicit(&t->cancel, memory_order_acquire) != 0;
}

/* Argobots' tool events (src/abt/tool.c): abtx_tool_on while a program's
 * callback is registered; abtx_tool tells it the event ev of t, from the
 * calling thread; an unnamed unit's FINISH and FREE are told as its
 * record goes (abtx_tool_unnamed_end), a tasklet's FINISH by its
 * trampoline (abtx_tool_task_end); abtx_tool_release drops every
 * registration (the last ABT_finalize). */
extern ABTX_HIDDEN _Atomic int abtx_tool_on;
void abtx_tool_emit(ABT_thread t, uint64_t ev);
void abtx_tool_unnamed_end(ABT_thread t);
void abtx_tool_task_end(ABT_thread t);
void abtx_tool_release(void);
static inline void abtx_tool(ABT_thread t, uint64_t ev)
{
    if (__builtin_expect(atomic_load_explicit(&abtx_tool_on,
                                              memory_order_relaxed), 0))
        abtx_tool_emit(t, ev);
}
/* What the calling unit waits on as it leaves, for the tool (THREAD_YIELD
 * and THREAD_SUSPEND: ABT_tool_query_thread's SYNC_OBJECT_TYPE and
 * _HANDLE). A blocking call of the layer notes it just before its coexec
 * call and clears it just after, only while a callback is registered; the
 * event told as the unit leaves reads it on that OS thread (tool.c). */
void abtx_sync_note(ABT_thread self, ABT_sync_event_type type, void *obj);
static inline void abtx_sync_begin(ABT_thread self, ABT_sync_event_type type,
                                   void *obj)
{
    if (__builtin_expect(atomic_load_explicit(&abtx_tool_on,
                                              memory_order_relaxed), 0))
        abtx_sync_note(self, type, obj);
}
static inline void abtx_sync_end(void)
{
    if (__builtin_expect(atomic_load_explicit(&abtx_tool_on,
                                              memory_order_relaxed), 0))
        abtx_sync_note(NULL, ABT_SYNC_EVENT_TYPE_UNKNOWN, NULL);
}
/* rc = expr, a coexec call that may switch, made by the calling unit as a
 * wait on (type, obj); the layer's current unit is restored after it. */
#define ABTX_WAIT(rc, type, obj, expr)                                         \
    do {                                                                       \
        ABT_thread abtx_self_ = abtx_cur_get();                                \
        abtx_sync_begin(abtx_self_, (type), (obj));                            \
        (rc) = (expr);                                                         \
        abtx_sync_end();                                                       \
        abtx_cur_set(abtx_self_);                                              \
    } while (0)
/* Is fn the layer's trampoline of a ULT (tasklet false) or a tasklet? */
bool abtx_is_trampoline(const void *fn, int tasklet);

/* Records that the unit of t is cu, seen where cu was pushed or popped.
 * A unit created with a handle has it already: coexec writes the creation
 * call's handle before the unit is queued, so the record was complete
 * before any stream could take it, and is not written again here (the
 * creator may be reading it). A detached unit has none until its first
 * push, which precedes every pop. */
static inline void abtx_thread_learn_unit(ABT_thread t, coexec_unit_t cu)
{
    if (t->u.p != cu.p)
        t->u = cu;
}

/* From a user scheduler's run function: runs fn(arg), a call that may
 * block, in a ULT while the scheduler keeps running its pools, and stores
 * its coexec result in *rc; false (nothing done) anywhere else
 * (src/abt/sched.c). */
bool abtx_sched_block(int (*fn)(void *), void *arg, int *rc);

/* Keys (src/abt/key.c): runs the destructors of t's values and frees its
 * table. */
void abtx_keys_release(ABT_thread t);
/* t's migration callback (kept with its keys): set (ABT_ERR_MEM if no
 * table could be made), and read. */
int abtx_mig_cb_set(ABT_thread t, void (*cb)(ABT_thread, void *), void *arg);
void abtx_mig_cb_get(ABT_thread t, void (**cb)(ABT_thread, void *),
                     void **arg);

/* Registry records (src/abt/pool.c, sched.c, xstream.c). */
ABT_pool abtx_pool_wrap(coexec_pool_t cp, ABT_pool_kind kind,
                        ABT_pool_access access, bool automatic,
                        bool borrowed);
int abtx_pool_release(ABT_pool p);
ABT_sched abtx_sched_wrap(coexec_sched_t cs, ABT_sched_predef predef,
                          int num_pools, const ABT_pool *pools,
                          bool automatic, bool borrowed);
int abtx_sched_release(ABT_sched s);
/* Was s stacked by ABT_pool_add_sched, and is it no stream's main
 * scheduler since? */
static inline bool abtx_sched_is_stacked(ABT_sched s)
{
    /* Relaxed atomic: abtx_sched_prune_stacked reads it from any thread. */
    return __atomic_load_n(&s->stacked, __ATOMIC_RELAXED);
}
static inline void abtx_sched_set_stacked(ABT_sched s, bool stacked)
{
    __atomic_store_n(&s->stacked, stacked, __ATOMIC_RELAXED);
}
/* Is s taken for good: a stream's main scheduler (a stacked one is free
 * again once it has finished, which only coexec knows)? */
static inline bool abtx_sched_taken(ABT_sched s)
{
    return s->used && !abtx_sched_is_stacked(s);
}
/* s was stacked (ABT_pool_add_sched): an automatic one goes on the list
 * abtx_sched_prune_stacked frees from once it has finished. */
void abtx_sched_stacked(ABT_sched s);
/* Frees the automatic stacked schedulers coexec has let go of (called as
 * schedulers are made and stacked, so they do not pile up). */
void abtx_sched_prune_stacked(void);
void abtx_sched_stacked_forget(void);
/* The record of the scheduler whose coexec handle is cs, or NULL. */
ABT_sched abtx_sched_find(coexec_sched_t cs);
int abtx_sched_new_basic(ABT_sched_predef predef, int num_pools,
                         const ABT_pool *pools, ABT_sched_config config,
                         ABT_sched *out);
ABT_xstream abtx_xstream_self(void);
/* Frees the automatic schedulers x replaced that no stream runs any more. */
void abtx_xstream_prune_retired(ABT_xstream x);
/* Would the primary's main ULT, homed in p, never run again? When p is a
 * pool of another live stream's main scheduler and not of the primary's:
 * only the primary runs it (coexec), where Argobots would move it. */
bool abtx_main_home_stranded(ABT_pool p);
/* Gives the primary its first scheduler back (the caller is the main ULT)
 * and frees what it replaced: ABT_finalize, before coexec_finalize. */
void abtx_xstream_restore_primary(void);
void abtx_registry_free(void);
/* The helper thread of ABT_info_trigger_print_all_thread_stacks
 * (src/abt/dump.c): started by ABT_init, stopped by ABT_finalize. */
int abtx_dump_start(void);
void abtx_dump_stop(void);

/* Key/value tables of the configurations (src/abt/kv.c); type 0 int,
 * 1 double, 2 pointer. */
#define ABTX_KV_MAX 16
struct abtx_kv {
    int n;
    struct {
        int key;
        int type;
        union {
            int i;
            double d;
            void *p;
        } v;
    } e[ABTX_KV_MAX];
};
int abtx_kv_set(struct abtx_kv *c, int key, int type, const void *val);
int abtx_kv_get(const struct abtx_kv *c, int key, int *type, void *val);

/* Scheduler configuration values (src/abt/sched.c). */
int abtx_sched_config_int(ABT_sched_config c, int idx, int dflt);

/* The ABT thread record of a coexec unit: its trampoline's argument, the
 * main ULT's record, or a stacked scheduler's ULT record; NULL if none. */
ABT_thread abtx_thread_of(coexec_unit_t u);
/* Makes p the pool ULT t goes to when it yields or is woken, in coexec
 * and in its record; false (nothing changed) for a tasklet, a ULT without
 * a unit or one a join released, or when coexec refuses. */
bool abtx_thread_set_home(ABT_thread t, ABT_pool p);
/* Pushes t into p the Argobots way (a user-defined pool gets its unit). */
int abtx_pool_push_thread(ABT_pool p, ABT_thread t);
/* Says which ABT_pool_context t's next push into a user-defined pool
 * carries (abtx_push_ctx_clear after the call that pushes). */
void abtx_push_ctx_set(ABT_thread t, ABT_pool_context ctx);
void abtx_push_ctx_clear(ABT_thread t);
/* The unit of t in user-defined pool p, made if t has none there yet (a
 * ULT created to run at once is in no pool, but has its unit). */
void abtx_unit_make(ABT_pool p, ABT_thread t);

/* The ULT or tasklet of a unit (of any pool), or NULL (pool.c). */
ABT_thread abtx_thread_of_unit(ABT_unit u);
/* Releases t's unit in a user-defined pool, if it has one (pool.c). */
void abtx_unit_release(ABT_thread t);

/* Heap objects whose handles are checked at their free (src/abt/live.c):
 * the create call adds the object (false: no memory for it), the free
 * call removes it first and refuses a handle that was not there (freed
 * already, never created, or of another kind). */
enum abtx_live_kind {
    ABTX_L_MUTEX = 1,
    ABTX_L_MUTEX_ATTR,
    ABTX_L_COND,
    ABTX_L_RWLOCK,
    ABTX_L_BARRIER,
    ABTX_L_EVENTUAL,
    ABTX_L_EVENTUAL_STATIC, /* static memory, first used */
    ABTX_L_FUTURE,
    ABTX_L_XBARRIER,
    ABTX_L_TIMER,
    ABTX_L_THREAD_ATTR,
    ABTX_L_SCHED_CONFIG,
    ABTX_L_POOL_CONFIG,
    ABTX_L_POOL_USER_DEF
};
bool abtx_live_add(const void *p, enum abtx_live_kind kind);
bool abtx_live_remove(const void *p, enum abtx_live_kind kind);
/* obj (fresh from malloc, or NULL) added to the set: obj, or NULL (it is
 * freed) when there is no memory for that. */
void *abtx_live_new(void *obj, enum abtx_live_kind kind);
/* For objects that need nothing but free(): removes *handle_ptr from the
 * set, frees it and clears *handle_ptr; false (nothing done) for a
 * handle that was not live as kind. */
bool abtx_live_free(void *handle_ptr, enum abtx_live_kind kind);

/* Records of units (src/abt/thread.c). */
void abtx_thread_cache_drain(void);
/* t's stack as Argobots reports it (ABT_thread_get_stack): NULL and 0 for
 * a tasklet or the main ULT. */
void abtx_thread_stack(ABT_thread t, void **addr, size_t *size);

#endif /* COEXEC_ABT_INTERNAL_H */
