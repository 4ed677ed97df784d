"""The Python API: load a model, convert it to TOSA, get MLIR or a flatbuffer out.

    import nn2tosa
    result = nn2tosa.convert("model.armnn")            # or a Graph from nn2tosa.load(...)
    module = result.mlir_module(context)               # mlir.ir.Module in your context
    text = result.mlir_text()                          # generic form; generic=False for the pretty form
    data = result.tosa_flatbuffer()                    # TOSA 1.0 .tosa bytes
    print(result.report.format_text())                 # what every layer became, target, timings

Nothing here imports MLIR until an MLIR output is asked for, so `import nn2tosa` stays cheap.
"""
from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from nn2tosa.diagnostics import InvalidInputError, Nn2TosaError, Unsupported, UnsupportedError, UsageError
from nn2tosa.report import ConversionReport, census

if TYPE_CHECKING:
    from mlir import ir

    from nn2tosa.ir import Graph
    from nn2tosa.dialects.tosa_target import Target

# How a program's mutable buffers are kept (convert's `state`, the CLI's --state).
STATE_FORMS = ("variables", "io")

# Layouts Result.write can give a .tosa file (the CLI's --tosa-version).
TOSA_VERSIONS = ("1.0", "0.100-draft")

# progress(stage, index, total) is called before each stage of a conversion (nn2tosa.progress draws it).
ProgressFn = Callable[[str, int, int], None]


def load(source: str | os.PathLike | bytes | memoryview) -> Graph | list[Graph]:
    """Read a model (.armnn, MPS payload, .pte or .tosa; a path or the bytes) into the source-level IR:
    one Graph, or a list of them for a multi-partition .pte. Raises InvalidInputError (corrupt or
    unrecognised input) or UnsupportedError (valid input nn2tosa cannot read)."""
    from nn2tosa.frontend import load as load_all

    graphs = load_all(source)
    return graphs[0] if len(graphs) == 1 else graphs


