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
from nn2tosa.ir.limit_checks import check_graph
from nn2tosa.ir.registry import register_dialect_module

# Sniffing order matters: the TOSA and MPS checks look at a file identifier; Arm NN files
# have none (Arm NN never writes "ARMN"), so they are recognised by structure, last.
FORMAT_MODULES = {
    "tosa": "nn2tosa.frontend.tosa",
    "mps": "nn2tosa.frontend.mps",
    "armnn": "nn2tosa.frontend.armnn",
}

# The source formats' dialects (op definitions), imported when one of their ops is first looked up.
register_dialect_module("armnn", "nn2tosa.frontend.armnn.dialect")
register_dialect_module("mps", "nn2tosa.frontend.mps.dialect")
register_dialect_module("executorch", "nn2tosa.frontend.mps.program")


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


def load(source: str | os.PathLike | bytes | memoryview, name: str | None = None, *,
         partitions: bool = False) -> list[Graph]:
    """Read a model file (path or bytes) into one graph per partition (usually one). A .pte is one
    graph for the whole program; `partitions` reads its MPS delegates one by one instead."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = memoryview(source)
        name = name or "<bytes>"
    else:
        name = name or str(source)
        data = map_file(source)
    try:
        if len(data) < 8:
            raise InvalidInputError(f"{len(data)} bytes is too short for any model format (every one needs 8 bytes: "
                                    "a flatbuffer's root offset and a file identifier)", where="offset 0x0")
        fmt = sniff(data)
        if fmt is None:
            raise InvalidInputError(f"not a recognised model: {_tried(data)}", where="offset 0x0")
        reader = _module(fmt)
        assert reader is not None  # sniff names only formats whose reader imports
        graphs = reader.read(data, name, partitions=True) if partitions and fmt == "mps" else reader.read(data, name)
        for g in graphs:
            g.meta.setdefault("format", fmt)
            check_graph(g)  # declared sizes, ranks, list lengths, constants, structure: before any pass
        return graphs
    except Nn2TosaError as e:
        raise e.located(name) if hasattr(e, "located") else e


def _tried(data: memoryview) -> str:
    """What the first bytes were taken for by each reader, for the error on an unrecognised file."""
    ident = bytes(data[4:8])
    root = int.from_bytes(data[:4], "little")
    return (f"bytes 4..8 are {ident!r}, not a TOSA identifier (b'TOSA'), an MPS payload's (b'MP00') or an "
            f"ExecuTorch .pte's (b'ET' and two digits); as an Arm NN flatbuffer (no identifier), its root "
            f"offset 0x{root:x} does not lead to a SerializedGraph table with layers")
