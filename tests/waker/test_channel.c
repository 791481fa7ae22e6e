/*
 * tests/waker/test_channel.c: channels (suite "channel" of test_waker).
 *
 * FIFO order with one producer and one consumer of every kind (ULT,
 * external thread, tasklet), MPMC with 4 producers and 4 consumers on 4
 * streams (every message received exactly once, each producer's messages
 * in order), capacity-1 blocking, try_send/try_recv, close releasing
 * blocked receivers and senders, draining after close, timed send/recv,
 * tasklet poll_send/poll_recv, argument/handle errors, destroy with
 * waiters, count.
 */
#define _GNU_SOURCE
#include "wk.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct {
    uint64_t seq;
    uint32_t producer;
    uint32_t pad;
    uint64_t check;
} msg_t;

static msg_t make_msg(uint32_t producer, uint64_t seq)
{
    msg_t m = {seq, producer, 0xabcd, ch_mix64(seq ^ ((uint64_t)producer << 48))};
    return m;
}

static int msg_ok(const msg_t *m)
{
    return m->pad == 0xabcd && m->check == ch_mix64(m->seq ^ ((uint64_t)m->producer << 48));
}

/* ======================================================================= */
/* FIFO, single producer and consumer                                       */
/* ======================================================================= */

typedef struct {
    coexec_channel_t ch;
    long n;
    atomic_long received;
    atomic_long bad; /* out of order or corrupt */
    atomic_int producer_done;
    atomic_long send_polls, recv_polls;
    long next_send; /* tasklet producer's position */
    long next_recv; /* tasklet consumer's position */
} spsc_t;

static void spsc_produce(void *arg)
{
    spsc_t *s = arg;
    for (long i = 0; i < s->n; i++) {
        msg_t m = make_msg(1, (uint64_t)i);
        int rc = coexec_channel_send(&s->ch, &m);
        if (rc != COEXEC_OK) {
            CH_CHECK_RC(rc, COEXEC_OK);
            break;
        }
    }
    atomic_store(&s->producer_done, 1);
}

static void spsc_consume(void *arg)
{
    spsc_t *s = arg;
    for (long i = 0; i < s->n; i++) {
        msg_t m;
        memset(&m, 0, sizeof m);
        int rc = coexec_channel_recv(&s->ch, &m);
        if (rc != COEXEC_OK) {
            CH_CHECK_RC(rc, COEXEC_OK);
            break;
        }
        if (m.seq != (uint64_t)i || !msg_ok(&m))
            atomic_fetch_add(&s->bad, 1);
        atomic_fetch_add(&s->received, 1);
    }
}

static coexec_poll_status_t spsc_produce_tasklet(coexec_poll_t *cx, void *arg)
{
    spsc_t *s = arg;
    atomic_fetch_add(&s->send_polls, 1);
    while (s->next_send < s->n) {
        msg_t m = make_msg(1, (uint64_t)s->next_send);
        int rc = coexec_channel_poll_send(&s->ch, cx, &m);
        if (rc == COEXEC_PENDING)
            return COEXEC_PENDING;
        if (rc != COEXEC_READY) {
            CH_CHECK_RC(rc, COEXEC_READY);
            break;
        }
        s->next_send++;
    }
    atomic_store(&s->producer_done, 1);
    return COEXEC_READY;
}

static coexec_poll_status_t spsc_consume_tasklet(coexec_poll_t *cx, void *arg)
{
    spsc_t *s = arg;
    atomic_fetch_add(&s->recv_polls, 1);
    while (s->next_recv < s->n) {
        msg_t m;
        memset(&m, 0, sizeof m);
        int rc = coexec_channel_poll_recv(&s->ch, cx, &m);
        if (rc == COEXEC_PENDING)
            return COEXEC_PENDING;
        if (rc != COEXEC_READY) {
            CH_CHECK_RC(rc, COEXEC_READY);
            break;
        }
        if (m.seq != (uint64_t)s->next_recv || !msg_ok(&m))
            atomic_fetch_add(&s->bad, 1);
        atomic_fetch_add(&s->received, 1);
        s->next_recv++;
    }
    return COEXEC_READY;
}

/* kind: 0 ULT, 1 external thread, 2 tasklet */
static void t_fifo_spsc(void)
{
    ch_init(2);
    ch_stream_t s1, s2;
    CH_ASSERT_OK_FATAL(ch_stream_create(&s1, COEXEC_SCHED_BASIC_WAIT));
    CH_ASSERT_OK_FATAL(ch_stream_create(&s2, COEXEC_SCHED_BASIC_WAIT));
    static const size_t caps[] = {1, 3, 64};
    static const char *const kind_name[] = {"ULT", "thread", "tasklet"};
    long n = ch_iters(20000, 500);
    for (int pk = 0; pk < 3; pk++)
        for (int ck = 0; ck < 3; ck++)
            for (size_t c = 0; c < 3; c++) {
                spsc_t *s = calloc(1, sizeof *s);
                s->n = (pk == 1 || ck == 1) ? n / 4 : n;
                CH_ASSERT_OK_FATAL(coexec_channel_init(&s->ch, sizeof(msg_t), caps[c]));
                coexec_thread_t pt = {0}, ct = {0};
                coexec_tasklet_t pkk = {0}, ckk = {0};
                ch_pthread_t pth = {0}, cth = {0};
                if (ck == 0)
                    CH_ASSERT_OK_FATAL(coexec_thread_create(s2.pool, spsc_consume, s, NULL, &ct));
                else if (ck == 1)
                    ch_pthread_run(&cth, spsc_consume, s);
                else
                    CH_ASSERT_OK_FATAL(coexec_tasklet_create(s2.pool, spsc_consume_tasklet, s, &ckk));
                if (pk == 0)
                    CH_ASSERT_OK_FATAL(coexec_thread_create(s1.pool, spsc_produce, s, NULL, &pt));
                else if (pk == 1)
                    ch_pthread_run(&pth, spsc_produce, s);
                else
                    CH_ASSERT_OK_FATAL(coexec_tasklet_create(s1.pool, spsc_produce_tasklet, s, &pkk));
                /* wait without joining early (a join would run it here) */
                CH_WAIT(atomic_load(&s->received) == s->n && atomic_load(&s->producer_done));
                if (pk == 0)
                    CH_ASSERT_OK(coexec_thread_free(&pt));
                else if (pk == 1)
                    ch_pthread_join(&pth);
                else {
                    CH_WAIT(ch_tasklet_state(pkk) == COEXEC_UNIT_TERMINATED);
                    CH_ASSERT_OK(coexec_tasklet_free(&pkk));
                }
                if (ck == 0)
                    CH_ASSERT_OK(coexec_thread_free(&ct));
                else if (ck == 1)
                    ch_pthread_join(&cth);
                else {
                    CH_WAIT(ch_tasklet_state(ckk) == COEXEC_UNIT_TERMINATED);
                    CH_ASSERT_OK(coexec_tasklet_free(&ckk));
                }
                if (atomic_load(&s->received) != s->n || atomic_load(&s->bad))
                    fprintf(stderr, "    %s -> %s, capacity %zu\n", kind_name[pk],
                            kind_name[ck], caps[c]);
                CH_ASSERT_EQ(atomic_load(&s->received), s->n);
                CH_ASSERT_EQ(atomic_load(&s->bad), 0);
                size_t cnt = 99;
                CH_ASSERT_OK(coexec_channel_count(&s->ch, &cnt));
                CH_ASSERT_EQ(cnt, 0);
                /* a tasklet is polled again only after a wake: far fewer
                 * polls than messages when the other side keeps up is not
                 * a verdict, but never more than one per message plus one */
                if (pk == 2)
                    CU_ASSERT(atomic_load(&s->send_polls) <= s->n + 1);
                if (ck == 2)
                    CU_ASSERT(atomic_load(&s->recv_polls) <= s->n + 1);
                CH_ASSERT_OK(coexec_channel_destroy(&s->ch));
                free(s);
            }
    CH_ASSERT_OK(ch_stream_free(&s1));
    CH_ASSERT_OK(ch_stream_free(&s2));
    ch_finalize();
}

/* ======================================================================= */
/* MPMC                                                                     */
/* ======================================================================= */

enum { MP_P = 4, MP_C = 4, MP_XP = 2, MP_XC = 2 };

typedef struct {
    coexec_channel_t ch;
    long per; /* messages per producer */
    atomic_uchar *seen; /* [producer][seq] */
    atomic_long received;
    atomic_long bad;
    atomic_long closed_seen; /* consumers that got ECLOSED */
    atomic_int producers_done;
    int nprod;
} mpmc_t;

typedef struct {
    mpmc_t *m;
    uint32_t id;
} mp_arg_t;

