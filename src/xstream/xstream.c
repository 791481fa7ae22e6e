/*
 * src/xstream/xstream.c: execution streams: the primary adopting the
 * init thread, secondary OS threads, their default setup, and the public
 * stream API.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>

#include "arch/clock.h"
#include "arch/futex.h"
#include "base/global.h"
#include "base/osthread.h"
#include "base/valgrind.h"
#include "pool/pool.h"
#include "sched/sched.h"
#include "thread/switch.h"
#include "thread/thread.h"
#include "thread/unit.h"
#include "xstream/xstream.h"
#include "thread/tool.h"

/* ---- records --------------------------------------------------------- */

struct coexec__xs_registry coexec__xsr;

/* Under coexec__g.lock. Stream records are recycled, never freed before
 * finalize, so stale handles can be checked safely. */
static struct coexec_xstream_rec *xs_record_new(void)
{
    struct coexec_xstream_rec *xs = coexec__xsr.free;
    uint64_t gen;
    bool fresh = !xs;
    if (xs) {
        coexec__xsr.free = xs->free_next;
        gen = gen_next(atom_load_rlx_u64(&xs->gen));
        atom_fence_rel(); /* before any write: see HANDLE_STILL */
    } else {
        if (coexec__xsr.num_all == MAX_XSTREAMS)
            return NULL;
        xs = aligned_alloc(CACHE_LINE, sizeof *xs);
        if (!xs)
            return NULL;
        coexec__xsr.all[coexec__xsr.num_all++] = xs;
        gen = gen_first();
        xs->mb.wdir = NULL;
    }
    /* The waker pages and the timer array outlive a stream, so a late
     * waker of a stopped one never touches freed memory. */
    struct wdir *wdir = xs->mb.wdir;
    /* The timer heap is left alone: the timer keeper (sched/keeper.c) may be
     * reading it. A stopped stream's heap is empty and stays valid. */
    memset(xs, 0, offsetof(struct coexec_xstream_rec, timers));
    if (wdir)
        memset(wdir, 0, sizeof *wdir);
    xs->mb.wdir = wdir;
    if (fresh) {
        atom_store_rlx_u32(&xs->thread_users, 0);
        memset(&xs->timers, 0, sizeof xs->timers);
        atom_store_rlx_u64(&xs->timers.next, UINT64_MAX);
        coexec__timerheap_register(&xs->timers);
    }
    atom_store_rlx_u64(&xs->gen, gen);
    memset(xs->dist, 0xff, sizeof xs->dist);
    xs->since_ns = clock_now_ns();
    return xs;
}

static int rank_take(struct coexec_xstream_rec *xs)
{
    for (int r = 0; r < MAX_XSTREAMS; r++) {
        if (!coexec__xsr.by_rank[r]) {
            coexec__xsr.by_rank[r] = xs;
            coexec__xsr.num++;
            xs->rank = r;
            return r;
        }
    }
    return -1;
}

static void steal_pool_add(struct coexec_pool_rec *p)
{
    unsigned n = atom_load_rlx_u32(&coexec__steal.num);
    atom_store_rel_ptr(&coexec__steal.pools[n], p);
    atom_store_rel_u32(&coexec__steal.num, n + 1);
}

static void steal_pool_remove(struct coexec_pool_rec *p)
{
    unsigned n = atom_load_rlx_u32(&coexec__steal.num);
    for (unsigned i = 0; i < n; i++) {
        if (atom_load_rlx_ptr(&coexec__steal.pools[i]) == p) {
            /* Move the last entry here; a thief reading the old slot still
             * sees a valid (type-stable) pool record. */
            void *last = atom_load_rlx_ptr(&coexec__steal.pools[n - 1]);
            atom_store_rel_ptr(&coexec__steal.pools[i], last);
            atom_store_rel_u32(&coexec__steal.num, n - 1);
            atom_store_rel_ptr(&coexec__steal.pools[n - 1], NULL);
            return;
        }
    }
}

/* Builds the default setup: an MPMC LIFO pool others may steal from, and
 * the configured scheduler kind with stealing on. */
static int default_setup(struct coexec_sched_rec **out)
{
    struct coexec_pool_rec *p = coexec__pool_new_default();
    if (!p)
        return COEXEC_ENOMEM;
    struct coexec_sched_rec *s =
        coexec__sched_new(coexec__g.cfg.sched_kind, &p, 1,
                          coexec__g.cfg.event_freq, coexec__g.idle_spin_ns, 1);
    if (!s) {
        coexec__pool_release(p);
        return COEXEC_ENOMEM;
    }
    s->is_default = 1;
    *out = s;
    return COEXEC_OK;
}

static void default_setup_release(struct coexec_sched_rec *s)
{
    struct coexec_pool_rec *p = s->pools[0];
    coexec__sched_release(s);
    coexec__pool_release(p);
}

