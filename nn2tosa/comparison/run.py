"""`nn2tosa.comparison(...)`: convert a model, run it on the TOSA reference model keeping every
intermediate tensor, and compare each source layer's output with a reference, layer by layer.

The run: the converted graph is written again with a CAST to int32 after each INT8 or BOOL tensor to
compare (the reference model prints those as raw characters, which its dump cuts at the first NUL:
see nn2tosa.comparison.dump), run with `dump_intermediates`, and every tensor is compared with its
reference the moment the dump has it (nothing is kept but the measures). Where each source
tensor is in the converted graph: nn2tosa.comparison.points.
"""
from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from nn2tosa.comparison.dump import Tensor
from nn2tosa.comparison.metrics import Metrics, measure
from nn2tosa.comparison.points import Point, place, source_points
from nn2tosa.comparison.references import FloatReference, Reference, open_reference
from nn2tosa.diagnostics import UsageError
from nn2tosa.ir import INPUT_OP, Graph, TensorType, Value

_PRINTED_AS_CHARACTERS = ("i8", "i1", "ui8")


@dataclass
class Row:
    """One source tensor's comparison: `metrics` None when it was not compared (`reason` says why)."""

    point: Point
    metrics: Metrics | None = None
    reason: str = ""
    tosa_tensor: str = ""  # its tensor's name in the .tosa that ran
    first_divergence: bool = False

    def as_dict(self) -> dict[str, Any]:
        p, t = self.point, self.point.type
        d: dict[str, Any] = {
            "tensor": p.key, "layer": p.layer, "type": p.op.split(".", 1)[-1], "location": p.where, "slot": p.slot,
            "shape": list(t.shape), "dtype": t.dtype, "status": p.status, "note": p.note, "feeds": p.feeds,
            "tosa_tensor": self.tosa_tensor or None, "compared": self.metrics is not None,
        }
        if t.quant is not None:
            d["quantization"] = {"scales": list(t.quant.scales), "zero_points": list(t.quant.zero_points),
                                 "axis": t.quant.axis}
        if self.metrics is not None:
            d["metrics"] = self.metrics.as_dict()
        else:
            d["reason"] = self.reason
        if self.first_divergence:
            d["first_divergence"] = True
        return d


@dataclass
class CompareResult:
    """What `compare` found: one Row per source tensor in graph order, the first beyond tolerance."""

    model: str
    reference: str
    tolerance: str
    semantics: str
    status: str  # the reference model's status for the run
    inputs: str  # where the inputs came from
    rows: list[Row] = field(default_factory=list)
    seconds: float = 0.0
    missing_reference: str = ""  # why the float reference stops early, if it does

    @property
    def compared(self) -> list[Row]:
        return [r for r in self.rows if r.metrics is not None]

    @property
    def first_divergence(self) -> Row | None:
        return next((r for r in self.rows if r.first_divergence), None)

    @property
    def ok(self) -> bool:
        """Every compared tensor within tolerance, and at least one compared (a comparison that compared
        nothing has shown nothing)."""
        return self.status == "TOSA_VALID" and self.first_divergence is None and bool(self.compared)

    def feeds_of(self, row: Row) -> list[Row]:
        """The compared tensors `row` reads: its feeds, or where a feed is not visible (a layer fused
        into it), that feed's own, and so on."""
        by_key = {r.point.key: r for r in self.rows}
        found: list[Row] = []
        todo = list(row.point.feeds)
        seen: set[str] = set()
        while todo:
            key = todo.pop(0)
            if key in seen or key not in by_key:
                continue
            seen.add(key)
            feed = by_key[key]
            if feed.metrics is None and feed.point.value is None:
                todo.extend(feed.point.feeds)
            else:
                found.append(feed)
        return found

    def worst(self) -> Row | None:
        """The compared tensor with the largest error relative to its tolerance."""
        return max(self.compared, key=lambda r: r.metrics.score if r.metrics else 0.0, default=None)

    def as_dict(self) -> dict[str, Any]:
        first = self.first_divergence
        return {
            "model": self.model, "reference": self.reference, "tolerance": self.tolerance,
            "semantics": self.semantics, "status": self.status, "inputs": self.inputs, "ok": self.ok,
            "compared": len(self.compared), "tensors": len(self.rows),
            "first_divergence": None if first is None else {
                "tensor": first.point.key, "feeds": [r.as_dict() for r in self.feeds_of(first)]},
            "missing_reference": self.missing_reference or None,
            "rows": [r.as_dict() for r in self.rows],
        }


