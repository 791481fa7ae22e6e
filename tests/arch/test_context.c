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

#include "arch_main.h"

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
 * leaving context will never be resumed. Returns ASan's fake-stack token.
 *
 * Not instrumented by ASan: for a final switch,
 * __sanitizer_start_switch_fiber frees the leaving context's fake stack
 * (ASan's use-after-return mode, ASAN_OPTIONS=detect_stack_use_after_return=1),
 * and an instrumented switch_begin would keep its own frame, which holds
 * `fake`, there and read it after the call. */
#ifdef TEST_ASAN
__attribute__((no_sanitize_address))
#endif
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
 * of 16) past a 64-byte aligned address, with canary bytes on both sides.
 * No context is prepared on it yet: fiber_create does that with
 * coexec__ctx_make, fiber_start (suite "startjump") with coexec__ctx_start.
 */
#define CANARY_BYTES 64
#define CANARY 0xa5

static bool fiber_alloc(fiber_t *f, size_t size, size_t offset)
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
    return true;
}

/* fiber_alloc, then prepares a context on the stack with coexec__ctx_make. */
static bool fiber_create(fiber_t *f, size_t size, size_t offset,
                         coexec__ctx_entry_t entry, void *arg)
{
    if (!fiber_alloc(f, size, offset))
        return false;
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
/* Saves rbp, rbx, r12-r15 and keeps out (rcx) at (%rsp). */
#define REGS_SAVE                                                              \
    "  pushq %rbp\n"                                                           \
    "  pushq %rbx\n"                                                           \
    "  pushq %r12\n"                                                           \
    "  pushq %r13\n"                                                           \
    "  pushq %r14\n"                                                           \
    "  pushq %r15\n"                                                           \
    "  subq $8, %rsp\n" /* keeps rsp 16-byte aligned at the call */            \
    "  movq %rcx, (%rsp)\n"
/* Loads pattern k into the k-th register from the seed in register base. */
#define REGS_LOAD(base)                                                        \
    "  movabsq $0x9e3779b97f4a7c15, %rax\n"                                    \
    "  leaq (" base ",%rax), %rbx\n"                                           \
    "  leaq (%rbx,%rax), %r12\n"                                               \
    "  leaq (%r12,%rax), %r13\n"                                               \
    "  leaq (%r13,%rax), %r14\n"                                               \
    "  leaq (%r14,%rax), %r15\n"                                               \
    "  leaq (%r15,%rax), %rbp\n"
/* Stores the registers into out[], restores them and returns. */
#define REGS_STORE_RETURN                                                      \
    "  movq (%rsp), %rcx\n"                                                    \
    "  movq %rbx, 0(%rcx)\n"                                                   \
    "  movq %r12, 8(%rcx)\n"                                                   \
    "  movq %r13, 16(%rcx)\n"                                                  \
    "  movq %r14, 24(%rcx)\n"                                                  \
    "  movq %r15, 32(%rcx)\n"                                                  \
    "  movq %rbp, 40(%rcx)\n"                                                  \
    "  addq $8, %rsp\n"                                                        \
    "  popq %r15\n"                                                            \
    "  popq %r14\n"                                                            \
    "  popq %r13\n"                                                            \
    "  popq %r12\n"                                                            \
    "  popq %rbx\n"                                                            \
    "  popq %rbp\n"                                                            \
    "  ret\n"
__asm__(".text\n"
        ".globl test_regs_switch\n"
        ".hidden test_regs_switch\n"
        ".type test_regs_switch, @function\n"
        ".p2align 4\n"
        "test_regs_switch:\n"
        REGS_SAVE
        REGS_LOAD("%rdx")
        "  call coexec__ctx_switch\n"
        REGS_STORE_RETURN
        ".size test_regs_switch, .-test_regs_switch\n");
#elif defined(__aarch64__)
#define REGS_N 19
/* Saves x19-x30 and d8-d15 and keeps out (x3) at [sp, #160]. */
#define REGS_SAVE                                                              \
    "  stp x29, x30, [sp, #-176]!\n"                                           \
    "  stp x19, x20, [sp, #16]\n"                                              \
    "  stp x21, x22, [sp, #32]\n"                                              \
    "  stp x23, x24, [sp, #48]\n"                                              \
    "  stp x25, x26, [sp, #64]\n"                                              \
    "  stp x27, x28, [sp, #80]\n"                                              \
    "  stp d8, d9, [sp, #96]\n"                                                \
    "  stp d10, d11, [sp, #112]\n"                                             \
    "  stp d12, d13, [sp, #128]\n"                                             \
    "  stp d14, d15, [sp, #144]\n"                                             \
    "  str x3, [sp, #160]\n"
/* Loads pattern k into the k-th register from the seed in register base. */
#define REGS_LOAD(base)                                                        \
    "  movz x9, #0x7c15\n"                                                     \
    "  movk x9, #0x7f4a, lsl #16\n"                                            \
    "  movk x9, #0x79b9, lsl #32\n"                                            \
    "  movk x9, #0x9e37, lsl #48\n"                                            \
    "  add x19, " base ", x9\n"                                                \
    "  add x20, x19, x9\n"                                                     \
    "  add x21, x20, x9\n"                                                     \
    "  add x22, x21, x9\n"                                                     \
    "  add x23, x22, x9\n"                                                     \
    "  add x24, x23, x9\n"                                                     \
    "  add x25, x24, x9\n"                                                     \
    "  add x26, x25, x9\n"                                                     \
    "  add x27, x26, x9\n"                                                     \
    "  add x28, x27, x9\n"                                                     \
    "  add x29, x28, x9\n"                                                     \
    "  add x10, x29, x9\n"                                                     \
    "  fmov d8, x10\n"                                                         \
    "  add x10, x10, x9\n"                                                     \
    "  fmov d9, x10\n"                                                         \
    "  add x10, x10, x9\n"                                                     \
    "  fmov d10, x10\n"                                                        \
    "  add x10, x10, x9\n"                                                     \
    "  fmov d11, x10\n"                                                        \
    "  add x10, x10, x9\n"                                                     \
    "  fmov d12, x10\n"                                                        \
    "  add x10, x10, x9\n"                                                     \
    "  fmov d13, x10\n"                                                        \
    "  add x10, x10, x9\n"                                                     \
    "  fmov d14, x10\n"                                                        \
    "  add x10, x10, x9\n"                                                     \
    "  fmov d15, x10\n"
/* Stores the registers into out[], restores them and returns. */
#define REGS_STORE_RETURN                                                      \
    "  ldr x3, [sp, #160]\n"                                                   \
    "  stp x19, x20, [x3, #0]\n"                                               \
    "  stp x21, x22, [x3, #16]\n"                                              \
    "  stp x23, x24, [x3, #32]\n"                                              \
    "  stp x25, x26, [x3, #48]\n"                                              \
    "  stp x27, x28, [x3, #64]\n"                                              \
    "  str x29, [x3, #80]\n"                                                   \
    "  stp d8, d9, [x3, #88]\n"                                                \
    "  stp d10, d11, [x3, #104]\n"                                             \
    "  stp d12, d13, [x3, #120]\n"                                             \
    "  stp d14, d15, [x3, #136]\n"                                             \
    "  ldp x19, x20, [sp, #16]\n"                                              \
    "  ldp x21, x22, [sp, #32]\n"                                              \
    "  ldp x23, x24, [sp, #48]\n"                                              \
    "  ldp x25, x26, [sp, #64]\n"                                              \
    "  ldp x27, x28, [sp, #80]\n"                                              \
    "  ldp d8, d9, [sp, #96]\n"                                                \
    "  ldp d10, d11, [sp, #112]\n"                                             \
    "  ldp d12, d13, [sp, #128]\n"                                             \
    "  ldp d14, d15, [sp, #144]\n"                                             \
    "  ldp x29, x30, [sp], #176\n"                                             \
    "  ret\n"
__asm__(".text\n"
        ".globl test_regs_switch\n"
        ".hidden test_regs_switch\n"
        ".type test_regs_switch, %function\n"
        ".p2align 4\n"
        "test_regs_switch:\n"
        REGS_SAVE
        REGS_LOAD("x2")
        "  bl coexec__ctx_switch\n"
        REGS_STORE_RETURN
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
/* Suite "startjump": coexec__ctx_start and coexec__ctx_jump.               */

/* coexec__ctx_start from the running context onto `to`'s stack, annotated
 * like fiber_switch. Returns when something switches back to the caller. */
static __attribute__((noinline)) void fiber_start(fiber_t *to,
                                                  coexec__ctx_entry_t entry,
                                                  void *arg)
{
    fiber_t *from = g_cur;
    void *fake = switch_begin(to, false);
    coexec__ctx_start(&from->sp, to->stack, to->size, entry, arg);
    switch_end(fake);
}

/* Leaves the running context for good with coexec__ctx_jump. */
static __attribute__((noinline, noreturn)) void fiber_jump(fiber_t *to)
{
    switch_begin(to, true);
    coexec__ctx_jump(to->sp);
}

/* Makes the stack of a context that has left for good ready for the next
 * coexec__ctx_start, as a stack cache would (see t_stack_reuse). */
static void fiber_recycle(fiber_t *f)
{
#ifdef TEST_ASAN
    __asan_unpoison_memory_region(f->stack, f->size);
#endif
#ifdef TEST_TSAN
    __tsan_destroy_fiber(f->tsan);
    f->tsan = __tsan_create_fiber(0);
#endif
    f->sp = NULL;
}

/*
 * Entry alignment and placement. test_sp_probe_entry is the entry function:
 * it stores the stack pointer it is entered with in *(uintptr_t *)arg, before
 * any compiler-generated code can move it, then tail-calls
 * test_sp_probe_continue(arg). The ABI wants (sp + 8) % 16 == 0 at entry on
 * x86-64 (the call pushed the return address) and sp % 16 == 0 on AArch64.
 * The continuation also records what the "alignment" suite records for
 * coexec__ctx_make: its frame address and a 16-byte aligned local.
 */
typedef struct {
    uintptr_t entry_sp; /* first member: written by the asm probe */
    uintptr_t frame, local, callee_misalign;
    void *arg_seen;
} start_seen_t;

void test_sp_probe_entry(void *arg);
void test_sp_probe_continue(void *arg);
#if defined(__x86_64__)
#define ENTRY_SP_MISALIGN(sp) (((sp) + 8) & 15)
__asm__(".text\n"
        ".globl test_sp_probe_entry\n"
        ".hidden test_sp_probe_entry\n"
        ".type test_sp_probe_entry, @function\n"
        ".p2align 4\n"
        "test_sp_probe_entry:\n"
        "  movq %rsp, (%rdi)\n"
        "  jmp test_sp_probe_continue\n"
        ".size test_sp_probe_entry, .-test_sp_probe_entry\n");
#elif defined(__aarch64__)
#define ENTRY_SP_MISALIGN(sp) ((sp) & 15)
/* hint #34 is "bti c": the probe is entered by an indirect call, and the
 * bti-pac cross build may run with BTI enforced. */
__asm__(".text\n"
        ".globl test_sp_probe_entry\n"
        ".hidden test_sp_probe_entry\n"
        ".type test_sp_probe_entry, %function\n"
        ".p2align 4\n"
        "test_sp_probe_entry:\n"
        "  hint #34\n"
        "  mov x9, sp\n"
        "  str x9, [x0]\n"
        "  b test_sp_probe_continue\n"
        ".size test_sp_probe_entry, .-test_sp_probe_entry\n");
#else
/* No probe for this ISA: the entry records no stack pointer (0 passes). */
#define ENTRY_SP_MISALIGN(sp) ((sp) & 0)
void test_sp_probe_entry(void *arg) { test_sp_probe_continue(arg); }
#endif

__attribute__((visibility("hidden"))) void test_sp_probe_continue(void *arg)
{
    fiber_started();
    start_seen_t *seen = arg;
    _Alignas(16) volatile char buf[16];
    buf[0] = 1;
    seen->arg_seen = arg;
    seen->frame = (uintptr_t)__builtin_frame_address(0);
    seen->local = (uintptr_t)&buf[0];
    seen->callee_misalign = callee_local_misalign();
    fiber_jump(&g_main);
}

static void t_start_entry(void)
{
    static const size_t sizes[] = {
        COEXEC__CTX_MIN_STACK,      COEXEC__CTX_MIN_STACK + 16,
        COEXEC__CTX_MIN_STACK + 32, COEXEC__CTX_MIN_STACK + 48,
        6144 + 16,                  8192 + 48,
        16384,                      STACK_SIZE,
        STACK_SIZE + 16};
    unsigned bad_sp = 0, bad_frame = 0, bad_local = 0, bad_range = 0;
    unsigned bad_arg = 0, bad_saved = 0, bad_canary = 0, runs = 0;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        for (size_t off = 0; off < 128; off += 16) {
            fiber_t f;
            start_seen_t seen;
            memset(&seen, 0, sizeof seen);
            fiber_init_main();
            CU_ASSERT_FATAL(fiber_alloc(&f, sizes[s], off));
            fiber_start(&f, test_sp_probe_entry, &seen);
            uintptr_t lo = (uintptr_t)f.stack, hi = lo + f.size;
            bad_arg += seen.arg_seen != &seen;
            bad_sp += ENTRY_SP_MISALIGN(seen.entry_sp) != 0;
#if defined(__x86_64__) || defined(__aarch64__)
            /* The entry's stack pointer, not only its frames, is on the
             * new stack (it may sit at the very top on AArch64). */
            bad_range += seen.entry_sp <= lo || seen.entry_sp > hi;
#endif
            bad_frame += (seen.frame & 15) != 0;
            bad_local += (seen.local & 15) != 0 || seen.callee_misalign != 0;
            /* Without a fake stack (ASan's use-after-return mode) the
             * locals live on the context's own stack. */
#ifndef TEST_ASAN
            bad_range += seen.local < lo || seen.local >= hi;
#endif
            bad_range += seen.frame < lo || seen.frame >= hi;
            /* The starter was saved on its own stack, not on the new one. */
            bad_saved += g_main.sp == NULL ||
                         ((uintptr_t)g_main.sp >= lo && (uintptr_t)g_main.sp < hi);
            bad_canary += !fiber_canaries_intact(&f);
            fiber_destroy(&f);
            runs++;
        }
    }
    CU_ASSERT_EQUAL(bad_arg, 0);
    CU_ASSERT_EQUAL(bad_sp, 0);
    CU_ASSERT_EQUAL(bad_frame, 0);
    CU_ASSERT_EQUAL(bad_local, 0);
    CU_ASSERT_EQUAL(bad_range, 0);
    CU_ASSERT_EQUAL(bad_saved, 0);
    CU_ASSERT_EQUAL(bad_canary, 0);
    CU_ASSERT_EQUAL(runs, 72);
    CU_ASSERT_EQUAL(g_errors, 0);
}

/*
 * A started context is an ordinary one afterwards: it switches back to its
 * starter and is resumed by coexec__ctx_switch, and may itself start
 * another. main starts A, A starts B; B switches back to A, A to main. Then
 * SJ_ROUNDS rotations main -> B -> A -> main by plain switches, each context
 * checking the shared step counter and keeping a round count in a local.
 * To finish, B jumps to A (suspended in its switch to main) and A jumps to
 * main (suspended in its switch to B).
 */
#define SJ_ROUNDS 10000
static fiber_t g_sja, g_sjb;
static unsigned long g_sj_step, g_sja_rounds, g_sjb_rounds;
static int g_sj_finish;

static void sj_b(void *arg)
{
    fiber_started();
    FIBER_CHECK(arg == &g_sjb);
    FIBER_CHECK(g_prev == &g_sja);
    FIBER_CHECK(g_sj_step == 0);
    g_sj_step++;
    fiber_switch(&g_sja, false); /* back to its starter */
    unsigned long r = 0;
    while (!g_sj_finish) {
        FIBER_CHECK(g_sj_step == 3 + 3 * r);
        g_sj_step++;
        r++;
        fiber_switch(&g_sja, false);
    }
    g_sjb_rounds = r;
    fiber_jump(&g_sja);
}

static void sj_a(void *arg)
{
    fiber_started();
    FIBER_CHECK(arg == &g_sja);
    FIBER_CHECK(g_prev == &g_main);
    fiber_start(&g_sjb, sj_b, &g_sjb);
    FIBER_CHECK(g_prev == &g_sjb);
    FIBER_CHECK(g_sj_step == 1);
    g_sj_step++;
    fiber_switch(&g_main, false); /* back to its starter */
    unsigned long r = 0;
    while (!g_sj_finish) {
        FIBER_CHECK(g_sj_step == 4 + 3 * r);
        g_sj_step++;
        r++;
        fiber_switch(&g_main, false);
    }
    g_sja_rounds = r;
    fiber_jump(&g_main);
}

static void t_start_switch_back(void)
{
    fiber_init_main();
    g_sj_step = g_sja_rounds = g_sjb_rounds = 0;
    g_sj_finish = 0;
    CU_ASSERT_FATAL(fiber_alloc(&g_sja, STACK_SIZE, 0));
    CU_ASSERT_FATAL(fiber_alloc(&g_sjb, STACK_SIZE, 16));
    fiber_start(&g_sja, sj_a, &g_sja);
    CU_ASSERT_EQUAL(g_sj_step, 2);
    CU_ASSERT(g_prev == &g_sja);
    unsigned long bad = 0;
    for (unsigned long i = 0; i < SJ_ROUNDS; i++) {
        g_sj_step++;
        fiber_switch(&g_sjb, false);
        bad += g_sj_step != 2 + 3 * (i + 1);
        bad += g_prev != &g_sja;
    }
    g_sj_finish = 1;
    fiber_switch(&g_sjb, false); /* B jumps to A, A jumps back here */
    CU_ASSERT(g_prev == &g_sja);
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT_EQUAL(g_sj_step, 2 + 3 * SJ_ROUNDS);
    CU_ASSERT_EQUAL(g_sja_rounds, SJ_ROUNDS);
    CU_ASSERT_EQUAL(g_sjb_rounds, SJ_ROUNDS);
    CU_ASSERT_EQUAL(g_errors, 0);
    CU_ASSERT(fiber_canaries_intact(&g_sja));
    CU_ASSERT(fiber_canaries_intact(&g_sjb));
    fiber_destroy(&g_sja);
    fiber_destroy(&g_sjb);
}

/*
 * Callee-saved registers across start and jump, with the pattern scheme of
 * suite "registers" (test_regs_switch):
 *   test_regs_start(from_sp, args, seed, out) loads pattern k = seed + k *
 *     REGS_STEP into each callee-saved register, calls coexec__ctx_start
 *     with the arguments in *args, and when that returns stores the
 *     registers into out[] in pattern order;
 *   test_regs_jump(to_sp, seed) loads the patterns of seed into each
 *     callee-saved register and jumps to coexec__ctx_jump(to_sp).
 * The context resumed by a jump must see its own patterns, not the
 * jumper's.
 */
typedef struct {
    void *stack; /* offsets 0, 8, 16, 24: the asm reads them */
    size_t size;
    coexec__ctx_entry_t entry;
    void *arg;
} start_args_t;

#if defined(__x86_64__)
__asm__(".text\n"
        ".globl test_regs_start\n"
        ".hidden test_regs_start\n"
        ".type test_regs_start, @function\n"
        ".p2align 4\n"
        "test_regs_start:\n"
        REGS_SAVE
        REGS_LOAD("%rdx")
        "  movq 24(%rsi), %r8\n"  /* arg */
        "  movq 16(%rsi), %rcx\n" /* entry */
        "  movq 8(%rsi), %rdx\n"  /* size */
        "  movq 0(%rsi), %rsi\n"  /* stack; rdi is still from_sp */
        "  call coexec__ctx_start\n"
        REGS_STORE_RETURN
        ".size test_regs_start, .-test_regs_start\n"
        "\n"
        ".globl test_regs_jump\n"
        ".hidden test_regs_jump\n"
        ".type test_regs_jump, @function\n"
        ".p2align 4\n"
        "test_regs_jump:\n"
        REGS_LOAD("%rsi")
        "  jmp coexec__ctx_jump\n" /* rdi is still to_sp */
        ".size test_regs_jump, .-test_regs_jump\n");
#elif defined(__aarch64__)
__asm__(".text\n"
        ".globl test_regs_start\n"
        ".hidden test_regs_start\n"
        ".type test_regs_start, %function\n"
        ".p2align 4\n"
        "test_regs_start:\n"
        REGS_SAVE
        REGS_LOAD("x2")
        "  ldr x4, [x1, #24]\n" /* arg */
        "  ldr x3, [x1, #16]\n" /* entry */
        "  ldr x2, [x1, #8]\n"  /* size */
        "  ldr x1, [x1, #0]\n"  /* stack; x0 is still from_sp */
        "  bl coexec__ctx_start\n"
        REGS_STORE_RETURN
        ".size test_regs_start, .-test_regs_start\n"
        "\n"
        ".globl test_regs_jump\n"
        ".hidden test_regs_jump\n"
        ".type test_regs_jump, %function\n"
        ".p2align 4\n"
        "test_regs_jump:\n"
        REGS_LOAD("x1")
        "  b coexec__ctx_jump\n" /* x0 is still to_sp */
        ".size test_regs_jump, .-test_regs_jump\n");
#endif

#ifdef REGS_N
void test_regs_start(void **from_sp, const start_args_t *args, uint64_t seed,
                     uint64_t *out);
__attribute__((noreturn)) void test_regs_jump(void *to_sp, uint64_t seed);

/* fiber_start with the pattern-loading raw start. */
static void regs_start(fiber_t *to, coexec__ctx_entry_t entry, void *arg,
                       uint64_t seed, uint64_t *out)
{
    fiber_t *from = g_cur;
    start_args_t a = {to->stack, to->size, entry, arg};
    void *fake = switch_begin(to, false);
    test_regs_start(&from->sp, &a, seed, out);
    switch_end(fake);
}

/* fiber_jump with the pattern-loading raw jump. */
static __attribute__((noreturn)) void regs_jump(fiber_t *to, uint64_t seed)
{
    switch_begin(to, true);
    test_regs_jump(to->sp, seed);
}

/* Started with test_regs_start: REGS_ROUNDS pattern switches back to main,
 * then a pattern jump to main. */
static fiber_t g_srf;
static unsigned long g_srf_bad;

static void sregs_entry(void *arg)
{
    fiber_started();
    uint64_t out[REGS_N];
    for (unsigned long i = 0; i < REGS_ROUNDS; i++) {
        uint64_t seed = 0x5a5a000000000000u + 3 * i;
        regs_switch(&g_main, seed, out);
        g_srf_bad += regs_mismatches(out, seed);
    }
    regs_jump(&g_main, 0x7777000000000000u);
}

static void t_start_regs_switch_back(void)
{
    uint64_t out[REGS_N];
    fiber_init_main();
    g_srf_bad = 0;
    CU_ASSERT_FATAL(fiber_alloc(&g_srf, STACK_SIZE, 0));
    uint64_t seed = 0x4321000000000000u;
    regs_start(&g_srf, sregs_entry, NULL, seed, out);
    CU_ASSERT_EQUAL(regs_mismatches(out, seed), 0);
    /* The last switch comes back by the context's jump. */
    unsigned long bad = 0;
    for (unsigned long i = 0; i < REGS_ROUNDS; i++) {
        seed = 0x4321000000000000u + 11 * (i + 1);
        regs_switch(&g_srf, seed, out);
        bad += regs_mismatches(out, seed);
    }
    CU_ASSERT(g_prev == &g_srf);
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT_EQUAL(g_srf_bad, 0);
    CU_ASSERT_EQUAL(g_errors, 0);
    CU_ASSERT(fiber_canaries_intact(&g_srf));
    fiber_destroy(&g_srf);
}

/* A fresh context that jumps straight back to its starter. */
static void sregs_jump_entry(void *arg)
{
    fiber_started();
    regs_jump(&g_main, *(const uint64_t *)arg);
}

static void t_start_regs_jump(void)
{
    uint64_t out[REGS_N];
    fiber_init_main();
    CU_ASSERT_FATAL(fiber_alloc(&g_srf, STACK_SIZE, 0));
    unsigned long bad = 0;
    for (unsigned long i = 0; i < REGS_ROUNDS; i++) {
        uint64_t seed = 0x1111000000000000u + 5 * i;
        uint64_t jump_seed = ~seed;
        fiber_recycle(&g_srf);
        regs_start(&g_srf, sregs_jump_entry, &jump_seed, seed, out);
        bad += regs_mismatches(out, seed);
    }
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT_EQUAL(g_errors, 0);
    CU_ASSERT(fiber_canaries_intact(&g_srf));
    fiber_destroy(&g_srf);
}
#else
static void t_start_regs_switch_back(void)
{
    printf("\n    no register-pattern routine for this ISA; skipped ");
}
static void t_start_regs_jump(void)
{
    printf("\n    no register-pattern routine for this ISA; skipped ");
}
#endif

/*
 * FP control state across start, switch back and jump. Beyond the rounding
 * mode (fenv), each context sets other control bits where the ISA has them,
 * and the whole control words are compared:
 *   x86-64:  MXCSR without its status flags (FTZ, DAZ, RC, masks) and the
 *            x87 control word (precision and rounding control);
 *   AArch64: FPCR (FZ, DN, RMode).
 * The rounding mode is also checked by its effect (third()). What a fresh
 * context starts with is backend-defined (see context.h) and not checked.
 */
#if defined(__x86_64__)
typedef struct {
    uint32_t mxcsr;
    uint16_t x87;
} fpctl_t;
static fpctl_t fpctl_get(void)
{
    fpctl_t c;
    c.mxcsr = __builtin_ia32_stmxcsr() & ~0x3fu;
    __asm__ volatile("fnstcw %0" : "=m"(c.x87));
    return c;
}
static void fpctl_set(fpctl_t c)
{
    __builtin_ia32_ldmxcsr(c.mxcsr);
    __asm__ volatile("fldcw %0" : : "m"(c.x87));
}
static bool fpctl_eq(fpctl_t a, fpctl_t b)
{
    return a.mxcsr == b.mxcsr && a.x87 == b.x87;
}
/* Extra control bits per variant k: FTZ (bit 15) and DAZ (bit 6) on or
 * off; x87 precision control double (0x200) or extended (0x300). */
static void fpctl_extras(unsigned k)
{
    fpctl_t c = fpctl_get();
    c.mxcsr &= ~((1u << 15) | (1u << 6));
    if (k & 1)
        c.mxcsr |= 1u << 15;
    if (k & 2)
        c.mxcsr |= 1u << 6;
    c.x87 = (uint16_t)((c.x87 & ~0x300u) | ((k & 1) ? 0x200u : 0x300u));
    fpctl_set(c);
}
#elif defined(__aarch64__)
typedef struct {
    uint64_t fpcr;
} fpctl_t;
static fpctl_t fpctl_get(void)
{
    fpctl_t c;
    __asm__ volatile("mrs %0, fpcr" : "=r"(c.fpcr));
    return c;
}
static void fpctl_set(fpctl_t c)
{
    __asm__ volatile("msr fpcr, %0" : : "r"(c.fpcr));
}
static bool fpctl_eq(fpctl_t a, fpctl_t b) { return a.fpcr == b.fpcr; }
/* Extra control bits per variant k: FZ (bit 24) and DN (bit 25). */
static void fpctl_extras(unsigned k)
{
    fpctl_t c = fpctl_get();
    c.fpcr &= ~((uint64_t)3 << 24);
    c.fpcr |= (uint64_t)(k & 3) << 24;
    fpctl_set(c);
}
#else
typedef struct {
    int round;
} fpctl_t;
static fpctl_t fpctl_get(void)
{
    fpctl_t c = {fegetround()};
    return c;
}
static void fpctl_set(fpctl_t c) { fesetround(c.round); }
static bool fpctl_eq(fpctl_t a, fpctl_t b) { return a.round == b.round; }
static void fpctl_extras(unsigned k) { (void)k; }
#endif

static const int g_fp_modes[4] = {FE_TONEAREST, FE_DOWNWARD, FE_UPWARD,
                                  FE_TOWARDZERO};
static double g_fp_third[4]; /* third() in each mode */

static void fp_mode(unsigned mode, unsigned extras)
{
    fesetround(g_fp_modes[mode]);
    fpctl_extras(extras);
}

/* Bad count if the running context is not in (mode, words). */
static unsigned fp_mismatches(unsigned mode, fpctl_t words)
{
    return !fpctl_eq(fpctl_get(), words) + (fegetround() != g_fp_modes[mode]) +
           (third() != g_fp_third[mode]);
}

typedef struct {
    unsigned mode, extras; /* what the started context sets */
    fpctl_t words;         /* what it then reads */
    unsigned bad;
} fp_unit_t;

static fiber_t g_fpu;

static void fp_unit_entry(void *arg)
{
    fiber_started();
    fp_unit_t *u = arg;
    fp_mode(u->mode, u->extras);
    u->words = fpctl_get();
    u->bad += fp_mismatches(u->mode, u->words);
    fiber_switch(&g_main, false); /* back to its starter */
    u->bad += fp_mismatches(u->mode, u->words);
    fiber_jump(&g_main);
}

#define FP_ROUNDS 64

static void t_start_fpenv(void)
{
    fpctl_t orig = fpctl_get();
    for (unsigned m = 0; m < 4; m++) {
        fesetround(g_fp_modes[m]);
        g_fp_third[m] = third();
    }
    fpctl_set(orig);
    CU_ASSERT_FATAL(g_fp_third[2] > g_fp_third[1]); /* up above down */

    fiber_init_main();
    CU_ASSERT_FATAL(fiber_alloc(&g_fpu, STACK_SIZE, 0));
    unsigned bad_start = 0, bad_jump = 0, bad_unit = 0;
    /* Every pair of main and unit modes (equal ones too: the x86-64 switch
     * reloads the control words only when they differ) with each variant
     * of the other control bits. */
    for (unsigned r = 0; r < FP_ROUNDS; r++) {
        fp_unit_t u = {.mode = (r >> 2) & 3, .extras = (r >> 4) & 3};
        fp_mode(r & 3, r >> 4);
        fpctl_t want = fpctl_get();
        fiber_recycle(&g_fpu);
        fiber_start(&g_fpu, fp_unit_entry, &u);
        bad_start += fp_mismatches(r & 3, want);
        /* Another mode, then the unit runs and jumps back. */
        unsigned jmode = (r * 3 + 1) & 3;
        fp_mode(jmode, ~r >> 4);
        want = fpctl_get();
        fiber_switch(&g_fpu, false);
        bad_jump += fp_mismatches(jmode, want);
        bad_unit += u.bad;
    }
    fpctl_set(orig);
    CU_ASSERT_EQUAL(bad_start, 0);
    CU_ASSERT_EQUAL(bad_jump, 0);
    CU_ASSERT_EQUAL(bad_unit, 0);
    CU_ASSERT_EQUAL(g_errors, 0);
    CU_ASSERT(fiber_canaries_intact(&g_fpu));
    fiber_destroy(&g_fpu);
}

/*
 * The pattern start and jump exist for: a joiner starts a fresh unit on a
 * recycled stack, the unit runs to its end and jumps back to the joiner,
 * whose start call then returns. 1,000,000 cycles on one stack; every
 * 1024th unit also blocks once (switches back), and the joiner resumes it
 * with a plain switch before it finishes.
 *
 * Under TSan each fresh context needs a fiber of its own (fiber_recycle),
 * and __tsan_create_fiber + __tsan_destroy_fiber take close to a
 * millisecond in GCC 12's runtime: TSan builds run 1% of the cycles.
 */
#ifdef TEST_TSAN
#define CYCLES 10000UL
#else
#define CYCLES 1000000UL
#endif
#define CYCLE_STACK (16 * 1024)
static fiber_t g_cu;
static volatile unsigned long g_cyc_index; /* cycle the joiner is in */
static unsigned long g_cyc_ran, g_cyc_blocked, g_cyc_done;
static uint64_t g_cyc_reply;

static uint64_t cyc_value(unsigned long i) { return i * 0x9e3779b97f4a7c15u + 7; }

static void cycle_entry(void *arg)
{
    fiber_started();
    unsigned long i = (unsigned long)(uintptr_t)arg;
    FIBER_CHECK(i == g_cyc_index);
    FIBER_CHECK(g_prev == &g_main);
    g_cyc_ran++;
    /* Some work in a frame on the fresh stack. */
    volatile uint64_t buf[8];
    for (unsigned k = 0; k < 8; k++)
        buf[k] = cyc_value(i) + k;
    if ((i & 1023) == 0) {
        g_cyc_blocked++;
        fiber_switch(&g_main, false);
    }
    uint64_t sum = 0;
    for (unsigned k = 0; k < 8; k++)
        sum += buf[k];
    g_cyc_reply = sum;
    g_cyc_done++;
    fiber_jump(&g_main);
}

static void t_start_jump_cycles(void)
{
    fiber_init_main();
    g_cyc_ran = g_cyc_blocked = g_cyc_done = 0;
    CU_ASSERT_FATAL(fiber_alloc(&g_cu, CYCLE_STACK, 0));
    unsigned long bad = 0;
    double t0 = now_ns();
    for (unsigned long i = 0; i < CYCLES; i++) {
        g_cyc_index = i;
        g_cyc_reply = 0;
        fiber_recycle(&g_cu);
        fiber_start(&g_cu, cycle_entry, (void *)(uintptr_t)i);
        if ((i & 1023) == 0) {
            /* Blocked, not finished: resume it until it ends. */
            bad += g_cyc_done != i || g_cyc_blocked != i / 1024 + 1;
            fiber_switch(&g_cu, false);
        }
        bad += g_cyc_ran != i + 1 || g_cyc_done != i + 1;
        bad += g_cyc_reply != 8 * cyc_value(i) + 28;
        bad += g_prev != &g_cu;
    }
    double t1 = now_ns();
    printf("\n    %lu start+jump cycles, %.1f ns per cycle ", CYCLES,
           (t1 - t0) / (double)CYCLES);
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT_EQUAL(g_cyc_ran, CYCLES);
    CU_ASSERT_EQUAL(g_cyc_done, CYCLES);
    CU_ASSERT_EQUAL(g_cyc_blocked, (CYCLES + 1023) / 1024);
    CU_ASSERT_EQUAL(g_errors, 0);
    CU_ASSERT(fiber_canaries_intact(&g_cu));
    fiber_destroy(&g_cu);
}

/*
 * An entry function may also return: that resumes the context which started
 * it (if nothing resumed that context meanwhile), with calls and returns
 * balanced. Here a unit starts a grandchild which returns into it, then
 * returns itself, 1,000,000 times; locals of every level survive. Sanitized
 * builds leave this out: the runtime never returns from a context there,
 * because the sanitizers must see every switch as one.
 */
#if !defined(TEST_ASAN) && !defined(TEST_TSAN)
static void *g_ret_main_sp, *g_ret_child_sp;
static unsigned long g_ret_ok, g_ret_nested;
static char g_ret_stack[2][16 * 1024] __attribute__((aligned(64)));

static void ret_grandchild(void *arg)
{
    g_ret_nested += (unsigned long)(uintptr_t)arg;
}

static void ret_child(void *arg)
{
    unsigned long i = (unsigned long)(uintptr_t)arg;
    volatile unsigned long keep = i * 3 + 1;
    coexec__ctx_start(&g_ret_child_sp, g_ret_stack[1], sizeof g_ret_stack[1],
                      ret_grandchild, (void *)(uintptr_t)1);
    g_ret_ok += keep == i * 3 + 1;
}

static void t_start_return(void)
{
    enum { N = 1000000 };
    unsigned long bad = 0;
    g_ret_ok = g_ret_nested = 0;
    for (unsigned long i = 0; i < N; i++) {
        volatile unsigned long mine = i ^ 0x5a5a;
        coexec__ctx_start(&g_ret_main_sp, g_ret_stack[0],
                          sizeof g_ret_stack[0], ret_child,
                          (void *)(uintptr_t)i);
        bad += mine != (i ^ 0x5a5a);
    }
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT_EQUAL(g_ret_ok, N);
    CU_ASSERT_EQUAL(g_ret_nested, N);
}
#endif

/* ------------------------------------------------------------------------ */

static const char *const suite_names[] = {"switch",    "registers", "fpenv",
                                          "alignment", "many",      "startjump"};
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
    s = CU_add_suite(suite_names[5], NULL, NULL);
    CU_add_test(s, "entry_on_given_stack_16_bytes", t_start_entry);
    CU_add_test(s, "switch_back_and_resume", t_start_switch_back);
    CU_add_test(s, "callee_saved_start_switch_jump", t_start_regs_switch_back);
    CU_add_test(s, "callee_saved_start_then_jump", t_start_regs_jump);
    CU_add_test(s, "fp_control_start_switch_jump", t_start_fpenv);
    CU_add_test(s, "start_jump_cycles", t_start_jump_cycles);
#if !defined(TEST_ASAN) && !defined(TEST_TSAN)
    CU_add_test(s, "start_return", t_start_return);
#endif

    return arch_run_suites(argc, argv);
}
