"""What pyproject.toml cannot declare (or, for setuptools 66, only as a "beta" warning): the
packages, the optional C accelerators (the fast path's FRE walk, sfcheck/walk/_frewalk.c;
the .eh_frame reader, sfcheck/dwarf/_cfirun.c; optional=True: without a compiler or Python
headers sfcheck runs their pure-Python references), the man page and bash completion
generated at build time, and the license metadata in the form the running setuptools knows."""

import os
import subprocess
import sys

import setuptools
from setuptools import Extension, find_namespace_packages, setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
# Relative to the source directory, as data_files paths are; under build/, which the sdist
# leaves out.
MAN_PAGE = os.path.join("build", "generated", "man", "sfcheck.1")
COMPLETION = os.path.join("build", "generated", "completions", "sfcheck")


class BuildPyWithData(build_py):
    """build_py, then the man page (from the argument parser, sfcheck/manpage.py) and the
    bash completion hook (argcomplete's registration for `sfcheck`)."""

    def run(self) -> None:
        super().run()
        for path in (MAN_PAGE, COMPLETION):
            self.mkpath(os.path.dirname(path))
        # A child with the source tree first on its path: an isolated build cannot import
        # the sfcheck being built, and a different installed sfcheck must not answer.
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            p for p in (HERE, os.environ.get("PYTHONPATH")) if p))
        subprocess.run([sys.executable, "-m", "sfcheck.manpage", MAN_PAGE], env=env,
                       cwd=HERE, check=True)
        from argcomplete import shellcode  # a build requirement (pyproject.toml)

        with open(COMPLETION, "w", encoding="utf-8") as f:
            f.write(shellcode(["sfcheck"], shell="bash"))


def license_metadata() -> dict[str, str]:
    """PEP 639's License-Expression where setuptools has it (77 and later); the older
    License field for the setuptools of Debian bookworm (66), which rejects the new form."""
    major = int(setuptools.__version__.split(".")[0])
    return {"license_expression": "MIT"} if major >= 77 else {"license": "MIT"}


setup(
    # Namespace packages too: data folders without __init__.py (package data) are packages
    # to setuptools, which warns about any it is not told of.
    packages=find_namespace_packages(include=["sfcheck*"], exclude=["*.__pycache__"]),
    package_data={"sfcheck.report": ["*.schema.json"], "sfcheck.dump": ["*.schema.json"],
                  "sfcheck.survey": ["*.schema.json"],
                  "sfcheck.integrations": ["xdg/rpmlint/*.toml"]},  # rpmlint's config
    ext_modules=[Extension("sfcheck.walk._frewalk", ["sfcheck/walk/_frewalk.c"], optional=True),
                 Extension("sfcheck.dwarf._cfirun", ["sfcheck/dwarf/_cfirun.c"], optional=True)],
    cmdclass={"build_py": BuildPyWithData},
    data_files=[("share/man/man1", [MAN_PAGE]),
                ("share/bash-completion/completions", [COMPLETION])],
    **license_metadata(),
)
