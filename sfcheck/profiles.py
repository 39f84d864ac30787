"""Consumer profiles: how one SFrame reader (kernel, glibc, libsframe, LLVM) reacts to a section.

`sfcheck --profile NAME` answers "will this reader take it?". Under a consumer profile every
finding also carries what the reader does with it (sfcheck/effects.py: refuses, skips,
crashes, misreads, nothing; `effects` per rule and `group_effects` per rule group below),
and what is nothing to the reader is shown but not counted. Severities:
  error   = the reader rejects the section or the lookup, crashes, divides by zero, asserts,
            or silently mis-unwinds because of it;
  warning = strict sfcheck finds it wrong, but this reader accepts it without harm to itself;
  info    stays info.
`strict` (the default) keeps every rule's own severity and runs no consumer rule.

A profile holds the reader's acceptance facts (versions, required flags, layout assumptions),
which consumer rules (sfcheck/rules/consumer.py) fire under it, and severity overrides of the
strict rules. Every fact and override names the source it was read from.

Long because it is data: the code (the Fact/Override/Profile types, get, describe) is
under 100 lines; the rest is each reader's facts next to the source lines they were read
from, kept in one place so `sfcheck profiles` and the consumer rules read one table.
"""

from __future__ import annotations

from .effects import CRASHES, EFFECT_TEXT, MISREADS, NOTHING, REFUSES, SKIPS
from .format import constants as C
from .record import Record, replace
from .result import Severity

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
GLIBC = "bminor/glibc:sysdeps/generic/sframe-read.c@86fbb4cb"
GLIBC_FIRST = "bminor/glibc:sysdeps/generic/sframe-read.c@3360913c"
GLIBC_V3 = "'sframe: Add SFrame v3 decode support for regular FDEs', libc-alpha, 2026-04-17"
LIBSFRAME = "ROCm/ROCgdb:libsframe/sframe.c@5a7c9b2c"
LIBSFRAME_DUMP = "ROCm/ROCgdb:libsframe/sframe-dump.c@a2c63f05"
# What the real binaries did, run here on ELF files built by fuzz/oracle_cases.py.
OBJDUMP_SEEN = "objdump 2.47.50.20261021 (Debian sid binutils-x86-64-linux-gnu), run here"
LLVM_SEEN = "llvm-readobj 22.1.8 and 23.1.4 (Debian sid llvm-22, llvm-23), run here"
LLVM = "denzor200/llvm-project:llvm/lib/Object/SFrameParser.cpp@682321d3"
LLVM_H = "Hardcode84/llvm-project:llvm/include/llvm/Object/SFrameParser.h@9d8bac3c"
LLVM_RELEASE = ("llvm/llvm-project PRs #147294, #149828 (July-Aug 2025, after the LLVM 21 "
                "branch): LLVM 22 is the first release with the parser (inferred from dates)")

FLAG_NAMES = {C.F_FDE_SORTED: "FDE_SORTED", C.F_FRAME_POINTER: "FRAME_POINTER",
              C.F_FDE_FUNC_START_PCREL: "FDE_FUNC_START_PCREL"}


def flag_names(flags: int) -> str:
    names = [name for bit, name in FLAG_NAMES.items() if flags & bit]
    rest = flags & ~sum(FLAG_NAMES)
    return "|".join(names + ([f"{rest:#x}"] if rest else [])) or "none"


class Fact(Record, frozen=True):
    __slots__ = ("text", "source")

    def __init__(self, text: str, source: str) -> None:
        self.text = text
        self.source = source


class Override(Record, frozen=True):
    __slots__ = ("severity", "why", "source")

    def __init__(self, severity: Severity | None, why: str, source: str) -> None:
        self.severity = severity  # None: the finding is not reported under this profile
        self.why = why
        self.source = source


