"""The Python API: load a model, convert it to TOSA, get MLIR or a flatbuffer out."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from nn2tosa.diagnostics import Unsupported, UnsupportedError
from nn2tosa.ir import Graph


def load(source: str | os.PathLike | bytes | memoryview) -> Graph | list[Graph]:
    """Read a model: one Graph, or a list of them for a multi-partition .pte."""
    from nn2tosa.frontend import load as load_all

    graphs = load_all(source)
    return graphs[0] if len(graphs) == 1 else graphs


def tosa_pipeline(source_format: str) -> list[str]:
    """The passes that take a source-level graph to a TOSA-level graph."""
    return [f"legalize-{source_format}", "canonicalize", "lower-to-tosa"]


@dataclass
class Result:
    """A converted graph (TOSA level) and what was learnt converting it."""

    graph: Graph
    report: dict[str, Any] = field(default_factory=dict)

    def write(self, path: str, kind: str, *, elide_constants: bool = False) -> None:
        raise UnsupportedError([Unsupported(kind, path, "emitters are not implemented yet")])


def convert(
    graph_or_path: Graph | str | os.PathLike,
    *,
    profile: str | None = None,
    passes: list[str] | None = None,
    source: str | None = None,
) -> Result:
    """Convert a source graph (or a model file with one partition) to TOSA."""
    from nn2tosa.passes import PassManager, available_passes

    if isinstance(graph_or_path, Graph):
        graph = graph_or_path.copy()
    else:
        loaded = load(graph_or_path)
        if isinstance(loaded, list):
            raise ValueError(f"{graph_or_path} has {len(loaded)} partitions: convert each graph of load()")
        graph = loaded
    fmt = graph.meta.get("format", "unknown")
    pipeline = passes if passes is not None else tosa_pipeline(fmt)
    missing = [p for p in pipeline if p not in available_passes()]
    if missing:
        raise UnsupportedError(
            [Unsupported(fmt, source or graph.name, f"pass {p} is not implemented yet") for p in missing]
        )
    PassManager.from_names(pipeline, verify_each=False).run(graph)
    return Result(graph)