static void mp_produce(void *arg)
{
    mp_arg_t *a = arg;
    for (long i = 0; i < a->m->per; i++) {
        msg_t msg = make_msg(a->id, (uint64_t)i);
        int rc = coexec_channel_send(&a->m->ch, &msg);
        if (rc != COEXEC_OK) {
            CH_CHECK_RC(rc, COEXEC_OK);
            break;
        }
    }
    atomic_fetch_add(&a->m->producers_done, 1);
}

static void mp_consume(void *arg)
{
    mp_arg_t *a = arg;
    mpmc_t *m = a->m;
    uint64_t *last = calloc((size_t)m->nprod, sizeof *last); /* seq + 1 */
    for (;;) {
        msg_t msg;
        int rc = coexec_channel_recv(&m->ch, &msg);
        if (rc == COEXEC_ECLOSED) {
            atomic_fetch_add(&m->closed_seen, 1);
            break;
        }
        if (rc != COEXEC_OK) {
            CH_CHECK_RC(rc, COEXEC_OK);
            break;
        }
        if (!msg_ok(&msg) || msg.producer >= (uint32_t)m->nprod ||
            msg.seq >= (uint64_t)m->per) {
            atomic_fetch_add(&m->bad, 1);
            continue;
        }
        /* FIFO: one producer's messages reach one consumer in order */
        if (msg.seq + 1 <= last[msg.producer])
            atomic_fetch_add(&m->bad, 1);
        last[msg.producer] = msg.seq + 1;
        atomic_fetch_add(&m->seen[(size_t)msg.producer * (size_t)m->per + msg.seq], 1);
        atomic_fetch_add(&m->received, 1);
    }
    free(last);
}

static void t_mpmc(void)
{
    ch_init(WK_NSTREAMS);
    static const size_t caps[] = {1, 16};
    for (int variant = 0; variant < 4; variant++) {
        /* variants 2 and 3 add external producer and consumer threads */
        int ext = variant >= 2;
        mpmc_t *m = calloc(1, sizeof *m);
        m->per = ch_iters(ext ? 5000 : 20000, 200);
        m->nprod = MP_P + (ext ? MP_XP : 0);
        int ncons = MP_C + (ext ? MP_XC : 0);
        m->seen = calloc((size_t)m->nprod * (size_t)m->per, sizeof *m->seen);
        CH_ASSERT_OK_FATAL(coexec_channel_init(&m->ch, sizeof(msg_t), caps[variant % 2]));
        mp_arg_t pa[MP_P + MP_XP], ca[MP_C + MP_XC];
        coexec_thread_t pt[MP_P], ct[MP_C];
        ch_pthread_t pth[MP_XP], cth[MP_XC];
        for (int i = 0; i < ncons; i++) {
            ca[i] = (mp_arg_t){m, (uint32_t)i};
            if (i < MP_C)
                CH_ASSERT_OK_FATAL(coexec_thread_create_on(ch_xstream(i % WK_NSTREAMS), mp_consume,
                                                           &ca[i], NULL, &ct[i]));
            else
                ch_pthread_run(&cth[i - MP_C], mp_consume, &ca[i]);
        }
        for (int i = 0; i < m->nprod; i++) {
            pa[i] = (mp_arg_t){m, (uint32_t)i};
            if (i < MP_P)
                CH_ASSERT_OK_FATAL(coexec_thread_create_on(ch_xstream(i % WK_NSTREAMS), mp_produce,
                                                           &pa[i], NULL, &pt[i]));
            else
                ch_pthread_run(&pth[i - MP_P], mp_produce, &pa[i]);
        }
        for (int i = 0; i < MP_P; i++)
            CH_ASSERT_OK(coexec_thread_free(&pt[i]));
        for (int i = MP_P; i < m->nprod; i++)
            ch_pthread_join(&pth[i - MP_P]);
        CH_ASSERT_EQ(atomic_load(&m->producers_done), m->nprod);
        /* every message is sent: close; consumers drain, then ECLOSED */
        CH_ASSERT_OK(coexec_channel_close(&m->ch));
        for (int i = 0; i < MP_C; i++)
            CH_ASSERT_OK(coexec_thread_free(&ct[i]));
        for (int i = MP_C; i < ncons; i++)
            ch_pthread_join(&cth[i - MP_C]);
        long total = (long)m->nprod * m->per;
        CH_ASSERT_EQ(atomic_load(&m->received), total);
        CH_ASSERT_EQ(atomic_load(&m->bad), 0);
        CH_ASSERT_EQ(atomic_load(&m->closed_seen), ncons);
        long once = 0;
        for (long i = 0; i < total; i++)
            once += atomic_load(&m->seen[i]) == 1;
        CH_ASSERT_EQ(once, total);
        CH_ASSERT_OK(coexec_channel_destroy(&m->ch));
        free(m->seen);
        free(m);
    }
    ch_finalize();
}

/* ======================================================================= */
/* capacity 1, try forms, count                                             */
/* ======================================================================= */

typedef struct {
    coexec_channel_t *ch;
    int n;
    atomic_int done_ops; /* sends (recvs) that returned */
    atomic_int rc;       /* first error */
    msg_t got[4];
} blk_t;

static void blk_send_ult(void *arg)
{
    blk_t *b = arg;
    for (int i = 0; i < b->n; i++) {
        msg_t m = make_msg(7, (uint64_t)i);
        int rc = coexec_channel_send(b->ch, &m);
        if (rc != COEXEC_OK) {
            atomic_store(&b->rc, rc);
            return;
        }
        atomic_fetch_add(&b->done_ops, 1);
    }
}

static void blk_recv_ult(void *arg)
{
    blk_t *b = arg;
    for (int i = 0; i < b->n; i++) {
        int rc = coexec_channel_recv(b->ch, &b->got[i]);
        if (rc != COEXEC_OK) {
            atomic_store(&b->rc, rc);
            return;
        }
        atomic_fetch_add(&b->done_ops, 1);
    }
}

static void t_capacity_one(void)
{
    ch_init(2);
    ch_stream_t s;
    CH_ASSERT_OK_FATAL(ch_stream_create(&s, COEXEC_SCHED_BASIC_WAIT));
    coexec_channel_t ch;
    CH_ASSERT_OK_FATAL(coexec_channel_init(&ch, sizeof(msg_t), 1));
    size_t cnt = 99;
    /* a sender of 3: the first send fits, the second blocks */
    blk_t b = {&ch, 3, 0, 0, {{0}}};
    coexec_thread_t t;
    CH_ASSERT_OK_FATAL(coexec_thread_create(s.pool, blk_send_ult, &b, NULL, &t));
    for (int i = 0; i < 3; i++) {
        CH_WAIT(atomic_load(&b.done_ops) == i + 1 || atomic_load(&b.done_ops) == 3);
        if (i < 2)
            CH_WAIT(ch_thread_state(t) == COEXEC_UNIT_BLOCKED);
        CH_ASSERT_EQ(atomic_load(&b.done_ops), i + 1);
        CH_ASSERT_OK(coexec_channel_count(&ch, &cnt));
        CH_ASSERT_EQ(cnt, 1);
        msg_t x = make_msg(0, 0);
        CH_ASSERT_RC(coexec_channel_try_send(&ch, &x), COEXEC_EAGAIN); /* full */
        msg_t m;
        CH_ASSERT_OK(coexec_channel_recv(&ch, &m));
        CH_ASSERT_EQ(m.seq, i);
        CU_ASSERT(msg_ok(&m));
    }
    CH_ASSERT_OK(coexec_thread_free(&t));
    CH_ASSERT_RC(atomic_load(&b.rc), COEXEC_OK);
    CH_ASSERT_OK(coexec_channel_count(&ch, &cnt));
    CH_ASSERT_EQ(cnt, 0);
    /* a receiver of 2 blocks on the empty channel */
    blk_t r = {&ch, 2, 0, 0, {{0}}};
    CH_ASSERT_OK_FATAL(coexec_thread_create(s.pool, blk_recv_ult, &r, NULL, &t));
    for (int i = 0; i < 2; i++) {
        CH_WAIT(ch_thread_state(t) == COEXEC_UNIT_BLOCKED);
        CH_ASSERT_EQ(atomic_load(&r.done_ops), i);
        msg_t m;
        CH_ASSERT_RC(coexec_channel_try_recv(&ch, &m), COEXEC_EAGAIN); /* empty */
        m = make_msg(3, (uint64_t)(100 + i));
        CH_ASSERT_OK(coexec_channel_send(&ch, &m));
        CH_WAIT(atomic_load(&r.done_ops) == i + 1);
    }
    CH_ASSERT_OK(coexec_thread_free(&t));
    CH_ASSERT_RC(atomic_load(&r.rc), COEXEC_OK);
    CH_ASSERT_EQ(r.got[0].seq, 100);
    CH_ASSERT_EQ(r.got[1].seq, 101);
    CU_ASSERT(msg_ok(&r.got[0]) && msg_ok(&r.got[1]));
    CH_ASSERT_OK(coexec_channel_destroy(&ch));
    CH_ASSERT_OK(ch_stream_free(&s));
    ch_finalize();
}

