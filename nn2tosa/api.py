"""The Python API: load a model, convert it to TOSA, get MLIR or a flatbuffer out; and the whole pipeline
of one model file (read, convert, write all or nothing) that the command line and `convert_many` run.

    import nn2tosa
    result = nn2tosa.convert("model.armnn")            # or a Graph from nn2tosa.load(...)
    module = result.mlir_module(context)               # mlir.ir.Module in your context
    text = result.mlir_text()                          # generic form; generic=False for the pretty form
    data = result.tosa_flatbuffer()                    # TOSA 1.0 .tosa bytes
    print(result.report.format_text())                 # what every layer became, target, timings
    options = nn2tosa.ConvertOptions(semantics="cpuref", target="ethos-u55")
    result = nn2tosa.convert("model.armnn", options=options)

Module map: nn2tosa.options (ConvertOptions, validated), nn2tosa.result (Result and its writers),
nn2tosa.conversion (the steps: passes, report, target), nn2tosa.partial and nn2tosa.npu_regions (partial
conversion, an NPU's share) sit below this module, which chooses between them; nothing below imports it.
Nothing here imports MLIR until an MLIR output is asked for, so `import nn2tosa` stays cheap.
"""
from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nn2tosa.conversion import (ProgressFn, beyond_profile, blame, finish, fit_target, pass_pipeline, programs,
                                run_pipeline, source_op_list, tosa_pipeline)
from nn2tosa.diagnostics import Nn2TosaError, Unsupported, UnsupportedError, UsageError
from nn2tosa.options import CONVERT, STATE_FORMS, TOSA_VERSIONS, WRITE, ConvertOptions, parse_profile
from nn2tosa.report import ConversionReport
from nn2tosa.result import Result, constant_bytes, function_path, past_2gb, refuse_past_2gb

if TYPE_CHECKING:
    from nn2tosa.ir import Graph

# (the names the API has always had here, whose home is now a module below it)
__all__ = ["load", "convert", "convert_file", "check_outputs", "Converted", "ConvertOptions", "Result", "ProgressFn",
           "STATE_FORMS", "TOSA_VERSIONS", "OUTPUT_KINDS", "tosa_pipeline", "programs", "blame", "parse_profile",
           "fit_target", "beyond_profile", "finish", "pass_pipeline", "run_pipeline", "source_op_list",
           "constant_bytes", "past_2gb", "refuse_past_2gb", "function_path"]

# What each output file's extension makes of it (`-` is MLIR text on stdout).
OUTPUT_KINDS = {".mlir": "mlir", ".mlirbc": "mlirbc", ".tosa": "tosa"}


def load(source: str | os.PathLike | bytes | memoryview) -> Graph | list[Graph]:
    """Read a model (.armnn, MPS payload, .pte or .tosa; a path or the bytes) into the source-level IR:
    one Graph, or a list of them for a multi-partition .pte. Raises InvalidInputError (corrupt or
    unrecognised input) or UnsupportedError (valid input nn2tosa cannot read)."""
    from nn2tosa.frontend import load as load_all

    graphs = load_all(source)
    return graphs[0] if len(graphs) == 1 else graphs


# ------------------------------------------------------------------------------ converting
def convert(graph_or_path: Graph | Sequence[Graph] | str | os.PathLike | bytes, *,
            options: ConvertOptions | None = None, source: str | None = None, progress: ProgressFn | None = None,
            **keywords: Any) -> Result:
    """Convert a source graph (from `load`), or a model file with one partition, to TOSA 1.0. A list
    of graphs is a function and the branch graphs its control flow runs (a unit of `programs`).

    options: a ConvertOptions (nn2tosa/options.py: profile, semantics, target, partial, host, keep_int4,
      state, passes, limits), or the same as keywords (`convert(m, semantics="cpuref")`), not both.
      Its writing options (tosa_version, validate, ...) are `convert_file`'s: `Result.write` takes
      them per call. Where an option is not given, the default of ConvertOptions applies.
    source: the name errors and the report use for the model (default: the path or graph name).
    progress: called as progress(stage, index, total) before each stage.
    """
    if options is None:
        options = ConvertOptions.from_keywords(keywords, what="convert", stages=(CONVERT,))
    elif keywords:
        raise UsageError(f"convert: options= and keywords ({', '.join(sorted(keywords))}) together: give one")
    else:
        writing = [f.name for f in fields(options) if f.name in ConvertOptions.names(WRITE)
                   and getattr(options, f.name) != f.default]
        if writing:
            raise UsageError(f"convert: {', '.join(writing)} apply to written outputs: nn2tosa.api.convert_file "
                             "writes with them, Result.write takes them per call")
    with _limits_of(options):
        return _convert(graph_or_path, options, source, progress)


