"""A converted model and every output form of it: `Result` (what `nn2tosa.convert` returns), and the
flatbuffer layouts and size checks its writers use. Each output is built on first use; nothing here
imports MLIR until an MLIR output is asked for."""
from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from nn2tosa.diagnostics import Unsupported, UnsupportedError, UsageError
from nn2tosa.options import TOSA_VERSIONS
from nn2tosa.report import ConversionReport

if TYPE_CHECKING:
    from mlir import ir

    from nn2tosa.ir import Graph
    from nn2tosa.dialects.tosa_target import Target


class Result:
    """A converted model: its TOSA-level function(s) (`graph`, or `functions` when a partial conversion
    made several), the conversion `report`, and every output form, each built on first use.
    `functions` also holds the branch graphs control flow names (a .tosa's COND_IF / WHILE_LOOP
    regions): those are written inside the function that runs them, never as functions of their own."""

    def __init__(self, graph: Graph | Sequence[Graph], report: ConversionReport | None = None, *,
                 target: Target | None = None, empty_ok: bool = False):
        from nn2tosa.ir import Graph

        self.functions: list[Graph] = [graph] if isinstance(graph, Graph) else list(graph)
        if not self.functions and not empty_ok:
            raise ValueError("a Result needs at least one graph")
        # (a partial conversion that left everything to the host has no function: an empty graph stands in)
        self.graph: Graph = self.functions[0] if self.functions else Graph("empty")
        self.report: ConversionReport = report if report is not None else ConversionReport(model=self.graph.name)
        self._target = target
        self._modules: list[tuple[Any, Any]] = []  # (context or None, module) built so far

    @property
    def target(self) -> Target:
        """The TOSA 1.0 profiles, extensions and level of the output (nn2tosa.dialects.tosa_target.Target):
        what the graph needs, or the profile `convert` was asked for."""
        if self._target is None:
            from nn2tosa.dialects.tosa import with_distinct_outputs
            from nn2tosa.dialects.tosa_target import required_target

            # of what the emitters write: an output that is a graph input is read through an IDENTITY
            self._target = required_target([with_distinct_outputs(g) for g in self.functions])
        return self._target

    def mlir_module(self, context: ir.Context | None = None) -> ir.Module:
        """The verified TOSA `mlir.ir.Module` (one func.func per function, `tosa.target_env` set), built
        in `context` (the caller's, ready for `mlir.passmanager.PassManager`) or in a context of its own.
        Built once per context."""
        for ctx, module in self._modules:
            if ctx is context:
                return module
        from nn2tosa.lowering.mlir_emitter import to_mlir

        with self._timed("emit-mlir"):
            module = to_mlir(self.functions, context, target=self.target)
        self._modules.append((context, module))
        return module

    def mlir_text(self, generic: bool = True, *, elide_constants: bool = False) -> str:
        """The module as MLIR text: the generic op form (every MLIR version parses it), or the pretty form."""
        from nn2tosa.lowering.mlir_emitter import elided_text, module_text

        if elide_constants and not self._modules:  # (a module built already may have been transformed)
            return elided_text(self.functions, self.target, pretty=not generic)
        return module_text(self.mlir_module(), pretty=not generic, elide_constants=elide_constants)

    def mlir_bytecode(self) -> bytes:
        """The module as MLIR bytecode."""
        from nn2tosa.lowering.mlir_emitter import module_bytecode

        return module_bytecode(self.mlir_module())

    def tosa_flatbuffer(self, version: str = "1.0") -> bytes:
        """The TOSA flatbuffer (.tosa) of the (only) function; `version` "0.100-draft" writes the older
        layout (TOSA 0.90 semantics). A partial conversion has one flatbuffer per function:
        `tosa_flatbuffers()`."""
        functions, _ = self._program()
        if len(functions) != 1:
            raise ValueError(f"{len(functions)} functions: use tosa_flatbuffers() for one .tosa each")
        return self.tosa_flatbuffers(version)[0]

    def tosa_flatbuffers(self, version: str = "1.0") -> list[bytes]:
        """One TOSA flatbuffer per function (each with the branch graphs it runs as further regions)."""
        build = _flatbuffer_builder(version)
        functions, branches = self._program()
        with self._timed("emit-tosa"):
            return [bytes(build(g, branches)) for g in functions]

    def _program(self) -> tuple[list[Graph], dict[str, Graph]]:
        """(the top-level functions, the branch graphs by name) of `functions`."""
        from nn2tosa.lowering.program import split_program

        return split_program(self.functions)

    def vela_report(self) -> dict[str, Any]:
        """Vela's account of every function compiled for the --target NPU (cycles, SRAM and DRAM used,
        operators placed) beside the ops left to the host; needs Vela (nn2tosa/vela_support.py)."""
        from nn2tosa.vela_support import vela_report

        return vela_report(self)

    def validate(self) -> list[str]:
        """MLIR's tosa-validate (strict) for the reported target; empty when the module is valid."""
        from nn2tosa.lowering.mlir_emitter import validate

        with self._timed("validate"):
            return validate(self.mlir_module(), self.target)

    def write(self, path: str, kind: str, *, elide_constants: bool = False, pretty: bool = False,
              tosa_version: str = "1.0", external_data: bool | None = None) -> list[str]:
        """Write `kind` ("mlir" text, "mlirbc" bytecode, "tosa" flatbuffer) to `path` ("-": stdout) and
        return the paths written. `tosa_version` picks the flatbuffer layout (TOSA_VERSIONS). Several
        functions go into one MLIR module, but one .tosa each: `NAME.<function>.tosa`.
        `external_data` (TOSA 1.0 .tosa): keep tensor data of 64 KiB or more after the flatbuffer, at
        each tensor's offset/size; None (the default) does so only for a file past 2 GB."""
        if kind == "tosa":
            _flatbuffer_builder(tosa_version)  # checks the version
            if external_data and tosa_version != "1.0":
                raise UsageError(f"external tensor data needs TOSA 1.0 (the {tosa_version} layout has no "
                                 "offset/size fields)")
            functions, branches = self._program()
            paths = [path] if len(functions) == 1 else [function_path(path, g.name) for g in functions]
            writer = _flatbuffer_writer(tosa_version)
            with self._timed("emit-tosa"):
                for g, p in zip(functions, paths):
                    writer(g, p, branches, external_data)
            return paths
        if kind == "mlir" and elide_constants and not self._modules:
            from nn2tosa.fileio import write_atomic

            with self._timed("write-mlir"):
                text = self.mlir_text(not pretty, elide_constants=True)
                write_atomic(path, text.encode())
            return [path]
        if kind in ("mlir", "mlirbc"):
            from nn2tosa.lowering.mlir_emitter import write_mlir

            module = self.mlir_module()
            with self._timed("write-mlir"):
                write_mlir(module, path, bytecode=kind == "mlirbc", pretty=pretty, elide_constants=elide_constants)
            return [path]
        raise UsageError(f"{path}: unknown output kind {kind!r} (mlir, mlirbc, tosa)")

    def _timed(self, stage: str) -> Any:
        return _Timer(self.report, stage)


