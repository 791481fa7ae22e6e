/*
 * tests/thread/test_thread_to.c: the direct hand-off calls: coexec_yield_to
 * to a held unit (popped out of its pool), coexec_self_suspend_to,
 * coexec_thread_exit_to, the coexec_resume_*_to calls and
 * coexec_thread_wait and coexec_tasklet_wait: who runs next, where a held unit goes home, one
 * winner when claims race, a mesh of hand-offs on more streams than
 * cores, and every error.
 */
#include "harness.h"

#include <stdlib.h>
#include <string.h>

/* The ULT handle of a unit a pool handed out (both are {record, gen}). */
static coexec_thread_t thread_of(coexec_unit_t u)
{
    coexec_thread_t t = {u.p, u.gen};
    return t;
}

/* ---- order on one stream ------------------------------------------------- */

static olog_t g_log; /* what the units of a test did, in order */

typedef struct order {
    coexec_pool_t pool;
    int how; /* 0 yield_to, 1 suspend_to, 2 exit_to */
    coexec_thread_t first;
} order_t;

static void logger(void *arg)
{
    olog_add(&g_log, (int)(intptr_t)arg);
}

/* The held unit: logs 3, and resumes `first` (suspended) directly. */
static void held_ult(void *arg)
{
    order_t *o = arg;
    olog_add(&g_log, 3);
    if (o->how == 1)
        CH_CHECK_RC(coexec_resume_yield_to(o->first), COEXEC_OK);
    olog_add(&g_log, 5);
}

static void first_ult(void *arg)
{
    order_t *o = arg;
    olog_add(&g_log, 1);
    /* Queued behind us: a logger (2... runs later), then the held one,
     * popped out of the pool by us: the pool is FIFO, so pop twice and
     * push the logger back. */
    coexec_unit_t a, b;
    size_t n = 0;
    while (n < 2) /* the other two are still being pushed: no yield */
        CH_CHECK_RC(coexec_pool_get_size(o->pool, &n), COEXEC_OK);
    CH_CHECK_RC(coexec_pool_pop(o->pool, &a), COEXEC_OK);
    CH_CHECK_RC(coexec_pool_pop(o->pool, &b), COEXEC_OK);
    CH_CHECK_RC(coexec_pool_push(o->pool, a), COEXEC_OK);
    olog_add(&g_log, 2);
    coexec_thread_t h = thread_of(b);
    switch (o->how) {
    case 0:
        CH_CHECK_RC(coexec_yield_to(h), COEXEC_OK);
        break;
    case 1:
        CH_CHECK_RC(coexec_self_suspend_to(h), COEXEC_OK);
        break;
    default:
        CH_CHECK_RC(coexec_thread_exit_to(h), COEXEC_OK);
        CH_CHECK(0); /* not reached */
    }
    olog_add(&g_log, 4);
}

/*
 * first pops the held unit and hands it the CPU: it runs before the
 * logger queued ahead of it. yield_to: first is queued behind the logger
 * (4 after 6). suspend_to: the held unit resumes first directly (4 before
 * 5). exit_to: first never logs 4.
 */
static void run_order(int how)
{
    ch_init(1);
    ch_stream_t s;
    CH_ASSERT_OK_FATAL(ch_stream_create(&s, COEXEC_SCHED_BASIC_WAIT));
    order_t o = {.pool = s.pool, .how = how};
    olog_reset(&g_log);
    coexec_pool_t stage;
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &stage));
    coexec_thread_t t[3];
    CH_ASSERT_OK(coexec_thread_create(stage, first_ult, &o, NULL, &t[0]));
    CH_ASSERT_OK(coexec_thread_create(stage, logger, (void *)6, NULL, &t[1]));
    CH_ASSERT_OK(coexec_thread_create(stage, held_ult, &o, NULL, &t[2]));
    o.first = t[0];
    /* Move all three, in order, into the stream's pool at once. */
    coexec_unit_t u[3];
    for (int i = 0; i < 3; i++)
        CH_ASSERT_OK(coexec_pool_pop(stage, &u[i]));
    for (int i = 0; i < 3; i++)
        CH_ASSERT_OK(coexec_pool_push(s.pool, u[i]));
    for (int i = 0; i < 3; i++)
        CH_ASSERT_OK(coexec_thread_wait(t[i]));
    for (int i = 0; i < 3; i++)
        CH_ASSERT_OK(coexec_thread_free(&t[i]));
    int want_yield[] = {1, 2, 3, 5, 6, 4};
    int want_suspend[] = {1, 2, 3, 4, 6, 5};
    int want_exit[] = {1, 2, 3, 5, 6};
    if (how == 0)
        olog_expect(&g_log, want_yield, 6, "yield_to order");
    else if (how == 1)
        olog_expect(&g_log, want_suspend, 6, "suspend_to / resume_yield_to order");
    else
        olog_expect(&g_log, want_exit, 5, "exit_to order");
    CH_ASSERT_OK(ch_stream_free(&s));
    CH_ASSERT_OK(coexec_pool_free(&stage));
    ch_finalize();
}

