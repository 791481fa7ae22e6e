/*
 * AArch64: builds the first frame of a fresh context so that the first
 * coexec__ctx_switch to it "returns" into coexec__ctx_trampoline. The frame
 * layout is the one documented in context.S.
 */
#include <stdint.h>
#include <string.h>

#include "../context.h"

void coexec__ctx_trampoline(void);

/* Slot indices (8-byte words) in the saved frame of context.S. */
enum {
    SLOT_X19 = 0,
    SLOT_X20 = 1,
    SLOT_X29 = 10,
    SLOT_X30 = 11,
    SLOT_FPCR = 20,
    FRAME_WORDS = 22 /* 176 bytes */
};

void *coexec__ctx_make(void *stack, size_t size, coexec__ctx_entry_t entry,
                       void *arg)
{
    uintptr_t top = ((uintptr_t)stack + size) & ~(uintptr_t)15;
    /* After the switch pops the 176-byte frame, sp == top - 16: 16-byte
     * aligned as AAPCS64 requires at every instruction. The 16 bytes at the
     * top stay as a zeroed guard for unwinders, as on x86-64. */
    uint64_t *sp = (uint64_t *)(top - 16 - FRAME_WORDS * 8);
    uint64_t fpcr;

    /* The new context starts in the creator's FP mode, like a new thread
     * starts in its parent's. */
    __asm__ volatile("mrs %0, fpcr" : "=r"(fpcr));
    memset(sp, 0, FRAME_WORDS * 8 + 16);
    sp[SLOT_X19] = (uint64_t)(uintptr_t)entry;
    sp[SLOT_X20] = (uint64_t)(uintptr_t)arg;
    sp[SLOT_X29] = 0; /* ends frame-pointer walks */
    sp[SLOT_X30] = (uint64_t)(uintptr_t)coexec__ctx_trampoline;
    sp[SLOT_FPCR] = fpcr;
    return sp;
}

/* The saved frame (context.S): the frame pointer at sp+80, the return
 * address at sp+88. */
int coexec__ctx_frame(const void *sp, uintptr_t *fp, uintptr_t *pc)
{
    const char *p = sp;
    *fp = *(const uintptr_t *)(const void *)(p + 80);
    *pc = *(const uintptr_t *)(const void *)(p + 88);
    return 1;
}
