/*
 * tests/thread/test_handles.c: a unit handle is released exactly once,
 * whatever races on it.
 *
 * Suites:
 *   double_free  two threads free one finished ULT (or tasklet) handle at
 *                once: exactly one gets COEXEC_OK, the other
 *                COEXEC_EHANDLE, and the descriptor is not handed out
 *                twice (every later unit runs exactly once)
 *   join_free    one thread joins while another frees: the free never
 *                recycles the descriptor under the joiner, nothing hangs
 *   stale        a stale handle (a copy kept after the free) is refused by
 *                join and free, even once its descriptor serves a new
 *                unit, which it never joins, runs or releases; queries
 *                through copies of handles that are being freed, their
 *                descriptors recycled at once for other units, answer for
 *                their own unit or COEXEC_EHANDLE, never for the next;
 *                the same for pools and schedulers freed and re-created
 *   timed_join   join_timed of ULTs and tasklets from ULTs and external
 *                threads: COEXEC_ETIMEDOUT leaves the unit alone (it runs
 *                on, once, and is joined later), a finish before the
 *                deadline is COEXEC_OK, racing the two never hangs; the
 *                same for request_wait_timed of a service call
 *   owner        a ULT that exits holding a mutex or a write lock does not
 *                pass ownership to the next ULT that reuses its
 *                descriptor: that one's unlock is COEXEC_EPERM
 *   recycle      waves of ULTs and tasklets, created on one stream and
 *                freed on another, of sizes around the streams' cache
 *                batches: every live unit has a descriptor (and a running
 *                ULT a stack) of its own, each runs once, and repeated
 *                waves reuse what earlier ones gave back (the number of
 *                distinct descriptors and stacks stays bounded)
 */
#include "harness.h"

#include <sched.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

static void yield_once(void)
{
    int rc = coexec_yield();
    (void)rc;
}

static void nop_ult(void *arg)
{
    if (arg)
        atomic_fetch_add((atomic_int *)arg, 1);
}

static coexec_poll_status_t nop_tasklet(coexec_poll_t *cx, void *arg)
{
    (void)cx;
    if (arg)
        atomic_fetch_add((atomic_int *)arg, 1);
    return COEXEC_READY;
}

/* ---- two frees at once ------------------------------------------------- */

typedef struct race {
    coexec_thread_t t;   /* both racers free their own copy of it */
    coexec_tasklet_t k;
    int tasklet;
    atomic_int go;
    atomic_int ready;
    int rc[2];
} race_t;

static race_t g_race;

static void *racer(void *arg)
{
    int me = (int)(intptr_t)arg;
    coexec_thread_t t = g_race.t;
    coexec_tasklet_t k = g_race.k;
    atomic_fetch_add(&g_race.ready, 1);
    while (!atomic_load(&g_race.go))
        sched_yield();
    g_race.rc[me] = g_race.tasklet ? coexec_tasklet_free(&k)
                                   : coexec_thread_free(&t);
    return NULL;
}

static void double_free_rounds(int tasklet)
{
    ch_init(2);
    long rounds = ch_iters(1500, 100);
    coexec_xstream_t x1;
    CH_ASSERT_OK(coexec_xstream_by_rank(1, &x1));
    long ok1 = 0, bad = 0;
    for (long r = 0; r < rounds; r++) {
        atomic_int ran = 0;
        memset(&g_race, 0, sizeof g_race);
        g_race.tasklet = tasklet;
        if (tasklet)
            CH_ASSERT_OK(coexec_tasklet_create_on(x1, nop_tasklet, &ran,
                                                  &g_race.k));
        else
            CH_ASSERT_OK(coexec_thread_create_on(x1, nop_ult, &ran, NULL,
                                                 &g_race.t));
        /* Finished, not yet freed (a free racing with the finish would
         * be a second joiner: COEXEC_EBUSY, tested elsewhere). */
        coexec_unit_state_t st = COEXEC_UNIT_READY;
        CH_WAIT((tasklet ? coexec_tasklet_get_state(g_race.k, &st)
                         : coexec_thread_get_state(g_race.t, &st)) ==
                    COEXEC_OK &&
                st == COEXEC_UNIT_TERMINATED);
        CH_ASSERT_EQ(atomic_load(&ran), 1);
        ch_pthread_t th[2];
        for (int i = 0; i < 2; i++)
            ch_pthread_start(&th[i], racer, (void *)(intptr_t)i);
        while (atomic_load(&g_race.ready) < 2)
            sched_yield();
        atomic_store(&g_race.go, 1);
        for (int i = 0; i < 2; i++)
            ch_pthread_join(&th[i]);
        int a = g_race.rc[0], b = g_race.rc[1];
        if ((a == COEXEC_OK && b == COEXEC_EHANDLE) ||
            (b == COEXEC_OK && a == COEXEC_EHANDLE))
            ok1++;
        else if (bad++ < 5)
            ch_fail_at(__FILE__, __LINE__, "round %ld: frees gave %s and %s",
                       r, coexec_err_name(a), coexec_err_name(b));
        /* The descriptor went back once: the next units each run once and
         * are freed once. */
        atomic_int ran2 = 0;
        coexec_thread_t u[3];
        for (int i = 0; i < 3; i++)
            CH_ASSERT_OK(coexec_thread_create_on(x1, nop_ult, &ran2, NULL,
                                                 &u[i]));
        for (int i = 0; i < 3; i++)
            CH_ASSERT_OK(coexec_thread_free(&u[i]));
        CH_ASSERT_EQ(atomic_load(&ran2), 3);
    }
    CH_ASSERT_EQ(ok1, rounds);
    ch_finalize();
}