static void t_order_yield_to(void) { run_order(0); }
static void t_order_suspend_to(void) { run_order(1); }
static void t_order_exit_to(void) { run_order(2); }

/* ---- a held unit goes home to the caller's pool ------------------------- */

typedef struct home {
    coexec_pool_t stage, mine;
    atomic_int stage_rank, after_rank;
} home_t;

static void home_target(void *arg)
{
    home_t *h = arg;
    atomic_store(&h->stage_rank, ch_self_rank());
    CH_CHECK_RC(coexec_yield(), COEXEC_OK);
    atomic_store(&h->after_rank, ch_self_rank());
}

static void home_caller(void *arg)
{
    home_t *h = arg;
    coexec_unit_t u;
    CH_CHECK_RC(coexec_pool_pop(h->stage, &u), COEXEC_OK);
    CH_CHECK(u.p != NULL);
    CH_CHECK_RC(coexec_yield_to(thread_of(u)), COEXEC_OK);
}

/* The target comes from a pool no stream serves; after the hand-off it
 * yields and goes back to the caller's pool, whose stream runs it again. */
static void t_held_home(void)
{
    ch_init(1);
    ch_stream_t s;
    CH_ASSERT_OK_FATAL(ch_stream_create(&s, COEXEC_SCHED_BASIC_WAIT));
    home_t h = {.mine = s.pool};
    atomic_store(&h.stage_rank, -1);
    atomic_store(&h.after_rank, -1);
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &h.stage));
    coexec_thread_t t;
    CH_ASSERT_OK(coexec_thread_create(h.stage, home_target, &h, NULL, &t));
    CH_ASSERT_OK(ch_run_ult_in(s.pool, home_caller, &h));
    CH_ASSERT_OK(coexec_thread_wait(t));
    CH_ASSERT_EQ(atomic_load(&h.stage_rank), s.rank);
    CH_ASSERT_EQ(atomic_load(&h.after_rank), s.rank);
    CH_ASSERT_OK(coexec_thread_free(&t));
    size_t n = 1;
    CH_ASSERT_OK(coexec_pool_get_size(h.stage, &n));
    CH_ASSERT_EQ(n, 0);
    CH_ASSERT_OK(coexec_pool_free(&h.stage));
    CH_ASSERT_OK(ch_stream_free(&s));
    ch_finalize();
}

/* ---- racing claims ------------------------------------------------------- */

#define RACERS 4

typedef struct race {
    coexec_pool_t stage;
    coexec_pool_t home[RACERS];
    _Atomic(coexec_unit_t *) slot;
    atomic_int go, arrived, won, lost, ran;
    long rounds;
} race_t;

static void race_target(void *arg)
{
    race_t *r = arg;
    atomic_fetch_add(&r->ran, 1);
}

/* Racer i: hands the CPU to the published held unit, or (racer 0) pushes
 * it back into the stage pool, which no stream serves. One claim of the
 * held unit wins; a later yield_to may still take it out of the stage
 * after a push won; the unit runs once. */
static void racer(void *arg)
{
    race_t *r = (race_t *)((intptr_t *)arg)[0];
    int i = (int)((intptr_t *)arg)[1];
    for (long k = 0; k < r->rounds; k++) {
        while (atomic_load(&r->go) <= k)
            CH_CHECK_RC(coexec_yield(), COEXEC_OK);
        coexec_unit_t *u = atomic_load(&r->slot);
        int rc = i == 0 ? coexec_pool_push(r->stage, *u)
                        : coexec_yield_to(thread_of(*u));
        if (rc == COEXEC_OK)
            atomic_fetch_add(&r->won, 1);
        else if (rc == COEXEC_ESTATE)
            atomic_fetch_add(&r->lost, 1);
        else
            CH_CHECK_RC(rc, COEXEC_OK);
        atomic_fetch_add(&r->arrived, 1);
    }
}

