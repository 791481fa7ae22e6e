/*
 * src/arch/context_generic.c: coexec__ctx_start and coexec__ctx_jump from
 * the two primitives, for backends without their own (AArch64, ucontext).
 */
#include "context.h"

void coexec__ctx_start(void **from_sp, void *stack, size_t size,
                       coexec__ctx_entry_t entry, void *arg)
{
    void *sp = coexec__ctx_make(stack, size, entry, arg);
    coexec__ctx_switch(from_sp, sp);
}

void coexec__ctx_jump(void *to_sp)
{
    void *dead;
    coexec__ctx_switch(&dead, to_sp);
    __builtin_trap(); /* nothing resumes a context left for good */
}
