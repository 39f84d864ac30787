"""The rpmlint 2 check `SFrameCheck`: sfcheck's findings on each ELF file of a binary RPM as
rpmlint issues (`sframe-<rule-id>`), so rpmlint's Filters, [Scoring] and --explain apply.

rpmlint loads a check named in `Checks` only as `rpmlint.checks.<Name>` (see
docs/rpmlint.md): run it through `python -m sfcheck.integrations.rpmlint_run`, which makes
this module that name, or install the one-line shim that module describes.
"""

from __future__ import annotations

import stat
import sys

from rpmlint.checks.AbstractCheck import AbstractFilesCheck

from ..checker import check_elf
from .rpmlint_map import ConfigError, descriptions, failed, issues, settings

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at run time
if TYPE_CHECKING:
    from rpmlint.config import Config
    from rpmlint.filter import Filter
    from rpmlint.pkg import Pkg

_ELF_MAGIC = b"\x7fELF"


class SFrameCheck(AbstractFilesCheck):
    def __init__(self, config: Config, output: Filter) -> None:
        super().__init__(config, output, r".*")
        try:
            self.settings = settings(config.configuration)
        except ConfigError as exc:
            # rpmlint's own wording for a configuration it cannot use, and its exit status
            # for one (sfcheck.cli exits 2); a traceback would hide the line that matters.
            print(f"(none): E: {exc}", file=sys.stderr)
            sys.exit(2)
        # rpmlint takes descriptions from its own descriptions/*.toml only; checks with
        # tags of their own add them here (as its FilesCheck and TagsCheck do), which is
        # also what lets a [Descriptions] entry of the config replace one.
        output.error_details.update(descriptions())

    def check_file(self, pkg: Pkg, filename: str) -> None:
        pkgfile = pkg.files[filename]
        if not stat.S_ISREG(pkgfile.mode):
            return  # links and directories: the file they name is checked as itself
        try:
            with open(pkgfile.path, "rb") as fh:
                if fh.read(4) != _ELF_MAGIC:
                    return
        except OSError:
            return  # rpmlint reports files it could not extract itself
        try:
            result = check_elf(pkgfile.path, path=filename,
                               options=self.settings.options)
        except Exception as exc:  # one file must not end the whole run (rpmlint exits 3)
            found = [failed(filename, exc)]
        else:
            found = list(issues(filename, result, self.settings))
        for level, tag, details in found:
            self.output.add_info(level, pkg, tag, details)