class _Timer:
    def __init__(self, report: ConversionReport, stage: str):
        self.report, self.stage = report, stage

    def __enter__(self) -> None:
        self.start = time.perf_counter()

    def __exit__(self, *exc: object) -> None:
        self.report.time(self.stage, time.perf_counter() - self.start)


def function_path(path: str, function: str) -> str:
    """Where the .tosa of one of several functions goes: `out.tosa` -> `out.region0.tosa`."""
    if path == "-":
        raise UsageError("several .tosa files cannot all go to stdout")
    stem, dot, suffix = path.rpartition(".")
    return f"{stem}.{function}.{suffix}" if dot and "/" not in suffix else f"{path}.{function}"


# The 0.100 writer takes no branch graphs: it refuses control flow itself.
def _flatbuffer_builder(version: str) -> Callable[[Graph, dict[str, Graph]], Any]:
    if version == "1.0":
        from nn2tosa.lowering.flatbuffer_emitter import build_flatbuffer

        return build_flatbuffer
    if version == "0.100-draft":
        from nn2tosa.lowering.flatbuffer_0100 import build_flatbuffer_0100

        return lambda graph, branches: build_flatbuffer_0100(graph)
    raise UsageError(f"unknown TOSA flatbuffer version {version!r} (known: {', '.join(TOSA_VERSIONS)})")


def _flatbuffer_writer(version: str) -> Callable[[Graph, str, dict[str, Graph], bool | None], None]:
    if version == "0.100-draft":
        from nn2tosa.lowering.flatbuffer_0100 import write_flatbuffer_0100

        return lambda graph, path, branches, external_data: write_flatbuffer_0100(graph, path)
    from nn2tosa.lowering.flatbuffer_emitter import write_flatbuffer

    return write_flatbuffer


def constant_bytes(graphs: Sequence[Graph]) -> int:
    """Bytes of every array the graphs' ops hold (constants, weights): what a .tosa of them carries
    as tensor data, give or take what the passes fold."""
    import numpy as np

    return sum(v.nbytes for g in graphs for n in g.nodes() for v in g.attrs(n).values() if isinstance(v, np.ndarray))


def past_2gb(graphs: Sequence[Graph]) -> bool:
    """Whether the graphs' constants take a .tosa past the 2 GB a flatbuffer addresses: its TOSA 1.0
    writer keeps the tensor data after the flatbuffer then (nn2tosa.tosa_flatbuffer)."""
    from nn2tosa.tosa_flatbuffer.writer import fits

    return not fits(constant_bytes(graphs))


def refuse_past_2gb(graphs: Sequence[Graph], source: str, consumer: str) -> None:
    """UnsupportedError, before any conversion work, when `consumer` cannot take a .tosa past 2 GB
    and these graphs' constants make one."""
    if past_2gb(graphs):
        raise UnsupportedError([Unsupported("flatbuffer", source, f"{constant_bytes(graphs)} bytes of constants: "
                                            f"past 2 GB, which {consumer} cannot hold (a TOSA 1.0 .tosa keeps such "
                                            "data after the flatbuffer; .mlirbc has no such limit)")])
