"""Models of real SFrame readers: what one reader's code does with a section, bugs included.

Each model is written from a reading of the reader's source (the files, commits and
message-ids named in each model's docstring and in sfcheck/profiles/), never copied from
it. A model answers a PC lookup with an `Outcome`; `compare.py` runs a model and sfcheck's
reference table (sfcheck/unwind/table.py) on the same PCs and reports where they part.
"""
