/*
 * src/thread/switch.h: one context switch, announced to the sanitizers.
 *
 * Every switch in the runtime goes through switch_ctx(). Under ASan it
 * tells the runtime which stack is being entered (and, for a context left
 * for good, that its fake stack can go); under TSan it switches fibers so
 * happens-before follows the ULT, not the OS thread. Without sanitizers it
 * is the bare assembly switch.
 */
#ifndef COEXEC_THREAD_SWITCH_H
#define COEXEC_THREAD_SWITCH_H

#include "arch/context.h"
#include "arch/compiler.h"

#ifdef COEXEC_ASAN
#include <sanitizer/common_interface_defs.h>
#endif
#ifdef COEXEC_TSAN
#include <sanitizer/tsan_interface.h>
#endif

/* Sanitized builds never leave a context by returning from it: the
 * sanitizers must see every switch as one. */
#if defined(COEXEC_ASAN) || defined(COEXEC_TSAN)
#define SANITIZED 1
#else
#define SANITIZED 0
#endif

struct fiber_info {
    const void *stack_lo;
    size_t stack_size;
    void *tsan_fiber;
};

#ifdef COEXEC_ASAN
static ALWAYS_INLINE void san_enter(void **fake, int final,
                                    const struct fiber_info *to)
{
    __sanitizer_start_switch_fiber(final ? NULL : fake, to->stack_lo,
                                   to->stack_size);
}
static ALWAYS_INLINE void san_resumed(void *fake)
{
    const void *lo;
    size_t size;
    __sanitizer_finish_switch_fiber(fake, &lo, &size);
}
#else
static ALWAYS_INLINE void san_enter(void **fake, int final,
                                    const struct fiber_info *to)
{
    (void)fake;
    (void)final;
    (void)to;
}
static ALWAYS_INLINE void san_resumed(void *fake) { (void)fake; }
#endif

/* A recycled stack may still carry the poisoned redzones of the frames that
 * last lived on it: clear them before a fresh context is built there. */
#ifdef COEXEC_ASAN
#include <sanitizer/asan_interface.h>
static ALWAYS_INLINE void san_stack_reuse(void *lo, size_t size)
{
    __asan_unpoison_memory_region(lo, size);
}
#else
static ALWAYS_INLINE void san_stack_reuse(void *lo, size_t size)
{
    (void)lo;
    (void)size;
}
#endif

#ifdef COEXEC_TSAN
static ALWAYS_INLINE void tsan_to(const struct fiber_info *to)
{
    __tsan_switch_to_fiber(to->tsan_fiber, 0);
}
static inline void *tsan_fiber_new(void) { return __tsan_create_fiber(0); }
static inline void tsan_fiber_free(void *f)
{
    if (f)
        __tsan_destroy_fiber(f);
}
static inline void *tsan_fiber_current(void) { return __tsan_get_current_fiber(); }
#else
static ALWAYS_INLINE void tsan_to(const struct fiber_info *to) { (void)to; }
static inline void *tsan_fiber_new(void) { return NULL; }
static inline void tsan_fiber_free(void *f) { (void)f; }
static inline void *tsan_fiber_current(void) { return NULL; }
#endif

/* Leaves the current context (saving it in *from_sp unless `final`) for the
 * context saved at to_sp. Returns when the saved context is resumed. */
static ALWAYS_INLINE void switch_ctx(void **from_sp, void *to_sp,
                                     const struct fiber_info *to, int final)
{
    void *fake = NULL;
    san_enter(&fake, final, to);
    tsan_to(to);
    if (final)
        coexec__ctx_jump(to_sp);
    coexec__ctx_switch(from_sp, to_sp);
    san_resumed(fake);
}

/* Leaves the current context (saved in *from_sp) to run entry(arg) on the
 * fresh stack described by `to`. Returns when the saved context resumes. */
static ALWAYS_INLINE void start_ctx(void **from_sp, const struct fiber_info *to,
                                    coexec__ctx_entry_t entry, void *arg)
{
    void *fake = NULL;
    san_enter(&fake, 0, to);
    tsan_to(to);
    coexec__ctx_start(from_sp, (void *)to->stack_lo, to->stack_size, entry,
                      arg);
    san_resumed(fake);
}

/* First thing a fresh context does (it was never "resumed" by a switch). */
static ALWAYS_INLINE void switch_first_entry(void)
{
    san_resumed(NULL);
}

#endif /* COEXEC_THREAD_SWITCH_H */
