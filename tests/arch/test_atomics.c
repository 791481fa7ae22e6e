/*
 * Tests of the atomics vocabulary of src/arch/atomic.h, built once per
 * backend: C11 (default) and libatomic_ops (COEXEC_ATOMICS_AO, also with
 * COEXEC_AO_U32_IN_AO_T to cover its CAS-loop path for 32-bit words).
 *
 * Every operation of every type and memory order is called below, and the
 * build uses -Werror=implicit-function-declaration, so a name missing from
 * one backend fails to compile; atomic-names.cmake checks the converse (no
 * backend defines a name the other lacks).
 *
 * Usage: test_atomics [suite]   (no argument runs every suite)
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <CUnit/Basic.h>

#include "arch_main.h"

#include "arch/atomic.h"

#define ORDERS(X, ty) X(ty, rlx) X(ty, acq) X(ty, rel) X(ty, ar) X(ty, sc)

/* ------------------------------------------------------------------------ */
/* Suite "ops": single-threaded semantics of every operation.               */

/* load and store in each of their orders, for one type; `v1`..`v3` are
 * distinct values of the type. Returns the number of wrong results. */
#define CHECK_LOAD_STORE(ty, T, v1, v2, v3)                                    \
    static unsigned check_ls_##ty(void)                                        \
    {                                                                          \
        unsigned bad = 0;                                                      \
        atom_##ty##_t a = ATOM_INIT(v1);                                       \
        bad += atom_load_rlx_##ty(&a) != (v1);                                 \
        atom_store_rlx_##ty(&a, v2);                                           \
        bad += atom_load_acq_##ty(&a) != (v2);                                 \
        atom_store_rel_##ty(&a, v3);                                           \
        bad += atom_load_sc_##ty(&a) != (v3);                                  \
        atom_store_sc_##ty(&a, v1);                                            \
        bad += atom_load_rlx_##ty(&a) != (v1);                                 \
        return bad;                                                            \
    }

/* xchg and cas in one order. */
#define CHECK_RMW(ty, T, o, v1, v2, v3)                                        \
    static unsigned check_rmw_##o##_##ty(void)                                 \
    {                                                                          \
        unsigned bad = 0;                                                      \
        atom_##ty##_t a = ATOM_INIT(v1);                                       \
        bad += atom_xchg_##o##_##ty(&a, v2) != (v1);                           \
        bad += atom_load_rlx_##ty(&a) != (v2);                                 \
        T expected = (v1);                                                     \
        bad += atom_cas_##o##_##ty(&a, &expected, v3) != false;                \
        bad += expected != (v2); /* a failed CAS reports the value seen */     \
        bad += atom_load_rlx_##ty(&a) != (v2);                                 \
        bad += atom_cas_##o##_##ty(&a, &expected, v3) != true;                 \
        bad += expected != (v2); /* a successful CAS leaves it alone */        \
        bad += atom_load_rlx_##ty(&a) != (v3);                                 \
        return bad;                                                            \
    }

/* fadd, fsub, for, fand in one order, including wrap-around at the top of
 * the type: after it, a CAS against the wrapped value must still succeed
 * (a backend that keeps stray high bits in a wider word would fail it). */
#define CHECK_ARITH(ty, T, o)                                                  \
    static unsigned check_arith_##o##_##ty(void)                               \
    {                                                                          \
        unsigned bad = 0;                                                      \
        const T max = (T)~(T)0;                                                \
        atom_##ty##_t a = ATOM_INIT(10);                                       \
        bad += atom_fadd_##o##_##ty(&a, 5) != 10;                              \
        bad += atom_fsub_##o##_##ty(&a, 3) != 15;                              \
        bad += atom_load_rlx_##ty(&a) != 12;                                   \
        bad += atom_for_##o##_##ty(&a, 0x30) != 12;                            \
        bad += atom_load_rlx_##ty(&a) != 0x3c;                                 \
        bad += atom_fand_##o##_##ty(&a, 0x0f) != 0x3c;                         \
        bad += atom_load_rlx_##ty(&a) != 0x0c;                                 \
        atom_store_rlx_##ty(&a, 0);                                            \
        bad += atom_fsub_##o##_##ty(&a, 1) != 0;                               \
        bad += atom_load_rlx_##ty(&a) != max;                                  \
        T expected = max;                                                      \
        bad += !atom_cas_##o##_##ty(&a, &expected, 7);                         \
        atom_store_rlx_##ty(&a, max);                                          \
        bad += atom_fadd_##o##_##ty(&a, 2) != max;                             \
        bad += atom_load_rlx_##ty(&a) != 1;                                    \
        expected = 1;                                                          \
        bad += !atom_cas_##o##_##ty(&a, &expected, 9);                         \
        atom_store_rlx_##ty(&a, max);                                          \
        bad += atom_fand_##o##_##ty(&a, max) != max;                           \
        bad += atom_for_##o##_##ty(&a, max) != max;                            \
        bad += atom_load_rlx_##ty(&a) != max;                                  \
        return bad;                                                            \
    }