static void t_claim_race(void)
{
    ch_init(1);
    ch_stream_t s[RACERS];
    race_t r;
    memset(&r, 0, sizeof r);
    r.rounds = ch_iters(400, 20);
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &r.stage));
    intptr_t args[RACERS][2];
    coexec_thread_t rt[RACERS];
    for (int i = 0; i < RACERS; i++) {
        CH_ASSERT_OK_FATAL(ch_stream_create(&s[i], COEXEC_SCHED_BASIC_WAIT));
        args[i][0] = (intptr_t)&r;
        args[i][1] = i;
        CH_ASSERT_OK(coexec_thread_create(s[i].pool, racer, args[i], NULL, &rt[i]));
    }
    coexec_unit_t held;
    for (long k = 0; k < r.rounds; k++) {
        coexec_thread_t t;
        CH_ASSERT_OK(coexec_thread_create(r.stage, race_target, &r, NULL, &t));
        CH_ASSERT_OK(coexec_pool_pop(r.stage, &held));
        atomic_store(&r.slot, &held);
        atomic_store(&r.arrived, 0);
        atomic_store(&r.go, (int)k + 1);
        while (atomic_load(&r.arrived) < RACERS)
            CH_CHECK_RC(coexec_yield(), COEXEC_OK);
        /* Pushed back (racer 0 won): nobody serves the stage, run it. */
        CH_ASSERT_OK(coexec_thread_free(&t));
    }
    for (int i = 0; i < RACERS; i++)
        CH_ASSERT_OK(coexec_thread_free(&rt[i]));
    CU_ASSERT(atomic_load(&r.won) >= r.rounds);
    CH_ASSERT_EQ(atomic_load(&r.won) + atomic_load(&r.lost), r.rounds * RACERS);
    CH_ASSERT_EQ(atomic_load(&r.ran), r.rounds);
    for (int i = 0; i < RACERS; i++)
        CH_ASSERT_OK(ch_stream_free(&s[i]));
    CH_ASSERT_OK(coexec_pool_free(&r.stage));
    ch_finalize();
}

/* ---- a mesh of hand-offs ------------------------------------------------- */

#define MESH_STREAMS 4
#define MESH_SLOTS 64

typedef struct mesh {
    coexec_pool_t pool[MESH_STREAMS];
    long units, iters;
    atomic_int *running; /* per unit: 1 while it runs */
    atomic_long done;
    atomic_long handoffs, resumes_direct;
    _Atomic(uintptr_t) slots[MESH_SLOTS]; /* suspended units (index + 1) */
    coexec_thread_t *t;
} mesh_t;

static mesh_t g_mesh;

static void mesh_enter(long idx)
{
    if (atomic_exchange(&g_mesh.running[idx], 1) != 0)
        ch_fail_at(__FILE__, __LINE__, "unit %ld runs twice at once", idx);
}

static void mesh_leave(long idx)
{
    atomic_store(&g_mesh.running[idx], 0);
}

/* A suspended unit from the slots, or -1. */
static long mesh_take_suspended(unsigned seed)
{
    for (int j = 0; j < MESH_SLOTS; j++) {
        int s = (int)((seed + (unsigned)j) % MESH_SLOTS);
        uintptr_t v = atomic_exchange(&g_mesh.slots[s], 0);
        if (v)
            return (long)v - 1;
    }
    return -1;
}

static void mesh_put_suspended(long idx, unsigned seed)
{
    for (;;) {
        for (int j = 0; j < MESH_SLOTS; j++) {
            int s = (int)((seed + (unsigned)j) % MESH_SLOTS);
            uintptr_t none = 0;
            if (atomic_compare_exchange_strong(&g_mesh.slots[s], &none,
                                               (uintptr_t)idx + 1))
                return;
        }
    }
}

