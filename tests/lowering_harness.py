"""Checking lowering rules end to end: nn graph -> numpy reference -> lower-to-tosa -> .tosa on the
TOSA reference model and MLIR through strict tosa-validate.

    g, x = nn_graph({"x": ((1, 8, 8, 3), "f32")})
    g.add_output(Builder(g).op("nn.max_pool2d", [x], attrs), "y")
    report = check_lowering(g, seed=1)        # asserts; returns max errors per output

The expected outputs come from tests/nn_reference.py (numpy, from the nn docs), never from the code
under test. Float outputs are compared as the corpus does: max |got - want| / max(1, max |want|), with
NaN and infinity positions required to agree; integer and boolean outputs must be equal.
"""
from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from nn2tosa.ir import Builder, Graph, Loc, TensorType, Value, verify
from nn2tosa.passes import PassManager
from nn2tosa.passes.context import PassContext

from nn_reference import evaluate

os.environ.setdefault("TOSA_MODEL_NO_BACKTRACE", "1")

# relative bound per element type of an output (f16 / bf16: the corpus' fp16 class)
TOLERANCE = {"f32": 1e-5, "f16": 3e-2, "bf16": 3e-2}


def nn_graph(inputs: dict[str, tuple[tuple[int, ...], str]]) -> tuple[Graph, ...]:
    """A graph with the named inputs (shape, element type); returns (graph, input values...)."""
    g = Graph()
    values = [g.add_input(TensorType(tuple(shape), dtype), name) for name, (shape, dtype) in inputs.items()]
    return (g, *values)


def builder(g: Graph, name: str = "op") -> Builder:
    return Builder(g, Loc(name))


def random_input(rng: np.random.Generator, t: TensorType, lo: float = -2.0, hi: float = 2.0) -> np.ndarray:
    """Random data in t's storage form (bf16 as its raw bits, as the evaluator and reference model take it)."""
    if t.dtype == "bf16":
        real = rng.uniform(lo, hi, t.shape).astype(np.float32)
        return (real.view(np.uint32) >> 16).astype(np.uint16)  # truncation gives exact bf16 values
    if t.dtype == "i1":
        return rng.random(t.shape) < 0.5
    if t.numpy_dtype.kind in "iu":
        info = np.iinfo(t.numpy_dtype)
        return rng.integers(max(info.min, int(lo)), min(info.max, int(hi)), t.shape, endpoint=True).astype(t.numpy_dtype)
    return rng.uniform(lo, hi, t.shape).astype(t.numpy_dtype)


def lower(graph: Graph, context: PassContext | None = None) -> Graph:
    """A TOSA-level copy of `graph`: lower-to-tosa, cse, dce, each verified, under `context` (the
    semantics and NPU target; default litert, none)."""
    low = graph.copy()
    PassManager.from_names("lower-to-tosa,cse,dce", context=context or PassContext()).run(low)
    verify(low)
    return low


def run_reference_model(tosa: bytes, feeds: Sequence[np.ndarray]) -> list[np.ndarray]:
    import tosa_reference_model as trm

    outputs, status = trm.run(tosa, [np.ascontiguousarray(a) for a in feeds], tosa_level="EIGHTK")
    assert status == trm.GraphStatus.TOSA_VALID, status
    # bf16 comes back as 2-byte void records: their bits
    return [o.view(np.uint16) if o.dtype.kind == "V" else o for o in outputs]


def _real(a: np.ndarray, dtype: str) -> np.ndarray:
    if dtype == "bf16":
        return (a.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return a.astype(np.float64)


def float_error(got: np.ndarray, want: np.ndarray) -> tuple[float, list[str]]:
    """The corpus' float error of `got` against `want` (both real values), and what else disagrees."""
    problems = []
    nan_got, nan_want = np.isnan(got), np.isnan(want)
    if (nan_got != nan_want).any():
        problems.append(f"{int((nan_got != nan_want).sum())} NaN positions differ")
    inf = (np.isinf(got) | np.isinf(want)) & ~nan_got & ~nan_want
    if (got[inf] != want[inf]).any():
        problems.append(f"{int((got[inf] != want[inf]).sum())} infinities differ")
    finite = np.isfinite(got) & np.isfinite(want)
    if not finite.any():
        return 0.0, problems
    scale = max(1.0, float(np.abs(want[finite]).max()))
    return float(np.abs(got[finite] - want[finite]).max()) / scale, problems


@dataclass
class Report:
    """What one check measured: per output, the relative float error (0 for exact integer outputs)."""

    errors: dict[str, float] = field(default_factory=dict)
    tosa_ops: dict[str, int] = field(default_factory=dict)
    target: str = ""


def check_lowering(graph: Graph, inputs: Sequence[np.ndarray] | None = None, *, seed: int = 0,
                   tolerance: dict[str, float] | None = None, validate: bool = True,
                   input_range: tuple[float, float] = (-2.0, 2.0)) -> Report:
    """Lower `graph` and check it against the numpy reference on the TOSA reference model (TOSA_VALID,
    outputs within `tolerance` per element type) and, with `validate`, its MLIR against MLIR's verifier
    and strict tosa-validate for exactly the target the converter reports."""
    from nn2tosa.dialects.tosa import with_distinct_outputs
    from nn2tosa.lowering.flatbuffer_emitter import build_flatbuffer
    from nn2tosa.lowering.mlir_emitter import to_mlir
    from nn2tosa.lowering.mlir_emitter import validate as tosa_validate
    from nn2tosa.dialects.tosa_target import required_target

    verify(graph)
    tolerance = {**TOLERANCE, **(tolerance or {})}
    rng = np.random.default_rng(seed)
    if inputs is None:
        inputs = [random_input(rng, graph.types(n)[0], *input_range) for n in graph.inputs]
    expected = evaluate(graph, list(inputs))
    low = lower(graph)
    report = Report(tosa_ops=low.histogram())
    # the target of what the emitters write: an output that is a graph input gets an IDENTITY there
    target = required_target(with_distinct_outputs(low))
    assert not target.problems, target.problems
    report.target = str(target)
    if validate:
        problems = tosa_validate(to_mlir(low, target=target), target)
        assert not problems, problems
    got = run_reference_model(bytes(build_flatbuffer(low)), inputs)
    assert len(got) == len(expected)
    for out, g, want in zip(graph.outputs, got, expected):
        t = graph.type_of(out.value)
        g = np.asarray(g).reshape(want.shape)
        if t.is_float:
            error, problems = float_error(_real(g, t.dtype), _real(want, t.dtype))
            report.errors[out.name] = error
            assert not problems, f"{out.name}: {problems}"
            assert error <= tolerance[t.dtype], f"{out.name}: relative error {error:.3g} > {tolerance[t.dtype]}"
        else:
            np.testing.assert_array_equal(g.astype(want.dtype), want, err_msg=out.name)
            report.errors[out.name] = 0.0
    return report


def add_outputs(g: Graph, values: dict[str, Value]) -> None:
    for name, v in values.items():
        g.add_output(v, name)
