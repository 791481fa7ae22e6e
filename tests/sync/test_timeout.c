/*
 * tests/sync/test_timeout.c: the timeout suite: many timed waits of every
 * kind on one stream, none early; short timeouts racing with hand-offs and
 * signals leave every object consistent
 */
#include "sync_test.h"

typedef struct {
    coexec_mutex_t held;   /* locked by the main ULT */
    coexec_mutex_t cm;     /* the cond's mutex */
    coexec_cond_t c;
    coexec_rwlock_t rd_held; /* read-held by the main ULT */
    coexec_rwlock_t wr_held; /* write-held by the main ULT */
    atomic_long early;
    atomic_long wrong_rc;
    atomic_int done;
} tmo_t;

typedef struct {
    tmo_t *T;
    int kind;
    uint64_t ns;
} tmo_arg_t;

static void tmo_body(void *arg)
{
    tmo_arg_t *a = arg;
    tmo_t *T = a->T;
    int rc = -1, want = COEXEC_ETIMEDOUT;
    uint64_t t0 = coexec_now_ns();
    switch (a->kind) {
    case 0:
        rc = coexec_mutex_lock_timed(&T->held, a->ns);
        break;
    case 1:
        CH_CHECK_RC(coexec_mutex_lock(&T->cm), COEXEC_OK);
        t0 = coexec_now_ns();
        rc = coexec_cond_wait_timed(&T->c, &T->cm, a->ns);
        break;
    case 2:
        rc = coexec_rwlock_wrlock_timed(&T->rd_held, a->ns);
        break;
    case 3:
        rc = coexec_rwlock_rdlock_timed(&T->wr_held, a->ns);
        break;
    case 4:
        rc = coexec_rwlock_wrlock_timed(&T->wr_held, a->ns);
        break;
    default:
        rc = coexec_sleep_ns(a->ns);
        want = COEXEC_OK;
        break;
    }
    uint64_t el = coexec_now_ns() - t0;
    if (a->kind == 1)
        CH_CHECK_RC(coexec_mutex_unlock(&T->cm), COEXEC_OK);
    if (rc != want) {
        atomic_fetch_add(&T->wrong_rc, 1);
        CH_CHECK_RC(rc, want);
    }
    if (el < a->ns)
        atomic_fetch_add(&T->early, 1);
    atomic_fetch_add(&T->done, 1);
}

/*
 * Timed waits of every kind, with timeouts from 1 to 12 ms, all on one
 * stream (so its timer structure holds many deadlines of several kinds at
 * once), then the same spread over 4 streams with external threads. Each
 * times out (a sleep completes), none early.
 */
