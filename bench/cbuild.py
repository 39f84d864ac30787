"""Benchmark inputs built the way users' binaries are: generated C compiled by gcc -O2,
assembled with --gsframe by a real GNU as, linked by GNU ld into a shared library with
its `.eh_frame`, `.symtab` and `.dynsym` (or, for the `sframe-only` variant, with
`.cfi_sections .sframe` so the objects carry no `.eh_frame` FDEs at all).

The C is compiled to assembly once per size (`gcc -S`, the slow step, shared by every
toolchain), then each toolchain's `as` and `ld` turn it into a library:

  v1  the system binutils (Debian 12: 2.40 writes SFrame v1)
  v2  .toolchains/bin-trixie (2.44)
  v3  .toolchains/bin-sid (2.47.x)

Function shapes mimic what a C library holds: leaf arithmetic (no frame), callers that
spill callee-saved registers, functions with stack buffers, variable-length arrays (an
RBP-based CFA), switch tables, loops with calls, and tail calls.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

PER_TU = 4000  # functions per translation unit (gcc's time per TU stays small)

_SHAPES: tuple[tuple[int, Callable[[random.Random, int, int], str]], ...]


def _callee(rng: random.Random, i: int) -> int:
    return rng.randrange(0, i) if i else 0


def _leaf(rng: random.Random, i: int, n: int) -> str:
    return (f"long f{i}(long a, long b) {{ return a * {rng.randrange(3, 99)} + "
            f"(b ^ {rng.randrange(1, 1 << 20)}); }}\n")


def _caller(rng: random.Random, i: int, n: int) -> str:
    j, k = _callee(rng, i), _callee(rng, i)
    return (f"long f{i}(long a, long b) {{ long x = f{j}(a, b + {rng.randrange(1, 50)}); "
            f"long y = f{k}(x, a); return x * y + b; }}\n")


def _buffer(rng: random.Random, i: int, n: int) -> str:
    size = rng.choice((16, 64, 200, 1024, 4096))
    return (f"long f{i}(long a, long b) {{ char buf[{size}]; sfb_fill(buf, a, {size}); "
            f"return buf[b & {size - 1 if size & (size - 1) == 0 else 15}] + a; }}\n")


def _vla(rng: random.Random, i: int, n: int) -> str:
    return (f"long f{i}(long a, long b) {{ char v[(a & 255) + 1]; sfb_fill(v, b, (a & 255) "
            f"+ 1); return v[0] + f{_callee(rng, i)}(a, b); }}\n")


def _switch(rng: random.Random, i: int, n: int) -> str:
    cases = "".join(f"case {c}: return a * {rng.randrange(2, 9)} + f{_callee(rng, i)}(b, a);"
                    for c in range(rng.randrange(5, 12)))
    return f"long f{i}(long a, long b) {{ switch (b & 15) {{ {cases} default: return a; }} }}\n"


def _loop(rng: random.Random, i: int, n: int) -> str:
    j = _callee(rng, i)
    return (f"long f{i}(long a, long b) {{ long s = 0, t = a; for (long k = 0; k < b; k++) "
            f"{{ s += f{j}(k, t); t ^= s >> {rng.randrange(1, 7)}; }} return s + t; }}\n")


def _tail(rng: random.Random, i: int, n: int) -> str:
    return f"long f{i}(long a, long b) {{ return f{_callee(rng, i)}(b, a + 1); }}\n"


_SHAPES = ((30, _leaf), (25, _caller), (10, _buffer), (5, _vla), (8, _switch), (12, _loop),
           (10, _tail))


def c_source(first: int, count: int, seed: int = 1) -> str:
    """Functions f<first> .. f<first+count-1>, each calling only lower-numbered ones."""
    rng = random.Random(seed * 1_000_003 + first)
    weights = [w for w, _ in _SHAPES]
    makers = [m for _, m in _SHAPES]
    bodies = [rng.choices(makers, weights)[0](rng, i, count)
              for i in range(first, first + count)]
    called = sorted({int(t[1:]) for b in bodies for t in _calls(b)} - set(
        range(first, first + count)))
    decls = "".join(f"long f{j}(long, long);\n" for j in called)
    return ("void sfb_fill(char *p, long v, long n);\n" + decls
            + "".join(f"long f{i}(long, long);\n" for i in range(first, first + count))
            + "".join(bodies))


def _calls(body: str) -> list[str]:
    out = []
    pos = body.find(") {") + 3
    while True:
        k = body.find(" f", pos)
        if k < 0:
            return out
        end = k + 2
        while end < len(body) and body[end].isdigit():
            end += 1
        if end > k + 2 and body[end:end + 1] == "(":
            out.append(body[k + 1:end])
        pos = end


_SUPPORT = "void sfb_fill(char *p, long v, long n) { for (long i = 0; i < n; i++) p[i] = v + i; }\n"


def assembly(work: Path, n: int, jobs: int = 2) -> list[Path]:
    """gcc -O2 -fPIC -S of n functions, in TUs of PER_TU (cached under work)."""
    d = work / f"cgen-{n}"
    d.mkdir(parents=True, exist_ok=True)
    tus = [(k, min(PER_TU, n - k)) for k in range(0, n, PER_TU)]

    def one(tu: tuple[int, int]) -> Path:
        first, count = tu
        s = d / f"tu{first}.s"
        if not s.exists():
            c = d / f"tu{first}.c"
            c.write_text(c_source(first, count))
            tmp = s.with_suffix(".s.tmp")
            subprocess.run(["gcc", "-O2", "-fPIC", "-S", "-o", str(tmp), str(c)], check=True)
            tmp.rename(s)
            c.unlink()
        return s

    support = d / "support.s"
    if not support.exists():
        (d / "support.c").write_text(_SUPPORT)
        subprocess.run(["gcc", "-O2", "-fPIC", "-S", "-o", str(support), str(d / "support.c")],
                       check=True)
    with ThreadPoolExecutor(max(1, jobs)) as pool:
        return [support, *pool.map(one, tus)]


def library(work: Path, n: int, bindir: Path, tag: str, eh_frame: bool = True,
            jobs: int = 2) -> Path | None:
    """lib<n>-<tag>[-sframe-only].so built from the shared assembly with bindir's as and ld;
    None (with the reason on stderr) when that toolchain is missing or fails."""
    out = work / f"lib{n}-{tag}{'' if eh_frame else '-sframe-only'}.so"
    if out.exists():
        return out
    if not (bindir / "as").exists() or not shutil.which("gcc"):
        print(f"[bench] no {bindir}/as or gcc: {out.name} not built", flush=True)
        return None
    objdir = work / f"obj-{n}-{tag}{'' if eh_frame else '-so'}"
    objdir.mkdir(parents=True, exist_ok=True)
    sources = assembly(work, n, jobs)

    def assemble(s: Path) -> str:
        obj = objdir / (s.stem + ".o")
        if not obj.exists():
            src = s
            if not eh_frame:  # SFrame only: the assembler writes no .eh_frame for these
                src = objdir / s.name
                src.write_text(".cfi_sections .sframe\n" + s.read_text())
            subprocess.run([str(bindir / "as"), "--64", "--gsframe", "-o", str(obj) + ".tmp",
                            str(src)], check=True)
            os.replace(str(obj) + ".tmp", obj)
            if src != s:
                src.unlink()
        return str(obj)

    with ThreadPoolExecutor(max(1, jobs)) as pool:
        objs = list(pool.map(assemble, sources))
    tmp = out.with_suffix(".tmp")
    p = subprocess.run(["gcc", f"-B{bindir}/", "-shared", "-o", str(tmp), *objs],
                       capture_output=True, text=True)
    if p.returncode:
        print(f"[bench] {out.name} did not link: {p.stderr[-300:]}", flush=True)
        return None
    tmp.rename(out)
    shutil.rmtree(objdir)
    return out
