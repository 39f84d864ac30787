/* A shared object for `sfcheck proc` tests: dlopen'd by waiter.c, then deleted, truncated or
   rewritten under the running process. Its functions only give it text (and SFrame FDEs). */
int sfcheck_proc_lib_mul(int x)
{
	return x * 3 + 1;
}

int sfcheck_proc_lib_add(int x, int y)
{
	return sfcheck_proc_lib_mul(x) + y;
}
