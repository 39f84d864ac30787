"""The ELF layer: finds SFrame data, and the context needed to check it, in ELF files.

``loader.load_elf`` is the way in; ``model`` holds what it returns (the only part the
rules read); ``headers`` the ELF header tables and bounded reads, ``relocations`` and
``symbols`` what relocatable objects and symbol tables need, ``constants`` the numbers.
Nothing is imported here, so the rules' ``elf.model`` loads without the loader.
"""