static void t_timeout_many(void)
{
    ch_init(NSTREAMS);
    ch_stream_t s;
    CH_ASSERT_OK_FATAL(ch_stream_create(&s, COEXEC_SCHED_BASIC_WAIT));
    tmo_t T;
    memset(&T, 0, sizeof T);
    CH_ASSERT_OK(coexec_mutex_init(&T.held, COEXEC_MUTEX_PLAIN));
    CH_ASSERT_OK(coexec_mutex_init(&T.cm, COEXEC_MUTEX_PLAIN));
    CH_ASSERT_OK(coexec_cond_init(&T.c));
    CH_ASSERT_OK(coexec_rwlock_init(&T.rd_held));
    CH_ASSERT_OK(coexec_rwlock_init(&T.wr_held));
    CH_ASSERT_OK(coexec_mutex_lock(&T.held));
    CH_ASSERT_OK(coexec_rwlock_rdlock(&T.rd_held));
    CH_ASSERT_OK(coexec_rwlock_wrlock(&T.wr_held));
    enum { K = 36, KE = 6 };
    long rounds = ch_iters(3, 1);
    for (long r = 0; r < rounds; r++) {
        tmo_arg_t a[K + KE];
        coexec_thread_t t[K];
        ch_ext_t e[KE];
        atomic_store(&T.done, 0);
        for (int i = 0; i < K + KE; i++)
            a[i] = (tmo_arg_t){&T, i % 6, (uint64_t)(K - i) % 12 * MS + MS};
        /* one stream */
        for (int i = 0; i < K; i++)
            CH_ASSERT_OK(coexec_thread_create(s.pool, tmo_body, &a[i], NULL,
                                              &t[i]));
        CH_WAIT(atomic_load(&T.done) == K);
        ch_free_threads(t, K);
        /* every stream and external threads */
        atomic_store(&T.done, 0);
        for (int i = 0; i < K; i++)
            ch_spawn_on(i % NSTREAMS, tmo_body, &a[i], &t[i]);
        for (int i = 0; i < KE; i++)
            ch_ext_start(&e[i], tmo_body, &a[K + i]);
        ch_free_threads(t, K);
        for (int i = 0; i < KE; i++)
            ch_ext_join(&e[i]);
        CH_ASSERT_EQ(atomic_load(&T.done), K + KE);
    }
    CH_ASSERT_EQ(atomic_load(&T.wrong_rc), 0);
    CH_ASSERT_EQ(atomic_load(&T.early), 0);
    /* nothing is left queued on any object */
    CH_ASSERT_OK(coexec_mutex_unlock(&T.held));
    CH_ASSERT_OK(coexec_rwlock_unlock(&T.rd_held));
    CH_ASSERT_OK(coexec_rwlock_unlock(&T.wr_held));
    CH_ASSERT_OK(coexec_mutex_destroy(&T.held));
    CH_ASSERT_OK(coexec_cond_destroy(&T.c));
    CH_ASSERT_OK(coexec_mutex_destroy(&T.cm));
    CH_ASSERT_OK(coexec_rwlock_destroy(&T.rd_held));
    CH_ASSERT_OK(coexec_rwlock_destroy(&T.wr_held));
    CH_ASSERT_OK(ch_stream_free(&s));
    ch_finalize();
}

/* ---- timeouts racing with hand-offs and signals ---- */

typedef struct {
    coexec_mutex_t m;
    coexec_rwlock_t l;
    coexec_mutex_t cm;
    coexec_cond_t c;
    long iters;
    long counter;  /* protected by m */
    long rwvalue;  /* protected by l */
    long tokens;   /* protected by cm */
    long consumed; /* protected by cm */
    long total;
    atomic_int inside;
    atomic_int readers, writers;
    atomic_long got;
    atomic_long timeouts;
    atomic_long bad;
} race_t;

typedef struct {
    race_t *R;
    int id;
} race_arg_t;

/* 0 to 175 us: timeouts that often expire while the lock changes hands */
static uint64_t race_timeout(long i, int id)
{
    return (uint64_t)((i * 37 + id * 11) % 8) * 25000;
}

static void race_mutex(void *arg)
{
    race_arg_t *a = arg;
    race_t *R = a->R;
    long bad = 0, got = 0, tmo = 0;
    for (long i = 0; i < R->iters; i++) {
        int rc = coexec_mutex_lock_timed(&R->m, race_timeout(i, a->id));
        if (rc == COEXEC_OK) {
            if (atomic_fetch_add(&R->inside, 1) != 0)
                bad++;
            R->counter++;
            if (i % 16 == 0)
                ch_relax();
            atomic_fetch_sub(&R->inside, 1);
            bad += coexec_mutex_unlock(&R->m) != COEXEC_OK;
            got++;
        } else if (rc == COEXEC_ETIMEDOUT) {
            /* a waiter that timed out was not made the owner */
            bad += coexec_mutex_unlock(&R->m) != COEXEC_EPERM;
            tmo++;
        } else {
            CH_CHECK_RC(rc, COEXEC_ETIMEDOUT);
            bad++;
        }
    }
    atomic_fetch_add(&R->bad, bad);
    atomic_fetch_add(&R->got, got);
    atomic_fetch_add(&R->timeouts, tmo);
}

