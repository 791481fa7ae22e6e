/*
 * src/arch/context.h: the machine-context switch contract.
 *
 * A context is identified by one pointer, its "saved stack pointer": what
 * coexec__ctx_switch stored when the context was left, or what
 * coexec__ctx_make returned for a fresh one. The backend is chosen by CMake
 * (COEXEC_CONTEXT=asm: src/arch/<isa>/context.S; =ucontext:
 * src/arch/context_ucontext.c); callers never see which.
 *
 * The asm backends save only what the ABI says a callee must preserve: the
 * callee-saved integer registers, the frame and stack pointers, and the FP
 * control words (x86-64: MXCSR and the x87 control word; AArch64: d8-d15 and
 * FPCR). Everything else is dead across a call by the ABI.
 *
 * This layer knows nothing of sanitizers or units; src/thread/ wraps it.
 */
#ifndef COEXEC_ARCH_CONTEXT_H
#define COEXEC_ARCH_CONTEXT_H

#include <stddef.h>
#include <stdint.h>

typedef void (*coexec__ctx_entry_t)(void *arg);

/*
 * Saves the calling context, stores its saved stack pointer in *from_sp and
 * resumes the context saved at to_sp. Returns when another switch resumes
 * the saved context.
 */
void coexec__ctx_switch(void **from_sp, void *to_sp);

/*
 * Prepares a fresh context on the stack [stack, stack + size) such that the
 * first switch to it calls entry(arg) on that stack with the ABI's stack
 * alignment. entry must never return: it leaves by switching away for good.
 * Returns the saved stack pointer to switch to. stack must be 16-byte
 * aligned and size a multiple of 16 of at least COEXEC__CTX_MIN_STACK.
 */
void *coexec__ctx_make(void *stack, size_t size, coexec__ctx_entry_t entry,
                       void *arg);

/*
 * For a call stack of a suspended context (coexec_info_print): the frame
 * pointer and the return address its switch saved, from its saved stack
 * pointer. Returns 0 where the backend cannot say (ucontext).
 */
int coexec__ctx_frame(const void *sp, uintptr_t *fp, uintptr_t *pc);

/*
 * Saves the calling context in *from_sp, then calls entry(arg) on the fresh
 * stack [stack, stack + size) as coexec__ctx_make + coexec__ctx_switch
 * would, without building a frame first. Returns when another switch
 * resumes the saved context, or when entry returns: entry may return only
 * if the saved context has not been resumed meanwhile, and then resumes it.
 */
void coexec__ctx_start(void **from_sp, void *stack, size_t size,
                       coexec__ctx_entry_t entry, void *arg);

/*
 * Resumes the context saved at to_sp, abandoning the calling one (nothing
 * of it is saved): the way out of a context that has finished.
 */
__attribute__((noreturn)) void coexec__ctx_jump(void *to_sp);

/*
 * The floating-point control state a fresh context starts with is left to
 * the backend: the starter's for coexec__ctx_start on x86-64 and for every
 * entry point of the other backends, the process's first context's for
 * coexec__ctx_make on x86-64. Code that needs a particular rounding mode
 * sets it itself; each context keeps its own once it runs.
 */

/* The smallest stack coexec__ctx_make accepts (the ucontext record included). */
#define COEXEC__CTX_MIN_STACK 4096

#endif /* COEXEC_ARCH_CONTEXT_H */
