"""Shell completion (argcomplete, an optional extra) for the real parser.

The completers here are plain functions argcomplete calls with the word being typed;
the parser holds them from its construction (cheap: they import the rule catalogue or
the profiles only when called). argcomplete itself is imported only when the shell
asks (`_ARGCOMPLETE` set), so a normal run never loads it.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Sequence

# What `sfcheck` alone accepts before a command; anything else first means `check`
# (cli.main inserts it), and completion follows the same rule.
TOP_LEVEL_OPTIONS = ("-h", "--help", "--version")


def rule_ids(prefix: str, **_: object) -> list[str]:
    from .rules import RULES

    return [r for r in RULES if r.startswith(prefix)]


def groups(prefix: str, **_: object) -> list[str]:
    from .rules import GROUPS, RULES

    used = {r.group for r in RULES.values()}
    return [g for g in GROUPS if g in used and g.startswith(prefix)]


def rules_and_groups(prefix: str, **kwargs: object) -> list[str]:
    """--enable/--disable: a group or a rule ID."""
    return groups(prefix) + rule_ids(prefix)


def profiles(prefix: str, **_: object) -> list[str]:
    from .profiles import PROFILE_NAMES

    return [p for p in PROFILE_NAMES if p.startswith(prefix)]


def nothing(prefix: str, **_: object) -> list[str]:
    """A number or an address: no candidates (rather than file names)."""
    return []


def _numeric_values_complete_nothing(parser: argparse.ArgumentParser) -> None:
    """Options and arguments taking a number (`-j N`, `--vma ADDR`, `PID`) get no file
    names offered; every parser of every command is walked."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                _numeric_values_complete_nothing(sub)
        elif (getattr(action, "completer", None) is None and action.choices is None
              and action.nargs != 0 and action.metavar in ("N", "ADDR", "PID")):
            action.completer = nothing  # type: ignore[attr-defined]


def _finder_class() -> type:
    import argcomplete

    class Finder(argcomplete.CompletionFinder):
        """argcomplete's finder, told that `sfcheck FILE...` means `sfcheck check FILE...`."""

        def _init_debug_stream(self) -> None:
            # fd 9 is argcomplete's debug channel: taken only when debugging is asked for,
            # so a host process (pytest) keeps its own fd 9
            if "_ARC_DEBUG" in os.environ:
                super()._init_debug_stream()

        def _get_completions(self, comp_words: Sequence[str], cword_prefix: str,
                             *rest: object) -> list[str]:
            words = list(comp_words)

            def get(w: list[str]) -> list[str]:
                return super(Finder, self)._get_completions(w, cword_prefix, *rest)

            if len(words) > 1:  # the first word is typed: it decides, as in cli.main
                from .cli import SUBCOMMANDS

                if words[1] in SUBCOMMANDS or words[1] in TOP_LEVEL_OPTIONS:
                    return get(words)
                return get([words[0], "check", *words[1:]])
            # The first word: a command, a top-level option, or check's (a file, an option).
            got = get(words)
            typed_option = cword_prefix.startswith("-")
            extra = [c for c in get([*words, "check"])
                     if c not in got and (typed_option or not c.startswith("-"))]
            return got + extra

    return Finder


def finder() -> Callable[..., None] | None:
    """argcomplete's completion entry point for sfcheck's parser, or None when argcomplete
    is not installed."""
    try:
        cls = _finder_class()
    except ImportError:
        return None
    return cls()


def complete(parser: argparse.ArgumentParser, exit_method: Callable[[int], object] = os._exit,
             output_stream: object = None) -> None:
    """When the shell asks (`_ARGCOMPLETE` set): print the candidates and exit."""
    if "_ARGCOMPLETE" not in os.environ:
        return
    found = finder()
    if found is None:
        return
    _numeric_values_complete_nothing(parser)
    found(parser, exit_method=exit_method, output_stream=output_stream)
