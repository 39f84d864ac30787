/* drap.c -- functions needing stack realignment.
 * corpus_realign: a 64-byte aligned local (realigned with %rbp as CFA base).
 * corpus_drap:    aligned local + alloca + stack-passed arguments: GCC uses a
 *                 DRAP register (%r10) and DW_CFA_def_cfa_expression (.cfi_escape). */
#include <alloca.h>

#include "corpus.h"

NOIPA void corpus_sink(volatile void *p, int n) { ((volatile char *)p)[0] = (char)n; }

NOIPA int corpus_realign(int n)
{
    int buf[16] __attribute__((aligned(64)));
    for (int i = 0; i < 16; i++) buf[i] = n + i;
    corpus_sink(buf, n);
    return buf[n & 15];
}

NOIPA int corpus_drap(int a, int b, int c, int d, int e, int f, int g, int h)
{
    int buf[16] __attribute__((aligned(32)));
    char *p = alloca((a & 63) + 16);
    for (int i = 0; i < 16; i++) buf[i] = a + i;
    p[0] = (char)b;
    corpus_sink(buf, c);
    corpus_sink(p, d);
    return buf[e & 15] + p[0] + f + g + h;
}
