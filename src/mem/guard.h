/*
 * src/mem/guard.h: what stops a stack overflow from being silent.
 *
 * Room plaque. Three pieces, one report:
 *  - Guard regions: coexec__g.guard_size bytes below every stack the
 *    runtime maps are made inaccessible, by madvise(MADV_GUARD_INSTALL)
 *    where the kernel has it (Linux 6.13+: page-table markers, no extra
 *    mapping, so slabs of stacks stay one mapping each) and by mprotect
 *    elsewhere (one more mapping per guard). A guard that cannot be made
 *    fails the stack's allocation: a stack is never handed out unguarded.
 *  - The fault handler: SIGSEGV and SIGBUS, on an alternate signal stack
 *    in every OS thread that runs units. A fault inside the guard of the
 *    stack the thread is running on prints one line naming the unit and
 *    aborts; any other fault goes, unchanged, to the handler that was
 *    installed before coexec_init (or the default action).
 *  - Canaries: a stack the runtime did not map (attr.stack) has no guard;
 *    a word at its far end is checked each time its ULT switches out or
 *    finishes.
 */
#ifndef COEXEC_MEM_GUARD_H
#define COEXEC_MEM_GUARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/compiler.h"

struct coexec_unit_rec;
struct coexec_xstream_rec;

/* Makes [lo, lo + len) inaccessible (len a multiple of the page size).
 * False when neither way works; errno is left as the failure set it. */
bool coexec__guard_install(void *lo, size_t len);

/* Installs the fault handler (init; idempotent) and removes it again if it
 * is still the installed one (finalize). */
int coexec__fault_handler_install(void);
void coexec__fault_handler_remove(void);

/* An alternate signal stack for the calling OS thread, unless it has one
 * already. `*own` records what to undo in coexec__altstack_leave. */
struct coexec_altstack {
    void *mem;
    size_t bytes;
};
void coexec__altstack_enter(struct coexec_altstack *own);
void coexec__altstack_leave(struct coexec_altstack *own);

/* The canary of a user-given stack: written when its ULT is created,
 * checked when it switches out or finishes. */
#define COEXEC__CANARY 0x5a17c0e8ec5a17c0ull
static ALWAYS_INLINE uint64_t canary_of(void *stack)
{
    return COEXEC__CANARY ^ (uint64_t)(uintptr_t)stack;
}
static ALWAYS_INLINE void canary_set(void *stack)
{
    *(volatile uint64_t *)stack = canary_of(stack);
}
/* Prints the overflow line and aborts. */
NORETURN void coexec__canary_dead(struct coexec_unit_rec *u);
static ALWAYS_INLINE void canary_check(struct coexec_unit_rec *u, void *stack)
{
    if (UNLIKELY(*(volatile uint64_t *)stack != canary_of(stack)))
        coexec__canary_dead(u);
}

#endif /* COEXEC_MEM_GUARD_H */
