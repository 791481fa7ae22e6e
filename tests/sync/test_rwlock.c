/*
 * tests/sync/test_rwlock.c: the rwlock suite: shared readers, exclusive
 * writers, arrival order (a waiting writer is not starved), try/timed
 * variants, errors
 */
#include "sync_test.h"

typedef struct {
    coexec_rwlock_t l;
    long iters;
    long value; /* written under the write lock only */
    atomic_int readers;
    atomic_int writers;
    atomic_int arrived;
    atomic_int release;
    atomic_int stop;
    atomic_long reads;
    atomic_long bad;
} rw_t;

typedef struct {
    rw_t *rw;
    int id;
} rw_arg_t;

static int rd_variant(coexec_rwlock_t *l, long i)
{
    switch (i % 3) {
    case 0:
        return coexec_rwlock_rdlock(l);
    case 1:
        return coexec_rwlock_rdlock_timed(l, LONG_TIMEOUT_NS);
    default: {
        int rc = coexec_rwlock_tryrdlock(l);
        return rc == COEXEC_EBUSY ? coexec_rwlock_rdlock(l) : rc;
    }
    }
}

static int wr_variant(coexec_rwlock_t *l, long i)
{
    switch (i % 3) {
    case 0:
        return coexec_rwlock_wrlock(l);
    case 1:
        return coexec_rwlock_wrlock_timed(l, LONG_TIMEOUT_NS);
    default: {
        int rc = coexec_rwlock_trywrlock(l);
        return rc == COEXEC_EBUSY ? coexec_rwlock_wrlock(l) : rc;
    }
    }
}

/* holds a read lock until every reader of the test holds one */
static void share_reader(void *arg)
{
    rw_arg_t *a = arg;
    rw_t *rw = a->rw;
    int rc;
    switch (a->id % 3) {
    case 0:
        rc = coexec_rwlock_rdlock(&rw->l);
        break;
    case 1:
        rc = coexec_rwlock_rdlock_timed(&rw->l, LONG_TIMEOUT_NS);
        break;
    default:
        rc = coexec_rwlock_tryrdlock(&rw->l); /* nobody writes: no wait */
        break;
    }
    CH_CHECK_RC(rc, COEXEC_OK);
    if (rc != COEXEC_OK)
        return;
    atomic_fetch_add(&rw->readers, 1);
    atomic_fetch_add(&rw->arrived, 1);
    CH_WAIT(atomic_load(&rw->release));
    atomic_fetch_sub(&rw->readers, 1);
    CH_CHECK_RC(coexec_rwlock_unlock(&rw->l), COEXEC_OK);
}

typedef struct {
    coexec_rwlock_t *l;
    int write;
    int want;
    uint64_t timeout; /* UINT64_MAX: the try variant */
} rwexp_t;

/* one lock attempt expecting want; unlocks what it got */
static void rw_expect(void *arg)
{
    rwexp_t *x = arg;
    uint64_t t0 = coexec_now_ns();
    int rc;
    if (x->timeout == UINT64_MAX)
        rc = x->write ? coexec_rwlock_trywrlock(x->l)
                      : coexec_rwlock_tryrdlock(x->l);
    else
        rc = x->write ? coexec_rwlock_wrlock_timed(x->l, x->timeout)
                      : coexec_rwlock_rdlock_timed(x->l, x->timeout);
    uint64_t el = coexec_now_ns() - t0;
    CH_CHECK_RC(rc, x->want);
    if (rc == COEXEC_ETIMEDOUT && x->timeout != UINT64_MAX)
        CH_CHECK(el >= x->timeout);
    if (rc == COEXEC_OK)
        CH_CHECK_RC(coexec_rwlock_unlock(x->l), COEXEC_OK);
}

