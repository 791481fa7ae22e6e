/*
 * src/base/valgrind.h: what valgrind must be told, and whether it runs us.
 *
 * Room plaque. Memcheck follows the stack pointer: a move of less than
 * --max-stackframe (2 MB) is taken for a push or a pop and paints the
 * bytes in between, so a switch between two nearby stacks it does not know
 * as stacks makes it report every later access to them. Every stack the
 * runtime switches onto is therefore registered (VALGRIND_STACK_REGISTER)
 * while it is one, and deregistered before its memory can become anything
 * else: slab and mapped stacks in src/mem/cache.c, the primary's scheduler
 * stack in src/xstream/xstream.c, user-given stacks (attr.stack) while
 * their ULT lives (thread/run.c, through vg_user_stack_*). OS thread stacks
 * (the main ULT's, a secondary stream's scheduler's) are not: valgrind
 * registers every thread's stack itself when the thread starts, and a
 * second, slightly different range over the same stack would make it take
 * ordinary pushes across the edge of one of them for switches and leave
 * the pushed bytes inaccessible. A registration costs a few
 * instructions when the process does not run under valgrind (the client
 * request falls through and yields 0), so nothing here tests for valgrind
 * first except the user-stack table, which only valgrind needs. Built
 * without valgrind/valgrind.h, the hooks are empty and only the detection
 * remains (io_uring is avoided under valgrind: src/service/ring/uring.c).
 */
#ifndef COEXEC_BASE_VALGRIND_H
#define COEXEC_BASE_VALGRIND_H

#include <stdbool.h>
#include <stddef.h>

#include "arch/compiler.h"

#ifdef COEXEC_HAVE_VALGRIND
#include <valgrind/memcheck.h>
#include <valgrind/valgrind.h>
#endif

/* True when the process runs under valgrind. Any thread, any time. */
bool coexec__on_valgrind(void);

/* Registers [lo, lo + bytes) as a stack; returns its id (0 when not under
 * valgrind, or built without its header), for vg_stack_deregister. */
static inline unsigned vg_stack_register(const void *lo, size_t bytes)
{
#ifdef COEXEC_HAVE_VALGRIND
    return (unsigned)VALGRIND_STACK_REGISTER(lo, (const char *)lo + bytes - 1);
#else
    (void)lo;
    (void)bytes;
    return 0;
#endif
}

static inline void vg_stack_deregister(unsigned id)
{
#ifdef COEXEC_HAVE_VALGRIND
    if (id)
        VALGRIND_STACK_DEREGISTER(id);
#else
    (void)id;
#endif
}

/* User-given stacks: the descriptor has no room for an id, so the ids live
 * in a table keyed by the stack's address (valgrind.c), used only under
 * valgrind. Start: when a ULT first runs on its user stack; end: when it
 * finished and the stack is the user's again. Memcheck made every byte
 * the ULT's frames left below them inaccessible, as for any stack: the end
 * makes the whole stack accessible again (undefined: the frames' bytes
 * mean nothing to the user), or the program's own later use of the memory
 * would be reported. */
void coexec__vg_user_stack_add(const void *lo, size_t bytes);
void coexec__vg_user_stack_remove(const void *lo, size_t bytes);

static ALWAYS_INLINE void vg_user_stack_start(const void *lo, size_t bytes)
{
#ifdef COEXEC_HAVE_VALGRIND
    if (UNLIKELY(RUNNING_ON_VALGRIND))
        coexec__vg_user_stack_add(lo, bytes);
#else
    (void)lo;
    (void)bytes;
#endif
}

static ALWAYS_INLINE void vg_user_stack_end(const void *lo, size_t bytes)
{
#ifdef COEXEC_HAVE_VALGRIND
    if (UNLIKELY(RUNNING_ON_VALGRIND))
        coexec__vg_user_stack_remove(lo, bytes);
#else
    (void)lo;
    (void)bytes;
#endif
}

/* An init reads the memory it is given to tell a live object from fresh
 * memory: whatever bytes are there are its input, so memcheck is told
 * they count as defined (they are never used as anything but that). */
static inline void vg_init_reads(const void *obj, size_t bytes)
{
#ifdef COEXEC_HAVE_VALGRIND
    if (obj)
        VALGRIND_MAKE_MEM_DEFINED(obj, bytes);
#else
    (void)obj;
    (void)bytes;
#endif
}

#endif /* COEXEC_BASE_VALGRIND_H */