@dataclass
class _Unit:
    """One converted function to run: it and the graphs its control flow runs, the source tensors its
    inputs are (in order), and the reference model's level for it."""

    graphs: list[Graph]
    inputs: list[Point]
    level: str


def compare(model: str, inputs: Sequence[str | np.ndarray] | None = None, reference: str = "float", *,
            tolerance: str | None = None, semantics: str = "litert", partition: int | None = None,
            target: str | None = None, seed: int = 0, partial: bool = False,
            host: Sequence[str] = ()) -> CompareResult:
    """Compare `model` (any file nn2tosa reads) layer by layer with `reference`: a directory of .npy
    files named by source tensor, an Arm NN debug dump, or "float" (see nn2tosa.comparison.references).
    `inputs` are .npy paths or arrays in the model's source types; without them the reference's
    (a debug dump records the inputs) or random ones (`seed`). `tolerance` is one of check's
    (fp32, fp16, quantized, mixed; default as check picks it). `partial` (with `host`, as `convert`
    takes them) compares each region of a partial conversion on its own: a region after a host op
    is fed the reference's values of the tensors it reads."""
    from nn2tosa.check import TOLERANCES, default_tolerance, reference_model

    start = time.perf_counter()
    if tolerance is not None and tolerance not in TOLERANCES:
        raise UsageError(f"tolerance {tolerance!r}: one of {', '.join(TOLERANCES)}")
    reference_model()
    ref: Reference | None = None if reference == "float" else open_reference(reference)
    runnable = _convert(model, partition, semantics, target, partial, host)
    source: Graph = runnable.source
    statuses = {s.loc: s.status for s in runnable.result.report.source_ops if s.status != "constant"}
    points, by_value = source_points(source, statuses)
    units = _units(runnable, points, by_value, partial)
    graph_inputs = [by_value[v] for v in source.input_values()]
    arrays, given = _inputs(inputs, ref, graph_inputs, runnable, seed)
    _check_inputs(arrays, runnable, [a for a in inputs or () if isinstance(a, str)])
    if ref is None:
        ref = FloatReference(source, arrays, points)
    result = CompareResult(model, ref.description, tolerance or default_tolerance(runnable), semantics, "",
                           given, missing_reference=getattr(ref, "missing", ""))
    rows = {p.key: Row(p) for p in points if p.status != "input"}
    given_arrays = {p.key: a for p, a in zip(graph_inputs, arrays)}
    statuses_seen = []
    for unit in units:
        statuses_seen.append(_run_unit(unit, rows, ref, given_arrays, runnable, result.tolerance))
    result.status = next((s for s in statuses_seen if s != "TOSA_VALID"), "TOSA_VALID")
    for row in rows.values():
        if row.metrics is None and not row.reason:
            row.reason = ("left to the host by the partial conversion" if row.point.status == "unsupported"
                          else row.point.note or "not in the reference model's dump")
    result.rows = [rows[p.key] for p in points if p.key in rows]
    first = next((r for r in result.rows if r.metrics is not None and not r.metrics.ok), None)
    if first is not None:
        first.first_divergence = True
    result.seconds = time.perf_counter() - start
    return result


def _convert(model: str, partition: int | None, semantics: str, target: str | None, partial: bool,
             host: Sequence[str]) -> Any:
    """check's Runnable of the model; for `partial`, with the partial conversion as its result."""
    from nn2tosa.check import Runnable, _has_16bit_float, _level, prepare

    if not partial:
        if host:
            raise UsageError("--host needs --partial")
        return prepare(model, partition, semantics=semantics, target=target)
    from nn2tosa.api import blame, convert, programs
    from nn2tosa.diagnostics import Nn2TosaError
    from nn2tosa.frontend import load

    graphs = load(model)
    units = programs(graphs)
    if partition is not None and not 0 <= partition < len(units):
        raise UsageError(f"--partition {partition}: {model} has {len(units)} partition(s)")
    unit = units[partition or 0]
    if isinstance(unit, list):
        raise UsageError(f"{model}: comparing a partial conversion of a graph with control flow is not supported")
    try:
        converted = convert(unit, source=model, semantics=semantics, target=target, partial=True, host=host)
    except Nn2TosaError as e:
        raise blame(e, graphs, model) from e
    return Runnable(model, b"", [unit.input_name(n) for n in unit.inputs],
                    [unit.tensor_type(v) for v in unit.input_values()],
                    [unit.tensor_type(o.value) for o in unit.outputs], [o.name for o in unit.outputs],
                    _level(converted.target.level), any(_has_16bit_float(g) for g in converted.functions),
                    converted, source=unit)