static void t_double_free_ult(void) { double_free_rounds(0); }
static void t_double_free_tasklet(void) { double_free_rounds(1); }

/* Two threads free copies of one stream, pool or scheduler handle. */
enum { OBJ_XSTREAM, OBJ_POOL, OBJ_SCHED };
static struct {
    int kind;
    coexec_xstream_t x;
    coexec_pool_t p;
    coexec_sched_t s;
    atomic_int ready, go;
    int rc[2];
} g_obj;

static void *obj_racer(void *arg)
{
    int me = (int)(intptr_t)arg;
    coexec_xstream_t x = g_obj.x;
    coexec_pool_t p = g_obj.p;
    coexec_sched_t s = g_obj.s;
    atomic_fetch_add(&g_obj.ready, 1);
    while (!atomic_load(&g_obj.go))
        sched_yield();
    g_obj.rc[me] = g_obj.kind == OBJ_XSTREAM ? coexec_xstream_free(&x)
                   : g_obj.kind == OBJ_POOL  ? coexec_pool_free(&p)
                                             : coexec_sched_free(&s);
    return NULL;
}

static void t_double_free_objects(void)
{
    ch_init(1);
    long rounds = ch_iters(300, 20);
    int bad = 0;
    for (long r = 0; r < rounds; r++) {
        memset(&g_obj, 0, sizeof g_obj);
        g_obj.kind = (int)(r % 3);
        coexec_pool_t extra;
        CH_ASSERT_OK(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC,
                                        &extra));
        if (g_obj.kind == OBJ_XSTREAM)
            CH_ASSERT_OK(coexec_xstream_create(NULL, &g_obj.x));
        else if (g_obj.kind == OBJ_POOL)
            g_obj.p = extra;
        else
            CH_ASSERT_OK(coexec_sched_create(COEXEC_SCHED_BASIC, &extra, 1,
                                             NULL, &g_obj.s));
        ch_pthread_t th[2];
        for (int i = 0; i < 2; i++)
            ch_pthread_start(&th[i], obj_racer, (void *)(intptr_t)i);
        while (atomic_load(&g_obj.ready) < 2)
            sched_yield();
        atomic_store(&g_obj.go, 1);
        for (int i = 0; i < 2; i++)
            ch_pthread_join(&th[i]);
        int a = g_obj.rc[0], b = g_obj.rc[1];
        if (!((a == COEXEC_OK && b == COEXEC_EHANDLE) ||
              (b == COEXEC_OK && a == COEXEC_EHANDLE)) &&
            bad++ < 5)
            ch_fail_at(__FILE__, __LINE__, "round %ld (kind %d): %s and %s", r,
                       g_obj.kind, coexec_err_name(a), coexec_err_name(b));
        if (g_obj.kind != OBJ_POOL)
            CH_ASSERT_OK(coexec_pool_free(&extra));
    }
    /* Still working: a new stream runs a ULT. */
    coexec_xstream_t x;
    CH_ASSERT_OK(coexec_xstream_create(NULL, &x));
    atomic_int ran = 0;
    coexec_thread_t t;
    CH_ASSERT_OK(coexec_thread_create_on(x, nop_ult, &ran, NULL, &t));
    CH_ASSERT_OK(coexec_thread_free(&t));
    CH_ASSERT_EQ(atomic_load(&ran), 1);
    CH_ASSERT_OK(coexec_xstream_free(&x));
    ch_finalize();
}

static const ch_test_t double_free_tests[] = {
    {"ult", t_double_free_ult},
    {"tasklet", t_double_free_tasklet},
    {"stream_pool_sched", t_double_free_objects},
    {NULL, NULL}};

/* ---- join and free at once --------------------------------------------- */

static atomic_int g_gate;

static void gated_ult(void *arg)
{
    (void)arg;
    while (!atomic_load(&g_gate))
        yield_once();
}

static coexec_thread_t g_jf;
static int g_join_rc, g_free_rc;

static void *joiner(void *arg)
{
    (void)arg;
    g_join_rc = coexec_thread_join(g_jf);
    return NULL;
}

static void *freer(void *arg)
{
    (void)arg;
    coexec_thread_t t = g_jf;
    /* Retries while the other joins (EBUSY), as a careless caller might. */
    for (;;) {
        g_free_rc = coexec_thread_free(&t);
        if (g_free_rc != COEXEC_EBUSY)
            break;
        sched_yield();
    }
    return NULL;
}

static void t_join_free(void)
{
    ch_init(3);
    long rounds = ch_iters(800, 50);
    coexec_xstream_t x1;
    CH_ASSERT_OK(coexec_xstream_by_rank(1, &x1));
    int bad = 0;
    for (long r = 0; r < rounds; r++) {
        atomic_store(&g_gate, 0);
        CH_ASSERT_OK(coexec_thread_create_on(x1, gated_ult, NULL, NULL, &g_jf));
        ch_pthread_t a, b;
        ch_pthread_start(&a, joiner, NULL);
        ch_pthread_start(&b, freer, NULL);
        if (r & 1)
            sched_yield();
        atomic_store(&g_gate, 1);
        ch_pthread_join(&a);
        ch_pthread_join(&b);
        /* The free succeeds exactly once; the join saw the unit finish
         * (OK), found the handle already freed (EHANDLE), or found the
         * free joining it (EBUSY). */
        if (g_free_rc != COEXEC_OK ||
            (g_join_rc != COEXEC_OK && g_join_rc != COEXEC_EHANDLE &&
             g_join_rc != COEXEC_EBUSY)) {
            if (bad++ < 5)
                ch_fail_at(__FILE__, __LINE__,
                           "round %ld: join %s, free %s", r,
                           coexec_err_name(g_join_rc),
                           coexec_err_name(g_free_rc));
        }
    }
    /* Still working. */
    atomic_int ran = 0;
    coexec_thread_t t;
    CH_ASSERT_OK(coexec_thread_create_on(x1, nop_ult, &ran, NULL, &t));
    CH_ASSERT_OK(coexec_thread_free(&t));
    CH_ASSERT_EQ(atomic_load(&ran), 1);
    ch_finalize();
}