static void mesh_ult(void *arg)
{
    long idx = (long)(intptr_t)arg;
    mesh_enter(idx);
    for (long k = 0; k < g_mesh.iters; k++) {
        unsigned seed = (unsigned)(idx * 31 + k);
        long s = mesh_take_suspended(seed);
        if (s >= 0) {
            coexec_thread_t st = g_mesh.t[s];
            int how = (int)(k % 3);
            mesh_leave(idx);
            int rc = COEXEC_ESTATE;
            if (how == 1) {
                /* Whoever takes us from the slots before we park only
                 * records a resume: our park then returns at once. */
                mesh_put_suspended(idx, seed);
                rc = coexec_resume_suspend_to(st);
            } else if (how == 0) {
                rc = coexec_resume_yield_to(st);
            }
            if (rc == COEXEC_OK) {
                atomic_fetch_add(&g_mesh.resumes_direct, 1);
            } else {
                /* Not parked yet (it suspends on another stream), or a
                 * plain resume this time. */
                CH_CHECK_RC(rc, COEXEC_ESTATE);
                CH_CHECK_RC(coexec_thread_resume(st), COEXEC_OK);
                if (how == 1)
                    CH_CHECK_RC(coexec_self_suspend(), COEXEC_OK);
            }
            mesh_enter(idx);
            continue;
        }
        /* Not the primary's pool: its main ULT must not be popped. */
        int v = 1 + (int)((idx + k) % (MESH_STREAMS - 1));
        coexec_unit_t u;
        CH_CHECK_RC(coexec_pool_pop(g_mesh.pool[v], &u), COEXEC_OK);
        if (!u.p) {
            mesh_leave(idx);
            CH_CHECK_RC(coexec_yield(), COEXEC_OK);
            mesh_enter(idx);
            continue;
        }
        coexec_thread_t h = thread_of(u);
        atomic_fetch_add(&g_mesh.handoffs, 1);
        int how = (int)((idx + k) % 3);
        mesh_leave(idx);
        if (how == 0) {
            CH_CHECK_RC(coexec_yield_to(h), COEXEC_OK);
        } else if (how == 1) {
            mesh_put_suspended(idx, seed);
            CH_CHECK_RC(coexec_self_suspend_to(h), COEXEC_OK);
        } else if (k == g_mesh.iters - 1) {
            atomic_fetch_add(&g_mesh.done, 1);
            CH_CHECK_RC(coexec_thread_exit_to(h), COEXEC_OK);
        } else {
            CH_CHECK_RC(coexec_yield_to(h), COEXEC_OK);
        }
        mesh_enter(idx);
    }
    mesh_leave(idx);
    atomic_fetch_add(&g_mesh.done, 1);
}

/* Units on 4 streams (2 cores) pop each other out of the streams' pools
 * and hand off to them, suspend to them and resume each other directly:
 * no unit ever runs on two streams at once, every one finishes once. */
static void t_mesh(void)
{
    ch_init(MESH_STREAMS);
    memset(&g_mesh, 0, sizeof g_mesh);
    g_mesh.units = ch_iters(400, 24);
    g_mesh.iters = ch_iters(40, 6);
    g_mesh.running = calloc((size_t)g_mesh.units, sizeof *g_mesh.running);
    g_mesh.t = calloc((size_t)g_mesh.units, sizeof *g_mesh.t);
    CU_ASSERT_FATAL(g_mesh.running && g_mesh.t);
    for (int i = 0; i < MESH_STREAMS; i++)
        g_mesh.pool[i] = ch_main_pool(i);
    /* Created from a pool no stream serves, so every handle is written
     * before any of them runs; then moved to the streams' pools. */
    coexec_pool_t stage;
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &stage));
    for (long i = 0; i < g_mesh.units; i++)
        CH_ASSERT_OK(coexec_thread_create(stage, mesh_ult, (void *)(intptr_t)i,
                                          NULL, &g_mesh.t[i]));
    for (long i = 0; i < g_mesh.units; i++) {
        coexec_unit_t u;
        CH_ASSERT_OK(coexec_pool_pop(stage, &u));
        CH_ASSERT_OK(coexec_pool_push(g_mesh.pool[1 + i % (MESH_STREAMS - 1)], u));
    }
    /* Units left suspended with nobody to resume them: resume them here. */
    while (atomic_load(&g_mesh.done) < g_mesh.units) {
        long s = mesh_take_suspended(0);
        if (s >= 0)
            CH_CHECK_RC(coexec_thread_resume(g_mesh.t[s]), COEXEC_OK);
        CH_CHECK_RC(coexec_yield(), COEXEC_OK);
    }
    for (long i = 0; i < g_mesh.units; i++)
        CH_ASSERT_OK(coexec_thread_free(&g_mesh.t[i]));
    CH_ASSERT_EQ(atomic_load(&g_mesh.done), g_mesh.units);
    CU_ASSERT(atomic_load(&g_mesh.handoffs) > 0);
    free(g_mesh.running);
    free(g_mesh.t);
    CH_ASSERT_OK(coexec_pool_free(&stage));
    ch_finalize();
}