def _limits_of(options: ConvertOptions) -> Any:
    """The scope of the limits the options ask for (nn2tosa.limits.using: a fresh total budget); none when
    they leave the limits to the caller's scope."""
    from contextlib import nullcontext

    from nn2tosa import limits

    return nullcontext() if options.limits is None else limits.using(options.limits)


def _convert(graph_or_path: Graph | Sequence[Graph] | str | os.PathLike | bytes, options: ConvertOptions,
             source: str | None, progress: ProgressFn | None) -> Result:
    """`convert` with the options checked (their writing ones are the caller's)."""
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
    profile = options.npu_profile()
    report.model = name
    report.format = str(graph.meta.get("format", "unknown"))
    version = graph.meta.get("generation", graph.meta.get("version"))
    report.version = None if version is None else str(version)
    if options.keep_int4:
        from nn2tosa.lowering.quant import int4_weights_kept_unsupported

        kept = int4_weights_kept_unsupported(graph)
        if kept:
            raise UnsupportedError(kept)
    if options.partial and branches:
        raise UnsupportedError([Unsupported("control flow", name, "partial conversion of a graph with control "
                                            "flow (it converts whole: leave out --partial)")])
    options.check_combination(flags=False)
    from nn2tosa import limits
    from nn2tosa.npu_regions import NpuCheck, with_partial_hint

    npu = NpuCheck.for_target(options.target) if options.target is not None else None
    if npu is not None:
        report.npu_rule = npu.decided_by()["rule"]
    if options.partial:
        from nn2tosa.partial import convert_partial

        return convert_partial(graph, report, options.pass_context, profile=profile, passes=options.passes,
                               progress=progress, host=options.host, npu=npu)
    context = options.pass_context()  # one for the function and its branches: their remarks, in that order
    pipeline = pass_pipeline(graph, options.passes, name)
    source_ops = [op for g in [graph, *branches] for op in source_op_list(g)]
    from nn2tosa.ir.limit_checks import check_results

    with limits.using(limits.current()):  # a fresh total budget (nn2tosa.limits) for this conversion
        stages = run_pipeline(graph, pipeline, report, context, progress)
        for branch in branches:  # graph-local passes; a .tosa input, the only one with branches, has none
            run_pipeline(branch, pipeline, report, context)
        for g in [graph, *branches]:  # what lowering built is held to the limits the file's own types are
            check_results(g)
    if options.state == "variables":
        from nn2tosa.lowering.variables import buffers_to_variables

        buffers_to_variables(graph)
    if npu is None:
        return finish([graph, *branches], source_ops, stages, report, profile, context)
    try:
        result = finish([graph, *branches], source_ops, stages, report, profile, context)
    except UnsupportedError as e:  # beyond the NPU's profile
        raise with_partial_hint(e) from None
    if not branches:  # no .tosa Vela refuses for that NPU (Vela's control flow is experimental: not checked)
        npu.refuse_whole(graph)
    return result


# ------------------------------------------------------------------------------ one model file, written
@dataclass
class Converted:
    """What `convert_file` did: the Results (one per partition converted), every path written (outputs,
    sidecars, JSON reports), and the Vela report of each Result when asked for (options.vela_report)."""

    results: list[Result]
    written: list[str]
    vela: list[dict[str, Any]] = field(default_factory=list)


def check_outputs(outputs: Sequence[str], options: ConvertOptions, *, sidecar: str | None = None,
                  report_json: str | None = None) -> tuple[list[str], str | None]:
    """(the kind of each output path, the partial sidecar path or None): checked before any work, with the
    command line's names for what is wrong. The sidecar defaults to the first named output's name with the
    extension .partition.json."""
    from nn2tosa.fileio import check_output_path

    kinds = []
    for k, out in enumerate(outputs):
        if out in outputs[:k]:  # (two `-o -` would print the module twice)
            raise UsageError(f"{out}: given twice as an output")
        check_output_path(out)
        kind = "mlir" if out == "-" else OUTPUT_KINDS.get(Path(out.rstrip("/")).suffix)
        if kind is None:
            raise UsageError(f"{out}: unknown output kind (use {', '.join(OUTPUT_KINDS)} or '-')")
        kinds.append(kind)
    options.check_combination(flags=True, writes_tosa="tosa" in kinds)
    if options.partial and sidecar is None:
        named = [o for o in outputs if o != "-"]
        if not named:
            raise UsageError("--partial with only '-' as output: name the JSON sidecar with --sidecar FILE")
        sidecar = str(Path(named[0]).with_suffix(".partition.json"))
    elif not options.partial:
        sidecar = None
    for extra in (sidecar, report_json):
        if extra is not None:
            check_output_path(extra)
    if options.mlir_pipeline is not None:  # a malformed pipeline fails before any work is done
        from nn2tosa.mlir_pipeline import check_pipeline

        check_pipeline(options.mlir_pipeline)
    return kinds, sidecar