static void t_rwlock_readers_share(void)
{
    ch_init(NSTREAMS);
    coexec_pool_t p1 = ch_main_pool(1);
    enum { NU = 12, N = NU + 1 };
    rw_t rw;
    memset(&rw, 0, sizeof rw);
    CH_ASSERT_OK_FATAL(coexec_rwlock_init(&rw.l));
    rw_arg_t a[N];
    coexec_thread_t t[NU];
    for (int i = 0; i < N; i++)
        a[i] = (rw_arg_t){&rw, i};
    for (int i = 0; i < NU; i++)
        ch_spawn_on(i % NSTREAMS, share_reader, &a[i], &t[i]);
    ch_ext_t e;
    ch_ext_start(&e, share_reader, &a[NU]);
    /* every reader holds it at once (it would hang here otherwise) */
    CU_ASSERT(CH_WAIT(atomic_load(&rw.arrived) == N));
    CH_ASSERT_EQ(atomic_load(&rw.readers), N);
    /* no writer while they hold it; a timed-out writer leaves no trace */
    rwexp_t w1 = {&rw.l, 1, COEXEC_EBUSY, UINT64_MAX};
    rwexp_t w2 = {&rw.l, 1, COEXEC_ETIMEDOUT, 5 * MS};
    rwexp_t r1 = {&rw.l, 0, COEXEC_OK, UINT64_MAX};
    CH_ASSERT_OK(ch_run_ult_in(p1, rw_expect, &w1));
    CH_ASSERT_OK(ch_run_ult_in(p1, rw_expect, &w2));
    CH_ASSERT_OK(ch_run_ult_in(p1, rw_expect, &r1));
    CH_ASSERT_RC(coexec_rwlock_trywrlock(&rw.l), COEXEC_EBUSY);
    CH_ASSERT_RC(coexec_rwlock_destroy(&rw.l), COEXEC_EBUSY);
    atomic_store(&rw.release, 1);
    ch_free_threads(t, NU);
    ch_ext_join(&e);
    CH_ASSERT_EQ(atomic_load(&rw.readers), 0);
    CH_ASSERT_OK(coexec_rwlock_trywrlock(&rw.l));
    CH_ASSERT_OK(coexec_rwlock_unlock(&rw.l));
    CH_ASSERT_OK(coexec_rwlock_destroy(&rw.l));
    ch_finalize();
}

static void excl_writer(void *arg)
{
    rw_arg_t *a = arg;
    rw_t *rw = a->rw;
    long bad = 0;
    for (long i = 0; i < rw->iters; i++) {
        int rc = wr_variant(&rw->l, i + a->id);
        if (rc != COEXEC_OK) {
            CH_CHECK_RC(rc, COEXEC_OK);
            break;
        }
        if (atomic_fetch_add(&rw->writers, 1) != 0)
            bad++;
        if (atomic_load(&rw->readers) != 0)
            bad++;
        long v = rw->value;
        if (i % 4 == 0)
            ch_relax();
        rw->value = v + 1;
        atomic_fetch_sub(&rw->writers, 1);
        CH_CHECK_RC(coexec_rwlock_unlock(&rw->l), COEXEC_OK);
    }
    atomic_fetch_add(&rw->bad, bad);
}

static void excl_reader(void *arg)
{
    rw_arg_t *a = arg;
    rw_t *rw = a->rw;
    long bad = 0;
    for (long i = 0; i < rw->iters; i++) {
        int rc = rd_variant(&rw->l, i + a->id);
        if (rc != COEXEC_OK) {
            CH_CHECK_RC(rc, COEXEC_OK);
            break;
        }
        atomic_fetch_add(&rw->readers, 1);
        if (atomic_load(&rw->writers) != 0)
            bad++;
        long v = rw->value;
        if (i % 4 == 0)
            ch_relax();
        if (rw->value != v) /* no writer while it is read-held */
            bad++;
        atomic_fetch_sub(&rw->readers, 1);
        CH_CHECK_RC(coexec_rwlock_unlock(&rw->l), COEXEC_OK);
    }
    atomic_fetch_add(&rw->bad, bad);
}