def _units(runnable: Any, points: list[Point], by_value: dict[Value, Point], partial: bool) -> list[_Unit]:
    """The functions to run, with every Point placed in them."""
    from nn2tosa.lowering.program import split_program

    source = runnable.source
    functions, branches = split_program(runnable.result.functions)
    if not partial:
        graphs = [functions[0], *branches.values()]
        place(points, source, by_value, graphs)
        return [_Unit(graphs, [by_value[v] for v in source.input_values()], runnable.level)]
    # a partial conversion: each region's inputs and outputs are the source tensors the sidecar names
    partition = runnable.result.partition
    tensors = partition["tensors"]
    by_layer = {(p.layer, p.where, p.slot): p for p in points}
    by_input = {p.layer: p for p in points if p.status == "input"}

    def point_of(name: str) -> Point:
        where = tensors[name]["source"]
        if "graph_input" in where:
            return by_input[where["graph_input"]]
        return by_layer[(where["name"], where["where"], where["result"])]

    inputs, outputs, units = [], [], []
    for g, described in zip(functions, partition["functions"]):
        ins = [point_of(t["name"]) for t in described["inputs"]]
        inputs += [(p, Value(n, 0), g.name) for p, n in zip(ins, g.inputs)]
        outputs += [(point_of(t["name"]), o.value, g.name) for t, o in zip(described["outputs"], g.outputs)]
        units.append(_Unit([g], ins, runnable.level))
    place(points, source, by_value, list(functions), inputs, outputs)
    return units


def _run_unit(unit: _Unit, rows: dict[str, Row], ref: Reference, given: dict[str, np.ndarray], runnable: Any,
              tolerance: str) -> str:
    """Run one function with every intermediate dumped, measuring its Points' rows as they come; its
    inputs are the model's arrays or, inside a partial conversion, the reference's. Its status."""
    from nn2tosa.check import refuse_invalid_run, to_boundary
    from nn2tosa.comparison.dump import run_dumping
    from nn2tosa.comparison.references import stored_arrays

    names = {g.name for g in unit.graphs}
    tosa, watched, shifted = _instrumented(unit.graphs, [p for p in _points_of(rows) if p.value is not None
                                                         and p.graph in names])
    arrays: list[np.ndarray] = []
    for p in unit.inputs:
        if p.key in given:
            arrays.append(given[p.key])
            continue
        held = stored_arrays(ref, [p])
        if held is None:
            for p2 in _points_of(rows):
                if p2.graph in names:
                    rows[p2.key].reason = f"its region was not run: the reference has no {p.key}"
            return "TOSA_VALID"
        arrays += held
    feed = [to_boundary(a, p.type, f"input '{p.key}'") for a, p in zip(arrays, unit.inputs)]

    def consume(tensors: Iterator[Tensor]) -> None:
        for tensor in tensors:
            for point in watched.get(tensor.name, []):
                row = rows[point.key]
                row.tosa_tensor = tensor.name
                if tensor.values is None:
                    row.reason = f"the reference model does not print {tensor.dtype} tensors"
                    continue
                _measure(row, tensor, ref, tolerance, point.key in shifted)

    status, _ = run_dumping(tosa, feed, unit.level, consume, wanted=watched.__contains__)
    refuse_invalid_run(runnable, status, "", "the inputs")
    return status


def _points_of(rows: dict[str, Row]) -> list[Point]:
    return [r.point for r in rows.values()]


def _inputs(inputs: Sequence[str | np.ndarray] | None, ref: Reference | None, points: list[Point],
            runnable: Any, seed: int) -> tuple[list[np.ndarray], str]:
    """The model's input arrays (the user's, else the reference's, else random) and where they came from."""
    from nn2tosa.check import load_arrays, random_inputs

    if inputs:
        paths = [a for a in inputs if isinstance(a, str)]
        loaded = iter(load_arrays(paths))
        return [next(loaded) if isinstance(a, str) else np.asarray(a) for a in inputs], "given inputs"
    held = ref.inputs(points) if ref is not None else None
    if held is not None:
        return held, "the inputs the reference holds"
    return random_inputs(runnable.inputs, seed), f"random inputs (seed {seed})"


