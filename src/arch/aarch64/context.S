/*
 * AArch64 (AAPCS64) context switch (see src/arch/context.h).
 *
 * AAPCS64 makes a callee preserve x19-x28, the frame pointer x29, the stack
 * pointer and the low 64 bits of v8-v15 (d8-d15). The link register x30 is
 * saved too because it is where the switch returns to. FPCR (rounding mode,
 * flush-to-zero, default-NaN) is per-thread state that the ABI expects to
 * survive a call, so each context carries its own. FPSR only holds sticky
 * exception flags and is left alone, as the x86-64 switch leaves MXCSR's
 * flags to travel with the control bits it saves.
 *
 * Saved frame, 176 bytes, from the saved stack pointer upwards:
 *   [sp+0]   x19, x20        [sp+96]  d8,  d9
 *   [sp+16]  x21, x22        [sp+112] d10, d11
 *   [sp+32]  x23, x24        [sp+128] d12, d13
 *   [sp+48]  x25, x26        [sp+144] d14, d15
 *   [sp+64]  x27, x28        [sp+160] FPCR (8 bytes), 8 bytes padding
 *   [sp+80]  x29, x30
 * The size is a multiple of 16 because sp must stay 16-byte aligned at all
 * times on AArch64 (an access through a misaligned sp faults).
 */

/*
 * When the compiler is asked for branch target identification, the entry
 * points must start with a BTI landing pad and the object must carry the
 * GNU property note, or the linker drops BTI protection for the whole
 * program. Both are no-ops otherwise.
 */
#if defined(__ARM_FEATURE_BTI_DEFAULT) && __ARM_FEATURE_BTI_DEFAULT
#define COEXEC_BTI_C hint #34
#define COEXEC_GNU_PROPERTY_BTI 1
#else
#define COEXEC_BTI_C
#define COEXEC_GNU_PROPERTY_BTI 0
#endif
#if defined(__ARM_FEATURE_PAC_DEFAULT) && __ARM_FEATURE_PAC_DEFAULT
#define COEXEC_GNU_PROPERTY_PAC 2
#else
#define COEXEC_GNU_PROPERTY_PAC 0
#endif

    .text
    .globl  coexec__ctx_switch
    .hidden coexec__ctx_switch
    .type   coexec__ctx_switch, %function
    .p2align 4
coexec__ctx_switch:
    .cfi_startproc
    COEXEC_BTI_C
    sub     sp, sp, #176
    .cfi_adjust_cfa_offset 176
    stp     x19, x20, [sp, #0]
    stp     x21, x22, [sp, #16]
    stp     x23, x24, [sp, #32]
    stp     x25, x26, [sp, #48]
    stp     x27, x28, [sp, #64]
    stp     x29, x30, [sp, #80]
    stp     d8,  d9,  [sp, #96]
    stp     d10, d11, [sp, #112]
    stp     d12, d13, [sp, #128]
    stp     d14, d15, [sp, #144]
    mrs     x9, fpcr
    str     x9, [sp, #160]
    mov     x10, sp
    str     x10, [x0]

    /* From here on the frame belongs to the context being resumed. */
    mov     sp, x1
    ldr     x10, [sp, #160]
    /* Writing FPCR can stall the pipeline on some cores, and contexts
     * nearly always share one FP mode, so it is written only on change. */
    cmp     x9, x10
    b.eq    1f
    msr     fpcr, x10
1:
    ldp     x19, x20, [sp, #0]
    ldp     x21, x22, [sp, #16]
    ldp     x23, x24, [sp, #32]
    ldp     x25, x26, [sp, #48]
    ldp     x27, x28, [sp, #64]
    ldp     x29, x30, [sp, #80]
    ldp     d8,  d9,  [sp, #96]
    ldp     d10, d11, [sp, #112]
    ldp     d12, d13, [sp, #128]
    ldp     d14, d15, [sp, #144]
    add     sp, sp, #176
    .cfi_adjust_cfa_offset -176
    ret
    .cfi_endproc
    .size   coexec__ctx_switch, .-coexec__ctx_switch

/*
 * First code run by a fresh context: the switch "returned" here through the
 * x30 that coexec__ctx_make stored, with the entry function in x19, its
 * argument in x20, x29 = 0 (ends frame-pointer walks) and sp 16-byte
 * aligned. entry must never return; if it does, brk traps at once instead
 * of running off into whatever follows.
 */
    .globl  coexec__ctx_trampoline
    .hidden coexec__ctx_trampoline
    .type   coexec__ctx_trampoline, %function
    .p2align 4
coexec__ctx_trampoline:
    .cfi_startproc
    .cfi_undefined x30
    COEXEC_BTI_C
    mov     x0, x20
    blr     x19
    brk     #0x3c
    .cfi_endproc
    .size   coexec__ctx_trampoline, .-coexec__ctx_trampoline

#if COEXEC_GNU_PROPERTY_BTI || COEXEC_GNU_PROPERTY_PAC
/* GNU_PROPERTY_AARCH64_FEATURE_1_AND: this object is BTI/PAC compatible. */
    .pushsection .note.gnu.property, "a"
    .p2align 3
    .word   4
    .word   16
    .word   5
    .asciz  "GNU"
    .word   0xc0000000
    .word   4
    .word   (COEXEC_GNU_PROPERTY_BTI | COEXEC_GNU_PROPERTY_PAC)
    .word   0
    .popsection
#endif

    .section .note.GNU-stack,"",%progbits