static void t_rwlock_writer_excludes(void)
{
    ch_init(NSTREAMS);
    enum { NW = 4, NR = 8 }; /* plus one external writer and reader */
    rw_t rw;
    memset(&rw, 0, sizeof rw);
    rw.iters = ch_iters(2000, 60);
    CH_ASSERT_OK_FATAL(coexec_rwlock_init(&rw.l));
    rw_arg_t a[NW + NR + 2];
    coexec_thread_t t[NW + NR];
    for (int i = 0; i < NW + NR + 2; i++)
        a[i] = (rw_arg_t){&rw, i};
    for (int i = 0; i < NW + NR; i++)
        ch_spawn_on(i % NSTREAMS, i < NW ? excl_writer : excl_reader, &a[i],
                 &t[i]);
    ch_ext_t ew, er;
    ch_ext_start(&ew, excl_writer, &a[NW + NR]);
    ch_ext_start(&er, excl_reader, &a[NW + NR + 1]);
    ch_free_threads(t, NW + NR);
    ch_ext_join(&ew);
    ch_ext_join(&er);
    CH_ASSERT_EQ(atomic_load(&rw.bad), 0);
    CH_ASSERT_EQ(rw.value, (long)(NW + 1) * rw.iters);
    CH_ASSERT_OK(coexec_rwlock_destroy(&rw.l));
    ch_finalize();
}

/* reads until stop, yielding inside the read section */
static void stream_reader(void *arg)
{
    rw_arg_t *a = arg;
    rw_t *rw = a->rw;
    while (!atomic_load(&rw->stop)) {
        int rc = coexec_rwlock_rdlock(&rw->l);
        if (rc != COEXEC_OK) {
            CH_CHECK_RC(rc, COEXEC_OK);
            return;
        }
        atomic_fetch_add(&rw->readers, 1);
        atomic_fetch_add(&rw->reads, 1);
        ch_relax();
        atomic_fetch_sub(&rw->readers, 1);
        CH_CHECK_RC(coexec_rwlock_unlock(&rw->l), COEXEC_OK);
    }
}

static void starved_writer(void *arg)
{
    rw_arg_t *a = arg;
    rw_t *rw = a->rw;
    CH_WAIT(atomic_load(&rw->reads) > 200 * (a->id + 1));
    CH_CHECK_RC(coexec_rwlock_wrlock(&rw->l), COEXEC_OK);
    if (atomic_load(&rw->readers) != 0)
        atomic_fetch_add(&rw->bad, 1);
    rw->value++;
    CH_CHECK_RC(coexec_rwlock_unlock(&rw->l), COEXEC_OK);
    atomic_fetch_add(&rw->arrived, 1);
}

/*
 * Readers on 3 streams and an external thread keep the lock read-held
 * without a break (their sections overlap). A writer (a ULT, then an
 * external thread) must still get it: readers arriving after it queue
 * behind it. With reader preference this would wait forever.
 */
static void t_rwlock_writer_not_starved(void)
{
    ch_init(NSTREAMS);
    enum { NR = 9 };
    rw_t rw;
    memset(&rw, 0, sizeof rw);
    CH_ASSERT_OK_FATAL(coexec_rwlock_init(&rw.l));
    rw_arg_t a[NR + 3];
    coexec_thread_t t[NR + 1];
    for (int i = 0; i < NR + 3; i++)
        a[i] = (rw_arg_t){&rw, i};
    for (int i = 0; i < NR; i++)
        ch_spawn_on(1 + i % 3, stream_reader, &a[i], &t[i]);
    ch_ext_t er, ew;
    ch_ext_start(&er, stream_reader, &a[NR]);
    rw_arg_t w0 = {&rw, 0}, w1 = {&rw, 1};
    ch_spawn_on(0, starved_writer, &w0, &t[NR]);
    CU_ASSERT(CH_WAIT(atomic_load(&rw.arrived) == 1));
    ch_ext_start(&ew, starved_writer, &w1);
    CU_ASSERT(CH_WAIT(atomic_load(&rw.arrived) == 2));
    atomic_store(&rw.stop, 1);
    ch_free_threads(t, NR + 1);
    ch_ext_join(&er);
    ch_ext_join(&ew);
    CH_ASSERT_EQ(rw.value, 2);
    CH_ASSERT_EQ(atomic_load(&rw.bad), 0);
    CH_ASSERT_OK(coexec_rwlock_destroy(&rw.l));
    ch_finalize();
}

