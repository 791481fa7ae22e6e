/*
 * src/abt/thread.c: ULTs and tasklets (ABT_thread_*, ABT_task_*), thread
 * attributes and keys.
 *
 * A unit's record (struct ABT_thread_opaque) is the argument of the
 * trampoline coexec runs, so the record is found from the coexec unit and
 * the handle needs no table. Records are carved from slabs and recycled
 * through per-OS-thread free lists that overflow into a global one.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "abt_internal.h"

/* ---- record cache ----------------------------------------------------- */

/*
 * Records are carved from slabs of REC_PER_SLAB, each record on its own
 * cache lines (the hot fields share the first), and are never returned to
 * the heap while the runtime may use them: a freed record keeps its magic
 * ABTX_FREED, so a stale handle is refused rather than read from freed
 * memory.
 *
 * Each OS thread keeps two chains of free records, as a magazine
 * allocator does: its list (head, up to CHAIN_LEN records), which
 * allocations and frees pop and push, and a spare chain set aside. A free
 * that fills the list moves it to the spare place, and the spare there
 * before to a global stack of chains; an allocation from an empty list
 * takes the spare back, else a chain of the global stack, else carves a
 * new slab. No move walks a chain. A thread that exits hands both over.
 * In a free record, next links the chain, arg the next chain of the global
 * stack and id the chain's length (in its first record, cleared when the
 * chain is taken).
 *
 * The thread-local state is initial-exec (no __tls_get_addr) and is read
 * only inside the non-inlined functions below: a caller may have switched
 * OS threads since its last call.
 */
#define TLS_IE __attribute__((tls_model("initial-exec")))
#define REC_STRIDE ((sizeof(struct ABT_thread_opaque) + 63) & ~(size_t)63)
_Static_assert(sizeof(struct ABT_thread_opaque) <= 128,
               "a unit's record stays within two cache lines");
_Static_assert(offsetof(struct ABT_thread_opaque, pool) + sizeof(ABT_pool) <=
                   64,
               "the fields of the common case share the first line");
#define REC_PER_SLAB 64
#define CHAIN_LEN 1024

struct rec_cache {
    struct ABT_thread_opaque *head;
    long len;
    struct ABT_thread_opaque *spare; /* a whole chain set aside, or NULL */
    long spare_len;
    bool registered; /* its pthread key is set: the list is handed over
                        when the thread exits */
};
static _Thread_local struct rec_cache cache TLS_IE;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ABT_thread_opaque *g_chains; /* the global stack of chains */
static long g_free;                        /* records in g_chains */
static long g_total;                       /* records carved in all */
static void **g_slabs;                     /* slab list: first word links */
static pthread_key_t cache_key;
static pthread_once_t cache_once = PTHREAD_ONCE_INIT;

#define CHAIN_NEXT(t) (*(struct ABT_thread_opaque **)&(t)->arg)

/* Pushes the chain first..(len records) onto the global stack. */
static void chain_put(struct ABT_thread_opaque *first, long len)
{
    first->id = (uint64_t)len;
    pthread_mutex_lock(&g_lock);
    CHAIN_NEXT(first) = g_chains;
    g_chains = first;
    g_free += len;
    pthread_mutex_unlock(&g_lock);
}

/* Hands c's list and spare chain to the global stack. */
static void cache_give_all(struct rec_cache *c)
{
    if (c->spare)
        chain_put(c->spare, c->spare_len);
    if (c->head)
        chain_put(c->head, c->len);
    c->head = c->spare = NULL;
    c->len = c->spare_len = 0;
}

/* Runs when an OS thread that cached records exits. */
static void cache_exit(void *unused)
{
    (void)unused;
    cache_give_all(&cache);
    cache.registered = false;
}

static void cache_setup(void)
{
    (void)pthread_key_create(&cache_key, cache_exit);
}

/* Once per OS thread: its list is handed over when it exits. */
static void cache_register(struct rec_cache *c)
{
    pthread_once(&cache_once, cache_setup);
    c->registered = pthread_setspecific(cache_key, c) == 0;
}

/* Refills an empty local list: the spare chain, else a chain of the
 * global stack, else a slab. */
__attribute__((noinline)) static bool cache_refill(struct rec_cache *c)
{
    if (!c->registered)
        cache_register(c);
    if (c->spare) {
        c->head = c->spare;
        c->len = c->spare_len;
        c->spare = NULL;
        c->spare_len = 0;
        return true;
    }
    pthread_mutex_lock(&g_lock);
    struct ABT_thread_opaque *first = g_chains;
    if (first) {
        g_chains = CHAIN_NEXT(first);
        g_free -= (long)first->id;
        c->len = (long)first->id;
        first->id = 0;
        c->head = first;
        pthread_mutex_unlock(&g_lock);
        return true;
    }
    pthread_mutex_unlock(&g_lock);
    void **slab = NULL;
    if (posix_memalign((void **)&slab, 64, 64 + REC_PER_SLAB * REC_STRIDE))
        return false;
    char *base = (char *)slab + 64;
    memset(base, 0, REC_PER_SLAB * REC_STRIDE); /* klock clear, keys NULL */
    struct ABT_thread_opaque *head = NULL;
    for (int i = REC_PER_SLAB - 1; i >= 0; i--) {
        struct ABT_thread_opaque *t =
            (struct ABT_thread_opaque *)(base + (size_t)i * REC_STRIDE);
        t->magic = ABTX_FREED;
        t->next = head;
        head = t;
    }
    pthread_mutex_lock(&g_lock);
    *slab = g_slabs;
    g_slabs = slab;
    g_total += REC_PER_SLAB;
    pthread_mutex_unlock(&g_lock);
    c->head = head;
    c->len = REC_PER_SLAB;
    return true;
}

/* Inlined into unit_start, which calls it first, before anything can
 * switch: the thread-local is read on the OS thread the call began on
 * (every other user of the cache is out of line, like abtx_cur_get, as
 * its caller may have switched OS threads since its last call).
 * A free record is clean already (rec_free): its klock is clear, is_main,
 * at_yield and cold are 0, and so are the second line's unit, unit_pool,
 * id, keys and guard_page; unit_start sets the rest. */
static inline __attribute__((always_inline)) ABT_thread rec_alloc(void)
{
    struct rec_cache *c = &cache;
    if (__builtin_expect(!c->head, 0) && !cache_refill(c))
        return NULL;
    struct ABT_thread_opaque *t = c->head;
    c->head = t->next;
    c->len--;
    return t;
}

/* The local list is full: it becomes the spare chain, and the spare chain
 * before it goes to the global stack. */
__attribute__((noinline)) static void cache_spill(struct rec_cache *c)
{
    if (c->spare)
        chain_put(c->spare, c->spare_len);
    c->spare = c->head;
    c->spare_len = c->len;
    c->head = NULL;
    c->len = 0;
}

/* Returns ABT_SUCCESS, so that a free may end with a tail call to it. */
__attribute__((noinline)) static int rec_put(ABT_thread t)
{
    struct rec_cache *c = &cache;
    t->magic = ABTX_FREED;
    t->next = c->head;
    c->head = t;
    if (__builtin_expect(++c->len >= CHAIN_LEN, 0))
        cache_spill(c);
    if (__builtin_expect(!c->registered, 0))
        cache_register(c);
    return ABT_SUCCESS;
}

static void user_stack_unguard(ABT_thread t);

/* Clears what t's second line holds (t->cold): its user-defined pool's
 * unit, its key values (their destructors, as Argobots runs them: may
 * switch, so rec_put reads the cache afresh), its guard page, its id. */
__attribute__((noinline)) static void rec_clean(ABT_thread t)
{
    abtx_unit_release(t);
    if (t->keys)
        abtx_keys_release(t);
    user_stack_unguard(t);
    t->id = 0;
    atomic_store_explicit(&t->cold, 0, memory_order_relaxed);
}

static int rec_free(ABT_thread t)
{
    if (abtx_rec_is_cold(t))
        rec_clean(t);
    return rec_put(t);
}

/* rec_free for a record that may come back: it goes to the head of the
 * local list without a spill, so rec_unfree can take it back while no
 * other record of this OS thread was freed or taken in between
 * (ABT_self_exit_to, whose coexec call returns only when it failed,
 * without switching). */
static _Thread_local void (*undo_fn)(void *) TLS_IE; /* t->fn, under next */

__attribute__((noinline)) static void rec_free_undoable(ABT_thread t)
{
    struct rec_cache *c = &cache;
    if (abtx_rec_is_cold(t))
        rec_clean(t);
    undo_fn = t->fn;
    t->magic = ABTX_FREED;
    t->next = c->head;
    c->head = t;
    c->len++;
    if (__builtin_expect(!c->registered, 0))
        cache_register(c);
}

__attribute__((noinline)) static void rec_unfree(ABT_thread t)
{
    struct rec_cache *c = &cache;
    if (c->head == t) {
        c->head = t->next;
        c->len--;
    }
    t->fn = undo_fn;
    t->magic = ABTX_THREAD;
}

