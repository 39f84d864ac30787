/* corpus.h -- keep the compiler from inlining/cloning our small functions. */
#if defined(__clang__)
#define NOIPA __attribute__((noinline, used))
#else
#define NOIPA __attribute__((noipa))
#endif
