"""SFrame format layer: bytes in, model out, and back. No ELF knowledge here."""

from . import constants
from .decode import Decoder, decode, decode_header
from .encode import encode
from .layout import build_section
from .model import FDE, FRE, Header, Section, fde_info, fre_info, make_fre

__all__ = ["FDE", "FRE", "Decoder", "Header", "Section", "build_section", "constants",
           "decode", "decode_header", "encode", "fde_info", "fre_info", "make_fre"]
