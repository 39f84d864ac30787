"""The catalogue commands: `sfcheck rules`, `sfcheck explain RULE-ID` and `sfcheck profiles`
(what sfcheck checks and what each consumer profile says, from the rule and profile data)."""

from __future__ import annotations

import argparse
import sys

from .. import completion
from ..report.escape import escape
from . import EXIT_OK, EXIT_USAGE
from .args import Formatter


def add_rules(sub: argparse._SubParsersAction) -> None:
    rules = sub.add_parser(
        "rules", help="list the rules by group", formatter_class=Formatter,
        description="List every rule with its ID, default severity and title, by group; "
                    "with GROUP, only that group's rules (with a rule ID, that rule). "
                    "`sfcheck explain RULE-ID` explains one.")
    rules.add_argument("groups", nargs="*", metavar="GROUP",
                       help="only these groups (header, layout, fde, fre, elf, semantic, "
                            "defect) or rule IDs"
                       ).completer = completion.groups  # type: ignore[attr-defined]
    rules.set_defaults(func=run_rules)


def add_explain(sub: argparse._SubParsersAction) -> None:
    explain = sub.add_parser(
        "explain", help="explain one rule", formatter_class=Formatter,
        description="Explain a rule: what it checks, the source of the requirement, a fix "
                    "hint, and what each consumer profile says about it.")
    explain.add_argument("rule", metavar="RULE-ID", help="a rule ID, as `sfcheck rules` "
                         "lists them").completer = completion.rule_ids  # type: ignore[attr-defined]
    explain.set_defaults(func=run_explain)


def add_profiles(sub: argparse._SubParsersAction) -> None:
    profiles = sub.add_parser(
        "profiles", help="list the consumer profiles (--profile) with their sources",
        formatter_class=Formatter,
        description="Print what each reader accepts and rejects, the rules it turns on and "
                    "the severities it changes, each with the source it comes from.")
    profiles.add_argument("names", nargs="*", metavar="NAME", help="only these profiles"
                          ).completer = completion.profiles  # type: ignore[attr-defined]
    profiles.set_defaults(func=run_profiles)


def run_rules(args: argparse.Namespace) -> int:
    from ..rules import GROUPS, RULES
    from ..wording import did_you_mean

    groups = [g for g in GROUPS if any(r.group == g for r in RULES.values())]
    for name in args.groups:  # a group, or one rule ID (its line under its group)
        if name not in groups and name not in RULES:
            hint = did_you_mean(name, [*groups, *RULES])
            print(escape(f"sfcheck: error: no rule group or rule {name!r}{hint}; groups: "
                         f"{', '.join(groups)}"), file=sys.stderr)
            return EXIT_USAGE
    wanted = set(args.groups)
    for group in groups:
        rules = [r for r in RULES.values() if r.group == group
                 and (not wanted or group in wanted or r.id in wanted)]
        if not rules:
            continue
        print(f"{group}:")
        for r in rules:
            print(f"  {r.id:<28} {str(r.severity):<8} {r.title}")
    return EXIT_OK


def run_explain(args: argparse.Namespace) -> int:
    import textwrap

    from ..rules import GROUPS, RULES
    from ..wording import did_you_mean

    r = RULES.get(args.rule)
    if r is None:
        hint = (f": a group; `sfcheck rules {args.rule}` lists its rules" if args.rule in GROUPS
                else did_you_mean(args.rule, list(RULES)) or " (see `sfcheck rules`)")
        print(escape(f"sfcheck: error: unknown rule {args.rule!r}{hint}"), file=sys.stderr)
        return EXIT_USAGE
    print(f"{r.id} ({r.group}, default severity {r.severity}): {r.title}\n")
    print(textwrap.fill(r.explanation, 78) + "\n")
    print(textwrap.fill("Fix: " + r.hint, 78))
    _explain_profiles(r.id)
    return EXIT_OK


def _explain_profiles(rule_id: str) -> None:
    """What each consumer profile says about a rule: severity, what its reader does, and
    why, with the source."""
    import textwrap

    from ..profiles import explain
    from ..rules import RULES

    r = RULES[rule_id]
    lines = explain(rule_id, r.group, r.severity)
    if lines:
        print("\nUnder consumer profiles (see `sfcheck profiles`):")
        for line in lines:
            print(textwrap.fill(line, 78, initial_indent="  ", subsequent_indent="    ",
                                break_on_hyphens=False, break_long_words=False))


def run_profiles(args: argparse.Namespace) -> int:
    from ..profiles import PROFILES, describe

    unknown = [n for n in args.names if n not in PROFILES]
    if unknown:
        from ..wording import did_you_mean

        print(escape(f"sfcheck: error: unknown profile {unknown[0]!r}"
                     f"{did_you_mean(unknown[0], PROFILES)} (one of {', '.join(PROFILES)})"),
              file=sys.stderr)
        return EXIT_USAGE
    if not args.names:
        for line in profile_table():
            print(line)
        return EXIT_OK
    for i, name in enumerate(args.names):
        if i:
            print()
        for line in describe(PROFILES[name]):
            print(line)
    return EXIT_OK


TABLE_WIDTH = 100  # `sfcheck profiles` fits a 100-column terminal


def profile_table(width: int = TABLE_WIDTH) -> list[str]:
    """One row per profile, from the profile data: versions, required flags, what else it
    rejects (wrapped in its column), then each profile's sources, all within `width`."""
    import textwrap

    from ..profiles import LISTED, flag_names

    rows = [("PROFILE", "VERSIONS", "REQUIRED FLAGS", "ALSO REJECTS")]
    for p in LISTED:
        flags = sorted({flag_names(f) for f in p.required_flags.values()}) or ["none"]
        rejects = [what for on, what in (
            (p.rejects_auxhdr, "auxhdr"), (p.rejects_empty, "num_fdes/num_fres 0"),
            (p.ignores_fdeoff, "fdeoff != 0"), (p.ignores_freoff, "a gap before the FREs"),
            (p.increasing_starts, "equal FDE starts"),
            (p.one_text_segment, "FDEs in several PF_X segments")) if on]
        versions = ", ".join(f"v{v}" for v in sorted(p.versions)) if p.consumer or \
            p.name != "strict" else "all"
        rows.append((p.name, versions, "; ".join(flags), ", ".join(rejects) or "-"))
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    indent = sum(widths) + 2 * len(widths)
    lines = []
    for row in rows:
        head = "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=False)) + "  "
        # break at the commas between items, never inside one
        rest = textwrap.wrap(row[3].replace(" ", "\0").replace(",\0", ", "),
                             width - indent) or [""]
        lines.append((head + rest[0].replace("\0", " ")).rstrip())
        lines.extend(" " * indent + more.replace("\0", " ") for more in rest[1:])
    lines += ["", "Sources:"]
    for p in LISTED:
        for source in p.sources[:1]:
            lines += textwrap.wrap(f"{p.name}: {source}", width, initial_indent="  ",
                                   subsequent_indent="    ", break_long_words=False,
                                   break_on_hyphens=False)
    aliases = [f"`{a}` is {p.name}" for p in LISTED for a in p.aliases]
    return [*lines, "", "`sfcheck profiles NAME` prints every fact and override with its source"
            + (f"; {', '.join(aliases)}." if aliases else ".")]
