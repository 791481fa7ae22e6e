/*
 * x86-64: builds the first frame of a fresh context so that the first
 * coexec__ctx_switch to it "returns" into coexec__ctx_trampoline.
 */
#include <stdint.h>

#include "../context.h"

void coexec__ctx_trampoline(void);

/* The MXCSR and x87 control words a fresh context starts with: those the
 * process had when the first context was made (normally the ABI defaults).
 * Reading them once saves two slow instructions per ULT. */
static uint64_t initial_fp_words(void)
{
    static _Atomic uint64_t cached;
    uint64_t w = __atomic_load_n(&cached, __ATOMIC_RELAXED);
    if (w)
        return w;
    uint32_t mxcsr;
    uint16_t fpcw;
    __asm__ volatile("stmxcsr %0" : "=m"(mxcsr));
    __asm__ volatile("fnstcw %0" : "=m"(fpcw));
    w = (uint64_t)mxcsr | ((uint64_t)fpcw << 32);
    __atomic_store_n(&cached, w, __ATOMIC_RELAXED);
    return w;
}

void *coexec__ctx_make(void *stack, size_t size, coexec__ctx_entry_t entry,
                       void *arg)
{
    uintptr_t top = ((uintptr_t)stack + size) & ~(uintptr_t)15;
    /* After the switch pops 8 + 48 bytes and rets (8 more), rsp == top - 16,
     * 16-byte aligned, as the trampoline wants. The 16 bytes at the top stay
     * as a zeroed guard for unwinders. */
    uint64_t *sp = (uint64_t *)(top - 16 - 64);
    sp[0] = initial_fp_words();         /* MXCSR, x87 control word */
    sp[1] = 0;                          /* r15 */
    sp[2] = 0;                          /* r14 */
    sp[3] = (uint64_t)(uintptr_t)arg;   /* r13: entry's argument */
    sp[4] = (uint64_t)(uintptr_t)entry; /* r12: entry */
    sp[5] = 0;                          /* rbx */
    sp[6] = 0;                          /* rbp: ends frame-pointer walks */
    sp[7] = (uint64_t)(uintptr_t)coexec__ctx_trampoline;
    sp[8] = 0;
    sp[9] = 0;
    return sp;
}

/* The saved frame (context.S): the frame pointer at sp+48, the return
 * address at sp+56. */
int coexec__ctx_frame(const void *sp, uintptr_t *fp, uintptr_t *pc)
{
    const char *p = sp;
    *fp = *(const uintptr_t *)(const void *)(p + 48);
    *pc = *(const uintptr_t *)(const void *)(p + 56);
    return 1;
}