/* ABT_finalize, on the primary: the caller's list goes to the global
 * stack; when every record carved is free, the slabs go back to the heap. */
__attribute__((noinline)) void abtx_thread_cache_drain(void)
{
    cache_give_all(&cache);
    pthread_mutex_lock(&g_lock);
    void **slabs = NULL;
    if (g_free == g_total) {
        slabs = g_slabs;
        g_slabs = NULL;
        g_chains = NULL;
        g_free = g_total = 0;
    }
    pthread_mutex_unlock(&g_lock);
    while (slabs) {
        void **n = *slabs;
        free(slabs);
        slabs = n;
    }
}

ABT_thread abtx_thread_of(coexec_unit_t u)
{
    void *arg = NULL;
    if (coexec_unit_get_arg(u, &arg) != COEXEC_OK)
        return NULL;
    if (arg)
        return abtx_thread((ABT_thread)arg);
    /* No argument: the primary's main ULT, or a stacked scheduler's unit,
     * whose record is the scheduler's own ULT record (what
     * ABT_self_get_thread gives in its run function). */
    coexec_sched_t cs;
    if (u.p == abtx_g.main_ult.u.p)
        return &abtx_g.main_ult;
    if (coexec_unit_get_sched(u, &cs) == COEXEC_OK) {
        ABT_sched s = abtx_sched_find(cs);
        return s ? &s->ult : NULL;
    }
    return NULL;
}

/* ---- trampolines ------------------------------------------------------ */

/* t's function has returned: a detached unit's record goes now; any
 * other keeps the stream it ended on, for queries after its join. */
void abtx_detached_end(ABT_thread t)
{
    if (__builtin_expect(abtx_tool_on, 0))
        abtx_tool_unnamed_end(t);
    abtx_unit_release(t);
    rec_free(t);
}

static void ult_main(void *a)
{
    ABT_thread t = a;
    abtx_cur_set_here(t);
    coexec_thread_t me;
    if (t->detached && !t->u.p && coexec_thread_self(&me) == COEXEC_OK)
        t->u = coexec_thread_unit(me); /* no pool has seen it: its own */
    if (__builtin_expect(!abtx_cancelled(t), 1))
        t->fn(t->arg);
    /* A detached record goes now; any other keeps the stream it ended on
     * (it may have moved), for queries after its join. */
    if (t->detached)
        abtx_detached_end(t);
    else
        t->last_crank = (int16_t)abtx_self_crank();
}

bool abtx_is_trampoline(const void *fn, int tasklet)
{
    return fn == (tasklet ? (const void *)abtx_task_main
                          : (const void *)ult_main);
}

/* ---- guard pages of user stacks ----------------------------------------- */

/* Under ABT_STACK_OVERFLOW_CHECK a user-given stack gets a guard, as in
 * Argobots: its first whole page is made read-only while the ULT may run
 * on it (a write there faults into the program's SIGSEGV handler), and
 * writable again when its unit is released, before the program can free
 * the memory. Not done if the stack is under two pages, nor for a ULT
 * created without a handle or by a _to call (it may run, or be gone,
 * before the page could be set). */
static void user_stack_guard(ABT_thread t)
{
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    uintptr_t stack = (uintptr_t)t->user_stack;
    uintptr_t lo = (stack + pg - 1) & ~(uintptr_t)(pg - 1);
    if (lo + 2 * pg > stack + t->stacksize)
        return;
    if (mprotect((void *)lo, pg, PROT_READ) == 0) {
        t->guard_page = (void *)lo;
        abtx_rec_cold(t);
    }
}

static void user_stack_unguard(ABT_thread t)
{
    if (__builtin_expect(abtx_rec_is_cold(t), 0) && t->guard_page) {
        (void)mprotect(t->guard_page, (size_t)sysconf(_SC_PAGESIZE),
                       PROT_READ | PROT_WRITE);
        t->guard_page = NULL;
    }
}

/* ---- attributes -------------------------------------------------------- */

struct ABT_thread_attr_opaque {
    size_t stacksize;
    void *stack;
    ABT_bool migratable;
    void (*cb)(ABT_thread, void *); /* the migration callback */
    void *cb_arg;
};

int ABT_thread_attr_create(ABT_thread_attr *newattr)
{
    ABTX_CHECK_INIT(); /* Argobots 1.x: attributes need the runtime */
    if (!newattr)
        return ABT_ERR_INV_ARG;
    ABT_thread_attr a =
        abtx_live_new(calloc(1, sizeof(*a)), ABTX_L_THREAD_ATTR);
    if (!a)
        return ABT_ERR_MEM;
    a->stacksize = abtx_g.stacksize;
    a->migratable = ABT_TRUE;
    *newattr = a;
    return ABT_SUCCESS;
}

int ABT_thread_attr_free(ABT_thread_attr *attr)
{
    return abtx_live_free(attr, ABTX_L_THREAD_ATTR) ? ABT_SUCCESS
                                                    : ABT_ERR_INV_THREAD_ATTR;
}

int ABT_thread_attr_set_stack(ABT_thread_attr attr, void *stackaddr,
                              size_t stacksize)
{
    ABTX_CHECK_INIT();
    if (!attr)
        return ABT_ERR_INV_THREAD_ATTR;
    /* Argobots asks 8-byte alignment (ABT_ERR_INV_ARG otherwise); a stack
     * 8 bytes off 16 is used from its next 16-byte boundary (unit_start). */
    if (stackaddr && ((uintptr_t)stackaddr & 7))
        return ABT_ERR_INV_ARG;
    attr->stack = stackaddr;
    attr->stacksize = stacksize;
    return ABT_SUCCESS;
}

int ABT_thread_attr_get_stack(ABT_thread_attr attr, void **stackaddr,
                              size_t *stacksize)
{
    if (!stackaddr || !stacksize)
        return ABT_ERR_INV_ARG;
    if (!attr)
        return ABT_ERR_INV_THREAD_ATTR;
    *stackaddr = attr->stack;
    *stacksize = attr->stacksize;
    return ABT_SUCCESS;
}

int ABT_thread_attr_set_stacksize(ABT_thread_attr attr, size_t stacksize)
{
    ABTX_CHECK_INIT();
    if (!attr)
        return ABT_ERR_INV_THREAD_ATTR;
    attr->stacksize = stacksize;
    attr->stack = NULL;
    return ABT_SUCCESS;
}

int ABT_thread_attr_get_stacksize(ABT_thread_attr attr, size_t *stacksize)
{
    if (!stacksize)
        return ABT_ERR_INV_ARG;
    if (!attr)
        return ABT_ERR_INV_THREAD_ATTR;
    *stacksize = attr->stacksize;
    return ABT_SUCCESS;
}

int ABT_info_print_thread_attr(FILE *fp, ABT_thread_attr attr)
{
    if (!attr)
        return ABT_ERR_INV_THREAD_ATTR;
    if (!fp)
        return ABT_ERR_INV_ARG;
    fprintf(fp,
            "ULT attr: [stack:%p stacksize:%zu migratable:%s cb_arg:%p]\n",
            attr->stack, attr->stacksize,
            attr->migratable == ABT_TRUE ? "TRUE" : "FALSE", attr->cb_arg);
    fflush(fp);
    return ABT_SUCCESS;
}

int ABT_thread_attr_set_callback(ABT_thread_attr attr,
                                 void (*cb_func)(ABT_thread thread,
                                                 void *cb_arg),
                                 void *cb_arg)
{
    if (!attr)
        return ABT_ERR_INV_THREAD_ATTR;
    attr->cb = cb_func;
    attr->cb_arg = cb_arg;
    return ABT_SUCCESS;
}
int ABT_thread_attr_set_migratable(ABT_thread_attr attr, ABT_bool is_migratable)
{
    if (!attr)
        return ABT_ERR_INV_THREAD_ATTR;
    attr->migratable = is_migratable ? ABT_TRUE : ABT_FALSE;
    return ABT_SUCCESS;
}

/* ---- creation ---------------------------------------------------------- */

/* A creation that failed: a new record goes back; a revived one stands
 * for its finished unit again. A tasklet's then reads joined, as its end
 * left it (its joins wait for that flag alone); a ULT's, with no coexec
 * unit, has its join report the error. */
static void start_failed(ABT_thread t, bool fresh)
{
    if (fresh)
        rec_free(t);
    else if (!t->is_ult)
        atomic_store_explicit(&t->joined, 1, memory_order_release);
}

/* Creates (or, with t, revives) a ULT (ult) or tasklet in pool; without
 * t a record is taken from the cache. child_first: a ULT that runs at once
 * on the caller's stream, the caller (a ULT) going back to its pool (the
 * _to calls). Inlined into each caller, whose constant arguments leave
 * only its own case (a tasklet's creation is most of the time of one). */
