"""DWARF call-frame information, as far as the SFrame cross-check needs it.

ehframe.py    `.eh_frame` CIEs and FDEs, each FDE's program run to rows
callframe.py  the call-frame program interpreter and its work bounds
cursor.py     bounded reads inside one entry (fields, LEB128, DW_EH_PE pointers)
cfi.py        the interpreter's rules mapped onto SFrame's (CFA, RA, FP) terms
expr.py       the DWARF expressions gas and ld write (pyelftools for the rest)
leb128.py     the one LEB128 reader the others use
"""