def _check_inputs(arrays: list[np.ndarray], runnable: Any, files: list[str]) -> None:
    """UsageError / InvalidInputError (exit 2) for arrays that do not fit the model's inputs."""
    from nn2tosa.check import to_boundary

    if len(arrays) != len(runnable.inputs):
        raise UsageError(f"{runnable.name} has {len(runnable.inputs)} input(s) ({', '.join(runnable.input_names)}), "
                         f"{len(arrays)} array(s) given")
    for i, (a, t, n) in enumerate(zip(arrays, runnable.inputs, runnable.input_names)):
        to_boundary(a, t, f"input {i} '{n}'", files[i] if i < len(files) else None)


def _measure(row: Row, tensor: Tensor, ref: Reference, tolerance: str, shifted: bool) -> None:
    point = row.point
    got = ref.get(point)
    if got is None:
        row.reason = "no reference tensor"
        return
    expected, is_real = got
    assert tensor.values is not None
    actual = _in_source_terms(tensor.values, point.type, shifted, point.transposed)
    if actual is None:
        row.reason = f"the converted tensor is {list(tensor.shape)}, the source's {list(point.type.shape)}"
        return
    computed = {"FP32": "f32", "FP16": "f16", "BF16": "bf16", "FP64": "f64"}.get(tensor.dtype)
    row.metrics = measure(point.type, actual, expected, is_real, tolerance, computed)
    row.reason = ""


def _in_source_terms(values: np.ndarray, t: TensorType, shifted: bool, transposed: bool) -> np.ndarray | None:
    """The converted graph's tensor as the source type stores it: the source's shape (NCHW first when
    the converted graph holds it NHWC: `transposed`), unsigned integers from the signed ones carrying their bits or,
    when `shifted`, their value less half the range (the zero point moved by as much)."""
    shape = tuple(t.shape)
    if transposed:
        values = values.transpose(0, 3, 1, 2)
    if values.shape != shape:
        if values.size != int(np.prod(shape)):
            return None
        values = values.reshape(shape)
    dtype = t.numpy_dtype
    if dtype.kind == "u" and shifted:
        return (values.astype(np.int64) + (1 << (8 * dtype.itemsize - 1))).astype(dtype)
    if dtype.kind == "u":
        return (values.astype(np.int64) % (1 << (8 * dtype.itemsize))).astype(dtype)
    if dtype.kind in "ib":
        return values.astype(np.int64)
    return values


def _instrumented(graphs: list[Graph], points: list[Point]) -> tuple[bytes, dict[str, list[Point]], set[str]]:
    """The .tosa to run; per tensor name in it, the Points it holds; the keys of the unsigned source
    tensors the converted graph holds as signed ones offset by half their range (all but those a
    RESCALE writes as unsigned bits, and function inputs, which carry them). The .tosa is the converted graph(s) with a CAST to int32
    reading each INT8/BOOL tensor to compare (a dump cannot carry those)."""
    from nn2tosa.lowering.flatbuffer_emitter import build_flatbuffer

    copies = {g.name: g.copy() for g in graphs}
    watched: dict[tuple[str, Value], list[Point]] = {}
    casts: dict[tuple[str, Value], Value] = {}
    shifted: set[str] = set()
    for p in points:
        assert p.value is not None
        g = copies[p.graph]
        t = g.tensor_type(p.value)
        value = p.value
        carries_bits = g.op(value.node) == INPUT_OP or (g.op(value.node) == "tosa.rescale"
                                                         and g.attrs(value.node).get("output_unsigned"))
        if p.type.numpy_dtype.kind == "u" and not carries_bits:
            shifted.add(p.key)
        if t.dtype in _PRINTED_AS_CHARACTERS:
            if (p.graph, value) not in casts:
                cast = g.add_op("tosa.cast", [value], [TensorType(t.shape, "i32")], {}, g.loc(value.node))
                casts[(p.graph, value)] = Value(cast, 0)
            value = casts[(p.graph, value)]
        watched.setdefault((p.graph, value), []).append(p)
    main, *rest = graphs
    names: dict[tuple[str, Value], str] = {}
    tosa = bytes(build_flatbuffer(copies[main.name], {g.name: copies[g.name] for g in rest}, names))
    by_name: dict[str, list[Point]] = {}
    for key, ps in watched.items():
        by_name.setdefault(names[key], []).extend(ps)
    return tosa, by_name, shifted


__all__ = ["compare", "CompareResult", "Row"]
