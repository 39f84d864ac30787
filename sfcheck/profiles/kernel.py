"""The Linux kernel's readers: the V3 series as posted in v13 (`kernel-v13`, alias `kernel`)
and the 2023 RFC (`kernel-rfc-2023`), each fact next to the source it was read from."""

from __future__ import annotations

from ..effects import CRASHES, MISREADS, NOTHING, REFUSES, SKIPS
from ..format import constants
from .common import NO_OBJECTS, RUNTIME_GROUPS, SFCHECK_ONLY
from .model import ERR, INFO, WARN, Fact, Override, Profile, alike

# Sources (repo:path@commit, or a lore Message-ID). Read mid-2026.
KERNEL = "dylanbhatch/linux:kernel/unwind/sframe.c@3231d5c5"
KERNEL_BINFMT = ("fs/binfmt_elf.c in Message-ID 20251119132323.1281768-6-jremus@linux.ibm.com "
                 "([PATCH v12 05/13] unwind_user/sframe: Detect .sframe sections in executables)")
KERNEL_DEBUG = "dylanbhatch/linux:kernel/unwind/sframe_debug.h@86d1f1a2"
KERNEL_USER = "dylanbhatch/linux:kernel/unwind/user.c@3231d5c5"
KERNEL_V4 = ("dylanbhatch/linux@d56647db (base of Dylan Hatch's '[PATCH v4 0/8]', "
             "2026-04-21)")
KERNEL_V13 = ("Jens Remus, '[PATCH v13] unwind_deferred: Implement sframe handling', "
              "2026-01-27, Message-ID 20260127150554.2760964-1-jremus@linux.ibm.com "
              "(SFrame V3 only; carried in rostedt/linux-trace.git sframe/core)")
KERNEL_SYSCALL = ("Steven Rostedt, '[RFC][PATCH] unwind: Add stacktrace_setup system call', "
                  "2026-04-29, https://lkml.iu.edu/hypermail/linux/kernel/2604.3/12586.html "
                  "(on top of v13; SYSCALL_DEFINE5(stacktrace_setup) in "
                  "dylanbhatch/linux:kernel/unwind/sframe.c@3231d5c5)")
KERNEL_ARM64 = ("Dylan Hatch, arm64 series '[PATCH v4 5/8] sframe: Allow unsorted FDEs' "
                "(2026-04, live-patching@vger; kernel modules' .sframe lacks FDE_SORTED)")
KERNEL_SIGNAL = ("Jens Remus, '[RFC PATCH v1 2/5] unwind_user/sframe: Add support for signal "
                 "frame indication' (2026-01-27)")
RFC2023 = ("intel-lab-lkp/linux:kernel/unwind/sframe.c@aea7f41f ('[PATCH RFC 09/10] unwind: "
           "Introduce SFrame user space unwinding', Josh Poimboeuf, 2023-11-08, Message-ID "
           "09460e60dd1c2f8ea1abb8d9188195db699ce76f.1699487758.git.jpoimboe@kernel.org)")
RFC2023_WALK = "intel-lab-lkp/linux:kernel/unwind/user.c@aea7f41f (patch 06/10, the walker)"
RFC2023_V2 = ("Josh Poimboeuf's follow-up 20231109195304.m4sghaxx66al4wlt@treble (v2, PCMASK "
              "test enabled) and Indu Bhagat's reply of 2023-11-09")
LPC2023 = ("LPC 2023 hallway summary, Mathieu Desnoyers, 2023-11-15 (prctl registration; "
           "SFrame is hostile: bounds and stack-direction checks needed)")

