/* The library unwind_dlopen.c loads late: lib_outer -> lib_inner, built -O2
 * -fomit-frame-pointer -fPIC -shared, so only its CFI leads from lib_inner back to
 * the program's main. */
__attribute__((noipa)) unsigned long lib_inner(unsigned long seed)
{
	unsigned long x = seed;

	for (unsigned long i = 0; i < 100000; i++)
		x = x * 3202034522624059733UL + i;
	return x;
}

__attribute__((noipa)) unsigned long lib_outer(unsigned long seed)
{
	unsigned long a = lib_inner(seed);

	return lib_inner(a) ^ a;
}