static void stack_bounds_of_self(void **lo, size_t *size)
{
    pthread_attr_t a;
    *lo = NULL;
    *size = 0;
    if (pthread_getattr_np(pthread_self(), &a) == 0) {
        pthread_attr_getstack(&a, lo, size);
        pthread_attr_destroy(&a);
    }
}

/* ---- secondary streams ---------------------------------------------------- */

/*
 * Waits while *word == busy; whoever changes it calls wake_word. An
 * external thread sleeps on the futex. A ULT parks, on a list the changer
 * empties: parked, it is in no pool, so the stream it waits for never runs
 * it nor waits for it to leave a pool that stream serves (a ULT that kept
 * yielding there would be run by the very stream it waits for, and stop
 * it from draining).
 */
struct xs_waiter {
    coexec_waker_t w;
    bool woken; /* under waiters_lock */
    struct xs_waiter *next;
};

/* Guards every stream's waiter lists (a few pointer moves at a time). */
static pthread_mutex_t waiters_lock = PTHREAD_MUTEX_INITIALIZER;

static void wait_word(atom_u32_t *word, uint32_t busy, atom_ptr_t *list)
{
    struct xs_waiter n = {.woken = false};
    if (coexec_self_waker(&n.w) != COEXEC_OK) { /* not a ULT */
        while (atom_load_acq_u32(word) == busy)
            coexec__futex_wait(word, busy, NULL);
        return;
    }
    pthread_mutex_lock(&waiters_lock);
    if (atom_load_acq_u32(word) != busy) {
        pthread_mutex_unlock(&waiters_lock);
        return;
    }
    n.next = atom_load_rlx_ptr(list);
    atom_store_rlx_ptr(list, &n);
    pthread_mutex_unlock(&waiters_lock);
    for (;;) {
        pthread_mutex_lock(&waiters_lock);
        bool woken = n.woken;
        pthread_mutex_unlock(&waiters_lock);
        if (woken)
            return;
        /* A wake recorded earlier may end a park at once: look again. */
        IGNORE_RESULT(coexec_park());
    }
}

/* After *word changed: wakes the futex sleepers and the parked ULTs. */
static void wake_word(atom_u32_t *word, atom_ptr_t *list)
{
    coexec__futex_wake(word, 1 << 30);
    pthread_mutex_lock(&waiters_lock);
    struct xs_waiter *n = atom_load_rlx_ptr(list);
    atom_store_rlx_ptr(list, NULL);
    while (n) {
        struct xs_waiter *next = n->next;
        /* Woken under the lock: the waiter's frame lives until it sees
         * woken, which it reads under the lock too. */
        IGNORE_RESULT(coexec_waker_wake(n->w));
        n->woken = true;
        n = next;
    }
    pthread_mutex_unlock(&waiters_lock);
}

/* Called by xs's own thread as it ends: no caller may be using the thread
 * (xs_thread_enter) once it has exited. glibc's affinity calls on an ended
 * thread act on the caller itself (the kernel cleared its tid), and after
 * the join its descriptor may be gone. Each side stores its word, then the
 * full fence, then looks at the other's: one of the two sees the other. */
static void thread_users_out(struct coexec_xstream_rec *xs)
{
    atom_store_rlx_u32(&xs->thread_gone, 1);
    atom_fence_sc();
    while (atom_load_acq_u32(&xs->thread_users) != 0)
        sched_yield(); /* an affinity call: a system call long */
}

static void *xs_main(void *arg)
{
    struct coexec_xstream_rec *xs = arg;
    coexec__xs_set_self(xs);
    coexec__altstack_enter(&xs->altstack); /* for the overflow report */
    coexec__affinity_bind_self(xs->cpu);
    /* The stream parks with a timeout when its units sleep: the kernel's
     * default 50 us slack on that timeout would make every sleep late. */
    prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
    stack_bounds_of_self(&xs->sched_stack_lo, &xs->sched_stack_size);
    xs->sched_fiber = tsan_fiber_current();
    coexec__sched_activate(atom_load_rlx_ptr(&xs->sched), xs);
    atom_store_rel_u32(&xs->state, COEXEC_XSTREAM_RUNNING);
    TOOL_EVENT(COEXEC_TOOL_XSTREAM_START, xs, NULL, NULL);
    coexec__sched_run(xs);
    /* Posts refused from now on; one that came after the loop's last look
     * at the inbox still runs here (a second loop drains it, and stops). */
    spin_lock(&xs->post_lock);
    xs->post_closed = 1;
    spin_unlock(&xs->post_lock);
    if (xs_events_pending(xs))
        coexec__sched_run(xs);
    TOOL_EVENT(COEXEC_TOOL_XSTREAM_STOP, xs, NULL, NULL);
    coexec__cache_flush(&xs->ucache, &xs->scache);
    atom_fadd_rlx_u64(&coexec__g.live_units, (uint64_t)xs->live_units);
    xs->live_units = 0;
    coexec__xs_set_self(NULL);
    coexec__altstack_leave(&xs->altstack);
    uint64_t stolen = 0;
    struct coexec_sched_rec *s = atom_load_rlx_ptr(&xs->sched);
    for (int i = 0; s && i < s->npools; i++)
        stolen += atom_load_rlx_u64(&s->pools[i]->stolen);
    atom_store_rlx_u64(&xs->stolen_at_stop, stolen);
    atom_store_rel_u64(&xs->stop_ns, clock_now_ns());
    thread_users_out(xs);
    atom_store_rel_u32(&xs->state, COEXEC_XSTREAM_TERMINATED);
    atom_store_rel_u32(&xs->done, 1);
    wake_word(&xs->done, &xs->done_waiters);
    return NULL;
}