/*
 * Two ULTs on two streams join one ULT that sits, not started, in a pool
 * no scheduler serves: either may take it out to run it in place while
 * the other registers as its joiner. One join runs it (COEXEC_OK); the
 * other is refused with COEXEC_EBUSY, or sees it done (COEXEC_OK); none
 * hangs, and the unit runs once.
 */
static struct {
    coexec_thread_t target;
    atomic_int go, ready, rc[2], ran;
} g_jj;

static void jj_joiner(void *arg)
{
    int k = (int)(intptr_t)arg;
    atomic_fetch_add(&g_jj.ready, 1);
    while (!atomic_load(&g_jj.go))
        ;
    atomic_store(&g_jj.rc[k], coexec_thread_join(g_jj.target));
}

static void t_join_join(void)
{
    ch_init(3);
    coexec_pool_t idle;
    CH_ASSERT_OK_FATAL(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPMC, &idle));
    coexec_xstream_t xs[2];
    CH_ASSERT_OK_FATAL(coexec_xstream_by_rank(1, &xs[0]));
    CH_ASSERT_OK_FATAL(coexec_xstream_by_rank(2, &xs[1]));
    coexec_thread_attr_t pin;
    CH_ASSERT_OK(coexec_thread_attr_init(&pin));
    pin.pinned = 1;
    long rounds = ch_iters(500, 50);
    int busy = 0;
    for (long i = 0; i < rounds; i++) {
        atomic_store(&g_jj.ran, 0);
        atomic_store(&g_jj.go, 0);
        atomic_store(&g_jj.ready, 0);
        CH_ASSERT_OK_FATAL(coexec_thread_create(idle, nop_ult, &g_jj.ran,
                                                NULL, &g_jj.target));
        coexec_thread_t j[2];
        for (int k = 0; k < 2; k++)
            CH_ASSERT_OK_FATAL(coexec_thread_create_on(xs[k], jj_joiner,
                                                       (void *)(intptr_t)k,
                                                       &pin, &j[k]));
        CH_WAIT(atomic_load(&g_jj.ready) == 2);
        atomic_store(&g_jj.go, 1);
        for (int k = 0; k < 2; k++)
            CH_ASSERT_OK(coexec_thread_free(&j[k]));
        int a = atomic_load(&g_jj.rc[0]), b = atomic_load(&g_jj.rc[1]);
        CU_ASSERT(a == COEXEC_OK || b == COEXEC_OK);
        CU_ASSERT(a == COEXEC_OK || a == COEXEC_EBUSY);
        CU_ASSERT(b == COEXEC_OK || b == COEXEC_EBUSY);
        busy += a == COEXEC_EBUSY || b == COEXEC_EBUSY;
        CH_ASSERT_OK(coexec_thread_free(&g_jj.target));
        CH_ASSERT_EQ(atomic_load(&g_jj.ran), 1);
    }
    fprintf(stderr, "    %d of %ld rounds: one join refused\n", busy, rounds);
    CH_ASSERT_OK(coexec_pool_free(&idle));
    ch_finalize();
}

static const ch_test_t join_free_tests[] = {{"join_while_free", t_join_free},
                                            {"join_while_join", t_join_join},
                                            {NULL, NULL}};

/* ---- stale handles ------------------------------------------------------ */

static void t_stale(void)
{
    /* One stream, so the freed descriptor is the next one handed out. */
    ch_init(1);
    coexec_xstream_t x0;
    CH_ASSERT_OK(coexec_xstream_by_rank(0, &x0));
    atomic_int ran = 0;
    coexec_thread_t t, copy;
    CH_ASSERT_OK(coexec_thread_create_on(x0, nop_ult, &ran, NULL, &t));
    copy = t;
    CH_ASSERT_OK(coexec_thread_free(&t));
    CH_ASSERT_EQ(atomic_load(&ran), 1);
    /* The descriptor now serves a new, not yet started unit. */
    coexec_thread_t n;
    atomic_int ran2 = 0;
    CH_ASSERT_OK(coexec_thread_create_on(x0, nop_ult, &ran2, NULL, &n));
    CU_ASSERT_PTR_EQUAL(n.p, copy.p); /* the case under test */
    CH_ASSERT_RC(coexec_thread_join(copy), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_thread_free(&copy), COEXEC_EHANDLE);
    CH_ASSERT_EQ(atomic_load(&ran2), 0); /* not run in place by the stale one */
    CH_ASSERT_OK(coexec_thread_free(&n));
    CH_ASSERT_EQ(atomic_load(&ran2), 1);
    ch_finalize();
}

/* Queries racing the free of the unit they name, whose descriptor the
 * creator recycles at once (the stream's cache hands the freed descriptor
 * out next): each answer is the queried unit's, or COEXEC_EHANDLE. Each
 * unit's argument is its own token, so a query that read the next unit's
 * fields shows. ULTs and tasklets alternate, so the kind changes too. */
