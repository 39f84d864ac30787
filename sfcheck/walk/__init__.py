"""The walk over one SFrame section: the engine that runs the rules' checks.

section.py is the reference pass (header, layout, FDEs, FREs through the decoder; it emits
every finding); fast.py decides which runs of FDEs that pass would accept silently, from
fre_patterns.py (FRE byte patterns built from rules/fre.py's predicates), fde_shapes.py
(rules/fde.py's check once per FDE shape) and the optional C walk _frewalk.c; context.py
is what a check reports into. Nothing is imported here: the rules import walk.context
and the walk imports the rules.
"""