int coexec__xstream_start(struct coexec_sched_rec *sched, int cpu,
                          struct coexec_xstream_rec **out)
{
    int rc = COEXEC_OK;
    bool own_setup = sched == NULL;
    if (own_setup) {
        if ((rc = default_setup(&sched)) != COEXEC_OK)
            return rc;
    } else {
        /* A scheduler runs on one stream at a time. */
        uint32_t exp = 0;
        if (!atom_cas_ar_u32(&sched->in_use, &exp, SCHED_MAIN))
            return COEXEC_EBUSY;
    }
    pthread_mutex_lock(&coexec__g.lock);
    /* A full table of records (streams made and not freed) is a limit, like
     * the OS thread limit, not a lack of memory. */
    bool full = !coexec__xsr.free && coexec__xsr.num_all == MAX_XSTREAMS;
    struct coexec_xstream_rec *xs = full ? NULL : xs_record_new();
    if (!xs) {
        pthread_mutex_unlock(&coexec__g.lock);
        rc = full ? COEXEC_EAGAIN : COEXEC_ENOMEM;
        goto fail_setup;
    }
    if (rank_take(xs) < 0) {
        xs->free_next = coexec__xsr.free;
        coexec__xsr.free = xs;
        pthread_mutex_unlock(&coexec__g.lock);
        rc = COEXEC_EAGAIN;
        goto fail_setup;
    }
    atom_store_rel_ptr(&xs->sched, sched);
    xs->cur_sched = sched;
    atom_store_rlx_u32(&sched->in_use, SCHED_MAIN); /* a default one is ours */
    xs->cpu = cpu >= 0 ? cpu : coexec__affinity_cpu_for_rank(xs->rank);
    xs->default_pool = own_setup ? sched->pools[0] : NULL;
    xs->default_sched = own_setup ? sched : NULL;
    xs->steal_index = xs->rank;
    atom_store_rlx_u32(&xs->mb.park, 1);
    atom_store_rlx_u32(&xs->state, COEXEC_XSTREAM_CREATED);
    if (own_setup) {
        coexec__pool_set_stealable(sched->pools[0], 1);
        steal_pool_add(sched->pools[0]);
    }
    pthread_mutex_unlock(&coexec__g.lock);

    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 1 << 20);
    atom_store_rlx_u32(&xs->state, COEXEC_XSTREAM_READY);
    /* `thread` is read by affinity callers of the record's last stream
     * (xs_thread_enter): set as a relaxed atomic. */
    pthread_t th;
    int e = coexec__os_thread_create(&th, &attr, xs_main, xs, "coexec-xs",
                                     xs->rank, coexec__g.cfg.stream_signals);
    if (e == 0)
        RLX_SET(xs->thread, th);
    pthread_attr_destroy(&attr);
    if (e != 0) {
        rc = e == ENOMEM ? COEXEC_ENOMEM : COEXEC_EAGAIN;
        pthread_mutex_lock(&coexec__g.lock);
        if (own_setup)
            steal_pool_remove(sched->pools[0]);
        coexec__xsr.by_rank[xs->rank] = NULL;
        coexec__xsr.num--;
        atom_store_rel_u64(&xs->gen, gen_next(atom_load_rlx_u64(&xs->gen)));
        xs->free_next = coexec__xsr.free;
        coexec__xsr.free = xs;
        pthread_mutex_unlock(&coexec__g.lock);
        atom_store_rlx_u32(&sched->in_use, 0);
        goto fail_setup;
    }
    *out = xs;
    return COEXEC_OK;

fail_setup:
    if (own_setup)
        default_setup_release(sched);
    else
        atom_store_rel_u32(&sched->in_use, 0);
    return rc;
}

/* Waits until xs's OS thread left its loop. */
static void wait_done(struct coexec_xstream_rec *xs)
{
    wait_word(&xs->done, 0, &xs->done_waiters);
}