typedef struct {
    long n;
    coexec_thread_t *t;   /* unit i's handle (t or k), written before */
    coexec_tasklet_t *k;  /* `published` passes i */
    long *tok;            /* unit i's argument: &tok[i] */
    atomic_long published; /* units 0..published-1 are handed out */
    atomic_int done;
    long creator_bad;
} qr_t;

static qr_t g_qr;

static void qr_ult(void *arg) { (void)arg; }

static coexec_poll_status_t qr_tasklet(coexec_poll_t *cx, void *arg)
{
    (void)cx;
    (void)arg;
    return COEXEC_READY;
}

static void qr_creator(void *arg)
{
    (void)arg;
    qr_t *q = &g_qr;
    coexec_pool_t pool = ch_main_pool(1);
    for (long i = 0; i < q->n; i++) {
        int rc = (i & 1) ? coexec_tasklet_create(pool, qr_tasklet,
                                                 &q->tok[i], &q->k[i])
                         : coexec_thread_create(pool, qr_ult, &q->tok[i],
                                                NULL, &q->t[i]);
        if (rc != COEXEC_OK) {
            q->creator_bad++;
            break;
        }
        atomic_store(&q->published, i + 1);
        if (i % 3 == 0)
            yield_once(); /* now and then, let it be queried live */
        coexec_thread_t tc = q->t[i];
        coexec_tasklet_t kc = q->k[i];
        rc = (i & 1) ? coexec_tasklet_free(&kc) : coexec_thread_free(&tc);
        if (rc != COEXEC_OK)
            q->creator_bad++;
    }
    atomic_store(&q->done, 1);
}

typedef struct {
    long answered, refused, wrong;
    char first_wrong[160];
} qr_seen_t;

static void qr_note(qr_seen_t *s, int rc, bool right, const char *what,
                    long i)
{
    if (rc == COEXEC_EHANDLE) {
        s->refused++;
    } else if (rc == COEXEC_OK && right) {
        s->answered++;
    } else if (s->wrong++ == 0) {
        snprintf(s->first_wrong, sizeof s->first_wrong,
                 "handle %ld: %s gave %s%s", i, what, coexec_err_name(rc),
                 rc == COEXEC_OK ? " and a wrong answer" : "");
    }
}

/* Fails for every reader that got a wrong answer; prints the counts. */
static void qr_report(const qr_seen_t *seen, int n)
{
    long answered = 0, refused = 0;
    for (int j = 0; j < n; j++) {
        if (seen[j].wrong)
            ch_fail_at(__FILE__, __LINE__, "reader %d: %ld wrong answers "
                       "of %ld; the first: %s", j, seen[j].wrong,
                       seen[j].wrong + seen[j].answered + seen[j].refused,
                       seen[j].first_wrong);
        answered += seen[j].answered;
        refused += seen[j].refused;
    }
    printf("\n    queries answered %ld, refused %ld\n", answered, refused);
}

static void qr_reader(void *arg)
{
    qr_seen_t *s = arg;
    qr_t *q = &g_qr;
    /* Yields every few rounds whatever i is: a reader stolen onto the
     * creator's stream must let the creator run there. */
    for (long round = 1; !atomic_load(&q->done); round++) {
        long i = atomic_load(&q->published) - 1;
        if (i < 0) {
            yield_once();
            continue;
        }
        bool tk = i & 1;
        coexec_unit_t u = tk ? coexec_tasklet_unit(q->k[i])
                             : coexec_thread_unit(q->t[i]);
        void *a = NULL;
        int rc = coexec_unit_get_arg(u, &a);
        qr_note(s, rc, a == &q->tok[i], "coexec_unit_get_arg", i);
        coexec_unit_state_t st = COEXEC_UNIT_READY;
        rc = tk ? coexec_tasklet_get_state(q->k[i], &st)
                : coexec_thread_get_state(q->t[i], &st);
        qr_note(s, rc, true, "get_state", i);
        uint64_t id = 0;
        rc = coexec_unit_get_id(u, &id);
        qr_note(s, rc, id != 0, "coexec_unit_get_id", i);
        int prio = -1;
        rc = coexec_unit_get_priority(u, &prio);
        qr_note(s, rc, prio == 0, "coexec_unit_get_priority", i);
        if (!tk) {
            coexec_stack_info_t si;
            rc = coexec_thread_get_stack(q->t[i], &si);
            qr_note(s, rc, !si.user_stack, "coexec_thread_get_stack", i);
        }
        if ((round & 7) == 0)
            yield_once();
    }
}

static void t_stale_queries(void)
{
    ch_init(3);
    qr_t *q = &g_qr;
    memset(q, 0, sizeof *q);
    q->n = ch_iters(60000, 2000);
    q->t = calloc((size_t)q->n, sizeof *q->t);
    q->k = calloc((size_t)q->n, sizeof *q->k);
    q->tok = calloc((size_t)q->n, sizeof *q->tok);
    CH_ASSERT_EQ_FATAL(q->t && q->k && q->tok, 1);
    qr_seen_t seen[2];
    memset(seen, 0, sizeof seen);
    coexec_thread_t r[2], c;
    ch_spawn_on(0, qr_reader, &seen[0], &r[0]);
    ch_spawn_on(2, qr_reader, &seen[1], &r[1]);
    ch_spawn_on(1, qr_creator, NULL, &c);
    CH_WAIT(atomic_load(&q->done));
    ch_free_threads(&c, 1);
    ch_free_threads(r, 2);
    CH_ASSERT_EQ(q->creator_bad, 0);
    qr_report(seen, 2);
    free(q->t);
    free(q->k);
    free(q->tok);
    ch_finalize();
}

