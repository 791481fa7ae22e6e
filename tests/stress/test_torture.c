/*
 * tests/stress/test_torture.c: the torture test. A seeded random mix of
 * every kind of operation the runtime offers, run at once by driver ULTs
 * on 4 streams and by 2 external pthreads, with invariants checked on
 * every value that goes through the runtime.
 *
 *   mix    the default seeds (a few seconds), or COEXEC_TORTURE_SEED(S)
 *   range  a range of seeds for minutes (label stress)
 *
 * Each driver runs a sequence of operations drawn from its own generator,
 * seeded from the seed and the driver's number: create/join of ULTs and
 * tasklets (joinable and detached, nested, posted to a stream),
 * child-first creation, pending tasklets woken by wakers, yield and
 * yield_to, self-migration, suspend/resume and park/wake, eventual
 * set/wait/poll/reset, futures, mutexes (plain, recursive, nested,
 * timed, tried from tasklets), the rwlock, channels with every kind of
 * sender and receiver (ULT blocking, timed and trying, tasklet polling,
 * external thread), offloaded calls and requests (waited, polled,
 * cancelled), coexec_read/_write/_pread, sleeps, and timed waits that
 * must time out or may race with a release.
 *
 * Invariants: every unit runs exactly once and its result is checked;
 * every operation started is completed (per kind); every detached unit
 * runs; every channel message is received exactly once, intact, in each
 * sender's order; values passed through eventuals, futures and requests
 * are the ones sent; counters protected by a mutex or the rwlock are
 * exact and nobody is ever inside a critical section with another owner;
 * a resumed ULT returns from one suspend per resume; sleeps and timed
 * waits never end early.
 *
 * A watchdog thread fails the run when no operation completes for
 * COEXEC_TORTURE_WATCHDOG seconds (default 60, 180 under sanitizers): it
 * prints every stream's state and pool size, each driver's operation,
 * step and awaited unit, the counters and the service stream, then exits
 * with status 3 (COEXEC_TORTURE_HANG=wait keeps the process for a
 * debugger instead). Every seed prints one line when it starts, and a
 * failure names the seed:
 *
 *   COEXEC_TORTURE_SEED=n        replay seed n
 *   COEXEC_TORTURE_SEEDS=a-b     run seeds a..b
 *   COEXEC_TORTURE_OPS=n         operations per driver (default scaled by
 *                                COEXEC_TEST_SCALE)
 *   COEXEC_TORTURE_MIX=a,b,...   only these operations (names as printed)
 *   COEXEC_TORTURE_SCHED=kind    basic | basic_wait | prio | randws
 *                                instead of the seed's choice
 *   COEXEC_TORTURE_KNOWN=0       leave out the patterns of the faults
 *                                below (in the mix and checked by default)
 *
 * Faults this test found, now fixed, whose patterns it keeps checking:
 *  - a channel with a polling tasklet among its receivers delivers one
 *    sender's messages out of order (a waiting ULT is handed a newer
 *    message while an older one waits in the ring for the released
 *    tasklet): inversions are counted, and failed only with KNOWN=1;
 *  - a channel with a polling tasklet sender among several senders loses
 *    the room a receive made (the released tasklet hands its message
 *    straight to a waiting receiver, and the next waiting sender is never
 *    released): by default a channel has a tasklet sender only when it
 *    has one sender.
 *
 * Nothing here depends on timing: durations only bound sleeps from below
 * and the watchdog only catches a lack of progress.
 */
#define _GNU_SOURCE
#include "harness.h"

#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NSTREAMS 4
#define NEXT 2
#define ULT_DRIVERS_PER_STREAM 2
#define NULTDRV (NSTREAMS * ULT_DRIVERS_PER_STREAM)
#define NDRIVERS (NULTDRV + NEXT)
#define NMUTEX 4
#define FILE_SIZE 65536

/* ======================================================================= */
/* options, seed, checks                                                    */
/* ======================================================================= */

typedef enum op {
    OP_CREATE_JOIN,
    OP_CHILD_FIRST,
    OP_TASKLET,
    OP_YIELD,
    OP_MIGRATE,
    OP_SUSPEND,
    OP_EVENTUAL,
    OP_FUTURE,
    OP_MUTEX,
    OP_RWLOCK,
    OP_CHANNEL,
    OP_OFFLOAD,
    OP_READ,
    OP_SLEEP,
    OP_TIMED,
    OP_COUNT
} op_t;

static const char *const op_names[OP_COUNT] = {
    "create_join", "child_first", "tasklet", "yield",   "migrate",
    "suspend",     "eventual",    "future",  "mutex",   "rwlock",
    "channel",     "offload",     "read",    "sleep",   "timed"};

/* Relative weights of the operations in the mix. */
static const unsigned op_weight[OP_COUNT] = {
    14, 5, 6, 5, 5, 5, 8, 4, 10, 6, 10, 6, 5, 5, 6};

static struct {
    uint64_t first, last; /* seed range; valid when have_seeds */
    int have_seeds;
    long ops;             /* operations per driver; 0 = scaled default */
    unsigned mix;         /* bit per op; 0 = all */
    int sched;            /* -1 = the seed's choice */
    double watchdog_s;
    int hang_wait;
    int known; /* also the patterns of known faults (see the top) */
} g_opt = {.sched = -1};

/* The seed being run, for messages (written before the runtime starts). */
static uint64_t g_seed;