class Profile(Record, frozen=True, eq=False, shown=("name",)):  # repr: a name, not its facts
    __slots__ = ("name", "title", "reader", "sources", "versions", "required_flags",
                 "ignores_fdeoff", "ignores_freoff", "rejects_auxhdr", "rejects_empty",
                 "increasing_starts", "one_text_segment", "consumer", "overrides", "notes",
                 "model", "effects", "group_effects", "aliases")

    def __init__(self, name: str, title: str, reader: str, sources: tuple[str, ...] = (),
                 versions: frozenset[int] = frozenset(C.VERSIONS),
                 required_flags: dict[int, int] | None = None, ignores_fdeoff: bool = False,
                 ignores_freoff: bool = False, rejects_auxhdr: bool = False,
                 rejects_empty: bool = False, increasing_starts: bool = False,
                 one_text_segment: bool = False, consumer: dict[str, Fact] | None = None,
                 overrides: dict[str, Override] | None = None, notes: tuple[Fact, ...] = (),
                 model: str = "", effects: dict[str, str | None] | None = None,
                 group_effects: dict[str, str] | None = None,
                 aliases: tuple[str, ...] = ()) -> None:
        self.name = name
        self.title = title
        self.reader = reader  # how findings name the reader: "the kernel (V3 series)"
        self.sources = sources
        self.versions = versions
        # version -> flag bits
        self.required_flags = {} if required_flags is None else required_flags
        self.ignores_fdeoff = ignores_fdeoff  # FDE array assumed right after the header
        self.ignores_freoff = ignores_freoff  # FRE sub-section assumed right after the FDE array
        self.rejects_auxhdr = rejects_auxhdr
        self.rejects_empty = rejects_empty  # num_fdes == 0 or num_fres == 0
        self.increasing_starts = increasing_starts  # equal function starts rejected
        self.one_text_segment = one_text_segment  # every FDE must start in one PF_X segment
        # consumer rule ID -> why it fires
        self.consumer = {} if consumer is None else consumer
        self.overrides = {} if overrides is None else overrides
        self.notes = notes  # what the reader does not check, and other context
        self.model = model  # a reader model in sfcheck/readers/ run against the reference table
        # What the reader does with a finding (sfcheck.effects): rule ID -> effect (None: not
        # the reader's business, counted as under strict), then rule group -> effect for error
        # findings; a finding below error that neither names is "nothing".
        self.effects = {} if effects is None else effects
        self.group_effects = {} if group_effects is None else group_effects
        self.aliases = aliases  # other names `--profile` takes for it

    def effect(self, rule_id: str, group: str | None, severity: Severity) -> str | None:
        """What this profile's reader does with a finding of `rule_id` at `severity` (the
        severity the profile gave it); None under strict."""
        if self.name == "strict":
            return None
        if rule_id in self.effects:
            return self.effects[rule_id]
        if severity < Severity.ERROR:
            return NOTHING  # a profile's warning: the reader takes it without harm
        return self.group_effects.get(group or "", MISREADS)

    def severity(self, rule_id: str, severity: Severity) -> Severity | None:
        """The severity a finding of `rule_id` gets under this profile (None: not reported)."""
        o = self.overrides.get(rule_id)
        return severity if o is None else o.severity


def _same(rules: tuple[str, ...], severity: Severity | None, why: str,
          source: str) -> dict[str, Override]:
    return {r: Override(severity, why, source) for r in rules}


WARN, ERR, INFO = Severity.WARNING, Severity.ERROR, Severity.INFO

# Said of every runtime reader (kernel, glibc): they load linked files only.
NO_OBJECTS = Fact("Runtime readers never see a .o: an object is asked what GNU ld will make of "
                  "it (object-version-unsupported), not judged by the consumer rules "
                  "(sfcheck/rules/linkable.py).", "sfcheck")

STRICT = Profile(
    name="strict", title="every rule at its own severity (the default)", reader="sfcheck",
    notes=(Fact("No consumer rule runs; nothing is overridden.", "sfcheck"),))


# What each reader does with each finding (sfcheck.effects). Group defaults apply to error
# findings a profile does not name; `sfcheck explain RULE` prints the result per profile.
_SFCHECK_ONLY: dict[str, str | None] = {
    # sfcheck's own gates, not a statement about any reader: counted as under strict
    "elf-no-sframe": None, "elf-findings-capped": None, "elf-sframe-sections-capped": None}