/* Pools and schedulers: a thread frees them and creates others at once
 * (their records are recycled), of other kinds, accesses and pool counts,
 * while ULTs query copies of the handles: every answer is the queried
 * object's, or COEXEC_EHANDLE. */
typedef struct {
    long n;
    coexec_pool_t *p;    /* object i's handles, written before */
    coexec_sched_t *s;   /* `published` passes i */
    atomic_long published;
    atomic_int done;
    long bad;
} oq_t;

static oq_t g_oq;

/* Object i: a pool of kind i % 2 (FIFO, LIFO) and access PRIV or MPMC, and
 * a scheduler over 1 + i % 3 copies of it. */
static coexec_pool_kind_t oq_kind(long i) { return (coexec_pool_kind_t)(i % 2); }
static coexec_pool_access_t oq_access(long i)
{
    return (i / 2) % 2 ? COEXEC_ACCESS_MPMC : COEXEC_ACCESS_PRIV;
}
static int oq_npools(long i) { return 1 + (int)(i % 3); }

static void *oq_creator(void *arg)
{
    (void)arg;
    oq_t *q = &g_oq;
    for (long i = 0; i < q->n; i++) {
        coexec_pool_t pools[3];
        int np = oq_npools(i);
        if (coexec_pool_create(oq_kind(i), oq_access(i), &q->p[i]) !=
            COEXEC_OK) {
            q->bad++;
            break;
        }
        for (int j = 0; j < np; j++)
            pools[j] = q->p[i];
        if (coexec_sched_create(COEXEC_SCHED_BASIC, pools, np, NULL,
                                &q->s[i]) != COEXEC_OK) {
            q->bad++;
            break;
        }
        atomic_store(&q->published, i + 1);
        coexec_sched_t sc = q->s[i];
        coexec_pool_t pc = q->p[i];
        if (coexec_sched_free(&sc) != COEXEC_OK ||
            coexec_pool_free(&pc) != COEXEC_OK)
            q->bad++;
    }
    atomic_store(&q->done, 1);
    return NULL;
}

static void oq_reader(void *arg)
{
    qr_seen_t *s = arg;
    oq_t *q = &g_oq;
    for (long round = 1; !atomic_load(&q->done); round++) {
        long i = atomic_load(&q->published) - 1;
        if (i < 0) {
            yield_once();
            continue;
        }
        coexec_pool_kind_t k = COEXEC_POOL_PRIO;
        coexec_pool_access_t a = COEXEC_ACCESS_SPSC;
        int rc = coexec_pool_get_info(q->p[i], &k, &a);
        qr_note(s, rc, k == oq_kind(i) && a == oq_access(i),
                "coexec_pool_get_info", i);
        int np = -1;
        rc = coexec_sched_get_num_pools(q->s[i], &np);
        qr_note(s, rc, np == oq_npools(i), "coexec_sched_get_num_pools", i);
        coexec_pool_t p0 = {0};
        rc = coexec_sched_get_pool(q->s[i], 0, &p0);
        qr_note(s, rc, CH_SAME(p0, q->p[i]), "coexec_sched_get_pool", i);
        size_t sz = 1;
        rc = coexec_pool_get_size(q->p[i], &sz);
        qr_note(s, rc, sz == 0, "coexec_pool_get_size", i);
        if ((round & 7) == 0)
            yield_once();
    }
}

static void t_stale_object_queries(void)
{
    ch_init(3);
    oq_t *q = &g_oq;
    memset(q, 0, sizeof *q);
    q->n = ch_iters(20000, 1000);
    q->p = calloc((size_t)q->n, sizeof *q->p);
    q->s = calloc((size_t)q->n, sizeof *q->s);
    CH_ASSERT_EQ_FATAL(q->p && q->s, 1);
    qr_seen_t seen[2];
    memset(seen, 0, sizeof seen);
    coexec_thread_t r[2];
    ch_spawn_on(1, oq_reader, &seen[0], &r[0]);
    ch_spawn_on(2, oq_reader, &seen[1], &r[1]);
    ch_pthread_t c;
    ch_pthread_start(&c, oq_creator, NULL);
    ch_pthread_join(&c);
    ch_free_threads(r, 2);
    CH_ASSERT_EQ(q->bad, 0);
    qr_report(seen, 2);
    free(q->p);
    free(q->s);
    ch_finalize();
}

static const ch_test_t stale_tests[] = {
    {"stale_handle", t_stale},
    {"queries_during_recycle", t_stale_queries},
    {"object_queries_during_recycle", t_stale_object_queries},
    {NULL, NULL}};

/* ---- timed joins ------------------------------------------------------- */

static void suspend_ult(void *arg)
{
    int rc = coexec_self_suspend();
    (void)rc;
    atomic_fetch_add((atomic_int *)arg, 1);
}

static coexec_thread_t g_tj;
static int g_tj_rc;

static void *external_timed_join(void *arg)
{
    g_tj_rc = coexec_thread_join_timed(g_tj, (uint64_t)(intptr_t)arg);
    return NULL;
}