#define TCHECK(cond)                                                           \
    do {                                                                       \
        if (!(cond))                                                           \
            ch_fail_at(__FILE__, __LINE__, "seed %" PRIu64 ": CHECK(%s)",      \
                       g_seed, #cond);                                         \
    } while (0)

#define TCHECK_RC(expr, want)                                                  \
    do {                                                                       \
        int t_rc_ = (expr);                                                    \
        int t_want_ = (want);                                                  \
        if (t_rc_ != t_want_)                                                  \
            ch_fail_at(__FILE__, __LINE__,                                     \
                       "seed %" PRIu64 ": %s returned %s (%d), expected %s",   \
                       g_seed, #expr, coexec_err_name(t_rc_), t_rc_,           \
                       coexec_err_name(t_want_));                              \
    } while (0)

/* rc must be one of two codes. */
#define TCHECK_RC2(rc, a, b)                                                   \
    do {                                                                       \
        int t_rc_ = (rc);                                                      \
        if (t_rc_ != (a) && t_rc_ != (b))                                      \
            ch_fail_at(__FILE__, __LINE__,                                     \
                       "seed %" PRIu64 ": %s returned %s (%d), expected %s "   \
                       "or %s",                                                \
                       g_seed, #rc, coexec_err_name(t_rc_), t_rc_,             \
                       coexec_err_name(a), coexec_err_name(b));                \
    } while (0)

#define TCHECK_EQ(a, b)                                                        \
    do {                                                                       \
        long long t_a_ = (long long)(a), t_b_ = (long long)(b);                \
        if (t_a_ != t_b_)                                                      \
            ch_fail_at(__FILE__, __LINE__,                                     \
                       "seed %" PRIu64 ": %s == %lld, expected %s == %lld",    \
                       g_seed, #a, t_a_, #b, t_b_);                            \
    } while (0)

static uint64_t rnd(uint64_t *s)
{
    /* splitmix64 */
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static unsigned rndn(uint64_t *s, unsigned n) { return (unsigned)(rnd(s) % n); }

/* ======================================================================= */
/* the state of one seed                                                    */
/* ======================================================================= */

typedef struct det {
    struct det *next; /* the next group (first record of a group only) */
    int n;            /* records in the group (first record only) */
    atomic_int runs;
    uint64_t in, out;
} det_t;

typedef struct driver {
    int id;
    int external;
    uint64_t rng;
    long nops;
    det_t *detached; /* owned by the driver, checked after the seed */
    /* what the watchdog prints */
    atomic_int op; /* -1: none */
    _Atomic(const char *) step;
    atomic_uintptr_t await_p; /* the unit being joined or waited for */
    atomic_uint_fast64_t await_gen;
    atomic_int await_tasklet;
    atomic_long done_ops;
    atomic_int finished;
    _Atomic(struct chop *) chan; /* the channel operation in progress */
} driver_t;

static struct seed_state {
    int active;
    coexec_xstream_t xs[NSTREAMS];
    coexec_pool_t pool[NSTREAMS];
    driver_t drv[NDRIVERS];

    atomic_ulong progress;
    atomic_long started[OP_COUNT], completed[OP_COUNT];
    atomic_long units_created, units_finished;
    atomic_long det_created, det_ran;

    coexec_mutex_t mtx[NMUTEX];
    long mcount[NMUTEX];
    atomic_uint_fast64_t mowner[NMUTEX];
    atomic_long mexpect[NMUTEX];
    coexec_mutex_t rmtx; /* recursive */
    long rmcount;
    atomic_long rmexpect;
    atomic_uint_fast64_t token;

    coexec_rwlock_t rw;
    long rwa, rwb;
    atomic_int rw_readers, rw_writer;
    atomic_long rw_expect;

    atomic_long order_bad;     /* channel order inversions */
    atomic_long order_tasklet; /* the same, with tasklet receivers */
} g;

static atomic_int g_watch_active;
static int g_fd = -1; /* a file of FILE_SIZE known bytes */

static unsigned char file_byte(size_t i)
{
    return (unsigned char)(i * 131u + (i >> 8) * 7u + 1u);
}

static void tick(void)
{
    atomic_fetch_add_explicit(&g.progress, 1, memory_order_relaxed);
}

static void set_step(driver_t *d, const char *s)
{
    atomic_store_explicit(&d->step, s, memory_order_relaxed);
}

static void set_await(driver_t *d, struct coexec_unit_rec *p, uint64_t gen,
                      int tasklet)
{
    atomic_store_explicit(&d->await_gen, gen, memory_order_relaxed);
    atomic_store_explicit(&d->await_tasklet, tasklet, memory_order_relaxed);
    atomic_store_explicit(&d->await_p, (uintptr_t)p, memory_order_relaxed);
}

/* Lets others run: a ULT yields, any other caller yields its OS thread. */
static void relax(void)
{
    if (coexec_self_caller() == COEXEC_CALLER_ULT)
        TCHECK_RC(coexec_yield(), COEXEC_OK);
    else
        sched_yield();
}

static int is_ult(void) { return coexec_self_caller() == COEXEC_CALLER_ULT; }

/* ======================================================================= */
/* units: spawn anywhere, reap with a check                                 */
/* ======================================================================= */

typedef struct uh {
    int tasklet;
    coexec_thread_t t;
    coexec_tasklet_t k;
} uh_t;

/* Creates a ULT (fn) or a tasklet (tfn) on a random stream, through the
 * stream or its pool. */
static int spawn(driver_t *d, uint64_t *rng, int tasklet, coexec_thread_fn_t fn,
                 coexec_tasklet_fn_t tfn, void *arg, uh_t *out)
{
    int r = (int)rndn(rng, NSTREAMS);
    int via_pool = (int)rndn(rng, 2);
    int rc;
    out->tasklet = tasklet;
    if (tasklet)
        rc = via_pool ? coexec_tasklet_create(g.pool[r], tfn, arg, &out->k)
                      : coexec_tasklet_create_on(g.xs[r], tfn, arg, &out->k);
    else
        rc = via_pool ? coexec_thread_create(g.pool[r], fn, arg, NULL, &out->t)
                      : coexec_thread_create_on(g.xs[r], fn, arg, NULL, &out->t);
    TCHECK_RC(rc, COEXEC_OK);
    if (rc == COEXEC_OK)
        atomic_fetch_add_explicit(&g.units_created, 1, memory_order_relaxed);
    (void)d;
    return rc;
}

/* Joins (sometimes first, then frees) a unit made by spawn. */
static void reap(driver_t *d, uint64_t *rng, uh_t *u)
{
    const char *old = atomic_load_explicit(&d->step, memory_order_relaxed);
    set_step(d, u->tasklet ? "join tasklet" : "join ULT");
    if (u->tasklet) {
        set_await(d, u->k.p, u->k.gen, 1);
        if (rndn(rng, 3) == 0)
            TCHECK_RC(coexec_tasklet_join(u->k), COEXEC_OK);
        TCHECK_RC(coexec_tasklet_free(&u->k), COEXEC_OK);
        TCHECK(CH_IS_NULL(u->k));
    } else {
        set_await(d, u->t.p, u->t.gen, 0);
        if (rndn(rng, 3) == 0) {
            TCHECK_RC(coexec_thread_join(u->t), COEXEC_OK);
            coexec_unit_state_t s = COEXEC_UNIT_READY;
            TCHECK_RC(coexec_thread_get_state(u->t, &s), COEXEC_OK);
            TCHECK_EQ(s, COEXEC_UNIT_TERMINATED);
        }
        TCHECK_RC(coexec_thread_free(&u->t), COEXEC_OK);
        TCHECK(CH_IS_NULL(u->t));
    }
    set_await(d, NULL, 0, 0);
    set_step(d, old);
    atomic_fetch_add_explicit(&g.units_finished, 1, memory_order_relaxed);
}

/* Marks the end of a unit's body: it must end once. */
static void finish_once(atomic_int *runs)
{
    int prev = atomic_fetch_add(runs, 1);
    TCHECK_EQ(prev, 0);
    tick();
}

/* ======================================================================= */
/* create / join                                                            */
/* ======================================================================= */

enum { FL_PLAIN, FL_YIELD, FL_SLEEP, FL_NESTED, FL_MIGRATE, FL_COUNT };

typedef struct cell {
    atomic_int entered, runs;
    int flavor;
    uint64_t in, out;
    uint64_t rng;
} cell_t;

static void cell_ult(void *arg);
static coexec_poll_status_t cell_tasklet(coexec_poll_t *cx, void *arg);

static void cell_body(cell_t *c, int ult)
{
    int prev = atomic_fetch_add(&c->entered, 1);
    TCHECK_EQ(prev, 0);
    switch (ult ? c->flavor : FL_PLAIN) {
    case FL_YIELD:
        for (int i = 0; i < 3; i++)
            TCHECK_RC(coexec_yield(), COEXEC_OK);
        break;
    case FL_SLEEP:
        TCHECK_RC(coexec_sleep_ns(1000 + rndn(&c->rng, 50000)), COEXEC_OK);
        break;
    case FL_NESTED: {
        cell_t sub = {.flavor = FL_PLAIN, .in = ~c->in};
        coexec_thread_t t;
        int r = (int)rndn(&c->rng, NSTREAMS);
        int rc = coexec_thread_create_on(g.xs[r], cell_ult, &sub, NULL, &t);
        TCHECK_RC(rc, COEXEC_OK);
        if (rc == COEXEC_OK) {
            TCHECK_RC(coexec_thread_free(&t), COEXEC_OK);
            TCHECK_EQ(atomic_load(&sub.runs), 1);
            TCHECK(sub.out == ch_mix64(sub.in));
        }
        break;
    }
    case FL_MIGRATE: {
        coexec_thread_t self;
        int r = (int)rndn(&c->rng, NSTREAMS);
        TCHECK_RC(coexec_thread_self(&self), COEXEC_OK);
        TCHECK_RC(coexec_thread_migrate_to_xstream(self, g.xs[r]), COEXEC_OK);
        coexec_xstream_t now;
        TCHECK_RC(coexec_xstream_self(&now), COEXEC_OK);
        if (!CH_SAME(now, g.xs[r])) {
            int rank = -1;
            TCHECK_RC(coexec_xstream_get_rank(now, &rank), COEXEC_OK);
            ch_fail_at(__FILE__, __LINE__,
                       "seed %" PRIu64 ": a child ULT migrated to stream %d "
                       "runs on stream %d",
                       g_seed, r, rank);
        }
        break;
    }
    default:
        break;
    }
    c->out = ch_mix64(c->in);
    finish_once(&c->runs);
}

static void cell_ult(void *arg) { cell_body(arg, 1); }

static coexec_poll_status_t cell_tasklet(coexec_poll_t *cx, void *arg)
{
    (void)cx;
    cell_body(arg, 0);
    return COEXEC_READY;
}

static void cell_check(cell_t *c)
{
    TCHECK_EQ(atomic_load(&c->entered), 1);
    TCHECK_EQ(atomic_load(&c->runs), 1);
    TCHECK(c->out == ch_mix64(c->in));
}

/* Detached units: a record per unit, kept by its driver. */
static void det_body(det_t *r)
{
    r->out = ch_mix64(r->in);
    int prev = atomic_fetch_add_explicit(&r->runs, 1, memory_order_release);
    TCHECK_EQ(prev, 0);
    atomic_fetch_add_explicit(&g.det_ran, 1, memory_order_acq_rel);
    tick();
}

static void det_ult(void *arg) { det_body(arg); }

static coexec_poll_status_t det_tasklet(coexec_poll_t *cx, void *arg)
{
    (void)cx;
    det_body(arg);
    return COEXEC_READY;
}

/* A tasklet that creates a detached ULT (and is detached itself). */
static coexec_poll_status_t det_spawner(coexec_poll_t *cx, void *arg)
{
    (void)cx;
    det_t *pair = arg; /* pair[0]: this tasklet, pair[1]: its ULT */
    coexec_xstream_t xs;
    TCHECK_RC(coexec_xstream_self(&xs), COEXEC_OK);
    TCHECK_RC(coexec_thread_create_on(xs, det_ult, &pair[1], NULL, NULL),
              COEXEC_OK);
    det_body(&pair[0]);
    return COEXEC_READY;
}

static det_t *det_new(driver_t *d, int n)
{
    det_t *r = calloc((size_t)n, sizeof *r);
    if (!r) {
        TCHECK(r != NULL);
        return NULL;
    }
    for (int i = 0; i < n; i++)
        r[i].in = rnd(&d->rng);
    r[0].n = n;
    r[0].next = d->detached;
    d->detached = r;
    atomic_fetch_add(&g.det_created, n);
    return r;
}

static void op_create_join(driver_t *d)
{
    enum { MAXN = 8 };
    cell_t cells[MAXN];
    uh_t u[MAXN];
    int n = 1 + (int)rndn(&d->rng, MAXN);
    memset(cells, 0, sizeof cells);
    set_step(d, "create");
    for (int i = 0; i < n; i++) {
        cells[i].in = rnd(&d->rng);
        cells[i].flavor = (int)rndn(&d->rng, FL_COUNT);
        cells[i].rng = rnd(&d->rng);
        int tk = rndn(&d->rng, 3) == 0;
        if (spawn(d, &d->rng, tk, cell_ult, cell_tasklet, &cells[i], &u[i]))
            return;
        /* sometimes move a queued (or already running) ULT elsewhere; not
         * one that moves itself (the later of two requests wins) */
        if (!tk && cells[i].flavor != FL_MIGRATE && rndn(&d->rng, 6) == 0) {
            int r = (int)rndn(&d->rng, NSTREAMS);
            int rc = rndn(&d->rng, 2)
                         ? coexec_thread_migrate_to(u[i].t, g.pool[r])
                         : coexec_thread_migrate_to_xstream(u[i].t, g.xs[r]);
            TCHECK_RC2(rc, COEXEC_OK, COEXEC_ESTATE);
        }
    }
    /* detached units of every kind */
    int nd = (int)rndn(&d->rng, 4);
    for (int i = 0; i < nd; i++) {
        int kind = (int)rndn(&d->rng, 5);
        int r = (int)rndn(&d->rng, NSTREAMS);
        det_t *rec = det_new(d, kind == 3 ? 2 : 1);
        if (!rec)
            return;
        int rc;
        switch (kind) {
        case 0:
            rc = coexec_thread_create_on(g.xs[r], det_ult, rec, NULL, NULL);
            break;
        case 1:
            rc = coexec_tasklet_create(g.pool[r], det_tasklet, rec, NULL);
            break;
        case 2:
            rc = coexec_xstream_post(g.xs[r], det_tasklet, rec);
            break;
        case 3:
            rc = coexec_tasklet_create_on(g.xs[r], det_spawner, rec, NULL);
            break;
        default:
            rc = d->external
                     ? coexec_thread_create(g.pool[r], det_ult, rec, NULL, NULL)
                     : coexec_thread_create_child_first(g.pool[r], det_ult,
                                                        rec, NULL, NULL);
            break;
        }
        TCHECK_RC(rc, COEXEC_OK);
        if (rc != COEXEC_OK)
            atomic_fetch_sub(&g.det_created, kind == 3 ? 2 : 1);
    }
    set_step(d, "join");
    int rev = (int)rndn(&d->rng, 2);
    for (int j = 0; j < n; j++) {
        int i = rev ? n - 1 - j : j;
        reap(d, &d->rng, &u[i]);
        cell_check(&cells[i]);
    }
}

/* ======================================================================= */
/* child first                                                              */
/* ======================================================================= */

static void op_child_first(driver_t *d)
{
    if (d->external) {
        /* not a ULT: the call names the error */
        cell_t c = {.in = 1};
        coexec_thread_t t;
        TCHECK_RC(coexec_thread_create_child_first(g.pool[0], cell_ult, &c,
                                                   NULL, &t),
                  COEXEC_ECONTEXT);
        return;
    }
    enum { MAXN = 4 };
    cell_t cells[MAXN];
    coexec_thread_t t[MAXN];
    int n = 1 + (int)rndn(&d->rng, MAXN);
    memset(cells, 0, sizeof cells);
    set_step(d, "child_first");
    for (int i = 0; i < n; i++) {
        cells[i].in = rnd(&d->rng);
        cells[i].flavor = (int)rndn(&d->rng, FL_COUNT);
        cells[i].rng = rnd(&d->rng);
        int r = (int)rndn(&d->rng, NSTREAMS);
        int rc = coexec_thread_create_child_first(g.pool[r], cell_ult,
                                                  &cells[i], NULL, &t[i]);
        TCHECK_RC(rc, COEXEC_OK);
        if (rc != COEXEC_OK)
            return;
        atomic_fetch_add(&g.units_created, 1);
        /* The child got the CPU first. The caller was queued as soon as
         * its context was saved, so a thief may resume it on another
         * stream before the child reaches its first line: wait for that
         * line rather than expect it. */
        while (!atomic_load(&cells[i].entered))
            TCHECK_RC(coexec_yield(), COEXEC_OK);
    }
    for (int i = n - 1; i >= 0; i--) {
        uh_t u = {.tasklet = 0, .t = t[i]};
        reap(d, &d->rng, &u);
        cell_check(&cells[i]);
    }
}

/* ======================================================================= */
/* pending tasklets and wakers                                              */
/* ======================================================================= */

typedef struct pend {
    atomic_int runs, polls, published, go;
    coexec_waker_t w;
    int ult; /* a ULT that parks instead of a tasklet */
} pend_t;

static coexec_poll_status_t pend_tasklet(coexec_poll_t *cx, void *arg)
{
    pend_t *p = arg;
    atomic_fetch_add(&p->polls, 1);
    if (atomic_load(&p->go)) {
        finish_once(&p->runs);
        return COEXEC_READY;
    }
    if (!atomic_load_explicit(&p->published, memory_order_relaxed)) {
        TCHECK_RC(coexec_poll_waker(cx, &p->w), COEXEC_OK);
        atomic_store_explicit(&p->published, 1, memory_order_release);
    }
    return COEXEC_PENDING;
}

static void pend_ult(void *arg)
{
    pend_t *p = arg;
    TCHECK_RC(coexec_self_waker(&p->w), COEXEC_OK);
    atomic_store_explicit(&p->published, 1, memory_order_release);
    while (!atomic_load(&p->go)) {
        atomic_fetch_add(&p->polls, 1);
        TCHECK_RC(coexec_park(), COEXEC_OK);
    }
    finish_once(&p->runs);
}

static void op_tasklet(driver_t *d)
{
    enum { MAXN = 4 };
    pend_t p[MAXN];
    uh_t u[MAXN];
    int n = 1 + (int)rndn(&d->rng, MAXN);
    memset(p, 0, sizeof p);
    set_step(d, "create pending");
    for (int i = 0; i < n; i++) {
        p[i].ult = rndn(&d->rng, 3) == 0;
        if (spawn(d, &d->rng, !p[i].ult, pend_ult, pend_tasklet, &p[i], &u[i]))
            return;
    }
    /* wake them in a random order, some several times */
    int order[MAXN];
    for (int i = 0; i < n; i++)
        order[i] = i;
    for (int i = n - 1; i > 0; i--) {
        int j = (int)rndn(&d->rng, (unsigned)i + 1), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    set_step(d, "wait for wakers");
    for (int j = 0; j < n; j++) {
        int i = order[j];
        while (!atomic_load_explicit(&p[i].published, memory_order_acquire))
            relax();
        atomic_store(&p[i].go, 1);
        int wakes = 1 + (int)rndn(&d->rng, 3);
        for (int k = 0; k < wakes; k++)
            TCHECK_RC(coexec_waker_wake(p[i].w), COEXEC_OK);
    }
    for (int i = 0; i < n; i++) {
        reap(d, &d->rng, &u[i]);
        TCHECK_EQ(atomic_load(&p[i].runs), 1);
        /* a stale wake after the end does nothing */
        TCHECK_RC(coexec_waker_wake(p[i].w), COEXEC_OK);
    }
}

/* ======================================================================= */
/* yield, yield_to, migration                                               */
/* ======================================================================= */

static void op_yield(driver_t *d)
{
    if (d->external) {
        TCHECK_RC(coexec_yield(), COEXEC_ECONTEXT);
        return;
    }
    int n = 1 + (int)rndn(&d->rng, 4);
    set_step(d, "yield");
    for (int i = 0; i < n; i++)
        TCHECK_RC(coexec_yield(), COEXEC_OK);
    if (rndn(&d->rng, 2)) {
        /* yield_to a child queued on the caller's stream, if it still is */
        cell_t c = {.in = rnd(&d->rng), .flavor = FL_PLAIN};
        coexec_xstream_t xs;
        coexec_thread_t t;
        TCHECK_RC(coexec_xstream_self(&xs), COEXEC_OK);
        int rc = coexec_thread_create_on(xs, cell_ult, &c, NULL, &t);
        TCHECK_RC(rc, COEXEC_OK);
        if (rc != COEXEC_OK)
            return;
        atomic_fetch_add(&g.units_created, 1);
        set_step(d, "yield_to");
        rc = coexec_yield_to(t);
        /* a thief may have taken it, or it runs or ran already */
        TCHECK_RC2(rc, COEXEC_OK, COEXEC_ESTATE);
        uh_t u = {.tasklet = 0, .t = t};
        reap(d, &d->rng, &u);
        cell_check(&c);
    }
}

static void op_migrate(driver_t *d)
{
    if (d->external) {
        /* move a running child from outside; it keeps working */
        cell_t c = {.in = rnd(&d->rng), .flavor = FL_YIELD};
        uh_t u;
        if (spawn(d, &d->rng, 0, cell_ult, NULL, &c, &u))
            return;
        int r = (int)rndn(&d->rng, NSTREAMS);
        int rc = coexec_thread_migrate_to_xstream(u.t, g.xs[r]);
        TCHECK_RC2(rc, COEXEC_OK, COEXEC_ESTATE);
        reap(d, &d->rng, &u);
        cell_check(&c);
        return;
    }
    coexec_thread_t self;
    TCHECK_RC(coexec_thread_self(&self), COEXEC_OK);
    int hops = 1 + (int)rndn(&d->rng, 3);
    for (int i = 0; i < hops; i++) {
        int r = (int)rndn(&d->rng, NSTREAMS);
        set_step(d, "migrate");
        if (rndn(&d->rng, 3)) {
            TCHECK_RC(coexec_thread_migrate_to_xstream(self, g.xs[r]),
                      COEXEC_OK);
            /* until it ran there, no other stream may take it */
            coexec_xstream_t now;
            TCHECK_RC(coexec_xstream_self(&now), COEXEC_OK);
            TCHECK(CH_SAME(now, g.xs[r]));
        } else {
            TCHECK_RC(coexec_thread_migrate_to(self, g.pool[r]), COEXEC_OK);
        }
    }
}

/* ======================================================================= */
/* suspend / resume                                                         */
/* ======================================================================= */

typedef struct susp {
    atomic_int count, runs;
    int k;
} susp_t;

static void susp_ult(void *arg)
{
    susp_t *s = arg;
    for (int i = 0; i < s->k; i++) {
        TCHECK_RC(coexec_self_suspend(), COEXEC_OK);
        atomic_fetch_add(&s->count, 1);
    }
    finish_once(&s->runs);
}

static void op_suspend(driver_t *d)
{
    if (rndn(&d->rng, 3) == 0) {
        /* park/wake through a waker; op_tasklet does the same */
        pend_t p;
        memset(&p, 0, sizeof p);
        uh_t u;
        if (spawn(d, &d->rng, 0, pend_ult, NULL, &p, &u))
            return;
        set_step(d, "park/wake");
        while (!atomic_load_explicit(&p.published, memory_order_acquire))
            relax();
        if (rndn(&d->rng, 2))
            TCHECK_RC(coexec_waker_wake(p.w), COEXEC_OK); /* early permit */
        atomic_store(&p.go, 1);
        TCHECK_RC(coexec_waker_wake(p.w), COEXEC_OK);
        reap(d, &d->rng, &u);
        TCHECK_EQ(atomic_load(&p.runs), 1);
        return;
    }
    susp_t s = {.k = 1 + (int)rndn(&d->rng, 5)};
    uh_t u;
    if (spawn(d, &d->rng, 0, susp_ult, NULL, &s, &u))
        return;
    set_step(d, "resume");
    for (int i = 0; i < s.k; i++) {
        if (rndn(&d->rng, 2))
            relax(); /* sometimes resume before it suspends */
        TCHECK_RC(coexec_thread_resume(u.t), COEXEC_OK);
        set_step(d, "wait for resumed count");
        while (atomic_load(&s.count) < i + 1)
            relax();
        /* one resume, one return from suspend */
        TCHECK_EQ(atomic_load(&s.count), i + 1);
    }
    set_step(d, "join suspended");
    set_await(d, u.t.p, u.t.gen, 0);
    TCHECK_RC(coexec_thread_join(u.t), COEXEC_OK);
    TCHECK_RC(coexec_thread_resume(u.t), COEXEC_ESTATE);
    reap(d, &d->rng, &u);
    TCHECK_EQ(atomic_load(&s.runs), 1);
    TCHECK_EQ(atomic_load(&s.count), s.k);
}

/* ======================================================================= */
/* eventuals                                                                */
/* ======================================================================= */

typedef struct evop {
    coexec_eventual_t ev;
    uint64_t v;
} evop_t;

typedef struct evw {
    evop_t *op;
    int mode;
    atomic_int runs;
    uint64_t got;
    uint64_t rng;
} evw_t;

static void ev_take(evw_t *w, void *val)
{
    TCHECK(val != NULL);
    if (val)
        memcpy(&w->got, val, sizeof w->got);
}

static void evw_ult(void *arg)
{
    evw_t *w = arg;
    void *val = NULL;
    int rc;
    switch (w->mode) {
    case 0:
        TCHECK_RC(coexec_eventual_wait(&w->op->ev, &val), COEXEC_OK);
        break;
    case 1:
        while ((rc = coexec_eventual_wait_timed(&w->op->ev,
                                                1000 + rndn(&w->rng, 200000),
                                                &val)) == COEXEC_ETIMEDOUT)
            ;
        TCHECK_RC(rc, COEXEC_OK);
        break;
    default: {
        int set = 0;
        for (;;) {
            TCHECK_RC(coexec_eventual_test(&w->op->ev, &val, &set), COEXEC_OK);
            if (set)
                break;
            relax();
        }
        break;
    }
    }
    ev_take(w, val);
    finish_once(&w->runs);
}

static coexec_poll_status_t evw_tasklet(coexec_poll_t *cx, void *arg)
{
    evw_t *w = arg;
    void *val = NULL;
    int rc = coexec_eventual_poll(&w->op->ev, cx, &val);
    if (rc == COEXEC_PENDING)
        return COEXEC_PENDING;
    TCHECK_RC(rc, COEXEC_READY);
    ev_take(w, val);
    finish_once(&w->runs);
    return COEXEC_READY;
}

typedef struct evset {
    evop_t *op;
    atomic_int runs;
    int delay;
} evset_t;

static void ev_do_set(evset_t *s)
{
    TCHECK_RC(coexec_eventual_set(&s->op->ev, &s->op->v, sizeof s->op->v),
              COEXEC_OK);
    /* a second set is refused */
    TCHECK_RC(coexec_eventual_set(&s->op->ev, &s->op->v, sizeof s->op->v),
              COEXEC_ESTATE);
}

static void evset_ult(void *arg)
{
    evset_t *s = arg;
    if (s->delay == 1)
        TCHECK_RC(coexec_yield(), COEXEC_OK);
    else if (s->delay == 2)
        TCHECK_RC(coexec_sleep_ns(20000), COEXEC_OK);
    ev_do_set(s);
    finish_once(&s->runs);
}

static coexec_poll_status_t evset_tasklet(coexec_poll_t *cx, void *arg)
{
    (void)cx;
    ev_do_set(arg);
    finish_once(&((evset_t *)arg)->runs);
    return COEXEC_READY;
}

static void op_eventual(driver_t *d)
{
    enum { MAXW = 5 };
    evop_t op;
    set_step(d, "eventual init");
    int rc = coexec_eventual_init(&op.ev, sizeof(uint64_t));
    TCHECK_RC(rc, COEXEC_OK);
    if (rc)
        return;
    int rounds = 1 + (int)rndn(&d->rng, 3);
    for (int round = 0; round < rounds; round++) {
        evw_t w[MAXW];
        uh_t u[MAXW + 1];
        evset_t setter = {.op = &op};
        int nw = (int)rndn(&d->rng, MAXW + 1);
        memset(w, 0, sizeof w);
        op.v = rnd(&d->rng);
        for (int i = 0; i < nw; i++) {
            w[i].op = &op;
            w[i].mode = (int)rndn(&d->rng, 4); /* 3: a tasklet */
            w[i].rng = rnd(&d->rng);
            if (spawn(d, &d->rng, w[i].mode == 3, evw_ult, evw_tasklet, &w[i],
                      &u[i]))
                return;
        }
        /* who sets: the driver, a ULT or a tasklet; the driver waits
         * itself when a child sets */
        int who = (int)rndn(&d->rng, 3);
        int nu = nw;
        if (who == 0) {
            set_step(d, "eventual set");
            if (rndn(&d->rng, 2))
                relax();
            ev_do_set(&setter);
            atomic_store(&setter.runs, 1);
        } else {
            setter.delay = (int)rndn(&d->rng, 3);
            if (spawn(d, &d->rng, who == 2, evset_ult, evset_tasklet, &setter,
                      &u[nu]))
                return;
            nu++;
            evw_t self = {.op = &op, .mode = (int)rndn(&d->rng, 3),
                          .rng = rnd(&d->rng)};
            set_step(d, "eventual wait");
            evw_ult(&self);
            TCHECK(self.got == op.v);
        }
        set_step(d, "eventual join");
        for (int i = 0; i < nu; i++)
            reap(d, &d->rng, &u[i]);
        for (int i = 0; i < nw; i++) {
            TCHECK_EQ(atomic_load(&w[i].runs), 1);
            TCHECK(w[i].got == op.v);
        }
        TCHECK_EQ(atomic_load(&setter.runs), 1);
        int set = 0;
        TCHECK_RC(coexec_eventual_test(&op.ev, NULL, &set), COEXEC_OK);
        TCHECK_EQ(set, 1);
        TCHECK_RC(coexec_eventual_reset(&op.ev), COEXEC_OK);
        TCHECK_RC(coexec_eventual_test(&op.ev, NULL, &set), COEXEC_OK);
        TCHECK_EQ(set, 0);
    }
    TCHECK_RC(coexec_eventual_destroy(&op.ev), COEXEC_OK);
}

/* ======================================================================= */
/* futures                                                                  */
/* ======================================================================= */

typedef struct fut {
    coexec_future_t f;
    size_t n;
    atomic_int cb_runs;
    uint64_t base;
} fut_t;

typedef struct futj {
    fut_t *op;
    int role; /* 0 setter, 1 waiter */
    int idx;
    atomic_int runs;
} futj_t;

static void fut_cb(void **values, size_t n, void *arg)
{
    fut_t *f = arg;
    TCHECK_EQ(n, f->n);
    uint64_t seen = 0;
    for (size_t i = 0; i < n; i++) {
        uintptr_t v = (uintptr_t)values[i];
        TCHECK(v >= f->base && v < f->base + n);
        if (v >= f->base && v < f->base + n)
            seen |= 1ull << (v - f->base);
    }
    TCHECK(seen == (n == 64 ? ~0ull : (1ull << n) - 1));
    atomic_fetch_add(&f->cb_runs, 1);
}

static void futj_ult(void *arg)
{
    futj_t *j = arg;
    if (j->role == 0) {
        TCHECK_RC(coexec_future_set(&j->op->f,
                                    (void *)(uintptr_t)(j->op->base + j->idx)),
                  COEXEC_OK);
    } else if (j->idx & 1) {
        int rc;
        while ((rc = coexec_future_wait_timed(&j->op->f, 30000)) ==
               COEXEC_ETIMEDOUT)
            ;
        TCHECK_RC(rc, COEXEC_OK);
        TCHECK_EQ(atomic_load(&j->op->cb_runs), 1);
    } else {
        TCHECK_RC(coexec_future_wait(&j->op->f), COEXEC_OK);
        /* the callback ran before any waiter was released */
        TCHECK_EQ(atomic_load(&j->op->cb_runs), 1);
    }
    finish_once(&j->runs);
}

static coexec_poll_status_t futj_tasklet(coexec_poll_t *cx, void *arg)
{
    futj_t *j = arg;
    if (j->role == 0) {
        TCHECK_RC(coexec_future_set(&j->op->f,
                                    (void *)(uintptr_t)(j->op->base + j->idx)),
                  COEXEC_OK);
    } else {
        int rc = coexec_future_poll(&j->op->f, cx);
        if (rc == COEXEC_PENDING)
            return COEXEC_PENDING;
        TCHECK_RC(rc, COEXEC_READY);
        TCHECK_EQ(atomic_load(&j->op->cb_runs), 1);
    }
    finish_once(&j->runs);
    return COEXEC_READY;
}

static void op_future(driver_t *d)
{
    enum { MAXS = 5, MAXW = 3 };
    fut_t op;
    memset(&op, 0, sizeof op);
    op.n = 1 + rndn(&d->rng, MAXS);
    op.base = 1 + (rnd(&d->rng) >> 8);
    int rc = coexec_future_init(&op.f, op.n, fut_cb, &op);
    TCHECK_RC(rc, COEXEC_OK);
    if (rc)
        return;
    futj_t j[MAXS + MAXW];
    uh_t u[MAXS + MAXW];
    int nw = (int)rndn(&d->rng, MAXW + 1);
    int nj = 0;
    memset(j, 0, sizeof j);
    set_step(d, "future spawn");
    for (int i = 0; i < nw; i++, nj++) {
        j[nj] = (futj_t){.op = &op, .role = 1, .idx = (int)rndn(&d->rng, 2)};
        if (spawn(d, &d->rng, rndn(&d->rng, 3) == 0, futj_ult, futj_tasklet,
                  &j[nj], &u[nj]))
            return;
    }
    /* the driver sets the last compartment itself, or waits */
    int driver_sets = (int)rndn(&d->rng, 2);
    int ns = (int)op.n - driver_sets;
    for (int i = 0; i < ns; i++, nj++) {
        j[nj] = (futj_t){.op = &op, .role = 0, .idx = i};
        if (spawn(d, &d->rng, (int)rndn(&d->rng, 2), futj_ult, futj_tasklet,
                  &j[nj], &u[nj]))
            return;
    }
    if (driver_sets) {
        set_step(d, "future set");
        TCHECK_RC(coexec_future_set(&op.f,
                                    (void *)(uintptr_t)(op.base + op.n - 1)),
                  COEXEC_OK);
    } else {
        set_step(d, "future wait");
        TCHECK_RC(coexec_future_wait(&op.f), COEXEC_OK);
    }
    set_step(d, "future join");
    for (int i = 0; i < nj; i++) {
        reap(d, &d->rng, &u[i]);
        TCHECK_EQ(atomic_load(&j[i].runs), 1);
    }
    TCHECK_EQ(atomic_load(&op.cb_runs), 1);
    int ready = 0;
    TCHECK_RC(coexec_future_test(&op.f, &ready), COEXEC_OK);
    TCHECK_EQ(ready, 1);
    TCHECK_RC(coexec_future_set(&op.f, (void *)1), COEXEC_ESTATE);
    TCHECK_RC(coexec_future_destroy(&op.f), COEXEC_OK);
}

/* ======================================================================= */
/* mutexes                                                                  */
/* ======================================================================= */

/* The critical section: nobody else may be inside, and the count must not
 * move while the owner holds the mutex (hold: 0 none, 1 yield, 2 sleep). */
static void crit(int i, int hold)
{
    uint64_t token = atomic_fetch_add(&g.token, 1) + 1;
    uint64_t prev = atomic_exchange(&g.mowner[i], token);
    TCHECK(prev == 0);
    long v = g.mcount[i];
    if (hold == 1)
        relax();
    else if (hold == 2 && is_ult())
        TCHECK_RC(coexec_sleep_ns(2000), COEXEC_OK);
    TCHECK_EQ(g.mcount[i], v);
    g.mcount[i] = v + 1;
    atomic_fetch_add(&g.mexpect[i], 1);
    prev = atomic_exchange(&g.mowner[i], 0);
    TCHECK(prev == token);
}

/* Locks mutex i the given way (0 lock, 1 timed, 2 trylock loop). */
static void mlock(coexec_mutex_t *m, int how, uint64_t *rng)
{
    int rc;
    switch (how) {
    case 0:
        TCHECK_RC(coexec_mutex_lock(m), COEXEC_OK);
        break;
    case 1:
        while ((rc = coexec_mutex_lock_timed(m, 1000 + rndn(rng, 100000))) ==
               COEXEC_ETIMEDOUT)
            ;
        TCHECK_RC(rc, COEXEC_OK);
        break;
    default:
        while ((rc = coexec_mutex_trylock(m)) == COEXEC_EBUSY)
            relax();
        TCHECK_RC(rc, COEXEC_OK);
        break;
    }
}

typedef struct mjob {
    atomic_int runs;
    int n, i, j, how, hold;
    uint64_t rng;
    long tried, taken; /* tasklets: trylock attempts that succeeded */
} mjob_t;

static void mutex_round(mjob_t *m)
{
    int i = m->i, j = m->j;
    mlock(&g.mtx[i], m->how, &m->rng);
    if (j > i)
        mlock(&g.mtx[j], (int)rndn(&m->rng, 3), &m->rng); /* in order */
    crit(i, m->hold);
    if (j > i) {
        crit(j, 0);
        TCHECK_RC(coexec_mutex_unlock(&g.mtx[j]), COEXEC_OK);
    }
    TCHECK_RC(coexec_mutex_unlock(&g.mtx[i]), COEXEC_OK);
}

static void mjob_ult(void *arg)
{
    mjob_t *m = arg;
    for (int k = 0; k < m->n; k++) {
        m->i = (int)rndn(&m->rng, NMUTEX);
        m->j = (int)rndn(&m->rng, NMUTEX);
        m->how = (int)rndn(&m->rng, 3);
        m->hold = (int)rndn(&m->rng, 3);
        mutex_round(m);
        if (rndn(&m->rng, 4) == 0) {
            /* the recursive mutex, twice deep */
            mlock(&g.rmtx, (int)rndn(&m->rng, 3), &m->rng);
            mlock(&g.rmtx, (int)rndn(&m->rng, 3), &m->rng);
            g.rmcount++;
            atomic_fetch_add(&g.rmexpect, 1);
            TCHECK_RC(coexec_mutex_unlock(&g.rmtx), COEXEC_OK);
            TCHECK_RC(coexec_mutex_unlock(&g.rmtx), COEXEC_OK);
        }
    }
    finish_once(&m->runs);
}

static coexec_poll_status_t mjob_tasklet(coexec_poll_t *cx, void *arg)
{
    (void)cx;
    mjob_t *m = arg;
    for (int k = 0; k < m->n; k++) {
        int i = (int)rndn(&m->rng, NMUTEX);
        m->tried++;
        int rc = coexec_mutex_trylock(&g.mtx[i]);
        if (rc == COEXEC_EBUSY)
            continue;
        TCHECK_RC(rc, COEXEC_OK);
        if (rc)
            continue;
        m->taken++;
        crit(i, 0);
        TCHECK_RC(coexec_mutex_unlock(&g.mtx[i]), COEXEC_OK);
    }
    finish_once(&m->runs);
    return COEXEC_READY;
}

static void op_mutex(driver_t *d)
{
    enum { MAXN = 4 };
    mjob_t m[MAXN];
    uh_t u[MAXN];
    int n = (int)rndn(&d->rng, MAXN + 1);
    memset(m, 0, sizeof m);
    set_step(d, "mutex spawn");
    for (int i = 0; i < n; i++) {
        m[i].n = 1 + (int)rndn(&d->rng, 8);
        m[i].rng = rnd(&d->rng);
        if (spawn(d, &d->rng, rndn(&d->rng, 4) == 0, mjob_ult, mjob_tasklet,
                  &m[i], &u[i]))
            return;
    }
    mjob_t self = {.n = 1 + (int)rndn(&d->rng, 6), .rng = rnd(&d->rng)};
    set_step(d, "mutex lock");
    mjob_ult(&self);
    set_step(d, "mutex join");
    for (int i = 0; i < n; i++) {
        reap(d, &d->rng, &u[i]);
        TCHECK_EQ(atomic_load(&m[i].runs), 1);
    }
}

/* ======================================================================= */
/* rwlock                                                                   */
/* ======================================================================= */

static void rw_take(int write, int how, uint64_t *rng)
{
    int rc;
    uint64_t t = 1000 + rndn(rng, 100000);
    switch (how) {
    case 0:
        TCHECK_RC(write ? coexec_rwlock_wrlock(&g.rw) : coexec_rwlock_rdlock(&g.rw),
                  COEXEC_OK);
        break;
    case 1:
        while ((rc = write ? coexec_rwlock_wrlock_timed(&g.rw, t)
                           : coexec_rwlock_rdlock_timed(&g.rw, t)) ==
               COEXEC_ETIMEDOUT)
            ;
        TCHECK_RC(rc, COEXEC_OK);
        break;
    default:
        while ((rc = write ? coexec_rwlock_trywrlock(&g.rw)
                           : coexec_rwlock_tryrdlock(&g.rw)) == COEXEC_EBUSY)
            relax();
        TCHECK_RC(rc, COEXEC_OK);
        break;
    }
}

static void rw_inside(int write, int hold)
{
    if (write) {
        TCHECK_EQ(atomic_exchange(&g.rw_writer, 1), 0);
        TCHECK_EQ(atomic_load(&g.rw_readers), 0);
        long a = g.rwa;
        g.rwa = a + 1;
        if (hold)
            relax();
        TCHECK_EQ(g.rwb, a);
        g.rwb = a + 1;
        atomic_fetch_add(&g.rw_expect, 1);
        TCHECK_EQ(atomic_exchange(&g.rw_writer, 0), 1);
    } else {
        atomic_fetch_add(&g.rw_readers, 1);
        TCHECK_EQ(atomic_load(&g.rw_writer), 0);
        long a = g.rwa;
        if (hold)
            relax();
        long b = g.rwb;
        TCHECK_EQ(a, b);
        TCHECK_EQ(g.rwa, a);
        atomic_fetch_sub(&g.rw_readers, 1);
    }
}

typedef struct rwjob {
    atomic_int runs;
    int n;
    uint64_t rng;
} rwjob_t;

static void rwjob_ult(void *arg)
{
    rwjob_t *r = arg;
    for (int k = 0; k < r->n; k++) {
        int write = rndn(&r->rng, 3) == 0;
        rw_take(write, (int)rndn(&r->rng, 3), &r->rng);
        rw_inside(write, (int)rndn(&r->rng, 2));
        TCHECK_RC(coexec_rwlock_unlock(&g.rw), COEXEC_OK);
    }
    finish_once(&r->runs);
}

static coexec_poll_status_t rwjob_tasklet(coexec_poll_t *cx, void *arg)
{
    (void)cx;
    rwjob_t *r = arg;
    for (int k = 0; k < r->n; k++) {
        int write = rndn(&r->rng, 3) == 0;
        int rc = write ? coexec_rwlock_trywrlock(&g.rw)
                       : coexec_rwlock_tryrdlock(&g.rw);
        if (rc == COEXEC_EBUSY)
            continue;
        TCHECK_RC(rc, COEXEC_OK);
        if (rc)
            continue;
        rw_inside(write, 0);
        TCHECK_RC(coexec_rwlock_unlock(&g.rw), COEXEC_OK);
    }
    finish_once(&r->runs);
    return COEXEC_READY;
}

static void op_rwlock(driver_t *d)
{
    enum { MAXN = 4 };
    rwjob_t r[MAXN];
    uh_t u[MAXN];
    int n = (int)rndn(&d->rng, MAXN + 1);
    memset(r, 0, sizeof r);
    set_step(d, "rwlock spawn");
    for (int i = 0; i < n; i++) {
        r[i].n = 1 + (int)rndn(&d->rng, 6);
        r[i].rng = rnd(&d->rng);
        if (spawn(d, &d->rng, rndn(&d->rng, 4) == 0, rwjob_ult, rwjob_tasklet,
                  &r[i], &u[i]))
            return;
    }
    rwjob_t self = {.n = 1 + (int)rndn(&d->rng, 4), .rng = rnd(&d->rng)};
    set_step(d, "rwlock lock");
    rwjob_ult(&self);
    set_step(d, "rwlock join");
    for (int i = 0; i < n; i++) {
        reap(d, &d->rng, &u[i]);
        TCHECK_EQ(atomic_load(&r[i].runs), 1);
    }
}

/* ======================================================================= */
/* channels                                                                 */
/* ======================================================================= */

#define CH_MAXS 3
#define CH_MAXR 3
#define CH_MAXM 16

typedef struct chmsg {
    uint32_t sender, seq;
    uint64_t check;
} chmsg_t;

typedef struct chop {
    coexec_channel_t ch;
    int nsend, nrecv, nmsg, cap, role;
    struct chend *ends;
    uint64_t salt;
    int tasklet_recv; /* a receiver is a polling tasklet */
    atomic_int live_senders;
    atomic_int seen[CH_MAXS][CH_MAXM];
    atomic_long received;
} chop_t;

typedef struct chend {
    chop_t *op;
    int id, mode;
    atomic_int runs;
    atomic_int sent;     /* messages a sender has sent (for the dump) */
    int next;            /* a sender's next message */
    int last[CH_MAXS];   /* a receiver's last seq from each sender */
    int got;
    uint64_t rng;
} chend_t;

static chmsg_t ch_make(chop_t *op, int sender, int seq)
{
    chmsg_t m = {(uint32_t)sender, (uint32_t)seq,
                 ch_mix64(op->salt ^ ((uint64_t)sender << 32) ^ (uint64_t)seq)};
    return m;
}

static void ch_sender_done(chop_t *op)
{
    if (atomic_fetch_sub(&op->live_senders, 1) == 1)
        TCHECK_RC(coexec_channel_close(&op->ch), COEXEC_OK);
}

static void ch_record(chend_t *e, const chmsg_t *m)
{
    chop_t *op = e->op;
    int s = (int)m->sender, q = (int)m->seq;
    if (s >= op->nsend || q >= op->nmsg) {
        TCHECK(s < op->nsend && q < op->nmsg);
        return;
    }
    TCHECK(m->check == ch_make(op, s, q).check);
    TCHECK_EQ(atomic_fetch_add(&op->seen[s][q], 1), 0);
    if (q <= e->last[s]) {
        /* One sender's messages reach one receiver in the order sent. With
         * a polling tasklet among the receivers the channel is known to
         * break this (a waiting ULT is handed a newer message while an
         * older one waits in the ring for the released tasklet): counted,
         * and failed only with COEXEC_TORTURE_KNOWN=1. */
        atomic_fetch_add(op->tasklet_recv ? &g.order_tasklet : &g.order_bad,
                         1);
        if (!op->tasklet_recv || g_opt.known)
            ch_fail_at(__FILE__, __LINE__,
                       "seed %" PRIu64 ": channel order: receiver %d (mode "
                       "%d) got message %d of sender %d after message %d "
                       "(tasklet receivers: %d)",
                       g_seed, e->id, e->mode, q, s, e->last[s],
                       op->tasklet_recv);
    }
    e->last[s] = q;
    e->got++;
    atomic_fetch_add(&op->received, 1);
    tick();
}

/* mode 0 send, 1 send_timed, 2 try_send */
static void ch_send_all(chend_t *e)
{
    chop_t *op = e->op;
    for (int q = 0; q < op->nmsg; q++) {
        chmsg_t m = ch_make(op, e->id, q);
        int rc;
        switch (e->mode) {
        case 0:
            rc = coexec_channel_send(&op->ch, &m);
            break;
        case 1:
            while ((rc = coexec_channel_send_timed(&op->ch, &m,
                                                   1000 + rndn(&e->rng, 50000))) ==
                   COEXEC_ETIMEDOUT)
                ;
            break;
        default:
            while ((rc = coexec_channel_try_send(&op->ch, &m)) == COEXEC_EAGAIN)
                relax();
            break;
        }
        TCHECK_RC(rc, COEXEC_OK);
        if (rc)
            break;
        atomic_fetch_add(&e->sent, 1);
    }
    ch_sender_done(op);
}

/* mode 0 recv, 1 recv_timed, 2 try_recv, until closed and drained */
static void ch_recv_all(chend_t *e)
{
    chop_t *op = e->op;
    for (;;) {
        chmsg_t m;
        int rc;
        switch (e->mode) {
        case 0:
            rc = coexec_channel_recv(&op->ch, &m);
            break;
        case 1:
            while ((rc = coexec_channel_recv_timed(&op->ch, &m,
                                                   1000 + rndn(&e->rng, 50000))) ==
                   COEXEC_ETIMEDOUT)
                ;
            break;
        default:
            while ((rc = coexec_channel_try_recv(&op->ch, &m)) == COEXEC_EAGAIN)
                relax();
            break;
        }
        if (rc == COEXEC_ECLOSED)
            break;
        TCHECK_RC(rc, COEXEC_OK);
        if (rc)
            break;
        ch_record(e, &m);
    }
}

static void ch_sender_ult(void *arg)
{
    ch_send_all(arg);
    finish_once(&((chend_t *)arg)->runs);
}

static void ch_recver_ult(void *arg)
{
    ch_recv_all(arg);
    finish_once(&((chend_t *)arg)->runs);
}

static coexec_poll_status_t ch_sender_tasklet(coexec_poll_t *cx, void *arg)
{
    chend_t *e = arg;
    chop_t *op = e->op;
    while (e->next < op->nmsg) {
        chmsg_t m = ch_make(op, e->id, e->next);
        int rc = coexec_channel_poll_send(&op->ch, cx, &m);
        if (rc == COEXEC_PENDING)
            return COEXEC_PENDING;
        TCHECK_RC(rc, COEXEC_READY);
        if (rc != COEXEC_READY)
            break;
        e->next++;
        atomic_fetch_add(&e->sent, 1);
    }
    ch_sender_done(op);
    finish_once(&e->runs);
    return COEXEC_READY;
}

static coexec_poll_status_t ch_recver_tasklet(coexec_poll_t *cx, void *arg)
{
    chend_t *e = arg;
    for (;;) {
        chmsg_t m;
        int rc = coexec_channel_poll_recv(&e->op->ch, cx, &m);
        if (rc == COEXEC_PENDING)
            return COEXEC_PENDING;
        if (rc == COEXEC_ECLOSED)
            break;
        TCHECK_RC(rc, COEXEC_READY);
        if (rc != COEXEC_READY)
            break;
        ch_record(e, &m);
    }
    finish_once(&e->runs);
    return COEXEC_READY;
}

static void op_channel(driver_t *d)
{
    chop_t *op = calloc(1, sizeof *op);
    chend_t *ends = calloc(CH_MAXS + CH_MAXR, sizeof *ends);
    uh_t u[CH_MAXS + CH_MAXR];
    int nu = 0;
    if (!op || !ends) {
        TCHECK(op && ends);
        free(op);
        free(ends);
        return;
    }
    op->nsend = 1 + (int)rndn(&d->rng, CH_MAXS);
    op->nrecv = 1 + (int)rndn(&d->rng, CH_MAXR);
    op->nmsg = 1 + (int)rndn(&d->rng, CH_MAXM);
    op->salt = rnd(&d->rng);
    op->cap = 1 + (int)rndn(&d->rng, 4);
    op->ends = ends;
    atomic_store(&op->live_senders, op->nsend);
    int rc = coexec_channel_init(&op->ch, sizeof(chmsg_t), (size_t)op->cap);
    TCHECK_RC(rc, COEXEC_OK);
    if (rc) {
        free(op);
        free(ends);
        return;
    }
    /* the driver takes one role: sender 0 (1), receiver 0 (2) or none */
    int role = (int)rndn(&d->rng, 3);
    op->role = role;
    atomic_store(&d->chan, op);
    chend_t *mine = NULL;
    chend_t *s = ends, *r = ends + CH_MAXS;
    set_step(d, "channel spawn");
    for (int i = 0; i < op->nsend; i++) {
        s[i] = (chend_t){.op = op, .id = i, .mode = (int)rndn(&d->rng, 4),
                         .rng = rnd(&d->rng)};
        /* a tasklet sender beside other senders: a known fault (top) */
        if (s[i].mode == 3 && op->nsend > 1 && !g_opt.known)
            s[i].mode = (int)rndn(&d->rng, 3);
        if (i == 0 && role == 1) {
            s[i].mode %= 3;
            mine = &s[i];
            continue;
        }
        if (spawn(d, &d->rng, s[i].mode == 3, ch_sender_ult, ch_sender_tasklet,
                  &s[i], &u[nu]))
            goto out;
        nu++;
    }
    for (int i = 0; i < op->nrecv; i++) {
        r[i] = (chend_t){.op = op, .id = i, .mode = (int)rndn(&d->rng, 4),
                         .rng = rnd(&d->rng)};
        for (int k = 0; k < CH_MAXS; k++)
            r[i].last[k] = -1;
        if (i == 0 && role == 2)
            r[i].mode %= 3;
        op->tasklet_recv |= r[i].mode == 3;
    }
    for (int i = 0; i < op->nrecv; i++) {
        if (i == 0 && role == 2) {
            mine = &r[i];
            continue;
        }
        if (spawn(d, &d->rng, r[i].mode == 3, ch_recver_ult, ch_recver_tasklet,
                  &r[i], &u[nu]))
            goto out;
        nu++;
    }
    if (role == 1) {
        set_step(d, "channel send");
        ch_send_all(mine);
        atomic_store(&mine->runs, 1);
    } else if (role == 2) {
        set_step(d, "channel recv");
        ch_recv_all(mine);
        atomic_store(&mine->runs, 1);
    }
    set_step(d, "channel join");
    for (int i = 0; i < nu; i++)
        reap(d, &d->rng, &u[i]);
    for (int i = 0; i < op->nsend; i++)
        TCHECK_EQ(atomic_load(&s[i].runs), 1);
    int got = 0;
    for (int i = 0; i < op->nrecv; i++) {
        TCHECK_EQ(atomic_load(&r[i].runs), 1);
        got += r[i].got;
    }
    TCHECK_EQ(got, op->nsend * op->nmsg);
    TCHECK_EQ(atomic_load(&op->received), op->nsend * op->nmsg);
    for (int i = 0; i < op->nsend; i++)
        for (int q = 0; q < op->nmsg; q++)
            TCHECK_EQ(atomic_load(&op->seen[i][q]), 1);
    size_t left = 99;
    TCHECK_RC(coexec_channel_count(&op->ch, &left), COEXEC_OK);
    TCHECK_EQ(left, 0);
    TCHECK_RC(coexec_channel_destroy(&op->ch), COEXEC_OK);
    atomic_store(&d->chan, NULL);
    free(op);
    free(ends);
    return;
out:
    /* a spawn failed (already reported): close so the others end */
    TCHECK_RC(coexec_channel_close(&op->ch), COEXEC_OK);
    for (int i = 0; i < nu; i++)
        reap(d, &d->rng, &u[i]);
    TCHECK_RC(coexec_channel_destroy(&op->ch), COEXEC_OK);
    atomic_store(&d->chan, NULL);
    free(op);
    free(ends);
}

/* ======================================================================= */
/* offload and requests                                                     */
/* ======================================================================= */

typedef struct offjob {
    atomic_int calls;
    long x;
    int sleep_us;
} offjob_t;

static intptr_t off_fn(void *arg)
{
    offjob_t *j = arg;
    TCHECK_EQ(atomic_fetch_add(&j->calls, 1), 0);
    if (j->sleep_us)
        usleep((useconds_t)j->sleep_us);
    return (intptr_t)(j->x * 3 + 1);
}

typedef struct offtk {
    atomic_int runs;
    int submitted;
    coexec_request_t req;
    offjob_t job;
} offtk_t;

static coexec_poll_status_t off_tasklet(coexec_poll_t *cx, void *arg)
{
    offtk_t *t = arg;
    if (!t->submitted) {
        t->submitted = 1;
        int rc = coexec_request_submit(&t->req, off_fn, &t->job);
        TCHECK_RC(rc, COEXEC_OK);
        if (rc) {
            finish_once(&t->runs);
            return COEXEC_READY;
        }
    }
    intptr_t ret = -1;
    int rc = coexec_request_poll(&t->req, cx, &ret);
    if (rc == COEXEC_PENDING)
        return COEXEC_PENDING;
    TCHECK_RC(rc, COEXEC_READY);
    TCHECK_EQ(ret, t->job.x * 3 + 1);
    finish_once(&t->runs);
    return COEXEC_READY;
}

typedef struct offult {
    atomic_int runs;
    offjob_t job;
} offult_t;

static void off_ult(void *arg)
{
    offult_t *o = arg;
    intptr_t ret = -1;
    TCHECK_RC(coexec_offload(off_fn, &o->job, &ret), COEXEC_OK);
    TCHECK_EQ(ret, o->job.x * 3 + 1);
    finish_once(&o->runs);
}

static void op_offload(driver_t *d)
{
    enum { MAXN = 3, MAXR = 4 };
    offtk_t tk[MAXN];
    offult_t ul[MAXN];
    uh_t u[2 * MAXN];
    int nu = 0;
    int nt = (int)rndn(&d->rng, MAXN + 1), nl = (int)rndn(&d->rng, MAXN + 1);
    memset(tk, 0, sizeof tk);
    memset(ul, 0, sizeof ul);
    set_step(d, "offload spawn");
    for (int i = 0; i < nt; i++) {
        tk[i].job.x = (long)rndn(&d->rng, 1000000);
        tk[i].job.sleep_us = rndn(&d->rng, 4) == 0 ? 50 : 0;
        if (spawn(d, &d->rng, 1, NULL, off_tasklet, &tk[i], &u[nu]))
            return;
        nu++;
    }
    for (int i = 0; i < nl; i++) {
        ul[i].job.x = (long)rndn(&d->rng, 1000000);
        if (spawn(d, &d->rng, 0, off_ult, NULL, &ul[i], &u[nu]))
            return;
        nu++;
    }
    int kind = (int)rndn(&d->rng, 3);
    if (kind == 0) {
        offjob_t j = {.x = (long)rndn(&d->rng, 1000000),
                      .sleep_us = rndn(&d->rng, 4) == 0 ? 100 : 0};
        intptr_t ret = -1;
        set_step(d, "offload");
        TCHECK_RC(coexec_offload(off_fn, &j, &ret), COEXEC_OK);
        TCHECK_EQ(ret, j.x * 3 + 1);
        TCHECK_EQ(atomic_load(&j.calls), 1);
    } else {
        /* several requests in flight; kind 2 cancels some */
        coexec_request_t req[MAXR];
        offjob_t j[MAXR];
        int cancelled[MAXR];
        int nr = 1 + (int)rndn(&d->rng, MAXR);
        memset(j, 0, sizeof j);
        /* Fresh requests: this stack memory may hold requests of an
         * earlier operation, which submit would take for live ones. */
        memset(req, 0, sizeof req);
        set_step(d, "request submit");
        for (int i = 0; i < nr; i++) {
            j[i].x = (long)rndn(&d->rng, 1000000);
            j[i].sleep_us = rndn(&d->rng, 3) == 0 ? 100 : 0;
            int rc = coexec_request_submit(&req[i], off_fn, &j[i]);
            TCHECK_RC(rc, COEXEC_OK);
            if (rc)
                return;
        }
        for (int i = 0; i < nr; i++) {
            cancelled[i] = 0;
            if (kind == 2 && rndn(&d->rng, 2)) {
                int rc = coexec_request_cancel(&req[i]);
                TCHECK_RC2(rc, COEXEC_OK, COEXEC_EBUSY);
                cancelled[i] = rc == COEXEC_OK;
            }
        }
        set_step(d, "request wait");
        for (int i = 0; i < nr; i++) {
            intptr_t ret = -1;
            int rc = coexec_request_wait(&req[i], &ret);
            if (cancelled[i]) {
                TCHECK_RC(rc, COEXEC_ECANCELED);
                TCHECK_EQ(atomic_load(&j[i].calls), 0);
            } else {
                TCHECK_RC(rc, COEXEC_OK);
                TCHECK_EQ(ret, j[i].x * 3 + 1);
                TCHECK_EQ(atomic_load(&j[i].calls), 1);
            }
        }
    }
    set_step(d, "offload join");
    for (int i = 0; i < nu; i++)
        reap(d, &d->rng, &u[i]);
    for (int i = 0; i < nt; i++) {
        TCHECK_EQ(atomic_load(&tk[i].runs), 1);
        TCHECK_EQ(atomic_load(&tk[i].job.calls), 1);
    }
    for (int i = 0; i < nl; i++) {
        TCHECK_EQ(atomic_load(&ul[i].runs), 1);
        TCHECK_EQ(atomic_load(&ul[i].job.calls), 1);
    }
}

/* ======================================================================= */
/* coexec_read and friends                                                  */
/* ======================================================================= */

typedef struct rdjob {
    atomic_int runs;
    uint64_t rng;
} rdjob_t;

static void read_once(uint64_t *rng)
{
    unsigned char buf[512], back[512];
    if (rndn(rng, 2)) {
        size_t n = 1 + rndn(rng, sizeof buf);
        off_t off = (off_t)rndn(rng, FILE_SIZE - (unsigned)n + 1);
        ssize_t got = coexec_pread(g_fd, buf, n, off);
        TCHECK_EQ(got, (long long)n);
        if (got == (ssize_t)n) {
            int bad = 0;
            for (size_t i = 0; i < n; i++)
                bad += buf[i] != file_byte((size_t)off + i);
            TCHECK_EQ(bad, 0);
        }
        return;
    }
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
        TCHECK(!"pipe2");
        return;
    }
    size_t n = 1 + rndn(rng, sizeof buf);
    for (size_t i = 0; i < n; i++)
        buf[i] = (unsigned char)rnd(rng);
    ssize_t w = coexec_write(fds[1], buf, n);
    TCHECK_EQ(w, (long long)n);
    size_t have = 0;
    while (w == (ssize_t)n && have < n) {
        ssize_t r = coexec_read(fds[0], back + have, n - have);
        TCHECK(r > 0);
        if (r <= 0)
            break;
        have += (size_t)r;
    }
    TCHECK(have == n && memcmp(buf, back, n) == 0);
    TCHECK_EQ(coexec_close(fds[1]), 0);
    TCHECK_EQ(coexec_close(fds[0]), 0);
}

static void rd_ult(void *arg)
{
    rdjob_t *r = arg;
    read_once(&r->rng);
    finish_once(&r->runs);
}

static coexec_poll_status_t rd_tasklet(coexec_poll_t *cx, void *arg)
{
    (void)cx;
    rd_ult(arg); /* from a tasklet, the plain calls */
    return COEXEC_READY;
}

static void op_read(driver_t *d)
{
    enum { MAXN = 3 };
    rdjob_t r[MAXN];
    uh_t u[MAXN];
    int n = (int)rndn(&d->rng, MAXN + 1);
    memset(r, 0, sizeof r);
    set_step(d, "read spawn");
    for (int i = 0; i < n; i++) {
        r[i].rng = rnd(&d->rng);
        if (spawn(d, &d->rng, rndn(&d->rng, 4) == 0, rd_ult, rd_tasklet, &r[i],
                  &u[i]))
            return;
    }
    set_step(d, "read");
    int k = 1 + (int)rndn(&d->rng, 3);
    for (int i = 0; i < k; i++)
        read_once(&d->rng);
    set_step(d, "read join");
    for (int i = 0; i < n; i++) {
        reap(d, &d->rng, &u[i]);
        TCHECK_EQ(atomic_load(&r[i].runs), 1);
    }
}

/* ======================================================================= */
/* sleeps                                                                   */
/* ======================================================================= */

static void sleep_once(uint64_t *rng)
{
    uint64_t ns = rndn(rng, 4) == 0 ? 0 : rndn(rng, 300000);
    uint64_t t0 = coexec_now_ns();
    if (rndn(rng, 2)) {
        TCHECK_RC(coexec_sleep_ns(ns), COEXEC_OK);
    } else {
        TCHECK_RC(coexec_sleep_until(t0 + ns), COEXEC_OK);
    }
    uint64_t t1 = coexec_now_ns();
    TCHECK(t1 - t0 >= ns); /* never early */
}

typedef struct slpjob {
    atomic_int runs;
    uint64_t rng;
    int resume; /* resumed while asleep: must not end the sleep early */
} slpjob_t;

static void slp_ult(void *arg)
{
    slpjob_t *s = arg;
    sleep_once(&s->rng);
    finish_once(&s->runs);
}

static void op_sleep(driver_t *d)
{
    enum { MAXN = 4 };
    slpjob_t s[MAXN];
    uh_t u[MAXN];
    int n = (int)rndn(&d->rng, MAXN + 1);
    memset(s, 0, sizeof s);
    set_step(d, "sleep spawn");
    for (int i = 0; i < n; i++) {
        s[i].rng = rnd(&d->rng);
        if (spawn(d, &d->rng, 0, slp_ult, NULL, &s[i], &u[i]))
            return;
        if (rndn(&d->rng, 3) == 0)
            TCHECK_RC2(coexec_thread_resume(u[i].t), COEXEC_OK, COEXEC_ESTATE);
    }
    set_step(d, "sleep");
    sleep_once(&d->rng);
    set_step(d, "sleep join");
    for (int i = 0; i < n; i++) {
        reap(d, &d->rng, &u[i]);
        TCHECK_EQ(atomic_load(&s[i].runs), 1);
    }
}

/* ======================================================================= */
/* timed waits                                                              */
/* ======================================================================= */

typedef struct tmjob {
    atomic_int runs;
    int kind;
    uint64_t timeout;
    coexec_mutex_t *m;
    coexec_eventual_t *ev;
    uint64_t v;
} tmjob_t;

/* Waits that must run out: nothing releases them. */
static void tm_expire(tmjob_t *t)
{
    uint64_t t0 = coexec_now_ns();
    switch (t->kind) {
    case 0:
        TCHECK_RC(coexec_mutex_lock_timed(t->m, t->timeout), COEXEC_ETIMEDOUT);
        break;
    case 1: {
        void *val = NULL;
        TCHECK_RC(coexec_eventual_wait_timed(t->ev, t->timeout, &val),
                  COEXEC_ETIMEDOUT);
        break;
    }
    case 2:
        TCHECK_RC(coexec_rwlock_wrlock_timed(&g.rw, 0), COEXEC_ETIMEDOUT);
        break;
    default:
        break;
    }
    uint64_t t1 = coexec_now_ns();
    if (t->kind != 2)
        TCHECK(t1 - t0 >= t->timeout); /* never early */
}

static void tm_ult(void *arg)
{
    tmjob_t *t = arg;
    tm_expire(t);
    finish_once(&t->runs);
}

typedef struct tmset {
    atomic_int runs;
    coexec_eventual_t *ev;
    uint64_t v;
    uint64_t delay;
} tmset_t;

static void tmset_ult(void *arg)
{
    tmset_t *s = arg;
    TCHECK_RC(coexec_sleep_ns(s->delay), COEXEC_OK);
    TCHECK_RC(coexec_eventual_set(s->ev, &s->v, sizeof s->v), COEXEC_OK);
    finish_once(&s->runs);
}

static void op_timed(driver_t *d)
{
    int what = (int)rndn(&d->rng, 6);
    uint64_t timeout = 1000 + rndn(&d->rng, 200000);
    if (what == 0) {
        /* a held mutex: a child's timed lock runs out */
        coexec_mutex_t m;
        TCHECK_RC(coexec_mutex_init(&m, COEXEC_MUTEX_PLAIN), COEXEC_OK);
        TCHECK_RC(coexec_mutex_lock(&m), COEXEC_OK);
        tmjob_t t = {.kind = 0, .timeout = timeout, .m = &m};
        uh_t u;
        if (spawn(d, &d->rng, 0, tm_ult, NULL, &t, &u) == 0) {
            set_step(d, "timed: join mutex waiter");
            reap(d, &d->rng, &u);
            TCHECK_EQ(atomic_load(&t.runs), 1);
        }
        TCHECK_RC(coexec_mutex_unlock(&m), COEXEC_OK);
        TCHECK_RC(coexec_mutex_destroy(&m), COEXEC_OK);
    } else if (what == 1) {
        /* an eventual nobody sets, waited by the driver and a child */
        coexec_eventual_t ev;
        TCHECK_RC(coexec_eventual_init(&ev, 8), COEXEC_OK);
        tmjob_t t = {.kind = 1, .timeout = timeout, .ev = &ev};
        uh_t u;
        int ok = spawn(d, &d->rng, 0, tm_ult, NULL, &t, &u) == 0;
        tmjob_t self = {.kind = 1, .timeout = 1000 + rndn(&d->rng, 100000),
                        .ev = &ev};
        set_step(d, "timed: eventual");
        tm_expire(&self);
        if (ok) {
            reap(d, &d->rng, &u);
            TCHECK_EQ(atomic_load(&t.runs), 1);
        }
        TCHECK_RC(coexec_eventual_destroy(&ev), COEXEC_OK);
    } else if (what == 2) {
        /* an empty channel */
        coexec_channel_t ch;
        chmsg_t m;
        TCHECK_RC(coexec_channel_init(&ch, sizeof m, 2), COEXEC_OK);
        uint64_t t0 = coexec_now_ns();
        set_step(d, "timed: channel");
        TCHECK_RC(coexec_channel_recv_timed(&ch, &m, timeout), COEXEC_ETIMEDOUT);
        TCHECK(coexec_now_ns() - t0 >= timeout);
        TCHECK_RC(coexec_channel_destroy(&ch), COEXEC_OK);
    } else if (what == 3) {
        /* a cond nobody signals: the mutex is held again afterwards */
        coexec_mutex_t m;
        coexec_cond_t c;
        TCHECK_RC(coexec_mutex_init(&m, COEXEC_MUTEX_PLAIN), COEXEC_OK);
        TCHECK_RC(coexec_cond_init(&c), COEXEC_OK);
        TCHECK_RC(coexec_mutex_lock(&m), COEXEC_OK);
        uint64_t t0 = coexec_now_ns();
        set_step(d, "timed: cond");
        int rc = coexec_cond_wait_timed(&c, &m, timeout);
        /* a spurious return is allowed, an early timeout is not */
        TCHECK_RC2(rc, COEXEC_ETIMEDOUT, COEXEC_OK);
        if (rc == COEXEC_ETIMEDOUT)
            TCHECK(coexec_now_ns() - t0 >= timeout);
        TCHECK_RC(coexec_mutex_trylock(&m), COEXEC_EBUSY);
        TCHECK_RC(coexec_mutex_unlock(&m), COEXEC_OK);
        TCHECK_RC(coexec_cond_destroy(&c), COEXEC_OK);
        TCHECK_RC(coexec_mutex_destroy(&m), COEXEC_OK);
    } else if (what == 4) {
        /* the driver holds the rwlock as writer; a child's attempt runs
         * out (timeout 0: one try) */
        rw_take(1, 0, &d->rng);
        rw_inside(1, 0);
        tmjob_t t = {.kind = 2};
        uh_t u;
        if (spawn(d, &d->rng, 0, tm_ult, NULL, &t, &u) == 0) {
            set_step(d, "timed: join rwlock waiter");
            reap(d, &d->rng, &u);
            TCHECK_EQ(atomic_load(&t.runs), 1);
        }
        TCHECK_RC(coexec_rwlock_unlock(&g.rw), COEXEC_OK);
    } else {
        /* a timed wait racing with a set: either outcome, never a wrong
         * value, and a timed-out waiter still sees the set later */
        coexec_eventual_t ev;
        TCHECK_RC(coexec_eventual_init(&ev, 8), COEXEC_OK);
        tmset_t s = {.ev = &ev, .v = rnd(&d->rng), .delay = rndn(&d->rng, 100000)};
        uh_t u;
        if (spawn(d, &d->rng, 0, tmset_ult, NULL, &s, &u) == 0) {
            void *val = NULL;
            set_step(d, "timed: racing eventual");
            int rc = coexec_eventual_wait_timed(&ev, timeout, &val);
            TCHECK_RC2(rc, COEXEC_OK, COEXEC_ETIMEDOUT);
            if (rc == COEXEC_ETIMEDOUT)
                TCHECK_RC(coexec_eventual_wait(&ev, &val), COEXEC_OK);
            uint64_t got = 0;
            if (val)
                memcpy(&got, val, sizeof got);
            TCHECK(val != NULL && got == s.v);
            reap(d, &d->rng, &u);
            TCHECK_EQ(atomic_load(&s.runs), 1);
        }
        TCHECK_RC(coexec_eventual_destroy(&ev), COEXEC_OK);
    }
}

/* ======================================================================= */
/* drivers                                                                  */
/* ======================================================================= */

static void (*const op_fn[OP_COUNT])(driver_t *) = {
    op_create_join, op_child_first, op_tasklet, op_yield,  op_migrate,
    op_suspend,     op_eventual,    op_future,  op_mutex,  op_rwlock,
    op_channel,     op_offload,     op_read,    op_sleep,  op_timed};

static op_t pick_op(driver_t *d)
{
    unsigned total = 0;
    for (int i = 0; i < OP_COUNT; i++)
        if (!g_opt.mix || (g_opt.mix >> i & 1))
            total += op_weight[i];
    unsigned x = rndn(&d->rng, total);
    for (int i = 0; i < OP_COUNT; i++) {
        if (g_opt.mix && !(g_opt.mix >> i & 1))
            continue;
        if (x < op_weight[i])
            return (op_t)i;
        x -= op_weight[i];
    }
    return OP_CREATE_JOIN;
}

static void driver_run(driver_t *d)
{
    for (long n = 0; n < d->nops; n++) {
        op_t op = pick_op(d);
        atomic_store_explicit(&d->op, (int)op, memory_order_relaxed);
        atomic_fetch_add(&g.started[op], 1);
        op_fn[op](d);
        atomic_fetch_add(&g.completed[op], 1);
        atomic_fetch_add_explicit(&d->done_ops, 1, memory_order_relaxed);
        set_step(d, "between operations");
        tick();
    }
    atomic_store_explicit(&d->op, -1, memory_order_relaxed);
    set_step(d, "finished");
    atomic_store(&d->finished, 1);
}

static void driver_ult(void *arg) { driver_run(arg); }

static void *driver_pthread(void *arg)
{
    driver_run(arg);
    return NULL;
}

/* ======================================================================= */
/* watchdog                                                                 */
/* ======================================================================= */

static const char *const xs_state_names[] = {"CREATED", "READY", "RUNNING",
                                             "TERMINATED"};
static const char *const unit_state_names[] = {"READY", "RUNNING", "BLOCKED",
                                               "TERMINATED"};

static void dump_state(FILE *f)
{
    fprintf(f, "torture: state of seed %" PRIu64 "\n", g_seed);
    for (int r = 0; r < NSTREAMS; r++) {
        coexec_xstream_state_t st = COEXEC_XSTREAM_CREATED;
        int cpu = -2;
        size_t sz = 0;
        int rc1 = coexec_xstream_get_state(g.xs[r], &st);
        int rc2 = coexec_xstream_get_cpu(g.xs[r], &cpu);
        int rc3 = coexec_pool_get_size(g.pool[r], &sz);
        fprintf(f, "  stream %d: state %s (%s), cpu %d (%s), main pool size %zu "
                   "(%s)\n",
                r, (unsigned)st < 4 ? xs_state_names[st] : "?",
                coexec_err_name(rc1), cpu, coexec_err_name(rc2), sz,
                coexec_err_name(rc3));
    }
    for (int i = 0; i < NDRIVERS; i++) {
        driver_t *d = &g.drv[i];
        int op = atomic_load(&d->op);
        const char *step = atomic_load(&d->step);
        uintptr_t p = atomic_load(&d->await_p);
        fprintf(f, "  driver %d (%s): %ld/%ld ops, %s, op %s, step \"%s\"",
                i, d->external ? "pthread" : "ULT", atomic_load(&d->done_ops),
                d->nops, atomic_load(&d->finished) ? "finished" : "running",
                op >= 0 && op < OP_COUNT ? op_names[op] : "-",
                step ? step : "-");
        if (p) {
            coexec_unit_state_t s = COEXEC_UNIT_READY;
            int rc;
            if (atomic_load(&d->await_tasklet)) {
                coexec_tasklet_t k = {(struct coexec_unit_rec *)p,
                                      atomic_load(&d->await_gen)};
                rc = coexec_tasklet_get_state(k, &s);
            } else {
                coexec_thread_t t = {(struct coexec_unit_rec *)p,
                                     atomic_load(&d->await_gen)};
                rc = coexec_thread_get_state(t, &s);
            }
            fprintf(f, ", awaiting %s %p: %s (%s)",
                    atomic_load(&d->await_tasklet) ? "tasklet" : "ULT",
                    (void *)p, (unsigned)s < 4 ? unit_state_names[s] : "?",
                    coexec_err_name(rc));
        }
        fprintf(f, "\n");
        struct chop *c = atomic_load(&d->chan);
        if (c) {
            static const char *const modes[] = {"blocking", "timed", "try",
                                                "tasklet"};
            size_t cnt = 0;
            int rc = coexec_channel_count(&c->ch, &cnt);
            fprintf(f, "    channel: capacity %d, %zu queued (%s), %d "
                       "messages from each of %d senders, %d receivers, "
                       "driver is %s, %d senders live, %ld received\n",
                    c->cap, cnt, coexec_err_name(rc), c->nmsg, c->nsend,
                    c->nrecv,
                    c->role == 1   ? "sender 0"
                    : c->role == 2 ? "receiver 0"
                                   : "neither",
                    atomic_load(&c->live_senders), atomic_load(&c->received));
            for (int k = 0; k < c->nsend; k++)
                fprintf(f, "    sender %d (%s): %d sent, %s\n", k,
                        modes[c->ends[k].mode & 3],
                        atomic_load(&c->ends[k].sent),
                        atomic_load(&c->ends[k].runs) ? "done" : "running");
            for (int k = 0; k < c->nrecv; k++)
                fprintf(f, "    receiver %d (%s): %s\n", k,
                        modes[c->ends[CH_MAXS + k].mode & 3],
                        atomic_load(&c->ends[CH_MAXS + k].runs) ? "done"
                                                               : "running");
        }
    }
    fprintf(f, "  operations started/completed:");
    for (int i = 0; i < OP_COUNT; i++)
        fprintf(f, " %s %ld/%ld", op_names[i], atomic_load(&g.started[i]),
                atomic_load(&g.completed[i]));
    fprintf(f, "\n  units created %ld, reaped %ld; detached created %ld, ran "
               "%ld\n",
            atomic_load(&g.units_created), atomic_load(&g.units_finished),
            atomic_load(&g.det_created), atomic_load(&g.det_ran));
    coexec_service_info_t si;
    memset(&si, 0, sizeof si);
    si.size = sizeof si;
    if (coexec_service_get_info(&si) == COEXEC_OK)
        fprintf(f, "  service: %d threads, %d idle, %" PRIu64 " completed, %s\n",
                si.threads, si.idle, si.completed, si.io_path);
}

static double watchdog_limit(void)
{
    if (g_opt.watchdog_s > 0)
        return g_opt.watchdog_s;
    return CH_SANITIZER ? 180.0 : 60.0;
}

static void *watchdog(void *arg)
{
    (void)arg;
    unsigned long last = 0;
    double since = ch_now();
    while (atomic_load(&g_watch_active)) {
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
        if (atomic_load(&g_watch_active) != 2) { /* no seed running */
            since = ch_now();
            continue;
        }
        unsigned long p = atomic_load_explicit(&g.progress, memory_order_relaxed);
        if (p != last) {
            last = p;
            since = ch_now();
            continue;
        }
        if (ch_now() - since < watchdog_limit())
            continue;
        fprintf(stderr,
                "\ntorture: no progress for %.0f s in seed %" PRIu64
                ": hung (replay with COEXEC_TORTURE_SEED=%" PRIu64 ")\n",
                ch_now() - since, g_seed, g_seed);
        dump_state(stderr);
        if (g_opt.hang_wait) {
            fprintf(stderr, "torture: COEXEC_TORTURE_HANG=wait: pid %d kept "
                            "for a debugger\n",
                    (int)getpid());
            for (;;)
                pause();
        }
        _exit(3);
    }
    return NULL;
}

/* A crash names its seed (the header line of each seed does so too). */
static char g_crash_msg[160];

static void on_fatal(int sig)
{
    ssize_t n = write(2, g_crash_msg, strlen(g_crash_msg));
    (void)n;
    signal(sig, SIG_DFL);
    raise(sig);
}

/* ======================================================================= */
/* one seed                                                                 */
/* ======================================================================= */

static const char *const sched_names[] = {"basic", "basic_wait", "prio",
                                          "randws"};

static long default_ops(void)
{
    return ch_iters(50, 10);
}

/* Runs one seed; returns the number of failures it recorded. */
static unsigned run_seed(uint64_t seed, long ops)
{
    unsigned fails0 = ch_remote_failures();
    uint64_t cfg_rng = ch_mix64(seed ^ 0x746f7274757265ULL);
    memset(&g, 0, sizeof g);
    g_seed = seed;

    coexec_config_t cfg;
    CH_ASSERT_OK_FATAL(coexec_config_init(&cfg));
    cfg.num_xstreams = NSTREAMS;
    unsigned k = rndn(&cfg_rng, 16);
    cfg.sched_kind = k < 9    ? COEXEC_SCHED_BASIC_WAIT
                     : k < 11 ? COEXEC_SCHED_RANDWS
                     : k < 13 ? COEXEC_SCHED_PRIO
                              : COEXEC_SCHED_BASIC;
    if (g_opt.sched >= 0)
        cfg.sched_kind = (coexec_sched_kind_t)g_opt.sched;
    static const unsigned freqs[] = {64, 64, 16, 4, 1};
    cfg.event_freq = freqs[rndn(&cfg_rng, 5)];
    cfg.affinity = (int)rndn(&cfg_rng, 2);
    cfg.idle_spin_us = rndn(&cfg_rng, 3) == 0 ? 0 : 50;
    cfg.service_io = rndn(&cfg_rng, 3) == 0 ? COEXEC_SERVICE_IO_THREADS
                                            : COEXEC_SERVICE_IO_AUTO;
#if defined(__SANITIZE_THREAD__)
    /* TSan does not see what io_uring does: a descriptor closed there
     * looks open still, and its reuse by pipe2 is reported as a race */
    cfg.service_io = COEXEC_SERVICE_IO_THREADS;
#endif
    cfg.quiet = 1;
    printf("\n  seed %" PRIu64 ": sched %s, event_freq %u, affinity %d, "
           "idle_spin %u us, io %s, %ld ops per driver ",
           seed, sched_names[cfg.sched_kind], cfg.event_freq, cfg.affinity,
           cfg.idle_spin_us,
           cfg.service_io == COEXEC_SERVICE_IO_THREADS ? "threads" : "auto",
           ops);
    snprintf(g_crash_msg, sizeof g_crash_msg,
             "\ntorture: fatal signal in seed %" PRIu64
             " (replay with COEXEC_TORTURE_SEED=%" PRIu64 ")\n",
             seed, seed);
    double t0 = ch_now();

    int rc = coexec_init(&cfg);
    if (rc != COEXEC_OK)
        fprintf(stderr, "coexec_init: %s\n", coexec_init_error());
    CH_ASSERT_RC_FATAL(rc, COEXEC_OK);
    for (int r = 0; r < NSTREAMS; r++) {
        CH_ASSERT_OK_FATAL(coexec_xstream_by_rank(r, &g.xs[r]));
        CH_ASSERT_OK_FATAL(coexec_xstream_get_main_pool(g.xs[r], &g.pool[r]));
    }
    for (int i = 0; i < NMUTEX; i++)
        CH_ASSERT_OK_FATAL(coexec_mutex_init(&g.mtx[i], COEXEC_MUTEX_PLAIN));
    CH_ASSERT_OK_FATAL(coexec_mutex_init(&g.rmtx, COEXEC_MUTEX_RECURSIVE));
    CH_ASSERT_OK_FATAL(coexec_rwlock_init(&g.rw));
    for (int i = 0; i < NDRIVERS; i++) {
        driver_t *d = &g.drv[i];
        d->id = i;
        d->external = i >= NULTDRV;
        d->rng = ch_mix64(seed * NDRIVERS + (uint64_t)i + 1);
        d->nops = ops;
        atomic_store(&d->op, -1);
        atomic_store(&d->step, "not started");
    }
    atomic_store(&g_watch_active, 2);

    coexec_thread_attr_t attr;
    CH_ASSERT_OK_FATAL(coexec_thread_attr_init(&attr));
    attr.stack_size = 256 * 1024;
    coexec_thread_t drv[NULTDRV];
    for (int i = 0; i < NULTDRV; i++)
        CH_ASSERT_OK_FATAL(coexec_thread_create_on(
            g.xs[i % NSTREAMS], driver_ult, &g.drv[i], &attr, &drv[i]));
    ch_pthread_t ext[NEXT];
    for (int i = 0; i < NEXT; i++)
        ch_pthread_start(&ext[i], driver_pthread, &g.drv[NULTDRV + i]);
    for (int i = 0; i < NULTDRV; i++)
        TCHECK_RC(coexec_thread_free(&drv[i]), COEXEC_OK);
    /* the primary must keep running units (some are bound to it): wait
     * for the external drivers without blocking its OS thread */
    for (int i = 0; i < NEXT; i++) {
        while (!atomic_load(&g.drv[NULTDRV + i].finished))
            TCHECK_RC(coexec_yield(), COEXEC_OK);
        ch_pthread_join(&ext[i]);
    }

    /* no detached unit is stranded: all of them run (the watchdog ends a
     * wait that makes no progress) */
    while (atomic_load_explicit(&g.det_ran, memory_order_acquire) <
           atomic_load(&g.det_created))
        TCHECK_RC(coexec_yield(), COEXEC_OK);

    /* invariants */
    for (int i = 0; i < OP_COUNT; i++)
        TCHECK_EQ(atomic_load(&g.started[i]), atomic_load(&g.completed[i]));
    TCHECK_EQ(atomic_load(&g.units_created), atomic_load(&g.units_finished));
    TCHECK_EQ(atomic_load(&g.det_ran), atomic_load(&g.det_created));
    for (int i = 0; i < NMUTEX; i++) {
        TCHECK_EQ(g.mcount[i], atomic_load(&g.mexpect[i]));
        TCHECK_EQ(atomic_load(&g.mowner[i]), 0);
        TCHECK_RC(coexec_mutex_destroy(&g.mtx[i]), COEXEC_OK);
    }
    TCHECK_EQ(g.rmcount, atomic_load(&g.rmexpect));
    TCHECK_RC(coexec_mutex_destroy(&g.rmtx), COEXEC_OK);
    TCHECK_EQ(g.rwa, atomic_load(&g.rw_expect));
    TCHECK_EQ(g.rwb, atomic_load(&g.rw_expect));
    TCHECK_RC(coexec_rwlock_destroy(&g.rw), COEXEC_OK);
    long ops_done = 0;
    for (int i = 0; i < NDRIVERS; i++) {
        TCHECK_EQ(atomic_load(&g.drv[i].done_ops), ops);
        TCHECK_EQ(atomic_load(&g.drv[i].finished), 1);
        ops_done += atomic_load(&g.drv[i].done_ops);
    }

    TCHECK_RC(coexec_finalize(), COEXEC_OK);
    atomic_store(&g_watch_active, 1);

    long det = 0;
    for (int i = 0; i < NDRIVERS; i++) {
        det_t *r = g.drv[i].detached;
        while (r) {
            det_t *next = r->next;
            for (int j = 0; j < r->n; j++, det++) {
                TCHECK_EQ(atomic_load(&r[j].runs), 1);
                TCHECK(r[j].out == ch_mix64(r[j].in));
            }
            free(r);
            r = next;
        }
    }
    TCHECK_EQ(det, atomic_load(&g.det_created));
    unsigned fails = ch_remote_failures() - fails0;
    printf("[%ld ops, %ld units, %ld detached, %.2f s", ops_done,
           atomic_load(&g.units_created), atomic_load(&g.det_created),
           ch_now() - t0);
    if (atomic_load(&g.order_tasklet))
        printf(", %ld channel order inversions with tasklet receivers",
               atomic_load(&g.order_tasklet));
    printf("%s] ", fails ? ", FAILED" : "");
    if (fails)
        fprintf(stderr,
                "\ntorture: seed %" PRIu64 " failed %u checks (replay with "
                "COEXEC_TORTURE_SEED=%" PRIu64 ")\n",
                seed, fails, seed);
    return fails;
}

static void run_range(uint64_t first, uint64_t last)
{
    ch_pthread_t wd;
    atomic_store(&g_watch_active, 1);
    ch_pthread_start(&wd, watchdog, NULL);
    long ops = g_opt.ops > 0 ? g_opt.ops : default_ops();
    unsigned failed = 0;
    uint64_t first_failed = 0;
    for (uint64_t s = first; s <= last; s++) {
        if (run_seed(s, ops)) {
            if (!failed)
                first_failed = s;
            failed++;
        }
        if (s == UINT64_MAX)
            break;
    }
    atomic_store(&g_watch_active, 0);
    ch_pthread_join(&wd);
    if (failed)
        fprintf(stderr, "torture: %u of %" PRIu64 " seeds failed, the first "
                        "%" PRIu64 "\n",
                failed, last - first + 1, first_failed);
    CU_ASSERT_EQUAL(failed, 0);
}

static void t_mix(void)
{
    if (g_opt.have_seeds)
        run_range(g_opt.first, g_opt.last);
    else
        run_range(1, 2);
}

static void t_range(void)
{
    if (g_opt.have_seeds)
        run_range(g_opt.first, g_opt.last);
    else
        run_range(1000, 1000 + (uint64_t)ch_iters(40, 4) - 1);
}

/* ======================================================================= */
/* options and main                                                         */
/* ======================================================================= */

static int parse_u64(const char *s, uint64_t *out, const char **end)
{
    char *e = NULL;
    errno = 0;
    unsigned long long v = strtoull(s, &e, 10);
    if (e == s || errno)
        return -1;
    *out = v;
    *end = e;
    return 0;
}

static int parse_options(void)
{
    const char *s;
    const char *e;
    if ((s = getenv("COEXEC_TORTURE_SEED")) && *s) {
        if (parse_u64(s, &g_opt.first, &e) || *e) {
            fprintf(stderr, "torture: bad COEXEC_TORTURE_SEED=%s\n", s);
            return -1;
        }
        g_opt.last = g_opt.first;
        g_opt.have_seeds = 1;
    } else if ((s = getenv("COEXEC_TORTURE_SEEDS")) && *s) {
        if (parse_u64(s, &g_opt.first, &e) || *e != '-' ||
            parse_u64(e + 1, &g_opt.last, &e) || *e ||
            g_opt.last < g_opt.first) {
            fprintf(stderr, "torture: bad COEXEC_TORTURE_SEEDS=%s (want a-b)\n",
                    s);
            return -1;
        }
        g_opt.have_seeds = 1;
    }
    if ((s = getenv("COEXEC_TORTURE_OPS")) && *s) {
        uint64_t v;
        if (parse_u64(s, &v, &e) || *e || v == 0) {
            fprintf(stderr, "torture: bad COEXEC_TORTURE_OPS=%s\n", s);
            return -1;
        }
        g_opt.ops = (long)v;
    }
    if ((s = getenv("COEXEC_TORTURE_WATCHDOG")) && *s)
        g_opt.watchdog_s = atof(s);
    if ((s = getenv("COEXEC_TORTURE_HANG")) && strcmp(s, "wait") == 0)
        g_opt.hang_wait = 1;
    /* The channel faults once known here are fixed: their patterns are in
     * the mix and checked; COEXEC_TORTURE_KNOWN=0 leaves them out. */
    g_opt.known = 1;
    if ((s = getenv("COEXEC_TORTURE_KNOWN")) && strcmp(s, "0") == 0)
        g_opt.known = 0;
    if ((s = getenv("COEXEC_TORTURE_SCHED")) && *s) {
        g_opt.sched = -1;
        for (int i = 0; i < 4; i++)
            if (strcmp(s, sched_names[i]) == 0)
                g_opt.sched = i;
        if (g_opt.sched < 0) {
            fprintf(stderr, "torture: bad COEXEC_TORTURE_SCHED=%s\n", s);
            return -1;
        }
    }
    if ((s = getenv("COEXEC_TORTURE_MIX")) && *s) {
        char buf[256];
        snprintf(buf, sizeof buf, "%s", s);
        for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
             tok = strtok_r(NULL, ",", &save)) {
            int found = 0;
            for (int i = 0; i < OP_COUNT; i++)
                if (strcmp(tok, op_names[i]) == 0) {
                    g_opt.mix |= 1u << i;
                    found = 1;
                }
            if (!found) {
                fprintf(stderr, "torture: unknown operation '%s' in "
                                "COEXEC_TORTURE_MIX\n",
                        tok);
                return -1;
            }
        }
    }
    return 0;
}

static const ch_test_t mix_tests[] = {{"mix", t_mix}, {NULL, NULL}};
static const ch_test_t range_tests[] = {{"range", t_range}, {NULL, NULL}};

static const ch_suite_t suites[] = {
    {"mix", mix_tests}, {"range", range_tests}, {NULL, NULL}};

int main(int argc, char **argv)
{
    /* the harness clears COEXEC_* variables before each test: read ours
     * first */
    if (parse_options())
        return 2;
    if (!CH_SANITIZER) {
        static const int sigs[] = {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL};
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_fatal;
        sigemptyset(&sa.sa_mask);
        for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
            sigaction(sigs[i], &sa, NULL);
    }
    char path[] = "/tmp/coexec-torture-XXXXXX";
    g_fd = mkstemp(path);
    if (g_fd < 0) {
        perror("torture: mkstemp");
        return 2;
    }
    unlink(path);
    unsigned char buf[FILE_SIZE];
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = file_byte(i);
    if (write(g_fd, buf, sizeof buf) != (ssize_t)sizeof buf) {
        perror("torture: write");
        return 2;
    }
    int rc = ch_main(argc, argv, suites);
    close(g_fd);
    return rc;
}
