/* unity.c -- one translation unit for LLVM (zig/lld does not merge .sframe
 * sections, so a clean linked output needs exactly one SFrame-bearing object). */
#define CORPUS_NO_ASM 1
#include "lib.c"
#include "drap.c"
#include "sig.c"
#include "main.c"