static void timed_join_of_parked(bool from_ult)
{
    ch_init(2);
    coexec_xstream_t x1;
    CH_ASSERT_OK(coexec_xstream_by_rank(1, &x1));
    atomic_int ran = 0;
    CH_ASSERT_OK(coexec_thread_create_on(x1, suspend_ult, &ran, NULL, &g_tj));
    coexec_unit_state_t st = COEXEC_UNIT_READY;
    CH_WAIT(coexec_thread_get_state(g_tj, &st) == COEXEC_OK &&
            st == COEXEC_UNIT_BLOCKED);
    uint64_t t0 = coexec_now_ns();
    if (from_ult) {
        g_tj_rc = coexec_thread_join_timed(g_tj, 20 * 1000 * 1000);
    } else {
        ch_pthread_t th;
        ch_pthread_start(&th, external_timed_join,
                         (void *)(intptr_t)(20 * 1000 * 1000));
        ch_pthread_join(&th);
    }
    CH_ASSERT_EQ(g_tj_rc, COEXEC_ETIMEDOUT);
    CU_ASSERT(coexec_now_ns() - t0 >= 20 * 1000 * 1000); /* not early */
    CH_ASSERT_EQ(atomic_load(&ran), 0);
    /* The unit was left alone: a second timed join times out too, then it
     * is resumed and joined. */
    CH_ASSERT_RC(coexec_thread_join_timed(g_tj, 1000), COEXEC_ETIMEDOUT);
    CH_ASSERT_OK(coexec_thread_resume(g_tj));
    CH_ASSERT_OK(coexec_thread_join_timed(g_tj, UINT64_MAX));
    CH_ASSERT_EQ(atomic_load(&ran), 1);
    CH_ASSERT_OK(coexec_thread_join_timed(g_tj, 0)); /* finished: at once */
    CH_ASSERT_OK(coexec_thread_free(&g_tj));
    ch_finalize();
}

static void t_timed_join_ult(void) { timed_join_of_parked(true); }
static void t_timed_join_external(void) { timed_join_of_parked(false); }

static void spin_ult(void *arg)
{
    uint64_t until = coexec_now_ns() + 20000;
    while (coexec_now_ns() < until)
        yield_once();
    atomic_fetch_add((atomic_int *)arg, 1);
}

static void t_timed_join_race(void)
{
    /* Deadlines about as long as the units: either result, never a hang,
     * every unit runs exactly once and is freed once. */
    ch_init(3);
    long rounds = ch_iters(600, 40);
    coexec_xstream_t x[3];
    for (int r = 0; r < 3; r++)
        CH_ASSERT_OK(coexec_xstream_by_rank(r, &x[r]));
    atomic_int ran = 0;
    long ok = 0, timedout = 0;
    for (long i = 0; i < rounds; i++) {
        coexec_thread_t t;
        CH_ASSERT_OK(coexec_thread_create_on(x[1 + (i & 1)], spin_ult, &ran,
                                             NULL, &t));
        int rc = coexec_thread_join_timed(t, (uint64_t)(i % 7) * 5000);
        if (rc == COEXEC_OK)
            ok++;
        else if (rc == COEXEC_ETIMEDOUT)
            timedout++;
        else
            CH_ASSERT_RC(rc, COEXEC_OK);
        CH_ASSERT_OK(coexec_thread_free(&t));
    }
    CH_ASSERT_EQ(atomic_load(&ran), rounds);
    CH_ASSERT_EQ(ok + timedout, rounds);
    printf("[%ld joined, %ld timed out] ", ok, timedout);
    ch_finalize();
}

static coexec_eventual_t g_tev;

static coexec_poll_status_t waiting_tasklet(coexec_poll_t *cx, void *arg)
{
    (void)arg;
    int rc = coexec_eventual_poll(&g_tev, cx, NULL);
    return rc == COEXEC_PENDING ? COEXEC_PENDING : COEXEC_READY;
}

static void t_timed_join_tasklet(void)
{
    ch_init(2);
    CH_ASSERT_OK(coexec_eventual_init(&g_tev, 0));
    coexec_xstream_t x1;
    CH_ASSERT_OK(coexec_xstream_by_rank(1, &x1));
    coexec_tasklet_t k;
    CH_ASSERT_OK(coexec_tasklet_create_on(x1, waiting_tasklet, NULL, &k));
    CH_ASSERT_RC(coexec_tasklet_join_timed(k, 5 * 1000 * 1000),
                 COEXEC_ETIMEDOUT);
    CH_ASSERT_OK(coexec_eventual_set(&g_tev, NULL, 0));
    CH_ASSERT_OK(coexec_tasklet_join_timed(k, 60ull * 1000 * 1000 * 1000));
    CH_ASSERT_OK(coexec_tasklet_free(&k));
    CH_ASSERT_OK(coexec_eventual_destroy(&g_tev));
    ch_finalize();
}

/* A service call that holds its thread until released. */
static atomic_int g_call_release;

static intptr_t held_call(void *arg)
{
    (void)arg;
    while (!atomic_load(&g_call_release))
        usleep(1000);
    return 42;
}

static coexec_request_t g_rq;
static int g_rq_rc;

static void *external_request_wait(void *arg)
{
    intptr_t ret = 0;
    g_rq_rc = coexec_request_wait_timed(&g_rq, &ret, (uint64_t)(intptr_t)arg);
    return NULL;
}

