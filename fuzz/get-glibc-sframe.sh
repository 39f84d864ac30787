#!/bin/sh
# Build glibc's SFrame reader (sysdeps/generic/sframe-read.c: __sframe_decode, __sframe_find_fre
# and the offset getters) and walker (sysdeps/generic/sframe.c: __stacktrace_sframe, which
# backtrace() tries first; both LGPL-2.1+) as one shared library for the `glibc` fuzz target.
# The walker asks glibc's loader for the object holding a PC (GLRO(dl_find_object)); the shim
# written below stands in for it with one object whose SFrame section and text range the
# worker sets (shim_set_object), so the real walker runs on fuzzed sections over a fake stack.
# The source comes from Debian's glibc-source package (the release tarball), fetched with a
# private apt state the way corpus/get-toolchains.sh fetches binutils; nothing is vendored and
# no system package is installed.
#
#   sh fuzz/get-glibc-sframe.sh [DEST]      (default DEST: .toolchains/glibc-sframe)
#   GLIBC_SOURCE_DEB=/path/glibc-source_*.deb sh fuzz/get-glibc-sframe.sh   (no download)
#   SUITE=experimental sh fuzz/get-glibc-sframe.sh                          (default sid)
#
# Prints the path of the library built: DEST/libglibc-sframe-<version>.so
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DEST=${1:-$ROOT/.toolchains/glibc-sframe}
SUITE=${SUITE:-sid}
mkdir -p "$DEST"
DEST=$(cd "$DEST" && pwd)
deb=${GLIBC_SOURCE_DEB:-}
if [ -z "$deb" ]; then
    A=$DEST/apt
    # shellcheck source=corpus/apt-state.sh
    . "$ROOT/corpus/apt-state.sh"
    private_apt "$A" "deb-src deb" "$SUITE" debian
    apt-get -q update > "$A/update.log" 2>&1
    (cd "$DEST" && apt-get -q download "glibc-source/$SUITE" > "$A/download.log" 2>&1)
    deb=$(ls -t "$DEST"/glibc-source_*_all.deb | head -1)
fi
work=$DEST/src
rm -rf "$work" && mkdir -p "$work/shim"
dpkg-deb -x "$deb" "$work/deb"
tarball=$(ls "$work"/deb/usr/src/glibc/glibc-*.tar.xz | head -1)
ver=$(basename "$tarball" .tar.xz)
tar -C "$work" -xJf "$tarball" --wildcards "$ver/sysdeps/generic/sframe*"
# The shim: what glibc's build would provide to these files (shim.h is included first; the
# shim directory shadows <dlfcn.h> and provides <ldsodefs.h> and <uw-sigframe.h>).
cat > "$work/shim/shim.h" <<'EOF'
#include <stddef.h>
#include <string.h>
#define libc_hidden_proto(x)
#define libc_hidden_def(x)
EOF
# glibc 2.42's struct dl_find_object, reduced to what sframe.c reads (the host's <dlfcn.h> may
# predate dlfo_sframe); it is private to this library, so the layout need not match.
cat > "$work/shim/dlfcn.h" <<'EOF'
#define DLFO_FLAG_SFRAME 1ULL
struct dl_find_object {
  unsigned long long dlfo_flags;
  void *dlfo_map_start, *dlfo_map_end, *dlfo_eh_frame, *dlfo_sframe;
};
EOF
cat > "$work/shim/ldsodefs.h" <<'EOF'
#define GLRO(name) shim_##name
int shim_dl_find_object (void *pc, struct dl_find_object *result);
EOF
# x86-64's rule for the outermost frame (FP 0). No signal frames: x86-64's
# MD_DECODE_SIGNAL_FRAME reads the code bytes at the PC, and the fake text has none.
cat > "$work/shim/uw-sigframe.h" <<'EOF'
#define MD_DETECT_OUTERMOST_FRAME(f) \
  ((f)->fp == 0 ? _URC_END_OF_STACK : _URC_NO_REASON)
EOF
# The one loaded object: PCs in [lo, hi) are in it; its SFrame section is at SF.
cat > "$work/shim/shim.c" <<'EOF'
#include <dlfcn.h>
#include <ldsodefs.h>
static void *sframe;
static unsigned long text_lo, text_hi;
void shim_set_object (void *sf, unsigned long lo, unsigned long hi)
{
  sframe = sf;
  text_lo = lo;
  text_hi = hi;
}
int shim_dl_find_object (void *pc, struct dl_find_object *r)
{
  unsigned long p = (unsigned long) pc;
  if (p < text_lo || p >= text_hi)
    return -1;
  memset (r, 0, sizeof *r);
  r->dlfo_flags = sframe ? DLFO_FLAG_SFRAME : 0;
  r->dlfo_sframe = sframe;
  return 0;
}
/* Name the faulting address on stderr, then let the handler installed before (Python's
   faulthandler, which names the call in progress) take the fault again.  */
#include <signal.h>
#include <unistd.h>
static struct sigaction previous;
static void report_fault (int sig, siginfo_t *si, void *uc)
{
  char buf[40] = "shim: fault at 0x";
  unsigned long a = (unsigned long) si->si_addr;
  int n = 17;
  for (int k = 60; k >= 0; k -= 4)
    buf[n++] = "0123456789abcdef"[(a >> k) & 15];
  buf[n++] = '\n';
  write (2, buf, n);
  sigaction (sig, &previous, NULL);
  (void) uc;
}
int shim_report_faults (void)
{
  struct sigaction sa;
  memset (&sa, 0, sizeof sa);
  sa.sa_sigaction = report_fault;
  sa.sa_flags = SA_SIGINFO | SA_NODEFER;
  return sigaction (SIGSEGV, &sa, &previous);
}
EOF
out=$DEST/lib$ver-sframe.so
gen=$work/$ver/sysdeps/generic
gcc -O1 -g -shared -fPIC -include "$work/shim/shim.h" -I"$work/shim" -I"$gen" \
    -o "$out" "$gen/sframe-read.c" "$gen/sframe.c" "$work/shim/shim.c"
rm -rf "$work/deb"
echo "$out"