_KERNEL_EFFECTS: dict[str, str | None] = {
    **_SFCHECK_ONLY,
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
_RUNTIME_GROUPS = {"header": REFUSES, "layout": MISREADS, "fde": MISREADS, "fre": MISREADS,
                   "elf": MISREADS, "semantic": MISREADS, "defect": MISREADS}

KERNEL_PROFILE = Profile(
    name="kernel-v13",
    aliases=("kernel",),
    title="Linux user-space SFrame unwinder, V3 series as posted in v13, with the "
          "stacktrace_setup RFC (not in a mainline release)",
    reader="the kernel (V3 series)",
    sources=(KERNEL_V13, KERNEL_SYSCALL, KERNEL, KERNEL_BINFMT),
    versions=frozenset({C.VERSION_3}),
    required_flags={C.VERSION_3: C.F_FDE_SORTED | C.F_FDE_FUNC_START_PCREL},
    rejects_auxhdr=True, rejects_empty=True, increasing_starts=True, one_text_segment=True,
    effects=_KERNEL_EFFECTS, group_effects=_RUNTIME_GROUPS,
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
        **_same(("layout-num-fres", "layout-fre-len"), WARN,
                "sframe_read_header never compares num_fres or fre_len with the FREs; each FDE's "
                "own count is walked, bounded by fres_end.", KERNEL),
        "layout-trailing-bytes": Override(
            WARN, "The section ends at PT_GNU_SFRAME p_memsz; bytes after fres_end are never read.",
            f"{KERNEL}; {KERNEL_BINFMT}"),
        "header-flags-unknown": Override(
            WARN, "sframe_read_header tests only FDE_SORTED and FDE_FUNC_START_PCREL; other bits "
            "are ignored.", KERNEL),
        **_same(("header-abi-unknown", "header-abi-endian"), WARN,
                "abi_arch is never read: the kernel decodes with its own architecture's rules "
                "(a foreign-endian magic is rejected as bad magic).", KERNEL),
        "fde-reserved-bits": Override(
            WARN, "Only the FRE type, PC type (info) and FDE type (info2) fields are read.",
            KERNEL),
        "fre-mangled-ra-abi": Override(
            WARN, "fre_info bit 7 (mangled RA) is never read by the user unwinder.", KERNEL),
        **_same(("elf-not-sorted", "elf-not-pcrel"), None,
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
        **_same(("fre-word-count", "fde-type-unknown"), ERR,
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
    versions=frozenset({C.VERSION_1}),
    model="rfc2023",
    effects={**_SFCHECK_ONLY,
             **dict.fromkeys(("header-version-unsupported", "header-reader-refused"), REFUSES),
             **dict.fromkeys(("fde-reader-wrong-row", "fde-reader-uninit", "layout-reader-past",
                              "fde-reader-lookup-fails", "fde-reader-gap-row",
                              "fre-reader-walk-loops"), MISREADS),
             **dict.fromkeys(("elf-abi-machine", "layout-gap-bytes", "elf-text-coverage"),
                             NOTHING)},
    group_effects=_RUNTIME_GROUPS,
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

GLIBC_PROFILE = Profile(
    name="glibc-2.42",
    title="glibc 2.42 backtrace() with --enable-sframe",
    reader="glibc 2.42",
    sources=(GLIBC, GLIBC_FIRST),
    versions=frozenset({C.VERSION_2}),
    required_flags={C.VERSION_2: C.F_FDE_SORTED},
    ignores_fdeoff=True, ignores_freoff=True,
    effects={**_SFCHECK_ONLY,
             # __sframe_decode fails: backtrace() uses DWARF for the object
             **dict.fromkeys(("header-version-unsupported", "header-flags-unknown",
                              "header-bad-magic", "header-too-short", "header-version-unknown"),
                             REFUSES),
             # decoded, but no lookup succeeds (the binary search needs FDE_SORTED)
             "header-flags-required": SKIPS,
             "fde-pcmask-rep-size": CRASHES,  # SIGFPE inside backtrace()
             # found through PT_GNU_SFRAME: without it glibc never sees the section
             "elf-no-segment": SKIPS,
             **dict.fromkeys(("elf-abi-machine", "layout-gap-bytes", "elf-text-coverage"),
                             NOTHING)},
    group_effects=_RUNTIME_GROUPS,
    consumer={
        "header-version-unsupported": Fact(
            "sframe_header_sanity_check_p: version must be SFRAME_VERSION_2; __sframe_decode "
            "fails and backtrace() falls back to DWARF.", GLIBC),
        "header-flags-required": Fact(
            "sframe_get_funcdesc_with_addr_internal returns NULL without SFRAME_F_FDE_SORTED: "
            "no lookup succeeds.", GLIBC),
        "layout-offsets-ignored": Fact(
            "__sframe_decode puts the FDE array right after the header and the FREs right "
            "after the FDE array; sfh_fdeoff and sfh_freoff are never used, so other offsets "
            "make it read the wrong bytes.", GLIBC),
    },
    overrides={
        "defect-fre-start-at-size": Override(
            INFO, "The last FRE covers up to func_size - 1 (sframe_fre_get_end_ip_offset): a row "
            "at func_size is never matched.", GLIBC),
        **_same(("layout-num-fres", "layout-fre-len"), WARN,
                "sfh_num_fres and sfh_fre_len are never used to bound or count reads.", GLIBC),
        "layout-trailing-bytes": Override(
            WARN, "__sframe_decode gets no section size; bytes after the FREs are never read.",
            GLIBC),
        "layout-fdeoff-nonzero": Override(None, "Reported as layout-offsets-ignored.", GLIBC),
        "elf-not-sorted": Override(None, "Reported as header-flags-required.", GLIBC),
        "fde-pcmask-rep-size": Override(
            ERR, "sframe_fre_check_range_p computes pc_offset % rep_block_size with no zero "
            "check: SIGFPE inside backtrace().", GLIBC),
        "fde-unsorted": Override(
            ERR, "The binary search trusts FDE_SORTED: an unsorted table finds the wrong function "
            "or none.", GLIBC),
        "header-flags-unknown": Override(
            ERR, "sframe_header_sanity_check_p rejects flags outside SFRAME_V2_F_ALL_FLAGS.",
            GLIBC),
    },
    notes=(
        Fact("No section size reaches the decoder: every count and offset is trusted, so the "
             "layout bounds rules stay errors (reads past the section).", GLIBC),
        Fact("Both start encodings are read: FDE_FUNC_START_PCREL is honoured "
             "(sframe_decoder_get_secrel_func_start_addr).", GLIBC),
        Fact("The first import accepted only FDE_SORTED|FRAME_POINTER and so rejected "
             "binutils 2.45 PCREL output; which of the two the 2.42 tarball holds was not "
             "verified (the profile follows the later code).", GLIBC_FIRST),
        Fact("Any decode or lookup failure returns 0 frames and backtrace() uses DWARF.", GLIBC),
        Fact("SFrame V3, which binutils 2.46 emits, is not read: a V3 decoder for regular FDEs "
             "(version-dependent FDE layout, outermost-frame detection, bounds checks) was "
             "posted in April 2026 and is not in this profile.", GLIBC_V3),
        NO_OBJECTS,
    ))

# The dumpers (objdump/readelf --sframe, llvm-readobj --sframe) print what is stored: the
# .eh_frame cross-check, producer defects, ELF placement, the lookup-only flags and orders
# are nothing to them.
_DUMPER_NOTHING = dict.fromkeys((
    "header-flags-required", "header-fixed-ra", "header-abi-unknown", "header-abi-endian",
    "fde-unsorted", "fde-pcmask-rep-size", "layout-gap-bytes", "elf-abi-machine"), NOTHING)
_DUMPER_GROUPS = {"header": REFUSES, "layout": MISREADS, "fde": NOTHING, "fre": NOTHING,
                  "elf": NOTHING, "semantic": NOTHING, "defect": NOTHING}

LIBSFRAME_PROFILE = Profile(
    name="libsframe-2.46",
    title="GNU libsframe 2.46 (sframe_decode, sframe_find_fre; objdump/readelf --sframe)",
    reader="libsframe 2.46",
    sources=(LIBSFRAME, LIBSFRAME_DUMP),
    versions=frozenset({C.VERSION_2, C.VERSION_3}),
    required_flags={C.VERSION_2: C.F_FDE_SORTED | C.F_FDE_FUNC_START_PCREL,
                    C.VERSION_3: C.F_FDE_SORTED | C.F_FDE_FUNC_START_PCREL},
    effects={**_SFCHECK_ONLY, **_DUMPER_NOTHING,
             # the native-endian path copies without comparing with the section size, and
             # sframe_assert aborts: objdump asserts or segfaults
             **dict.fromkeys(("layout-fde-array-bounds", "layout-fde-fres-bounds",
                              "layout-fre-bounds", "fde-fre-type", "fre-start-beyond-size",
                              "fre-datawords-size", "fre-reader-flex-one-word",
                              "fre-reader-flex-abi"), CRASHES),
             "layout-fdeoff-nonzero": MISREADS,
             "defect-ld-discarded-sframe": REFUSES},  # a zero-size section: 'Corrupt SFrame'
    group_effects=_DUMPER_GROUPS,
    consumer={
        "header-version-unsupported": Fact(
            "sframe_fde_tbl_init reads only v2 and v3 ('Not possible ATM'): sframe_decode "
            "fails with SFRAME_ERR_BUF_INVAL for v1.", LIBSFRAME),
        "header-foreign-order-refused": Fact(
            "sframe_decode byte-swaps a section of the other order only after "
            "flip_sframe_fdes_with_fres walks it with bounds, counts, fre_len and zero-padding "
            "checks: any of those fails the decode ('Buffer does not contain SFrame data.').",
            f"{LIBSFRAME}; {OBJDUMP_SEEN}"),
        "header-flags-required": Fact(
            "sframe_find_fre fails with SFRAME_ERR_FDE_NOTSORTED without FDE_SORTED, and "
            "sframe_decoder_get_secrel_func_start_addr adds the field offset whatever the "
            "flags, so lookups in a section without FDE_FUNC_START_PCREL use wrong function "
            "starts (objdump's dumper checks the flag and still prints them right).",
            f"{LIBSFRAME}; {LIBSFRAME_DUMP}"),
        "fre-reader-flex-one-word": Fact(
            "dump_sframe_func_fres_flex reads a FLEX FRE's CFA control word (word 0) and CFA "
            "offset (word 1) and runs sframe_assert (!err_cfa_reg && !err_cfa_offset): one "
            "data word aborts objdump/readelf --sframe (a DEFAULT FDE's one word is its CFA "
            "offset and dumps).", f"{LIBSFRAME_DUMP}; {OBJDUMP_SEEN}"),
        "fre-reader-flex-abi": Fact(
            "sframe_format_fre_disp names a FLEX FRE's reg_p control word with "
            "sframe_get_reg_name, which knows abi_arch 1-4 only and runs sframe_assert "
            "(false) otherwise: objdump/readelf --sframe abort (sframe_decode accepts the "
            "unknown ABI).", f"{LIBSFRAME_DUMP}; {OBJDUMP_SEEN}"),
    },
    overrides={
        "defect-fre-start-at-size": Override(
            INFO, "sframe_decoder_get_fre asserts fre_start_addr <= func_size, relaxed from < for "
            "real gas output (PR libsframe/33131): start == size is accepted.", LIBSFRAME),
        "fre-start-beyond-size": Override(
            ERR, "sframe_assert(fre_start_addr <= func_size) in sframe_decoder_get_fre aborts "
            "objdump/readelf.", LIBSFRAME),
        "fde-fre-type": Override(
            ERR, "sframe_fre_start_addr_size hits sframe_assert(0) for an FRE type > 2.",
            LIBSFRAME),
        "fde-pcmask-rep-size": Override(
            ERR, "sframe_fre_check_range_p computes pc_offset % rep_block_size with no zero "
            "check.", LIBSFRAME),
        "layout-fdeoff-nonzero": Override(
            ERR, "sframe_decoder_get_offsetof_fde_start_addr ignores sfh_fdeoff: every "
            "PC-relative function start is off by fdeoff.", LIBSFRAME),
        "fre-datawords-size": Override(
            ERR, "sframe_decode_fre copies the data words into a MAX_OFFSET_BYTES buffer before "
            "any sanity check.", LIBSFRAME),
        "fde-unsorted": Override(
            ERR, "sframe_find_fre binary-searches whenever FDE_SORTED is set.", LIBSFRAME),
        **_same(("elf-not-sorted", "elf-not-pcrel"), None,
                "Reported as header-flags-required.", LIBSFRAME),
        **_same(("elf-fde-outside-text", "elf-abi-machine", "elf-no-segment"), WARN,
                "libsframe is handed the section's bytes and objdump finds it by name: the "
                "text mapping, e_machine and PT_GNU_SFRAME are never looked at.",
                f"{LIBSFRAME}; {OBJDUMP_SEEN}"),
    },
    notes=(
        Fact("Header checks: size >= header, magic in either byte order, version 1-3, flags "
             "within the version's flags, fdeoff <= freoff.", LIBSFRAME),
        Fact("Only the foreign-endian path walks the section with bounds, counts, fre_len, "
             "zero padding and auxhdr_len == 0 checks; the native path copies fre_len bytes "
             "from freoff without comparing with the section size. Rules whose outcome "
             "depends on the host byte order keep their strict severity.", LIBSFRAME),
        Fact("Runtime lookups never see a .o: header-flags-required is not applied to "
             "relocatable files.", "sfcheck"),
        Fact("Seen running objdump --sframe on hostile native-endian sections: an FDE array or "
             "FRE block past the section's end (layout-fde-array-bounds, "
             "layout-fde-fres-bounds, layout-fre-bounds: truncation, num_fdes wrapping at 32 "
             "bits, fre_len 0xffffffff, an FRE offset past the end, FDE table and FRE data "
             "overlapping, a v1 header relabelled v2, an FRE info byte changed in place) makes "
             "it fault or assert in sframe_fre_start_addr_size, sframe_decode_fre or "
             "sframe_decoder_get_fre; which one, or a dump of the bytes beyond, depends on "
             "the heap past the section.", OBJDUMP_SEEN),
        Fact("auxhdr_len 255 moves the FDE array past the section: SIGSEGV or the "
             "sframe_decode_fre assertion, not a refusal; a default FDE retyped FLEX aborts in "
             "dump_sframe_func_fres_flex (sframe-dump.c); num_fdes = 0xffffffff fails with "
             "'SFrame decode failure: Out of Memory.'; a zero-size section with 'Corrupt "
             "SFrame.'.", OBJDUMP_SEEN),
        Fact("objdump/readelf --sframe read the section named .sframe and libsframe is handed "
             "a buffer: PT_GNU_SFRAME is never read, so findings on the segment alone are "
             "warnings.", f"{LIBSFRAME_DUMP}; {OBJDUMP_SEEN}"),
    ))

# binutils 2.40 (Debian 12's own): the same library a generation earlier, reading v1 only.
LIBSFRAME_240 = "bminor/binutils-gdb:libsframe/sframe.c@078d3868"
OBJDUMP_240_SEEN = "objdump 2.40 (Debian 12 binutils-x86-64-linux-gnu 2.40-2), run here"
LIBSFRAME_240_PROFILE = replace(
    LIBSFRAME_PROFILE,
    name="libsframe-2.40",
    title="GNU libsframe 2.40 (Debian 12; objdump/readelf --sframe), SFrame v1 only",
    reader="libsframe 2.40",
    sources=(LIBSFRAME_240, OBJDUMP_240_SEEN),
    versions=frozenset({C.VERSION_1}),
    required_flags={C.VERSION_1: C.F_FDE_SORTED},
    consumer={
        "header-version-unsupported": Fact(
            "sframe_decode accepts only SFRAME_VERSION_1; objdump 2.40 reports a v2 or v3 "
            "section as 'file format not recognized' (readelf: 'SFrame decode failure: Out "
            "of Memory.').", f"{LIBSFRAME_240}; {OBJDUMP_240_SEEN}"),
        "header-flags-required": Fact(
            "sframe_find_fre binary-searches only a section with FDE_SORTED (v1 has no "
            "FDE_FUNC_START_PCREL).", LIBSFRAME_240),
    },
    # the dumper's effects, and the strict assertion's abort
    effects={**LIBSFRAME_PROFILE.effects, "defect-fre-start-at-size": CRASHES},
    overrides={
        **LIBSFRAME_PROFILE.overrides,
        "defect-fre-start-at-size": Override(
            ERR, "sframe_decoder_get_fre asserts fre_start_addr < func_size (relaxed to <= only "
            "after PR libsframe/33131): gas 2.40's FRE at a function's end aborts objdump "
            "2.40.", f"{LIBSFRAME_240}; {OBJDUMP_240_SEEN}"),
    },
    notes=(
        Fact("Same decoder structure as 2.46: the native-endian path copies the FDE array and "
             "fre_len bytes without comparing them with the section size.", LIBSFRAME_240),
        Fact("objdump 2.40 dumps nothing, silently, for a zero-size .sframe.", OBJDUMP_240_SEEN),
    ))

_LLVM_DUMPS = (
    "fde-unsorted", "fde-overlap", "fde-pcmask-rep-size", "fde-reserved-bits", "fde-type-unknown",
    "fre-start-order", "fre-start-beyond-size", "fre-start-beyond-rep", "fre-word-count",
    "fre-datawords-size", "fre-flex-cfa-reg", "fre-flex-padding", "fre-register",
    "fre-mangled-ra-abi", "fre-s390x-regnum-v3",
    "layout-num-fres", "layout-fre-len", "layout-fre-bounds", "layout-fre-overlap",
    "layout-fde-array-overlap", "layout-trailing-bytes", "header-flags-unknown",
    "header-fixed-ra", "header-abi-endian", "header-abi-unknown",
)

LLVM_PROFILE = Profile(
    name="llvm-22",
    title="LLVM 22 SFrameParser (llvm-readobj/llvm-readelf --sframe)",
    reader="LLVM 22",
    sources=(LLVM, LLVM_H, LLVM_RELEASE),
    versions=frozenset({C.VERSION_2}),
    ignores_freoff=True,
    # 'unexpected end of data', an unsupported version or enum: llvm-readobj warns and
    # skips the section; it never loads PT_GNU_SFRAME (the elf group is nothing to it)
    effects={**_SFCHECK_ONLY, **_DUMPER_NOTHING,
             **dict.fromkeys(("fde-fre-type", "fre-size-code"), SKIPS),
             # a zero-size section: 'unexpected end of data at offset 0x0'
             "defect-ld-discarded-sframe": SKIPS,
             "layout-offsets-ignored": MISREADS},
    group_effects={**_DUMPER_GROUPS, "header": SKIPS, "layout": SKIPS},
    consumer={
        "header-version-unsupported": Fact(
            "SFrameParser::create: 'invalid/unsupported version number (N)' unless V2; "
            "llvm-readobj warns and skips the section.", LLVM),
        "layout-offsets-ignored": Fact(
            "getFREBase() = getFDEBase() + NumFDEs * sizeof(FDE): sfh_freoff is ignored, so "
            "FREs are read from the end of the FDE array (sfh_fdeoff is honoured).", LLVM_H),
        "header-byte-order-elf": Fact(
            "SFrameParser<E> reads the section in the ELF file's endianness: a section in the "
            "other order is 'invalid magic number (0xe2de)' and skipped.",
            f"{LLVM_H}; {LLVM_SEEN}"),
    },
    overrides={
        **_same(_LLVM_DUMPS, WARN,
                "SFrameParser makes no semantic checks and sfh_fre_len is never read: "
                "llvm-readobj dumps the values as stored, every read bounded by the section "
                "(SaturatingAdd in getDataSlice).", LLVM),
        **_same(("elf-no-segment", "elf-not-sorted", "elf-not-alloc", "elf-segment-mismatch",
                 "elf-fde-outside-text", "elf-abi-machine",
                 "layout-gap-bytes", "defect-ld-discarded-sframe"),
                WARN, "llvm-readobj --sframe dumps sections from the section table; it never "
                "loads PT_GNU_SFRAME, maps the text, compares e_machine with the ABI or "
                "searches the FDEs, and skips bytes no offset points at (an empty section "
                "is header-too-short).", LLVM),
        **_same(("fde-fre-type", "fre-size-code", "layout-fde-array-bounds",
                 "layout-fde-fres-bounds"), ERR,
                "'unsupported FRE type', 'unsupported FRE offset size' and 'unexpected end of "
                "data' errors stop the dump of the section.", LLVM),
    },
    notes=(
        Fact("Checks: preamble and header fit, magic, version == 2, aux header, FDE array and "
             "each FRE inside the section, FRE type and offset-size enums.", LLVM),
        Fact("The start address is PC-relative when FDE_FUNC_START_PCREL is set "
             "(getAbsoluteStartAddress); LLVM 22 emits v2 only.", LLVM),
    ))

# What each reader prints for a zero-size .sframe (run on one built here): every reader
# refuses it, so header-too-short names them.
EMPTY_SECTION_READERS = (
    "llvm-readobj 22/23: 'invalid sframe section: unexpected end of data at offset 0x0'",
    "objdump/readelf 2.47: 'SFrame decode failure: Corrupt SFrame.'",
    "the kernel and glibc: no header to read",
)
# Profiles whose reader finds .sframe through the section table only and never reads
# PT_GNU_SFRAME: findings on a segment with no section header are not errors under them.
SECTION_TABLE_ONLY = frozenset({LLVM_PROFILE.name, LIBSFRAME_PROFILE.name,
                                LIBSFRAME_240_PROFILE.name})


def empty_section_message(p: Profile) -> str:
    """header-too-short's message for a zero-size .sframe in a linked file."""
    if p.name == STRICT.name:
        return "0 bytes: every reader refuses it (" + "; ".join(EMPTY_SECTION_READERS) + ")"
    return f"0 bytes: {p.reader} refuses it (no SFrame header to read)"


def reads_segment(p: Profile) -> bool:
    return p.name not in SECTION_TABLE_ONLY


# Each profile once, in the order `sfcheck profiles` lists them.
LISTED: tuple[Profile, ...] = (
    STRICT, KERNEL_PROFILE, RFC2023_PROFILE, GLIBC_PROFILE, LIBSFRAME_PROFILE,
    LIBSFRAME_240_PROFILE, LLVM_PROFILE)
# Every name --profile takes: a profile's own name, then its aliases (`kernel`: the latest
# kernel posting), each mapped to the one Profile object.
PROFILES: dict[str, Profile] = {name: p for p in LISTED for name in (p.name, *p.aliases)}
PROFILE_NAMES: tuple[str, ...] = tuple(PROFILES)


def get(name: str) -> Profile:
    try:
        return PROFILES[name]
    except KeyError:
        raise ValueError(f"unknown profile: {name} (one of {', '.join(PROFILE_NAMES)})") from None


def explain(rule_id: str, group: str, severity: Severity) -> list[str]:
    """Per profile, what it says about a rule (`sfcheck explain RULE`): the severity it
    reports the rule at, what its reader does (sfcheck.effects), and why, with the source.
    A consumer rule is left out of the profiles that do not run it."""
    consumer_rule = any(rule_id in p.consumer for p in LISTED)
    lines = []
    for p in LISTED:
        if p is STRICT or (consumer_rule and rule_id not in p.consumer):
            continue
        why = ""
        sev: Severity | None = severity
        if rule_id in p.consumer:
            fact = p.consumer[rule_id]
            sev, why = Severity.ERROR, f" {fact.text} [{fact.source}]"
        elif rule_id in p.overrides:
            o = p.overrides[rule_id]
            sev, why = o.severity, f" {o.why} [{o.source}]"
        if sev is None:
            lines.append(f"--profile {p.name}: not reported.{why}")
            continue
        effect = p.effect(rule_id, group, sev)
        said = "" if effect is None else ", " + EFFECT_TEXT[effect]
        lines.append(f"--profile {p.name}: {sev}{said}.{why}")
    return lines


def describe(p: Profile) -> list[str]:
    """The profile's facts with their sources, as text lines (`sfcheck profiles`)."""
    lines = [f"{p.name}: {p.title}"]
    if p.name == STRICT.name:
        return lines + [f"  {n.text}" for n in p.notes]
    lines.append(f"  versions: {', '.join(f'v{v}' for v in sorted(p.versions))}")
    for v in sorted(p.required_flags):
        lines.append(f"  required flags (v{v}): {flag_names(p.required_flags[v])}")
    lines.append("  sources: " + "; ".join(p.sources))
    lines.append("  consumer rules (only under a profile; see `sfcheck rules` for severities):")
    for rid, fact in p.consumer.items():
        lines.append(f"    {rid}: {fact.text} [{fact.source}]")
    lines.append("  severity overrides:")
    for rid, o in p.overrides.items():
        sev = "not reported" if o.severity is None else str(o.severity)
        lines.append(f"    {rid} -> {sev}: {o.why} [{o.source}]")
    if p.aliases:
        lines.insert(1, f"  also named: {', '.join(p.aliases)}")
    lines.append("  what the reader does with an error finding, by rule group (sfcheck explain "
                 "RULE gives each rule):")
    lines.append("    " + "; ".join(f"{g}: {EFFECT_TEXT[e]}" for g, e in p.group_effects.items())
                 + "; a warning or info: nothing")
    named = [f"{rid}: {EFFECT_TEXT[e]}" for rid, e in p.effects.items() if e is not None]
    if named:
        lines.append("    by rule: " + "; ".join(named))
    if p.notes:
        lines.append("  notes:")
        lines.extend(f"    {n.text} [{n.source}]" for n in p.notes)
    return lines
