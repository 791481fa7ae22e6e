/*
 * Tests of the raw context-switch contract of src/arch/context.h, linked
 * against the selected backend's files only (no runtime).
 *
 * Usage: test_context [suite]   (no argument runs every suite)
 *
 * Every CUnit assertion runs in the main context: an assertion in another
 * context could not unwind through a foreign stack (CU_ASSERT_FATAL
 * longjmps), so the other contexts count what they saw in plain variables
 * that the main context checks.
 *
 * Under AddressSanitizer and ThreadSanitizer each switch is annotated
 * (__sanitizer_{start,finish}_switch_fiber, __tsan_switch_to_fiber), the way
 * src/thread/ wraps the same primitive. Unannotated, ASan does not know
 * which stack is current (it warns at the first noreturn call that false
 * reports may follow) and TSan keeps one shadow call stack for all
 * contexts, so its reports would be wrong. The raw switch underneath is
 * unchanged, so the sanitizer builds check the contract too.
 */
#define _GNU_SOURCE
#include <fenv.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(COEXEC_CUNIT_SHIM)
#include "cunit_shim.h"
#else
#include <CUnit/Basic.h>
#endif

#include "arch/context.h"

#if defined(__SANITIZE_ADDRESS__)
#define TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TEST_ASAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define TEST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TEST_TSAN 1
#endif
#endif
#ifdef TEST_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#ifdef TEST_TSAN
#include <sanitizer/tsan_interface.h>
#endif

/* ------------------------------------------------------------------------ */
/* Contexts ("fibers") and the annotated switch.                            */

typedef struct fiber {
    void *sp;          /* saved stack pointer, as the contract defines it */
    char *mem;         /* allocation holding the stack, NULL for main */
    char *stack;       /* [stack, stack + size) given to coexec__ctx_make */
    size_t size;
    const void *asan_lo; /* stack bounds announced to ASan */
    size_t asan_size;
    void *tsan;        /* TSan fiber handle */
    int id;
} fiber_t;

static fiber_t g_main;   /* the thread's own context */
static fiber_t *g_cur;   /* the context running now */
static fiber_t *g_prev;  /* the context that last switched to g_cur */
static unsigned g_errors; /* failures seen outside the main context */

/* Counts a failure seen in a context other than main. */
#define FIBER_CHECK(cond)                                                      \
    do {                                                                       \
        if (!(cond)) {                                                         \
            if (g_errors < 10)                                                 \
                fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__,         \
                        __LINE__, #cond);                                      \
            g_errors++;                                                        \
        }                                                                      \
    } while (0)

static void fiber_init_main(void)
{
    memset(&g_main, 0, sizeof g_main);
    g_main.id = -1;
#ifdef TEST_TSAN
    g_main.tsan = __tsan_get_current_fiber();
#endif
    g_cur = &g_main;
    g_prev = NULL;
    g_errors = 0;
}

/* Annotations before a raw switch from g_cur to `to`; `final` says the
 * leaving context will never be resumed. Returns ASan's fake-stack token. */
static void *switch_begin(fiber_t *to, bool final)
{
    void *fake = NULL;
#ifdef TEST_ASAN
    __sanitizer_start_switch_fiber(final ? NULL : &fake, to->asan_lo,
                                   to->asan_size);
#else
    (void)final;
#endif
#ifdef TEST_TSAN
    __tsan_switch_to_fiber(to->tsan, 0);
#endif
    g_prev = g_cur;
    g_cur = to;
    return fake;
}

/* Annotations after a context is resumed (fake == NULL: for the first
 * time). ASan then reports the stack it came from, which is how the main
 * context's bounds are learnt. */
static void switch_end(void *fake)
{
#ifdef TEST_ASAN
    const void *lo = NULL;
    size_t size = 0;
    __sanitizer_finish_switch_fiber(fake, &lo, &size);
    if (g_prev != NULL && g_prev->asan_lo == NULL) {
        g_prev->asan_lo = lo;
        g_prev->asan_size = size;
    }
#else
    (void)fake;
#endif
}

/* Switches from the running context to `to`. Not inlined so that callers
 * see a real call, as users of the contract do. */
static __attribute__((noinline)) void fiber_switch(fiber_t *to, bool final)
{
    fiber_t *from = g_cur;
    void *fake = switch_begin(to, final);
    coexec__ctx_switch(&from->sp, to->sp);
    switch_end(fake);
}

/* Leaves the running context for good. */
static __attribute__((noreturn)) void fiber_exit(fiber_t *to)
{
    fiber_switch(to, true);
    fprintf(stderr, "a finished context was resumed\n");
    abort();
}

/* First statement of every entry function. */
static void fiber_started(void) { switch_end(NULL); }

/*
 * Allocates a stack of `size` bytes whose base is `offset` bytes (a multiple
 * of 16) past a 64-byte aligned address, with canary bytes on both sides,
 * and prepares a context on it.
 */
