/*
 * src/mpi/engine.c: the progress engine of libcoexec-mpi: the thread
 * level's verdict, the lock of SERIALIZED, and the poller that completes
 * the waits.
 *
 * Waiters push their waits onto `incoming`, a lock-free stack (one CAS).
 * The poller, which one stream at a time runs (coexec/poller.h), owns
 * everything else: it moves the incoming waits' requests into one flat
 * array, calls MPI_Testsome over a window of at most BATCH of them per
 * call (the window moves on each call), writes each completed request and
 * status back to its waiter, and wakes the waiter whose last request
 * completed. A waitany wait is tested on its own with MPI_Testany, a few
 * per call, since it must complete exactly one request. The poller
 * returns how many waits are pending, so idle streams keep polling while
 * there are, and park when there are none.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cxmpi.h"

#define BATCH 64     /* requests per MPI_Testsome call */
#define ANY_BATCH 8  /* waitany waits per poller call */

struct cxm_engine cxm_eng;

static pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t mpi_lock = PTHREAD_MUTEX_INITIALIZER;

/* The poller's registration: two words, read without the lock by
 * cxm_submit (a stale pair fails coexec_poller_check). */
static _Atomic(struct coexec_poller_rec *) reg_p;
static atomic_ullong reg_gen;

/* ---- the poller's own state (only the stream running the poller) ---- */
static _Atomic(struct cxm_op *) incoming;
static struct {
    MPI_Request *reqs; /* the requests under test */
    struct cxm_op **op;
    int *slot;         /* the request's index in its op */
    int n, cap;
    unsigned start;    /* the next window */
    int idx[BATCH];
    MPI_Status sts[BATCH];
    struct cxm_op *any; /* waitany waits */
} pq;

/* ---- thread level --------------------------------------------------------- */

static bool quiet(void)
{
    coexec_config_t c;
    return coexec_get_config(&c) == COEXEC_OK && c.quiet;
}

/* FUNNELED: the stream whose thread initialized MPI. The caller's, if it
 * is that thread; else the primary's (where main runs after coexec_init). */
static int funnel_rank(void)
{
    int is_main = 0, rank = -1;
    MPI_Is_thread_main(&is_main);
    if (coexec_xstream_self_rank(&rank) != COEXEC_OK)
        return is_main ? -1 : 0;
    return is_main ? rank : 0;
}

/* COEXEC_MPI_SPIN: tests a waiting ULT makes, yielding between them,
 * before it parks; default 16, 0..100000. */
static int spin_tests(void)
{
    const char *v = getenv("COEXEC_MPI_SPIN");
    char *end;
    long n = v && *v ? strtol(v, &end, 10) : 16;
    if (v && *v && (*end || n < 0 || n > 100000)) {
        fprintf(stderr, "coexec-mpi: COEXEC_MPI_SPIN=%s is not a number of "
                        "tests (0..100000): using 16\n", v);
        n = 16;
    }
    return (int)n;
}

