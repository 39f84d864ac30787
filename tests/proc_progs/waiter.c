/* Waits for a byte on stdin after saying "ready", so a test can inspect it in /proc.
   argv[1] == "split": make one page of its own text read-only (splits the executable mapping).
   argv[1] == "poke": make its PT_GNU_SFRAME page writable and flip one byte of the section.
   argv[1] == "dlopen" LIB: load the shared object LIB (a test may then delete or truncate it).
   argv[1] == "hole" LIB EMPTY: load LIB, then map the empty file EMPTY over the pages of its
   PT_GNU_SFRAME: they stay mapped but every read of them fails (EIO, SIGBUS in the process).
   argv[1] == "churn" LIB: load LIB, then shrink it to nothing and write it back, over and over,
   until stdin has a byte (the file a library upgrade or a log rotation changes under a reader).
   argv[1] == "map" FILE: map FILE readable and executable (any file: it need not be a
   loadable object; executable, so that it counts as code).
   argv[1] == "mapflip" FILE: the same, private and writable too, with every byte after its
   first page flipped.
   argv[1] == "mapdata" FILE: map FILE read-only (data: a cache, a locale archive). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <poll.h>
#include <stdlib.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef PT_GNU_SFRAME
#define PT_GNU_SFRAME 0x6474e554
#endif

static unsigned char *sframe;
static size_t sframe_size;
static const char *want; /* the object whose PT_GNU_SFRAME find() looks for; NULL: the first */

/* Three pages of code-free text, so the executable mapping is several pages long. */
extern char pad[];
__asm__(".section .text.pad,\"ax\",@progbits\n.globl pad\npad: .fill 12288,1,0xcc\n.previous");

static int find(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size; (void)data;
	if (want && strcmp(info->dlpi_name, want))
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_GNU_SFRAME) {
			sframe = (unsigned char *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
			sframe_size = info->dlpi_phdr[i].p_memsz;
			return 1;
		}
	return 1; /* the executable comes first */
}

static void *load(const char *lib)
{
	void *h = dlopen(lib, RTLD_NOW);
	if (!h) {
		fprintf(stderr, "%s\n", dlerror());
		exit(3);
	}
	return h;
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
	if (argc > 2 && !strcmp(argv[1], "dlopen"))
		load(argv[2]);
	if (argc > 3 && !strcmp(argv[1], "hole")) {
		load(argv[2]);
		want = argv[2];
		dl_iterate_phdr(find, NULL);
		int fd = open(argv[3], O_RDONLY);
		uintptr_t lo = (uintptr_t)sframe & ~(uintptr_t)(page - 1);
		uintptr_t hi = ((uintptr_t)sframe + sframe_size + page - 1) & ~(uintptr_t)(page - 1);
		if (!sframe || fd < 0 ||
		    mmap((void *)lo, hi - lo, PROT_READ, MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED)
			return 4;
	}
	if (argc > 2 && (!strcmp(argv[1], "map") || !strcmp(argv[1], "mapflip") ||
			 !strcmp(argv[1], "mapdata"))) {
		int fd = open(argv[2], O_RDONLY);
		off_t size = lseek(fd, 0, SEEK_END);
		int flip = !strcmp(argv[1], "mapflip");
		int prot = PROT_READ | (strcmp(argv[1], "mapdata") ? PROT_EXEC : 0);
		unsigned char *p = mmap(NULL, size, prot | (flip ? PROT_WRITE : 0), MAP_PRIVATE,
					fd, 0);
		if (fd < 0 || p == MAP_FAILED)
			return 4;
		for (off_t i = page; flip && i < size; i++)
			p[i] ^= 0xff;
	}
	if (argc > 2 && !strcmp(argv[1], "churn")) {
		load(argv[2]);
		int fd = open(argv[2], O_RDWR);
		off_t size = lseek(fd, 0, SEEK_END);
		char *copy = malloc(size);
		if (fd < 0 || !copy || pread(fd, copy, size, 0) != size)
			return 4;
		puts("ready");
		fflush(stdout);
		struct pollfd in = { .fd = 0, .events = POLLIN };
		while (poll(&in, 1, 0) == 0) {
			if (ftruncate(fd, 0) || pwrite(fd, copy, size, 0) != size)
				return 5;
		}
		return 0;
	}
	puts("ready");
	fflush(stdout);
	return read(0, &c, 1) < 0;
}
