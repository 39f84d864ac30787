/* Frames of different shapes for tests/test_unwind_gdb.py: leaf, frame
   pointer, large stack, alloca, a call through the PLT into shlib.so, a
   signal handler, a second thread. gdb stops at `deepest`; the test compares
   its backtrace with `sfcheck unwind --core`. argv[1] picks the path:
   "plain", "signal" (a SIGSEGV in raise_it, whose handler calls down to
   deepest), "plt" (stop in the PLT stub itself), "threads" (a second thread
   spins in `spin` while the main thread reaches deepest).
   Built with -DTRAP (the cross-ABI tests, run under qemu-user without a
   debugger), deepest stores through a null pointer: the guest dies of SIGSEGV
   and qemu writes the core (a fault, not a trap instruction: on s390x the PSW
   of an illegal-instruction trap points past it, past the function's end). */
#include <alloca.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>

int shlib_bounce(int n, int (*cb)(int));

volatile int sink;
int *volatile bad_ptr;  /* NULL: a store through it faults in our own code */

#define KEEP __attribute__((noipa))

KEEP void deepest(int n)  /* a leaf */
{
    sink = n;
#ifdef TRAP
    *bad_ptr = n;
#endif
}

KEEP int recurse(int n)
{
    if (n == 0)
        deepest(n);
    else
        sink += recurse(n - 1);
    return n + 1;
}

KEEP int callback(int n)  /* called back from shlib.so */
{
    int r = recurse(n);
    sink += r;
    return r;
}

KEEP int with_alloca(int n)
{
    char *p = alloca(64 + (n & 0xff) * 16);
    memset(p, n, 64);
    int r = shlib_bounce(n, callback);  /* through the PLT */
    return r + p[n & 7];
}

KEEP int big_stack(int n)
{
    volatile char buf[70000];  /* needs 4-byte CFA offsets */
    buf[n] = (char)n;
    int r = with_alloca(n);
    return r + buf[n];
}

__attribute__((noipa, optimize("no-omit-frame-pointer"))) int with_fp(int n)
{
    int r = big_stack(n);
    sink += r;
    return r + 1;
}

static void handler(int sig)
{
    sink += recurse(2 + (sig & 1));
}

KEEP int raise_it(int n)
{
    /* Once: with -DTRAP the fault in deepest (under the handler) then kills. */
    struct sigaction sa = {.sa_handler = handler, .sa_flags = SA_RESETHAND | SA_NODEFER};
    sigaction(SIGSEGV, &sa, 0);
    *bad_ptr = n;
    return n + sink;
}

volatile int spinning, stop_spin;

KEEP int spin(int n)
{
    spinning = 1;
    while (!stop_spin)
        sink += n;
    return n;
}

KEEP void *worker(void *arg)
{
    sink += spin(arg != 0);
    return 0;
}

int main(int argc, char **argv)
{
    int r;
    pthread_t t;
    if (argc > 1 && strcmp(argv[1], "signal") == 0)
        r = raise_it(3);
    else if (argc > 1 && strcmp(argv[1], "threads") == 0) {
        pthread_create(&t, 0, worker, &r);
        while (!spinning)
            ;
        r = with_fp(3);
        stop_spin = 1;
        pthread_join(t, 0);
    } else
        r = with_fp(3);
    sink += r;
    return 0;
}