_KERNEL_EFFECTS: dict[str, str | None] = {
    **SFCHECK_ONLY,
    # sframe_read_header / sframe_add_section: the registration fails
    **dict.fromkeys(("header-version-unsupported", "header-flags-required",
                     "header-auxhdr-rejected", "header-empty-counts", "header-too-short",
                     "header-bad-magic", "header-version-unknown",
                     "layout-fdeoff-after-freoff", "layout-fde-array-bounds",
                     "layout-fde-array-overlap", "layout-fre-bounds", "elf-not-alloc",
                     "defect-ld-discarded-sframe",
                     # only CONFIG_SFRAME_VALIDATION checks these, and refuses
                     "fde-start-duplicate", "elf-text-segments", "elf-fde-outside-text"),
                    REFUSES),
    # binfmt_elf registers nothing without the segment
    "elf-no-segment": SKIPS,
    # -EFAULT at lookup: sframe_find_user removes the section
    **dict.fromkeys(("fre-start-order", "fde-unsorted", "fre-word-count", "fde-type-unknown",
                     "fde-fre-type", "fre-size-code", "fre-datawords-size",
                     "fre-start-beyond-size", "layout-fde-fres-bounds", "fre-flex-padding",
                     "fde-reader-lookup-fails"), SKIPS),
    # a division by zero, or WARN_ON_ONCE (fatal under panic_on_warn)
    **dict.fromkeys(("fde-pcmask-rep-size", "fde-reader-div-zero", "fre-reader-warn"), CRASHES),
    # taken, and the trace is wrong (or falls back to frame pointers at that PC)
    **dict.fromkeys(("fde-reader-wrong-row", "fre-reader-walk-stops", "fre-flex-cfa-reg",
                     "fde-reader-lookup-fails-spec", "header-fixed-ra", "fde-overlap"),
                    MISREADS),
    # never read by the kernel
    **dict.fromkeys(("elf-abi-machine", "layout-gap-bytes", "elf-segment-padded",
                     "elf-text-coverage"), NOTHING),
}

