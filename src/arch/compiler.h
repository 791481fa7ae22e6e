/*
 * src/arch/compiler.h: compiler helpers used across the runtime.
 */
#ifndef COEXEC_ARCH_COMPILER_H
#define COEXEC_ARCH_COMPILER_H

#include <stddef.h>

#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)
#define COLD __attribute__((cold))
#define NOINLINE __attribute__((noinline))
/* Reads of records other threads write without a handshake with the
 * reader, on purpose (a diagnostic dump that validates what it reads):
 * not instrumented by ThreadSanitizer. */
#define NO_TSAN __attribute__((no_sanitize("thread")))
#define NORETURN __attribute__((noreturn))
#define ALWAYS_INLINE inline __attribute__((always_inline))
#define HIDDEN __attribute__((visibility("hidden")))

/* Discards the result of a call marked warn_unused_result, on purpose. */
#define IGNORE_RESULT(x)                                                       \
    do {                                                                       \
        int ignored_ = (x);                                                    \
        (void)ignored_;                                                        \
    } while (0)

#define CACHE_LINE 64
#define CACHE_ALIGNED __attribute__((aligned(CACHE_LINE)))

#define container_of(ptr, type, member)                                        \
    ((type *)((char *)(ptr)-offsetof(type, member)))

/* Sanitizer detection that works for gcc and clang. */
#if defined(__SANITIZE_ADDRESS__)
#define COEXEC_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define COEXEC_ASAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define COEXEC_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define COEXEC_TSAN 1
#endif
#endif

#endif /* COEXEC_ARCH_COMPILER_H */