/* ---- coexec_thread_wait -------------------------------------------------- */

static void rank_ult(void *arg)
{
    atomic_store((atomic_int *)arg, ch_self_rank());
}

static coexec_poll_status_t rank_tasklet(coexec_poll_t *cx, void *arg)
{
    (void)cx;
    rank_ult(arg);
    return COEXEC_READY;
}

static coexec_poll_status_t log_tasklet(coexec_poll_t *cx, void *arg)
{
    (void)cx;
    olog_add(&g_log, (int)(intptr_t)arg);
    return COEXEC_READY;
}

/* A ULT's (or tasklet's) wait, and whether it ran on the given rank. */
static void wait_one(coexec_pool_t pool, int rank, bool tasklet)
{
    atomic_int ran;
    atomic_store(&ran, -1);
    if (tasklet) {
        coexec_tasklet_t k;
        CH_ASSERT_OK(coexec_tasklet_create(pool, rank_tasklet, &ran, &k));
        CH_ASSERT_OK(coexec_tasklet_wait(k));
        CH_ASSERT_EQ(atomic_load(&ran), rank);
        CH_ASSERT_OK(coexec_tasklet_wait(k)); /* finished: at once */
        CH_ASSERT_OK(coexec_tasklet_free(&k));
        /* The same wait and the free in one call. */
        atomic_store(&ran, -1);
        CH_ASSERT_OK(coexec_tasklet_create(pool, rank_tasklet, &ran, &k));
        CH_ASSERT_OK(coexec_tasklet_wait_free(&k));
        CH_ASSERT_EQ(atomic_load(&ran), rank);
        CU_ASSERT_PTR_NULL(k.p);
        CH_ASSERT_RC(coexec_tasklet_wait_free(&k), COEXEC_EHANDLE);
        CH_ASSERT_RC(coexec_tasklet_wait_free(NULL), COEXEC_EINVAL);
    } else {
        coexec_thread_t t;
        CH_ASSERT_OK(coexec_thread_create(pool, rank_ult, &ran, NULL, &t));
        CH_ASSERT_OK(coexec_thread_wait(t));
        CH_ASSERT_EQ(atomic_load(&ran), rank);
        CH_ASSERT_OK(coexec_thread_wait(t)); /* finished: at once */
        CH_ASSERT_OK(coexec_thread_free(&t));
        atomic_store(&ran, -1);
        CH_ASSERT_OK(coexec_thread_create(pool, rank_ult, &ran, NULL, &t));
        CH_ASSERT_OK(coexec_thread_wait_free(&t));
        CH_ASSERT_EQ(atomic_load(&ran), rank);
        CU_ASSERT_PTR_NULL(t.p);
        CH_ASSERT_RC(coexec_thread_wait_free(&t), COEXEC_EHANDLE);
        CH_ASSERT_RC(coexec_thread_wait_free(NULL), COEXEC_EINVAL);
    }
}

/* A joiner that waits does not run the unit itself when its stream does
 * not serve the unit's pool: it runs on the stream serving its pool
 * (coexec_thread_join would run it here, in place). A tasklet is waited
 * for as a ULT is. */
static void wait_not_in_place(bool tasklet)
{
    ch_init(1);
    ch_stream_t s;
    CH_ASSERT_OK_FATAL(ch_stream_create(&s, COEXEC_SCHED_BASIC_WAIT));
    for (int i = 0; i < (int)ch_iters(50, 5); i++)
        wait_one(s.pool, s.rank, tasklet);
    coexec_tasklet_t none = {NULL, 0};
    CH_ASSERT_EQ(coexec_tasklet_wait(none), COEXEC_EHANDLE);
    CH_ASSERT_OK(ch_stream_free(&s));
    ch_finalize();
}