#define CANARY_BYTES 64
#define CANARY 0xa5

static bool fiber_create(fiber_t *f, size_t size, size_t offset,
                         coexec__ctx_entry_t entry, void *arg)
{
    memset(f, 0, sizeof *f);
    if (posix_memalign((void **)&f->mem, 64,
                       offset + 2 * CANARY_BYTES + size) != 0)
        return false;
    f->stack = f->mem + CANARY_BYTES + offset;
    f->size = size;
    memset(f->mem, CANARY, offset + 2 * CANARY_BYTES + size);
    f->asan_lo = f->stack;
    f->asan_size = size;
#ifdef TEST_TSAN
    f->tsan = __tsan_create_fiber(0);
#endif
    f->sp = coexec__ctx_make(f->stack, size, entry, arg);
    return f->sp != NULL;
}

/* True if nothing was written outside [stack, stack + size). */
static bool fiber_canaries_intact(const fiber_t *f)
{
    for (size_t i = 0; i < CANARY_BYTES; i++)
        if ((unsigned char)f->stack[-1 - (ptrdiff_t)i] != CANARY ||
            (unsigned char)f->stack[f->size + i] != CANARY)
            return false;
    return true;
}

/* Frees a context that has finished (left for good). */
static void fiber_destroy(fiber_t *f)
{
#ifdef TEST_TSAN
    if (f->tsan != NULL)
        __tsan_destroy_fiber(f->tsan);
#endif
#ifdef TEST_ASAN
    /* The finished context's frames leave redzones poisoned on its stack;
     * a stack that is reused must be unpoisoned, one that is freed is
     * reset by the allocator. */
    __asan_unpoison_memory_region(f->stack, f->size);
#endif
    free(f->mem);
    f->mem = NULL;
}

