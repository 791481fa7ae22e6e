/*
 * bench/wait.c: waiting and waking across two streams: the eventual
 * ping-pong, the latency of a wake, a contended ULT mutex and a channel
 * ping-pong.
 *
 * These benchmarks put one ULT (or two) on each of 2 xstreams and need them
 * to stay there: in the default setup an idle stream steals, so a ULT woken
 * into the other stream's pool could be taken by the stream that woke it and
 * the "cross-stream" figure would be measured on one stream. So xstream 0
 * is the runtime's primary in its default setup (the caller's main ULT and
 * any unit queued there), and xstream 1 is created with a scheduler of the
 * configured kind over a FIFO MPSC pool of its own, stealing off. A stream
 * steals only from default pools and xstream 1 has none, so no unit ever
 * changes stream; every ULT checks the rank it runs on.
 *
 * Every ULT reports its first error in a shared slot that the main ULT
 * checks each round, so that a failing peer never leaves main waiting
 * forever; every benchmark releases what its ULTs wait for, joins them and
 * destroys its objects, also after a failure.
 */
#define _GNU_SOURCE
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <coexec.h>

#include "bench.h"

/* A wait for the other stream that takes longer than this is a failure. */
#define HANG_NS (10ull * 1000 * 1000 * 1000)

static void note_rc(atomic_int *slot, int rc)
{
    int ok = COEXEC_OK;
    atomic_compare_exchange_strong(slot, &ok, rc);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* ---- the two-stream setup --------------------------------------------------- */

struct split {
    coexec_pool_t pool[2]; /* pool[0]: xstream 0's default pool */
    coexec_xstream_t xs1;
    coexec_sched_t sched1;
    int rt_up, pool1_up, sched1_up, xs1_up;
};

static void split_stop(bench_run_t *r, struct split *sp)
{
    int rc;
    if (sp->xs1_up && (rc = coexec_xstream_free(&sp->xs1)) != COEXEC_OK)
        bench_fail(r, "coexec_xstream_free: %s", coexec_err_name(rc));
    if (sp->sched1_up && (rc = coexec_sched_free(&sp->sched1)) != COEXEC_OK)
        bench_fail(r, "coexec_sched_free: %s", coexec_err_name(rc));
    if (sp->pool1_up && (rc = coexec_pool_free(&sp->pool[1])) != COEXEC_OK)
        bench_fail(r, "coexec_pool_free: %s", coexec_err_name(rc));
    if (sp->rt_up)
        (void)bench_rt_stop(r);
    memset(sp, 0, sizeof *sp);
}

static int split_start(bench_run_t *r, struct split *sp)
{
    memset(sp, 0, sizeof *sp);
    if (bench_need_cpus(r, 2) != 0)
        return -1;
    if (bench_rt_start(r, 1, &sp->pool[0]) != 0)
        return -1;
    sp->rt_up = 1;
    coexec_config_t cfg;
    coexec_sched_config_t scfg;
    coexec_xstream_attr_t attr;
    int cpu = -1, rank = -1;
    CK(coexec_get_config(&cfg));
    CK(coexec_pool_create(COEXEC_POOL_FIFO, COEXEC_ACCESS_MPSC, &sp->pool[1]));
    sp->pool1_up = 1;
    CK(coexec_sched_config_init(&scfg));
    scfg.steal = 0;
    CK(coexec_sched_create(cfg.sched_kind, &sp->pool[1], 1, &scfg,
                           &sp->sched1));
    sp->sched1_up = 1;
    CK(coexec_xstream_attr_init(&attr));
    attr.sched = sp->sched1;
    CK(coexec_xstream_create(&attr, &sp->xs1));
    sp->xs1_up = 1;
    CK(coexec_xstream_get_cpu(sp->xs1, &cpu));
    CK(coexec_xstream_get_rank(sp->xs1, &rank));
    if (rank != 1) {
        bench_fail(r, "the created stream has rank %d, not 1", rank);
        goto out;
    }
    coexec_xstream_t xs0;
    int cpu0 = -1;
    CK(coexec_xstream_by_rank(0, &xs0));
    CK(coexec_xstream_get_cpu(xs0, &cpu0));
    /* bench_rt_start described one stream: describe both. */
    snprintf(r->setup, sizeof r->setup,
             "[2 xstreams, sched %s: xs0 on CPU %d, default LIFO/MPMC pool; "
             "xs1 on CPU %d, its own FIFO/MPSC pool, stealing off: no unit "
             "changes stream]",
             cfg.sched_kind == COEXEC_SCHED_BASIC ? "basic" : "basic_wait",
             cpu0, cpu);
    return 0;
out:
    split_stop(r, sp);
    return -1;
}

static int self_rank(void)
{
    int rank = -1;
    if (coexec_xstream_self_rank(&rank) != COEXEC_OK)
        return -1;
    return rank;
}

/* ---- eventual_pingpong_2es -------------------------------------------------- */

#define EP_ROUNDS 100000

static struct {
    coexec_eventual_t ping, pong; /* main -> ponger, ponger -> main */
    _Alignas(64) atomic_int stop;
    atomic_int rc;  /* the ponger's first error */
    long answered;  /* the ponger's; read after the join */
    int rank[2];    /* the ponger's stream at start and at the end */
} ep;

static void ep_ponger(void *arg)
{
    (void)arg;
    int rc;
    ep.rank[0] = self_rank();
    for (;;) {
        if ((rc = coexec_eventual_wait(&ep.ping, NULL)) != COEXEC_OK)
            break;
        /* Relaxed is enough: stop is stored before the set that woke us. */
        if (atomic_load_explicit(&ep.stop, memory_order_relaxed))
            break;
        if ((rc = coexec_eventual_reset(&ep.ping)) != COEXEC_OK)
            break;
        ep.answered++;
        if ((rc = coexec_eventual_set(&ep.pong, NULL, 0)) != COEXEC_OK)
            break;
    }
    ep.rank[1] = self_rank();
    if (rc != COEXEC_OK) {
        note_rc(&ep.rc, rc);
        BENCH_IGNORE(coexec_eventual_set(&ep.pong, NULL, 0)); /* main must not wait */
    }
}

static int bench_eventual_pingpong_2es(bench_run_t *r)
{
    struct split sp;
    coexec_thread_t t = {0};
    int evs = 0;
    memset(&ep, 0, sizeof ep);
    if (split_start(r, &sp) != 0)
        return -1;
    CK(coexec_eventual_init(&ep.ping, 0));
    evs = 1;
    CK(coexec_eventual_init(&ep.pong, 0));
    evs = 2;
    CK(coexec_thread_create(sp.pool[1], ep_ponger, NULL, NULL, &t));
    for (int rep = 0; rep < r->warmups + r->reps; rep++) {
        uint64_t t0 = bench_now_ns();
        for (int i = 0; i < EP_ROUNDS; i++) {
            CK(coexec_eventual_set(&ep.ping, NULL, 0));
            CK(coexec_eventual_wait(&ep.pong, NULL));
            CK(coexec_eventual_reset(&ep.pong));
            if (BENCH_UNLIKELY(
                    atomic_load_explicit(&ep.rc, memory_order_relaxed)))
                break;
        }
        uint64_t t1 = bench_now_ns();
        int rc = atomic_load(&ep.rc);
        if (rc != COEXEC_OK) {
            bench_fail(r, "ponger: %s (%s)", coexec_err_name(rc),
                       coexec_strerror(rc));
            goto out;
        }
        if (self_rank() != 0) {
            bench_fail(r, "the main ULT left xstream 0");
            goto out;
        }
        if (rep >= r->warmups)
            bench_sample(r, (double)(t1 - t0) / EP_ROUNDS);
    }
    bench_append_setup(r, "main ULT on xs0: set(ping) wait(pong) reset(pong); "
                          "ponger ULT on xs1: wait(ping) reset(ping) "
                          "set(pong); 100,000 round trips per rep");
out:
    if (t.p) {
        /* Stop the ponger: ping may still be set if we failed mid-round;
         * retry until the ponger has reset it (or has finished). */
        atomic_store(&ep.stop, 1);
        for (;;) {
            int rc = coexec_eventual_set(&ep.ping, NULL, 0);
            coexec_unit_state_t st;
            if (rc != COEXEC_ESTATE ||
                coexec_thread_get_state(t, &st) != COEXEC_OK ||
                st == COEXEC_UNIT_TERMINATED)
                break;
            BENCH_IGNORE(coexec_yield());
        }
        int rc = coexec_thread_free(&t);
        if (rc != COEXEC_OK)
            bench_fail(r, "coexec_thread_free: %s", coexec_err_name(rc));
        long expect = (long)(r->warmups + r->reps) * EP_ROUNDS;
        if (!r->error[0] && ep.answered != expect)
            bench_fail(r, "the ponger answered %ld times, not %ld",
                       ep.answered, expect);
        if (!r->error[0] && (ep.rank[0] != 1 || ep.rank[1] != 1))
            bench_fail(r, "the ponger ran on xstream %d, then %d, not 1",
                       ep.rank[0], ep.rank[1]);
    }
    if (evs >= 1 && coexec_eventual_destroy(&ep.ping) != COEXEC_OK)
        bench_fail(r, "coexec_eventual_destroy(ping) failed");
    if (evs >= 2 && coexec_eventual_destroy(&ep.pong) != COEXEC_OK)
        bench_fail(r, "coexec_eventual_destroy(pong) failed");
    split_stop(r, &sp);
    return bench_finish(r);
}

/* ---- wake_latency_2es ------------------------------------------------------- */

#define WL_SAMPLES 5000     /* wakes per rep; the rep's figure is their median */
#define WL_DELAY_NS 2000    /* from "parked" to the wake: the stream idles */
#define WL_STOP ULONG_MAX

static struct {
    _Alignas(64) atomic_ulong round; /* main: the round it wakes the ULT for */
    atomic_ulong t_wake;             /* main: coexec_now_ns() before the wake */
    _Alignas(64) atomic_ulong done;  /* the sleeper: the last round it ran for */
    atomic_int rc;                   /* the sleeper's first error */
    atomic_int waker_ready;
    coexec_waker_t waker;            /* the sleeper's, set before waker_ready */
    long early;                      /* samples whose clock read preceded t_wake */
    int rank[2];
    uint64_t lat[WL_SAMPLES];        /* the sleeper writes, main reads */
} wl;

static void wl_sleeper(void *arg)
{
    (void)arg;
    int rc;
    unsigned long seen = 0;
    wl.rank[0] = self_rank();
    if ((rc = coexec_self_waker(&wl.waker)) != COEXEC_OK) {
        note_rc(&wl.rc, rc);
        return;
    }
    atomic_store_explicit(&wl.waker_ready, 1, memory_order_release);
    for (;;) {
        if ((rc = coexec_park()) != COEXEC_OK) {
            note_rc(&wl.rc, rc);
            break;
        }
        uint64_t now = coexec_now_ns(); /* first thing once running */
        /* Acquire: pairs with main's release store of round, made after
         * its store of t_wake. */
        unsigned long rd = atomic_load_explicit(&wl.round, memory_order_acquire);
        if (rd == WL_STOP)
            break;
        if (rd == seen)
            continue; /* not a wake of ours: park again */
        uint64_t tw = atomic_load_explicit(&wl.t_wake, memory_order_relaxed);
        if (now < tw)
            wl.early++;
        wl.lat[(rd - 1) % WL_SAMPLES] = now > tw ? now - tw : 0;
        seen = rd;
        /* Release: main reads lat[] after seeing done. */
        atomic_store_explicit(&wl.done, rd, memory_order_release);
    }
    wl.rank[1] = self_rank();
}

/* Waits until the sleeper has finished round n and parked again. */
static int wl_wait_parked(bench_run_t *r, coexec_thread_t t, unsigned long n)
{
    uint64_t start = bench_now_ns();
    for (unsigned spins = 0;; spins++) {
        coexec_unit_state_t st = COEXEC_UNIT_READY;
        int rc;
        if (atomic_load_explicit(&wl.done, memory_order_acquire) == n) {
            if ((rc = coexec_thread_get_state(t, &st)) != COEXEC_OK)
                return bench_fail(r, "coexec_thread_get_state: %s",
                                  coexec_err_name(rc));
            if (st == COEXEC_UNIT_BLOCKED)
                return 0;
        }
        if ((spins & 1023) == 0) {
            if ((rc = atomic_load(&wl.rc)) != COEXEC_OK)
                return bench_fail(r, "sleeper: %s (%s)", coexec_err_name(rc),
                                  coexec_strerror(rc));
            if (st == COEXEC_UNIT_TERMINATED)
                return bench_fail(r, "the sleeper finished early");
            if (bench_now_ns() - start > HANG_NS)
                return bench_fail(r, "round %lu: the sleeper did not park "
                                     "again within 10 s", n + 1);
        }
    }
}

static int bench_wake_latency_2es(bench_run_t *r)
{
    struct split sp;
    coexec_thread_t t = {0};
    uint64_t *sorted = malloc(sizeof wl.lat);
    unsigned long n = 0;
    memset(&wl, 0, sizeof wl);
    if (!sorted)
        return bench_fail(r, "out of memory");
    if (split_start(r, &sp) != 0) {
        free(sorted);
        return -1;
    }
    CK(coexec_thread_create(sp.pool[1], wl_sleeper, NULL, NULL, &t));
    {
        uint64_t start = bench_now_ns();
        while (!atomic_load_explicit(&wl.waker_ready, memory_order_acquire)) {
            int rc = atomic_load(&wl.rc);
            if (rc != COEXEC_OK) {
                bench_fail(r, "sleeper: %s", coexec_err_name(rc));
                goto out;
            }
            if (bench_now_ns() - start > HANG_NS) {
                bench_fail(r, "the sleeper did not start within 10 s");
                goto out;
            }
        }
    }
    for (int rep = 0; rep < r->warmups + r->reps; rep++) {
        for (int s = 0; s < WL_SAMPLES; s++) {
            if (wl_wait_parked(r, t, n) != 0)
                goto out;
            /* Leave xs1's scheduler idle a moment (it spins; the default
             * spin budget before it sleeps is far longer). */
            uint64_t d0 = coexec_now_ns();
            while (coexec_now_ns() - d0 < WL_DELAY_NS)
                ;
            n++;
            atomic_store_explicit(&wl.t_wake, coexec_now_ns(),
                                  memory_order_relaxed);
            atomic_store_explicit(&wl.round, n, memory_order_release);
            CK(coexec_waker_wake(wl.waker));
        }
        if (wl_wait_parked(r, t, n) != 0)
            goto out;
        memcpy(sorted, wl.lat, sizeof wl.lat);
        qsort(sorted, WL_SAMPLES, sizeof sorted[0], cmp_u64);
        if (rep >= r->warmups)
            bench_sample(r, (double)sorted[WL_SAMPLES / 2]);
    }
    if (self_rank() != 0) {
        bench_fail(r, "the main ULT left xstream 0");
        goto out;
    }
    {
        char text[256];
        snprintf(text, sizeof text,
                 "sleeper ULT parked on xs1 (coexec_self_waker + coexec_park), "
                 "woken by the main ULT on xs0 %d ns after it parked; %d wakes "
                 "per rep, median each; last rep p10 %llu, p90 %llu, p99 %llu "
                 "ns",
                 WL_DELAY_NS, WL_SAMPLES,
                 (unsigned long long)sorted[WL_SAMPLES / 10],
                 (unsigned long long)sorted[WL_SAMPLES * 9 / 10],
                 (unsigned long long)sorted[WL_SAMPLES * 99 / 100]);
        bench_append_setup(r, text);
    }
out:
    if (t.p) {
        atomic_store_explicit(&wl.round, WL_STOP, memory_order_release);
        if (atomic_load(&wl.waker_ready)) {
            int rc = coexec_waker_wake(wl.waker);
            if (rc != COEXEC_OK)
                bench_fail(r, "coexec_waker_wake: %s", coexec_err_name(rc));
        }
        int rc = coexec_thread_free(&t);
        if (rc != COEXEC_OK)
            bench_fail(r, "coexec_thread_free: %s", coexec_err_name(rc));
        if (!r->error[0] && (wl.rank[0] != 1 || wl.rank[1] != 1))
            bench_fail(r, "the sleeper ran on xstream %d, then %d, not 1",
                       wl.rank[0], wl.rank[1]);
        if (!r->error[0] && wl.early)
            bench_fail(r, "%ld wakes ran before they were sent: a park "
                          "returned without a wake",
                       wl.early);
    }
    split_stop(r, &sp);
    free(sorted);
    return bench_finish(r);
}

/* ---- mutex_contended -------------------------------------------------------- */

#define MX_ULTS 4       /* two on each stream */
#define MX_PAIRS 25000  /* lock/unlock pairs per ULT per rep */

static struct {
    coexec_mutex_t m;
    long counter; /* guarded by m */
    _Alignas(64) atomic_int ready;
    atomic_int go;
    atomic_int rc;
    atomic_int wrong_rank;
} mx;

static void mx_worker(void *arg)
{
    int want_rank = (int)(intptr_t)arg;
    int rc;
    if (self_rank() != want_rank)
        atomic_store(&mx.wrong_rank, 1);
    atomic_fetch_add(&mx.ready, 1);
    /* Yield, not spin: the other ULT of this stream must get to run. */
    while (!atomic_load_explicit(&mx.go, memory_order_acquire))
        if ((rc = coexec_yield()) != COEXEC_OK) {
            note_rc(&mx.rc, rc);
            return;
        }
    for (int i = 0; i < MX_PAIRS; i++) {
        if ((rc = coexec_mutex_lock(&mx.m)) != COEXEC_OK) {
            note_rc(&mx.rc, rc);
            return;
        }
        mx.counter++; /* the critical section */
        if ((rc = coexec_mutex_unlock(&mx.m)) != COEXEC_OK) {
            note_rc(&mx.rc, rc);
            return;
        }
    }
    if (self_rank() != want_rank)
        atomic_store(&mx.wrong_rank, 1);
}

static int bench_mutex_contended(bench_run_t *r)
{
    struct split sp;
    coexec_thread_t t[MX_ULTS];
    int m_up = 0;
    memset(&mx, 0, sizeof mx);
    memset(t, 0, sizeof t);
    if (split_start(r, &sp) != 0)
        return -1;
    CK(coexec_mutex_init(&mx.m, COEXEC_MUTEX_PLAIN));
    m_up = 1;
    for (int rep = 0; rep < r->warmups + r->reps; rep++) {
        atomic_store(&mx.ready, 0);
        atomic_store(&mx.go, 0);
        mx.counter = 0;
        for (int i = 0; i < MX_ULTS; i++)
            CK(coexec_thread_create(sp.pool[i % 2], mx_worker,
                                    (void *)(intptr_t)(i % 2), NULL, &t[i]));
        uint64_t start = bench_now_ns();
        while (atomic_load(&mx.ready) < MX_ULTS) {
            CK(coexec_yield());
            if (bench_now_ns() - start > HANG_NS) {
                bench_fail(r, "the workers did not start within 10 s");
                atomic_store(&mx.go, 1);
                goto out;
            }
        }
        uint64_t t0 = bench_now_ns();
        atomic_store_explicit(&mx.go, 1, memory_order_release);
        for (int i = 0; i < MX_ULTS; i++)
            CK(coexec_thread_free(&t[i]));
        uint64_t t1 = bench_now_ns();
        int rc = atomic_load(&mx.rc);
        if (rc != COEXEC_OK) {
            bench_fail(r, "worker: %s (%s)", coexec_err_name(rc),
                       coexec_strerror(rc));
            goto out;
        }
        if (mx.counter != (long)MX_ULTS * MX_PAIRS) {
            bench_fail(r, "the counter is %ld after %d locked increments: "
                          "the mutex let two owners in",
                       mx.counter, MX_ULTS * MX_PAIRS);
            goto out;
        }
        if (atomic_load(&mx.wrong_rank)) {
            bench_fail(r, "a worker ran on the wrong stream");
            goto out;
        }
        if (rep >= r->warmups)
            bench_sample(r, (double)(t1 - t0) / ((double)MX_ULTS * MX_PAIRS));
    }
    bench_append_setup(r, "4 ULTs, 2 per stream, each 25,000 lock/unlock pairs "
                          "of one coexec_mutex_t around an increment; from "
                          "the start signal to the last join, per pair");
out:
    atomic_store(&mx.go, 1);
    for (int i = 0; i < MX_ULTS; i++)
        if (t[i].p) {
            int rc = coexec_thread_free(&t[i]);
            if (rc != COEXEC_OK)
                bench_fail(r, "coexec_thread_free: %s", coexec_err_name(rc));
        }
    if (m_up) {
        int rc = coexec_mutex_destroy(&mx.m);
        if (rc != COEXEC_OK)
            bench_fail(r, "coexec_mutex_destroy: %s", coexec_err_name(rc));
    }
    split_stop(r, &sp);
    return bench_finish(r);
}

/* ---- channel_pingpong_2es ----------------------------------------------------- */

#define CP_ROUNDS 100000

struct cp_msg {
    uint64_t seq;
    uint64_t payload;
};

static struct {
    coexec_channel_t to_pong, to_main; /* capacity 1 each */
    atomic_int rc;
    long answered;
    int rank[2];
} cp;

static void cp_ponger(void *arg)
{
    (void)arg;
    struct cp_msg m;
    int rc;
    cp.rank[0] = self_rank();
    for (;;) {
        rc = coexec_channel_recv(&cp.to_pong, &m);
        if (rc == COEXEC_ECLOSED) { /* the end of the run */
            rc = COEXEC_OK;
            break;
        }
        if (rc != COEXEC_OK)
            break;
        m.seq++;
        m.payload = ~m.payload;
        if ((rc = coexec_channel_send(&cp.to_main, &m)) != COEXEC_OK)
            break;
        cp.answered++;
    }
    cp.rank[1] = self_rank();
    if (rc != COEXEC_OK) {
        note_rc(&cp.rc, rc);
        BENCH_IGNORE(coexec_channel_close(&cp.to_main)); /* main must not wait */
    }
}

static int bench_channel_pingpong_2es(bench_run_t *r)
{
    struct split sp;
    coexec_thread_t t = {0};
    int chs = 0;
    uint64_t seq = 0;
    memset(&cp, 0, sizeof cp);
    if (split_start(r, &sp) != 0)
        return -1;
    CK(coexec_channel_init(&cp.to_pong, sizeof(struct cp_msg), 1));
    chs = 1;
    CK(coexec_channel_init(&cp.to_main, sizeof(struct cp_msg), 1));
    chs = 2;
    CK(coexec_thread_create(sp.pool[1], cp_ponger, NULL, NULL, &t));
    for (int rep = 0; rep < r->warmups + r->reps; rep++) {
        uint64_t t0 = bench_now_ns();
        for (int i = 0; i < CP_ROUNDS; i++, seq += 2) {
            struct cp_msg m = {seq, seq * 0x9e3779b97f4a7c15ull};
            CK(coexec_channel_send(&cp.to_pong, &m));
            CK(coexec_channel_recv(&cp.to_main, &m));
            if (BENCH_UNLIKELY(m.seq != seq + 1 ||
                               m.payload != ~(seq * 0x9e3779b97f4a7c15ull))) {
                bench_fail(r, "round %d: wrong answer (seq %llu, expected "
                              "%llu)",
                           i, (unsigned long long)m.seq,
                           (unsigned long long)seq + 1);
                goto out;
            }
        }
        uint64_t t1 = bench_now_ns();
        if (self_rank() != 0) {
            bench_fail(r, "the main ULT left xstream 0");
            goto out;
        }
        if (rep >= r->warmups)
            bench_sample(r, (double)(t1 - t0) / CP_ROUNDS);
    }
    bench_append_setup(r, "main ULT on xs0 sends a 16-byte message, the ULT "
                          "on xs1 receives it and sends it back changed; two "
                          "channels of capacity 1; 100,000 round trips per "
                          "rep");
out:
    if (chs >= 1)
        BENCH_IGNORE(coexec_channel_close(&cp.to_pong)); /* the ponger's stop */
    if (t.p) {
        int rc = coexec_thread_free(&t);
        if (rc != COEXEC_OK)
            bench_fail(r, "coexec_thread_free: %s", coexec_err_name(rc));
        rc = atomic_load(&cp.rc);
        if (rc != COEXEC_OK)
            bench_fail(r, "ponger: %s (%s)", coexec_err_name(rc),
                       coexec_strerror(rc));
        long expect = (long)(r->warmups + r->reps) * CP_ROUNDS;
        if (!r->error[0] && cp.answered != expect)
            bench_fail(r, "the ponger answered %ld times, not %ld",
                       cp.answered, expect);
        if (!r->error[0] && (cp.rank[0] != 1 || cp.rank[1] != 1))
            bench_fail(r, "the ponger ran on xstream %d, then %d, not 1",
                       cp.rank[0], cp.rank[1]);
    }
    if (chs >= 1 && coexec_channel_destroy(&cp.to_pong) != COEXEC_OK)
        bench_fail(r, "coexec_channel_destroy failed");
    if (chs >= 2 && coexec_channel_destroy(&cp.to_main) != COEXEC_OK)
        bench_fail(r, "coexec_channel_destroy failed");
    split_stop(r, &sp);
    return bench_finish(r);
}

/* ---- timer lateness on busy streams ------------------------------------ */

/*
 * Streams 1 and 3 share a CPU and each runs a hog that computes for
 * LAT_HOG_NS between yields; streams 0 and 2 share the other CPU and are
 * idle (the main ULT sleeps between spawns). Every LAT_SPAWN_NS the main
 * ULT starts a sleeper on stream 1 or 3, pinned so that it starts there;
 * it unpins itself (its timer goes in the busy stream's heap), sleeps
 * LAT_SLEEP_NS and records how late it ran again. The figure is the
 * median or the 99th percentile of a rep's sleepers, in microseconds.
 */
#define LAT_SLEEP_NS 1000000ull
#define LAT_SPAWN_NS 250000ull
#define LAT_HOG_NS 100000ull
#define LAT_REP_NS 100000000ull
#define LAT_MAX (LAT_REP_NS / LAT_SPAWN_NS + 16)

static struct {
    atomic_int stop;
    atomic_int slot; /* entries of late[] taken */
    atomic_int n;    /* entries written */
    atomic_int rc;   /* the first error of a sleeper or hog */
    double late[LAT_MAX];
} lat;

static void lat_hog(void *arg)
{
    (void)arg;
    while (!atomic_load_explicit(&lat.stop, memory_order_relaxed)) {
        uint64_t t = bench_now_ns() + LAT_HOG_NS;
        while (bench_now_ns() < t)
            ;
        note_rc(&lat.rc, coexec_yield());
    }
}

static void lat_sleeper(void *arg)
{
    (void)arg;
    coexec_thread_t self;
    int rc = coexec_thread_self(&self);
    if (rc == COEXEC_OK)
        rc = coexec_unit_set_pinned(coexec_thread_unit(self), 0);
    uint64_t dl = bench_now_ns() + LAT_SLEEP_NS;
    if (rc == COEXEC_OK)
        rc = coexec_sleep_until(dl);
    double late = (double)(bench_now_ns() - dl) / 1e3;
    note_rc(&lat.rc, rc);
    int i = atomic_fetch_add(&lat.slot, 1);
    if (i < (int)LAT_MAX)
        lat.late[i] = late;
    atomic_fetch_add(&lat.n, 1); /* after the entry: the reader's count */
}

static int timer_lateness(bench_run_t *r, double pct)
{
    coexec_pool_t pool0;
    coexec_thread_t hogs[2] = {{0}, {0}};
    coexec_xstream_t busy[2];
    memset(&lat, 0, sizeof lat);
    if (bench_need_cpus(r, 2) != 0)
        return -1;
    if (bench_rt_start(r, 4, &pool0) != 0)
        return -1;
    coexec_thread_attr_t a;
    CK(coexec_thread_attr_init(&a));
    a.pinned = 1;
    CK(coexec_xstream_by_rank(1, &busy[0]));
    CK(coexec_xstream_by_rank(3, &busy[1]));
    for (int k = 0; k < 2; k++)
        CK(coexec_thread_create_on(busy[k], lat_hog, NULL, &a, &hogs[k]));
    for (int rep = 0; rep < r->warmups + r->reps; rep++) {
        int spawned = 0;
        atomic_store(&lat.slot, 0);
        atomic_store(&lat.n, 0);
        uint64_t end = bench_now_ns() + LAT_REP_NS;
        while (bench_now_ns() < end && spawned < (int)LAT_MAX) {
            CK(coexec_thread_create_on(busy[spawned % 2], lat_sleeper, NULL,
                                       &a, NULL));
            spawned++;
            CK(coexec_sleep_ns(LAT_SPAWN_NS));
        }
        uint64_t give_up = bench_now_ns() + 10000000000ull;
        while (atomic_load(&lat.n) < spawned && bench_now_ns() < give_up)
            CK(coexec_sleep_ns(LAT_SPAWN_NS));
        int n = atomic_load(&lat.n);
        if (n < spawned) {
            bench_fail(r, "%d of %d sleepers did not come back", spawned - n,
                       spawned);
            goto out;
        }
        int rc = atomic_load(&lat.rc);
        if (rc != COEXEC_OK) {
            bench_fail(r, "a sleeper or hog: %s", coexec_err_name(rc));
            goto out;
        }
        bench_sort(lat.late, n);
        if (rep >= r->warmups)
            bench_sample(r, lat.late[(int)((n - 1) * pct)]);
    }
    bench_append_setup(r, "streams 1 and 3 share a CPU, each busy with a hog "
                          "that yields every 100 us; 0 and 2 idle; a ULT "
                          "started on 1 or 3 every 250 us sleeps 1 ms there; "
                          "lateness of its wake, per rep of 100 ms");
out:
    atomic_store(&lat.stop, 1);
    for (int k = 0; k < 2; k++)
        if (hogs[k].p && coexec_thread_free(&hogs[k]) != COEXEC_OK)
            bench_fail(r, "coexec_thread_free failed");
    (void)bench_rt_stop(r);
    return bench_finish(r);
}

static int bench_timer_lateness_p50(bench_run_t *r)
{
    return timer_lateness(r, 0.50);
}

static int bench_timer_lateness_p99(bench_run_t *r)
{
    return timer_lateness(r, 0.99);
}

/* Goals: docs/BENCHMARKS.md; main.c pairs each figure with its in-run peer. */
const bench_def_t bench_wait_defs[] = {
    {"eventual_pingpong_2es", "ns/roundtrip",
     "a ULT on each of 2 xstreams, 100,000 round trips through two "
     "eventuals (set / wait / reset)",
     bench_eventual_pingpong_2es, 1, 250,
     "peers Argobots, Qthreads (not measured here); floor 2 x "
     "xes_spin_pingpong"},
    {"wake_latency_2es", "ns",
     "a ULT parked on xstream 1 is woken from xstream 0 through its waker: "
     "wake to running, median of 5,000",
     bench_wake_latency_2es, 1, 0,
     "no goal; floor 1 x xes_spin_pingpong"},
    {"mutex_contended", "ns/pair",
     "4 ULTs on 2 xstreams lock/unlock one coexec_mutex_t (increment "
     "inside); per pair",
     bench_mutex_contended, 1, 0,
     "no goal; peer: pthread_mutex_contended_4t"},
    {"channel_pingpong_2es", "ns/roundtrip",
     "a ULT on each of 2 xstreams, 100,000 round trips of a 16-byte "
     "message through two capacity-1 channels",
     bench_channel_pingpong_2es, 1, 0,
     "no goal; peer: pthread_channel_pingpong_2t"},
    {"timer_lateness_busy_p50", "us",
     "1 ms sleeps of ULTs on two busy streams sharing a CPU, idle streams "
     "beside them: median lateness",
     bench_timer_lateness_p50, 1, 0,
     "no goal; a busy stream firing only its own timers: ms "
     "(its next event check, or its next time on the CPU)"},
    {"timer_lateness_busy_p99", "us",
     "the same: 99th percentile",
     bench_timer_lateness_p99, 1, 0, NULL},
    {NULL, NULL, NULL, NULL, 0, 0, NULL},
};
