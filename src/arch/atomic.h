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
