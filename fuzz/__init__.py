"""Fuzzing sfcheck: atheris harnesses (section, elf, unwind, archive, libsframe),
the structure-aware mutator, and the campaign runner (`python -m fuzz`)."""