/* ---- arrival order ---- */

typedef struct {
    coexec_rwlock_t *l;
    int write;
    int id;
    int *log;
    atomic_int *pos;
    atomic_int got;
    atomic_int done;
    atomic_int *hold_until; /* optional: hold until it is non-zero */
} rwop_t;

static void rwop_body(void *arg)
{
    rwop_t *o = arg;
    int rc = o->write ? coexec_rwlock_wrlock(o->l) : coexec_rwlock_rdlock(o->l);
    CH_CHECK_RC(rc, COEXEC_OK);
    if (rc == COEXEC_OK) {
        o->log[atomic_fetch_add(o->pos, 1)] = o->id;
        atomic_store(&o->got, 1);
        if (o->hold_until)
            CH_WAIT(atomic_load(o->hold_until));
        CH_CHECK_RC(coexec_rwlock_unlock(o->l), COEXEC_OK);
    }
    atomic_store(&o->done, 1);
}

static void t_rwlock_arrival_order(void)
{
    ch_init(NSTREAMS);
    coexec_pool_t p3 = ch_main_pool(3);
    coexec_rwlock_t l;
    CH_ASSERT_OK_FATAL(coexec_rwlock_init(&l));
    int log[8];
    atomic_int pos = 0;

    /* read-held; a writer waits; a new reader queues behind the writer */
    CH_ASSERT_OK(coexec_rwlock_rdlock(&l));
    rwop_t w = {.l = &l, .write = 1, .id = 0, .log = log, .pos = &pos};
    rwop_t r = {.l = &l, .write = 0, .id = 1, .log = log, .pos = &pos};
    coexec_thread_t tw, tr;
    ch_spawn_on(1, rwop_body, &w, &tw);
    CU_ASSERT(wait_blocked(tw));
    rwexp_t tryr = {&l, 0, COEXEC_EBUSY, UINT64_MAX};
    CH_ASSERT_OK(ch_run_ult_in(p3, rw_expect, &tryr));
    ch_spawn_on(2, rwop_body, &r, &tr);
    CH_WAIT(ch_thread_state(tr) == COEXEC_UNIT_BLOCKED || atomic_load(&r.got));
    ch_linger(2);
    CH_ASSERT_EQ(atomic_load(&r.got), 0);
    CH_ASSERT_EQ(atomic_load(&w.got), 0);
    CH_ASSERT_OK(coexec_rwlock_unlock(&l));
    CH_ASSERT_OK(coexec_thread_free(&tw));
    CH_ASSERT_OK(coexec_thread_free(&tr));
    CH_ASSERT_EQ(atomic_load(&pos), 2);
    CH_ASSERT_EQ(log[0], 0);
    CH_ASSERT_EQ(log[1], 1);

    /*
     * Write-held; queued: R1 R2 W R3. The unlock lets R1 and R2 in
     * together (R1 holds until R2 has it), then W, then R3.
     */
    atomic_store(&pos, 0);
    atomic_int r2_got_flag = 0;
    CH_ASSERT_OK(coexec_rwlock_wrlock(&l));
    rwop_t q[4] = {
        {.l = &l, .write = 0, .id = 0, .log = log, .pos = &pos},
        {.l = &l, .write = 0, .id = 1, .log = log, .pos = &pos},
        {.l = &l, .write = 1, .id = 2, .log = log, .pos = &pos},
        {.l = &l, .write = 0, .id = 3, .log = log, .pos = &pos},
    };
    q[0].hold_until = &r2_got_flag;
    coexec_thread_t tq[4];
    for (int i = 0; i < 4; i++) {
        ch_spawn_on(1 + i % 3, rwop_body, &q[i], &tq[i]);
        CU_ASSERT(wait_blocked(tq[i]));
    }
    CH_ASSERT_OK(coexec_rwlock_unlock(&l));
    CU_ASSERT(CH_WAIT(atomic_load(&q[1].got)));
    atomic_store(&r2_got_flag, 1);
    ch_free_threads(tq, 4);
    CH_ASSERT_EQ(atomic_load(&pos), 4);
    CU_ASSERT((log[0] == 0 && log[1] == 1) || (log[0] == 1 && log[1] == 0));
    CH_ASSERT_EQ(log[2], 2);
    CH_ASSERT_EQ(log[3], 3);
    CH_ASSERT_OK(coexec_rwlock_destroy(&l));
    ch_finalize();
}