static atomic_int g_try_ok;

static void try_ops_fn(void *arg)
{
    coexec_channel_t *ch = arg;
    /* capacity 4, empty on entry */
    msg_t m;
    size_t cnt = 99;
    CH_CHECK_RC(coexec_channel_try_recv(ch, &m), COEXEC_EAGAIN);
    for (int i = 0; i < 4; i++) {
        m = make_msg(2, (uint64_t)i);
        CH_CHECK_RC(coexec_channel_try_send(ch, &m), COEXEC_OK);
        CH_CHECK_RC(coexec_channel_count(ch, &cnt), COEXEC_OK);
        CH_CHECK_EQ(cnt, i + 1);
    }
    m = make_msg(2, 99);
    CH_CHECK_RC(coexec_channel_try_send(ch, &m), COEXEC_EAGAIN);
    for (int i = 0; i < 4; i++) {
        memset(&m, 0, sizeof m);
        CH_CHECK_RC(coexec_channel_try_recv(ch, &m), COEXEC_OK);
        CH_CHECK_EQ(m.seq, i);
        CH_CHECK(msg_ok(&m));
    }
    CH_CHECK_RC(coexec_channel_try_recv(ch, &m), COEXEC_EAGAIN);
    CH_CHECK_RC(coexec_channel_count(ch, &cnt), COEXEC_OK);
    CH_CHECK_EQ(cnt, 0);
    atomic_fetch_add(&g_try_ok, 1);
}

static void t_try_ops(void)
{
    ch_init(2);
    ch_stream_t s;
    CH_ASSERT_OK_FATAL(ch_stream_create(&s, COEXEC_SCHED_BASIC_WAIT));
    coexec_channel_t ch;
    CH_ASSERT_OK_FATAL(coexec_channel_init(&ch, sizeof(msg_t), 4));
    atomic_store(&g_try_ok, 0);
    try_ops_fn(&ch);                                        /* main ULT */
    CH_ASSERT_OK(ch_run_ult_in(s.pool, try_ops_fn, &ch));     /* ULT */
    CH_ASSERT_OK(ch_run_tasklet_in(s.pool, try_ops_fn, &ch)); /* tasklet */
    ch_pthread_t th;
    ch_pthread_run(&th, try_ops_fn, &ch);                     /* thread */
    ch_pthread_join(&th);
    CH_ASSERT_EQ(atomic_load(&g_try_ok), 4);
    /* wrap around the ring many times, odd message size */
    coexec_channel_t odd;
    CH_ASSERT_OK_FATAL(coexec_channel_init(&odd, 3, 5));
    int bad = 0;
    for (int i = 0; i < 200; i++) {
        unsigned char in[3] = {(unsigned char)i, (unsigned char)(i * 3), (unsigned char)~i};
        unsigned char out[3] = {0, 0, 0};
        CH_ASSERT_OK(coexec_channel_try_send(&odd, in));
        if (i % 3 == 2) {
            CH_ASSERT_OK(coexec_channel_try_send(&odd, in));
            CH_ASSERT_OK(coexec_channel_try_recv(&odd, out));
            CH_ASSERT_OK(coexec_channel_try_recv(&odd, out));
        } else {
            CH_ASSERT_OK(coexec_channel_try_recv(&odd, out));
        }
        bad += memcmp(in, out, 3) != 0;
    }
    CH_ASSERT_EQ(bad, 0);
    CH_ASSERT_OK(coexec_channel_destroy(&odd));
    CH_ASSERT_OK(coexec_channel_destroy(&ch));
    CH_ASSERT_OK(ch_stream_free(&s));
    ch_finalize();
}

/* ======================================================================= */
/* close                                                                    */
/* ======================================================================= */

typedef struct {
    coexec_channel_t *ch;
    atomic_int arrived;
    atomic_int closed;  /* waiters that got ECLOSED */
    atomic_int other;   /* waiters that got anything else */
    atomic_int polls;
} closew_t;

static void close_recv_fn(void *arg)
{
    closew_t *c = arg;
    msg_t m;
    atomic_fetch_add(&c->arrived, 1);
    int rc = coexec_channel_recv(c->ch, &m);
    atomic_fetch_add(rc == COEXEC_ECLOSED ? &c->closed : &c->other, 1);
    if (rc != COEXEC_ECLOSED)
        CH_CHECK_RC(rc, COEXEC_ECLOSED);
}

static void close_send_fn(void *arg)
{
    closew_t *c = arg;
    msg_t m = make_msg(9, 9);
    atomic_fetch_add(&c->arrived, 1);
    int rc = coexec_channel_send(c->ch, &m);
    atomic_fetch_add(rc == COEXEC_ECLOSED ? &c->closed : &c->other, 1);
    if (rc != COEXEC_ECLOSED)
        CH_CHECK_RC(rc, COEXEC_ECLOSED);
}

static coexec_poll_status_t close_recv_tasklet(coexec_poll_t *cx, void *arg)
{
    closew_t *c = arg;
    msg_t m;
    if (atomic_fetch_add(&c->polls, 1) == 0)
        atomic_fetch_add(&c->arrived, 1);
    int rc = coexec_channel_poll_recv(c->ch, cx, &m);
    if (rc == COEXEC_PENDING)
        return COEXEC_PENDING;
    atomic_fetch_add(rc == COEXEC_ECLOSED ? &c->closed : &c->other, 1);
    if (rc != COEXEC_ECLOSED)
        CH_CHECK_RC(rc, COEXEC_ECLOSED);
    return COEXEC_READY;
}

static coexec_poll_status_t close_send_tasklet(coexec_poll_t *cx, void *arg)
{
    closew_t *c = arg;
    msg_t m = make_msg(9, 9);
    if (atomic_fetch_add(&c->polls, 1) == 0)
        atomic_fetch_add(&c->arrived, 1);
    int rc = coexec_channel_poll_send(c->ch, cx, &m);
    if (rc == COEXEC_PENDING)
        return COEXEC_PENDING;
    atomic_fetch_add(rc == COEXEC_ECLOSED ? &c->closed : &c->other, 1);
    if (rc != COEXEC_ECLOSED)
        CH_CHECK_RC(rc, COEXEC_ECLOSED);
    return COEXEC_READY;
}