static int g_x, g_y, g_z;

CHECK_LOAD_STORE(u32, uint32_t, 1u, 0xfffffffeu, 0x80000000u)
CHECK_LOAD_STORE(u64, uint64_t, 1u, 0xfffffffffffffffeu, 0x8000000000000000u)
CHECK_LOAD_STORE(uptr, uintptr_t, 1u, UINTPTR_MAX - 1, (uintptr_t)&g_x)
CHECK_LOAD_STORE(ptr, void *, (void *)&g_x, (void *)&g_y, NULL)

#define RMW_U32(ty, o) CHECK_RMW(ty, uint32_t, o, 1u, 0xffffffffu, 0x12345678u)
#define RMW_U64(ty, o)                                                         \
    CHECK_RMW(ty, uint64_t, o, 1u, 0xffffffff00000000u, 0x123456789abcdefu)
#define RMW_UPTR(ty, o) CHECK_RMW(ty, uintptr_t, o, 0u, UINTPTR_MAX, 42u)
#define RMW_PTR(ty, o)                                                         \
    CHECK_RMW(ty, void *, o, (void *)&g_x, (void *)&g_y, (void *)&g_z)
ORDERS(RMW_U32, u32)
ORDERS(RMW_U64, u64)
ORDERS(RMW_UPTR, uptr)
ORDERS(RMW_PTR, ptr)

#define ARITH_U32(ty, o) CHECK_ARITH(ty, uint32_t, o)
#define ARITH_U64(ty, o) CHECK_ARITH(ty, uint64_t, o)
#define ARITH_UPTR(ty, o) CHECK_ARITH(ty, uintptr_t, o)
ORDERS(ARITH_U32, u32)
ORDERS(ARITH_U64, u64)
ORDERS(ARITH_UPTR, uptr)

static void t_load_store(void)
{
    CU_ASSERT_EQUAL(check_ls_u32(), 0);
    CU_ASSERT_EQUAL(check_ls_u64(), 0);
    CU_ASSERT_EQUAL(check_ls_uptr(), 0);
    CU_ASSERT_EQUAL(check_ls_ptr(), 0);
}

#define CALL_RMW(ty, o) CU_ASSERT_EQUAL(check_rmw_##o##_##ty(), 0);
static void t_xchg_cas(void)
{
    ORDERS(CALL_RMW, u32)
    ORDERS(CALL_RMW, u64)
    ORDERS(CALL_RMW, uptr)
    ORDERS(CALL_RMW, ptr)
}

#define CALL_ARITH(ty, o) CU_ASSERT_EQUAL(check_arith_##o##_##ty(), 0);
static void t_arith(void)
{
    ORDERS(CALL_ARITH, u32)
    ORDERS(CALL_ARITH, u64)
    ORDERS(CALL_ARITH, uptr)
}

static void t_fences_relax(void)
{
    atom_fence_acq();
    atom_fence_rel();
    atom_fence_sc();
    cpu_relax();
    compiler_barrier();
    CU_PASS("fences and hints are callable");
}

static void t_tagged(void)
{
    atom_tagged_t t;
    memset(&t, 0, sizeof t);
    tagged_val_t v = atom_tagged_load(&t);
    CU_ASSERT(v.ptr == NULL && v.tag == 0);
    tagged_val_t n = {&g_x, 1};
    CU_ASSERT(atom_tagged_cas(&t, v, n));
    v = atom_tagged_load(&t);
    CU_ASSERT(v.ptr == &g_x && v.tag == 1);
    /* Same pointer, stale tag: the ABA case the tag exists for. */
    tagged_val_t stale = {&g_x, 0};
    CU_ASSERT(!atom_tagged_cas(&t, stale, (tagged_val_t){&g_y, 2}));
    CU_ASSERT(atom_tagged_cas(&t, v, (tagged_val_t){&g_y, UINT64_MAX}));
    v = atom_tagged_load(&t);
    CU_ASSERT(v.ptr == &g_y && v.tag == UINT64_MAX);
    CU_ASSERT_EQUAL(sizeof(atom_tagged_t), 16);
    CU_ASSERT_EQUAL(_Alignof(atom_tagged_t), 16);
}

/* ------------------------------------------------------------------------ */
/* Suite "threads": the read-modify-writes are atomic under contention.     */

#define NTHREADS 2
#define ITERS 200000

