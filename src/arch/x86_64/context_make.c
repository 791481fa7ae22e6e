/*
 * x86-64: builds the first frame of a fresh context so that the first
 * coexec__ctx_switch to it "returns" into coexec__ctx_trampoline.
 */
#include <stdint.h>
#include <string.h>

#include "../context.h"

void coexec__ctx_trampoline(void);

void *coexec__ctx_make(void *stack, size_t size, coexec__ctx_entry_t entry,
                       void *arg)
{
    uintptr_t top = ((uintptr_t)stack + size) & ~(uintptr_t)15;
    /* After the switch pops 8 + 48 bytes and rets (8 more), rsp == top - 16,
     * 16-byte aligned, as the trampoline wants. The 16 bytes at the top stay
     * as a zeroed guard for unwinders. */
    uint64_t *sp = (uint64_t *)(top - 16 - 64);
    uint32_t mxcsr;
    uint16_t fpcw;
    __asm__ volatile("stmxcsr %0" : "=m"(mxcsr));
    __asm__ volatile("fnstcw %0" : "=m"(fpcw));
    memset(sp, 0, 64 + 16);
    memcpy(&sp[0], &mxcsr, sizeof mxcsr);
    memcpy((char *)&sp[0] + 4, &fpcw, sizeof fpcw);
    sp[1] = 0;                          /* r15 */
    sp[2] = 0;                          /* r14 */
    sp[3] = (uint64_t)(uintptr_t)arg;   /* r13: entry's argument */
    sp[4] = (uint64_t)(uintptr_t)entry; /* r12: entry */
    sp[5] = 0;                          /* rbx */
    sp[6] = 0;                          /* rbp: ends frame-pointer walks */
    sp[7] = (uint64_t)(uintptr_t)coexec__ctx_trampoline;
    return sp;
}
