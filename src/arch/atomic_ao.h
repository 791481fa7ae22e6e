/*
 * src/arch/atomic_ao.h: the libatomic_ops backend of src/arch/atomic.h,
 * selected by COEXEC_ATOMICS_AO. Include atomic.h, not this file.
 *
 * It offers exactly the names of atomic_c11.h, built on the header-only part
 * of <atomic_ops.h>: nothing here needs libatomic_ops.a, and the GPL
 * libatomic_ops_gpl.a must never be linked. AO spells memory orders as
 * suffixes; the mapping is
 *   rlx -> (none), acq -> _acquire, rel -> _release, ar and sc -> _full.
 * AO has no exchange and no fetch-and-or/and returning the old value
 * (AO_or/AO_and return nothing), so those are CAS loops on the requested
 * order. Under -fsanitize=thread AO itself switches to the __atomic
 * builtins, so this backend stays visible to TSan.
 */
#ifndef COEXEC_ARCH_ATOMIC_AO_H
#define COEXEC_ARCH_ATOMIC_AO_H

#include <atomic_ops.h>
#include <stdbool.h>
#include <stdint.h>

/* 64-bit words are held in AO_t, so AO_t must be 64 bits wide. */
#if SIZE_MAX < UINT64_MAX
#error "the libatomic_ops backend needs a 64-bit AO_t; use COEXEC_ATOMICS=c11"
#endif
/* AO generalizes every other operation used below from these two. */
#if !defined(AO_HAVE_fetch_compare_and_swap_full) || !defined(AO_HAVE_nop_full)
#error "libatomic_ops provides no compare-and-swap on this target"
#endif

/*
 * 32-bit words use AO's unsigned-int operations where AO has them. Otherwise
 * (or when COEXEC_AO_U32_IN_AO_T forces it, to test that path) they are held
 * in an AO_t and every read-modify-write is a CAS loop that truncates to 32
 * bits, so the stored word never has high bits set and a CAS against a
 * 32-bit expected value compares exactly.
 */
#if defined(AO_HAVE_int_fetch_compare_and_swap_full) &&                        \
    defined(AO_HAVE_int_fetch_and_add_full) && !defined(COEXEC_AO_U32_IN_AO_T)
#define ATOM_AO_U32_NATIVE_ 1
typedef struct { unsigned int v; } atom_u32_t;
#else
#define ATOM_AO_U32_NATIVE_ 0
typedef struct { AO_t v; } atom_u32_t;
#endif
typedef struct { AO_t v; } atom_u64_t;
typedef struct { AO_t v; } atom_uptr_t;
typedef struct { AO_t v; } atom_ptr_t;

/* Every storage type is an unsigned integer, and pointers are stored as
 * their integer value, hence the cast. */
#define ATOM_INIT(x) { (AO_t)(x) }

/* Conversions between a value type T and a storage word W; going through
 * uintptr_t makes the same spelling work for pointers and integers. */
#define ATOM_AO_W_(W, x) ((W)(uintptr_t)(x))
#define ATOM_AO_T_(T, w) ((T)(uintptr_t)(w))

/* P is the AO name prefix: empty for AO_t, int_ for unsigned int. */
#define ATOM_AO_LOAD_(ty, T, P, o, sfx)                                        \
    static inline T atom_load_##o##_##ty(atom_##ty##_t *a)                     \
    {                                                                          \
        return ATOM_AO_T_(T, AO_##P##load##sfx(&a->v));                        \
    }
#define ATOM_AO_STORE_(ty, T, W, P, o, sfx)                                    \
    static inline void atom_store_##o##_##ty(atom_##ty##_t *a, T x)            \
    {                                                                          \
        AO_##P##store##sfx(&a->v, ATOM_AO_W_(W, x));                           \
    }

/* A read-modify-write as a CAS loop: EXPR computes the new value from the
 * old one (old) and the operand (x); the cast to T truncates it to T. */
#define ATOM_AO_LOOP_(ty, T, W, P, o, sfx, name, EXPR)                         \
    static inline T atom_##name##_##o##_##ty(atom_##ty##_t *a, T x)            \
    {                                                                          \
        W cur = AO_##P##load(&a->v);                                           \
        for (;;) {                                                             \
            T old = ATOM_AO_T_(T, cur);                                        \
            W got = AO_##P##fetch_compare_and_swap##sfx(                       \
                &a->v, cur, ATOM_AO_W_(W, (T)(EXPR)));                         \
            if (got == cur)                                                    \
                return old;                                                    \
            cur = got;                                                         \
        }                                                                      \
    }

#define ATOM_AO_RMW_(ty, T, W, P, o, sfx)                                      \
    ATOM_AO_LOOP_(ty, T, W, P, o, sfx, xchg, x)                                \
    static inline bool atom_cas_##o##_##ty(atom_##ty##_t *a, T *expected,      \
                                           T desired)                          \
    {                                                                          \
        W old = ATOM_AO_W_(W, *expected);                                      \
        W got = AO_##P##fetch_compare_and_swap##sfx(&a->v, old,                \
                                                    ATOM_AO_W_(W, desired));   \
        if (got == old)                                                        \
            return true;                                                       \
        *expected = ATOM_AO_T_(T, got);                                        \
        return false;                                                          \
    }

