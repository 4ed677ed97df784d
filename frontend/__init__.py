"""Source format readers. `load` sniffs the format from the content and dispatches.

Each format is a module with `sniff(data: memoryview) -> bool` and
`read(data: memoryview, name: str) -> list[Graph]`; it is imported only when needed.
"""
from __future__ import annotations

import importlib
import os
from types import ModuleType

from nn2tosa.diagnostics import InvalidInputError, Nn2TosaError
from nn2tosa.fileio import map_file
from nn2tosa.ir import Graph
from nn2tosa.limits import check_graph

# Sniffing order matters: the TOSA and MPS checks look at a file identifier; Arm NN files
# have none (Arm NN never writes "ARMN"), so they are recognised by structure, last.
FORMAT_MODULES = {
    "tosa": "nn2tosa.frontend.tosa",
    "mps": "nn2tosa.frontend.mps",
    "armnn": "nn2tosa.frontend.armnn",
}


def _module(fmt: str) -> ModuleType | None:
    try:
        return importlib.import_module(FORMAT_MODULES[fmt])
    except ModuleNotFoundError as e:
        if e.name != FORMAT_MODULES[fmt]:
            raise
        return None  # that reader is not part of this build yet


def sniff(data: memoryview) -> str | None:
    """The format name of `data`, or None when no reader recognises it."""
    for fmt in FORMAT_MODULES:
        module = _module(fmt)
        if module is not None and module.sniff(data):
            return fmt
    return None


def load(source: str | os.PathLike | bytes | memoryview, name: str | None = None) -> list[Graph]:
    """Read a model file (path or bytes) into one graph per partition (usually one)."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = memoryview(source)
        name = name or "<bytes>"
    else:
        name = name or str(source)
        data = map_file(source)
    try:
        if len(data) < 8:
            raise InvalidInputError(f"{len(data)} bytes is too short for any model format")
        fmt = sniff(data)
        if fmt is None:
            raise InvalidInputError("not a recognised model (expected an Arm NN .armnn, an MPS payload or .pte, or a TOSA .tosa)")
        graphs = _module(fmt).read(data, name)
        for g in graphs:
            g.meta.setdefault("format", fmt)
            check_graph(g)  # declared sizes, ranks, list lengths, constants, structure: before any pass
        return graphs
    except Nn2TosaError as e:
        raise e.located(name) if hasattr(e, "located") else e