int coexec__xstream_stop_and_join(struct coexec_xstream_rec *xs)
{
    atom_store_rel_u32(&xs->stop, 1);
    xs_kick(xs);
    wait_done(xs); /* its thread let the last affinity caller go first */
    pthread_join(xs->thread, NULL);
    pthread_mutex_lock(&coexec__g.lock);
    struct coexec_sched_rec *s = atom_load_acq_ptr(&xs->sched);
    if (xs->default_pool)
        steal_pool_remove(xs->default_pool);
    coexec__xsr.by_rank[xs->rank] = NULL;
    coexec__xsr.num--;
    pthread_mutex_unlock(&coexec__g.lock);
    coexec__sched_deactivate(s, xs, NULL);
    /* Wakes that reached its mailbox after its loop's last look, of units
     * whose home is one of its private pools (the stream was stopped, not
     * yet joined): once those pools have no owner and whoever saw the
     * stream as their owner has sent what it sends, the units go into
     * their pools, for the next stream that serves them. Nothing reaches
     * the mailbox after that. */
    for (int i = 0; i < s->npools; i++)
        coexec__pool_senders_wait(s->pools[i]);
    (void)coexec__sched_drain_events(xs);
    atom_store_rel_u32(&s->in_use, 0);
    struct coexec_sched_rec *req = atom_xchg_ar_ptr(&xs->sched_req, NULL);
    if (req)
        atom_store_rel_u32(&req->in_use, 0); /* asked for, never ran */
    coexec__sched_req_wake(xs);
    if (xs->default_pool) {
        /* Units still queued there, or woken later with it as their home,
         * go to the primary: nothing is lost with the stream. (A default
         * scheduler made main of another stream meanwhile stays there.) */
        if (atom_load_acq_u32(&xs->default_sched->in_use) == 0)
            coexec__sched_release(xs->default_sched);
        coexec__pool_retire(xs->default_pool, coexec__g.primary->default_pool);
        xs->default_sched = NULL;
    }
    atom_store_rel_ptr(&xs->sched, NULL);
    xs->cur_sched = NULL;
    xs->joined = 1;
    return COEXEC_OK;
}

/* Releases xs for the holder of handle generation gen: of racing frees
 * of one handle exactly one gets true. */
static bool xs_record_release(struct coexec_xstream_rec *xs, uint64_t gen)
{
    pthread_mutex_lock(&coexec__g.lock);
    bool mine = atom_load_rlx_u64(&xs->gen) == gen;
    if (mine) {
        atom_store_rel_u64(&xs->gen, gen_next(gen));
        xs->free_next = coexec__xsr.free;
        coexec__xsr.free = xs;
    }
    pthread_mutex_unlock(&coexec__g.lock);
    return mine;
}

/* Stops and joins x once, however many callers join or free it at once:
 * the first does it, the others wait until it is done. */
static void xs_join_once(struct coexec_xstream_rec *x)
{
    uint32_t exp = 0;
    if (atom_cas_ar_u32(&x->join_claim, &exp, 1)) {
        if (!x->joined)
            coexec__xstream_stop_and_join(x);
        atom_store_rel_u32(&x->join_claim, 2);
        wake_word(&x->join_claim, &x->claim_waiters);
        return;
    }
    wait_word(&x->join_claim, 1, &x->claim_waiters);
}

/* ---- the primary ---------------------------------------------------------- */

static void primary_sched_entry(void *arg)
{
    struct coexec_xstream_rec *xs = arg;
    switch_first_entry();
    coexec__post_switch(xs);
    coexec__sched_run(xs); /* runs until the process ends; never stops */
    __builtin_trap();
}

#define PRIMARY_SCHED_STACK (256 * 1024)

/* The init thread's timer slack, restored at finalize. */
static long primary_slack = -1;
/* Valgrind's id of the primary's scheduler stack (base/valgrind.h). */
static unsigned vg_sched_id;