/* Fetch-and-add/sub on AO's own, exactly wide, fetch_and_add. */
#define ATOM_AO_ARITH_(ty, T, W, P, o, sfx)                                    \
    static inline T atom_fadd_##o##_##ty(atom_##ty##_t *a, T x)                \
    {                                                                          \
        return ATOM_AO_T_(T, AO_##P##fetch_and_add##sfx(&a->v,                 \
                                                        ATOM_AO_W_(W, x)));    \
    }                                                                          \
    static inline T atom_fsub_##o##_##ty(atom_##ty##_t *a, T x)                \
    {                                                                          \
        return ATOM_AO_T_(T, AO_##P##fetch_and_add##sfx(                       \
                                 &a->v, (W)0 - ATOM_AO_W_(W, x)));             \
    }                                                                          \
    ATOM_AO_LOOP_(ty, T, W, P, o, sfx, for, old | x)                           \
    ATOM_AO_LOOP_(ty, T, W, P, o, sfx, fand, old & x)

/* Every arithmetic op as a CAS loop, for 32-bit words held in an AO_t. */
#define ATOM_AO_ARITH_LOOP_(ty, T, W, P, o, sfx)                               \
    ATOM_AO_LOOP_(ty, T, W, P, o, sfx, fadd, old + x)                          \
    ATOM_AO_LOOP_(ty, T, W, P, o, sfx, fsub, old - x)                          \
    ATOM_AO_LOOP_(ty, T, W, P, o, sfx, for, old | x)                           \
    ATOM_AO_LOOP_(ty, T, W, P, o, sfx, fand, old & x)

#define ATOM_AO_ALL_ORDERS_(DEF, ty, T, W, P)                                  \
    DEF(ty, T, W, P, rlx, )                                                    \
    DEF(ty, T, W, P, acq, _acquire)                                            \
    DEF(ty, T, W, P, rel, _release)                                            \
    DEF(ty, T, W, P, ar, _full)                                                \
    DEF(ty, T, W, P, sc, _full)

#define ATOM_AO_TYPE_(ty, T, W, P)                                             \
    ATOM_AO_LOAD_(ty, T, P, rlx, )                                             \
    ATOM_AO_LOAD_(ty, T, P, acq, _acquire)                                     \
    ATOM_AO_LOAD_(ty, T, P, sc, _full)                                         \
    ATOM_AO_STORE_(ty, T, W, P, rlx, )                                         \
    ATOM_AO_STORE_(ty, T, W, P, rel, _release)                                 \
    ATOM_AO_STORE_(ty, T, W, P, sc, _full)                                     \
    ATOM_AO_ALL_ORDERS_(ATOM_AO_RMW_, ty, T, W, P)

#if ATOM_AO_U32_NATIVE_
ATOM_AO_TYPE_(u32, uint32_t, unsigned int, int_)
ATOM_AO_ALL_ORDERS_(ATOM_AO_ARITH_, u32, uint32_t, unsigned int, int_)
#else
ATOM_AO_TYPE_(u32, uint32_t, AO_t, )
ATOM_AO_ALL_ORDERS_(ATOM_AO_ARITH_LOOP_, u32, uint32_t, AO_t, )
#endif
ATOM_AO_TYPE_(u64, uint64_t, AO_t, )
ATOM_AO_TYPE_(uptr, uintptr_t, AO_t, )
ATOM_AO_TYPE_(ptr, void *, AO_t, )
ATOM_AO_ALL_ORDERS_(ATOM_AO_ARITH_, u64, uint64_t, AO_t, )
ATOM_AO_ALL_ORDERS_(ATOM_AO_ARITH_, uptr, uintptr_t, AO_t, )

/*
 * AO's _read and _write barriers only promise to order reads among reads
 * and writes among writes (AArch64's AO_nop_write is "dmb ishst"), which is
 * less than a C11 acquire or release fence. On x86, a TSO machine, both are
 * compiler barriers and that is exactly what acquire and release fences
 * need there; elsewhere the full barrier is the one that is always enough.
 */
static inline void atom_fence_acq(void)
{
#if (defined(__x86_64__) || defined(__i386__)) && defined(AO_HAVE_nop_read)
    AO_nop_read();
#else
    AO_nop_full();
#endif
}
static inline void atom_fence_rel(void)
{
#if (defined(__x86_64__) || defined(__i386__)) && defined(AO_HAVE_nop_write)
    AO_nop_write();
#else
    AO_nop_full();
#endif
}
static inline void atom_fence_sc(void) { AO_nop_full(); }

#endif /* COEXEC_ARCH_ATOMIC_AO_H */
