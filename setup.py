"""Only the optional C accelerator of the fast path's FRE walk (sfcheck/_frewalk.c); all
metadata is in pyproject.toml. optional=True: without a compiler or Python headers the
build warns and sfcheck runs its pure-Python walk (rules/section_fast.py)."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("sfcheck._frewalk", ["sfcheck/_frewalk.c"], optional=True)])