int coexec__primary_setup(void)
{
    coexec__timers_init();
    struct coexec_sched_rec *s;
    int rc = default_setup(&s);
    if (rc)
        return rc;
    /* As for secondary streams (xs_main): its parks time the sleeps of the
     * units it runs. */
    primary_slack = prctl(PR_GET_TIMERSLACK, 0UL, 0UL, 0UL, 0UL);
    prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
    pthread_mutex_lock(&coexec__g.lock);
    struct coexec_xstream_rec *xs = xs_record_new();
    if (!xs) {
        pthread_mutex_unlock(&coexec__g.lock);
        default_setup_release(s);
        return COEXEC_ENOMEM;
    }
    rank_take(xs);
    xs->is_primary = 1;
    atom_store_rel_ptr(&xs->sched, s);
    xs->cur_sched = s;
    atom_store_rlx_u32(&s->in_use, SCHED_MAIN);
    xs->default_pool = s->pools[0];
    xs->default_sched = s;
    RLX_SET(xs->thread, pthread_self());
    /* Pinned like every other stream; its old binding is restored at
     * finalize, since the thread is the user's. */
    xs->cpu = coexec__affinity_cpu_for_rank(0);
    if (xs->cpu >= 0 && coexec__affinity_bind_primary(xs->cpu) != 0)
        xs->cpu = -1;
    atom_store_rlx_u32(&xs->mb.park, 1);
    coexec__pool_set_stealable(s->pools[0], 1);
    steal_pool_add(s->pools[0]);
    coexec__g.primary = xs;
    pthread_mutex_unlock(&coexec__g.lock);

    /* The scheduler of the primary needs a stack of its own: the OS stack
     * belongs to the main ULT. */
    void *st = coexec__stack_map(PRIMARY_SCHED_STACK);
    struct coexec_unit_rec *m = coexec__unit_new(xs, UNIT_MAIN);
    if (!st || !m) {
        if (st)
            coexec__stack_unmap(st, PRIMARY_SCHED_STACK);
        coexec__primary_teardown();
        return COEXEC_ENOMEM;
    }
    coexec__altstack_enter(&xs->altstack);
    xs->live_units = 0; /* the main ULT is not a user unit */
    /* The mapping may reuse addresses whose sanitizer shadow still holds
     * the redzones of frames that lived there before. */
    san_stack_reuse(st, PRIMARY_SCHED_STACK);
    xs->sched_stack_own = st;
    xs->sched_stack_lo = st;
    xs->sched_stack_size = PRIMARY_SCHED_STACK;
    vg_sched_id = vg_stack_register(st, PRIMARY_SCHED_STACK);
    xs->sched_fiber = tsan_fiber_new();
    xs->sched_sp = coexec__ctx_make(st, PRIMARY_SCHED_STACK,
                                    primary_sched_entry, xs);

    /* The calling thread's code becomes the main ULT, bound here. */
    RLX_SET(m->flags, UF_NOSTEAL);
    m->rflags = RF_STARTED; /* it runs already, on the thread's own stack */
    m->bound_rank = (int16_t)xs->rank;
    m->last_rank = (int16_t)xs->rank;
    atom_store_rlx_ptr(&m->pool, s->pools[0]);
    atom_store_rlx_u32(&m->state, COEXEC_UNIT_RUNNING);
    void *lo;
    size_t size;
    stack_bounds_of_self(&lo, &size);
    RLX_SET(m->stack, lo);
    RLX_SET(m->stack_size, size > UINT32_MAX ? UINT32_MAX : size);
    m->tsan_fiber = tsan_fiber_current();
    m->sp = (void *)1; /* "has a context": it is running */
    coexec__g.main_unit = m;
    xs->cur = m;
    coexec__sched_activate(s, xs);
    atom_store_rlx_u32(&xs->state, COEXEC_XSTREAM_RUNNING);
    coexec__xs_set_self(xs);
    return COEXEC_OK;
}

void coexec__primary_teardown(void)
{
    if (primary_slack > 0) {
        prctl(PR_SET_TIMERSLACK, (unsigned long)primary_slack, 0UL, 0UL, 0UL);
        primary_slack = -1;
    }
    coexec__affinity_unbind_primary();
    struct coexec_xstream_rec *xs = coexec__g.primary;
    if (!xs)
        return;
    coexec__xs_set_self(NULL);
    if (xs->sched_stack_own) {
        tsan_fiber_free(xs->sched_fiber);
        vg_stack_deregister(vg_sched_id);
        vg_sched_id = 0;
        coexec__stack_unmap(xs->sched_stack_own, PRIMARY_SCHED_STACK);
        xs->sched_stack_own = NULL;
    }
    coexec__altstack_leave(&xs->altstack);
    pthread_mutex_lock(&coexec__g.lock);
    coexec__xsr.by_rank[0] = NULL;
    coexec__xsr.num = 0;
    coexec__timerheap_forget_all();
    for (int i = 0; i < coexec__xsr.num_all; i++) {
        coexec__mb_free(&coexec__xsr.all[i]->mb);
        coexec__timerheap_free(&coexec__xsr.all[i]->timers);
        free(coexec__xsr.all[i]);
    }
    coexec__xsr.num_all = 0;
    coexec__xsr.free = NULL;
    coexec__g.primary = NULL;
    coexec__g.main_unit = NULL;
    pthread_mutex_unlock(&coexec__g.lock);
}

/* fork, in the child (process.c): no stream exists any more. The forking
 * thread is the user's again; the records stay allocated (leaked). */
void coexec__xstream_atfork_child(bool reclaim)
{
    struct coexec_xstream_rec *self = coexec__tls_xs;
    if (self && self->is_primary && primary_slack > 0)
        prctl(PR_SET_TIMERSLACK, (unsigned long)primary_slack, 0UL, 0UL, 0UL);
    primary_slack = -1;
    coexec__tls_xs = NULL;
    struct coexec_xstream_rec *p = coexec__g.primary;
    if (reclaim && p && p->sched_stack_own)
        coexec__stack_unmap(p->sched_stack_own, PRIMARY_SCHED_STACK);
    memset(coexec__xsr.by_rank, 0, sizeof coexec__xsr.by_rank);
    coexec__xsr.num = 0;
    coexec__xsr.num_all = 0;
    coexec__timerheap_forget_all();
    coexec__xsr.free = NULL;
    coexec__g.primary = NULL;
    coexec__g.main_unit = NULL;
    coexec__timers_atfork_child();
}

/* ---- public API ------------------------------------------------------------ */