static void race_rwlock(void *arg)
{
    race_arg_t *a = arg;
    race_t *R = a->R;
    long bad = 0, got = 0, tmo = 0;
    int writer = a->id % 3 == 0;
    for (long i = 0; i < R->iters; i++) {
        uint64_t t = race_timeout(i, a->id);
        int rc = writer ? coexec_rwlock_wrlock_timed(&R->l, t)
                        : coexec_rwlock_rdlock_timed(&R->l, t);
        if (rc == COEXEC_ETIMEDOUT) {
            tmo++;
            continue;
        }
        if (rc != COEXEC_OK) {
            CH_CHECK_RC(rc, COEXEC_OK);
            bad++;
            continue;
        }
        if (writer) {
            bad += atomic_fetch_add(&R->writers, 1) != 0;
            bad += atomic_load(&R->readers) != 0;
            R->rwvalue++;
            got++;
            if (i % 16 == 0)
                ch_relax();
            atomic_fetch_sub(&R->writers, 1);
        } else {
            atomic_fetch_add(&R->readers, 1);
            bad += atomic_load(&R->writers) != 0;
            if (i % 16 == 0)
                ch_relax();
            atomic_fetch_sub(&R->readers, 1);
        }
        bad += coexec_rwlock_unlock(&R->l) != COEXEC_OK;
    }
    atomic_fetch_add(&R->bad, bad);
    atomic_fetch_add(&R->got, got);
    atomic_fetch_add(&R->timeouts, tmo);
}

static void race_producer(void *arg)
{
    race_arg_t *a = arg;
    race_t *R = a->R;
    for (long i = 0; i < R->iters; i++) {
        CH_CHECK_RC(coexec_mutex_lock(&R->cm), COEXEC_OK);
        R->tokens++;
        CH_CHECK_RC(i % 8 == 7 ? coexec_cond_broadcast(&R->c)
                               : coexec_cond_signal(&R->c),
                    COEXEC_OK);
        CH_CHECK_RC(coexec_mutex_unlock(&R->cm), COEXEC_OK);
        if (i % 4 == 0)
            ch_relax();
    }
}

/* takes tokens with short timed waits; a lost signal only costs time */
static void race_consumer(void *arg)
{
    race_arg_t *a = arg;
    race_t *R = a->R;
    long bad = 0, got = 0, tmo = 0, i = 0;
    for (;; i++) {
        CH_CHECK_RC(coexec_mutex_lock(&R->cm), COEXEC_OK);
        bad += atomic_fetch_add(&R->inside, 1) != 0;
        while (R->tokens == 0 && R->consumed < R->total) {
            atomic_fetch_sub(&R->inside, 1);
            int rc = coexec_cond_wait_timed(&R->c, &R->cm,
                                            race_timeout(i++, a->id) + 1000);
            /* whatever the result, the mutex is ours again */
            bad += atomic_fetch_add(&R->inside, 1) != 0;
            if (rc == COEXEC_ETIMEDOUT)
                tmo++;
            else if (rc != COEXEC_OK) {
                CH_CHECK_RC(rc, COEXEC_OK);
                bad++;
                break;
            }
        }
        bool over = R->tokens == 0;
        if (!over) {
            R->tokens--;
            R->consumed++;
            got++;
        }
        atomic_fetch_sub(&R->inside, 1);
        bad += coexec_mutex_unlock(&R->cm) != COEXEC_OK;
        if (over)
            break;
    }
    atomic_fetch_add(&R->bad, bad);
    atomic_fetch_add(&R->got, got);
    atomic_fetch_add(&R->timeouts, tmo);
}

static void race_run(race_t *R, void (*fn)(void *), int nu, int ne)
{
    race_arg_t a[24];
    coexec_thread_t t[20];
    ch_ext_t e[4];
    for (int i = 0; i < nu + ne; i++)
        a[i] = (race_arg_t){R, i};
    for (int i = 0; i < nu; i++)
        ch_spawn_on(i % NSTREAMS, fn, &a[i], &t[i]);
    for (int i = 0; i < ne; i++)
        ch_ext_start(&e[i], fn, &a[nu + i]);
    ch_free_threads(t, nu);
    for (int i = 0; i < ne; i++)
        ch_ext_join(&e[i]);
}

