"""SFrame format layer: bytes in, model out, and back. No ELF knowledge here.

constants.py and abi.py hold the format's and each ABI's facts; reader.py bounded
reads; decode.py/encode.py the record-wise codec over model.py; fde_table.py the
column-wise FDE-table reader (and, via Header.start_base, the one function-start
formula); fre_blocks.py the regex FRE walk; datawords.py what data words mean;
fre_info_table.py the FRE info byte decoded once; bounds.py the FRE sub-section bounds.
"""

from . import constants
from .decode import Decoder, decode, decode_header
from .encode import encode
from .layout import build_section
from .model import FDE, FRE, Header, Section, fde_info, fre_info, make_fre

__all__ = ["FDE", "FRE", "Decoder", "Header", "Section", "build_section", "constants",
           "decode", "decode_header", "encode", "fde_info", "fre_info", "make_fre"]