static void t_close(void)
{
    ch_init(WK_NSTREAMS);
    enum { NU = 6, NP = 2 };
    for (int senders = 0; senders < 2; senders++) {
        coexec_channel_t ch;
        CH_ASSERT_OK_FATAL(coexec_channel_init(&ch, sizeof(msg_t), 2));
        if (senders) { /* full: senders block */
            for (int i = 0; i < 2; i++) {
                msg_t m = make_msg(1, (uint64_t)i);
                CH_ASSERT_OK(coexec_channel_send(&ch, &m));
            }
        }
        closew_t c;
        memset(&c, 0, sizeof c);
        c.ch = &ch;
        coexec_thread_t t[NU];
        coexec_tasklet_t k;
        ch_pthread_t th[NP];
        for (int i = 0; i < NU; i++)
            CH_ASSERT_OK_FATAL(coexec_thread_create_on(ch_xstream(i % WK_NSTREAMS),
                                                       senders ? close_send_fn : close_recv_fn,
                                                       &c, NULL, &t[i]));
        CH_ASSERT_OK_FATAL(coexec_tasklet_create_on(ch_xstream(1), senders ? close_send_tasklet
                                                                      : close_recv_tasklet,
                                                    &c, &k));
        for (int i = 0; i < NP; i++)
            ch_pthread_run(&th[i], senders ? close_send_fn : close_recv_fn, &c);
        CH_WAIT(atomic_load(&c.arrived) == NU + NP + 1);
        for (int i = 0; i < NU; i++)
            CH_WAIT(ch_thread_state(t[i]) == COEXEC_UNIT_BLOCKED);
        CH_WAIT(ch_tasklet_state(k) == COEXEC_UNIT_BLOCKED);
        CH_ASSERT_EQ(atomic_load(&c.closed) + atomic_load(&c.other), 0);
        CH_ASSERT_OK(coexec_channel_close(&ch));
        for (int i = 0; i < NU; i++)
            CH_ASSERT_OK(coexec_thread_free(&t[i]));
        for (int i = 0; i < NP; i++)
            ch_pthread_join(&th[i]);
        CH_WAIT(ch_tasklet_state(k) == COEXEC_UNIT_TERMINATED);
        CH_ASSERT_OK(coexec_tasklet_free(&k));
        CH_ASSERT_EQ(atomic_load(&c.closed), NU + NP + 1);
        CH_ASSERT_EQ(atomic_load(&c.other), 0);
        CH_ASSERT_EQ(atomic_load(&c.polls), 2);
        /* after close: sends fail, queued messages still come out, then
         * ECLOSED */
        msg_t m = make_msg(1, 50);
        size_t cnt = 99;
        CH_ASSERT_RC(coexec_channel_send(&ch, &m), COEXEC_ECLOSED);
        CH_ASSERT_RC(coexec_channel_try_send(&ch, &m), COEXEC_ECLOSED);
        CH_ASSERT_RC(coexec_channel_send_timed(&ch, &m, 1000), COEXEC_ECLOSED);
        CH_ASSERT_OK(coexec_channel_count(&ch, &cnt));
        CH_ASSERT_EQ(cnt, senders ? 2 : 0);
        if (senders) {
            CH_ASSERT_OK(coexec_channel_recv(&ch, &m));
            CH_ASSERT_EQ(m.seq, 0);
            CH_ASSERT_OK(coexec_channel_try_recv(&ch, &m));
            CH_ASSERT_EQ(m.seq, 1);
        }
        CH_ASSERT_RC(coexec_channel_recv(&ch, &m), COEXEC_ECLOSED);
        CH_ASSERT_RC(coexec_channel_try_recv(&ch, &m), COEXEC_ECLOSED);
        CH_ASSERT_RC(coexec_channel_recv_timed(&ch, &m, 1000), COEXEC_ECLOSED);
        CH_ASSERT_OK(coexec_channel_close(&ch)); /* twice: harmless */
        CH_ASSERT_OK(coexec_channel_destroy(&ch));
    }
    /* closed with messages queued: receivers get them before ECLOSED */
    coexec_channel_t ch;
    CH_ASSERT_OK_FATAL(coexec_channel_init(&ch, sizeof(msg_t), 8));
    for (int i = 0; i < 5; i++) {
        msg_t m = make_msg(4, (uint64_t)i);
        CH_ASSERT_OK(coexec_channel_send(&ch, &m));
    }
    CH_ASSERT_OK(coexec_channel_close(&ch));
    coexec_pool_t p1;
    CH_ASSERT_OK_FATAL(coexec_xstream_get_main_pool(ch_xstream(1), &p1));
    blk_t r = {&ch, 4, 0, 0, {{0}}};
    CH_ASSERT_OK(ch_run_ult_in(p1, blk_recv_ult, &r));
    CH_ASSERT_RC(atomic_load(&r.rc), COEXEC_OK);
    CH_ASSERT_EQ(atomic_load(&r.done_ops), 4);
    for (int i = 0; i < 4; i++) {
        CH_ASSERT_EQ(r.got[i].seq, i);
        CU_ASSERT(msg_ok(&r.got[i]));
    }
    msg_t last;
    CH_ASSERT_OK(coexec_channel_recv(&ch, &last));
    CH_ASSERT_EQ(last.seq, 4);
    CH_ASSERT_RC(coexec_channel_recv(&ch, &last), COEXEC_ECLOSED);
    CH_ASSERT_OK(coexec_channel_destroy(&ch));
    ch_finalize();
}

/* ======================================================================= */
/* timed                                                                    */
/* ======================================================================= */

typedef struct {
    coexec_channel_t *ch;
    int send; /* 1: send_timed, 0: recv_timed */
    uint64_t timeout, elapsed;
    atomic_int arrived;
    atomic_int rc;
    msg_t m;
} chtimed_t;

static void chtimed_fn(void *arg)
{
    chtimed_t *w = arg;
    atomic_store(&w->arrived, 1);
    uint64_t t0 = coexec_now_ns();
    int rc = w->send ? coexec_channel_send_timed(w->ch, &w->m, w->timeout)
                     : coexec_channel_recv_timed(w->ch, &w->m, w->timeout);
    w->elapsed = coexec_now_ns() - t0;
    atomic_store(&w->rc, rc);
}

static void scribble_ult(void *arg)
{
    volatile char junk[2048];
    for (size_t i = 0; i < sizeof junk; i++)
        junk[i] = (char)(i * 13);
    (void)arg;
}

static void t_timed(void)
{
    ch_init(2);
    ch_stream_t s;
    CH_ASSERT_OK_FATAL(ch_stream_create(&s, COEXEC_SCHED_BASIC_WAIT));
    const uint64_t short_ns = 20 * 1000 * 1000ull, long_ns = 60ull * 1000 * 1000 * 1000;
    coexec_channel_t ch;
    CH_ASSERT_OK_FATAL(coexec_channel_init(&ch, sizeof(msg_t), 1));
    size_t cnt;
    /* time out: recv on empty, send on full; main ULT, ULT, thread */
    for (int send = 0; send < 2; send++) {
        if (send) {
            msg_t f = make_msg(5, 500);
            CH_ASSERT_OK(coexec_channel_send(&ch, &f));
        }
        for (int who = 0; who < 3; who++) {
            chtimed_t w;
            memset(&w, 0, sizeof w);
            w.ch = &ch;
            w.send = send;
            w.timeout = short_ns;
            w.m = make_msg(5, 600);
            atomic_init(&w.rc, 1);
            if (who == 0) {
                chtimed_fn(&w);
            } else if (who == 1) {
                CH_ASSERT_OK(ch_run_ult_in(s.pool, chtimed_fn, &w));
                CH_ASSERT_OK(ch_run_ult_in(s.pool, scribble_ult, NULL));
            } else {
                ch_pthread_t th;
                ch_pthread_run(&th, chtimed_fn, &w);
                ch_pthread_join(&th);
            }
            CH_ASSERT_RC(atomic_load(&w.rc), COEXEC_ETIMEDOUT);
            CU_ASSERT(w.elapsed >= short_ns);
            CH_ASSERT_OK(coexec_channel_count(&ch, &cnt));
            CH_ASSERT_EQ(cnt, send ? 1 : 0); /* nothing moved */
        }
        /* the timed-out waiters are gone: the channel still works */
        if (send) {
            msg_t m;
            CH_ASSERT_OK(coexec_channel_recv(&ch, &m));
            CH_ASSERT_EQ(m.seq, 500);
        } else {
            msg_t m = make_msg(5, 501);
            CH_ASSERT_OK(coexec_channel_send(&ch, &m));
            CH_ASSERT_OK(coexec_channel_recv(&ch, &m));
            CH_ASSERT_EQ(m.seq, 501);
        }
    }
    /* timeout 0 never waits */
    msg_t m0 = make_msg(5, 700);
    CH_ASSERT_RC(coexec_channel_recv_timed(&ch, &m0, 0), COEXEC_ETIMEDOUT);
    CH_ASSERT_OK(coexec_channel_send_timed(&ch, &m0, 0));
    CH_ASSERT_RC(coexec_channel_send_timed(&ch, &m0, 0), COEXEC_ETIMEDOUT);
    memset(&m0, 0, sizeof m0);
    CH_ASSERT_OK(coexec_channel_recv_timed(&ch, &m0, 0));
    CH_ASSERT_EQ(m0.seq, 700);
    /* in time: a blocked ULT (recv, then send) and a thread */
    for (int send = 0; send < 2; send++)
        for (int who = 0; who < 2; who++) {
            if (send) {
                msg_t f = make_msg(6, 800);
                CH_ASSERT_OK(coexec_channel_send(&ch, &f));
            }
            chtimed_t w;
            memset(&w, 0, sizeof w);
            w.ch = &ch;
            w.send = send;
            w.timeout = long_ns;
            w.m = make_msg(6, 900);
            atomic_init(&w.rc, 1);
            coexec_thread_t t;
            ch_pthread_t th;
            if (who == 0) {
                CH_ASSERT_OK_FATAL(coexec_thread_create(s.pool, chtimed_fn, &w, NULL, &t));
                CH_WAIT(atomic_load(&w.arrived) && ch_thread_state(t) == COEXEC_UNIT_BLOCKED);
            } else {
                ch_pthread_run(&th, chtimed_fn, &w);
                CH_WAIT(atomic_load(&w.arrived));
            }
            CH_ASSERT_EQ(atomic_load(&w.rc), 1);
            msg_t m;
            if (send) {
                CH_ASSERT_OK(coexec_channel_recv(&ch, &m)); /* makes room */
                CH_ASSERT_EQ(m.seq, 800);
            } else {
                m = make_msg(6, 901);
                CH_ASSERT_OK(coexec_channel_send(&ch, &m));
            }
            if (who == 0)
                CH_ASSERT_OK(coexec_thread_free(&t));
            else
                ch_pthread_join(&th);
            CH_ASSERT_RC(atomic_load(&w.rc), COEXEC_OK);
            if (send) {
                CH_ASSERT_OK(coexec_channel_recv(&ch, &m));
                CH_ASSERT_EQ(m.seq, 900);
            } else {
                CH_ASSERT_EQ(w.m.seq, 901);
            }
        }
    CH_ASSERT_OK(coexec_channel_destroy(&ch));
    CH_ASSERT_OK(ch_stream_free(&s));
    ch_finalize();
}