static void t_wait_not_in_place(void) { wait_not_in_place(false); }
static void t_tasklet_wait_not_in_place(void) { wait_not_in_place(true); }

/* A ULT of the pool it waits on: its stream serves that pool, so the
 * waited units run in place, ahead of a unit queued before them. */
static void served_waiter(void *arg)
{
    coexec_pool_t pool = *(coexec_pool_t *)arg;
    coexec_thread_t first, u;
    coexec_tasklet_t k;
    CH_CHECK_RC(coexec_thread_create(pool, logger, (void *)1, NULL, &first),
                COEXEC_OK);
    CH_CHECK_RC(coexec_tasklet_create(pool, log_tasklet, (void *)2, &k),
                COEXEC_OK);
    CH_CHECK_RC(coexec_thread_create(pool, logger, (void *)3, NULL, &u),
                COEXEC_OK);
    CH_CHECK_RC(coexec_tasklet_wait(k), COEXEC_OK);
    CH_CHECK_RC(coexec_thread_wait_free(&u), COEXEC_OK); /* in place too */
    olog_add(&g_log, 4);
    CH_CHECK_RC(coexec_thread_wait(first), COEXEC_OK);
    CH_CHECK_RC(coexec_tasklet_free(&k), COEXEC_OK);
    CH_CHECK_RC(coexec_thread_free(&first), COEXEC_OK);
}

static void t_wait_in_place_where_served(void)
{
    ch_init(1);
    ch_stream_t s;
    CH_ASSERT_OK_FATAL(ch_stream_create(&s, COEXEC_SCHED_BASIC_WAIT));
    for (int i = 0; i < (int)ch_iters(20, 3); i++) {
        olog_reset(&g_log);
        CH_ASSERT_OK(ch_run_ult_in(s.pool, served_waiter, &s.pool));
        int want[] = {2, 3, 4, 1};
        olog_expect(&g_log, want, 4, "waited units run in place, first");
    }
    CH_ASSERT_OK(ch_stream_free(&s));
    ch_finalize();
}

/* ---- errors -------------------------------------------------------------- */

typedef struct errs {
    coexec_pool_t stage;
    coexec_thread_t running_peer, done, tasklet_as_thread;
    coexec_thread_t main_ult;
    atomic_int peer_go, peer_stop;
} errs_t;

static errs_t g_e;

static int call_to(int which, coexec_thread_t t)
{
    switch (which) {
    case 0: return coexec_yield_to(t);
    case 1: return coexec_self_suspend_to(t);
    case 2: return coexec_thread_exit_to(t);
    case 3: return coexec_resume_yield_to(t);
    case 4: return coexec_resume_suspend_to(t);
    default: return coexec_resume_exit_to(t);
    }
}

static void spinner(void *arg)
{
    (void)arg;
    atomic_store(&g_e.peer_go, 1);
    while (!atomic_load(&g_e.peer_stop))
        ;
}

static void from_context(void *arg)
{
    (void)arg;
    for (int w = 0; w < 6; w++)
        CH_CHECK_RC(call_to(w, g_e.done), COEXEC_ECONTEXT);
}

static void errors_ult(void *arg)
{
    (void)arg;
    coexec_thread_t self, freed = {0};
    CH_CHECK_RC(coexec_thread_self(&self), COEXEC_OK);
    atomic_int fr;
    CH_CHECK_RC(coexec_thread_create(g_e.stage, rank_ult, &fr, NULL, &freed),
                COEXEC_OK);
    coexec_thread_t stale = freed;
    CH_CHECK_RC(coexec_thread_free(&freed), COEXEC_OK); /* runs it in place */
    coexec_thread_t null = {0};
    for (int w = 0; w < 6; w++) {
        CH_CHECK_RC(call_to(w, null), COEXEC_EHANDLE);
        CH_CHECK_RC(call_to(w, stale), COEXEC_EHANDLE);
        CH_CHECK_RC(call_to(w, g_e.tasklet_as_thread), COEXEC_EHANDLE);
        CH_CHECK_RC(call_to(w, self), COEXEC_EDEADLK);
        CH_CHECK_RC(call_to(w, g_e.done), COEXEC_ESTATE);
        CH_CHECK_RC(call_to(w, g_e.running_peer), COEXEC_ESTATE);
        /* The primary's main ULT is bound to the primary. */
        CH_CHECK_RC(call_to(w, g_e.main_ult), COEXEC_EPERM);
    }
    /* A ready (queued) unit is not suspended: the resume calls refuse it,
     * and leave it queued. */
    coexec_thread_t q;
    atomic_int r;
    CH_CHECK_RC(coexec_thread_create(g_e.stage, rank_ult, &r, NULL, &q), COEXEC_OK);
    for (int w = 3; w < 6; w++)
        CH_CHECK_RC(call_to(w, q), COEXEC_ESTATE);
    size_t n = 0;
    CH_CHECK_RC(coexec_pool_get_size(g_e.stage, &n), COEXEC_OK);
    CH_CHECK_EQ(n, 2); /* q and the tasklet */
    CH_CHECK_RC(coexec_thread_free(&q), COEXEC_OK);
}