def convert_file(path: str, outputs: Sequence[tuple[str, str]], options: ConvertOptions, *,
                 sidecar: str | None = None, report_json: str | None = None, partition: int | None = None,
                 progress: bool | None = False, data: bytes | None = None) -> Converted:
    """Read model `path` (from `data`, its bytes, when given: `path` still names it), convert every partition
    (or only `partition`) and write `outputs` ((path, kind) pairs, kinds as check_outputs gives them; "-" is
    stdout), the partial sidecar and the JSON report, all or nothing. `progress`: a progress bar on stderr
    (None: only for a large model on a terminal). Errors name the file. `nn2tosa convert` runs this for its
    model, and `convert --out-dir` / `convert_many` for each of theirs."""
    import sys

    from nn2tosa.progress import ProgressBar, progress_for

    bar = ProgressBar(sys.stderr) if progress else progress_for(path) if progress is None else None
    try:
        with _limits_of(options):  # (one budget for reading and converting, as `nn2tosa convert` has)
            return _convert_file(path, outputs, options, sidecar, report_json, partition, bar, data)
    finally:
        if bar is not None:
            bar.close()


def _convert_file(path: str, outputs: Sequence[tuple[str, str]], options: ConvertOptions, sidecar: str | None,
                  report_json: str | None, partition: int | None, bar: Any, data: bytes | None) -> Converted:
    import json

    from nn2tosa.fileio import all_or_nothing, write_atomic
    from nn2tosa.frontend import load as load_all
    from nn2tosa.partial import PartialResult

    kinds = [kind for _, kind in outputs]
    if bar is not None:
        bar("load", 0, 1)
    start = time.perf_counter()
    graphs = load_all(path if data is None else data, name=None if data is None else path,
                      partitions=partition is not None)
    load_time = time.perf_counter() - start
    if "tosa" in kinds and options.tosa_version != "1.0":  # before the work, not after it
        refuse_past_2gb(graphs, path, f"the TOSA {options.tosa_version} layout")
    try:
        units = programs(graphs)  # a .tosa's branch graphs go with the function that runs them
        if partition is not None:
            if not 0 <= partition < len(units):
                raise UsageError(f"--partition {partition}: {path} has {len(units)} partition(s)")
            units = [units[partition]]
        results = [_convert(unit, options, path, bar) for unit in units]
        for result in results:  # the file was read once for all partitions
            result.report.timings = {"load": load_time / len(results), **result.report.timings}
        from_tosa = all(g.meta.get("format") == "tosa" for g in graphs)
        for result in results:
            if from_tosa:  # a file's TOSA meets MLIR's verifier even when only a .tosa is written
                result.mlir_module()
            if options.validate:
                problems = result.validate()
                if problems:
                    raise Nn2TosaError(f"internal error: the output fails tosa-validate for {result.target}: "
                                       + "; ".join(problems))
            if options.mlir_pipeline is not None and any(k != "tosa" for k in kinds):
                from nn2tosa.mlir_pipeline import run_pipeline as run_mlir_pipeline

                if bar is not None:
                    bar("mlir-pipeline", 0, 1)
                run_mlir_pipeline(result.mlir_module(), options.mlir_pipeline)
        vela = [result.vela_report() for result in results] if options.vela_report else []
        written: list[dict[str, list[str]]] = [{} for _ in results]
        extras: list[str] = []  # sidecars and reports
        with all_or_nothing():  # every output is written, or none is
            for out, kind in outputs:
                for i, result in enumerate(results):
                    if bar is not None:
                        bar(f"write {kind}", 0, 1)
                    target = out if len(results) == 1 or out == "-" else _partition_path(out, i)
                    paths = result.write(target, kind, elide_constants=options.elide_constants,
                                         pretty=options.mlir_pretty, tosa_version=options.tosa_version,
                                         external_data=options.external_data or None)
                    written[i].setdefault(kind, []).extend(paths)
            for i, result in enumerate(results):
                if sidecar is not None and isinstance(result, PartialResult):  # (partial made them all)
                    side_path = sidecar if len(results) == 1 else _partition_path(sidecar, i)
                    side = {**result.sidecar(written[i]), **({"vela_report": vela[i]} if vela else {})}
                    write_atomic(side_path, (json.dumps(side, indent=1) + "\n").encode())
                    extras.append(side_path)
                if report_json:
                    report_path = report_json if len(results) == 1 else _partition_path(report_json, i)
                    write_atomic(report_path, (result.report.to_json() + "\n").encode())
                    extras.append(report_path)
    except Nn2TosaError as e:
        raise blame(e, graphs, path) from e
    return Converted(results, [p for paths in written for kind in kinds for p in paths.get(kind, [])] + extras, vela)


def _partition_path(out: str, index: int) -> str:
    p = Path(out)
    return str(p.with_name(f"{p.stem}.part{index}{p.suffix}"))