/* ======================================================================= */
/* errors                                                                   */
/* ======================================================================= */

static coexec_channel_t g_ch;
static atomic_int g_ch_ok;

static coexec_poll_status_t ch_ctx_tasklet(coexec_poll_t *cx, void *arg)
{
    msg_t m = make_msg(0, 0);
    CH_CHECK_RC(coexec_channel_send(&g_ch, &m), COEXEC_ECONTEXT);
    CH_CHECK_RC(coexec_channel_recv(&g_ch, &m), COEXEC_ECONTEXT);
    CH_CHECK_RC(coexec_channel_send_timed(&g_ch, &m, 1000), COEXEC_ECONTEXT);
    CH_CHECK_RC(coexec_channel_recv_timed(&g_ch, &m, 1000), COEXEC_ECONTEXT);
    CH_CHECK_RC(coexec_channel_poll_send(&g_ch, NULL, &m), COEXEC_EINVAL);
    CH_CHECK_RC(coexec_channel_poll_recv(&g_ch, NULL, &m), COEXEC_EINVAL);
    CH_CHECK_RC(coexec_channel_poll_send(NULL, cx, &m), COEXEC_EINVAL);
    CH_CHECK_RC(coexec_channel_poll_recv(NULL, cx, &m), COEXEC_EINVAL);
    CH_CHECK_RC(coexec_channel_poll_send(&g_ch, cx, NULL), COEXEC_EINVAL);
    CH_CHECK_RC(coexec_channel_poll_recv(&g_ch, cx, NULL), COEXEC_EINVAL);
    /* the non-blocking forms work here */
    CH_CHECK_RC(coexec_channel_try_send(&g_ch, &m), COEXEC_OK);
    CH_CHECK_RC(coexec_channel_try_recv(&g_ch, &m), COEXEC_OK);
    /* poll_send with room and poll_recv with a message are READY */
    m = make_msg(0, 1);
    CH_CHECK_RC(coexec_channel_poll_send(&g_ch, cx, &m), COEXEC_READY);
    memset(&m, 0, sizeof m);
    CH_CHECK_RC(coexec_channel_poll_recv(&g_ch, cx, &m), COEXEC_READY);
    CH_CHECK_EQ(m.seq, 1);
    atomic_fetch_add(&g_ch_ok, 1);
    return COEXEC_READY;
}

typedef struct {
    coexec_channel_t *ch;
    atomic_int rc;
} chbusy_t;

static void chbusy_recv_ult(void *arg)
{
    chbusy_t *b = arg;
    msg_t m;
    atomic_store(&b->rc, coexec_channel_recv(b->ch, &m));
}

static coexec_poll_status_t chbusy_recv_tasklet(coexec_poll_t *cx, void *arg)
{
    chbusy_t *b = arg;
    msg_t m;
    int rc = coexec_channel_poll_recv(b->ch, cx, &m);
    if (rc == COEXEC_PENDING)
        return COEXEC_PENDING;
    atomic_store(&b->rc, rc);
    return COEXEC_READY;
}

static void ch_expect_ehandle(void *arg)
{
    msg_t m = make_msg(0, 0);
    CH_CHECK_RC(coexec_channel_send(arg, &m), COEXEC_EHANDLE);
    CH_CHECK_RC(coexec_channel_recv(arg, &m), COEXEC_EHANDLE);
    atomic_fetch_add(&g_ch_ok, 1);
}