static inline __attribute__((always_inline)) int
unit_start(ABT_pool pool, void (*fn)(void *), void *arg, ABT_thread_attr attr,
           bool ult, bool detached, ABT_thread t, ABT_thread *out,
           bool child_first)
{
    if (out)
        *out = ABT_THREAD_NULL; /* Argobots 1.x: the handle on an error */
    ABTX_CHECK_INIT();
    if (!abtx_pool(pool))
        return ABT_ERR_INV_POOL;
    if (!fn)
        return ABT_ERR_INV_ARG;
    bool fresh = t == NULL;
    if (fresh && !(t = rec_alloc()))
        return ABT_ERR_MEM;
    t->magic = ABTX_THREAD;
    t->is_ult = ult;
    t->detached = detached;
    t->migratable = attr ? attr->migratable == ABT_TRUE : 1;
    t->fn = fn;
    t->arg = arg;
    t->pool = pool;
    if (ult) {
        t->stacksize = attr ? attr->stacksize : abtx_g.stacksize;
        t->user_stack = attr ? attr->stack : NULL;
    }
    t->has_push_ctx = 0;
    atomic_store_explicit(&t->joined, 0, memory_order_relaxed);
    atomic_store_explicit(&t->cancel, 0, memory_order_relaxed);
    t->tool_revive = !fresh;
    t->last_crank = -1;
    t->tool_depth = 0;
    memset(&t->u, 0, sizeof(t->u));
    if (__builtin_expect(attr && attr->cb, 0) &&
        abtx_mig_cb_set(t, attr->cb, attr->cb_arg) != ABT_SUCCESS) {
        start_failed(t, fresh);
        return ABT_ERR_MEM;
    }
    if (out)
        *out = t;
    /* What a user-defined pool is told: the caller of a _to call goes back
     * to its pool (CREATE_TO, REVIVE_TO) while t, which runs at once and is
     * pushed nowhere, has its unit made all the same; a revived unit is
     * pushed as REVIVE. */
    ABT_thread self = child_first ? abtx_cur_get() : NULL;
    if (self)
        abtx_push_ctx_set(self, fresh ? ABT_POOL_CONTEXT_OP_THREAD_CREATE_TO
                                      : ABT_POOL_CONTEXT_OP_THREAD_REVIVE_TO);
    if (child_first)
        abtx_unit_make(pool, t);
    else if (!fresh && pool->def)
        abtx_push_ctx_set(t, ABT_POOL_CONTEXT_OP_THREAD_REVIVE);
    int rc;
    if (ult) {
        coexec_thread_attr_t ca, *cap = NULL;
        if (attr || !t->migratable) {
            ABTX_IGNORE(coexec_thread_attr_init(&ca));
            ca.pinned = !t->migratable;
            if (attr) {
                ca.stack_size = attr->stacksize;
                ca.stack = attr->stack;
                /* coexec wants 16-byte alignment; Argobots takes 8. */
                if ((uintptr_t)ca.stack & 15) {
                    ca.stack = (char *)ca.stack + 8;
                    ca.stack_size = ca.stack_size >= 8 ? ca.stack_size - 8 : 0;
                }
            }
            cap = &ca;
        }
        if (child_first) {
            rc = coexec_thread_create_child_first(pool->cp, ult_main, t, cap,
                                                  detached ? NULL : &t->th);
            abtx_cur_set(self);
            abtx_push_ctx_clear(self);
        } else {
            rc = coexec_thread_create(pool->cp, ult_main, t, cap,
                                      detached ? NULL : &t->th);
        }
    } else {
        /* Detached in coexec either way: the trampoline tells the end
         * (joined), t->tk only watches the unit while it lives. */
        rc = coexec_tasklet_create_watched(pool->cp, abtx_task_main, t,
                                           detached ? NULL : &t->tk);
    }
    if (rc) {
        start_failed(t, fresh);
        if (out)
            *out = ABT_THREAD_NULL;
        return abtx_err(rc, ABT_ERR_INV_POOL, ABT_ERR_POOL);
    }
    /* (A detached unit's record may be gone already: not touched.) */
    if (__builtin_expect(abtx_g.stack_check != 0, 0) && !detached &&
        !child_first && t->user_stack)
        user_stack_guard(t);
    return ABT_SUCCESS;
}

int ABT_thread_create(ABT_pool pool, void (*thread_func)(void *), void *arg,
                      ABT_thread_attr attr, ABT_thread *newthread)
{
    return unit_start(pool, thread_func, arg, attr, true, newthread == NULL,
                      NULL, newthread, false);
}

/* The caller of a _to call: a ULT (ABT_ERR_INV_XSTREAM from an external
 * thread, ABT_ERR_INV_THREAD from a tasklet or a scheduler). */
static int self_ult_rec(ABT_thread *out)
{
    ABTX_CHECK_INIT();
    coexec_caller_t who = coexec_self_caller();
    if (who == COEXEC_CALLER_EXTERNAL)
        return ABT_ERR_INV_XSTREAM;
    ABT_thread t = abtx_cur_get();
    if (who != COEXEC_CALLER_ULT || !t || !t->is_ult)
        return ABT_ERR_INV_THREAD;
    *out = t;
    return ABT_SUCCESS;
}

int ABT_thread_create_to(ABT_pool pool, void (*thread_func)(void *), void *arg,
                         ABT_thread_attr attr, ABT_thread *newthread)
{
    ABT_thread self;
    int rc = self_ult_rec(&self);
    if (rc)
        return rc;
    return unit_start(pool, thread_func, arg, attr, true, newthread == NULL,
                      NULL, newthread, true);
}

/* The pool ABT_*_create_on_xstream uses: the first of its main scheduler. */
static int xstream_pool(ABT_xstream xstream, ABT_pool *pool)
{
    ABTX_CHECK_INIT();
    if (!abtx_xstream(xstream) || !xstream->sched)
        return ABT_ERR_INV_XSTREAM;
    if (xstream->sched->num_pools < 1)
        return ABT_ERR_INV_POOL;
    *pool = xstream->sched->pools[0];
    return ABT_SUCCESS;
}

int ABT_thread_create_on_xstream(ABT_xstream xstream,
                                 void (*thread_func)(void *), void *arg,
                                 ABT_thread_attr attr, ABT_thread *newthread)
{
    if (newthread)
        *newthread = ABT_THREAD_NULL;
    ABT_pool pool;
    int rc = xstream_pool(xstream, &pool);
    return rc ? rc : ABT_thread_create(pool, thread_func, arg, attr, newthread);
}

int ABT_thread_create_many(int num_threads, ABT_pool *pool_list,
                           void (**thread_func_list)(void *), void **arg_list,
                           ABT_thread_attr attr, ABT_thread *newthread_list)
{
    if (num_threads < 0 ||
        (num_threads > 0 && (!pool_list || !thread_func_list)))
        return ABT_ERR_INV_ARG;
    for (int i = 0; i < num_threads; i++) {
        int rc = ABT_thread_create(pool_list[i], thread_func_list[i],
                                   arg_list ? arg_list[i] : NULL, attr,
                                   newthread_list ? &newthread_list[i] : NULL);
        if (rc)
            return rc;
    }
    return ABT_SUCCESS;
}

int ABT_task_create(ABT_pool pool, void (*task_func)(void *), void *arg,
                    ABT_task *newtask)
{
    return unit_start(pool, task_func, arg, NULL, false, newtask == NULL, NULL,
                      newtask, false);
}

int ABT_task_create_on_xstream(ABT_xstream xstream, void (*task_func)(void *),
                               void *arg, ABT_task *newtask)
{
    if (newtask)
        *newtask = ABT_TASK_NULL;
    ABT_pool pool;
    int rc = xstream_pool(xstream, &pool);
    return rc ? rc : ABT_task_create(pool, task_func, arg, newtask);
}

/* ---- join, free, revive ------------------------------------------------ */

bool abtx_thread_set_home(ABT_thread t, ABT_pool p)
{
    if (!t->is_ult || !t->u.p || abtx_unit_joined(t) ||
        coexec_thread_set_home(t->th, p->cp) != COEXEC_OK)
        return false;
    t->pool = p;
    return true;
}

/* coexec's state of t's unit; TERMINATED once it is gone (joined: a
 * join released a ULT's, a tasklet's ended). */
static int unit_state(ABT_thread t, coexec_unit_state_t *st)
{
    if (abtx_unit_joined(t)) {
        *st = COEXEC_UNIT_TERMINATED;
        return COEXEC_OK;
    }
    int rc = t->is_ult ? coexec_thread_get_state(t->th, st)
                       : coexec_tasklet_get_state(t->tk, st);
    if (rc == COEXEC_EHANDLE && abtx_unit_joined(t)) {
        *st = COEXEC_UNIT_TERMINATED; /* a tasklet ended meanwhile */
        return COEXEC_OK;
    }
    return rc;
}

/* Waits for the end of tasklet t (not joined yet), which its trampoline
 * tells by setting joined: a ULT yields meanwhile, an external thread
 * gives up its CPU, as Argobots' join of a tasklet does; a tasklet or a
 * scheduler's loop cannot wait (COEXEC_ECONTEXT, COEXEC_EDEADLK for t
 * itself, as coexec's joins answer). */