int cxm_mode(void)
{
    if (atomic_load_explicit(&cxm_eng.mode_known, memory_order_acquire))
        return cxm_eng.mode_rc;
    int init = 0, fin = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    /* Not cached: MPI and the runtime may be initialized later (the funnel
     * stream is found from the caller's stream). */
    if (!init || fin || !coexec_initialized())
        return COEXEC_ENOTINIT;
    pthread_mutex_lock(&start_lock);
    if (!atomic_load_explicit(&cxm_eng.mode_known, memory_order_relaxed)) {
        MPI_Query_thread(&cxm_eng.level);
        cxm_eng.spin = spin_tests();
        cxm_eng.funnel_rank = -1;
        cxm_eng.mode_rc = COEXEC_OK;
        switch (cxm_eng.level) {
        case MPI_THREAD_MULTIPLE:
            cxm_eng.mode = CXM_DIRECT;
            break;
        case MPI_THREAD_SERIALIZED:
            cxm_eng.mode = CXM_LOCKED;
            if (!quiet())
                fprintf(stderr, "coexec-mpi: MPI_THREAD_SERIALIZED: its MPI "
                                "calls are made one at a time, under a lock\n");
            break;
        case MPI_THREAD_FUNNELED:
            cxm_eng.mode = CXM_FUNNELED;
            cxm_eng.funnel_rank = funnel_rank();
            if (cxm_eng.funnel_rank < 0)
                cxm_eng.mode_rc = COEXEC_EPERM;
            else if (!quiet())
                fprintf(stderr, "coexec-mpi: MPI_THREAD_FUNNELED: its MPI calls "
                                "run on stream %d\n", cxm_eng.funnel_rank);
            break;
        default:
            cxm_eng.mode_rc = COEXEC_EPERM; /* SINGLE */
            break;
        }
        atomic_store_explicit(&cxm_eng.mode_known, 1, memory_order_release);
    }
    pthread_mutex_unlock(&start_lock);
    return cxm_eng.mode_rc;
}

void cxm_lock(void)
{
    if (cxm_eng.mode == CXM_LOCKED)
        pthread_mutex_lock(&mpi_lock);
}

void cxm_unlock(void)
{
    if (cxm_eng.mode == CXM_LOCKED)
        pthread_mutex_unlock(&mpi_lock);
}

/* ---- completing waits ------------------------------------------------------ */

static void finish(struct cxm_op *op)
{
    /* Read the waker first: once done is seen, op may be gone. */
    coexec_waker_t w = op->w;
    atomic_fetch_sub_explicit(&cxm_eng.pending, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&cxm_eng.completed, 1, memory_order_relaxed);
    atomic_store_explicit(&op->done, 1, memory_order_release);
    int rc = coexec_waker_wake(w); /* a stale waker is fine */
    (void)rc;
}

static void set_status(struct cxm_op *op, int i, const MPI_Status *s)
{
    if (op->st == MPI_STATUS_IGNORE || op->st == MPI_STATUSES_IGNORE)
        return;
    op->st[i] = *s;
}

/* One request of op completed with status s (NULL: failed without one). */
static void request_done(struct cxm_op *op, int i, MPI_Request r,
                         const MPI_Status *s, bool failed)
{
    op->reqs[i] = r;
    if (s)
        set_status(op, i, s);
    if (failed || (s && s->MPI_ERROR != MPI_SUCCESS))
        op->err = COEXEC_EIO;
    if (--op->left == 0)
        finish(op);
}

static bool grow(int need)
{
    if (need <= pq.cap)
        return true;
    int cap = pq.cap ? pq.cap : 64;
    while (cap < need)
        cap *= 2;
    MPI_Request *r = realloc(pq.reqs, sizeof *r * (size_t)cap);
    if (r)
        pq.reqs = r;
    struct cxm_op **o = realloc(pq.op, sizeof *o * (size_t)cap);
    if (o)
        pq.op = o;
    int *sl = realloc(pq.slot, sizeof *sl * (size_t)cap);
    if (sl)
        pq.slot = sl;
    if (!r || !o || !sl)
        return false;
    pq.cap = cap;
    return true;
}

/* Takes the incoming waits into the poller's lists. */
static void take_incoming(void)
{
    struct cxm_op *op = atomic_exchange_explicit(&incoming, NULL,
                                                 memory_order_acquire);
    while (op) {
        struct cxm_op *next = op->next;
        if (op->any) {
            op->next = pq.any;
            pq.any = op;
        } else if (!grow(pq.n + op->n)) {
            op->err = COEXEC_ENOMEM; /* its requests are left pending */
            finish(op);
        } else {
            op->left = 0;
            for (int i = 0; i < op->n; i++) {
                if (op->reqs[i] == MPI_REQUEST_NULL) {
                    /* Complete already: the empty status MPI gives it. */
                    MPI_Status s;
                    MPI_Wait(&op->reqs[i], &s);
                    set_status(op, i, &s);
                    continue;
                }
                pq.reqs[pq.n] = op->reqs[i];
                pq.op[pq.n] = op;
                pq.slot[pq.n++] = i;
                op->left++;
            }
            if (op->left == 0)
                finish(op);
        }
        op = next;
    }
}

