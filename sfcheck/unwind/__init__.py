"""Stack unwinding with SFrame data alone: tables, memory models, the walk, `sfcheck unwind`."""

from .core import CoreFile, Thread
from .memory import Memory, SparseMemory
from .table import SFrameTable, TableSet
from .unwinder import DEFAULT_MAX_FRAMES, Frame, Registers, Stop, StopReason, Unwinder, Walk

__all__ = ["DEFAULT_MAX_FRAMES", "CoreFile", "Frame", "Memory", "Registers", "SFrameTable",
           "SparseMemory", "Stop", "StopReason", "TableSet", "Thread", "Unwinder", "Walk"]