static __attribute__((noinline)) int tasklet_wait(ABT_thread t)
{
    switch (coexec_self_caller()) {
    case COEXEC_CALLER_TASKLET:
        return t == abtx_cur_get() ? COEXEC_EDEADLK : COEXEC_ECONTEXT;
    case COEXEC_CALLER_SCHED:
        return COEXEC_ECONTEXT;
    default:
        while (!abtx_unit_joined(t))
            abtx_wait_turn();
        return COEXEC_OK;
    }
}

/* Waits for t's unit and, for a ULT, releases it (both joins and frees
 * do: the record then stands for the finished unit, so a free after a
 * join costs coexec nothing; a tasklet's unit went as it ended). As in
 * Argobots, t runs on a stream that serves its pool (and sees that
 * stream's rank): a ULT joiner runs a ULT in place only if its own stream
 * does, and waits for a tasklet (tasklet_wait) while its stream's
 * scheduler runs what is queued. When another caller is joining a ULT
 * already, this one waits for that join to be done. The caller's record
 * self is restored after the call, which may have switched. Inlined into
 * the joins and frees, so that a unit run in place returns through as few
 * frames as possible. */
static inline __attribute__((always_inline)) int
unit_wait_plain(ABT_thread t, ABT_thread self)
{
    int rc;
    if (!t->is_ult) {
        rc = tasklet_wait(t);
        abtx_cur_set(self);
        return rc;
    }
    coexec_thread_t h = t->th;
    rc = coexec_thread_wait_free(&h);
    if (__builtin_expect(rc == COEXEC_OK || rc == COEXEC_ENOMEM, 1)) {
        user_stack_unguard(t);
        atomic_store_explicit(&t->joined, 1, memory_order_release);
    } else if (rc == COEXEC_EBUSY || (rc == COEXEC_EHANDLE && t->u.p)) {
        /* Another join has it (or has just released it: a unit's handle
         * goes stale only so). A record without a unit (a revive that
         * failed) reports the error. */
        while (!abtx_unit_joined(t))
            abtx_wait_turn();
        rc = COEXEC_OK;
    }
    abtx_cur_set(self);
    return rc;
}

/* unit_wait_plain, telling the tool that self waits for t (THREAD_JOIN). */
static __attribute__((noinline)) int unit_wait_noted(ABT_thread t,
                                                     ABT_thread self)
{
    abtx_sync_note(self, ABT_SYNC_EVENT_TYPE_THREAD_JOIN, t);
    int rc = unit_wait_plain(t, self);
    abtx_sync_note(NULL, ABT_SYNC_EVENT_TYPE_UNKNOWN, NULL);
    return rc;
}

/* Waits for t's unit and releases it, as unit_wait_plain; with a tool
 * callback registered, through unit_wait_noted. */
static inline __attribute__((always_inline)) int unit_wait(ABT_thread t,
                                                           ABT_thread self)
{
    if (__builtin_expect(atomic_load_explicit(&abtx_tool_on,
                                              memory_order_relaxed), 0))
        return unit_wait_noted(t, self);
    return unit_wait_plain(t, self);
}

static int join_error(int rc, int inv)
{
    switch (rc) {
    case COEXEC_EDEADLK:
    case COEXEC_EPERM:
    case COEXEC_EINVAL:
        return inv;
    case COEXEC_ENOMEM:
        return ABT_ERR_MEM;
    case COEXEC_ECONTEXT:
        return abtx_cur_get() ? ABT_ERR_INV_THREAD : ABT_ERR_INV_XSTREAM;
    default:
        return abtx_err(rc, inv, ABT_ERR_THREAD);
    }
}

/* What a join or free checks before it waits: 0 to go on, else the error.
 * A unit joined already is done (it cannot be the caller). */
static inline __attribute__((always_inline)) int unit_join_check(ABT_thread t,
                                                                 int inv)
{
    return !abtx_thread(t) || t->is_main || t->detached ? inv : 0;
}

/* A join while a tool callback is registered: its wait and its event. */
static __attribute__((noinline)) int unit_join_tool(ABT_thread t, int inv)
{
    if (!abtx_unit_joined(t)) {
        int rc = unit_wait_noted(t, abtx_cur_get());
        if (rc != COEXEC_OK)
            return join_error(rc, inv);
    }
    abtx_tool(t, ABT_TOOL_EVENT_THREAD_JOIN);
    return ABT_SUCCESS;
}

static inline __attribute__((always_inline)) int unit_join(ABT_thread t,
                                                          int inv)
{
    ABTX_CHECK_INIT();
    int rc = unit_join_check(t, inv);
    if (rc)
        return rc;
    /* One test of the tool for the whole join. */
    if (__builtin_expect(atomic_load_explicit(&abtx_tool_on,
                                              memory_order_relaxed), 0))
        return unit_join_tool(t, inv);
    if (!abtx_unit_joined(t)) {
        /* A join of the caller itself is coexec's EDEADLK: inv. */
        rc = unit_wait_plain(t, abtx_cur_here());
        if (__builtin_expect(rc != COEXEC_OK, 0))
            return join_error(rc, inv);
    }
    return ABT_SUCCESS;
}

static __attribute__((noinline)) int unit_free_slow(ABT_thread *tp, int inv)
{
    ABTX_CHECK_INIT();
    if (!tp)
        return ABT_ERR_INV_ARG;
    ABT_thread t = *tp;
    int rc = unit_join_check(t, inv);
    if (rc)
        return rc;
    if (!abtx_unit_joined(t)) {
        rc = unit_wait(t, abtx_cur_here());
        if (rc && rc != COEXEC_ENOMEM)
            return join_error(rc, inv);
    }
    if (__builtin_expect(abtx_tool_on, 0)) {
        abtx_tool_emit(t, ABT_TOOL_EVENT_THREAD_JOIN);
        abtx_tool_emit(t, ABT_TOOL_EVENT_THREAD_FREE);
    }
    *tp = ABT_THREAD_NULL;
    return rec_free(t);
}

/* A free's common case, with no frame: a record whose unit was joined
 * already, with no tool callback and nothing to clear in its second line
 * (cold 0: no user-pool unit, key values, guard page or id), goes back to
 * the local list (once that is registered), as rec_put.
 * Anything else is unit_free_slow's. (No switch before this point: the
 * thread-local list is the calling OS thread's.) */
static inline __attribute__((always_inline)) int unit_free(ABT_thread *tp,
                                                          int inv)
{
    ABT_thread t;
    struct rec_cache *c = &cache;
    if (__builtin_expect(abtx_initialized() && tp && (t = *tp) &&
                             t->magic == ABTX_THREAD && !t->is_main &&
                             !t->detached && abtx_unit_joined(t) &&
                             !atomic_load_explicit(&abtx_tool_on,
                                                   memory_order_relaxed) &&
                             !abtx_rec_is_cold(t) &&
                             c->registered,
                         1)) {
        *tp = ABT_THREAD_NULL;
        t->magic = ABTX_FREED;
        t->next = c->head;
        c->head = t;
        if (__builtin_expect(++c->len >= CHAIN_LEN, 0))
            cache_spill(c);
        return ABT_SUCCESS;
    }
    return unit_free_slow(tp, inv);
}

int ABT_thread_join(ABT_thread thread)
{
    return unit_join(thread, ABT_ERR_INV_THREAD);
}

int ABT_thread_free(ABT_thread *thread)
{
    return unit_free(thread, ABT_ERR_INV_THREAD);
}

int ABT_task_join(ABT_task task)
{
    return unit_join(task, ABT_ERR_INV_TASK);
}

int ABT_task_free(ABT_task *task)
{
    return unit_free(task, ABT_ERR_INV_TASK);
}

int ABT_thread_join_many(int num_threads, ABT_thread *thread_list)
{
    if (num_threads > 0 && !thread_list)
        return ABT_ERR_INV_ARG;
    for (int i = 0; i < num_threads; i++) {
        int rc = ABT_thread_join(thread_list[i]);
        if (rc)
            return rc;
    }
    return ABT_SUCCESS;
}

int ABT_thread_free_many(int num_threads, ABT_thread *thread_list)
{
    ABTX_CHECK_INIT();
    if (num_threads > 0 && !thread_list)
        return ABT_ERR_INV_ARG;
    for (int i = 0; i < num_threads; i++) {
        int rc = ABT_thread_free(&thread_list[i]);
        if (rc)
            return rc;
    }
    return ABT_SUCCESS;
}

/* Releases a finished unit's coexec unit and starts it again into pool,
 * keeping its handle. */