static uint64_t splitmix(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

#define STACK_SIZE (64 * 1024)

/* ------------------------------------------------------------------------ */
/* Suite "switch": ping-pong, round trips, the smallest stack.              */

#define PINGPONG_ROUNDS 10000
static fiber_t g_pa, g_pb;
static unsigned long g_step;
static int g_pa_done, g_pb_done;

/* Each of the three contexts checks, when it runs, that the shared step
 * counter is where the rotation main -> A -> B -> main puts it, and keeps
 * its own round counter in a local that must survive its switches. */
static void pingpong_a(void *arg)
{
    fiber_started();
    FIBER_CHECK(arg == &g_pa);
    for (unsigned long i = 0; i < PINGPONG_ROUNDS; i++) {
        FIBER_CHECK(g_step == 3 * i);
        g_step++;
        fiber_switch(&g_pb, false);
    }
    g_pa_done = 1;
    fiber_switch(&g_pb, true);
    abort();
}

static void pingpong_b(void *arg)
{
    fiber_started();
    FIBER_CHECK(arg == &g_pb);
    for (unsigned long i = 0; i < PINGPONG_ROUNDS; i++) {
        FIBER_CHECK(g_step == 3 * i + 1);
        g_step++;
        fiber_switch(&g_main, false);
    }
    g_pb_done = 1;
    fiber_exit(&g_main);
}

static void t_pingpong(void)
{
    fiber_init_main();
    g_step = 0;
    g_pa_done = g_pb_done = 0;
    CU_ASSERT_FATAL(fiber_create(&g_pa, STACK_SIZE, 0, pingpong_a, &g_pa));
    CU_ASSERT_FATAL(fiber_create(&g_pb, STACK_SIZE, 0, pingpong_b, &g_pb));
    unsigned long bad = 0;
    for (unsigned long i = 0; i < PINGPONG_ROUNDS; i++) {
        fiber_switch(&g_pa, false);
        if (g_step != 3 * i + 2)
            bad++;
        g_step++;
    }
    /* A and B leave their loops and exit: A for good to B, B to main. */
    fiber_switch(&g_pa, false);
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT_EQUAL(g_step, 3 * PINGPONG_ROUNDS);
    CU_ASSERT(g_pa_done && g_pb_done);
    CU_ASSERT_EQUAL(g_errors, 0);
    CU_ASSERT(fiber_canaries_intact(&g_pa));
    CU_ASSERT(fiber_canaries_intact(&g_pb));
    fiber_destroy(&g_pa);
    fiber_destroy(&g_pb);
}

#define ROUNDTRIPS 1000000UL
static fiber_t g_rt;
static volatile uint64_t g_rt_val, g_rt_reply;

static uint64_t rt_value(unsigned long i) { return i * 0x9e3779b97f4a7c15u ^ 0x5555; }

static void roundtrip_entry(void *arg)
{
    fiber_started();
    for (unsigned long i = 0;; i++) {
        uint64_t v = g_rt_val;
        FIBER_CHECK(v == rt_value(i));
        g_rt_reply = ~v + i;
        fiber_switch(&g_main, false);
        if (i + 1 == ROUNDTRIPS)
            break;
    }
    fiber_exit(&g_main);
}

static void t_roundtrip(void)
{
    fiber_init_main();
    CU_ASSERT_FATAL(fiber_create(&g_rt, STACK_SIZE, 0, roundtrip_entry, NULL));
    unsigned long bad = 0;
    double t0 = now_ns();
    for (unsigned long i = 0; i < ROUNDTRIPS; i++) {
        g_rt_val = rt_value(i);
        fiber_switch(&g_rt, false);
        if (g_rt_reply != ~rt_value(i) + i)
            bad++;
    }
    double t1 = now_ns();
    /* The last round trip left the context waiting; let it exit. */
    fiber_switch(&g_rt, false);
    printf("\n    %lu round trips, %.1f ns per switch ", ROUNDTRIPS,
           (t1 - t0) / (2.0 * ROUNDTRIPS));
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT_EQUAL(g_errors, 0);
    CU_ASSERT(fiber_canaries_intact(&g_rt));
    fiber_destroy(&g_rt);
}

/* A context on the smallest stack the contract accepts runs real frames
 * and switches several times without writing outside its stack. */
static fiber_t g_small;

static __attribute__((noinline)) unsigned small_work(unsigned seed)
{
    volatile unsigned char buf[512];
    for (unsigned i = 0; i < sizeof buf; i++)
        buf[i] = (unsigned char)(seed + i);
    unsigned sum = 0;
    for (unsigned i = 0; i < sizeof buf; i++)
        sum += buf[i];
    return sum;
}

static void small_entry(void *arg)
{
    fiber_started();
    unsigned *out = arg;
    for (unsigned i = 0; i < 16; i++) {
        out[i] = small_work(i);
        fiber_switch(&g_main, false);
    }
    fiber_exit(&g_main);
}

static void t_min_stack(void)
{
    unsigned out[16] = {0};
    fiber_init_main();
    CU_ASSERT_FATAL(fiber_create(&g_small, COEXEC__CTX_MIN_STACK, 0,
                                 small_entry, out));
    for (unsigned i = 0; i <= 16; i++)
        fiber_switch(&g_small, false);
    for (unsigned i = 0; i < 16; i++)
        CU_ASSERT_EQUAL(out[i], small_work(i));
    CU_ASSERT(fiber_canaries_intact(&g_small));
    CU_ASSERT_EQUAL(g_errors, 0);
    fiber_destroy(&g_small);
}

/*
 * A stack may carry a new context once its previous context has left for
 * good, which is how stack caches recycle them. Under ASan the finished
 * context's frames never returned, so their redzones are still poisoned:
 * whoever recycles a stack must unpoison it before coexec__ctx_make writes
 * the first frame there, or ASan reports a false stack-buffer-overflow.
 */
static fiber_t g_reuse;

static void reuse_entry(void *arg)
{
    fiber_started();
    unsigned *out = arg;
    volatile unsigned char buf[256];
    for (unsigned i = 0; i < sizeof buf; i++)
        buf[i] = (unsigned char)(*out + i);
    fiber_switch(&g_main, false);
    unsigned sum = 0;
    for (unsigned i = 0; i < sizeof buf; i++)
        sum += buf[i];
    *out = sum;
    /* Not fiber_exit: ASan unpoisons the whole stack before a call to a
     * noreturn function, which would hide what this test is about. */
    fiber_switch(&g_main, true);
    abort();
}

static void t_stack_reuse(void)
{
    fiber_init_main();
    CU_ASSERT_FATAL(fiber_create(&g_reuse, STACK_SIZE, 0, reuse_entry, NULL));
    unsigned bad = 0;
    for (unsigned round = 0; round < 100; round++) {
        unsigned v = round;
#ifdef TEST_ASAN
        __asan_unpoison_memory_region(g_reuse.stack, g_reuse.size);
#endif
#ifdef TEST_TSAN
        /* A TSan fiber describes one context; give each its own. */
        __tsan_destroy_fiber(g_reuse.tsan);
        g_reuse.tsan = __tsan_create_fiber(0);
#endif
        g_reuse.sp = coexec__ctx_make(g_reuse.stack, g_reuse.size,
                                      reuse_entry, &v);
        fiber_switch(&g_reuse, false);
        fiber_switch(&g_reuse, false);
        unsigned want = 0;
        for (unsigned i = 0; i < 256; i++)
            want += (unsigned char)(round + i);
        bad += v != want;
    }
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT(fiber_canaries_intact(&g_reuse));
    CU_ASSERT_EQUAL(g_errors, 0);
    fiber_destroy(&g_reuse);
}

/* ------------------------------------------------------------------------ */
/* Suite "registers": callee-saved registers survive the switch.            */

/*
 * test_regs_switch(from_sp, to_sp, seed, out) saves the caller's
 * callee-saved registers, loads pattern k = seed + k * 0x9e3779b97f4a7c15
 * into each of them, calls coexec__ctx_switch(from_sp, to_sp), and when the
 * switch returns stores the registers, in pattern order, into out[]. If the
 * switch preserves them, out[k - 1] is pattern k. Every context that runs in
 * between loads its own patterns, so a register that is not restored shows
 * another context's value.
 *   x86-64:  rbx, r12, r13, r14, r15, rbp                     (6 words)
 *   AArch64: x19-x28, x29, d8-d15                             (19 words)
 */
#define REGS_STEP 0x9e3779b97f4a7c15u
#if defined(__x86_64__)
#define REGS_N 6
__asm__(".text\n"
        ".globl test_regs_switch\n"
        ".hidden test_regs_switch\n"
        ".type test_regs_switch, @function\n"
        ".p2align 4\n"
        "test_regs_switch:\n"
        "  pushq %rbp\n"
        "  pushq %rbx\n"
        "  pushq %r12\n"
        "  pushq %r13\n"
        "  pushq %r14\n"
        "  pushq %r15\n"
        "  subq $8, %rsp\n" /* keeps rsp 16-byte aligned at the call */
        "  movq %rcx, (%rsp)\n"
        "  movabsq $0x9e3779b97f4a7c15, %rax\n"
        "  leaq (%rdx,%rax), %rbx\n"
        "  leaq (%rbx,%rax), %r12\n"
        "  leaq (%r12,%rax), %r13\n"
        "  leaq (%r13,%rax), %r14\n"
        "  leaq (%r14,%rax), %r15\n"
        "  leaq (%r15,%rax), %rbp\n"
        "  call coexec__ctx_switch\n"
        "  movq (%rsp), %rcx\n"
        "  movq %rbx, 0(%rcx)\n"
        "  movq %r12, 8(%rcx)\n"
        "  movq %r13, 16(%rcx)\n"
        "  movq %r14, 24(%rcx)\n"
        "  movq %r15, 32(%rcx)\n"
        "  movq %rbp, 40(%rcx)\n"
        "  addq $8, %rsp\n"
        "  popq %r15\n"
        "  popq %r14\n"
        "  popq %r13\n"
        "  popq %r12\n"
        "  popq %rbx\n"
        "  popq %rbp\n"
        "  ret\n"
        ".size test_regs_switch, .-test_regs_switch\n");
#elif defined(__aarch64__)
#define REGS_N 19
__asm__(".text\n"
        ".globl test_regs_switch\n"
        ".hidden test_regs_switch\n"
        ".type test_regs_switch, %function\n"
        ".p2align 4\n"
        "test_regs_switch:\n"
        "  stp x29, x30, [sp, #-176]!\n"
        "  stp x19, x20, [sp, #16]\n"
        "  stp x21, x22, [sp, #32]\n"
        "  stp x23, x24, [sp, #48]\n"
        "  stp x25, x26, [sp, #64]\n"
        "  stp x27, x28, [sp, #80]\n"
        "  stp d8, d9, [sp, #96]\n"
        "  stp d10, d11, [sp, #112]\n"
        "  stp d12, d13, [sp, #128]\n"
        "  stp d14, d15, [sp, #144]\n"
        "  str x3, [sp, #160]\n"
        "  movz x9, #0x7c15\n"
        "  movk x9, #0x7f4a, lsl #16\n"
        "  movk x9, #0x79b9, lsl #32\n"
        "  movk x9, #0x9e37, lsl #48\n"
        "  add x19, x2, x9\n"
        "  add x20, x19, x9\n"
        "  add x21, x20, x9\n"
        "  add x22, x21, x9\n"
        "  add x23, x22, x9\n"
        "  add x24, x23, x9\n"
        "  add x25, x24, x9\n"
        "  add x26, x25, x9\n"
        "  add x27, x26, x9\n"
        "  add x28, x27, x9\n"
        "  add x29, x28, x9\n"
        "  add x10, x29, x9\n"
        "  fmov d8, x10\n"
        "  add x10, x10, x9\n"
        "  fmov d9, x10\n"
        "  add x10, x10, x9\n"
        "  fmov d10, x10\n"
        "  add x10, x10, x9\n"
        "  fmov d11, x10\n"
        "  add x10, x10, x9\n"
        "  fmov d12, x10\n"
        "  add x10, x10, x9\n"
        "  fmov d13, x10\n"
        "  add x10, x10, x9\n"
        "  fmov d14, x10\n"
        "  add x10, x10, x9\n"
        "  fmov d15, x10\n"
        "  bl coexec__ctx_switch\n"
        "  ldr x3, [sp, #160]\n"
        "  stp x19, x20, [x3, #0]\n"
        "  stp x21, x22, [x3, #16]\n"
        "  stp x23, x24, [x3, #32]\n"
        "  stp x25, x26, [x3, #48]\n"
        "  stp x27, x28, [x3, #64]\n"
        "  str x29, [x3, #80]\n"
        "  stp d8, d9, [x3, #88]\n"
        "  stp d10, d11, [x3, #104]\n"
        "  stp d12, d13, [x3, #120]\n"
        "  stp d14, d15, [x3, #136]\n"
        "  ldp x19, x20, [sp, #16]\n"
        "  ldp x21, x22, [sp, #32]\n"
        "  ldp x23, x24, [sp, #48]\n"
        "  ldp x25, x26, [sp, #64]\n"
        "  ldp x27, x28, [sp, #80]\n"
        "  ldp d8, d9, [sp, #96]\n"
        "  ldp d10, d11, [sp, #112]\n"
        "  ldp d12, d13, [sp, #128]\n"
        "  ldp d14, d15, [sp, #144]\n"
        "  ldp x29, x30, [sp], #176\n"
        "  ret\n"
        ".size test_regs_switch, .-test_regs_switch\n");
#endif

#ifdef REGS_N
void test_regs_switch(void **from_sp, void *to_sp, uint64_t seed,
                      uint64_t *out);

/* Number of out[] words that do not hold their pattern. */
static unsigned regs_mismatches(const uint64_t *out, uint64_t seed)
{
    unsigned bad = 0;
    for (unsigned k = 1; k <= REGS_N; k++)
        if (out[k - 1] != seed + k * (uint64_t)REGS_STEP)
            bad++;
    return bad;
}

/* fiber_switch with the pattern-loading raw switch. */
static void regs_switch(fiber_t *to, uint64_t seed, uint64_t *out)
{
    fiber_t *from = g_cur;
    void *fake = switch_begin(to, false);
    test_regs_switch(&from->sp, to->sp, seed, out);
    switch_end(fake);
}

#define REGS_ROUNDS 10000
static fiber_t g_rf;
static unsigned long g_regs_bad;

static void regs_entry(void *arg)
{
    fiber_started();
    uint64_t out[REGS_N];
    for (unsigned long i = 0; i < REGS_ROUNDS; i++) {
        uint64_t seed = 0xf00d000000000000u + i;
        regs_switch(&g_main, seed, out);
        g_regs_bad += regs_mismatches(out, seed);
    }
    fiber_exit(&g_main);
}

static void t_callee_saved_asm(void)
{
    uint64_t out[REGS_N];
    fiber_init_main();
    g_regs_bad = 0;
    CU_ASSERT_FATAL(fiber_create(&g_rf, STACK_SIZE, 0, regs_entry, NULL));
    unsigned long bad = 0;
    for (unsigned long i = 0; i < REGS_ROUNDS; i++) {
        uint64_t seed = 0x1234000000000000u + 7 * i;
        regs_switch(&g_rf, seed, out);
        bad += regs_mismatches(out, seed);
    }
    fiber_switch(&g_rf, false);
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT_EQUAL(g_regs_bad, 0);
    CU_ASSERT_EQUAL(g_errors, 0);
    fiber_destroy(&g_rf);
}
#else
static void t_callee_saved_asm(void)
{
    printf("\n    no register-pattern routine for this ISA; skipped ");
}
#endif

/*
 * Many values live across a switch: at -O2 the compiler keeps as many as it
 * can in callee-saved registers and spills the rest to the frame, so both
 * the registers and the stack of each context must survive. Two contexts
 * run the same function with different seeds, so each clobbers every
 * register the other relies on.
 *
 * The empty asm statements make each value opaque and force it into a
 * register right before the switch, so the compiler can neither fold the
 * later comparisons nor recompute the values after the call: they really
 * are live across it. The expected values are recomputed afterwards from a
 * volatile copy of the seed.
 */
#define OPAQUE4(a, b, c, d)                                                    \
    __asm__ volatile("" : "+r"(a), "+r"(b), "+r"(c), "+r"(d))
#if defined(__x86_64__)
#define OPAQUE_FP4(a, b, c, d)                                                 \
    __asm__ volatile("" : "+x"(a), "+x"(b), "+x"(c), "+x"(d))
#elif defined(__aarch64__)
#define OPAQUE_FP4(a, b, c, d)                                                 \
    __asm__ volatile("" : "+w"(a), "+w"(b), "+w"(c), "+w"(d))
#else
#define OPAQUE_FP4(a, b, c, d)                                                 \
    __asm__ volatile("" : "+m"(a), "+m"(b), "+m"(c), "+m"(d))
#endif

#define LOCALS_INT(p, s)                                                       \
    uint64_t p##0 = (s) * 3 + 1, p##1 = p##0 ^ ((s) << 7),                     \
             p##2 = p##1 + 0x1111, p##3 = p##2 * 5, p##4 = p##3 ^ 0xdeadbeef,  \
             p##5 = p##4 + p##0, p##6 = p##5 * 9, p##7 = p##6 ^ p##1,          \
             p##8 = p##7 + p##2, p##9 = p##8 * 13, p##10 = p##9 ^ p##3,       \
             p##11 = p##10 + p##4, p##12 = p##11 * 17, p##13 = p##12 ^ p##5,  \
             p##14 = p##13 + p##6, p##15 = p##14 * 19
#define LOCALS_FP(p, s)                                                        \
    double p##0 = (double)((s) & 0xffff) * 0.5, p##1 = p##0 + 1.25,            \
           p##2 = p##1 * 3.0, p##3 = p##2 - 7.5, p##4 = p##3 * 0.25,           \
           p##5 = p##4 + 100.0, p##6 = p##5 * 1.5, p##7 = p##6 - 2.0

static fiber_t g_lf;
static unsigned long g_locals_bad;

static __attribute__((noinline)) unsigned long locals_round(uint64_t seed,
                                                            fiber_t *to)
{
    volatile uint64_t seed_again = seed;
    LOCALS_INT(a, seed);
    LOCALS_FP(d, seed);
    OPAQUE4(a0, a1, a2, a3);
    OPAQUE4(a4, a5, a6, a7);
    OPAQUE4(a8, a9, a10, a11);
    OPAQUE4(a12, a13, a14, a15);
    OPAQUE_FP4(d0, d1, d2, d3);
    OPAQUE_FP4(d4, d5, d6, d7);
    fiber_switch(to, false);
    uint64_t s2 = seed_again;
    LOCALS_INT(b, s2);
    LOCALS_FP(e, s2);
    return (a0 != b0) + (a1 != b1) + (a2 != b2) + (a3 != b3) + (a4 != b4) +
           (a5 != b5) + (a6 != b6) + (a7 != b7) + (a8 != b8) + (a9 != b9) +
           (a10 != b10) + (a11 != b11) + (a12 != b12) + (a13 != b13) +
           (a14 != b14) + (a15 != b15) + (d0 != e0) + (d1 != e1) +
           (d2 != e2) + (d3 != e3) + (d4 != e4) + (d5 != e5) + (d6 != e6) +
           (d7 != e7);
}

/* Seeds come from a volatile so that nothing is known at compile time. */
static volatile uint64_t g_seed_base = 0xabcdef0123456789u;

static void locals_entry(void *arg)
{
    fiber_started();
    for (unsigned long i = 0; i < REGS_ROUNDS; i++)
        g_locals_bad += locals_round(g_seed_base ^ (i << 20), &g_main);
    fiber_exit(&g_main);
}

static void t_live_locals(void)
{
    fiber_init_main();
    g_locals_bad = 0;
    CU_ASSERT_FATAL(fiber_create(&g_lf, STACK_SIZE, 0, locals_entry, NULL));
    unsigned long bad = 0;
    for (unsigned long i = 0; i < REGS_ROUNDS; i++)
        bad += locals_round(~g_seed_base + i, &g_lf);
    fiber_switch(&g_lf, false);
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT_EQUAL(g_locals_bad, 0);
    CU_ASSERT_EQUAL(g_errors, 0);
    fiber_destroy(&g_lf);
}

/* ------------------------------------------------------------------------ */
/* Suite "fpenv": each context keeps its own FP control state.              */

static volatile double g_one = 1.0, g_three = 3.0;

/* 1/3 in the current rounding mode, computed at run time. */
static __attribute__((noinline)) double third(void) { return g_one / g_three; }

#if defined(__x86_64__)
/* The rounding control bits of MXCSR (SSE) and of the x87 control word,
 * normalised to the fenv FE_* encoding, which x86 uses for both. */
static int sse_round(void)
{
    return (int)((__builtin_ia32_stmxcsr() >> 3) & 0xc00);
}
static int x87_round(void)
{
    unsigned short cw;
    __asm__ volatile("fnstcw %0" : "=m"(cw));
    return cw & 0xc00;
}
#define HW_ROUND_OK(mode) (sse_round() == (mode) && x87_round() == (mode))
#else
#define HW_ROUND_OK(mode) 1
#endif

static fiber_t g_ff;
static int g_ff_after, g_ff_hw_ok;
static double g_ff_third_up, g_ff_third_after;

static void fpenv_entry(void *arg)
{
    fiber_started();
    fesetround(FE_UPWARD);
    g_ff_third_up = third();
    fiber_switch(&g_main, false);
    g_ff_after = fegetround();
    g_ff_hw_ok = HW_ROUND_OK(FE_UPWARD);
    g_ff_third_after = third();
    fiber_exit(&g_main);
}

static void t_rounding_mode(void)
{
    fiber_init_main();
    CU_ASSERT_FATAL(fegetround() == FE_TONEAREST);
    double near = third();
    fesetround(FE_DOWNWARD);
    double down = third();
    fesetround(FE_TONEAREST);
    /* The contract leaves the mode a fresh context starts in to the backend
     * (x86-64 uses the process's initial control words, AArch64 and
     * ucontext the creator's current ones), so only switches are checked:
     * a mode set in one context stays in that context. */
    CU_ASSERT_FATAL(fiber_create(&g_ff, STACK_SIZE, 0, fpenv_entry, NULL));

    fiber_switch(&g_ff, false);
    /* The context set FE_UPWARD for itself only. */
    CU_ASSERT_EQUAL(fegetround(), FE_TONEAREST);
    CU_ASSERT(HW_ROUND_OK(FE_TONEAREST));
    CU_ASSERT(third() == near);
    CU_ASSERT(g_ff_third_up > down);

    fesetround(FE_TOWARDZERO);
    fiber_switch(&g_ff, false);
    CU_ASSERT_EQUAL(g_ff_after, FE_UPWARD);
    CU_ASSERT(g_ff_hw_ok);
    CU_ASSERT(g_ff_third_after == g_ff_third_up);
    CU_ASSERT_EQUAL(fegetround(), FE_TOWARDZERO);
    CU_ASSERT(HW_ROUND_OK(FE_TOWARDZERO));
    CU_ASSERT(third() == down);
    fesetround(FE_TONEAREST);
    CU_ASSERT_EQUAL(g_errors, 0);
    fiber_destroy(&g_ff);
}

/* ------------------------------------------------------------------------ */
/* Suite "alignment": entry sees the ABI's 16-byte stack alignment.         */

/* The misalignment of a 16-byte aligned local in a callee of entry. */
static __attribute__((noinline)) uintptr_t callee_local_misalign(void)
{
    _Alignas(16) volatile char buf[16];
    buf[0] = 1;
    return (uintptr_t)&buf[0] & 15;
}

typedef struct {
    uintptr_t frame, local, callee_misalign;
} align_seen_t;

static void align_entry(void *arg)
{
    fiber_started();
    align_seen_t *seen = arg;
    _Alignas(16) volatile char buf[16];
    buf[0] = 1;
    seen->frame = (uintptr_t)__builtin_frame_address(0);
    seen->local = (uintptr_t)&buf[0];
    seen->callee_misalign = callee_local_misalign();
    fiber_exit(&g_main);
}

static void t_entry_alignment(void)
{
    static const size_t sizes[] = {COEXEC__CTX_MIN_STACK,
                                   COEXEC__CTX_MIN_STACK + 16, 8192 + 48,
                                   STACK_SIZE};
    unsigned bad_frame = 0, bad_local = 0, bad_range = 0, runs = 0;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        for (size_t off = 0; off < 64; off += 16) {
            fiber_t f;
            align_seen_t seen = {0};
            fiber_init_main();
            CU_ASSERT_FATAL(fiber_create(&f, sizes[s], off, align_entry, &seen));
            fiber_switch(&f, false);
            uintptr_t lo = (uintptr_t)f.stack, hi = lo + f.size;
            bad_frame += (seen.frame & 15) != 0;
            bad_local += (seen.local & 15) != 0 || seen.callee_misalign != 0;
            /* Without a fake stack (ASan's use-after-return mode) the
             * locals live on the context's own stack. */
#ifndef TEST_ASAN
            bad_range += seen.local < lo || seen.local >= hi;
#endif
            bad_range += seen.frame < lo || seen.frame >= hi;
            CU_ASSERT(fiber_canaries_intact(&f));
            fiber_destroy(&f);
            runs++;
        }
    }
    CU_ASSERT_EQUAL(bad_frame, 0);
    CU_ASSERT_EQUAL(bad_local, 0);
    CU_ASSERT_EQUAL(bad_range, 0);
    CU_ASSERT_EQUAL(runs, 16);
    CU_ASSERT_EQUAL(g_errors, 0);
}

