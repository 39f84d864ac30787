/* Waits for a byte on stdin after saying "ready", so a test can inspect it in /proc.
   argv[1] == "split": make one page of its own text read-only (splits the executable mapping).
   argv[1] == "poke": make its PT_GNU_SFRAME page writable and flip one byte of the section. */
#define _GNU_SOURCE
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef PT_GNU_SFRAME
#define PT_GNU_SFRAME 0x6474e554
#endif

static unsigned char *sframe;

/* Three pages of code-free text, so the executable mapping is several pages long. */
extern char pad[];
__asm__(".section .text.pad,\"ax\",@progbits\n.globl pad\npad: .fill 12288,1,0xcc\n.previous");

static int find(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size; (void)data;
	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_GNU_SFRAME) {
			sframe = (unsigned char *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
			return 1;
		}
	return 1; /* the executable comes first */
}

int main(int argc, char **argv)
{
	long page = sysconf(_SC_PAGESIZE);
	char c;
	if (argc > 1 && !strcmp(argv[1], "split")) {
		uintptr_t p = ((uintptr_t)pad + page) & ~(uintptr_t)(page - 1);
		mprotect((void *)p, page, PROT_READ);
	}
	if (argc > 1 && !strcmp(argv[1], "poke")) {
		dl_iterate_phdr(find, NULL);
		if (sframe) {
			uintptr_t p = (uintptr_t)(sframe + 40) & ~(uintptr_t)(page - 1);
			mprotect((void *)p, 2 * page, PROT_READ | PROT_WRITE);
			sframe[40] ^= 0xff;
		}
	}
	puts("ready");
	fflush(stdout);
	return read(0, &c, 1) < 0;
}