static void t_channel_errors(void)
{
    ch_init(2);
    ch_stream_t s;
    CH_ASSERT_OK_FATAL(ch_stream_create(&s, COEXEC_SCHED_BASIC_WAIT));
    msg_t m = make_msg(0, 0);
    size_t cnt;
    CH_ASSERT_RC(coexec_channel_init(NULL, 8, 8), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_channel_init(&g_ch, 0, 8), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_channel_init(&g_ch, 8, 0), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_channel_init(&g_ch, SIZE_MAX / 2, 4), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_channel_init(&g_ch, 4, SIZE_MAX / 2), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_channel_destroy(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_channel_send(NULL, &m), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_channel_recv(NULL, &m), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_channel_try_send(NULL, &m), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_channel_try_recv(NULL, &m), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_channel_close(NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_channel_count(NULL, &cnt), COEXEC_EINVAL);
    coexec_channel_t z;
    memset(&z, 0, sizeof z);
    CH_ASSERT_RC(coexec_channel_send(&z, &m), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_channel_recv(&z, &m), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_channel_try_send(&z, &m), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_channel_try_recv(&z, &m), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_channel_send_timed(&z, &m, 1), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_channel_recv_timed(&z, &m, 1), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_channel_close(&z), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_channel_count(&z, &cnt), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_channel_destroy(&z), COEXEC_EHANDLE);

    CH_ASSERT_OK_FATAL(coexec_channel_init(&g_ch, sizeof(msg_t), 2));
    CH_ASSERT_RC(coexec_channel_send(&g_ch, NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_channel_recv(&g_ch, NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_channel_try_send(&g_ch, NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_channel_try_recv(&g_ch, NULL), COEXEC_EINVAL);
    CH_ASSERT_RC(coexec_channel_count(&g_ch, NULL), COEXEC_EINVAL);
    atomic_store(&g_ch_ok, 0);
    coexec_tasklet_t k;
    CH_ASSERT_OK(coexec_tasklet_create(s.pool, ch_ctx_tasklet, NULL, &k));
    CH_ASSERT_OK(coexec_tasklet_free(&k));
    CH_ASSERT_EQ(atomic_load(&g_ch_ok), 1);
    CH_ASSERT_OK(coexec_channel_count(&g_ch, &cnt));
    CH_ASSERT_EQ(cnt, 0);

    /* waiters registered: destroy is busy */
    chbusy_t bu = {&g_ch, 1}, bk = {&g_ch, 1};
    coexec_thread_t t;
    CH_ASSERT_OK_FATAL(coexec_thread_create(s.pool, chbusy_recv_ult, &bu, NULL, &t));
    CH_WAIT(ch_thread_state(t) == COEXEC_UNIT_BLOCKED);
    CH_ASSERT_RC(coexec_channel_destroy(&g_ch), COEXEC_EBUSY);
    CH_ASSERT_OK(coexec_tasklet_create(s.pool, chbusy_recv_tasklet, &bk, &k));
    CH_WAIT(ch_tasklet_state(k) == COEXEC_UNIT_BLOCKED);
    CH_ASSERT_RC(coexec_channel_destroy(&g_ch), COEXEC_EBUSY);
    /* still usable: two messages release both */
    for (int i = 0; i < 2; i++) {
        m = make_msg(0, (uint64_t)i);
        CH_ASSERT_OK(coexec_channel_send(&g_ch, &m));
    }
    CH_ASSERT_OK(coexec_thread_free(&t));
    CH_WAIT(ch_tasklet_state(k) == COEXEC_UNIT_TERMINATED);
    CH_ASSERT_OK(coexec_tasklet_free(&k));
    CH_ASSERT_RC(atomic_load(&bu.rc), COEXEC_OK);
    CH_ASSERT_RC(atomic_load(&bk.rc), COEXEC_OK);
    /* destroy drops queued messages */
    CH_ASSERT_OK(coexec_channel_try_send(&g_ch, &m));
    CH_ASSERT_OK(coexec_channel_destroy(&g_ch));
    /* use after destroy */
    CH_ASSERT_RC(coexec_channel_send(&g_ch, &m), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_channel_recv(&g_ch, &m), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_channel_try_send(&g_ch, &m), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_channel_try_recv(&g_ch, &m), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_channel_close(&g_ch), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_channel_count(&g_ch, &cnt), COEXEC_EHANDLE);
    CH_ASSERT_RC(coexec_channel_destroy(&g_ch), COEXEC_EHANDLE);
    atomic_store(&g_ch_ok, 0);
    CH_ASSERT_OK(ch_run_ult_in(s.pool, ch_expect_ehandle, &g_ch));
    ch_pthread_t th;
    ch_pthread_run(&th, ch_expect_ehandle, &g_ch);
    ch_pthread_join(&th);
    CH_ASSERT_EQ(atomic_load(&g_ch_ok), 2);
    CH_ASSERT_OK(ch_stream_free(&s));
    ch_finalize();
}

/* ======================================================================= */
/* FIFO across receiver and sender kinds                                    */
/* ======================================================================= */

/*
 * Receivers of every kind (ULT, polling tasklet, external thread) mixed on
 * one channel. A tasklet released for a message must not let a ULT or a
 * thread behind it take that message, nor a later one first: each
 * receiver's messages arrive in the order one sender sent them, and
 * receivers that queued one after the other get the messages in that
 * order.
 */

enum { RK_ULT, RK_TASKLET, RK_THREAD, RK_KINDS };
static const char *const rk_name[RK_KINDS] = {"ULT", "tasklet", "thread"};

/* ---- receivers queued one after the other -------------------------------- */

enum { QO_RECV = 6, QO_MSGS = QO_RECV };

typedef struct qo_round qo_round_t;

typedef struct {
    qo_round_t *r;
    int kind;
    atomic_int entered; /* about to call recv (thread) */
    atomic_int tid;
    atomic_int done;
    int rc;
    msg_t got;
} qo_recv_t;

struct qo_round {
    coexec_channel_t ch;
    qo_recv_t recv[QO_RECV];
    atomic_int sent;
    atomic_int send_rc;
    int next_send; /* tasklet sender's position */
};

static void qo_recv_ult(void *arg)
{
    qo_recv_t *q = arg;
    q->rc = coexec_channel_recv(&q->r->ch, &q->got);
    atomic_store(&q->done, 1);
}

static void *qo_recv_pthread(void *arg)
{
    qo_recv_t *q = arg;
    atomic_store(&q->tid, (int)ch_gettid());
    atomic_store(&q->entered, 1);
    q->rc = coexec_channel_recv(&q->r->ch, &q->got);
    atomic_store(&q->done, 1);
    return NULL;
}

static coexec_poll_status_t qo_recv_tasklet(coexec_poll_t *cx, void *arg)
{
    qo_recv_t *q = arg;
    int rc = coexec_channel_poll_recv(&q->r->ch, cx, &q->got);
    if (rc == COEXEC_PENDING)
        return COEXEC_PENDING;
    q->rc = rc;
    atomic_store(&q->done, 1);
    return COEXEC_READY;
}

static void qo_send_all(void *arg)
{
    qo_round_t *r = arg;
    for (int i = 0; i < QO_MSGS; i++) {
        msg_t m = make_msg(1, (uint64_t)i);
        int rc = coexec_channel_send(&r->ch, &m);
        if (rc != COEXEC_OK) {
            atomic_store(&r->send_rc, rc);
            break;
        }
        atomic_fetch_add(&r->sent, 1);
    }
}

static coexec_poll_status_t qo_send_tasklet(coexec_poll_t *cx, void *arg)
{
    qo_round_t *r = arg;
    while (r->next_send < QO_MSGS) {
        msg_t m = make_msg(1, (uint64_t)r->next_send);
        int rc = coexec_channel_poll_send(&r->ch, cx, &m);
        if (rc == COEXEC_PENDING)
            return COEXEC_PENDING;
        if (rc != COEXEC_READY) {
            atomic_store(&r->send_rc, rc);
            break;
        }
        r->next_send++;
        atomic_fetch_add(&r->sent, 1);
    }
    return COEXEC_READY;
}

static void t_fifo_queue_order(void)
{
    ch_init(WK_NSTREAMS);
    bool threads = wk_futex_probe_works();
    if (!threads)
        fprintf(stderr, "    /proc/self/task/N/syscall unreadable: ULT and "
                        "tasklet receivers only\n");
    static const size_t caps[] = {1, 2, 4};
    long rounds = ch_iters(200, 30);
    long bad_rounds = 0;
    uint64_t seed = 0x5eed;
    for (long round = 0; round < rounds && bad_rounds == 0; round++) {
        qo_round_t *r = calloc(1, sizeof *r);
        size_t cap = caps[round % 3];
        CH_ASSERT_OK_FATAL(coexec_channel_init(&r->ch, sizeof(msg_t), cap));
        /* two receivers of each kind, in a shuffled order */
        int kinds[QO_RECV];
        for (int i = 0; i < QO_RECV; i++)
            kinds[i] = threads ? i % RK_KINDS : i % 2;
        for (int i = QO_RECV - 1; i > 0; i--) {
            seed = ch_mix64(seed + (uint64_t)round);
            int j = (int)(seed % (uint64_t)(i + 1));
            int t = kinds[i];
            kinds[i] = kinds[j];
            kinds[j] = t;
        }
        coexec_thread_t ult[QO_RECV];
        coexec_tasklet_t tk[QO_RECV];
        ch_pthread_t th[QO_RECV];
        for (int i = 0; i < QO_RECV; i++) {
            qo_recv_t *q = &r->recv[i];
            q->r = r;
            q->kind = kinds[i];
            coexec_xstream_t xs = ch_xstream(1 + i % (WK_NSTREAMS - 1));
            /* queue it, and wait until it waits: the next one queues
             * behind it */
            if (q->kind == RK_ULT) {
                CH_ASSERT_OK_FATAL(coexec_thread_create_on(xs, qo_recv_ult, q, NULL, &ult[i]));
                CH_WAIT(ch_thread_state(ult[i]) == COEXEC_UNIT_BLOCKED);
            } else if (q->kind == RK_TASKLET) {
                CH_ASSERT_OK_FATAL(coexec_tasklet_create_on(xs, qo_recv_tasklet, q, &tk[i]));
                CH_WAIT(ch_tasklet_state(tk[i]) == COEXEC_UNIT_BLOCKED);
            } else {
                ch_pthread_start(&th[i], qo_recv_pthread, q);
                CH_WAIT(atomic_load(&q->entered) && wk_thread_in_futex(atomic_load(&q->tid)));
            }
        }
        /* one sender sends 0..5: the i-th receiver queued gets message i */
        int skind = (int)(round / 3 % 3); /* ULT on stream 1, thread, tasklet */
        coexec_thread_t st;
        coexec_tasklet_t sk;
        ch_pthread_t sth;
        if (skind == 0)
            CH_ASSERT_OK_FATAL(coexec_thread_create_on(ch_xstream(1), qo_send_all, r, NULL, &st));
        else if (skind == 1)
            ch_pthread_run(&sth, qo_send_all, r);
        else
            CH_ASSERT_OK_FATAL(coexec_tasklet_create_on(ch_xstream(2), qo_send_tasklet, r, &sk));
        bool all = true;
        for (int i = 0; i < QO_RECV; i++)
            all = all && CH_WAIT(atomic_load(&r->recv[i].done));
        if (!all) /* a receiver was left waiting: release it to go on */
            CH_ASSERT_OK(coexec_channel_close(&r->ch));
        CH_WAIT(atomic_load(&r->sent) == QO_MSGS || atomic_load(&r->send_rc));
        if (skind == 0)
            CH_ASSERT_OK(coexec_thread_free(&st));
        else if (skind == 1)
            ch_pthread_join(&sth);
        else {
            CH_WAIT(ch_tasklet_state(sk) == COEXEC_UNIT_TERMINATED);
            CH_ASSERT_OK(coexec_tasklet_free(&sk));
        }
        bool bad = !all || atomic_load(&r->send_rc) != 0;
        for (int i = 0; i < QO_RECV; i++) {
            qo_recv_t *q = &r->recv[i];
            if (q->kind == RK_ULT)
                CH_ASSERT_OK(coexec_thread_free(&ult[i]));
            else if (q->kind == RK_TASKLET) {
                CH_WAIT(ch_tasklet_state(tk[i]) == COEXEC_UNIT_TERMINATED);
                CH_ASSERT_OK(coexec_tasklet_free(&tk[i]));
            } else
                ch_pthread_join(&th[i]);
            bad = bad || q->rc != COEXEC_OK || q->got.seq != (uint64_t)i || !msg_ok(&q->got);
        }
        if (bad) {
            bad_rounds++;
            fprintf(stderr, "    round %ld, capacity %zu, sender %s:", round, cap,
                    rk_name[skind == 0 ? RK_ULT : skind == 1 ? RK_THREAD : RK_TASKLET]);
            for (int i = 0; i < QO_RECV; i++)
                fprintf(stderr, " %s<-%lld(%s)", rk_name[r->recv[i].kind],
                        r->recv[i].rc ? -1LL : (long long)r->recv[i].got.seq,
                        coexec_err_name(r->recv[i].rc));
            fprintf(stderr, "\n");
        }
        size_t cnt = 99;
        CH_ASSERT_OK(coexec_channel_count(&r->ch, &cnt));
        CH_ASSERT_EQ(cnt, 0);
        CH_ASSERT_OK(coexec_channel_destroy(&r->ch));
        free(r);
    }
    CH_ASSERT_EQ(bad_rounds, 0);
    ch_finalize();
}

/* ---- receivers that loop -------------------------------------------------- */

enum { LP_SEND = 3, LP_RECV = 6 };

typedef struct lp_run lp_run_t;

typedef struct {
    lp_run_t *r;
    int id, kind;
    uint64_t last[LP_SEND]; /* seq + 1 of the last message of each sender */
    long got;
    atomic_int done;
} lp_recv_t;

typedef struct {
    lp_run_t *r;
    uint32_t id;
    long next; /* tasklet sender's position */
    atomic_int done;
} lp_send_t;

struct lp_run {
    coexec_channel_t ch;
    long per; /* messages per sender */
    int nsend;
    atomic_uchar *seen; /* [sender][seq] */
    atomic_long received, bad, disorder;
    lp_recv_t recv[LP_RECV];
    lp_send_t send[LP_SEND];
};

/* One message taken by receiver q: false when it ends q's loop. */
static bool lp_take(lp_recv_t *q, int rc, const msg_t *m)
{
    lp_run_t *r = q->r;
    if (rc == COEXEC_ECLOSED)
        return false;
    if (rc != COEXEC_OK || !msg_ok(m) || m->producer >= (uint32_t)r->nsend ||
        m->seq >= (uint64_t)r->per) {
        if (rc != COEXEC_OK)
            CH_CHECK_RC(rc, COEXEC_OK);
        atomic_fetch_add(&r->bad, 1);
        return rc == COEXEC_OK;
    }
    if (m->seq + 1 <= q->last[m->producer])
        atomic_fetch_add(&r->disorder, 1);
    q->last[m->producer] = m->seq + 1;
    atomic_fetch_add(&r->seen[(size_t)m->producer * (size_t)r->per + m->seq], 1);
    atomic_fetch_add(&r->received, 1);
    q->got++;
    return true;
}

static void lp_recv_ult(void *arg)
{
    lp_recv_t *q = arg;
    for (;;) {
        msg_t m;
        memset(&m, 0, sizeof m);
        if (!lp_take(q, coexec_channel_recv(&q->r->ch, &m), &m))
            break;
    }
    atomic_store(&q->done, 1);
}

static coexec_poll_status_t lp_recv_tasklet(coexec_poll_t *cx, void *arg)
{
    lp_recv_t *q = arg;
    for (;;) {
        msg_t m;
        memset(&m, 0, sizeof m);
        int rc = coexec_channel_poll_recv(&q->r->ch, cx, &m);
        if (rc == COEXEC_PENDING)
            return COEXEC_PENDING;
        if (!lp_take(q, rc, &m))
            break;
    }
    atomic_store(&q->done, 1);
    return COEXEC_READY;
}

static void lp_send_ult(void *arg)
{
    lp_send_t *s = arg;
    for (long i = 0; i < s->r->per; i++) {
        msg_t m = make_msg(s->id, (uint64_t)i);
        int rc = coexec_channel_send(&s->r->ch, &m);
        if (rc != COEXEC_OK) {
            CH_CHECK_RC(rc, COEXEC_OK);
            break;
        }
    }
    atomic_store(&s->done, 1);
}

static coexec_poll_status_t lp_send_tasklet(coexec_poll_t *cx, void *arg)
{
    lp_send_t *s = arg;
    while (s->next < s->r->per) {
        msg_t m = make_msg(s->id, (uint64_t)s->next);
        int rc = coexec_channel_poll_send(&s->r->ch, cx, &m);
        if (rc == COEXEC_PENDING)
            return COEXEC_PENDING;
        if (rc != COEXEC_READY) {
            CH_CHECK_RC(rc, COEXEC_READY);
            break;
        }
        s->next++;
    }
    atomic_store(&s->done, 1);
    return COEXEC_READY;
}

static void t_fifo_loop_mixed(void)
{
    ch_init(WK_NSTREAMS);
    static const size_t caps[] = {1, 2, 16};
    /* variant: 0..2 one sender of that kind, 3 one sender of each kind */
    for (int variant = 0; variant < 4; variant++)
        for (size_t c = 0; c < 3; c++) {
            lp_run_t *r = calloc(1, sizeof *r);
            r->nsend = variant < 3 ? 1 : LP_SEND;
            r->per = ch_iters(variant < 3 ? 6000 : 2000, 300);
            r->seen = calloc((size_t)r->nsend * (size_t)r->per, sizeof *r->seen);
            CH_ASSERT_OK_FATAL(coexec_channel_init(&r->ch, sizeof(msg_t), caps[c]));
            coexec_thread_t ult[LP_RECV + LP_SEND];
            coexec_tasklet_t tk[LP_RECV + LP_SEND];
            ch_pthread_t th[LP_RECV + LP_SEND];
            /* receivers: two of each kind, ULTs and tasklets on streams 1-3 */
            for (int i = 0; i < LP_RECV; i++) {
                lp_recv_t *q = &r->recv[i];
                q->r = r;
                q->id = i;
                q->kind = i % RK_KINDS;
                coexec_xstream_t xs = ch_xstream(1 + i % (WK_NSTREAMS - 1));
                if (q->kind == RK_ULT)
                    CH_ASSERT_OK_FATAL(coexec_thread_create_on(xs, lp_recv_ult, q, NULL, &ult[i]));
                else if (q->kind == RK_TASKLET)
                    CH_ASSERT_OK_FATAL(coexec_tasklet_create_on(xs, lp_recv_tasklet, q, &tk[i]));
                else
                    ch_pthread_run(&th[i], lp_recv_ult, q);
            }
            for (int i = 0; i < r->nsend; i++) {
                lp_send_t *s = &r->send[i];
                s->r = r;
                s->id = (uint32_t)i;
                int kind = variant < 3 ? variant : i;
                int j = LP_RECV + i;
                coexec_xstream_t xs = ch_xstream(1 + (i + 1) % (WK_NSTREAMS - 1));
                if (kind == RK_ULT)
                    CH_ASSERT_OK_FATAL(coexec_thread_create_on(xs, lp_send_ult, s, NULL, &ult[j]));
                else if (kind == RK_TASKLET)
                    CH_ASSERT_OK_FATAL(coexec_tasklet_create_on(xs, lp_send_tasklet, s, &tk[j]));
                else
                    ch_pthread_run(&th[j], lp_send_ult, s);
            }
            for (int i = 0; i < r->nsend; i++)
                CH_WAIT(atomic_load(&r->send[i].done));
            long total = (long)r->nsend * r->per;
            /* every message taken, then close: the receivers end */
            CH_WAIT(atomic_load(&r->received) + atomic_load(&r->bad) >= total);
            CH_ASSERT_OK(coexec_channel_close(&r->ch));
            for (int i = 0; i < LP_RECV + r->nsend; i++) {
                int kind = i < LP_RECV ? i % RK_KINDS
                                       : variant < 3 ? variant : i - LP_RECV;
                if (kind == RK_ULT)
                    CH_ASSERT_OK(coexec_thread_free(&ult[i]));
                else if (kind == RK_TASKLET) {
                    CH_WAIT(ch_tasklet_state(tk[i]) == COEXEC_UNIT_TERMINATED);
                    CH_ASSERT_OK(coexec_tasklet_free(&tk[i]));
                } else
                    ch_pthread_join(&th[i]);
            }
            long once = 0;
            for (long i = 0; i < total; i++)
                once += atomic_load(&r->seen[i]) == 1;
            if (atomic_load(&r->disorder) || once != total)
                fprintf(stderr, "    variant %d, capacity %zu: %ld out of order, %ld of %ld once\n",
                        variant, caps[c], atomic_load(&r->disorder), once, total);
            CH_ASSERT_EQ(atomic_load(&r->received), total);
            CH_ASSERT_EQ(atomic_load(&r->bad), 0);
            CH_ASSERT_EQ(atomic_load(&r->disorder), 0);
            CH_ASSERT_EQ(once, total);
            CH_ASSERT_OK(coexec_channel_destroy(&r->ch));
            free(r->seen);
            free(r);
        }
    ch_finalize();
}

/* ---- a tasklet that leaves after its message was reserved ---------------- */

enum { GL_LEAVE, GL_OTHER }; /* returns READY; polls an eventual instead */

typedef struct {
    coexec_channel_t ch;
    coexec_eventual_t ev;
    int mode;
    atomic_int polls;
    atomic_int done;
    int rc;
    msg_t got;
} gl_t;

static coexec_poll_status_t gl_tasklet(coexec_poll_t *cx, void *arg)
{
    gl_t *g = arg;
    if (atomic_fetch_add(&g->polls, 1) == 0) {
        int rc = coexec_channel_poll_recv(&g->ch, cx, &g->got);
        CH_CHECK_RC(rc, COEXEC_PENDING);
        return COEXEC_PENDING;
    }
    /* woken for a message: walk away from it */
    if (g->mode == GL_OTHER) {
        int rc = coexec_eventual_poll(&g->ev, cx, NULL);
        if (rc == COEXEC_PENDING)
            return COEXEC_PENDING;
        g->rc = rc;
    }
    atomic_store(&g->done, 1);
    return COEXEC_READY;
}

typedef struct {
    coexec_channel_t *ch;
    atomic_int done;
    int rc;
    msg_t got;
} gl_recv_t;

static void gl_recv_ult(void *arg)
{
    gl_recv_t *q = arg;
    q->rc = coexec_channel_recv(q->ch, &q->got);
    atomic_store(&q->done, 1);
}

static void t_granted_tasklet_leaves(void)
{
    ch_init(WK_NSTREAMS);
    for (int mode = GL_LEAVE; mode <= GL_OTHER; mode++) {
        gl_t *g = calloc(1, sizeof *g);
        g->mode = mode;
        CH_ASSERT_OK_FATAL(coexec_channel_init(&g->ch, sizeof(msg_t), 2));
        CH_ASSERT_OK_FATAL(coexec_eventual_init(&g->ev, 0));
        coexec_tasklet_t k;
        CH_ASSERT_OK_FATAL(coexec_tasklet_create_on(ch_xstream(1), gl_tasklet, g, &k));
        CH_WAIT(ch_tasklet_state(k) == COEXEC_UNIT_BLOCKED);
        /* a ULT queues behind the tasklet */
        gl_recv_t q = {&g->ch, 0, 1, {0}};
        coexec_thread_t t;
        CH_ASSERT_OK_FATAL(coexec_thread_create_on(ch_xstream(2), gl_recv_ult, &q, NULL, &t));
        CH_WAIT(ch_thread_state(t) == COEXEC_UNIT_BLOCKED);
        /* message 0 is the tasklet's; it walks away, so the ULT gets it */
        msg_t m = make_msg(3, 0);
        CH_ASSERT_OK(coexec_channel_try_send(&g->ch, &m));
        CH_WAIT(atomic_load(&q.done));
        CH_ASSERT_OK(coexec_thread_free(&t));
        CH_ASSERT_RC(q.rc, COEXEC_OK);
        CH_ASSERT_EQ(q.got.seq, 0);
        CU_ASSERT(msg_ok(&q.got));
        if (mode == GL_OTHER) {
            CH_WAIT(atomic_load(&g->polls) >= 2 && ch_tasklet_state(k) == COEXEC_UNIT_BLOCKED);
            CH_ASSERT_OK(coexec_eventual_set(&g->ev, NULL, 0));
        }
        CH_WAIT(ch_tasklet_state(k) == COEXEC_UNIT_TERMINATED);
        CH_ASSERT_OK(coexec_tasklet_free(&k));
        CH_ASSERT_RC(g->rc, COEXEC_OK);
        /* nothing left reserved: the channel works as new */
        size_t cnt = 99;
        CH_ASSERT_OK(coexec_channel_count(&g->ch, &cnt));
        CH_ASSERT_EQ(cnt, 0);
        for (int i = 1; i <= 2; i++) {
            m = make_msg(3, (uint64_t)i);
            CH_ASSERT_OK(coexec_channel_try_send(&g->ch, &m));
        }
        for (int i = 1; i <= 2; i++) {
            CH_ASSERT_OK(coexec_channel_try_recv(&g->ch, &m));
            CH_ASSERT_EQ(m.seq, i);
        }
        CH_ASSERT_OK(coexec_channel_destroy(&g->ch));
        CH_ASSERT_OK(coexec_eventual_destroy(&g->ev));
        free(g);
    }
    ch_finalize();
}

/* ---- init over a live channel -------------------------------------------- */

static atomic_int il_spinning, il_release;

/* Keeps its stream busy (without yielding) until released. */
static void il_hog(void *arg)
{
    (void)arg;
    atomic_store(&il_spinning, 1);
    while (!atomic_load(&il_release))
        sched_yield();
}

static void t_channel_init_live(void)
{
    ch_init(2);
    ch_stream_t s;
    CH_ASSERT_OK_FATAL(ch_stream_create(&s, COEXEC_SCHED_BASIC_WAIT));
    coexec_channel_t ch;
    memset(&ch, 0, sizeof ch);
    CH_ASSERT_OK_FATAL(coexec_channel_init(&ch, sizeof(msg_t), 2));
    /* a waiting ULT receiver: refused, and it still gets the message */
    gl_recv_t q = {&ch, 0, 1, {0}};
    coexec_thread_t t;
    CH_ASSERT_OK_FATAL(coexec_thread_create(s.pool, gl_recv_ult, &q, NULL, &t));
    CH_WAIT(ch_thread_state(t) == COEXEC_UNIT_BLOCKED);
    CH_CHECK_RC(coexec_channel_init(&ch, sizeof(msg_t), 2), COEXEC_EBUSY);
    msg_t m = make_msg(4, 1);
    CH_ASSERT_OK(coexec_channel_send(&ch, &m));
    CH_ASSERT_OK(coexec_thread_free(&t));
    CH_ASSERT_RC(q.rc, COEXEC_OK);
    CH_ASSERT_EQ(q.got.seq, 1);
    /* a tasklet with a message reserved for it, its stream kept busy so
     * that it cannot take it yet: refused */
    chbusy_t bk = {&ch, 1};
    coexec_tasklet_t k;
    CH_ASSERT_OK_FATAL(coexec_tasklet_create(s.pool, chbusy_recv_tasklet, &bk, &k));
    CH_WAIT(ch_tasklet_state(k) == COEXEC_UNIT_BLOCKED);
    atomic_store(&il_spinning, 0);
    atomic_store(&il_release, 0);
    CH_ASSERT_OK_FATAL(coexec_thread_create(s.pool, il_hog, NULL, NULL, &t));
    CH_WAIT(atomic_load(&il_spinning));
    m = make_msg(4, 2);
    CH_ASSERT_OK(coexec_channel_try_send(&ch, &m));
    CH_CHECK_RC(coexec_channel_init(&ch, sizeof(msg_t), 2), COEXEC_EBUSY);
    size_t cnt = 99;
    CH_ASSERT_OK(coexec_channel_count(&ch, &cnt));
    CH_ASSERT_EQ(cnt, 1);
    atomic_store(&il_release, 1);
    CH_ASSERT_OK(coexec_thread_free(&t));
    CH_WAIT(ch_tasklet_state(k) == COEXEC_UNIT_TERMINATED);
    CH_ASSERT_OK(coexec_tasklet_free(&k));
    CH_ASSERT_RC(bk.rc, COEXEC_OK);
    /* a waiting sender: refused */
    blk_t b = {&ch, 3, 0, 0, {{0}}};
    CH_ASSERT_OK_FATAL(coexec_thread_create(s.pool, blk_send_ult, &b, NULL, &t));
    CH_WAIT(atomic_load(&b.done_ops) == 2 && ch_thread_state(t) == COEXEC_UNIT_BLOCKED);
    CH_CHECK_RC(coexec_channel_init(&ch, sizeof(msg_t), 2), COEXEC_EBUSY);
    for (int i = 0; i < 3; i++) {
        CH_ASSERT_OK(coexec_channel_recv(&ch, &m));
        CH_ASSERT_EQ(m.seq, i);
    }
    CH_ASSERT_OK(coexec_thread_free(&t));
    CH_ASSERT_RC(atomic_load(&b.rc), COEXEC_OK);
    /* nobody waits: queued messages are dropped, a closed channel opens
     * again, with the new size */
    m = make_msg(4, 3);
    CH_ASSERT_OK(coexec_channel_try_send(&ch, &m));
    CH_ASSERT_OK(coexec_channel_close(&ch));
    CH_ASSERT_OK(coexec_channel_init(&ch, 3, 5));
    CH_ASSERT_OK(coexec_channel_count(&ch, &cnt));
    CH_ASSERT_EQ(cnt, 0);
    for (int i = 0; i < 5; i++) {
        unsigned char x[3] = {(unsigned char)i, 1, 2};
        CH_ASSERT_OK(coexec_channel_try_send(&ch, x));
    }
    unsigned char x[3] = {9, 9, 9};
    CH_ASSERT_RC(coexec_channel_try_send(&ch, x), COEXEC_EAGAIN);
    for (int i = 0; i < 5; i++) {
        CH_ASSERT_OK(coexec_channel_try_recv(&ch, x));
        CH_ASSERT_EQ(x[0], i);
    }
    CH_ASSERT_OK(coexec_channel_destroy(&ch));
    CH_ASSERT_OK(coexec_channel_init(&ch, 1, 1)); /* destroyed: as new */
    CH_ASSERT_OK(coexec_channel_destroy(&ch));
    CH_ASSERT_OK(ch_stream_free(&s));
    ch_finalize();
}

/* ======================================================================= */

const ch_test_t wk_channel_tests[] = {
    {"fifo_spsc_ult_thread_tasklet", t_fifo_spsc},
    {"mpmc_exactly_once", t_mpmc},
    {"capacity_one_blocks", t_capacity_one},
    {"try_send_try_recv_count", t_try_ops},
    {"close_releases_and_drains", t_close},
    {"timed_send_recv", t_timed},
    {"errors_busy_destroyed_contexts", t_channel_errors},
    {"fifo_queue_order_mixed_kinds", t_fifo_queue_order},
    {"fifo_looping_receivers_mixed_kinds", t_fifo_loop_mixed},
    {"granted_tasklet_leaves", t_granted_tasklet_leaves},
    {"init_over_live", t_channel_init_live},
    {NULL, NULL}};