/* ------------------------------------------------------------------------ */
/* Suite "many": 1,000 contexts alive at once, entered in random order.     */

#define MANY 1000
#define MANY_ROUNDS 4
#define MANY_STACK (16 * 1024)
static fiber_t *g_many;
static int g_many_round;   /* round main is in */
static int g_many_last;    /* id of the last context that ran */
static int *g_many_count;  /* times each context ran */

static void many_entry(void *arg)
{
    fiber_started();
    int id = (int)(intptr_t)arg;
    /* Per-context data on the context's own stack, checked after every
     * switch: it catches overlapping or clobbered stacks. */
    uint64_t mine[8];
    for (int k = 0; k < 8; k++)
        mine[k] = (uint64_t)id * 1000003u + (uint64_t)k;
    for (int r = 0; r < MANY_ROUNDS; r++) {
        FIBER_CHECK(g_cur == &g_many[id]);
        FIBER_CHECK(g_many_round == r);
        for (int k = 0; k < 8; k++)
            FIBER_CHECK(mine[k] == (uint64_t)id * 1000003u + (uint64_t)k);
        g_many_last = id;
        g_many_count[id]++;
        fiber_switch(&g_main, false);
    }
    g_many_last = id;
    fiber_exit(&g_main);
}

static void t_many_random(void)
{
    int order[MANY];
    uint64_t rng = 42;
    unsigned bad_last = 0, bad_count = 0, bad_canary = 0;

    fiber_init_main();
    g_many = calloc(MANY, sizeof *g_many);
    g_many_count = calloc(MANY, sizeof *g_many_count);
    CU_ASSERT_FATAL(g_many != NULL && g_many_count != NULL);
    for (int i = 0; i < MANY; i++) {
        CU_ASSERT_FATAL(fiber_create(&g_many[i], MANY_STACK, 0, many_entry,
                                     (void *)(intptr_t)i));
        g_many[i].id = i;
        order[i] = i;
    }
    /* Rounds 0..MANY_ROUNDS-1 resume every context once; the last round
     * lets each one finish. */
    for (int r = 0; r <= MANY_ROUNDS; r++) {
        g_many_round = r;
        for (int i = MANY - 1; i > 0; i--) {
            int j = (int)(splitmix(&rng) % (uint64_t)(i + 1));
            int t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
        for (int i = 0; i < MANY; i++) {
            g_many_last = -1;
            fiber_switch(&g_many[order[i]], false);
            bad_last += g_many_last != order[i];
        }
    }
    for (int i = 0; i < MANY; i++) {
        bad_count += g_many_count[i] != MANY_ROUNDS;
        bad_canary += !fiber_canaries_intact(&g_many[i]);
        fiber_destroy(&g_many[i]);
    }
    CU_ASSERT_EQUAL(bad_last, 0);
    CU_ASSERT_EQUAL(bad_count, 0);
    CU_ASSERT_EQUAL(bad_canary, 0);
    CU_ASSERT_EQUAL(g_errors, 0);
    free(g_many);
    free(g_many_count);
    g_many = NULL;
    g_many_count = NULL;
}

/* ------------------------------------------------------------------------ */

static const char *const suite_names[] = {"switch", "registers", "fpenv",
                                          "alignment", "many"};
#define NSUITES (sizeof suite_names / sizeof suite_names[0])

/* --check-suites NAME...: fails unless NAME... is exactly the set of suites
 * here, so that a suite added without a ctest entry cannot go unrun. */
static int check_suites(int argc, char **argv)
{
    int bad = 0;
    for (size_t k = 0; k < NSUITES; k++) {
        int found = 0;
        for (int i = 2; i < argc; i++)
            found |= strcmp(argv[i], suite_names[k]) == 0;
        if (!found) {
            fprintf(stderr, "suite '%s' is not registered with ctest\n",
                    suite_names[k]);
            bad = 1;
        }
    }
    for (int i = 2; i < argc; i++) {
        int found = 0;
        for (size_t k = 0; k < NSUITES; k++)
            found |= strcmp(argv[i], suite_names[k]) == 0;
        if (!found) {
            fprintf(stderr, "ctest names unknown suite '%s'\n", argv[i]);
            bad = 1;
        }
    }
    printf("%zu suites, %s\n", NSUITES, bad ? "MISMATCH" : "all registered");
    return bad;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--check-suites") == 0)
        return check_suites(argc, argv);
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 2;
    CU_pSuite s;
    s = CU_add_suite(suite_names[0], NULL, NULL);
    CU_add_test(s, "pingpong_three_contexts", t_pingpong);
    CU_add_test(s, "roundtrip_1m_checked", t_roundtrip);
    CU_add_test(s, "min_stack", t_min_stack);
    CU_add_test(s, "stack_reuse", t_stack_reuse);
    s = CU_add_suite(suite_names[1], NULL, NULL);
    CU_add_test(s, "callee_saved_patterns", t_callee_saved_asm);
    CU_add_test(s, "live_locals_O2", t_live_locals);
    s = CU_add_suite(suite_names[2], NULL, NULL);
    CU_add_test(s, "rounding_mode_per_context", t_rounding_mode);
    s = CU_add_suite(suite_names[3], NULL, NULL);
    CU_add_test(s, "entry_stack_16_bytes", t_entry_alignment);
    s = CU_add_suite(suite_names[4], NULL, NULL);
    CU_add_test(s, "1000_contexts_random_order", t_many_random);

    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_ErrorCode rc;
    if (argc > 1) {
        CU_pSuite only = CU_get_suite(argv[1]);
        if (only == NULL) {
            fprintf(stderr, "no suite named %s\n", argv[1]);
            CU_cleanup_registry();
            return 2;
        }
        rc = CU_basic_run_suite(only);
    } else {
        rc = CU_basic_run_tests();
    }
    /* CUnit returns success even when assertions failed: the exit code
     * must come from the failure counts. */
    unsigned bad = CU_get_number_of_suites_failed() +
                   CU_get_number_of_tests_failed();
    CU_cleanup_registry();
    return (rc != CUE_SUCCESS || bad) ? 1 : 0;
}