/* ---- errors ---- */

static coexec_rwlock_t g_static_rwlock = COEXEC_RWLOCK_INITIALIZER;

static void rw_unlock_eperm(void *arg)
{
    CH_CHECK_RC(coexec_rwlock_unlock((coexec_rwlock_t *)arg), COEXEC_EPERM);
}

static void rw_others_see_writer(coexec_rwlock_t *l, coexec_pool_t p)
{
    rwexp_t x[] = {
        {l, 0, COEXEC_EBUSY, UINT64_MAX},
        {l, 1, COEXEC_EBUSY, UINT64_MAX},
        {l, 0, COEXEC_ETIMEDOUT, 5 * MS},
        {l, 1, COEXEC_ETIMEDOUT, 5 * MS},
        {l, 0, COEXEC_ETIMEDOUT, 0},
    };
    for (unsigned i = 0; i < sizeof x / sizeof x[0]; i++) {
        CH_ASSERT_OK(ch_run_ult_in(p, rw_expect, &x[i]));
        ch_ext_t e;
        ch_ext_start(&e, rw_expect, &x[i]);
        ch_ext_join(&e);
    }
    CH_ASSERT_OK(ch_run_ult_in(p, rw_unlock_eperm, l));
    ch_ext_t e;
    ch_ext_start(&e, rw_unlock_eperm, l);
    ch_ext_join(&e);
}

typedef struct {
    coexec_rwlock_t *l;
    atomic_int holding;
    atomic_int release;
} ext_holder_t;

static void ext_write_holder(void *arg)
{
    ext_holder_t *h = arg;
    CH_CHECK_RC(coexec_rwlock_wrlock(h->l), COEXEC_OK);
    atomic_store(&h->holding, 1);
    CH_WAIT(atomic_load(&h->release));
    CH_CHECK_RC(coexec_rwlock_unlock(h->l), COEXEC_OK);
}