static int unit_revive(ABT_pool pool, void (*fn)(void *), void *arg,
                       ABT_thread *tp, bool ult, int inv, bool child_first)
{
    ABTX_CHECK_INIT();
    if (!tp || !abtx_thread(*tp) || (*tp)->is_main || (*tp)->detached ||
        (bool)(*tp)->is_ult != ult)
        return inv;
    ABT_thread t = *tp;
    coexec_unit_state_t st = COEXEC_UNIT_READY;
    int rc = unit_state(t, &st);
    if (rc)
        return abtx_err(rc, inv, inv);
    if (st != COEXEC_UNIT_TERMINATED)
        return inv; /* Argobots' code for a unit not terminated */
    if (!abtx_unit_joined(t) && (rc = unit_wait(t, abtx_cur_get())) &&
        rc != COEXEC_ENOMEM)
        return join_error(rc, inv);
    /* The same stack size, and the program's own stack if it gave one
     * (Argobots revives a ULT on the stack it had). */
    struct ABT_thread_attr_opaque a = {.stacksize = t->stacksize,
                                       .stack = t->user_stack,
                                       .migratable = t->migratable};
    return unit_start(pool, fn, arg, ult ? &a : NULL, ult, false, t, NULL,
                      child_first);
}

int ABT_thread_revive(ABT_pool pool, void (*thread_func)(void *), void *arg,
                      ABT_thread *thread)
{
    return unit_revive(pool, thread_func, arg, thread, true,
                       ABT_ERR_INV_THREAD, false);
}

int ABT_thread_revive_to(ABT_pool pool, void (*thread_func)(void *), void *arg,
                         ABT_thread *thread)
{
    ABT_thread self;
    int rc = self_ult_rec(&self);
    if (rc)
        return rc;
    if (thread && *thread == self)
        return ABT_ERR_INV_THREAD;
    return unit_revive(pool, thread_func, arg, thread, true,
                       ABT_ERR_INV_THREAD, true);
}

int ABT_task_revive(ABT_pool pool, void (*task_func)(void *), void *arg,
                    ABT_task *task)
{
    return unit_revive(pool, task_func, arg, task, false, ABT_ERR_INV_TASK,
                       false);
}

/* ---- self --------------------------------------------------------------- */

/* The calling unit: ABT_ERR_INV_XSTREAM from an external thread. */
static int self_unit(ABT_thread *out)
{
    ABTX_CHECK_INIT();
    if (coexec_self_caller() == COEXEC_CALLER_EXTERNAL)
        return ABT_ERR_INV_XSTREAM;
    ABT_thread t = abtx_cur_get();
    if (!t)
        return ABT_ERR_INV_THREAD;
    *out = t;
    return ABT_SUCCESS;
}

int ABT_self_get_thread(ABT_thread *thread)
{
    if (!thread)
        return ABT_ERR_INV_ARG;
    return self_unit(thread);
}

int ABT_thread_self(ABT_thread *thread)
{
    /* Argobots 1.x: a tasklet is not a ULT here (ABT_self_get_thread
     * returns it), and an error leaves ABT_THREAD_NULL. */
    int rc = ABT_self_get_thread(thread);
    if (!rc && !(*thread)->is_ult)
        rc = ABT_ERR_INV_THREAD;
    if (rc && thread)
        *thread = ABT_THREAD_NULL;
    return rc;
}

int ABT_task_self(ABT_task *task)
{
    if (!task)
        return ABT_ERR_INV_ARG;
    ABT_thread t = NULL;
    int rc = ABT_self_get_thread(&t);
    if (!rc && t->is_ult)
        rc = ABT_ERR_INV_TASK;
    *task = rc ? ABT_TASK_NULL : t;
    return rc;
}

/* Ids of units first asked for once a join had released their coexec
 * unit (joins do not ask: it would cost every join a call): never one of
 * coexec's (the top bit is set). */
static _Atomic uint64_t late_ids = (uint64_t)1 << 63;

