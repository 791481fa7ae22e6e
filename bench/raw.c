/*
 * bench/raw.c: the hardware and system floors: the cross-core cache-line
 * round trip, one raw context switch of the library's own routine, and a
 * plain system call.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "arch/context.h"
#include "bench.h"

/* ---- xes_spin_pingpong ---------------------------------------------------- */

#define SPIN_ROUNDS 100000
#define SPIN_STOP (UINT64_MAX - 1) /* even: never a request */

struct spin_shared {
    _Alignas(64) _Atomic uint64_t line; /* the one cache line bounced */
    _Alignas(64) _Atomic int ready;
    int cpu[2];
    int pin_err[2];
    bench_run_t *r;
};

/* CPU 1's side: answers request 2k+1 with 2k+2 until told to stop. */
static void *spin_responder(void *p)
{
    struct spin_shared *s = p;
    s->pin_err[1] = bench_pin_self(s->cpu[1]);
    atomic_fetch_add(&s->ready, 1);
    uint64_t expect = 1;
    for (;;) {
        uint64_t v;
        while ((v = atomic_load_explicit(&s->line, memory_order_acquire)) !=
               expect)
            if (v == SPIN_STOP)
                return NULL;
        atomic_store_explicit(&s->line, expect + 1, memory_order_release);
        expect += 2;
    }
}

/* CPU 0's side: times the round trips. */
static void *spin_timer(void *p)
{
    struct spin_shared *s = p;
    bench_run_t *r = s->r;
    s->pin_err[0] = bench_pin_self(s->cpu[0]);
    atomic_fetch_add(&s->ready, 1);
    while (atomic_load(&s->ready) < 2)
        ;
    if (s->pin_err[0] == 0 && s->pin_err[1] == 0) {
        uint64_t seq = 0;
        for (int rep = 0; rep < r->warmups + r->reps; rep++) {
            uint64_t t0 = bench_now_ns();
            for (int i = 0; i < SPIN_ROUNDS; i++) {
                atomic_store_explicit(&s->line, seq + 1, memory_order_release);
                while (atomic_load_explicit(&s->line, memory_order_acquire) !=
                       seq + 2)
                    ;
                seq += 2;
            }
            uint64_t t1 = bench_now_ns();
            if (rep >= r->warmups)
                bench_sample(r, (double)(t1 - t0) / SPIN_ROUNDS);
        }
    }
    atomic_store(&s->line, SPIN_STOP);
    return NULL;
}

static int bench_xes_spin_pingpong(bench_run_t *r)
{
    if (bench_need_cpus(r, 2) != 0)
        return -1;
    static struct spin_shared s;
    memset(&s, 0, sizeof s);
    s.cpu[0] = bench_cpus[0];
    s.cpu[1] = bench_cpus[1];
    s.r = r;
    pthread_t a, b;
    if (pthread_create(&b, NULL, spin_responder, &s) != 0)
        return bench_fail(r, "pthread_create failed");
    if (pthread_create(&a, NULL, spin_timer, &s) != 0) {
        atomic_store(&s.line, SPIN_STOP);
        pthread_join(b, NULL);
        return bench_fail(r, "pthread_create failed");
    }
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    bench_setup(r, "2 pthreads on CPU %d and CPU %d, %d round trips per rep",
                s.cpu[0], s.cpu[1], SPIN_ROUNDS);
    for (int i = 0; i < 2; i++)
        if (s.pin_err[i])
            return bench_fail(r, "cannot pin a thread to CPU %d: %s",
                              s.cpu[i], strerror(s.pin_err[i]));
    return 0;
}

/* ---- ctx_switch ------------------------------------------------------------ */

#define CTX_ROUNDS 1000000 /* 2 switches each */
#define CTX_STACK (64 * 1024)

static void *ctx_main_sp, *ctx_peer_sp;
static long ctx_peer_count;

static void ctx_peer(void *arg)
{
    (void)arg;
    for (;;) {
        ctx_peer_count++;
        coexec__ctx_switch(&ctx_peer_sp, ctx_main_sp);
    }
}

static int bench_ctx_switch(bench_run_t *r)
{
    void *stack = aligned_alloc(64, CTX_STACK);
    if (!stack)
        return bench_fail(r, "out of memory");
    ctx_peer_count = 0;
    ctx_peer_sp = coexec__ctx_make(stack, CTX_STACK, ctx_peer, NULL);
    for (int rep = 0; rep < r->warmups + r->reps; rep++) {
        uint64_t t0 = bench_now_ns();
        for (int i = 0; i < CTX_ROUNDS; i++)
            coexec__ctx_switch(&ctx_main_sp, ctx_peer_sp);
        uint64_t t1 = bench_now_ns();
        if (rep >= r->warmups)
            bench_sample(r, (double)(t1 - t0) / (2.0 * CTX_ROUNDS));
    }
    /* The peer stays parked inside its switch: its stack can go. */
    free(stack);
    long expect = (long)(r->warmups + r->reps) * CTX_ROUNDS;
    bench_setup(r, "coexec__ctx_switch between 2 contexts, %d round trips "
                   "per rep", CTX_ROUNDS);
    if (ctx_peer_count != expect)
        return bench_fail(r, "the peer context ran %ld times, not %ld",
                          ctx_peer_count, expect);
    return 0;
}

/* ---- syscall_direct --------------------------------------------------------- */

#define SYSCALL_CALLS 100000

static int bench_syscall_direct(bench_run_t *r)
{
    long want = (long)getppid(), bad = 0;
    for (int rep = 0; rep < r->warmups + r->reps; rep++) {
        uint64_t t0 = bench_now_ns();
        for (int i = 0; i < SYSCALL_CALLS; i++)
            bad |= syscall(SYS_getppid) ^ want;
        uint64_t t1 = bench_now_ns();
        if (rep >= r->warmups)
            bench_sample(r, (double)(t1 - t0) / SYSCALL_CALLS);
    }
    if (bad)
        return bench_fail(r, "syscall(SYS_getppid) returned a wrong value");
    return 0;
}

const bench_def_t bench_raw_defs[] = {
    {"xes_spin_pingpong", "ns/roundtrip",
     "floor: 2 pthreads pinned to the first 2 CPUs bounce one cache line",
     bench_xes_spin_pingpong, 1, 0,
     "the floor of this run's 2-xstream figures: read them next to it (it "
     "moves as the host places the vCPUs)"},
    {"ctx_switch", "ns/switch",
     "one raw coexec__ctx_switch between two contexts (no runtime)",
     bench_ctx_switch, 2, 0,
     "compare with a Boost.Context jump or glibc swapcontext timed on the "
     "same machine (not measured here)"},
    {"syscall_direct", "ns/call",
     "syscall(SYS_getppid) made directly: reference for offloading",
     bench_syscall_direct, 1, 0, "the floor of offload_roundtrip_2es"},
    {NULL, NULL, NULL, NULL, 0, 0, NULL},
};