static void t_request_wait_timed(void)
{
    ch_init(2);
    atomic_store(&g_call_release, 0);
    memset(&g_rq, 0, sizeof g_rq);
    CH_ASSERT_OK(coexec_request_submit(&g_rq, held_call, NULL));
    intptr_t ret = 0;
    uint64_t t0 = coexec_now_ns();
    /* From the main ULT, then from an external thread: the call runs on. */
    CH_ASSERT_RC(coexec_request_wait_timed(&g_rq, &ret, 10 * 1000 * 1000),
                 COEXEC_ETIMEDOUT);
    CU_ASSERT(coexec_now_ns() - t0 >= 10 * 1000 * 1000);
    ch_pthread_t th;
    ch_pthread_start(&th, external_request_wait,
                     (void *)(intptr_t)(5 * 1000 * 1000));
    ch_pthread_join(&th);
    CH_ASSERT_EQ(g_rq_rc, COEXEC_ETIMEDOUT);
    CH_ASSERT_RC(coexec_request_wait_timed(&g_rq, &ret, 0), COEXEC_ETIMEDOUT);
    atomic_store(&g_call_release, 1);
    CH_ASSERT_OK(coexec_request_wait_timed(&g_rq, &ret, UINT64_MAX));
    CH_ASSERT_EQ(ret, 42);
    ret = 0;
    CH_ASSERT_OK(coexec_request_wait_timed(&g_rq, &ret, 0)); /* done: at once */
    CH_ASSERT_EQ(ret, 42);
    ch_finalize();
}

static const ch_test_t timed_join_tests[] = {
    {"request_wait", t_request_wait_timed},
    {"ult_joiner", t_timed_join_ult},
    {"external_joiner", t_timed_join_external},
    {"deadline_race", t_timed_join_race},
    {"tasklet", t_timed_join_tasklet},
    {NULL, NULL}};

/* ---- lock owners ------------------------------------------------------- */

static coexec_mutex_t g_mx;
static coexec_rwlock_t g_rw;
static int g_unlock_rc[2];

static void lock_and_exit(void *arg)
{
    (void)arg;
    CH_CHECK_RC(coexec_mutex_lock(&g_mx), COEXEC_OK);
    CH_CHECK_RC(coexec_rwlock_wrlock(&g_rw), COEXEC_OK);
}

static void unlock_other(void *arg)
{
    (void)arg;
    g_unlock_rc[0] = coexec_mutex_unlock(&g_mx);
    g_unlock_rc[1] = coexec_rwlock_unlock(&g_rw);
}

static void t_owner_reuse(void)
{
    ch_init(1);
    CH_ASSERT_OK(coexec_mutex_init(&g_mx, COEXEC_MUTEX_PLAIN));
    CH_ASSERT_OK(coexec_rwlock_init(&g_rw));
    coexec_xstream_t x0;
    CH_ASSERT_OK(coexec_xstream_by_rank(0, &x0));
    coexec_thread_t a, b;
    CH_ASSERT_OK(coexec_thread_create_on(x0, lock_and_exit, NULL, NULL, &a));
    void *desc = a.p;
    CH_ASSERT_OK(coexec_thread_free(&a));
    CH_ASSERT_OK(coexec_thread_create_on(x0, unlock_other, NULL, NULL, &b));
    CU_ASSERT_PTR_EQUAL(b.p, desc); /* the case under test: same descriptor */
    CH_ASSERT_OK(coexec_thread_free(&b));
    CH_ASSERT_EQ(g_unlock_rc[0], COEXEC_EPERM);
    CH_ASSERT_EQ(g_unlock_rc[1], COEXEC_EPERM);
    /* The main ULT is no owner either. */
    CH_ASSERT_RC(coexec_mutex_unlock(&g_mx), COEXEC_EPERM);
    CH_ASSERT_RC(coexec_rwlock_unlock(&g_rw), COEXEC_EPERM);
    ch_finalize();
}

static const ch_test_t owner_tests[] = {{"exited_owner", t_owner_reuse},
                                        {NULL, NULL}};

/* ======================================================================= */
/* recycle                                                                  */
/* ======================================================================= */

/* One wave: n units created by a ULT on stream 1 into the pools of streams
 * 1..3, held live (the ULTs on their stacks) until all have started, then
 * freed by a ULT on stream 2, so that descriptors and stacks leave one
 * stream's cache and come back through another's. */
typedef struct wave wave_t;
typedef struct {
    wave_t *w;
    long i;
} wave_slot_t;

struct wave {
    long n;
    int tasklet;
    wave_slot_t *slot;  /* each ULT's argument */
    coexec_thread_t *t;
    coexec_tasklet_t *k;
    void **stack;       /* each ULT's stack base, seen by itself */
    atomic_long started;
    atomic_long ran;
    atomic_int release; /* the ULTs may end */
    atomic_int created, freed;
    long bad;           /* create and free calls that failed */
};

static void wave_ult(void *arg)
{
    wave_slot_t *sl = arg;
    wave_t *w = sl->w;
    coexec_thread_t me;
    coexec_stack_info_t si = {0};
    if (coexec_thread_self(&me) == COEXEC_OK &&
        coexec_thread_get_stack(me, &si) == COEXEC_OK)
        w->stack[sl->i] = si.base;
    atomic_fetch_add(&w->started, 1);
    while (!atomic_load(&w->release))
        if (coexec_yield() != COEXEC_OK)
            sched_yield();
    atomic_fetch_add(&w->ran, 1);
}

static coexec_poll_status_t wave_tasklet(coexec_poll_t *cx, void *arg)
{
    (void)cx;
    wave_t *w = arg;
    atomic_fetch_add(&w->started, 1);
    atomic_fetch_add(&w->ran, 1);
    return COEXEC_READY;
}