/* Removes the entries whose op is NULL. */
static void compact(void)
{
    int k = 0;
    for (int i = 0; i < pq.n; i++) {
        if (!pq.op[i])
            continue;
        pq.reqs[k] = pq.reqs[i];
        pq.op[k] = pq.op[i];
        pq.slot[k++] = pq.slot[i];
    }
    pq.n = k;
}

/* MPI_Testsome over the next window of at most BATCH requests. */
static void test_window(void)
{
    if (pq.n == 0)
        return;
    if (pq.start >= (unsigned)pq.n)
        pq.start = 0;
    int base = (int)pq.start;
    int m = pq.n - base < BATCH ? pq.n - base : BATCH;
    int out = 0;
    int rc = MPI_Testsome(m, pq.reqs + base, &out, pq.idx, pq.sts);
    atomic_fetch_add_explicit(&cxm_eng.polls, 1, memory_order_relaxed);
    pq.start = (unsigned)(base + m);
    if (rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS) {
        /* No request of the window can be trusted: fail their waits. */
        for (int j = base; j < base + m; j++) {
            request_done(pq.op[j], pq.slot[j], pq.reqs[j], NULL, true);
            pq.op[j] = NULL;
        }
        compact();
        return;
    }
    if (out == MPI_UNDEFINED || out == 0)
        return;
    for (int k = 0; k < out; k++) {
        int j = base + pq.idx[k];
        MPI_Status *s = &pq.sts[k];
        if (rc == MPI_SUCCESS)
            s->MPI_ERROR = MPI_SUCCESS;
        request_done(pq.op[j], pq.slot[j], pq.reqs[j], s, false);
        pq.op[j] = NULL;
    }
    compact();
}

/* MPI_Testany on up to ANY_BATCH waitany waits. */
static void test_any(void)
{
    struct cxm_op **pp = &pq.any;
    for (int k = 0; *pp && k < ANY_BATCH; k++) {
        struct cxm_op *op = *pp;
        int idx = MPI_UNDEFINED, flag = 0;
        MPI_Status s;
        int rc = MPI_Testany(op->n, op->reqs, &idx, &flag, &s);
        atomic_fetch_add_explicit(&cxm_eng.polls, 1, memory_order_relaxed);
        if (rc == MPI_SUCCESS && !flag) {
            pp = &op->next;
            continue;
        }
        *pp = op->next;
        op->index = idx;
        if (rc != MPI_SUCCESS) {
            op->err = COEXEC_EIO;
            s.MPI_ERROR = rc; /* a single status: MPI leaves it unset */
        }
        if (idx != MPI_UNDEFINED)
            set_status(op, 0, &s);
        finish(op);
    }
    /* Rotate: the waits not tested this time go first next time. */
    if (*pp && pp != &pq.any) {
        struct cxm_op *rest = *pp, *tail = rest;
        *pp = NULL;
        while (tail->next)
            tail = tail->next;
        tail->next = pq.any;
        pq.any = rest;
    }
}

static int pending_count(void)
{
    return (int)atomic_load_explicit(&cxm_eng.pending, memory_order_relaxed);
}

static int poll_fn(void *arg)
{
    (void)arg;
    if (cxm_eng.mode == CXM_LOCKED && pthread_mutex_trylock(&mpi_lock) != 0)
        return pending_count(); /* a call in progress: next time */
    if (atomic_load_explicit(&incoming, memory_order_relaxed))
        take_incoming();
    int n0 = pq.n;
    for (int i = 0; i < 8 && pq.n == n0 && pq.n; i++)
        test_window();
    if (pq.any)
        test_any();
    if (cxm_eng.mode == CXM_LOCKED)
        pthread_mutex_unlock(&mpi_lock);
    return pending_count();
}

