/* A small shared library: the program calls into it through the PLT and it
   calls back into the program, so the walk crosses two SFrame sections. */
volatile int shlib_sink;

__attribute__((noipa)) int shlib_bounce(int n, int (*cb)(int))
{
    int r = cb(n);
    shlib_sink += r;  /* work after the call: no tail call */
    return r + 1;
}
