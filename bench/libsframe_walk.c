/* libsframe's decode-and-walk of every FRE, timed in C: the reference for issue 7's
   "decoder <= 3 x libsframe" target. bench/run.py compiles it (gcc, -ldl) and runs

       libsframe_walk LIBSFRAME.so SECTION_FILE REPS

   which prints the best ns per FRE over REPS runs of: sframe_decode, then for every
   FDE its descriptor (get_funcdesc_v3 / _v2) and sframe_decoder_get_fre for each of its
   FREs. The prototypes are declared here (no libsframe-dev package is needed): they are
   the ones fuzz/libsframe_worker.py uses through ctypes. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef void *(*decode_fn)(const char *, size_t, int *);
typedef void (*free_fn)(void **);
typedef uint32_t (*nfidx_fn)(void *);
typedef int (*desc3_fn)(void *, unsigned, uint32_t *, uint32_t *, int64_t *, uint8_t *,
                        uint8_t *, uint8_t *);
typedef int (*desc2_fn)(void *, unsigned, uint32_t *, uint32_t *, int32_t *, uint8_t *,
                        uint8_t *);
typedef int (*fre_fn)(void *, unsigned, unsigned, void *);

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s LIBSFRAME SECTION REPS\n", argv[0]);
    return 2;
  }
  void *lib = dlopen(argv[1], RTLD_NOW);
  if (!lib) {
    fprintf(stderr, "%s\n", dlerror());
    return 2;
  }
  decode_fn decode = (decode_fn)dlsym(lib, "sframe_decode");
  free_fn dfree = (free_fn)dlsym(lib, "sframe_decoder_free");
  nfidx_fn nfidx = (nfidx_fn)dlsym(lib, "sframe_decoder_get_num_fidx");
  desc3_fn desc3 = (desc3_fn)dlsym(lib, "sframe_decoder_get_funcdesc_v3");
  desc2_fn desc2 = (desc2_fn)dlsym(lib, "sframe_decoder_get_funcdesc_v2");
  fre_fn get_fre = (fre_fn)dlsym(lib, "sframe_decoder_get_fre");
  FILE *f = fopen(argv[2], "rb");
  if (!f) {
    perror(argv[2]);
    return 2;
  }
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = malloc(len);
  if (!buf || fread(buf, 1, len, f) != (size_t)len) {
    fprintf(stderr, "cannot read %s\n", argv[2]);
    return 2;
  }
  fclose(f);
  if (len < 4) {
    fprintf(stderr, "section too short\n");
    return 2;
  }
  if (!decode || !dfree || !nfidx || !get_fre || (buf[2] >= 3 ? !desc3 : !desc2)) {
    fprintf(stderr, "libsframe API not found\n");
    return 2;
  }
  int reps = atoi(argv[3]);
  double best = 1e30;
  unsigned long long fres = 0;
  unsigned char fre[64]; /* sframe_frame_row_entry is 32 bytes at most (2.46+) */
  for (int r = 0; r < reps; r++) {
    double t0 = now();
    int err = 0;
    void *ctx = decode(buf, len, &err);
    if (!ctx) {
      fprintf(stderr, "sframe_decode failed (%d)\n", err);
      return 1;
    }
    uint32_t n = nfidx(ctx);
    fres = 0;
    for (uint32_t i = 0; i < n; i++) {
      uint32_t nf = 0, size = 0;
      uint8_t info = 0, info2 = 0, rep = 0;
      int bad;
      if (desc3 && buf[2] >= 3) {
        int64_t start;
        bad = desc3(ctx, i, &nf, &size, &start, &info, &info2, &rep);
      } else {
        int32_t start;
        bad = desc2(ctx, i, &nf, &size, &start, &info, &rep);
      }
      if (bad)
        continue;
      for (uint32_t j = 0; j < nf; j++)
        if (get_fre(ctx, i, j, fre) == 0)
          fres++;
    }
    dfree(&ctx);
    double dt = now() - t0;
    if (dt < best)
      best = dt;
  }
  printf("%.3f %llu\n", best * 1e9 / (fres ? fres : 1), fres);
  return 0;
}
