"""The steps of one conversion, shared by `nn2tosa.convert` (nn2tosa/api.py), a partial conversion
(nn2tosa/partial.py) and the NPU checks (nn2tosa/npu_regions.py): which passes run, running them with the
report's instrumentation, and the finished Result (its target checked against the profile asked for).
The modules above (api, partial, npu_regions) call down into this one, never the other way."""
from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from nn2tosa.diagnostics import InvalidInputError, Nn2TosaError, Unsupported, UnsupportedError
from nn2tosa.options import parse_profile
from nn2tosa.report import ConversionReport, census
from nn2tosa.result import Result

if TYPE_CHECKING:
    from nn2tosa.ir import Graph
    from nn2tosa.passes.context import PassContext
    from nn2tosa.dialects.tosa_target import Target

# progress(stage, index, total) is called before each stage of a conversion (nn2tosa.progress draws it).
ProgressFn = Callable[[str, int, int], None]


def tosa_pipeline(source_format: str) -> list[str]:
    """The passes that take a source-level graph to a TOSA-level graph (none for a .tosa file,
    whose graph is TOSA-level already)."""
    if source_format == "tosa":
        return []
    return [f"legalize-{source_format}", "canonicalize", "lower-to-tosa", "cse", "dce"]


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


def run_pipeline(graph: Graph, pipeline: Sequence[Any], report: ConversionReport, context: PassContext,
                 progress: ProgressFn | None = None) -> dict[str, dict]:
    """Run the passes on `graph` in place with the pass manager `nn2tosa opt` uses, under `context` (whose
    remarks the passes add to), timing each and adding its statistics (the rewrites) into `report`; returns
    the op censuses taken after legalization and canonicalization (for the report's per-layer attribution)."""
    from nn2tosa.passes import PassManager

    recorder = _ReportInstrumentation(report, progress)
    PassManager(list(pipeline), verify_each=False, instrumentations=[recorder], context=context).run(graph)
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
           profile: str | Sequence[str] | None, context: PassContext, host: set | frozenset = frozenset(),
           empty_ok: bool = False) -> Result:
    """The Result of converted function(s): target (checked against `profile`), report filled in from the
    passes' context (its options and remarks); `empty_ok`: there may be none (a partial conversion that
    left everything to the host)."""
    from nn2tosa.ir import Graph

    functions = [graph] if isinstance(graph, Graph) else list(graph)
    start = time.perf_counter()
    target = fit_target(functions, profile) if profile is not None else None
    result = Result(functions, report, target=target, empty_ok=empty_ok)
    report.target = result.target.report()
    report.functions = [g.name for g in result._program()[0]]  # branch graphs are not functions
    remarks = context.remarks
    report.boundary_changes = list(remarks.boundary_changes)
    report.semantics_dependent = list(remarks.semantics_dependent)
    for g in functions:
        kept = g.meta.get("state_kept_io", "")  # a program's buffers TOSA variables cannot hold (lowering/variables.py)
        report.boundary_changes.extend(f"state {item}" for item in kept.split("; ") if item)
    report.npu_choices.extend(remarks.npu_choices)
    report.semantics = context.semantics
    report.npu_target = context.target or ""
    report.attribute(source_ops, stages, functions, set(host))
    report.time("report", time.perf_counter() - start)
    return result


# ------------------------------------------------------------------------------ profiles
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
