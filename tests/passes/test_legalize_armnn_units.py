"""legalize-armnn on small hand-built Arm NN graphs: the semantics no corpus file exercises (Gelu,
SoftReLu, ScatterNd, the pre-20.08 layer spellings, pooling windows over padding only, plain nearest
resize at non-integer ratios, BatchMatMul adjugates, LSTM without cell activation) and the way
unsupported layers are reported (API and CLI).

Expected values come from Arm NN's reference formulas written out here in numpy, independently of
the pass; the legalized graph is run by the numpy evaluator of the nn dialect (nn_reference.py).
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from conftest import run_cli
from nn_reference import evaluate

from nn2tosa.diagnostics import UnsupportedError
from nn2tosa.frontend.armnn import descriptors
from nn2tosa.frontend.armnn.catalogue import kinds_by_name
from nn2tosa.ir import Graph, Loc, TensorType, Value, verify
from nn2tosa.ir.text import print_ir
from nn2tosa.passes import PassManager
from nn2tosa.schemas import load_schema

RNG = np.random.default_rng(20240607)


def f32(*shape: int) -> TensorType:
    return TensorType(shape, "f32")


class ArmnnGraph:
    """A graph of armnn.* layers built by hand, every descriptor field at its schema default unless given."""

    def __init__(self) -> None:
        self.graph = Graph()
        self.layers = 0

    def input(self, name: str, t: TensorType) -> Value:
        return self.graph.add_input(t, name)

    def constant(self, value: np.ndarray, t: TensorType | None = None) -> Value:
        t = t or TensorType(value.shape, {"float32": "f32", "int32": "i32"}[str(value.dtype)])
        return self.layer("Constant", [], [t], value=value)

    def layer(self, kind: str, operands: list[Value], types: list[TensorType], name: str | None = None,
              **attrs) -> Value | list[Value]:
        k = kinds_by_name()[kind]
        full = descriptors.defaults(load_schema("armnn"), load_schema("armnn").tables[k.descriptor]) if k.descriptor else {}
        full.update(attrs)
        self.layers += 1
        node = self.graph.add_op(f"armnn.{kind}", operands, types, full, Loc(name or kind.lower(), f"layer {self.layers}"))
        results = self.graph.results(node)
        return results[0] if len(results) == 1 else results

    def output(self, value: Value, name: str = "out") -> None:
        self.graph.add_output(value, name)

    def legalized(self, semantics: str = "litert") -> Graph:
        from nn2tosa.passes.context import PassContext

        verify(self.graph)
        PassManager.from_names("legalize-armnn", context=PassContext(semantics)).run(self.graph)
        assert all(not self.graph.op(n).startswith("armnn.") for n in self.graph.nodes())
        return self.graph


def run(b: ArmnnGraph, *inputs: np.ndarray) -> list[np.ndarray]:
    return evaluate(b.legalized(), list(inputs))


# ------------------------------------------------------------------------------ activations
@pytest.mark.parametrize("function, a, b, reference", [
    ("Gelu", 0.0, 0.0, lambda x: 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))),
    ("SoftReLu", 0.0, 0.0, lambda x: np.log(1 + np.exp(x))),
    ("TanH", 2.0, 0.5, lambda x: 2.0 * np.tanh(0.5 * x)),
    ("Linear", -1.5, 0.25, lambda x: -1.5 * x + 0.25),
    ("BoundedReLu", -1.0, 2.0, lambda x: np.minimum(-1.0, np.maximum(2.0, x))),  # b > a: always a
])
def test_activation_functions(function: str, a: float, b: float, reference) -> None:
    g = ArmnnGraph()
    x = g.input("x", f32(2, 5))
    g.output(g.layer("Activation", [x], [f32(2, 5)], activationFunction=function, a=a, b=b))
    data = RNG.normal(size=(2, 5)).astype(np.float32) * 3
    np.testing.assert_allclose(run(g, data)[0], reference(data.astype(np.float64)), rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------------------ ScatterNd (newer than 23.08)
@pytest.mark.parametrize("function", ["Update", "Add", "Sub", "Max", "Min"])
@pytest.mark.parametrize("input_enabled", [True, False])
def test_scatter_nd(function: str, input_enabled: bool) -> None:
    g = ArmnnGraph()
    first = g.input("data", f32(5, 3)) if input_enabled else g.constant(np.asarray([5, 3], np.int32))
    indices = g.input("indices", TensorType((4, 1), "i32"))
    updates = g.input("updates", f32(4, 3))
    g.output(g.layer("ScatterNd", [first, indices, updates], [f32(5, 3)], m_Function=function,
                     m_InputEnabled=input_enabled))
    data = RNG.normal(size=(5, 3)).astype(np.float32)
    idx = np.asarray([[1], [3], [1], [0]], np.int32)  # row 1 twice: sequential order decides
    upd = RNG.normal(size=(4, 3)).astype(np.float32)
    expected = data.astype(np.float64).copy() if input_enabled else np.zeros((5, 3))
    combine = {"Update": lambda old, new: new, "Add": lambda old, new: old + new, "Sub": lambda old, new: old - new,
               "Max": max, "Min": min}[function]
    for i, row in enumerate(idx[:, 0]):
        for c in range(3):
            expected[row, c] = combine(expected[row, c], float(upd[i, c]))
    inputs = ([data] if input_enabled else []) + [idx, upd]
    np.testing.assert_allclose(run(g, *inputs)[0], expected, rtol=1e-6, atol=1e-6)


# ------------------------------------------------------------------------------ pre-20.08 spellings
def test_legacy_layer_types() -> None:
    g = ArmnnGraph()
    x, y = g.input("x", f32(1, 2, 2, 1)), g.input("y", f32(1, 2, 2, 1))
    rsqrt = g.layer("Rsqrt", [g.layer("Abs", [x], [f32(1, 2, 2, 1)])], [f32(1, 2, 2, 1)])
    boolean = TensorType((1, 2, 2, 1), "i1")
    g.output(g.layer("Equal", [x, y], [boolean]), "eq")
    g.output(g.layer("Greater", [x, y], [boolean]), "gt")
    g.output(g.layer("ResizeBilinear", [rsqrt], [f32(1, 3, 4, 1)], targetHeight=3, targetWidth=4, dataLayout="NHWC",
                     alignCorners=True), "resize")
    g.output(g.layer("Merger", [x, y], [f32(1, 2, 2, 2)], concatAxis=3, numViews=2, numDimensions=4,
                     viewOrigins=[[0, 0, 0, 0], [0, 0, 0, 1]]), "merger")
    xs = np.asarray([[[[-4.0], [1.0]], [[0.25], [2.0]]]], np.float32)
    ys = np.asarray([[[[-4.0], [3.0]], [[0.0], [2.0]]]], np.float32)
    eq, gt, resized, merged = run(g, xs, ys)
    np.testing.assert_array_equal(eq, xs == ys)
    np.testing.assert_array_equal(gt, xs > ys)
    np.testing.assert_array_equal(merged, np.concatenate([xs, ys], axis=3))
    r = 1 / np.sqrt(np.abs(xs[0, :, :, 0].astype(np.float64)))  # align corners: src = dst * (in-1)/(out-1)
    expected = np.empty((3, 4))
    for oy in range(3):
        for ox in range(4):
            sy, sx = oy * 1 / 2, ox * 1 / 3
            y0, x0 = int(sy), int(sx)
            y1, x1 = min(y0 + 1, 1), min(x0 + 1, 1)
            top = r[y0, x0] * (1 - (sx - x0)) + r[y0, x1] * (sx - x0)
            bottom = r[y1, x0] * (1 - (sx - x0)) + r[y1, x1] * (sx - x0)
            expected[oy, ox] = top * (1 - (sy - y0)) + bottom * (sy - y0)
    np.testing.assert_allclose(resized[0, :, :, 0], expected, rtol=1e-6)


# ------------------------------------------------------------------------------ resize and pooling corners
@pytest.mark.parametrize("size_in, size_out", [(5, 3), (3, 5), (7, 4)])
def test_plain_nearest_resize_floors_the_source_coordinate(size_in: int, size_out: int) -> None:
    """Arm NN (no align corners, no half-pixel): source index floor(dst * in / out), not rounded."""
    g = ArmnnGraph()
    x = g.input("x", f32(1, 1, size_in, 1))
    g.output(g.layer("Resize", [x], [f32(1, 1, size_out, 1)], targetHeight=1, targetWidth=size_out,
                     method="NearestNeighbor", dataLayout="NHWC"))
    data = np.arange(size_in, dtype=np.float32).reshape(1, 1, size_in, 1)
    expected = [math.floor(o * size_in / size_out) for o in range(size_out)]
    np.testing.assert_array_equal(run(g, data)[0].reshape(-1), expected)


@pytest.mark.parametrize("pool_type", ["Max", "Average", "L2"])
def test_pooling_window_over_padding_only_gives_zero(pool_type: str) -> None:
    """Padding 2 before a kernel of 2: the first window sees padding only; Arm NN writes 0 there
    (Max would otherwise be -inf and an Exclude average 0/0)."""
    g = ArmnnGraph()
    x = g.input("x", f32(1, 1, 3, 1))
    g.output(g.layer("Pooling2d", [x], [f32(1, 1, 3, 1)], poolType=pool_type, padLeft=2, poolWidth=2, poolHeight=1,
                     strideX=2, strideY=1, paddingMethod="Exclude", dataLayout="NHWC"))
    data = np.asarray([3.0, -4.0, 5.0], np.float32).reshape(1, 1, 3, 1)
    windows = [[], [3.0, -4.0], [5.0]]  # starts at -2, 0, 2 (the last one cut at the input's end)
    fn = {"Max": max, "Average": lambda w: sum(w) / len(w), "L2": lambda w: math.sqrt(sum(v * v for v in w) / len(w))}
    expected = [fn[pool_type](w) if w else 0.0 for w in windows]
    np.testing.assert_allclose(run(g, data)[0].reshape(-1), expected, rtol=1e-6)


# ------------------------------------------------------------------------------ BatchMatMul adjoint
def _adjugate(m: np.ndarray) -> np.ndarray:
    n = m.shape[-1]
    cof = np.empty_like(m)
    for i in range(n):
        for j in range(n):
            minor = np.delete(np.delete(m, i, axis=-2), j, axis=-1)
            cof[..., i, j] = (-1) ** (i + j) * np.linalg.det(minor)
    return np.swapaxes(cof, -1, -2)


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_batch_matmul_adjoint_is_the_adjugate(n: int) -> None:
    g = ArmnnGraph()
    x, y = g.input("x", f32(2, n, n)), g.input("y", f32(2, n, 3))
    g.output(g.layer("BatchMatMul", [x, y], [f32(2, n, 3)], adjointX=True))
    xs = RNG.normal(size=(2, n, n)).astype(np.float32)
    ys = RNG.normal(size=(2, n, 3)).astype(np.float32)
    # Arm NN's quirk: a 1x1 matrix's "adjugate" is the element itself (it takes the empty minor's
    # determinant to be the element), not 1.
    adj = xs.astype(np.float64) if n == 1 else _adjugate(xs.astype(np.float64))
    np.testing.assert_allclose(run(g, xs, ys)[0], adj @ ys, rtol=1e-5, atol=1e-5)


def test_batch_matmul_mixed_layouts_are_unsupported() -> None:
    g = ArmnnGraph()
    x, y = g.input("x", f32(1, 2, 3, 4)), g.input("y", f32(1, 2, 4, 5))
    g.output(g.layer("BatchMatMul", [x, y], [f32(1, 2, 3, 5)], dataLayoutX="NHWC", dataLayoutY="NCHW"))
    with pytest.raises(UnsupportedError, match="different dimensions as matrices"):
        g.legalized()


# ------------------------------------------------------------------------------ LSTM without cell activation
def test_lstm_without_activation_multiplies_the_output_gate_by_the_candidate() -> None:
    """activationFunc 0: Arm NN's reference multiplies o by the cell candidate g (its cell scratch
    buffer still holds g), not by the new cell state."""
    batch, inputs, units = 2, 3, 4
    g = ArmnnGraph()
    x, h, c = g.input("x", f32(batch, inputs)), g.input("h", f32(batch, units)), g.input("c", f32(batch, units))
    w = {name: RNG.normal(size=shape).astype(np.float32) * 0.5 for name, shape in [
        ("inputToForgetWeights", (units, inputs)), ("inputToCellWeights", (units, inputs)),
        ("inputToOutputWeights", (units, inputs)), ("recurrentToForgetWeights", (units, units)),
        ("recurrentToCellWeights", (units, units)), ("recurrentToOutputWeights", (units, units)),
        ("forgetGateBias", (units,)), ("cellBias", (units,)), ("outputGateBias", (units,))]}
    params = [g.constant(v) for v in w.values()]
    results = g.layer("Lstm", [x, h, c, *params], [f32(batch, units * 3), f32(batch, units), f32(batch, units),
                                                   f32(batch, units)],
                      activationFunc=0, cifgEnabled=True, inputParams=list(w))
    for name, v in zip(("scratch", "state", "cell", "output"), results):
        g.output(v, name)
    xs, hs, cs = (RNG.normal(size=s).astype(np.float32) for s in ((batch, inputs), (batch, units), (batch, units)))
    sig = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    gate = lambda k: xs @ w[f"inputTo{k}Weights"].T + hs @ w[f"recurrentTo{k}Weights"].T  # noqa: E731
    f = sig(gate("Forget") + w["forgetGateBias"])
    cand = gate("Cell") + w["cellBias"]
    c_new = f * cs + (1 - f) * cand
    o = sig(gate("Output") + w["outputGateBias"])
    hidden = o * cand
    scratch = np.concatenate([cand, 1 - f, hidden], axis=0).reshape(batch, units * 3)
    got = run(g, xs, hs, cs)
    for want, have in zip([scratch, hidden, c_new, hidden], got):
        np.testing.assert_allclose(have, want, rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------------------ unsupported layers
def _three_unsupported() -> ArmnnGraph:
    g = ArmnnGraph()
    x, y = g.input("x", f32(1, 4, 4, 3)), g.input("y", TensorType((1,), "i1"))
    false_out, true_out = g.layer("Switch", [x, y], [f32(1, 4, 4, 3)] * 2, name="switch")
    stand_in = g.layer("StandIn", [true_out], [f32(1, 4, 4, 3)], name="custom", numInputs=1, numOutputs=1)
    lrn = g.layer("Normalization", [stand_in], [f32(1, 4, 4, 3)], name="lrn", normMethodType="LocalContrast",
                  normSize=3, alpha=1.0, beta=0.5, k=1.0, dataLayout="NHWC")
    g.output(g.layer("Activation", [lrn], [f32(1, 4, 4, 3)], activationFunction="ReLu"))
    g.output(false_out, "other")
    return g


def test_unsupported_layers_are_listed_at_once() -> None:
    with pytest.raises(UnsupportedError) as info:
        _three_unsupported().legalized()
    items = info.value.items
    assert [(i.what, i.where) for i in items] == [
        ("Switch", "layer 1 'switch'"), ("StandIn", "layer 2 'custom'"), ("Normalization", "layer 3 'lrn'")]
    assert "control flow" in items[0].why and "LocalContrast" in items[2].why


def test_cli_reports_unsupported_layers_on_one_line_with_exit_3(tmp_path) -> None:
    path = tmp_path / "g.mlir"
    path.write_text(print_ir(_three_unsupported().graph))
    result = run_cli("opt", str(path), "--passes=legalize-armnn")
    assert result.returncode == 3
    lines = result.stderr.decode().strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("nn2tosa: error:") and "3 unsupported constructs" in lines[0]
    for where in ("layer 1 'switch' (Switch)", "layer 2 'custom' (StandIn)", "layer 3 'lrn' (Normalization)"):
        assert where in lines[0]


# ------------------------------------------------------------------------------ L2Normalization below rank 4
@pytest.mark.parametrize("layout, rank, axes", [("NHWC", 2, (1,)), ("NCHW", 3, (0,)), ("NCHW", 2, ())])
def test_l2_normalization_of_low_rank_input_pads_the_shape_like_arm_nn(layout: str, rank: int, axes: tuple) -> None:
    """Arm NN pads the shape with leading 1s to 4-D and reduces over the layout's channel position:
    rank-3 NCHW reduces dimension 0, rank-2 NCHW has a single channel (x / |x|)."""
    shape = (3, 4, 5)[:rank]
    g = ArmnnGraph()
    x = g.input("x", f32(*shape))
    g.output(g.layer("L2Normalization", [x], [f32(*shape)], dataLayout=layout, eps=1e-12))
    data = RNG.normal(size=shape).astype(np.float32)
    squares = np.sum(data.astype(np.float64) ** 2, axis=axes, keepdims=True)
    np.testing.assert_allclose(run(g, data)[0], data / np.sqrt(np.maximum(squares, 1e-12)), rtol=1e-6)


# ------------------------------------------------------------------------------ inconsistent layers
def test_layer_whose_shapes_contradict_each_other_is_invalid_input(tmp_path) -> None:
    """Weights for 4 input channels on a 3-channel input: one error line naming the layer, exit 2."""
    g = ArmnnGraph()
    x = g.input("x", f32(1, 5, 5, 3))
    w = g.constant(RNG.normal(size=(2, 3, 3, 4)).astype(np.float32))
    g.output(g.layer("Convolution2d", [x, w], [f32(1, 3, 3, 2)], name="conv", strideX=1, strideY=1, dataLayout="NHWC"))
    path = tmp_path / "g.mlir"
    path.write_text(print_ir(g.graph))
    result = run_cli("opt", str(path), "--passes=legalize-armnn")
    lines = result.stderr.decode().strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1
    assert "layer 2 'conv'" in lines[0] and "Convolution2d" in lines[0] and "do not fit 3 input channels" in lines[0]


# ------------------------------------------------------------------------------ quantized Pad value
@pytest.mark.parametrize("generation, semantics, pad_value, want", [
    ("20.08", "litert", 0.0, 0.0),  # that TfLite parser never wrote padValue: TFLite's PAD fills the zero point
    ("pre-20.08", "litert", 0.0, 0.0),
    ("20.08", "cpuref", 0.0, 0.5 * (0 - -3)),  # CpuRef fills the stored integer 0
    ("23.08", "litert", 0.0, 0.5 * (0 - -3)),  # later parsers write the zero point itself (-3) when they mean it
    ("23.08", "litert", -3.0, 0.0),
    ("20.08", "litert", 4.0, 0.5 * (4 - -3)),  # a value someone did write is kept
])
def test_quantized_pad_value_by_generation_and_semantics(generation, semantics, pad_value, want) -> None:
    from nn2tosa.ir import Quant

    t = TensorType((1, 2), "i8", Quant((0.5,), (-3,)))
    g = ArmnnGraph()
    g.graph.meta["generation"] = generation
    x = g.input("x", t)
    g.output(g.layer("Pad", [x], [TensorType((1, 4), "i8", Quant((0.5,), (-3,)))], padList=[0, 0, 1, 1],
                     padValue=pad_value, paddingMode="Constant"))
    graph = g.legalized(semantics)
    (pad,) = [n for n in graph.nodes() if graph.op(n) == "nn.pad"]
    assert graph.attrs(pad)["value"] == want