/* The identifier of t: coexec's while t's coexec unit is there. */
uint64_t abtx_unit_id(ABT_thread t)
{
    /* coexec's id, cached on first use (racing queries agree on one). */
    uint64_t id = __atomic_load_n(&t->id, __ATOMIC_ACQUIRE);
    if (id)
        return id;
    if (t == abtx_cur_get())
        ABTX_IGNORE(coexec_self_id(&id));
    else if (t->u.p && coexec_unit_get_id(t->u, &id) != COEXEC_OK)
        id = atomic_fetch_add(&late_ids, 1); /* released by a join */
    uint64_t none = 0;
    if (id && !__atomic_compare_exchange_n(&t->id, &none, id, false,
                                           __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        id = none; /* another query cached one first */
    else if (id)
        abtx_rec_cold(t);
    return id;
}

int ABT_self_get_thread_id(ABT_thread_id *id)
{
    if (!id)
        return ABT_ERR_INV_ARG;
    ABT_thread t;
    int rc = self_unit(&t);
    if (!rc)
        *id = abtx_unit_id(t);
    return rc;
}

int ABT_thread_self_id(ABT_thread_id *id)
{
    /* Argobots 1.x: a tasklet is not a ULT here. */
    int rc = ABT_self_get_thread_id(id);
    return !rc && abtx_in_tasklet() ? ABT_ERR_INV_THREAD : rc;
}

int ABT_task_self_id(ABT_unit_id *id)
{
    if (!id)
        return ABT_ERR_INV_ARG;
    ABT_task t;
    int rc = ABT_task_self(&t);
    if (!rc)
        *id = abtx_unit_id(t);
    return rc;
}

int ABT_thread_get_id(ABT_thread thread, ABT_thread_id *thread_id)
{
    if (!thread_id)
        return ABT_ERR_INV_ARG;
    ABTX_CHECK_INIT();
    if (!abtx_thread(thread))
        return ABT_ERR_INV_THREAD;
    *thread_id = abtx_unit_id(thread);
    return ABT_SUCCESS;
}

int ABT_task_get_id(ABT_task task, ABT_unit_id *task_id)
{
    if (!task_id)
        return ABT_ERR_INV_ARG;
    ABTX_CHECK_INIT();
    if (!abtx_thread(task))
        return ABT_ERR_INV_TASK;
    *task_id = abtx_unit_id(task);
    return ABT_SUCCESS;
}

int ABT_self_get_type(ABT_unit_type *type)
{
    if (!type)
        return ABT_ERR_INV_ARG;
    if (!abtx_initialized()) {
        *type = ABT_UNIT_TYPE_EXT;
        return ABT_ERR_UNINITIALIZED;
    }
    switch (coexec_self_caller()) {
    case COEXEC_CALLER_EXTERNAL:
        *type = ABT_UNIT_TYPE_EXT;
        return ABT_ERR_INV_XSTREAM;
    case COEXEC_CALLER_TASKLET:
        *type = ABT_UNIT_TYPE_TASK;
        return ABT_SUCCESS;
    default:
        *type = ABT_UNIT_TYPE_THREAD;
        return ABT_SUCCESS;
    }
}

int ABT_self_is_primary(ABT_bool *flag)
{
    if (!flag)
        return ABT_ERR_INV_ARG;
    ABT_thread t;
    int rc = self_unit(&t);
    if (!rc && !t->is_ult)
        rc = ABT_ERR_INV_THREAD; /* a tasklet, in Argobots 1.x */
    *flag = !rc && t->is_main ? ABT_TRUE : ABT_FALSE;
    return rc;
}

int ABT_self_on_primary_xstream(ABT_bool *flag)
{
    if (!flag)
        return ABT_ERR_INV_ARG;
    *flag = ABT_FALSE;
    ABTX_CHECK_INIT();
    ABT_xstream x = abtx_xstream_self();
    if (!x)
        return ABT_ERR_INV_XSTREAM;
    *flag = x->primary ? ABT_TRUE : ABT_FALSE;
    return ABT_SUCCESS;
}

int ABT_self_is_unnamed(ABT_bool *flag)
{
    if (!flag)
        return ABT_ERR_INV_ARG;
    ABT_thread t;
    int rc = self_unit(&t);
    *flag = !rc && t->detached ? ABT_TRUE : ABT_FALSE;
    return rc;
}

int ABT_self_get_last_pool(ABT_pool *pool)
{
    if (!pool)
        return ABT_ERR_INV_ARG;
    ABT_thread t;
    int rc = self_unit(&t);
    *pool = rc ? ABT_POOL_NULL : t->pool;
    return rc;
}

int ABT_self_get_last_pool_id(int *pool_id)
{
    if (!pool_id)
        return ABT_ERR_INV_ARG;
    ABT_pool p;
    int rc = ABT_self_get_last_pool(&p);
    *pool_id = !rc && abtx_pool(p) ? p->id : -1;
    return rc;
}

int ABT_self_get_unit(ABT_unit *unit)
{
    ABT_thread t;
    int rc = self_unit(&t);
    if (!rc)
        return ABT_thread_get_unit(t, unit);
    return rc;
}

int ABT_self_set_arg(void *arg)
{
    ABT_thread t;
    int rc = self_unit(&t);
    if (!rc)
        t->arg = arg;
    return rc;
}

int ABT_self_get_arg(void **arg)
{
    if (!arg)
        return ABT_ERR_INV_ARG;
    ABT_thread t;
    int rc = self_unit(&t);
    *arg = rc ? NULL : t->arg;
    return rc;
}

int ABT_self_get_thread_func(void (**thread_func)(void *))
{
    ABT_thread t;
    int rc = self_unit(&t);
    *thread_func = rc ? NULL : t->fn;
    return rc;
}

/* A coexec scheduling call of the calling ULT, its record restored after.
 * From a tasklet or a scheduler's loop, Argobots 1.x makes ABT_thread_yield
 * a no-op (noop_ok) while ABT_self_yield and the suspends fail. */
static int self_exit(void);

/* op() by self while a tool callback is registered: the program's own
 * yield or suspend (USER). */
static __attribute__((noinline)) int switch_noted(ABT_thread self,
                                                  int (*op)(void))
{
    abtx_sync_note(self, ABT_SYNC_EVENT_TYPE_USER, NULL);
    if (self)
        atomic_store_explicit(&self->at_yield, 1, memory_order_relaxed);
    int rc = op();
    if (self)
        atomic_store_explicit(&self->at_yield, 0, memory_order_relaxed);
    abtx_sync_note(NULL, ABT_SYNC_EVENT_TYPE_UNKNOWN, NULL);
    return rc;
}

/* What follows op()'s answer rc for self (the caller's record before
 * op), op having switched or not. */
static int self_switched(ABT_thread self, int rc, bool noop_ok)
{
    if (__builtin_expect(rc == COEXEC_ECONTEXT, 0)) {
        if (noop_ok)
            return ABT_SUCCESS;
        return coexec_self_caller() == COEXEC_CALLER_EXTERNAL
                   ? ABT_ERR_INV_XSTREAM
                   : ABT_ERR_INV_THREAD;
    }
    abtx_cur_set(self);
    /* A cancel asked meanwhile ends the ULT here (never the main ULT). */
    if (__builtin_expect(self && abtx_cancelled(self), 0) && self->is_ult &&
        !self->is_main)
        return self_exit();
    if (__builtin_expect(rc == COEXEC_OK, 1) || rc == COEXEC_ECANCELED)
        return ABT_SUCCESS;
    return abtx_err(rc, ABT_ERR_INV_THREAD, ABT_ERR_INV_THREAD);
}

static int self_switch(int (*op)(void), bool noop_ok)
{
    ABTX_CHECK_INIT();
    /* op refuses a caller that is not a ULT (COEXEC_ECONTEXT) before it
     * does anything: who the caller is is asked only then. */
    ABT_thread self = abtx_cur_here(); /* nothing switched yet */
    int rc = __builtin_expect(atomic_load_explicit(&abtx_tool_on,
                                                   memory_order_relaxed), 0)
                 ? switch_noted(self, op)
                 : op();
    return self_switched(self, rc, noop_ok);
}

/* The yields: self_switch(coexec_yield, noop_ok), with its common ending
 * (yielded, no cancel asked meanwhile) inline. */
static inline __attribute__((always_inline)) int self_yield(bool noop_ok)
{
    if (__builtin_expect(!abtx_initialized() ||
                             atomic_load_explicit(&abtx_tool_on,
                                                  memory_order_relaxed),
                         0))
        return self_switch(coexec_yield, noop_ok);
    ABT_thread self = abtx_cur_here(); /* nothing switched yet */
    int rc = coexec_yield();
    if (__builtin_expect(rc != COEXEC_OK || !self || abtx_cancelled(self),
                         0))
        return self_switched(self, rc, noop_ok);
    abtx_cur_set(self);
    return ABT_SUCCESS;
}

int ABT_self_yield(void)
{
    return self_yield(false);
}

int ABT_thread_yield(void)
{
    return self_yield(true);
}

int ABT_self_suspend(void)
{
    return self_switch(coexec_self_suspend, false);
}

/* What a _to call does: the coexec hand-off, and what the caller does
 * instead when the target cannot be handed the CPU (not queued where the
 * caller's stream may take it, not held, or for a resume not suspended):
 * the plain operation, after resuming the target. */
enum to_kind { TO_YIELD, TO_SUSPEND, TO_EXIT };

static int self_to(ABT_thread thread, enum to_kind kind, bool resume)
{
    static int (*const direct[2][3])(coexec_thread_t) = {
        {coexec_yield_to, coexec_self_suspend_to, coexec_thread_exit_to},
        {coexec_resume_yield_to, coexec_resume_suspend_to,
         coexec_resume_exit_to}};
    static int (*const plain[3])(void) = {coexec_yield, coexec_self_suspend,
                                          coexec_thread_exit};
    ABT_thread self;
    int rc = self_ult_rec(&self);
    if (rc)
        return rc;
    if (!abtx_thread(thread) || !thread->is_ult || thread == self)
        return ABT_ERR_INV_THREAD;
    if (kind == TO_EXIT && (self->is_main || (!resume && thread->is_main)))
        return ABT_ERR_INV_THREAD;
    coexec_thread_t th = thread->th; /* read before anything switches */
    bool freed = false;
    if (kind == TO_EXIT && self->detached) {
        /* Nobody frees it after us: done before a call that does not
         * return, taken back if it does (it failed). Its key values'
         * destructors run now, as at any end of a ULT. */
        if (self->keys)
            abtx_keys_release(self);
        if (__builtin_expect(abtx_tool_on, 0))
            abtx_tool_unnamed_end(self);
        abtx_unit_release(self);
        rec_free_undoable(self);
        freed = true;
    }
    /* As in Argobots, t keeps the pool it belongs to (coexec would give
     * a t popped out of its pool the caller's). */
    if (!resume && abtx_pool(thread->pool))
        (void)abtx_thread_set_home(thread, thread->pool);
    if (kind == TO_YIELD) /* for a user-defined pool we go back to */
        abtx_push_ctx_set(self, resume
                                    ? ABT_POOL_CONTEXT_OP_THREAD_RESUME_YIELD_TO
                                    : ABT_POOL_CONTEXT_OP_THREAD_YIELD_TO);
    /* A finished target (one a join released) cannot be handed the CPU. */
    abtx_sync_begin(self, ABT_SYNC_EVENT_TYPE_USER, NULL);
    rc = abtx_unit_joined(thread) ? COEXEC_ESTATE : direct[resume][kind](th);
    abtx_push_ctx_clear(self);
    if (rc == COEXEC_ESTATE || rc == COEXEC_EPERM) {
        if (resume)
            ABTX_IGNORE(coexec_thread_resume(th));
        rc = plain[kind]();
    }
    abtx_sync_end();
    if (freed)
        rec_unfree(self);
    abtx_cur_set(self);
    if (rc == COEXEC_ECANCELED)
        return ABT_SUCCESS;
    return abtx_err(rc, ABT_ERR_INV_THREAD, ABT_ERR_THREAD);
}

int ABT_thread_yield_to(ABT_thread thread)
{
    /* Argobots 1.x: a no-op from an external thread, a tasklet or a
     * scheduler. */
    ABTX_CHECK_INIT();
    if (coexec_self_caller() != COEXEC_CALLER_ULT)
        return ABT_SUCCESS;
    ABT_thread self = abtx_cur_get();
    if (!self || !self->is_ult)
        return ABT_SUCCESS;
    return self_to(thread, TO_YIELD, false);
}

int ABT_self_yield_to(ABT_thread thread)
{
    return self_to(thread, TO_YIELD, false);
}

int ABT_self_suspend_to(ABT_thread thread)
{
    return self_to(thread, TO_SUSPEND, false);
}

int ABT_self_exit_to(ABT_thread thread)
{
    return self_to(thread, TO_EXIT, false);
}

int ABT_self_resume_yield_to(ABT_thread thread)
{
    return self_to(thread, TO_YIELD, true);
}

int ABT_self_resume_suspend_to(ABT_thread thread)
{
    return self_to(thread, TO_SUSPEND, true);
}

int ABT_self_resume_exit_to(ABT_thread thread)
{
    return self_to(thread, TO_EXIT, true);
}

int ABT_thread_resume(ABT_thread thread)
{
    ABTX_CHECK_INIT();
    /* An unnamed ULT may be resumed too (its handle comes from
     * ABT_self_get_thread or a pool): its record knows its unit. */
    if (!abtx_thread(thread) || !thread->is_ult || !thread->u.p)
        return ABT_ERR_INV_THREAD;
    /* Argobots 1.x refuses a ULT that is not suspended (blocked), where
     * coexec would keep the resume for its next suspend. */
    coexec_unit_state_t st;
    int rc = coexec_thread_get_state(thread->th, &st);
    if (!rc && st != COEXEC_UNIT_BLOCKED)
        return ABT_ERR_THREAD;
    if (!rc)
        rc = coexec_thread_resume(thread->th);
    return abtx_err(rc, ABT_ERR_INV_THREAD, ABT_ERR_THREAD);
}

static int self_exit(void)
{
    ABT_thread self;
    int rc = self_unit(&self);
    if (rc)
        return rc;
    if (!self->is_ult || self->is_main)
        return ABT_ERR_INV_THREAD;
    if (self->detached)
        abtx_detached_end(self);
    rc = coexec_thread_exit();
    return abtx_err(rc, ABT_ERR_INV_THREAD, ABT_ERR_INV_THREAD);
}

int ABT_thread_exit(void)
{
    return self_exit();
}

/* Asks t to end: if its function has not started it never does; a ULT
 * already running exits at its next ABT_thread_yield, ABT_self_yield or
 * ABT_self_suspend (a tasklet already running runs to its end). Its joins
 * complete as for any other end. */
static int unit_cancel(ABT_thread t, int inv)
{
    ABTX_CHECK_INIT();
    if (!abtx_thread(t) || t->is_main)
        return inv;
    atomic_store_explicit(&t->cancel, 1, memory_order_release);
    return ABT_SUCCESS;
}

int ABT_thread_cancel(ABT_thread thread)
{
    return unit_cancel(thread, ABT_ERR_INV_THREAD);
}

int ABT_task_cancel(ABT_task task)
{
    return unit_cancel(task, ABT_ERR_INV_TASK);
}

int ABT_self_exit(void)
{
    return self_exit();
}

/* ---- queries and settings on a unit ------------------------------------ */

int ABT_thread_get_state(ABT_thread thread, ABT_thread_state *state)
{
    if (!state)
        return ABT_ERR_INV_ARG;
    ABTX_CHECK_INIT();
    if (abtx_thread(thread) && thread == abtx_cur_get()) {
        *state = ABT_THREAD_STATE_RUNNING;
        return ABT_SUCCESS;
    }
    if (!abtx_thread(thread) || thread->detached)
        return ABT_ERR_INV_THREAD;
    coexec_unit_state_t s;
    int rc = unit_state(thread, &s);
    if (rc)
        return abtx_err(rc, ABT_ERR_INV_THREAD, ABT_ERR_THREAD);
    *state = (ABT_thread_state)s; /* same order of the four states */
    return ABT_SUCCESS;
}

int ABT_task_get_state(ABT_task task, ABT_task_state *state)
{
    if (!state)
        return ABT_ERR_INV_ARG;
    ABT_thread_state s;
    int rc = ABT_thread_get_state(task, &s);
    if (rc)
        return rc == ABT_ERR_INV_THREAD ? ABT_ERR_INV_TASK : rc;
    *state = s == ABT_THREAD_STATE_READY        ? ABT_TASK_STATE_READY
             : s == ABT_THREAD_STATE_TERMINATED ? ABT_TASK_STATE_TERMINATED
                                                : ABT_TASK_STATE_RUNNING;
    return ABT_SUCCESS;
}

int ABT_thread_get_last_pool(ABT_thread thread, ABT_pool *pool)
{
    if (!pool)
        return ABT_ERR_INV_ARG;
    ABTX_CHECK_INIT();
    if (!abtx_thread(thread))
        return ABT_ERR_INV_THREAD;
    *pool = thread->pool;
    return ABT_SUCCESS;
}

int ABT_thread_get_last_pool_id(ABT_thread thread, int *id)
{
    if (!id)
        return ABT_ERR_INV_ARG;
    ABTX_CHECK_INIT();
    if (!abtx_thread(thread))
        return ABT_ERR_INV_THREAD;
    *id = abtx_pool(thread->pool) ? thread->pool->id : -1;
    return ABT_SUCCESS;
}

int ABT_task_get_last_pool(ABT_task task, ABT_pool *pool)
{
    return ABT_thread_get_last_pool(task, pool);
}

int ABT_task_get_last_pool_id(ABT_task task, int *id)
{
    return ABT_thread_get_last_pool_id(task, id);
}

int ABT_thread_get_unit(ABT_thread thread, ABT_unit *unit)
{
    if (!unit)
        return ABT_ERR_INV_ARG;
    ABTX_CHECK_INIT();
    if (!abtx_thread(thread))
        return ABT_ERR_INV_THREAD;
    *unit = thread->unit ? thread->unit : (ABT_unit)thread;
    return ABT_SUCCESS;
}

int ABT_thread_equal(ABT_thread thread1, ABT_thread thread2, ABT_bool *result)
{
    if (!result)
        return ABT_ERR_INV_ARG;
    *result = thread1 == thread2 ? ABT_TRUE : ABT_FALSE;
    return ABT_SUCCESS;
}

int ABT_task_equal(ABT_task task1, ABT_task task2, ABT_bool *result)
{
    return ABT_thread_equal(task1, task2, result);
}

int ABT_thread_is_primary(ABT_thread thread, ABT_bool *is_primary)
{
    if (!is_primary)
        return ABT_ERR_INV_ARG;
    ABTX_CHECK_INIT();
    if (!abtx_thread(thread))
        return ABT_ERR_INV_THREAD;
    *is_primary = thread->is_main ? ABT_TRUE : ABT_FALSE;
    return ABT_SUCCESS;
}

int ABT_thread_is_unnamed(ABT_thread thread, ABT_bool *is_unnamed)
{
    if (!is_unnamed)
        return ABT_ERR_INV_ARG;
    ABTX_CHECK_INIT();
    if (!abtx_thread(thread))
        return ABT_ERR_INV_THREAD;
    *is_unnamed = thread->detached ? ABT_TRUE : ABT_FALSE;
    return ABT_SUCCESS;
}

int ABT_thread_get_stacksize(ABT_thread thread, size_t *stacksize)
{
    if (!stacksize)
        return ABT_ERR_INV_ARG;
    ABTX_CHECK_INIT();
    if (!abtx_thread(thread))
        return ABT_ERR_INV_THREAD;
    *stacksize = thread->is_ult ? thread->stacksize : 0;
    return ABT_SUCCESS;
}

/* Where t's stack is, as Argobots reports it: the size the ULT was given
 * (ABT_thread_get_stacksize, what Argobots' thread attributes give back),
 * at the top of the stack coexec gave it, where its frames are; the
 * runtime's stack may be a little larger (rounded to pages): the slack and
 * the guard region are below the reported range. A tasklet and the primary's
 * main ULT (on the OS thread's stack, not managed by the runtime) have
 * none: NULL and 0. */
void abtx_thread_stack(ABT_thread t, void **addr, size_t *size)
{
    coexec_stack_info_t si;
    *addr = NULL;
    *size = 0;
    if (t->is_ult && abtx_unit_joined(t)) {
        /* Finished: its runtime stack was given back, a user's stays. */
        *addr = t->user_stack;
        *size = t->stacksize;
        return;
    }
    if (!t->is_ult || t->is_main || !t->u.p ||
        coexec_thread_get_stack(t->th, &si) != COEXEC_OK)
        return;
    if (si.user_stack) {
        /* The program's stack, as it gave it. */
        *addr = t->user_stack;
        *size = t->stacksize;
        return;
    }
    size_t n = t->stacksize ? t->stacksize : si.size;
    /* A cached stack keeps 64 bytes of its own above the usable part: a
     * size given that is a little more than the usable one still starts
     * at the stack's base. */
    *addr = !si.base ? NULL
            : n <= si.size ? (char *)si.base + (si.size - n)
                           : si.base;
    *size = n;
    /* Under ABT_STACK_OVERFLOW_CHECK the guard below a stack the runtime
     * made is reported as the stack's bottom, as Argobots carves its
     * guard page out of the stack (a program looks for it there). */
    if (abtx_g.stack_check && si.base && si.guard_size) {
        char *lo = (char *)si.base - si.guard_size;
        *size += (size_t)((char *)*addr - lo);
        *addr = lo;
    }
}

int ABT_thread_get_stack(ABT_thread thread, void **stackaddr, size_t *stacksize)
{
    ABTX_CHECK_INIT();
    if (!abtx_thread(thread))
        return ABT_ERR_INV_THREAD;
    void *a;
    size_t n;
    abtx_thread_stack(thread, &a, &n);
    if (stackaddr)
        *stackaddr = a;
    if (stacksize)
        *stacksize = n;
    return ABT_SUCCESS;
}

/* The stream t runs on or last ran on; ABT_XSTREAM_NULL before it first
 * runs (or once it is gone). */
static ABT_xstream last_xstream(ABT_thread t)
{
    int crank = -1;
    if (abtx_unit_joined(t))
        crank = t->last_crank;
    else if (!t->u.p || coexec_unit_get_last_rank(t->u, &crank) != COEXEC_OK)
        crank = abtx_unit_joined(t) ? t->last_crank : -1; /* ended now */
    ABT_xstream x = abtx_xstream_of_crank(crank);
    return abtx_xstream(x) ? x : ABT_XSTREAM_NULL;
}

int ABT_thread_get_last_xstream(ABT_thread thread, ABT_xstream *xstream)
{
    if (!xstream)
        return ABT_ERR_INV_ARG;
    ABTX_CHECK_INIT();
    if (!abtx_thread(thread))
        return ABT_ERR_INV_THREAD;
    *xstream = last_xstream(thread);
    return ABT_SUCCESS;
}

int ABT_task_get_xstream(ABT_task task, ABT_xstream *xstream)
{
    if (!xstream)
        return ABT_ERR_INV_ARG;
    ABTX_CHECK_INIT();
    if (!abtx_thread(task))
        return ABT_ERR_INV_TASK;
    *xstream = last_xstream(task);
    return ABT_SUCCESS;
}

int ABT_thread_set_arg(ABT_thread thread, void *arg)
{
    ABTX_CHECK_INIT();
    if (!abtx_thread(thread))
        return ABT_ERR_INV_THREAD;
    thread->arg = arg;
    return ABT_SUCCESS;
}

int ABT_thread_get_arg(ABT_thread thread, void **arg)
{
    if (!arg)
        return ABT_ERR_INV_ARG;
    ABTX_CHECK_INIT();
    if (!abtx_thread(thread))
        return ABT_ERR_INV_THREAD;
    *arg = thread->arg;
    return ABT_SUCCESS;
}

int ABT_task_get_arg(ABT_task task, void **arg)
{
    if (!arg)
        return ABT_ERR_INV_ARG;
    ABTX_CHECK_INIT();
    if (!abtx_thread(task))
        return ABT_ERR_INV_TASK;
    *arg = task->arg;
    return ABT_SUCCESS;
}

int ABT_thread_get_thread_func(ABT_thread thread, void (**thread_func)(void *))
{
    if (!abtx_thread(thread))
        return ABT_ERR_INV_THREAD;
    *thread_func = thread->fn;
    return ABT_SUCCESS;
}

int ABT_thread_set_migratable(ABT_thread thread, ABT_bool migratable)
{
    ABTX_CHECK_INIT();
    if (!abtx_thread(thread))
        return ABT_ERR_INV_THREAD;
    if (thread->is_main)
        return ABT_SUCCESS; /* bound to the primary in coexec */
    thread->migratable = migratable ? 1 : 0;
    /* A ULT's pinning follows; a tasklet is created unpinned whatever its
     * flag (as its creation does), and its coexec handle only watches a
     * unit that may end and be reused at any time (no setting through
     * it). */
    if (thread->is_ult && thread->u.p)
        ABTX_IGNORE(coexec_unit_set_pinned(thread->u, !thread->migratable));
    return ABT_SUCCESS;
}

int ABT_thread_is_migratable(ABT_thread thread, ABT_bool *is_migratable)
{
    if (!is_migratable)
        return ABT_ERR_INV_ARG;
    ABTX_CHECK_INIT();
    if (!abtx_thread(thread))
        return ABT_ERR_INV_THREAD;
    *is_migratable = thread->migratable && !thread->is_main ? ABT_TRUE
                                                            : ABT_FALSE;
    return ABT_SUCCESS;
}

int ABT_task_set_migratable(ABT_task task, ABT_bool flag)
{
    return ABT_thread_set_migratable(task, flag);
}

int ABT_task_is_migratable(ABT_task task, ABT_bool *flag)
{
    return ABT_thread_is_migratable(task, flag);
}

int ABT_thread_get_attr(ABT_thread thread, ABT_thread_attr *attr)
{
    ABTX_CHECK_INIT();
    if (!abtx_thread(thread))
        return ABT_ERR_INV_THREAD;
    if (!thread->is_ult)
        return ABT_ERR_INV_THREAD; /* Argobots 1.x: a tasklet has none */
    int rc = ABT_thread_attr_create(attr);
    if (!rc) {
        /* The stack it has (ABT_thread_get_stack), as Argobots gives it. */
        abtx_thread_stack(thread, &(*attr)->stack, &(*attr)->stacksize);
        if (!(*attr)->stack && !(*attr)->stacksize)
            (*attr)->stacksize = thread->stacksize;
        (*attr)->migratable = thread->migratable ? ABT_TRUE : ABT_FALSE;
        abtx_mig_cb_get(thread, &(*attr)->cb, &(*attr)->cb_arg);
    }
    return rc;
}

/* ---- migration ---------------------------------------------------------- */

int ABT_thread_set_callback(ABT_thread thread,
                            void (*cb_func)(ABT_thread thread, void *cb_arg),
                            void *cb_arg)
{
    ABTX_CHECK_INIT();
    if (!abtx_thread(thread))
        return ABT_ERR_INV_THREAD;
    return abtx_mig_cb_set(thread, cb_func, cb_arg);
}

int ABT_thread_migrate_to_pool(ABT_thread thread, ABT_pool pool)
{
    ABTX_CHECK_INIT();
    if (!abtx_thread(thread) || !thread->is_ult || thread->detached)
        return ABT_ERR_INV_THREAD;
    if (!abtx_pool(pool))
        return ABT_ERR_INV_POOL;
    if (!thread->migratable || thread->is_main)
        return ABT_ERR_INV_THREAD; /* Argobots' code: not migratable */
    ABT_thread self = abtx_cur_get();
    int rc = coexec_thread_migrate_to(
        thread->th, pool->cp);
    abtx_cur_set(self);
    if (rc == COEXEC_EPERM)
        return ABT_ERR_MIGRATION_NA;
    if (rc == COEXEC_ESTATE)
        return ABT_ERR_MIGRATION_TARGET;
    if (rc)
        return abtx_err(rc, ABT_ERR_INV_THREAD, ABT_ERR_MIGRATION_TARGET);
    thread->pool = pool;
    /* Its callback, once the move is made (or, for a unit running
     * elsewhere, asked for: it happens at its next yield or wake). */
    void (*cb)(ABT_thread, void *);
    void *arg;
    abtx_mig_cb_get(thread, &cb, &arg); /* under the record's key lock */
    if (cb)
        cb(thread, arg);
    return ABT_SUCCESS;
}

int ABT_thread_migrate_to_sched(ABT_thread thread, ABT_sched sched)
{
    /* Argobots' order: the runtime, the thread, then the scheduler. */
    ABTX_CHECK_INIT();
    if (!abtx_thread(thread))
        return ABT_ERR_INV_THREAD;
    if (!abtx_sched(sched) || sched->num_pools < 1)
        return ABT_ERR_INV_SCHED;
    return ABT_thread_migrate_to_pool(thread, sched->pools[0]);
}

int ABT_thread_migrate_to_xstream(ABT_thread thread, ABT_xstream xstream)
{
    ABT_pool pool;
    int rc = xstream_pool(xstream, &pool);
    return rc ? rc : ABT_thread_migrate_to_pool(thread, pool);
}

int ABT_thread_migrate(ABT_thread thread)
{
    ABTX_CHECK_INIT();
    if (!abtx_thread(thread))
        return ABT_ERR_INV_THREAD;
    /* To a stream other than the one of its pool, if there is one. */
    ABT_xstream target = NULL;
    pthread_mutex_lock(&abtx_lock);
    for (ABT_xstream x = abtx_g.xstreams; x; x = x->next)
        if (x->magic == ABTX_XSTREAM && !x->joined && x->sched &&
            x->sched->num_pools > 0 && x->sched->pools[0] != thread->pool) {
            target = x;
            break;
        }
    pthread_mutex_unlock(&abtx_lock);
    if (!target)
        return ABT_ERR_MIGRATION_NA;
    return ABT_thread_migrate_to_xstream(thread, target);
}

/* The unit goes to pool at its next push (a yield, a wake, a push by a
 * scheduler), not now, as in Argobots. */
int ABT_thread_set_associated_pool(ABT_thread thread, ABT_pool pool)
{
    ABTX_CHECK_INIT();
    if (!abtx_thread(thread))
        return ABT_ERR_INV_THREAD;
    if (!abtx_pool(pool))
        return ABT_ERR_INV_POOL;
    /* The primary's main ULT in another stream's pool would wait there
     * for ever (a pool nothing serves yet, as one of a scheduler the
     * primary is about to get, is allowed, as in Argobots). */
    if (thread->is_main && abtx_main_home_stranded(pool))
        return ABT_ERR_INV_THREAD;
    ABT_thread self = abtx_cur_get();
    if (thread->is_ult && thread->u.p) {
        int rc = coexec_thread_set_home(thread->th, pool->cp);
        abtx_cur_set(self);
        if (rc)
            return abtx_err(rc, ABT_ERR_INV_THREAD,
                            rc == COEXEC_ESTATE ? ABT_ERR_THREAD : ABT_ERR_POOL);
    }
    /* The running caller is in no pool: the unit a user-defined pool made
     * for it goes now (a queued unit's goes when it moves). */
    if (thread == self && thread->unit_pool && thread->unit_pool != pool)
        abtx_unit_release(thread);
    thread->pool = pool;
    return ABT_SUCCESS;
}

int ABT_self_set_associated_pool(ABT_pool pool)
{
    ABT_thread t;
    int rc = self_unit(&t);
    return rc ? rc : ABT_thread_set_associated_pool(t, pool);
}

int ABT_unit_set_associated_pool(ABT_unit unit, ABT_pool pool)
{
    if (!unit)
        return ABT_ERR_INV_UNIT;
    ABT_thread t = NULL;
    if (ABT_unit_get_thread(unit, &t) || !t)
        return ABT_ERR_INV_UNIT;
    return ABT_thread_set_associated_pool(t, pool);
}