KERNEL_PROFILE = Profile(
    name="kernel-v13",
    aliases=("kernel",),
    title="Linux user-space SFrame unwinder, V3 series as posted in v13, with the "
          "stacktrace_setup RFC (not in a mainline release)",
    reader="the kernel (V3 series)",
    sources=(KERNEL_V13, KERNEL_SYSCALL, KERNEL, KERNEL_BINFMT),
    versions=frozenset({constants.VERSION_3}),
    required_flags={constants.VERSION_3: constants.F_FDE_SORTED | constants.F_FDE_FUNC_START_PCREL},
    rejects_auxhdr=True, rejects_empty=True, increasing_starts=True, one_text_segment=True,
    effects=_KERNEL_EFFECTS, group_effects=RUNTIME_GROUPS,
    consumer={
        "header-version-unsupported": Fact(
            "sframe_read_header: version must be SFRAME_VERSION_3, else -EINVAL and the section "
            "is not registered (v11 read v2, the 2023 RFC v1).", KERNEL),
        "header-flags-required": Fact(
            "sframe_read_header rejects a header without FDE_SORTED or without "
            "FDE_FUNC_START_PCREL (-EINVAL).", KERNEL),
        "header-auxhdr-rejected": Fact(
            "sframe_read_header rejects auxhdr_len != 0 (-EINVAL).", KERNEL),
        "header-empty-counts": Fact(
            "sframe_read_header rejects num_fdes == 0 or num_fres == 0 "
            "('no FDE/FRE entries', -EINVAL).", KERNEL),
        "fde-start-duplicate": Fact(
            "sframe_validate_section (CONFIG_SFRAME_VALIDATION) requires strictly increasing "
            "function starts ('FDE %u not sorted', -EFAULT): the registration fails.", KERNEL),
        "elf-text-segments": Fact(
            "binfmt_elf registers the section once per PF_X PT_LOAD, with that segment as the "
            "text range; __read_fde returns -EINVAL for a function start outside it, so with "
            "CONFIG_SFRAME_VALIDATION every registration fails when FDEs start in more than one "
            "executable segment.", f"{KERNEL}; {KERNEL_BINFMT}"),
        "fde-reader-div-zero": Fact(
            "__find_fre: `ip_off %= fde->rep_size` for PCMASK FDEs with no zero check, and "
            "sframe_validate_section never reads rep_size: a division by zero in the kernel at "
            "the first lookup in that FDE.", KERNEL),
        "fde-reader-lookup-fails": Fact(
            "__find_fde/__find_fre fail where the reference finds a row (-EFAULT removes the "
            "section from the process, -EINVAL fails this lookup).", KERNEL),
        "fde-reader-lookup-fails-spec": Fact(
            "__find_fre returns -EINVAL for an FDE without FREs (no prev_fre), which v3 "
            "defines as an outermost frame; the unwinder falls back to frame pointers.",
            KERNEL),
        "fde-reader-wrong-row": Fact(
            "The FDE/FRE __find_fde and __find_fre pick differs from the reference's.",
            KERNEL),
        "fre-reader-warn": Fact(
            "sframe_init_rule_data gives a non-zero RA/FP control word without reg_p and "
            "deref_p the rule UNWIND_RULE_CFA_OFFSET; unwind_user_next_common has no case for "
            "it (RA: 'doesn't make sense'; FP: 'currently not used') and reaches "
            "WARN_ON_ONCE(1).", f"{KERNEL}; {KERNEL_USER}"),
        "fre-reader-walk-stops": Fact(
            "unwind_user_next_common: CFA must be > SP (>= for the topmost frame) and "
            "word-aligned; register-based rules only in the topmost frame; else -EINVAL ends "
            "the walk.", KERNEL_USER),
    },
    overrides={
        "defect-fre-start-at-size": Override(
            INFO, "__read_fre rejects only ip_off > func_size: a row at func_size is accepted "
            "(and never matched).", KERNEL),
        **alike(("layout-num-fres", "layout-fre-len"), WARN,
                "sframe_read_header never compares num_fres or fre_len with the FREs; each FDE's "
                "own count is walked, bounded by fres_end.", KERNEL),
        "layout-trailing-bytes": Override(
            WARN, "The section ends at PT_GNU_SFRAME p_memsz; bytes after fres_end are never read.",
            f"{KERNEL}; {KERNEL_BINFMT}"),
        "header-flags-unknown": Override(
            WARN, "sframe_read_header tests only FDE_SORTED and FDE_FUNC_START_PCREL; other bits "
            "are ignored.", KERNEL),
        **alike(("header-abi-unknown", "header-abi-endian"), WARN,
                "abi_arch is never read: the kernel decodes with its own architecture's rules "
                "(a foreign-endian magic is rejected as bad magic).", KERNEL),
        "fde-reserved-bits": Override(
            WARN, "Only the FRE type, PC type (info) and FDE type (info2) fields are read.",
            KERNEL),
        "fre-mangled-ra-abi": Override(
            WARN, "fre_info bit 7 (mangled RA) is never read by the user unwinder.", KERNEL),
        **alike(("elf-not-sorted", "elf-not-pcrel"), None,
                "Reported as header-flags-required.", KERNEL),
        "fde-pcmask-rep-size": Override(
            ERR, "__find_fre computes ip_off %= rep_size with no zero check: a division by zero "
            "in the kernel.", KERNEL),
        "fre-start-order": Override(
            ERR, "__find_fre returns -EFAULT on a non-increasing ip_off, and sframe_find_user "
            "removes the whole section.", KERNEL),
        "fde-unsorted": Override(
            ERR, "__find_fde returns -EFAULT when the binary search meets disorder; the section is "
            "removed.", KERNEL),
        **alike(("fre-word-count", "fde-type-unknown"), ERR,
                "__read_*_datawords return -EFAULT for leftover words or an FDE type other than "
                "DEFAULT/FLEX; the section is removed.", KERNEL),
        "fre-flex-cfa-reg": Override(
            ERR, "sframe_init_cfa_rule_data returns -EINVAL for a CFA rule without reg_p: the "
            "lookup fails.", KERNEL),
    },
    notes=(
        Fact("Not checked: abi_arch, unknown flag bits, num_fres against the FREs, fre_len "
             "against the bytes used.", KERNEL),
        Fact("-EFAULT removes the section from the mm; -EINVAL fails one lookup, and the "
             "unwinder falls back to frame pointers. Diagnostics go to pr_debug only.",
             f"{KERNEL}; {KERNEL_DEBUG}"),
        Fact("Rules marked CONFIG_SFRAME_VALIDATION apply only to kernels built with that "
             "option (its help text: 'not recommended for general use').", KERNEL),
        Fact("Registration (sframe_add_section): the four addresses non-zero, "
             "[sframe_start, sframe_end) inside one mapping (any protection), [text_start, "
             "text_end) inside one VM_EXEC mapping, then the header checks; the text range "
             "goes into a maple tree with an inclusive end (mtree_insert_range(text_start, "
             "text_end)), so two ranges that touch collide (-EEXIST).", KERNEL),
        Fact("binfmt_elf registers the section once per PF_X program header (executable and "
             "interpreter) and ignores the return value; ld.so and JITs would use the "
             "stacktrace_setup system call, which glibc 2.43 does not call.",
             f"{KERNEL_BINFMT}; {KERNEL}"),
        Fact("With CONFIG_SFRAME_VALIDATION a function start must lie in the text range: "
             "func_addr >= text_end is rejected at 3231d5c5, only func_addr > text_end at "
             "d56647db.", f"{KERNEL}; {KERNEL_V4}"),
        Fact("Dylan Hatch's arm64 series drops the FDE_SORTED requirement for kernel modules' own "
             ".sframe (unsorted tables searched linearly); user-space registration still "
             "requires it (sframe_read_header is unchanged at d56647db).",
             f"{KERNEL_ARM64}; {KERNEL_V4}"),
        Fact("stacktrace_setup(STACKTRACE_REGISTER_SFRAME, sframe_start, sframe_length, "
             "text_start, text_length) lets a dynamic loader register a library: it calls "
             "sframe_add_section with the ranges given, so every check above applies; "
             "STACKTRACE_UNREGISTER_SFRAME removes by sframe_start. No loader calls it yet "
             "(glibc 2.43 does not): only binfmt_elf's registrations of the executable and "
             "its interpreter happen today.", KERNEL_SYSCALL),
        Fact("Registration also refuses a section that is only its header (header_end >= "
             "sframe_end) and FDE/FRE offsets that put fres_start before the end of the FDE "
             "array or fres_end past sframe_end.", f"{KERNEL_V13}; {KERNEL}"),
        Fact("Effects: CONFIG_SFRAME_VALIDATION (off by default) turns the faults a lookup "
             "would meet into a refused registration; the effects this profile gives assume "
             "it is off, except for rules only validation checks. -EFAULT at lookup removes "
             "the section (a removal that fails is a WARN_ON_ONCE).", KERNEL),
        Fact("Not checked even by full validation: PCMASK rep_size (rep_size 0 passes and then "
             "divides by zero at lookup: fde-reader-div-zero), PCMASK FRE starts against "
             "rep_size, function sizes against text_end, overlapping functions.", KERNEL),
        Fact("Lookup: binary search over num_fdes entries, -EFAULT when disorder is met on the "
             "search path; gap check (-EINVAL); FRE scan bounded by the FDE's count and "
             "fres_end with strictly increasing starts (-EFAULT); the last FRE at or before the "
             "PC, none is -EINVAL (so is an FDE without FREs, where v3 means an outermost "
             "frame: fde-reader-lookup-fails-spec). The model in sfcheck/readers/v3series.py "
             "runs these against the reference table.", KERNEL),
        Fact("Signal FDEs (v3 info bit 7) are not read at 3231d5c5; Jens Remus' RFC lets them "
             "have no FREs and marks the frame as a signal frame.", KERNEL_SIGNAL),
        Fact("Unwind guards (unwind_user_next_common): an outermost row ends the walk; the CFA "
             "must be strictly above the previous SP (equal allowed only for the topmost "
             "frame) and word-aligned; an FP-based CFA needs FP >= SP; register-based CFA, RA "
             "and FP rules only in the topmost frame; an RA rule that is neither a CFA-slot "
             "load nor a register hits WARN_ON_ONCE; every stack read may fault and ends the "
             "walk.", KERNEL_USER),
        Fact("The trace is capped at (4096 - sizeof(struct unwind_cache)) / sizeof(long), "
             "about 510 entries.", KERNEL_USER),
        NO_OBJECTS,
    ),
    model="v3")

