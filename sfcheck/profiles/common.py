"""What several readers' tables share: sfcheck's own gates, the runtime readers' and the
dumpers' effects per rule group, and the runtime readers' fact about relocatable objects."""

from __future__ import annotations

from ..effects import MISREADS, NOTHING, REFUSES
from .model import Fact

# Said of every runtime reader (kernel, glibc): they load linked files only.
NO_OBJECTS = Fact("Runtime readers never see a .o: an object is asked what GNU ld will make of "
                  "it (object-version-unsupported), not judged by the consumer rules "
                  "(sfcheck/rules/linkable.py).", "sfcheck")

# What each reader does with each finding (sfcheck.effects). Group defaults apply to error
# findings a profile does not name; `sfcheck explain RULE` prints the result per profile.
SFCHECK_ONLY: dict[str, str | None] = {
    # sfcheck's own gates, not a statement about any reader: counted as under strict
    "elf-no-sframe": None, "elf-findings-capped": None, "elf-sframe-sections-capped": None}
# The runtime readers (kernel, glibc): an error they meet fails the lookup or the registration.
RUNTIME_GROUPS = {"header": REFUSES, "layout": MISREADS, "fde": MISREADS, "fre": MISREADS,
                  "elf": MISREADS, "semantic": MISREADS, "defect": MISREADS}

# The dumpers (objdump/readelf --sframe, llvm-readobj --sframe) print what is stored: the
# .eh_frame cross-check, producer defects, ELF placement, the lookup-only flags and orders
# are nothing to them.
DUMPER_NOTHING = dict.fromkeys((
    "header-flags-required", "header-fixed-ra", "header-abi-unknown", "header-abi-endian",
    "fde-unsorted", "fde-pcmask-rep-size", "layout-gap-bytes", "elf-abi-machine"), NOTHING)
DUMPER_GROUPS = {"header": REFUSES, "layout": MISREADS, "fde": NOTHING, "fre": NOTHING,
                 "elf": NOTHING, "semantic": NOTHING, "defect": NOTHING}
