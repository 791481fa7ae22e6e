/*
 * x86-64 System V context switch (see src/arch/context.h).
 *
 * Saved frame, from the saved stack pointer upwards:
 *   [sp+0]  MXCSR (4 bytes), x87 control word (2 bytes), padding
 *   [sp+8]  r15, r14, r13, r12, rbx, rbp
 *   [sp+56] return address
 */
    .text
    .globl  coexec__ctx_switch
    .hidden coexec__ctx_switch
    .type   coexec__ctx_switch, @function
    .p2align 4
coexec__ctx_switch:
    .cfi_startproc
    pushq   %rbp
    pushq   %rbx
    pushq   %r12
    pushq   %r13
    pushq   %r14
    pushq   %r15
    subq    $8, %rsp
    stmxcsr (%rsp)
    fnstcw  4(%rsp)
    movq    %rsp, (%rdi)
    /* Reload the control words unconditionally: comparing them first
     * means reading back what fnstcw just stored, which stalls, and
     * measured slower than the reload itself. */
    movq    %rsi, %rsp
    ldmxcsr (%rsp)
    fldcw   4(%rsp)
    addq    $8, %rsp
    popq    %r15
    popq    %r14
    popq    %r13
    popq    %r12
    popq    %rbx
    popq    %rbp
    ret
    .cfi_endproc
    .size   coexec__ctx_switch, .-coexec__ctx_switch

/*
 * coexec__ctx_start(from_sp: rdi, stack: rsi, size: rdx, entry: rcx, arg: r8)
 * Saves the caller like coexec__ctx_switch, then calls entry(arg) on the top
 * of the new stack (16-byte aligned, so entry sees the ABI's alignment).
 */
    .globl  coexec__ctx_start
    .hidden coexec__ctx_start
    .type   coexec__ctx_start, @function
    .p2align 4
coexec__ctx_start:
    .cfi_startproc
    pushq   %rbp
    pushq   %rbx
    pushq   %r12
    pushq   %r13
    pushq   %r14
    pushq   %r15
    subq    $8, %rsp
    stmxcsr (%rsp)
    fnstcw  4(%rsp)
    movq    %rsp, (%rdi)
    leaq    (%rsi,%rdx), %rax
    andq    $-16, %rax
    movq    %rsp, -8(%rax)  /* the starter's saved context, for a return */
    movq    $0, -16(%rax)
    leaq    -16(%rax), %rsp
    movq    %r8, %rdi
    xorl    %ebp, %ebp
    callq   *%rcx
    /* entry returned: resume the starter as coexec__ctx_jump does. The
     * call and return pairs stay balanced, so the CPU's return predictions
     * stay right, which a switch can never achieve. */
    movq    8(%rsp), %rdi
    jmp     coexec__ctx_jump
    .cfi_endproc
    .size   coexec__ctx_start, .-coexec__ctx_start

/*
 * coexec__ctx_jump(to_sp: rdi): the second half of coexec__ctx_switch.
 */
    .globl  coexec__ctx_jump
    .hidden coexec__ctx_jump
    .type   coexec__ctx_jump, @function
    .p2align 4
coexec__ctx_jump:
    .cfi_startproc
    movq    %rdi, %rsp
    ldmxcsr (%rsp)
    fldcw   4(%rsp)
    addq    $8, %rsp
    popq    %r15
    popq    %r14
    popq    %r13
    popq    %r12
    popq    %rbx
    popq    %rbp
    ret
    .cfi_endproc
    .size   coexec__ctx_jump, .-coexec__ctx_jump

/*
 * First code run by a fresh context: coexec__ctx_make left the entry
 * function in r12 and its argument in r13. rsp is 16-byte aligned here, so
 * the call gives entry the alignment the ABI promises.
 */
    .globl  coexec__ctx_trampoline
    .hidden coexec__ctx_trampoline
    .type   coexec__ctx_trampoline, @function
    .p2align 4
coexec__ctx_trampoline:
    .cfi_startproc
    .cfi_undefined rip
    movq    %r13, %rdi
    callq   *%r12
    ud2
    .cfi_endproc
    .size   coexec__ctx_trampoline, .-coexec__ctx_trampoline

    .section .note.GNU-stack,"",@progbits
