/* main.c -- PIE driver; calls libc and (when linked against libcorpus.so) our
 * own shared object through the PLT. Exits 0 when every check passes. */
#include <stdio.h>
#include <string.h>

int corpus_leaf(int x);
int corpus_ping(int n);
int corpus_sort_sum(int n);
int corpus_format(char *buf, size_t len, int v);
int corpus_realign(int n);
int corpus_drap(int a, int b, int c, int d, int e, int f, int g, int h);
int corpus_signal_test(void);
#ifndef CORPUS_NO_ASM
int corpus_cfa_rbx(int x);
int corpus_sigframe_fn(int x);
int corpus_pad1(int x);
int corpus_pad2(int x);
#endif

int main(void)
{
    char buf[64];
    int bad = 0;
    bad |= corpus_leaf(4) != 13;
    bad |= corpus_ping(9) <= 0;
    bad |= corpus_sort_sum(20) <= 0;
    bad |= corpus_format(buf, sizeof buf, 5) <= 0;
    bad |= corpus_realign(3) != 6;
    bad |= corpus_drap(1, 2, 3, 4, 5, 6, 7, 8) != 1 + 5 + 4 + 6 + 7 + 8;
    bad |= corpus_signal_test() != 0;
#ifndef CORPUS_NO_ASM
    bad |= corpus_cfa_rbx(41) != 42;
    bad |= corpus_sigframe_fn(4) != 13 + 1;
    bad |= corpus_pad1(1) != 2;
    bad |= corpus_pad2(2) != 3;
#endif
    puts(bad ? "sframe corpus: FAIL" : "sframe corpus: ok");
    return bad;
}
