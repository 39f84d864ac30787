"""Stack unwinding with SFrame data alone: tables, memory models, the walk (the command,
`sfcheck unwind`, is sfcheck/cli/unwind.py).

Names load on first use (PEP 562): importing the package loads neither the unwinder nor
pyelftools until a name from them is asked for.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .core import CoreFile
    from .memory import Memory, SparseMemory
    from .notes import Thread
    from .table import SFrameTable, TableSet
    from .unwinder import DEFAULT_MAX_FRAMES, Frame, Registers, Stop, StopReason, Unwinder, Walk

_HOME = {"CoreFile": "core", "Thread": "notes", "Memory": "memory", "SparseMemory": "memory",
         "SFrameTable": "table", "TableSet": "table", "DEFAULT_MAX_FRAMES": "unwinder",
         "Frame": "unwinder", "Registers": "unwinder", "Stop": "unwinder",
         "StopReason": "unwinder", "Unwinder": "unwinder", "Walk": "unwinder"}

__all__ = ["CoreFile", "DEFAULT_MAX_FRAMES", "Frame", "Memory", "Registers", "SFrameTable",
           "SparseMemory", "Stop", "StopReason", "TableSet", "Thread", "Unwinder", "Walk"]


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{home}", __name__), name)
    globals()[name] = value
    return value
