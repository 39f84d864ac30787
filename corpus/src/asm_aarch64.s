/* asm_aarch64.s -- AArch64 functions for the SFrame corpus (assembled only;
 * linked into a .so and a static executable with ld, not run).
 *   leaf, non-leaf with x29/x30 frame, pointer authentication with the A key
 *   (.cfi_negate_ra_state -> mangled-RA FREs) and the B key (.cfi_b_key_frame),
 *   .cfi_signal_frame, CFA in a non-SP/FP register (x9), and .skip 10 / 300
 *   padding (FRE ADDR1 / ADDR2). */
        .text
        .globl  a_leaf
        .type   a_leaf, %function
a_leaf:
        .cfi_startproc
        add     w0, w0, #1
        ret
        .cfi_endproc
        .size   a_leaf, .-a_leaf

        .globl  a_nonleaf
        .type   a_nonleaf, %function
a_nonleaf:
        .cfi_startproc
        stp     x29, x30, [sp, #-32]!
        .cfi_def_cfa_offset 32
        .cfi_offset 29, -32
        .cfi_offset 30, -24
        mov     x29, sp
        .cfi_def_cfa_register 29
        bl      a_leaf
        ldp     x29, x30, [sp], #32
        .cfi_restore 30
        .cfi_restore 29
        .cfi_def_cfa 31, 0
        ret
        .cfi_endproc
        .size   a_nonleaf, .-a_nonleaf

        .globl  a_pauth_a
        .type   a_pauth_a, %function
a_pauth_a:
        .cfi_startproc
        hint    #25                     /* paciasp */
        .cfi_negate_ra_state
        stp     x29, x30, [sp, #-16]!
        .cfi_def_cfa_offset 16
        .cfi_offset 29, -16
        .cfi_offset 30, -8
        mov     x29, sp
        bl      a_leaf
        ldp     x29, x30, [sp], #16
        .cfi_restore 30
        .cfi_restore 29
        .cfi_def_cfa_offset 0
        hint    #29                     /* autiasp */
        .cfi_negate_ra_state
        ret
        .cfi_endproc
        .size   a_pauth_a, .-a_pauth_a

        .globl  a_pauth_b
        .type   a_pauth_b, %function
a_pauth_b:
        .cfi_startproc
        .cfi_b_key_frame
        hint    #27                     /* pacibsp */
        .cfi_negate_ra_state
        stp     x29, x30, [sp, #-16]!
        .cfi_def_cfa_offset 16
        .cfi_offset 29, -16
        .cfi_offset 30, -8
        bl      a_leaf
        ldp     x29, x30, [sp], #16
        .cfi_restore 30
        .cfi_restore 29
        .cfi_def_cfa_offset 0
        hint    #31                     /* autibsp */
        .cfi_negate_ra_state
        ret
        .cfi_endproc
        .size   a_pauth_b, .-a_pauth_b

        .globl  a_sigframe
        .type   a_sigframe, %function
a_sigframe:
        .cfi_startproc
        .cfi_signal_frame
        stp     x29, x30, [sp, #-16]!
        .cfi_def_cfa_offset 16
        .cfi_offset 29, -16
        .cfi_offset 30, -8
        bl      a_leaf
        ldp     x29, x30, [sp], #16
        .cfi_restore 30
        .cfi_restore 29
        .cfi_def_cfa_offset 0
        ret
        .cfi_endproc
        .size   a_sigframe, .-a_sigframe

        .globl  a_cfa_x9
        .type   a_cfa_x9, %function
a_cfa_x9:
        .cfi_startproc
        mov     x9, sp
        .cfi_def_cfa_register 9
        sub     sp, sp, #64
        and     sp, x9, #-64
        str     w0, [sp]
        ldr     w0, [sp]
        mov     sp, x9
        .cfi_def_cfa_register 31
        ret
        .cfi_endproc
        .size   a_cfa_x9, .-a_cfa_x9

        .globl  a_pad1
        .type   a_pad1, %function
a_pad1:
        .cfi_startproc
        stp     x29, x30, [sp, #-16]!
        .cfi_def_cfa_offset 16
        .cfi_offset 29, -16
        .cfi_offset 30, -8
        b       1f
        .skip   12
1:      ldp     x29, x30, [sp], #16
        .cfi_restore 30
        .cfi_restore 29
        .cfi_def_cfa_offset 0
        ret
        .cfi_endproc
        .size   a_pad1, .-a_pad1

        .globl  a_pad2
        .type   a_pad2, %function
a_pad2:
        .cfi_startproc
        stp     x29, x30, [sp, #-16]!
        .cfi_def_cfa_offset 16
        .cfi_offset 29, -16
        .cfi_offset 30, -8
        b       1f
        .skip   300
1:      ldp     x29, x30, [sp], #16
        .cfi_restore 30
        .cfi_restore 29
        .cfi_def_cfa_offset 0
        ret
        .cfi_endproc
        .size   a_pad2, .-a_pad2

        .globl  _start
        .type   _start, %function
_start:
        .cfi_startproc
        .cfi_undefined 30
        mov     x29, #0
        mov     w0, #1
        bl      a_nonleaf
        mov     x8, #93                 /* exit */
        svc     #0
        .cfi_endproc
        .size   _start, .-_start
        .section .note.GNU-stack,"",%progbits