static coexec_poll_status_t noop_tasklet(coexec_poll_t *cx, void *arg)
{
    (void)cx;
    (void)arg;
    return COEXEC_READY;
}

static void t_errors(void)
{
    ch_init(2);
    memset(&g_e, 0, sizeof g_e);
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &g_e.stage));
    CH_ASSERT_OK(coexec_thread_self(&g_e.main_ult));
    coexec_tasklet_t k;
    CH_ASSERT_OK(coexec_tasklet_create(g_e.stage, noop_tasklet, NULL, &k));
    memcpy(&g_e.tasklet_as_thread, &k, sizeof k);
    atomic_int r;
    CH_ASSERT_OK(coexec_thread_create(g_e.stage, rank_ult, &r, NULL, &g_e.done));
    CH_ASSERT_OK(coexec_thread_join(g_e.done));
    ch_stream_t s;
    CH_ASSERT_OK_FATAL(ch_stream_create(&s, COEXEC_SCHED_BASIC_WAIT));
    CH_ASSERT_OK(coexec_thread_create(s.pool, spinner, NULL, NULL, &g_e.running_peer));
    while (!atomic_load(&g_e.peer_go))
        CH_CHECK_RC(coexec_yield(), COEXEC_OK);
    CH_ASSERT_OK(ch_run_ult_in(ch_main_pool(1), errors_ult, NULL));
    /* Wrong callers: a tasklet, an external thread. */
    CH_ASSERT_OK(ch_run_tasklet_in(ch_main_pool(1), from_context, NULL));
    ch_run_external(from_context, NULL);
    /* The primary's main ULT may not exit. */
    CH_ASSERT_RC(coexec_thread_exit_to(g_e.done), COEXEC_EPERM);
    CH_ASSERT_RC(coexec_resume_exit_to(g_e.done), COEXEC_EPERM);
    atomic_store(&g_e.peer_stop, 1);
    CH_ASSERT_OK(coexec_thread_free(&g_e.running_peer));
    CH_ASSERT_OK(coexec_thread_free(&g_e.done));
    CH_ASSERT_OK(coexec_tasklet_free(&k));
    CH_ASSERT_OK(ch_stream_free(&s));
    CH_ASSERT_OK(coexec_pool_free(&g_e.stage));
    ch_finalize();
}

static const ch_test_t order_tests[] = {
    {"yield_to_held", t_order_yield_to},
    {"suspend_to_and_resume_yield_to", t_order_suspend_to},
    {"exit_to_held", t_order_exit_to},
    {"held_goes_home_to_callers_pool", t_held_home},
    {NULL, NULL}};
static const ch_test_t race_tests[] = {
    {"one_claim_wins", t_claim_race},
    {"mesh_on_more_streams_than_cores", t_mesh},
    {NULL, NULL}};
static const ch_test_t wait_tests[] = {
    {"not_in_place_where_not_served", t_wait_not_in_place},
    {"tasklet_not_in_place_where_not_served", t_tasklet_wait_not_in_place},
    {"in_place_where_served", t_wait_in_place_where_served},
    {NULL, NULL}};
static const ch_test_t errors_tests[] = {{"errors", t_errors}, {NULL, NULL}};

static const ch_suite_t suites[] = {{"order", order_tests},
                                    {"race", race_tests},
                                    {"wait", wait_tests},
                                    {"errors", errors_tests},
                                    {NULL, NULL}};

int main(int argc, char **argv) { return ch_main(argc, argv, suites); }