COEXEC_API int coexec_xstream_attr_init(coexec_xstream_attr_t *attr)
{
    if (!attr)
        return COEXEC_EINVAL;
    attr->size = sizeof *attr;
    attr->cpu = -1;
    attr->sched.p = NULL;
    attr->sched.gen = 0;
    return COEXEC_OK;
}

COEXEC_API int coexec_xstream_create(const coexec_xstream_attr_t *attr,
                                     coexec_xstream_t *out)
{
    if (!out)
        return COEXEC_EINVAL;
    RT_CHECK();
    int cpu = -1;
    struct coexec_sched_rec *s = NULL;
    if (attr) {
        if (attr->cpu < -1 || (attr->cpu >= 0 && !coexec__affinity_valid_cpu(attr->cpu)))
            return COEXEC_EINVAL;
        cpu = attr->cpu;
        if (attr->sched.p) {
            int rc = CHECK_HANDLE(attr->sched);
            if (rc)
                return rc;
            s = attr->sched.p;
        }
    }
    struct coexec_xstream_rec *xs;
    int rc = coexec__xstream_start(s, cpu, &xs);
    if (rc)
        return rc;
    out->p = xs;
    out->gen = atom_load_rlx_u64(&xs->gen);
    return COEXEC_OK;
}

/* Could ULT u, waiting for x to stop, never run again? It parks while it
 * waits, and its wake queues it in its home pool once x has left its
 * loop; so it could when it is bound to x, or when no stream but x takes
 * from its home pool (x's own default pool is handed to the primary only
 * by the joiner itself, after the wait). */
static bool waits_inside(struct coexec_unit_rec *u, struct coexec_xstream_rec *x)
{
    if ((u->flags & UF_NOSTEAL) && u->bound_rank == x->rank)
        return true;
    struct coexec_pool_rec *home = unit_pool(u);
    if (!home)
        return false;
    bool elsewhere = false;
    pthread_mutex_lock(&coexec__g.lock);
    for (int r = 0; r < MAX_XSTREAMS && !elsewhere; r++) {
        struct coexec_xstream_rec *o = coexec__xsr.by_rank[r];
        if (!o || o == x)
            continue;
        struct coexec_sched_rec *s = atom_load_acq_ptr(&o->sched);
        struct coexec_sched_rec *req = atom_load_acq_ptr(&o->sched_req);
        elsewhere = (s && coexec__sched_reaches_locked(s, home)) ||
                    (req && coexec__sched_reaches_locked(req, home));
    }
    pthread_mutex_unlock(&coexec__g.lock);
    return !elsewhere;
}

/* The checks of every call that stops a stream: a live secondary one. */
static int secondary_checks(coexec_xstream_t xs)
{
    RT_CHECK();
    int rc = CHECK_HANDLE(xs);
    if (rc)
        return rc;
    return xs.p->is_primary ? COEXEC_EPERM : COEXEC_OK;
}

static int join_checks(coexec_xstream_t xs)
{
    int rc = secondary_checks(xs);
    if (rc)
        return rc;
    struct coexec_xstream_rec *me = coexec__xs_self();
    /* The caller's kind first: a tasklet or a scheduler loop cannot wait,
     * whichever stream runs it. */
    if (me && me->cur && me->cur->kind == UNIT_TASKLET)
        return COEXEC_ECONTEXT;
    if (me && !me->cur)
        return COEXEC_ECONTEXT;
    if (me == xs.p)
        return COEXEC_EDEADLK;
    if (me && !xs.p->joined && waits_inside(me->cur, xs.p))
        return COEXEC_EDEADLK;
    return COEXEC_OK;
}

COEXEC_API int coexec_xstream_stop(coexec_xstream_t xs)
{
    int rc = secondary_checks(xs);
    if (rc)
        return rc;
    /* A public join or free has claimed it (join_claim, atomic). */
    if (atom_load_acq_u32(&xs.p->join_claim) != 0)
        return COEXEC_ESTATE;
    /* As a join's first step; the join (or free) that reaps it follows. */
    atom_store_rel_u32(&xs.p->stop, 1);
    xs_kick(xs.p);
    return COEXEC_OK;
}

COEXEC_API int coexec_xstream_join(coexec_xstream_t xs)
{
    int rc = join_checks(xs);
    if (rc)
        return rc;
    xs_join_once(xs.p);
    return COEXEC_OK;
}

COEXEC_API int coexec_xstream_free(coexec_xstream_t *xs)
{
    if (!xs)
        return COEXEC_EINVAL;
    int rc = join_checks(*xs);
    if (rc)
        return rc;
    struct coexec_xstream_rec *x = xs->p;
    xs_join_once(x);
    if (!xs_record_release(x, xs->gen))
        return COEXEC_EHANDLE; /* another free of the same handle won */
    xs->p = NULL;
    xs->gen = 0;
    return COEXEC_OK;
}

COEXEC_API int coexec_xstream_self(coexec_xstream_t *out)
{
    if (!out)
        return COEXEC_EINVAL;
    RT_CHECK();
    struct coexec_xstream_rec *xs = coexec__xs_self();
    if (!xs)
        return COEXEC_ECONTEXT;
    out->p = xs;
    out->gen = atom_load_rlx_u64(&xs->gen);
    return COEXEC_OK;
}

