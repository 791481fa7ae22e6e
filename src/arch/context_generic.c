/*
 * src/arch/context_generic.c: coexec__ctx_start and coexec__ctx_jump from
 * the two primitives, for backends without their own (AArch64, ucontext).
 */
#include "context.h"

/* What a started context needs; it lives in the starter's frame, which
 * stays alive as long as entry may still return into it. */
struct start_args {
    coexec__ctx_entry_t entry;
    void *arg;
    void **from_sp;
};

static void start_trampoline(void *p)
{
    struct start_args *a = p;
    void **from_sp = a->from_sp;
    a->entry(a->arg);
    /* entry returned: the starter has not been resumed since (the contract),
     * so its frame, and *from_sp, are still what ctx_start left. */
    coexec__ctx_jump(*from_sp);
}

void coexec__ctx_start(void **from_sp, void *stack, size_t size,
                       coexec__ctx_entry_t entry, void *arg)
{
    struct start_args a = {entry, arg, from_sp};
    void *sp = coexec__ctx_make(stack, size, start_trampoline, &a);
    coexec__ctx_switch(from_sp, sp);
}

void coexec__ctx_jump(void *to_sp)
{
    void *dead;
    coexec__ctx_switch(&dead, to_sp);
    __builtin_trap(); /* nothing resumes a context left for good */
}
