/* tools/cutrace/entry.S: the way into and out of every traced call (x86-64
 * System V). A trampoline (gen_tramp.sh) leaves its index in %eax and jumps
 * here with the caller's return address on top of the stack. cutrace_enter
 * keeps the argument registers, asks cutrace_pre (cutrace.c) for the real
 * function, which also saves the caller's return address on a per-thread
 * stack, puts cutrace_exit in its place and jumps to the real function with
 * the arguments untouched (those on the stack stay where they are).
 * cutrace_exit runs when the real function returns: it keeps the return
 * registers, lets cutrace_post log the call and give back the caller's return
 * address, and goes there. */
    .text
    .globl cutrace_enter
    .hidden cutrace_enter
    .type cutrace_enter, @function
cutrace_enter:
    push %rdi
    push %rsi
    push %rdx
    push %rcx
    push %r8
    push %r9
    sub $136, %rsp            /* xmm0-7 and 8 bytes to align the call */
    movdqu %xmm0, 0(%rsp)
    movdqu %xmm1, 16(%rsp)
    movdqu %xmm2, 32(%rsp)
    movdqu %xmm3, 48(%rsp)
    movdqu %xmm4, 64(%rsp)
    movdqu %xmm5, 80(%rsp)
    movdqu %xmm6, 96(%rsp)
    movdqu %xmm7, 112(%rsp)
    mov %eax, %edi            /* index */
    lea 184(%rsp), %rsi       /* the slot of the caller's return address */
    lea 136(%rsp), %rdx       /* the saved r9..rdi: the arguments */
    call cutrace_pre
    mov %rax, %r11
    movdqu 0(%rsp), %xmm0
    movdqu 16(%rsp), %xmm1
    movdqu 32(%rsp), %xmm2
    movdqu 48(%rsp), %xmm3
    movdqu 64(%rsp), %xmm4
    movdqu 80(%rsp), %xmm5
    movdqu 96(%rsp), %xmm6
    movdqu 112(%rsp), %xmm7
    add $136, %rsp
    pop %r9
    pop %r8
    pop %rcx
    pop %rdx
    pop %rsi
    pop %rdi
    lea cutrace_exit(%rip), %r10
    mov %r10, (%rsp)
    xor %eax, %eax
    jmp *%r11
    .size cutrace_enter, . - cutrace_enter

    .globl cutrace_exit
    .hidden cutrace_exit
    .type cutrace_exit, @function
cutrace_exit:
    push %rax
    push %rdx
    sub $32, %rsp
    movdqu %xmm0, 0(%rsp)
    mov %rax, %rdi
    call cutrace_post
    mov %rax, %r11
    movdqu 0(%rsp), %xmm0
    add $32, %rsp
    pop %rdx
    pop %rax
    jmp *%r11
    .size cutrace_exit, . - cutrace_exit
    .section .note.GNU-stack,"",@progbits