/*
 * A stream busy in one long unit cannot fire its own timers. A hog pinned
 * to stream 1 yields until a timed waiter, pinned there too, has unpinned
 * itself and is about to wait (so its timer goes in stream 1's heap), then
 * computes without yielding until the waiter has returned. An idle thread
 * must fire the timer and an idle stream steal the woken waiter: otherwise
 * the hog gives up after HOG_CAP_S and the waiter returns only after it.
 * (On a very slow run stream 1 may fire the timer itself before the hog
 * starts computing; the test then proves less, but still passes.)
 */
#define HOG_CAP_S 20.0

typedef struct {
    int sleep; /* 1: coexec_sleep_ns; 0: a timed eventual wait */
    atomic_int waiting, hog_computing, woke_while_hog;
    atomic_int rank_woken, rc, done, hog_saw_done;
} busy_timer_t;

static void busy_timed_waiter(void *arg)
{
    busy_timer_t *b = arg;
    coexec_thread_t self;
    CH_CHECK_RC(coexec_thread_self(&self), COEXEC_OK);
    /* Running on stream 1, so the wait parks there; once woken it may be
     * stolen like any ready unit. */
    CH_CHECK_RC(coexec_unit_set_pinned(coexec_thread_unit(self), 0), COEXEC_OK);
    coexec_eventual_t ev;
    CH_CHECK_RC(coexec_eventual_init(&ev, 0), COEXEC_OK);
    atomic_store(&b->waiting, 1);
    int rc = b->sleep ? coexec_sleep_ns(50 * MS)
                      : coexec_eventual_wait_timed(&ev, 50 * MS, NULL);
    atomic_store(&b->woke_while_hog, atomic_load(&b->hog_computing));
    CH_CHECK_RC(coexec_eventual_destroy(&ev), COEXEC_OK);
    int r = -1;
    CH_CHECK_RC(coexec_xstream_self_rank(&r), COEXEC_OK);
    atomic_store(&b->rank_woken, r);
    atomic_store(&b->rc, rc);
    atomic_store(&b->done, 1);
}

static void busy_hog(void *arg)
{
    busy_timer_t *b = arg;
    while (!atomic_load(&b->waiting))
        CH_CHECK_RC(coexec_yield(), COEXEC_OK);
    atomic_store(&b->hog_computing, 1);
    double t0 = ch_now();
    while (!atomic_load(&b->done) && ch_now() - t0 < HOG_CAP_S)
        ;
    atomic_store(&b->hog_saw_done, atomic_load(&b->done));
}

void sync_busy_stream_timer(int sleep)
{
    ch_init(NSTREAMS);
    int proved = 0, rounds = ch_iters(3, 1);
    for (int round = 0; round < rounds; round++) {
        busy_timer_t b = {.sleep = sleep};
        coexec_thread_attr_t a;
        CH_ASSERT_OK(coexec_thread_attr_init(&a));
        a.pinned = 1;
        coexec_thread_t w, h;
        CH_ASSERT_OK_FATAL(coexec_thread_create_on(ch_xstream(1), busy_hog, &b, &a, &h));
        CH_ASSERT_OK_FATAL(coexec_thread_create_on(ch_xstream(1), busy_timed_waiter,
                                                   &b, &a, &w));
        /* wait: a free alone could run w here, in place, not behind the hog. */
        CH_ASSERT_OK(coexec_thread_wait(w));
        CH_ASSERT_OK(coexec_thread_free(&w));
        CH_ASSERT_OK(coexec_thread_free(&h));
        CH_ASSERT_EQ(atomic_load(&b.hog_saw_done), 1);
        CH_ASSERT_EQ(atomic_load(&b.rc), sleep ? COEXEC_OK : COEXEC_ETIMEDOUT);
        if (atomic_load(&b.woke_while_hog)) {
            CU_ASSERT(atomic_load(&b.rank_woken) != 1);
            proved++;
        }
    }
    fprintf(stderr, "    %d of %d rounds woken while the stream was busy\n",
            proved, rounds);
    ch_finalize();
}