def tosa_pipeline(source_format: str) -> list[str]:
    """The passes that take a source-level graph to a TOSA-level graph (none for a .tosa file,
    whose graph is TOSA-level already)."""
    if source_format == "tosa":
        return []
    return [f"legalize-{source_format}", "canonicalize", "lower-to-tosa", "cse", "dce"]


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
        operators placed) beside the ops left to the host; needs Vela (nn2tosa/npu_regions.py)."""
        from nn2tosa.npu_regions import vela_report

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


def blame(error: Nn2TosaError, graphs: Sequence[Graph], source: str) -> Nn2TosaError:
    """An error raised after reading, naming the file. A .tosa input goes to the emitters without any
    pass, so a module MLIR's verifier rejects is the file's fault (exit 2), not a bug of nn2tosa."""
    from nn2tosa.lowering.mlir_emitter import MlirVerificationError

    if isinstance(error, MlirVerificationError) and all(g.meta.get("format") == "tosa" for g in graphs):
        return InvalidInputError("its TOSA does not verify: " + "; ".join(error.problems), file=source)
    return error.located(source) if hasattr(error, "located") else error


def programs(graphs: Sequence[Graph]) -> list[Graph | list[Graph]]:
    """The units `convert` takes from a file's graphs: each top-level graph, alone, or (when its
    control flow runs other graphs, as a .tosa's COND_IF / WHILE_LOOP do) as a list of it and the
    branch graphs it runs. A file without control flow gives its graphs unchanged."""
    from nn2tosa.lowering.program import reachable_branches, split_program

    functions, branches = split_program(graphs)
    units: list[Graph | list[Graph]] = []
    for g in functions:
        reached = reachable_branches(g, branches)
        units.append([g, *reached] if reached else g)
    return units


# ------------------------------------------------------------------------------ converting
def convert(
    graph_or_path: Graph | Sequence[Graph] | str | os.PathLike | bytes,
    *,
    profile: str | Sequence[str] | None = None,
    passes: Sequence[str] | None = None,
    source: str | None = None,
    partial: bool = False,
    host: Sequence[str] = (),
    progress: ProgressFn | None = None,
    keep_int4: bool = False,
    semantics: str = "litert",
    target: str | None = None,
    state: str = "variables",
) -> Result:
    """Convert a source graph (from `load`), or a model file with one partition, to TOSA 1.0. A list
    of graphs is a function and the branch graphs its control flow runs (a unit of `programs`).

    profile: the TOSA 1.0 profiles and extensions the consumer implements, e.g. "pro_int",
      "pro_fp+bf16" or ["pro_int", "int16"]; a model needing more is UnsupportedError naming the ops.
      The output's `tosa.target_env` is then that target. Default: whatever the model needs.
    passes: the pass pipeline (names of `nn2tosa opt --list-passes`); default `tosa_pipeline(format)`.
    source: the name errors and the report use for the model (default: the path or graph name).
    partial: convert the TOSA-expressible regions around unsupported ops, one function each
      (nn2tosa.partial; the Result's `partition` describes how to stitch them); otherwise an
      unsupported op is UnsupportedError listing all of them.
    host: with partial, ops to leave to the host even though they convert: op types
      ("DetectionPostProcess") or layer/node names; one matching nothing is UsageError.
    progress: called as progress(stage, index, total) before each stage.
    keep_int4: keep int4 weights as int4 (EXT-INT4) instead of folding them into float weights; where
      TOSA 1.0 cannot (lowering/quant.py says why), UnsupportedError.
    semantics: whose integers a quantized graph computes: "litert" (TFLite's integer kernels, the
      default) or "cpuref" (Arm NN CpuRef's float32 emulation of them); lowering/semantics.py.
    target: an NPU preset, "ethos-u55", "ethos-u65" or "ethos-u85": the forms Arm's Vela maps on that
      NPU where they differ, and its profile (PRO-INT with EXT-INT16, EXT-INT4, EXT-DOUBLEROUND) unless
      `profile` is given; lowering/npu_target.py. The report lists each form chosen and why. With Vela
      installed (nn2tosa[vela]) the output is compiled for that NPU: an op it refuses is UnsupportedError
      naming it. With partial, what the NPU does not run (the profile, and Vela when installed:
      nn2tosa/npu_regions.py) goes to the host instead, each op with why.
    state: how a program's mutable buffers (an ExecuTorch KV cache) are kept between calls: "variables"
      (TOSA variables, lowering/variables.py; the default) or "io" (extra inputs and outputs named after
      each buffer, for runtimes without variables). A partial conversion keeps them as "io".
    """
    if state not in STATE_FORMS:
        raise UsageError(f"state={state!r}: one of {', '.join(STATE_FORMS)}")
    from nn2tosa.ir import Graph

    report = ConversionReport()
    start = time.perf_counter()
    branches: list[Graph] = []
    if isinstance(graph_or_path, (Graph, list, tuple)):
        graph, *branches = [g.copy() for g in ([graph_or_path] if isinstance(graph_or_path, Graph) else graph_or_path)]
        name = source or graph.name
    else:
        if progress is not None:
            progress("load", 0, 1)
        loaded = load(graph_or_path)  # type: ignore[arg-type]  # (graphs, as a list or tuple, went above)
        units = programs(loaded) if isinstance(loaded, list) else [loaded]
        if len(units) != 1:
            raise ValueError(f"{graph_or_path!r} has {len(units)} partitions: convert each unit of programs(load())")
        graph, *branches = [units[0]] if isinstance(units[0], Graph) else units[0]
        name = source or (str(graph_or_path) if not isinstance(graph_or_path, (bytes, bytearray, memoryview))
                          else graph.name)
        report.time("load", time.perf_counter() - start)
    from nn2tosa.lowering.npu_target import npu_target, set_npu_target
    from nn2tosa.lowering.semantics import set_semantics

    preset = npu_target(target)
    if preset is not None and profile is None:
        profile = preset.profile
    for g in [graph, *branches]:
        set_semantics(g, semantics)
        set_npu_target(g, target)
    report.model = name
    report.format = str(graph.meta.get("format", "unknown"))
    version = graph.meta.get("generation", graph.meta.get("version"))
    report.version = None if version is None else str(version)
    if keep_int4:
        from nn2tosa.lowering.quant import int4_weights_kept_unsupported

        kept = int4_weights_kept_unsupported(graph)
        if kept:
            raise UnsupportedError(kept)
    if partial and branches:
        raise UnsupportedError([Unsupported("control flow", name, "partial conversion of a graph with control "
                                            "flow (it converts whole: leave out --partial)")])
    if host and not partial:
        raise UsageError("host= names ops to leave to the host, which only a partial conversion does (partial=True)")
    from nn2tosa.npu_regions import NpuCheck, with_partial_hint

    npu = NpuCheck.for_target(preset.name) if preset is not None else None
    if npu is not None:
        report.npu_rule = npu.decided_by()["rule"]
    if partial:
        from nn2tosa.partial import convert_partial

        return convert_partial(graph, report, profile=profile, passes=passes, progress=progress, host=host, npu=npu)
    pipeline = pass_pipeline(graph, passes, name)
    source_ops = [op for g in [graph, *branches] for op in source_op_list(g)]
    from nn2tosa import limits
    from nn2tosa.ir.limit_checks import check_results

    with limits.using(limits.current()):  # a fresh total budget (nn2tosa.limits) for this conversion
        stages = run_pipeline(graph, pipeline, report, progress)
        for branch in branches:  # graph-local passes; a .tosa input, the only one with branches, has none
            run_pipeline(branch, pipeline, report)
        for g in [graph, *branches]:  # what lowering built is held to the limits the file's own types are
            check_results(g)
    if state == "variables":
        from nn2tosa.lowering.variables import buffers_to_variables

        buffers_to_variables(graph)
    if npu is None:
        return finish([graph, *branches], source_ops, stages, report, profile)
    try:
        result = finish([graph, *branches], source_ops, stages, report, profile)
    except UnsupportedError as e:  # beyond the NPU's profile
        raise with_partial_hint(e) from None
    if not branches:  # no .tosa Vela refuses for that NPU (Vela's control flow is experimental: not checked)
        npu.refuse_whole(graph)
    return result


def pass_pipeline(graph: Graph, passes: Sequence[str] | None, name: str) -> list:
    """The PassInfos to run: `passes`, or the format's TOSA pipeline (a pass of it not implemented in
    this build makes the format unsupported)."""
    from nn2tosa.passes import has_pass, parse_pipeline

    if passes is not None:
        return parse_pipeline(list(passes))
    fmt = graph.meta.get("format", "unknown")
    names = tosa_pipeline(fmt)
    missing = [p for p in names if not has_pass(p)]
    if missing:
        raise UnsupportedError([Unsupported(fmt, name, f"pass {p} is not implemented yet") for p in missing])
    return parse_pipeline(names)


def source_op_list(graph: Graph) -> list[tuple[str, Any]]:
    """(op, loc) of every source op in file order: what the report attributes TOSA ops to."""
    from nn2tosa.ir import INPUT_OP

    return [(graph.op(n), graph.loc(n)) for n in graph.nodes() if graph.op(n) != INPUT_OP]


def run_pipeline(graph: Graph, pipeline: Sequence[Any], report: ConversionReport,
                 progress: ProgressFn | None = None) -> dict[str, dict]:
    """Run the passes on `graph` in place with the pass manager `nn2tosa opt` uses, timing each and
    adding its statistics (the rewrites) into `report`; returns the op censuses taken after
    legalization and canonicalization (for the report's per-layer attribution)."""
    from nn2tosa.passes import PassManager

    recorder = _ReportInstrumentation(report, progress)
    PassManager(list(pipeline), verify_each=False, instrumentations=[recorder]).run(graph)
    return recorder.stages


class _ReportInstrumentation:
    """A PassInstrumentation (nn2tosa.passes.manager): progress before each pass; after it, its time
    and statistics into the report, and the census of the ops the report attributes to source layers."""

    def __init__(self, report: ConversionReport, progress: ProgressFn | None):
        self.report, self.progress = report, progress
        self.stages: dict[str, dict] = {}

    def before_pass(self, info: Any, graph: Graph, index: int, total: int) -> None:
        if self.progress is not None:
            self.progress(info.name, index, total)

    def after_pass(self, info: Any, graph: Graph, seconds: float, statistics: dict[str, int]) -> None:
        self.report.time(info.name, seconds)
        for name, n in statistics.items():
            self.report.rewrites[name] = self.report.rewrites.get(name, 0) + n
        if info.name.startswith("legalize-"):
            self.stages["legalize"] = census(graph)
        elif info.name == "canonicalize":
            self.stages["canonicalize"] = census(graph)


def finish(graph: Graph | Sequence[Graph], source_ops: list, stages: dict[str, dict], report: ConversionReport,
           profile: str | Sequence[str] | None, host: set | frozenset = frozenset(),
           empty_ok: bool = False) -> Result:
    """The Result of converted function(s): target (checked against `profile`), report filled in;
    `empty_ok`: there may be none (a partial conversion that left everything to the host)."""
    from nn2tosa.ir import Graph

    from nn2tosa.lowering.npu_target import CHOICES_KEY, TARGET_KEY
    from nn2tosa.lowering.semantics import SEMANTICS_DEPENDENT_KEY, semantics_of

    functions = [graph] if isinstance(graph, Graph) else list(graph)
    start = time.perf_counter()
    target = fit_target(functions, profile) if profile is not None else None
    result = Result(functions, report, target=target, empty_ok=empty_ok)
    report.target = result.target.report()
    report.functions = [g.name for g in result._program()[0]]  # branch graphs are not functions
    report.boundary_changes = []
    report.semantics_dependent = []
    for g in functions:
        changes = g.meta.get("boundary_changes", [])
        report.boundary_changes.extend(changes.split("; ") if isinstance(changes, str) else list(changes))
        dependent = g.meta.get(SEMANTICS_DEPENDENT_KEY, "")
        report.semantics_dependent.extend(dependent.split("; ") if dependent else [])
        kept = g.meta.get("state_kept_io", "")  # a program's buffers TOSA variables cannot hold (lowering/variables.py)
        report.boundary_changes.extend(f"state {item}" for item in kept.split("; ") if item)
        choices = g.meta.get(CHOICES_KEY, "")
        report.npu_choices.extend(choices.split("; ") if choices else [])
    if functions:
        report.semantics = semantics_of(functions[0])
        report.npu_target = str(functions[0].meta.get(TARGET_KEY, ""))
    report.attribute(source_ops, stages, functions, set(host))
    report.time("report", time.perf_counter() - start)
    return result


# ------------------------------------------------------------------------------ profiles
def parse_profile(profile: str | Sequence[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """"pro_int+int16" (or "pro_int,int16", or a list) -> (profiles, extensions); unknown names are a UsageError."""
    from nn2tosa.dialects.tosa_target import EXTENSIONS, PROFILES

    items = [profile] if isinstance(profile, str) else list(profile)
    names = [n.strip() for item in items for n in item.replace("+", ",").split(",") if n.strip()]
    unknown = [n for n in names if n not in PROFILES and n not in EXTENSIONS]
    if unknown or not any(n in PROFILES for n in names):
        raise UsageError(f"profile {'+'.join(names) or '(empty)'}: name at least one TOSA 1.0 profile "
                         f"({', '.join(PROFILES)}) and any extensions ({', '.join(EXTENSIONS)})"
                         + (f"; unknown: {', '.join(unknown)}" if unknown else ""))
    return tuple(n for n in names if n in PROFILES), tuple(n for n in names if n in EXTENSIONS)


def fit_target(graphs: Sequence[Graph], profile: str | Sequence[str]) -> Target:
    """The requested target, after checking that every op of `graphs` runs on it; UnsupportedError
    lists each missing profile or extension with the first op that needs it and how many do."""
    from nn2tosa.dialects.tosa_target import Target, require_tosa_1_0

    profiles, extensions = parse_profile(profile)
    needed = require_tosa_1_0(graphs)
    missing: dict[str, list[str]] = {}
    for g in graphs:
        for node, item in beyond_profile(g, set(profiles) | set(extensions)):
            loc = g.loc(node)
            missing.setdefault(item, []).append(f"{g.op(node)} '{loc.name}'" if loc else f"{g.op(node)} %{node}")
    if missing:
        raise UnsupportedError([
            Unsupported(item, ops[0], f"needs {item}, which the requested target {'+'.join(profiles + extensions)} "
                                      f"lacks ({len(ops)} op{'s' if len(ops) != 1 else ''} need it)")
            for item, ops in sorted(missing.items())])
    return Target(profiles, extensions, needed.level, reasons=dict(needed.reasons))


def beyond_profile(graph: Graph, offered: set[str]) -> list[tuple[int, str]]:
    """(op, the profile or extension it needs) for every op of the TOSA-level `graph` that needs one
    outside `offered` (profile and extension names, as parse_profile gives them)."""
    from nn2tosa.ir import INPUT_OP
    from nn2tosa.dialects.tosa_target import EXTENSION_PROFILE, attribute_extensions, op_requirement

    found = []
    for node in graph.nodes():
        if graph.op(node) == INPUT_OP:
            continue
        for part in (op_requirement(graph, node) or "any").split("+") + attribute_extensions(graph, node):
            item = {"int": "pro_int", "fp": "pro_fp"}.get(part, part)
            if part != "any" and not (item in offered and EXTENSION_PROFILE.get(item, item) in offered):
                found.append((node, item))
    return found
