/*
 * src/arch/atomic.h: the runtime's atomic vocabulary.
 *
 * Every shared word is one of the wrapper types below, so no plain access
 * can slip through, and every operation names its memory order:
 *   rlx = relaxed, acq = acquire, rel = release, ar = acq_rel, sc = seq_cst.
 * Operations: load, store, xchg, cas (strong; updates *expected on failure),
 * fadd, fsub, for, fand (fetch-and-op, returning the old value).
 *
 * Backends, chosen by CMake (COEXEC_ATOMICS): c11 (default, <stdatomic.h>,
 * what the sanitizers and analyzers understand) and ao (libatomic_ops, the
 * header-only part, for toolchains without C11 atomics). This header is the
 * only includer of either.
 */
#ifndef COEXEC_ARCH_ATOMIC_H
#define COEXEC_ARCH_ATOMIC_H

#include <stdbool.h>
#include <stdint.h>

#if defined(COEXEC_ATOMICS_AO)
#include "atomic_ao.h"
#else
#include "atomic_c11.h"
#endif

/*
 * A relaxed load or store of a plain field that a thread outside its
 * owner's synchronization may read while it is written: the fields of
 * unit, pool, scheduler and stream records that queries through handles
 * read, re-checking the handle after (HANDLE_STILL, base/global.h).
 */
#define RLX_GET(lv) __atomic_load_n(&(lv), __ATOMIC_RELAXED)
#define RLX_SET(lv, v)                                                         \
    __atomic_store_n(&(lv), (__typeof__(lv))(v), __ATOMIC_RELAXED)

/*
 * Derived from the backend's operations, once for both.
 *
 * A 16-byte {pointer, tag} word for ABA-safe lock-free stacks. The halves
 * are read with two acquire loads (a torn snapshot only makes the CAS
 * fail); the CAS is the GCC builtin 16-byte compare-and-swap (cmpxchg16b
 * with -mcx16, casp or ldxp/stxp on AArch64), which TSan instruments where
 * AO's own inline cmpxchg16b would be invisible to it.
 */
typedef union {
    struct {
        atom_ptr_t ptr;
        atom_u64_t tag;
    } h;
    unsigned __int128 whole;
} __attribute__((aligned(16))) atom_tagged_t;

typedef struct {
    void *ptr;
    uint64_t tag;
} tagged_val_t;

static inline tagged_val_t atom_tagged_load(atom_tagged_t *a)
{
    tagged_val_t v;
    v.tag = atom_load_acq_u64(&a->h.tag);
    v.ptr = atom_load_acq_ptr(&a->h.ptr);
    return v;
}

static inline bool atom_tagged_cas(atom_tagged_t *a, tagged_val_t old,
                                   tagged_val_t nv)
{
    unsigned __int128 o = ((unsigned __int128)old.tag << 64) |
                          (uintptr_t)old.ptr;
    unsigned __int128 n = ((unsigned __int128)nv.tag << 64) | (uintptr_t)nv.ptr;
    return __sync_bool_compare_and_swap(&a->whole, o, n);
}

/* Spin-wait hint. */
static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield" ::: "memory");
#else
    __asm__ volatile("" ::: "memory");
#endif
}

/* Compiler-only barrier. */
#define compiler_barrier() __asm__ volatile("" ::: "memory")

#endif /* COEXEC_ARCH_ATOMIC_H */
