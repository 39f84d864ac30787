/* asm_cases.S -- hand-written x86-64 functions with CFI the SFrame generators
 * treat specially. Self-contained (no external calls), position independent.
 *   corpus_cfa_rbx     CFA tracked in %rbx (.cfi_def_cfa_register %rbx) while
 *                      %rsp is realigned: v3 gas -> FLEX FDE, 2.44 skips it,
 *                      2.40 emits (wrong) sp-based rows.
 *   corpus_sigframe_fn .cfi_signal_frame on an ordinary rbp frame (v3: attr "S").
 *   corpus_pad1/2      .skip 10 / 300 inside the CFI region (FRE ADDR1 / ADDR2). */
        .text

        .globl  corpus_cfa_rbx
        .type   corpus_cfa_rbx, @function
corpus_cfa_rbx:                         /* int corpus_cfa_rbx(int x) { return x + 1; } */
        .cfi_startproc
        pushq   %rbx
        .cfi_def_cfa_offset 16
        .cfi_offset %rbx, -16
        movq    %rsp, %rbx
        .cfi_def_cfa_register %rbx      /* CFA = rbx + 16 */
        andq    $-64, %rsp
        subq    $64, %rsp
        movl    %edi, 32(%rsp)
        movl    32(%rsp), %eax
        addl    $1, %eax
        movq    %rbx, %rsp
        .cfi_def_cfa_register %rsp      /* CFA = rsp + 16 */
        popq    %rbx
        .cfi_def_cfa_offset 8
        ret
        .cfi_endproc
        .size   corpus_cfa_rbx, .-corpus_cfa_rbx

        .type   corpus_asm_leaf, @function
corpus_asm_leaf:                        /* local: x * 3 + 1 */
        .cfi_startproc
        leal    1(%rdi,%rdi,2), %eax
        ret
        .cfi_endproc
        .size   corpus_asm_leaf, .-corpus_asm_leaf

        .globl  corpus_sigframe_fn
        .type   corpus_sigframe_fn, @function
corpus_sigframe_fn:                     /* int corpus_sigframe_fn(int x) { return leaf(x) + 1; } */
        .cfi_startproc
        .cfi_signal_frame
        pushq   %rbp
        .cfi_def_cfa_offset 16
        .cfi_offset %rbp, -16
        movq    %rsp, %rbp
        .cfi_def_cfa_register %rbp
        call    corpus_asm_leaf
        addl    $1, %eax
        popq    %rbp
        .cfi_def_cfa %rsp, 8
        ret
        .cfi_endproc
        .size   corpus_sigframe_fn, .-corpus_sigframe_fn

        .globl  corpus_pad1
        .type   corpus_pad1, @function
corpus_pad1:                            /* x + 1, 10 bytes of padding: FRE ADDR1 */
        .cfi_startproc
        pushq   %rbp
        .cfi_def_cfa_offset 16
        .cfi_offset %rbp, -16
        movq    %rsp, %rbp
        .cfi_def_cfa_register %rbp
        jmp     1f
        .skip   10, 0x90
1:      leal    1(%rdi), %eax
        popq    %rbp
        .cfi_def_cfa %rsp, 8
        ret
        .cfi_endproc
        .size   corpus_pad1, .-corpus_pad1

        .globl  corpus_pad2
        .type   corpus_pad2, @function
corpus_pad2:                            /* x + 1, 300 bytes of padding: FRE ADDR2 */
        .cfi_startproc
        pushq   %rbp
        .cfi_def_cfa_offset 16
        .cfi_offset %rbp, -16
        movq    %rsp, %rbp
        .cfi_def_cfa_register %rbp
        jmp     1f
        .skip   300, 0x90
1:      leal    1(%rdi), %eax
        popq    %rbp
        .cfi_def_cfa %rsp, 8
        ret
        .cfi_endproc
        .size   corpus_pad2, .-corpus_pad2

        .section .note.GNU-stack,"",@progbits