static void t_rwlock_errors(void)
{
    ch_init(NSTREAMS);
    coexec_pool_t p1 = ch_main_pool(1);
    coexec_rwlock_t l;
    CH_ASSERT_OK_FATAL(coexec_rwlock_init(&l));
    CH_ASSERT_RC(coexec_rwlock_unlock(&l), COEXEC_EPERM); /* not held */
    /* write-held by the main ULT */
    CH_ASSERT_OK(coexec_rwlock_wrlock(&l));
    CH_ASSERT_RC(coexec_rwlock_wrlock(&l), COEXEC_EDEADLK);
    CH_ASSERT_RC(coexec_rwlock_wrlock_timed(&l, 1 * MS), COEXEC_EDEADLK);
    rw_others_see_writer(&l, p1);
    CH_ASSERT_RC(coexec_rwlock_destroy(&l), COEXEC_EBUSY);
    CH_ASSERT_OK(coexec_rwlock_unlock(&l));
    CH_ASSERT_RC(coexec_rwlock_unlock(&l), COEXEC_EPERM);
    /* write-held by an external thread: the main ULT is not the owner */
    ext_holder_t h = {.l = &l};
    ch_ext_t eh;
    ch_ext_start(&eh, ext_write_holder, &h);
    CH_WAIT(atomic_load(&h.holding));
    CH_ASSERT_RC(coexec_rwlock_tryrdlock(&l), COEXEC_EBUSY);
    CH_ASSERT_RC(coexec_rwlock_trywrlock(&l), COEXEC_EBUSY);
    CH_ASSERT_RC(coexec_rwlock_rdlock_timed(&l, 2 * MS), COEXEC_ETIMEDOUT);
    CH_ASSERT_RC(coexec_rwlock_unlock(&l), COEXEC_EPERM);
    atomic_store(&h.release, 1);
    ch_ext_join(&eh);
    CH_ASSERT_OK(coexec_rwlock_wrlock_timed(&l, 0));
    CH_ASSERT_OK(coexec_rwlock_unlock(&l));
    /* read-held: writers wait or fail, readers come in */
    CH_ASSERT_OK(coexec_rwlock_rdlock(&l));
    rwexp_t x[] = {
        {&l, 1, COEXEC_EBUSY, UINT64_MAX},
        {&l, 1, COEXEC_ETIMEDOUT, 5 * MS},
        {&l, 1, COEXEC_ETIMEDOUT, 0},
        {&l, 0, COEXEC_OK, UINT64_MAX}, /* the timed-out writer is gone */
        {&l, 0, COEXEC_OK, 5 * MS},
    };
    for (unsigned i = 0; i < sizeof x / sizeof x[0]; i++) {
        CH_ASSERT_OK(ch_run_ult_in(p1, rw_expect, &x[i]));
        ch_ext_t e;
        ch_ext_start(&e, rw_expect, &x[i]);
        ch_ext_join(&e);
    }
    CH_ASSERT_RC(coexec_rwlock_destroy(&l), COEXEC_EBUSY);
    CH_ASSERT_OK(coexec_rwlock_rdlock(&l)); /* twice shared */
    CH_ASSERT_OK(coexec_rwlock_unlock(&l));
    CH_ASSERT_OK(coexec_rwlock_unlock(&l));
    CH_ASSERT_RC(coexec_rwlock_unlock(&l), COEXEC_EPERM);
    CH_ASSERT_OK(coexec_rwlock_destroy(&l));
    /* use after destroy */
    CH_ASSERT_RC(coexec_rwlock_rdlock(&l), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_rwlock_wrlock(&l), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_rwlock_rdlock_timed(&l, 1 * MS), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_rwlock_wrlock_timed(&l, 1 * MS), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_rwlock_tryrdlock(&l), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_rwlock_trywrlock(&l), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_rwlock_unlock(&l), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_rwlock_destroy(&l), COEXEC_EHANDLE);
    /* the static initialiser */
    CH_ASSERT_OK(coexec_rwlock_rdlock(&g_static_rwlock));
    CH_ASSERT_RC(coexec_rwlock_trywrlock(&g_static_rwlock), COEXEC_EBUSY);
    CH_ASSERT_OK(coexec_rwlock_unlock(&g_static_rwlock));
    CH_ASSERT_OK(coexec_rwlock_wrlock(&g_static_rwlock));
    CH_ASSERT_OK(coexec_rwlock_unlock(&g_static_rwlock));
    CH_ASSERT_OK(coexec_rwlock_destroy(&g_static_rwlock));
    ch_finalize();
}

/* ======================================================================= */

const ch_test_t sync_rwlock_tests[] = {
    {"readers_share", t_rwlock_readers_share},
    {"writer_excludes", t_rwlock_writer_excludes},
    {"writer_not_starved", t_rwlock_writer_not_starved},
    {"arrival_order", t_rwlock_arrival_order},
    {"errors", t_rwlock_errors},
    {NULL, NULL}};
