/* pad4.S -- one function with > 65535 bytes inside its CFI region, so its FREs
 * need 32-bit start addresses (FRE type ADDR4). Built as a .o only (size). */
        .text
        .globl  corpus_pad4
        .type   corpus_pad4, @function
corpus_pad4:
        .cfi_startproc
        pushq   %rbp
        .cfi_def_cfa_offset 16
        .cfi_offset %rbp, -16
        movq    %rsp, %rbp
        .cfi_def_cfa_register %rbp
        jmp     1f
        .skip   65600, 0x90
1:      leal    1(%rdi), %eax
        popq    %rbp
        .cfi_def_cfa %rsp, 8
        ret
        .cfi_endproc
        .size   corpus_pad4, .-corpus_pad4
        .section .note.GNU-stack,"",@progbits
