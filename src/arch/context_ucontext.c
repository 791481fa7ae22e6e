/*
 * Portable context switch on getcontext/makecontext/swapcontext (see
 * src/arch/context.h). It is the fallback for ISAs without an assembly
 * backend: correct everywhere glibc or another POSIX.1-2001 libc provides
 * ucontext, but slower, because swapcontext saves and restores the signal
 * mask with a system call on every switch.
 *
 * A context's "saved stack pointer" is the address of a ucontext_t:
 *   - for a fresh context, a record carved out of the top of its own stack
 *     by coexec__ctx_make; it is read once, by the first switch to it;
 *   - for a suspended context, a record in the frame of the
 *     coexec__ctx_switch call that suspended it, on that context's own
 *     stack. The frame, and so the record, stays alive exactly as long as
 *     the context stays suspended, which is as long as anyone may switch
 *     to it.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <ucontext.h>

#include "context.h"

/*
 * The least stack a fresh context must keep below the carved record for its
 * own frames. Its first coexec__ctx_switch alone puts another ucontext_t
 * (968 bytes on x86-64) plus swapcontext's frame on that stack.
 */
#define UCTX_MIN_USABLE 2048

/* The record is carved with this alignment: at least what ucontext_t needs
 * (16 on AArch64 for the FP/SIMD save area) and a cache line, so that the
 * record does not share a line with the context's first frame. */
#define UCTX_ALIGN 64

static void uctx_fatal(const char *what)
{
    /* A broken switch cannot be reported to the caller: the caller's
     * context is exactly what could not be saved or resumed. */
    fprintf(stderr, "coexec: %s failed\n", what);
    abort();
}

/*
 * makecontext passes only int arguments, so each pointer travels as two
 * 32-bit halves (the high half is 0 where pointers have 32 bits).
 */
static uintptr_t uctx_join(unsigned int lo, unsigned int hi)
{
#if UINTPTR_MAX > 0xffffffffu
    return ((uintptr_t)hi << 32) | (uintptr_t)lo;
#else
    (void)hi;
    return (uintptr_t)lo;
#endif
}

static unsigned int uctx_lo(uintptr_t v)
{
    return (unsigned int)(v & 0xffffffffu);
}

static unsigned int uctx_hi(uintptr_t v)
{
#if UINTPTR_MAX > 0xffffffffu
    return (unsigned int)(v >> 32);
#else
    (void)v;
    return 0;
#endif
}

static void uctx_trampoline(unsigned int entry_lo, unsigned int entry_hi,
                            unsigned int arg_lo, unsigned int arg_hi)
{
    coexec__ctx_entry_t entry =
        (coexec__ctx_entry_t)uctx_join(entry_lo, entry_hi);
    void *arg = (void *)uctx_join(arg_lo, arg_hi);

    entry(arg);
    /* entry must leave by switching away for good. Returning would resume
     * uc_link, which is NULL and would silently end the whole thread. */
    abort();
}

void *coexec__ctx_make(void *stack, size_t size, coexec__ctx_entry_t entry,
                       void *arg)
{
    uintptr_t lo = (uintptr_t)stack;
    uintptr_t top = (lo + size) & ~(uintptr_t)15;
    uintptr_t rec = (top - sizeof(ucontext_t)) & ~(uintptr_t)(UCTX_ALIGN - 1);
    ucontext_t *uc = (ucontext_t *)rec;

    /* Where ucontext_t is large (4560 bytes on AArch64) a small stack has
     * no room left for the context itself; running it anyway would let
     * its frames overwrite the record or the memory below the stack. */
    if (top < lo + sizeof(ucontext_t) + UCTX_MIN_USABLE ||
        rec - lo < UCTX_MIN_USABLE) {
        fprintf(stderr,
                "coexec: stack of %zu bytes too small for a ucontext "
                "context (record %zu bytes + %d usable)\n",
                size, sizeof(ucontext_t), UCTX_MIN_USABLE);
        abort();
    }
    if (getcontext(uc) != 0)
        uctx_fatal("getcontext");
    uc->uc_link = NULL;
    uc->uc_stack.ss_sp = stack;
    uc->uc_stack.ss_size = (size_t)(rec - lo);
    uc->uc_stack.ss_flags = 0;
    makecontext(uc, (void (*)(void))uctx_trampoline, 4,
                uctx_lo((uintptr_t)entry), uctx_hi((uintptr_t)entry),
                uctx_lo((uintptr_t)arg), uctx_hi((uintptr_t)arg));
    return uc;
}

void coexec__ctx_switch(void **from_sp, void *to_sp)
{
    /* This record outlives the call only while the calling context is
     * suspended inside swapcontext below, which is exactly when others
     * may switch to it through *from_sp. */
    ucontext_t self;

    *from_sp = &self;
    /* Checking the result also keeps the compiler from turning this into
     * a tail call, which would release the frame holding self. */
    if (swapcontext(&self, (ucontext_t *)to_sp) != 0)
        uctx_fatal("swapcontext");
}

/* A ucontext_t's registers are not read for call stacks. */
int coexec__ctx_frame(const void *sp, uintptr_t *fp, uintptr_t *pc)
{
    (void)sp;
    *fp = *pc = 0;
    return 0;
}
