# A CFI directive after the last instruction: gas 2.40-2.47 emit an FRE whose start equals
# the function size (binutils PR libsframe/33131; libsframe <= 2.45 asserted on it).
        .text
        .globl  corpus_cfi_at_end
        .type   corpus_cfi_at_end, @function
corpus_cfi_at_end:
        .cfi_startproc
        push    %rbp
        .cfi_def_cfa_offset 16
        .cfi_offset %rbp, -16
        pop     %rbp
        ret
        .cfi_def_cfa_offset 8
        .cfi_endproc
        .size corpus_cfi_at_end, .-corpus_cfi_at_end
