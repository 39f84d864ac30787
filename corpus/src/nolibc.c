/* nolibc.c -- a tiny static executable without libc (-nostdlib -static).
 * _start and a real rt_sigreturn restorer are hand-written asm (top-level asm
 * here, so a single object holds everything for LLVM/lld):
 *   _start             outermost frame, .cfi_undefined %rip
 *   corpus_restore_rt  used as SA_RESTORER for a real signal; glibc-style
 *                      .cfi_signal_frame with DW_CFA_def_cfa_expression
 *                      (CFA = *(rsp+160), via .cfi_escape)
 * The C part: recursion through several functions, a signal handler, raw
 * syscalls; exits 0 when every check passes.
 * Without -DCORPUS_SINGLE it also calls asm_cases.S and drap.c. */

typedef unsigned long ul;
#include "corpus.h"

__asm__(
"       .text\n"
"       .globl  _start\n"
"       .type   _start, @function\n"
"_start:\n"
"       .cfi_startproc\n"
"       .cfi_undefined %rip\n"
"       xorl    %ebp, %ebp\n"
"       movq    %rsp, %rdi\n"
"       andq    $-16, %rsp\n"
"       call    corpus_cmain\n"
"       movl    %eax, %edi\n"
"       movl    $60, %eax\n"            /* exit */
"       syscall\n"
"       hlt\n"
"       .cfi_endproc\n"
"       .size   _start, .-_start\n"
"\n"
"       .type   corpus_restore_rt, @function\n"
"       .cfi_startproc\n"
"       .cfi_signal_frame\n"
"       .cfi_escape 0x0f,0x04,0x77,0xa0,0x01,0x06\n"   /* CFA = *(rsp + 160)  (uc_mcontext.rsp) */
"       .cfi_escape 0x10,0x10,0x03,0x77,0xa8,0x01\n"   /* rip at rsp + 168 */
"       .cfi_escape 0x10,0x06,0x03,0x77,0xf8,0x00\n"   /* rbp at rsp + 120 */
"       nop\n"                                         /* unwinders look up pc-1 */
"corpus_restore_rt:\n"
"       movl    $15, %eax\n"            /* rt_sigreturn */
"       syscall\n"
"       .cfi_endproc\n"
"       .size   corpus_restore_rt, .-corpus_restore_rt\n"
);

void corpus_restore_rt(void);

static inline long sys4(long n, long a, long b, long c, long d)
{
    long r;
    register long r10 __asm__("r10") = d;
    __asm__ volatile("syscall" : "=a"(r) : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10)
                     : "rcx", "r11", "memory");
    return r;
}

NOIPA int nl_c(int n);
NOIPA int nl_b(int n);
NOIPA int nl_leaf(int n) { return n * 5 + 2; }
NOIPA int nl_a(int n) { return n <= 0 ? 1 : nl_b(n - 1) + nl_leaf(n); }
NOIPA int nl_b(int n) { return n <= 0 ? 2 : 2 * nl_c(n - 1) - n; }
NOIPA int nl_c(int n) { return n <= 0 ? 3 : nl_a(n - 1) + 1; }

static volatile int got;
NOIPA static void nl_handler(int sig) { got = nl_leaf(sig); }

struct ksigaction { void (*handler)(int); ul flags; void (*restorer)(void); ul mask; };

#ifndef CORPUS_SINGLE
int corpus_cfa_rbx(int x);
int corpus_sigframe_fn(int x);
int corpus_pad1(int x);
int corpus_pad2(int x);
int corpus_realign(int n);
int corpus_drap(int a, int b, int c, int d, int e, int f, int g, int h);
#endif

NOIPA int corpus_cmain(void)
{
    struct ksigaction sa;
    int bad = 0;
    sa.handler = nl_handler;
    sa.flags = 0x04000000;              /* SA_RESTORER */
    sa.restorer = corpus_restore_rt;
    sa.mask = 0;
    if (sys4(13, 10, (long)&sa, 0, 8) != 0)     /* rt_sigaction(SIGUSR1) */
        return 10;
    sys4(62, sys4(39, 0, 0, 0, 0), 10, 0, 0);   /* kill(getpid(), SIGUSR1) */
    bad |= got != 52;
    bad |= nl_a(10) <= 0;
#ifndef CORPUS_SINGLE
    bad |= corpus_cfa_rbx(41) != 42;
    bad |= corpus_sigframe_fn(4) != 14;
    bad |= corpus_pad1(1) != 2;
    bad |= corpus_pad2(2) != 3;
    bad |= corpus_realign(3) != 6;
    bad |= corpus_drap(1, 2, 3, 4, 5, 6, 7, 8) != 1 + 5 + 4 + 6 + 7 + 8;
#endif
    static const char ok[] = "sframe corpus static: ok\n", ng[] = "sframe corpus static: FAIL\n";
    if (bad) sys4(1, 1, (long)ng, sizeof ng - 1, 0);
    else     sys4(1, 1, (long)ok, sizeof ok - 1, 0);
    return bad;
}