RFC2023_PROFILE = Profile(
    name="kernel-rfc-2023",
    title="Linux 2023 RFC user-space SFrame unwinder (v1 only, never merged)",
    reader="the 2023 RFC kernel reader",
    sources=(RFC2023, RFC2023_WALK),
    versions=frozenset({constants.VERSION_1}),
    model="rfc2023",
    effects={**SFCHECK_ONLY,
             **dict.fromkeys(("header-version-unsupported", "header-reader-refused"), REFUSES),
             **dict.fromkeys(("fde-reader-wrong-row", "fde-reader-uninit", "layout-reader-past",
                              "fde-reader-lookup-fails", "fde-reader-gap-row",
                              "fre-reader-walk-loops"), MISREADS),
             **dict.fromkeys(("elf-abi-machine", "layout-gap-bytes", "elf-text-coverage"),
                             NOTHING)},
    group_effects=RUNTIME_GROUPS,
    consumer={
        "header-version-unsupported": Fact(
            "__sframe_add_section: version must be SFRAME_VERSION_1 (-EINVAL); v2 came with "
            "the follow-up, v3 years later.", f"{RFC2023}; {RFC2023_V2}"),
        "header-reader-refused": Fact(
            "__sframe_add_section also refuses a bad magic, auxhdr_len != 0, num_fdes or "
            "num_fres 0, fdes_off > fres_off, and flags == 0: the SORTED test is written "
            "`(!shdr.preamble.flags & SFRAME_F_FDE_SORTED)`, so `!` binds first and any other "
            "flag value (0x2, 0x80) registers an unsorted table.", RFC2023),
        "fde-reader-wrong-row": Fact(
            "find_fde binary-searches whatever the order (unsorted tables give the wrong "
            "function); find_fre's PCMASK test is `#if 0`, so a PCMASK FDE always uses its "
            "last FRE; the CFA offset is read unsigned (1-byte -16 becomes 240); ADDR4 FRE "
            "starts >= 2^31 compare negative and are always taken; FRE order is never checked "
            "(the scan stops early); the search reads one FDE past the table and may use a "
            "phantom FDE made of FRE bytes.", RFC2023),
        "fde-reader-uninit": Fact(
            "find_fde's `found` is uninitialised for a PC below every function; find_fre's "
            "`last_f`, `offset_size`, `offset_count` are uninitialised for an FDE without FREs "
            "(only the header total is checked) or a first FRE after the PC; the walker's `ra` "
            "is uninitialised when the RA offset is 0. Zero-initialising kernels "
            "(INIT_STACK_ALL_ZERO, Debian's config) fail the lookup instead.",
            f"{RFC2023}; {RFC2023_WALK}"),
        "layout-reader-past": Fact(
            "No section size is known to the reader: counts and offsets are trusted and read "
            "with get_user/copy_from_user (user memory only; nothing reads kernel memory).",
            RFC2023),
        "fde-reader-lookup-fails": Fact(
            "find_fre returns -EINVAL for an FRE type > 2, an offset count or size of 0, a "
            "missing RA offset or offsets left over.", RFC2023),
        "fde-reader-gap-row": Fact(
            "The FDE's function size is never read: a PC in a gap, past the last function or "
            "in code without an FDE uses the previous function's last row.", RFC2023),
        "fre-reader-walk-loops": Fact(
            "user_unwind_next has no CFA-direction check and no frame cap: a CFA = SP+0 row "
            "repeats the frame until the caller's buffer is full.", RFC2023_WALK),
    },
    notes=(
        Fact("Findings under this profile are computed by running a model of find_fde/find_fre "
             "(sfcheck/readers/rfc2023.py) and sfcheck's reference table on the same PCs; the "
             "model decodes as x86-64 little-endian, the only architecture of the RFC.",
             "sfcheck"),
        Fact("Registration: prctl(PR_ADD_SFRAME) or binfmt_elf at exec for the executable and "
             "the interpreter. The text range is the file's one executable mapping; several "
             "exec mappings WARN and fail, no exec mapping or an unmapped text start "
             "dereferences NULL (get_sframe_file, validate_sframe_addrs).", RFC2023),
        Fact("binfmt registers one range from the lowest to the highest PF_X address: the gap "
             "between several PF_X segments maps to this section.", RFC2023),
        Fact("The range is inserted with mtree_insert_range(text_start, text_end), an inclusive "
             "end: two objects whose text ranges touch collide and the second registration "
             "fails (-EEXIST).", RFC2023),
        Fact("The PC offset is held in an s32: text more than 2 GiB from .sframe finds the "
             "wrong FDE (modelled).", RFC2023),
        Fact("LPC 2023 concluded that the kernel must treat SFrame as hostile; every later "
             "version bounds reads by the section, checks FRE order, the gap and the walk "
             "direction (the `kernel` profile).", LPC2023),
        NO_OBJECTS,
    ))