static atom_u32_t g_c32 = ATOM_INIT(0);
static atom_u64_t g_c64 = ATOM_INIT(0);
static atom_u64_t g_cas64 = ATOM_INIT(0);
static atom_u32_t g_cas32 = ATOM_INIT(0);
static atom_uptr_t g_bits = ATOM_INIT(0);
static atom_tagged_t g_tagged;
static atom_u32_t g_flag = ATOM_INIT(0);
static uint64_t g_payload; /* plain data published through g_flag */
static uint64_t g_seen_payload;

static void *contender(void *arg)
{
    uintptr_t id = (uintptr_t)arg;
    for (unsigned i = 0; i < ITERS; i++) {
        atom_fadd_rlx_u32(&g_c32, 3);
        atom_fsub_ar_u32(&g_c32, 1);
        atom_fadd_sc_u64(&g_c64, 1);
        uint64_t e = atom_load_rlx_u64(&g_cas64);
        while (!atom_cas_ar_u64(&g_cas64, &e, e + 1))
            cpu_relax();
        uint32_t e32 = atom_load_rlx_u32(&g_cas32);
        while (!atom_cas_acq_u32(&g_cas32, &e32, e32 + 1))
            ;
        tagged_val_t o, n;
        do {
            o = atom_tagged_load(&g_tagged);
            n.ptr = (char *)o.ptr + 1;
            n.tag = o.tag + 1;
        } while (!atom_tagged_cas(&g_tagged, o, n));
    }
    /* Each thread owns a bit range: set all of its bits one by one, then
     * clear the even ones, racing with the other thread's updates. */
    for (unsigned b = 0; b < 16; b++)
        atom_for_rel_uptr(&g_bits, (uintptr_t)1 << (id * 16 + b));
    for (unsigned b = 0; b < 16; b += 2)
        atom_fand_acq_uptr(&g_bits, ~((uintptr_t)1 << (id * 16 + b)));
    return NULL;
}

static void t_contention(void)
{
    pthread_t th[NTHREADS];
    memset(&g_tagged, 0, sizeof g_tagged);
    for (uintptr_t i = 0; i < NTHREADS; i++)
        CU_ASSERT_FATAL(pthread_create(&th[i], NULL, contender, (void *)i) == 0);
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(th[i], NULL);
    CU_ASSERT_EQUAL(atom_load_sc_u32(&g_c32), 2u * NTHREADS * ITERS);
    CU_ASSERT_EQUAL(atom_load_sc_u64(&g_c64), (uint64_t)NTHREADS * ITERS);
    CU_ASSERT_EQUAL(atom_load_sc_u64(&g_cas64), (uint64_t)NTHREADS * ITERS);
    CU_ASSERT_EQUAL(atom_load_sc_u32(&g_cas32), (uint32_t)NTHREADS * ITERS);
    tagged_val_t t = atom_tagged_load(&g_tagged);
    CU_ASSERT_EQUAL((uintptr_t)t.ptr, (uintptr_t)NTHREADS * ITERS);
    CU_ASSERT_EQUAL(t.tag, (uint64_t)NTHREADS * ITERS);
    CU_ASSERT_EQUAL(atom_load_sc_uptr(&g_bits), (uintptr_t)0xaaaaaaaau);
}

static void *publisher(void *arg)
{
    (void)arg;
    g_payload = 0x1234567890abcdefu;
    atom_store_rel_u32(&g_flag, 1);
    return NULL;
}

/* Release/acquire publishes plain data; TSan builds check it is seen as
 * ordered. */
static void t_publish(void)
{
    pthread_t th;
    atom_store_rlx_u32(&g_flag, 0);
    CU_ASSERT_FATAL(pthread_create(&th, NULL, publisher, NULL) == 0);
    while (atom_load_acq_u32(&g_flag) == 0)
        cpu_relax();
    g_seen_payload = g_payload;
    pthread_join(th, NULL);
    CU_ASSERT_EQUAL(g_seen_payload, 0x1234567890abcdefu);
}

/* ------------------------------------------------------------------------ */

int main(int argc, char **argv)
{
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 2;
    CU_pSuite s = CU_add_suite("ops", NULL, NULL);
    CU_add_test(s, "load_store", t_load_store);
    CU_add_test(s, "xchg_cas", t_xchg_cas);
    CU_add_test(s, "fetch_arith_wrap", t_arith);
    CU_add_test(s, "fences", t_fences_relax);
    CU_add_test(s, "tagged", t_tagged);
    s = CU_add_suite("threads", NULL, NULL);
    CU_add_test(s, "contention", t_contention);
    CU_add_test(s, "publish", t_publish);

    return arch_run_suites(argc, argv);
}