static void wave_create(void *arg)
{
    wave_t *w = arg;
    for (long i = 0; i < w->n; i++) {
        coexec_pool_t p = ch_main_pool(1 + (int)(i % 3));
        int rc = w->tasklet
                     ? coexec_tasklet_create(p, wave_tasklet, w, &w->k[i])
                     : coexec_thread_create(p, wave_ult, &w->slot[i], NULL,
                                            &w->t[i]);
        if (rc != COEXEC_OK)
            w->bad++;
    }
    atomic_store(&w->created, 1);
}

static void wave_free(void *arg)
{
    wave_t *w = arg;
    for (long i = 0; i < w->n; i++) {
        int rc = w->tasklet ? coexec_tasklet_free(&w->k[i])
                            : coexec_thread_free(&w->t[i]);
        if (rc != COEXEC_OK)
            w->bad++;
    }
    atomic_store(&w->freed, 1);
}

static int cmp_ptr(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)*(void *const *)a, y = (uintptr_t)*(void *const *)b;
    return x < y ? -1 : x > y;
}

/* Sorts v[0..n) and returns how many distinct values it holds. */
static long distinct(void **v, long n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_ptr);
    long d = 0;
    for (long i = 0; i < n; i++)
        d += i == 0 || v[i] != v[i - 1];
    return d;
}

static void recycle_waves(int tasklet)
{
    ch_init(4);
    /* Around the caches' batch (64), then larger waves, the largest three
     * times (a unit lost on each would show as growth). */
    long big = ch_iters(3000, 300);
    long sizes[] = {1, 63, 64, 65, 127, 128, 129, 500, big, big, big};
    int nsizes = (int)(sizeof sizes / sizeof sizes[0]);
    long cap = 0;
    for (int s = 0; s < nsizes; s++)
        cap += sizes[s];
    void **descs = calloc((size_t)cap, sizeof *descs);
    void **stacks = calloc((size_t)cap, sizeof *stacks);
    long nd = 0, ns = 0;
    CH_ASSERT_EQ_FATAL(descs && stacks, 1);
    for (int s = 0; s < nsizes; s++) {
        wave_t w = {.n = sizes[s], .tasklet = tasklet};
        w.t = calloc((size_t)w.n, sizeof *w.t);
        w.k = calloc((size_t)w.n, sizeof *w.k);
        w.stack = calloc((size_t)w.n, sizeof *w.stack);
        w.slot = calloc((size_t)w.n, sizeof *w.slot);
        CH_ASSERT_EQ_FATAL(w.t && w.k && w.stack && w.slot, 1);
        for (long i = 0; i < w.n; i++)
            w.slot[i] = (wave_slot_t){&w, i};
        coexec_thread_t c, f;
        ch_spawn_on(1, wave_create, &w, &c);
        CH_WAIT(atomic_load(&w.created));
        CH_WAIT(atomic_load(&w.started) == w.n);
        /* All live at once: each its own descriptor, each running ULT its
         * own stack. */
        void **v = calloc((size_t)w.n, sizeof *v);
        CH_ASSERT_EQ_FATAL(v != NULL, 1);
        for (long i = 0; i < w.n; i++)
            v[i] = tasklet ? (void *)w.k[i].p : (void *)w.t[i].p;
        memcpy(descs + nd, v, (size_t)w.n * sizeof *v);
        CH_ASSERT_EQ(distinct(v, w.n), w.n);
        nd = distinct(descs, nd + w.n);
        if (!tasklet) {
            long seen = 0;
            for (long i = 0; i < w.n; i++)
                if (w.stack[i])
                    v[seen++] = w.stack[i];
            CH_ASSERT_EQ(seen, w.n);
            memcpy(stacks + ns, v, (size_t)seen * sizeof *v);
            CH_ASSERT_EQ(distinct(v, seen), w.n);
            ns = distinct(stacks, ns + seen);
        }
        free(v);
        atomic_store(&w.release, 1);
        ch_spawn_on(2, wave_free, &w, &f);
        CH_WAIT(atomic_load(&w.freed));
        ch_free_threads(&c, 1);
        ch_free_threads(&f, 1);
        CH_ASSERT_EQ(w.bad, 0);
        CH_ASSERT_EQ(atomic_load(&w.ran), w.n);
        free(w.t);
        free(w.k);
        free(w.stack);
        free(w.slot);
    }
    /* Reuse: the waves together needed no more descriptors or stacks than
     * the largest wave plus what the four streams' caches may hold aside
     * (two batches of 64 each) and the harness's own units. */
    long bound = big + 4 * 2 * 64 + 64;
    if (nd > bound)
        ch_fail_at(__FILE__, __LINE__, "%ld distinct descriptors for waves "
                   "of at most %ld units (bound %ld)", nd, big, bound);
    if (!tasklet && ns > bound)
        ch_fail_at(__FILE__, __LINE__, "%ld distinct stacks for waves of at "
                   "most %ld ULTs (bound %ld)", ns, big, bound);
    free(descs);
    free(stacks);
    ch_finalize();
}

static void t_recycle_ult(void) { recycle_waves(0); }
static void t_recycle_tasklet(void) { recycle_waves(1); }

static const ch_test_t recycle_tests[] = {{"ult", t_recycle_ult},
                                          {"tasklet", t_recycle_tasklet},
                                          {NULL, NULL}};

static const ch_suite_t suites[] = {{"double_free", double_free_tests},
                                    {"join_free", join_free_tests},
                                    {"stale", stale_tests},
                                    {"timed_join", timed_join_tests},
                                    {"owner", owner_tests},
                                    {"recycle", recycle_tests},
                                    {NULL, NULL}};

int main(int argc, char **argv)
{
    return ch_main(argc, argv, suites);
}
