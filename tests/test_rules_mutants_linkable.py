"""linkable.check_object's finding: rule, message naming the object's version and what
the reader takes, and offset (the mutation run's survivors in check_object)."""

from __future__ import annotations

from sfcheck.format import FDE, build_section, encode, fde_info, make_fre
from sfcheck.format import constants as C
from sfcheck.format.decode import decode_header
from sfcheck.profiles import get
from sfcheck.rules.linkable import check_object
from sfcheck.walk.context import SectionContext


def header(version: int):
    fde = FDE(0x1000, 0x40, fde_info(0), (make_fre(0, (8,)),))
    return decode_header(encode(build_section(version, C.ABI_AMD64_LE, [fde])))


def findings(profile: str, version: int) -> list[tuple[str, str, int | None]]:
    ctx = SectionContext("a.o", ".sframe", 0, b"", relocatable=True)
    check_object(ctx, get(profile), header(version))
    return [(f.rule, f.message, f.location.offset) for f in ctx.findings]


def test_a_version_the_reader_does_not_take() -> None:
    assert findings("glibc-2.42", 3) == [(
        "object-version-unsupported", "a file GNU ld links from this object has SFrame v3 "
        "(or none); glibc 2.42 reads v2", 2)]


def test_a_version_it_takes_or_no_consumer() -> None:
    assert findings("glibc-2.42", 2) == []
    assert findings("strict", 1) == []


def test_a_reader_of_several_versions_is_listed_in_order() -> None:
    """A user's profile that reads v1 and v2 (the built-in runtime readers take one): the
    versions it takes, joined by ", " (a mutant's "XX, XX" joiner survived the rules run)."""
    from sfcheck.profiles.model import Profile
    glibc = get("glibc-2.42")
    two = Profile("two", "two versions", "a reader", versions=frozenset({2, 1}),
                  consumer=glibc.consumer, notes=glibc.notes)
    ctx = SectionContext("a.o", ".sframe", 0, b"", relocatable=True)
    check_object(ctx, two, header(3))
    assert [(f.rule, f.message, f.location.offset) for f in ctx.findings] == [(
        "object-version-unsupported", "a file GNU ld links from this object has SFrame v3 "
        "(or none); a reader reads v1, v2", 2)]
