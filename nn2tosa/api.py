"""The Python API: load a model, convert it to TOSA, get MLIR or a flatbuffer out."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from nn2tosa.diagnostics import Unsupported, UnsupportedError, UsageError
from nn2tosa.ir import Graph

# Layouts Result.write can give a .tosa file (the CLI's --tosa-version).
TOSA_VERSIONS = ("1.0", "0.100-draft")


def load(source: str | os.PathLike | bytes | memoryview) -> Graph | list[Graph]:
    """Read a model: one Graph, or a list of them for a multi-partition .pte."""
    from nn2tosa.frontend import load as load_all

    graphs = load_all(source)
    return graphs[0] if len(graphs) == 1 else graphs


def tosa_pipeline(source_format: str) -> list[str]:
    """The passes that take a source-level graph to a TOSA-level graph (none for a .tosa file,
    whose graph is TOSA-level already)."""
    if source_format == "tosa":
        return []
    return [f"legalize-{source_format}", "canonicalize", "lower-to-tosa", "cse", "dce"]


@dataclass
class Result:
    """A converted graph (TOSA level) and what was learnt converting it."""

    graph: Graph
    report: dict[str, Any] = field(default_factory=dict)
    _module: Any = field(default=None, repr=False)
    _target: Any = field(default=None, repr=False)

    @property
    def target(self) -> Any:
        """The TOSA 1.0 profiles, extensions and level the graph needs (nn2tosa.lowering.target.Target)."""
        if self._target is None:
            from nn2tosa.lowering.target import required_target

            self._target = required_target(self.graph)
        return self._target

    def mlir_module(self) -> Any:
        """The verified `mlir.ir.Module` (tosa.target_env attached), built once."""
        if self._module is None:
            from nn2tosa.lowering.mlir_emitter import to_mlir

            self._module = to_mlir(self.graph, target=self.target)
        return self._module

    def validate(self) -> list[str]:
        """MLIR's tosa-validate (strict) for the reported target; empty when the module is valid."""
        from nn2tosa.lowering.mlir_emitter import validate

        return validate(self.mlir_module(), self.target)

    def write(self, path: str, kind: str, *, elide_constants: bool = False, pretty: bool = False,
              tosa_version: str = "1.0") -> None:
        """Write `kind` ("mlir" text, "mlirbc" bytecode, "tosa" flatbuffer) to `path` ("-": stdout).
        `tosa_version` picks the flatbuffer layout (TOSA_VERSIONS): "1.0", or "0.100-draft" for the
        older generation (TOSA 0.90 semantics) that lowering/flatbuffer_0100.py writes."""
        if kind == "tosa" and tosa_version not in TOSA_VERSIONS:
            raise UsageError(f"unknown TOSA flatbuffer version {tosa_version!r} (known: {', '.join(TOSA_VERSIONS)})")
        if kind == "tosa" and tosa_version == "0.100-draft":
            from nn2tosa.lowering.flatbuffer_0100 import write_flatbuffer_0100

            write_flatbuffer_0100(self.graph, path)
        elif kind == "tosa":
            from nn2tosa.lowering.flatbuffer_emitter import write_flatbuffer

            write_flatbuffer(self.graph, path)
        elif kind in ("mlir", "mlirbc"):
            from nn2tosa.lowering.mlir_emitter import write_mlir

            write_mlir(self.mlir_module(), path, bytecode=kind == "mlirbc", pretty=pretty,
                       elide_constants=elide_constants)
        else:
            raise UnsupportedError([Unsupported(kind, path, "unknown output kind (mlir, mlirbc, tosa)")])


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