COEXEC_API int coexec_xstream_self_rank(int *rank)
{
    if (!rank)
        return COEXEC_EINVAL;
    RT_CHECK();
    struct coexec_xstream_rec *xs = coexec__xs_self();
    if (!xs)
        return COEXEC_ECONTEXT;
    *rank = xs->rank;
    return COEXEC_OK;
}

#define XS_QUERY(out)                                                          \
    if (!(out))                                                                \
        return COEXEC_EINVAL;                                                  \
    RT_CHECK();                                                                \
    int rc_ = CHECK_HANDLE(xs);                                                \
    if (rc_)                                                                   \
        return rc_;

COEXEC_API int coexec_xstream_get_rank(coexec_xstream_t xs, int *rank)
{
    XS_QUERY(rank);
    int v = xs.p->rank;
    if (!HANDLE_STILL(xs))
        return COEXEC_EHANDLE;
    *rank = v;
    return COEXEC_OK;
}

COEXEC_API int coexec_xstream_get_state(coexec_xstream_t xs,
                                        coexec_xstream_state_t *state)
{
    XS_QUERY(state);
    coexec_xstream_state_t v =
        (coexec_xstream_state_t)atom_load_acq_u32(&xs.p->state);
    if (!HANDLE_STILL(xs))
        return COEXEC_EHANDLE;
    *state = v;
    return COEXEC_OK;
}

COEXEC_API int coexec_xstream_get_cpu(coexec_xstream_t xs, int *cpu)
{
    XS_QUERY(cpu);
    int v = xs.p->cpu;
    if (!HANDLE_STILL(xs))
        return COEXEC_EHANDLE;
    *cpu = v;
    return COEXEC_OK;
}

/* xs's OS thread, while it has one, for a call on it (affinity): held
 * until xs_thread_leave, and the thread does not exit before
 * (thread_users_out); COEXEC_ESTATE once xs has stopped, COEXEC_EHANDLE if
 * the handle went stale. */
static int xs_thread_enter(coexec_xstream_t xs, pthread_t *out)
{
    RT_CHECK();
    int rc = CHECK_HANDLE(xs);
    if (rc)
        return rc;
    struct coexec_xstream_rec *x = xs.p;
    /* Once the thread is ending, refused without taking the count: callers
     * that keep calling cannot hold its exit off. */
    if (atom_load_rlx_u32(&x->thread_gone))
        return HANDLE_STILL(xs) ? COEXEC_ESTATE : COEXEC_EHANDLE;
    atom_fadd_rlx_u32(&x->thread_users, 1);
    atom_fence_sc();
    /* The thread marks itself gone before it says TERMINATED, and then
     * waits for us: a stopped stream is seen here as gone. */
    bool ended = atom_load_rlx_u32(&x->thread_gone) ||
                 atom_load_rlx_u32(&x->join_claim) != 0;
    pthread_t t = RLX_GET(x->thread);
    /* The generation after the reads: once this stream's thread has let
     * its callers go, its record may be reused at any moment, and the
     * reuse zeroes those words and `thread` (the next stream's, 0 until
     * its thread is made). The reuse changes the generation first, so a
     * handle still good here means all of them were this stream's. */
    if (!HANDLE_STILL(xs))
        rc = COEXEC_EHANDLE;
    else if (ended)
        rc = COEXEC_ESTATE;
    if (rc) {
        atom_fsub_rlx_u32(&x->thread_users, 1);
        return rc;
    }
    *out = t;
    return COEXEC_OK;
}

static void xs_thread_leave(coexec_xstream_t xs)
{
    atom_fsub_rel_u32(&xs.p->thread_users, 1);
}

COEXEC_API int coexec_xstream_set_cpus(coexec_xstream_t xs, const int *cpus,
                                       int n)
{
    if (!cpus || n <= 0)
        return COEXEC_EINVAL;
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int i = 0; i < n; i++) {
        if (cpus[i] < 0)
            return COEXEC_EINVAL;
        /* As the kernel does: CPUs the process may not use are left out. */
        if (cpus[i] < CPU_SETSIZE && coexec__affinity_may_use(cpus[i]))
            CPU_SET(cpus[i], &set);
    }
    pthread_t t;
    int rc = xs_thread_enter(xs, &t);
    if (rc)
        return rc;
    if (CPU_COUNT(&set) == 0)
        rc = COEXEC_EINVAL;
    else if ((rc = pthread_setaffinity_np(t, sizeof set, &set)) != 0)
        /* ESRCH: the thread is gone (it cannot be while held, but the
         * kernel's word is kept), as get_cpus reports it. */
        rc = rc == ESRCH ? COEXEC_ESTATE : COEXEC_EINVAL;
    xs_thread_leave(xs);
    return rc;
}