/* ---- starting and stopping ------------------------------------------------- */

static coexec_poller_t reg_load(void)
{
    return (coexec_poller_t){atomic_load_explicit(&reg_p, memory_order_acquire),
                             atomic_load_explicit(&reg_gen, memory_order_acquire)};
}

static void reg_store(coexec_poller_t p)
{
    atomic_store_explicit(&reg_gen, p.gen, memory_order_release);
    atomic_store_explicit(&reg_p, p.p, memory_order_release);
}

int cxm_engine_start(void)
{
    int rc = cxm_mode();
    if (rc != COEXEC_OK)
        return rc;
    if (coexec_poller_check(reg_load()) == COEXEC_OK)
        return COEXEC_OK;
    pthread_mutex_lock(&start_lock);
    if ((rc = coexec_poller_check(reg_load())) != COEXEC_OK) {
        /* Not running: first use, after coexec_mpi_finalize, or dropped by
         * a coexec_finalize with the waits of that run. */
        pq.n = 0;
        pq.start = 0;
        pq.any = NULL;
        atomic_store_explicit(&incoming, NULL, memory_order_relaxed);
        atomic_store_explicit(&cxm_eng.pending, 0, memory_order_relaxed);
        coexec_poller_t p;
        int rank = cxm_eng.mode == CXM_FUNNELED ? cxm_eng.funnel_rank
                                                : COEXEC_POLLER_ANY_XSTREAM;
        rc = coexec_poller_register(poll_fn, NULL, rank, &p);
        if (rc == COEXEC_OK)
            reg_store(p);
    }
    pthread_mutex_unlock(&start_lock);
    return rc;
}

int cxm_submit(struct cxm_op *op)
{
    int rc = cxm_engine_start();
    if (rc != COEXEC_OK)
        return rc;
    atomic_store_explicit(&op->done, 0, memory_order_relaxed);
    op->err = COEXEC_OK;
    atomic_fetch_add_explicit(&cxm_eng.pending, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&cxm_eng.parked, 1, memory_order_relaxed);
    struct cxm_op *head = atomic_load_explicit(&incoming, memory_order_relaxed);
    do {
        op->next = head;
    } while (!atomic_compare_exchange_weak_explicit(
        &incoming, &head, op, memory_order_release, memory_order_relaxed));
    return COEXEC_OK;
}

COEXEC_API int coexec_mpi_init(void)
{
    return cxm_engine_start();
}

COEXEC_API int coexec_mpi_finalize(void)
{
    pthread_mutex_lock(&start_lock);
    int rc = COEXEC_OK;
    coexec_poller_t p = reg_load();
    if (coexec_poller_check(p) == COEXEC_OK) {
        if (pending_count() > 0)
            rc = COEXEC_EBUSY;
        else if (coexec_poller_unregister(&p) == COEXEC_OK)
            reg_store(p);
    }
    pthread_mutex_unlock(&start_lock);
    return rc;
}

COEXEC_API int coexec_mpi_get_info(coexec_mpi_info_t *info)
{
    if (!info || info->size < sizeof(coexec_mpi_info_t))
        return COEXEC_EINVAL;
    int rc = cxm_mode();
    if (rc == COEXEC_ENOTINIT)
        return rc;
    coexec_mpi_info_t i = {.size = sizeof i};
    i.thread_level = cxm_eng.level;
    i.funnel_rank = cxm_eng.funnel_rank;
    i.engine_running = coexec_poller_check(reg_load()) == COEXEC_OK;
    i.polls = atomic_load_explicit(&cxm_eng.polls, memory_order_relaxed);
    i.parked = atomic_load_explicit(&cxm_eng.parked, memory_order_relaxed);
    i.completed = atomic_load_explicit(&cxm_eng.completed, memory_order_relaxed);
    i.pending = (uint64_t)pending_count();
    *info = i;
    return COEXEC_OK;
}
