/* sig.c -- a C signal handler installed with sigaction and triggered with raise. */
#include <signal.h>
#include <string.h>

#include "corpus.h"

int corpus_leaf(int x);
static volatile sig_atomic_t got;

NOIPA static void corpus_handler(int sig) { got = corpus_leaf(sig); }

NOIPA int corpus_signal_test(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = corpus_handler;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGUSR1, &sa, 0) != 0) return -1;
    raise(SIGUSR1);
    return got == SIGUSR1 * 3 + 1 ? 0 : 1;
}