COEXEC_API int coexec_xstream_get_cpus(coexec_xstream_t xs, int *cpus, int max,
                                       int *n)
{
    if (!n || max < 0 || (max > 0 && !cpus))
        return COEXEC_EINVAL;
    pthread_t t;
    int rc = xs_thread_enter(xs, &t);
    if (rc)
        return rc;
    cpu_set_t set;
    rc = pthread_getaffinity_np(t, sizeof set, &set);
    xs_thread_leave(xs);
    if (rc != 0)
        return COEXEC_ESTATE;
    int k = 0;
    for (int c = 0; c < CPU_SETSIZE; c++) {
        if (!CPU_ISSET(c, &set))
            continue;
        if (k < max)
            cpus[k] = c;
        k++;
    }
    *n = k;
    return COEXEC_OK;
}

COEXEC_API int coexec_xstream_get_main_sched(coexec_xstream_t xs,
                                             coexec_sched_t *out)
{
    XS_QUERY(out);
    struct coexec_sched_rec *s = atom_load_acq_ptr(&xs.p->sched);
    uint64_t gen = s ? atom_load_rlx_u64(&s->gen) : 0;
    if (!HANDLE_STILL(xs))
        return COEXEC_EHANDLE;
    if (!s)
        return COEXEC_ESTATE;
    out->p = s;
    out->gen = gen;
    return COEXEC_OK;
}

COEXEC_API int coexec_xstream_get_main_pool(coexec_xstream_t xs,
                                            coexec_pool_t *out)
{
    XS_QUERY(out);
    struct coexec_sched_rec *s = atom_load_acq_ptr(&xs.p->sched);
    struct coexec_pool_rec *p = s ? s->pools[0] : NULL;
    uint64_t gen = p ? atom_load_rlx_u64(&p->gen) : 0;
    if (!HANDLE_STILL(xs))
        return COEXEC_EHANDLE;
    if (!p)
        return COEXEC_ESTATE;
    out->p = p;
    out->gen = gen;
    return COEXEC_OK;
}

COEXEC_API int coexec_xstream_by_rank(int rank, coexec_xstream_t *out)
{
    if (!out)
        return COEXEC_EINVAL;
    RT_CHECK();
    if (rank < 0 || rank >= MAX_XSTREAMS)
        return COEXEC_ENOENT;
    pthread_mutex_lock(&coexec__g.lock);
    struct coexec_xstream_rec *xs = coexec__xsr.by_rank[rank];
    if (xs) {
        out->p = xs;
        out->gen = atom_load_rlx_u64(&xs->gen);
    }
    pthread_mutex_unlock(&coexec__g.lock);
    return xs ? COEXEC_OK : COEXEC_ENOENT;
}

COEXEC_API int coexec_xstream_get_num(int *num)
{
    if (!num)
        return COEXEC_EINVAL;
    RT_CHECK();
    pthread_mutex_lock(&coexec__g.lock);
    *num = coexec__xsr.num;
    pthread_mutex_unlock(&coexec__g.lock);
    return COEXEC_OK;
}

/* ---- posting a tasklet to a stream ------------------------------------ */

COEXEC_API int coexec_xstream_post(coexec_xstream_t xs, coexec_tasklet_fn_t fn,
                                   void *arg)
{
    RT_CHECK();
    if (!fn)
        return COEXEC_EINVAL;
    int rc = CHECK_HANDLE(xs);
    if (rc)
        return rc;
    struct coexec_xstream_rec *x = xs.p;
    struct coexec_sched_rec *s = atom_load_acq_ptr(&x->sched);
    /* A joined stream has no scheduler (its joiner may be writing
     * x->joined now: the atomic words tell). */
    if (atom_load_acq_u32(&x->done) || !s)
        return COEXEC_ESTATE;
    struct coexec_unit_rec *u = coexec__unit_new(xs_self_entry(), UNIT_TASKLET);
    if (UNLIKELY(!u))
        return COEXEC_ENOMEM;
    u->fn.tasklet = fn;
    RLX_SET(u->arg, arg);
    RLX_SET(u->flags, UF_DETACHED | UF_NOSTEAL);
    u->bound_rank = (int16_t)x->rank;
    atom_store_rlx_ptr(&u->pool, s->pools[0]);
    if (xs_self_entry() == x) {
        TOOL_EVENT(COEXEC_TOOL_UNIT_CREATE, x, u, NULL);
        coexec__pool_push(s->pools[0], u, false);
        return COEXEC_OK;
    }
    spin_lock(&x->post_lock);
    if (x->post_closed || atom_load_acq_u32(&x->stop)) {
        /* Stopping (a stream that kept taking posts might never stop),
         * or its loop has ended. */
        spin_unlock(&x->post_lock);
        coexec__unit_release(xs_self_entry(), u);
        return COEXEC_ESTATE;
    }
    TOOL_EVENT(COEXEC_TOOL_UNIT_CREATE, xs_self_entry(), u, NULL);
    coexec__mb_push(&x->mb, u);
    spin_unlock(&x->post_lock);
    return COEXEC_OK;
}