static void t_timeout_busy_stream(void) { sync_busy_stream_timer(0); }

/*
 * Short timeouts (0-175 us) under contention, so that timeouts race with
 * unlocks that hand the lock over and with signals. Every result must be
 * consistent: a lock that returned OK is owned, one that timed out is not;
 * a cond wait returns with the mutex held; no token is consumed twice or
 * lost; and at the end every object is free (nobody was left owning it or
 * queued on it).
 */
static void t_timeout_races(void)
{
    ch_init(NSTREAMS);
    race_t R;
    memset(&R, 0, sizeof R);
    CH_ASSERT_OK_FATAL(coexec_mutex_init(&R.m, COEXEC_MUTEX_PLAIN));
    CH_ASSERT_OK_FATAL(coexec_rwlock_init(&R.l));
    CH_ASSERT_OK_FATAL(coexec_mutex_init(&R.cm, COEXEC_MUTEX_PLAIN));
    CH_ASSERT_OK_FATAL(coexec_cond_init(&R.c));
    R.iters = ch_iters(3000, 100);

    race_run(&R, race_mutex, 12, 2);
    CH_ASSERT_EQ(atomic_load(&R.bad), 0);
    CH_ASSERT_EQ(R.counter, atomic_load(&R.got));
    CH_ASSERT_EQ(atomic_load(&R.got) + atomic_load(&R.timeouts),
                 14 * R.iters);
    fprintf(stderr, "    mutex: %ld locked, %ld timed out\n",
            atomic_load(&R.got), atomic_load(&R.timeouts));
    CH_ASSERT_OK(coexec_mutex_trylock(&R.m));
    CH_ASSERT_OK(coexec_mutex_unlock(&R.m));
    CH_ASSERT_OK(coexec_mutex_destroy(&R.m));

    atomic_store(&R.got, 0);
    atomic_store(&R.timeouts, 0);
    race_run(&R, race_rwlock, 12, 2);
    CH_ASSERT_EQ(atomic_load(&R.bad), 0);
    CH_ASSERT_EQ(R.rwvalue, atomic_load(&R.got));
    fprintf(stderr, "    rwlock: %ld writes, %ld timed out\n",
            atomic_load(&R.got), atomic_load(&R.timeouts));
    CH_ASSERT_OK(coexec_rwlock_trywrlock(&R.l));
    CH_ASSERT_OK(coexec_rwlock_unlock(&R.l));
    CH_ASSERT_OK(coexec_rwlock_destroy(&R.l));

    /* 3 producers (one external), 7 consumers (one external) */
    atomic_store(&R.got, 0);
    atomic_store(&R.timeouts, 0);
    R.total = 3 * R.iters;
    race_arg_t pa[3];
    coexec_thread_t pt[2];
    ch_ext_t pe;
    for (int i = 0; i < 3; i++)
        pa[i] = (race_arg_t){&R, 100 + i};
    for (int i = 0; i < 2; i++)
        ch_spawn_on(1 + i, race_producer, &pa[i], &pt[i]);
    ch_ext_start(&pe, race_producer, &pa[2]);
    race_run(&R, race_consumer, 6, 1);
    ch_free_threads(pt, 2);
    ch_ext_join(&pe);
    CH_ASSERT_EQ(atomic_load(&R.bad), 0);
    CH_ASSERT_EQ(R.consumed, R.total);
    CH_ASSERT_EQ(atomic_load(&R.got), R.total);
    CH_ASSERT_EQ(R.tokens, 0);
    CH_ASSERT_OK(coexec_cond_destroy(&R.c));
    CH_ASSERT_OK(coexec_mutex_destroy(&R.cm));
    ch_finalize();
}

/* ======================================================================= */

const ch_test_t sync_timeout_tests[] = {
    {"many_kinds_never_early", t_timeout_many},
    {"races_with_handoff", t_timeout_races},
    {"busy_stream_fired_by_idle", t_timeout_busy_stream},
    {NULL, NULL}};
