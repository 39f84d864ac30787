/* lib.c -- ordinary C functions for the SFrame corpus.
 * leaf / non-leaf functions, recursion through three functions, calls into
 * libc through the PLT (qsort with a callback, strlen, snprintf). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "corpus.h"

NOIPA int corpus_leaf(int x) { return x * 3 + 1; }

/* three-way mutual recursion: ping -> pong -> pang -> ping ... */
NOIPA int corpus_pong(int n);
NOIPA int corpus_pang(int n);
NOIPA int corpus_ping(int n) { return n <= 0 ? 0 : 1 + 2 * corpus_pong(n - 1); }
NOIPA int corpus_pong(int n) { return n <= 0 ? 1 : corpus_leaf(corpus_pang(n - 1)) - n; }
NOIPA int corpus_pang(int n) { return n <= 0 ? 2 : corpus_ping(n - 1) + corpus_leaf(n); }

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* non-leaf, calls libc through the PLT, passes a callback to libc */
NOIPA int corpus_sort_sum(int n)
{
    int a[32];
    if (n > 32) n = 32;
    for (int i = 0; i < n; i++) a[i] = (i * 7919) % 101;
    qsort(a, n, sizeof a[0], cmp_int);
    int s = 0;
    for (int i = 0; i < n; i++) s += a[i] * (i + 1);
    return s;
}

NOIPA int corpus_format(char *buf, size_t len, int v)
{
    int n = snprintf(buf, len, "value=%d ping=%d", v, corpus_ping(v & 7));
    return n + (int)strlen(buf);
}
