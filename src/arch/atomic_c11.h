/*
 * src/arch/atomic_c11.h: the C11 <stdatomic.h> backend of src/arch/atomic.h.
 * Include atomic.h, not this file.
 */
#ifndef COEXEC_ARCH_ATOMIC_C11_H
#define COEXEC_ARCH_ATOMIC_C11_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "arch/compiler.h" /* COEXEC_TSAN */

typedef struct { _Atomic uint32_t v; } atom_u32_t;
typedef struct { _Atomic uint64_t v; } atom_u64_t;
typedef struct { _Atomic uintptr_t v; } atom_uptr_t;
typedef struct { void *_Atomic v; } atom_ptr_t;

#define ATOM_INIT(x) { (x) }

#define ATOM_O_rlx memory_order_relaxed
#define ATOM_O_acq memory_order_acquire
#define ATOM_O_rel memory_order_release
#define ATOM_O_ar memory_order_acq_rel
#define ATOM_O_sc memory_order_seq_cst
/* The failure order of a CAS may not be release-flavoured. */
#define ATOM_F_rlx memory_order_relaxed
#define ATOM_F_acq memory_order_acquire
#define ATOM_F_rel memory_order_relaxed
#define ATOM_F_ar memory_order_acquire
#define ATOM_F_sc memory_order_seq_cst

#define ATOM_DEFINE_LOAD_(ty, T, o)                                            \
    static inline T atom_load_##o##_##ty(atom_##ty##_t *a)                     \
    {                                                                          \
        return atomic_load_explicit(&a->v, ATOM_O_##o);                        \
    }
#define ATOM_DEFINE_STORE_(ty, T, o)                                           \
    static inline void atom_store_##o##_##ty(atom_##ty##_t *a, T x)            \
    {                                                                          \
        atomic_store_explicit(&a->v, x, ATOM_O_##o);                           \
    }
#define ATOM_DEFINE_RMW_(ty, T, o)                                             \
    static inline T atom_xchg_##o##_##ty(atom_##ty##_t *a, T x)                \
    {                                                                          \
        return atomic_exchange_explicit(&a->v, x, ATOM_O_##o);                 \
    }                                                                          \
    static inline bool atom_cas_##o##_##ty(atom_##ty##_t *a, T *expected,      \
                                           T desired)                          \
    {                                                                          \
        return atomic_compare_exchange_strong_explicit(                        \
            &a->v, expected, desired, ATOM_O_##o, ATOM_F_##o);                 \
    }
#define ATOM_DEFINE_ARITH_(ty, T, o)                                           \
    static inline T atom_fadd_##o##_##ty(atom_##ty##_t *a, T x)                \
    {                                                                          \
        return atomic_fetch_add_explicit(&a->v, x, ATOM_O_##o);                \
    }                                                                          \
    static inline T atom_fsub_##o##_##ty(atom_##ty##_t *a, T x)                \
    {                                                                          \
        return atomic_fetch_sub_explicit(&a->v, x, ATOM_O_##o);                \
    }                                                                          \
    static inline T atom_for_##o##_##ty(atom_##ty##_t *a, T x)                 \
    {                                                                          \
        return atomic_fetch_or_explicit(&a->v, x, ATOM_O_##o);                 \
    }                                                                          \
    static inline T atom_fand_##o##_##ty(atom_##ty##_t *a, T x)                \
    {                                                                          \
        return atomic_fetch_and_explicit(&a->v, x, ATOM_O_##o);                \
    }

#define ATOM_DEFINE_ALL_(ty, T, DEF)                                           \
    DEF(ty, T, rlx) DEF(ty, T, acq) DEF(ty, T, rel) DEF(ty, T, ar) DEF(ty, T, sc)

#define ATOM_DEFINE_TYPE_(ty, T)                                               \
    ATOM_DEFINE_LOAD_(ty, T, rlx)                                              \
    ATOM_DEFINE_LOAD_(ty, T, acq)                                              \
    ATOM_DEFINE_LOAD_(ty, T, sc)                                               \
    ATOM_DEFINE_STORE_(ty, T, rlx)                                             \
    ATOM_DEFINE_STORE_(ty, T, rel)                                             \
    ATOM_DEFINE_STORE_(ty, T, sc)                                              \
    ATOM_DEFINE_ALL_(ty, T, ATOM_DEFINE_RMW_)

ATOM_DEFINE_TYPE_(u32, uint32_t)
ATOM_DEFINE_TYPE_(u64, uint64_t)
ATOM_DEFINE_TYPE_(uptr, uintptr_t)
ATOM_DEFINE_TYPE_(ptr, void *)
ATOM_DEFINE_ALL_(u32, uint32_t, ATOM_DEFINE_ARITH_)
ATOM_DEFINE_ALL_(u64, uint64_t, ATOM_DEFINE_ARITH_)
ATOM_DEFINE_ALL_(uptr, uintptr_t, ATOM_DEFINE_ARITH_)

#ifdef COEXEC_TSAN
/* TSan does not model fences: under it every fence is a seq_cst
 * read-modify-write of one shared word, which orders every fence user (a
 * stronger, slower stand-in that TSan understands). */
__attribute__((weak, visibility("hidden"))) _Atomic unsigned
    coexec__tsan_fence_word;
static inline void atom_fence_sc(void)
{
    atomic_fetch_add_explicit(&coexec__tsan_fence_word, 1, memory_order_seq_cst);
}
static inline void atom_fence_acq(void) { atom_fence_sc(); }
static inline void atom_fence_rel(void) { atom_fence_sc(); }
#else
static inline void atom_fence_acq(void) { atomic_thread_fence(memory_order_acquire); }
static inline void atom_fence_rel(void) { atomic_thread_fence(memory_order_release); }
static inline void atom_fence_sc(void) { atomic_thread_fence(memory_order_seq_cst); }
#endif

#endif /* COEXEC_ARCH_ATOMIC_C11_H */
