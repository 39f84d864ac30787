/* asm_s390x.s -- s390x functions for the SFrame corpus (assembled only;
 * linked into a .so and a static executable with ld, not run).
 *   leaf, non-leaf (stmg r14/r15, 160-byte frame), frame pointer in r11,
 *   .cfi_signal_frame, and .skip 10 / 300 padding (FRE ADDR1 / ADDR2). */
        .text
        .globl  s_leaf
        .type   s_leaf, @function
s_leaf:
        .cfi_startproc
        ahi     %r2, 1
        br      %r14
        .cfi_endproc
        .size   s_leaf, .-s_leaf

        .globl  s_nonleaf
        .type   s_nonleaf, @function
s_nonleaf:
        .cfi_startproc
        stmg    %r14, %r15, 112(%r15)
        .cfi_offset 14, -48
        .cfi_offset 15, -40
        aghi    %r15, -160
        .cfi_def_cfa_offset 320
        brasl   %r14, s_leaf
        lmg     %r14, %r15, 272(%r15)
        .cfi_restore 15
        .cfi_restore 14
        .cfi_def_cfa_offset 160
        br      %r14
        .cfi_endproc
        .size   s_nonleaf, .-s_nonleaf

        .globl  s_fp
        .type   s_fp, @function
s_fp:
        .cfi_startproc
        stmg    %r11, %r15, 88(%r15)
        .cfi_offset 11, -72
        .cfi_offset 14, -48
        .cfi_offset 15, -40
        aghi    %r15, -168
        .cfi_def_cfa_offset 328
        lgr     %r11, %r15
        .cfi_def_cfa_register 11
        brasl   %r14, s_leaf
        lmg     %r11, %r15, 256(%r11)
        .cfi_restore 15
        .cfi_restore 14
        .cfi_restore 11
        .cfi_def_cfa 15, 160
        br      %r14
        .cfi_endproc
        .size   s_fp, .-s_fp

        .globl  s_sigframe
        .type   s_sigframe, @function
s_sigframe:
        .cfi_startproc
        .cfi_signal_frame
        stmg    %r14, %r15, 112(%r15)
        .cfi_offset 14, -48
        .cfi_offset 15, -40
        aghi    %r15, -160
        .cfi_def_cfa_offset 320
        brasl   %r14, s_leaf
        lmg     %r14, %r15, 272(%r15)
        .cfi_restore 15
        .cfi_restore 14
        .cfi_def_cfa_offset 160
        br      %r14
        .cfi_endproc
        .size   s_sigframe, .-s_sigframe

        .globl  s_pad1
        .type   s_pad1, @function
s_pad1:
        .cfi_startproc
        stmg    %r14, %r15, 112(%r15)
        .cfi_offset 14, -48
        .cfi_offset 15, -40
        aghi    %r15, -160
        .cfi_def_cfa_offset 320
        j       1f
        .skip   10, 0x07
1:      lmg     %r14, %r15, 272(%r15)
        .cfi_restore 15
        .cfi_restore 14
        .cfi_def_cfa_offset 160
        br      %r14
        .cfi_endproc
        .size   s_pad1, .-s_pad1

        .globl  s_pad2
        .type   s_pad2, @function
s_pad2:
        .cfi_startproc
        stmg    %r14, %r15, 112(%r15)
        .cfi_offset 14, -48
        .cfi_offset 15, -40
        aghi    %r15, -160
        .cfi_def_cfa_offset 320
        j       1f
        .skip   300, 0x07
1:      lmg     %r14, %r15, 272(%r15)
        .cfi_restore 15
        .cfi_restore 14
        .cfi_def_cfa_offset 160
        br      %r14
        .cfi_endproc
        .size   s_pad2, .-s_pad2

        .globl  _start
        .type   _start, @function
_start:
        .cfi_startproc
        .cfi_undefined 14
        aghi    %r15, -160
        .cfi_def_cfa_offset 320
        lghi    %r2, 1
        brasl   %r14, s_nonleaf
        svc     1                       /* exit */
        .cfi_endproc
        .size   _start, .-_start
        .section .note.GNU-stack,"",@progbits
