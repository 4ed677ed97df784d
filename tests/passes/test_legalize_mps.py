"""legalize-mps on hand-built MPS graphs: what the corpus cannot show.

The backend never emits MPSMin, MPSMax or MPSAtan2, and the corpus has no case that tells some
semantics apart (PyTorch's avg-pool divisor under ceil_mode, max-pool indices with padding and
dilation, several advanced indices, saved layer-norm statistics, run-time scatter indices, ...).
Each test builds a small graph of `mps.*` ops, legalizes it and evaluates it with the numpy
reference evaluator; the expected values come from numpy or from naive loops written from
PyTorch's documented formulas, never from the pass.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from conftest import run_cli
from nn2tosa.diagnostics import InvalidInputError, UnsupportedError
from nn2tosa.frontend.mps.dialect import LAYOUTS, OPERAND_SEGMENTS, RESULT_SEGMENTS, absent_attr
from nn2tosa.ir import Graph, Loc, TensorType, Value, verify
from nn2tosa.ir.text import print_ir
from nn2tosa.passes import PassManager

from nn_reference import evaluate

RNG = np.random.default_rng(7)
_DEFAULTS = {"bool": False, "i16": 0, "i32": 0, "int": 0, "f32": 0.0, "float": 0.0, "i32s": [], "ints": []}


# ------------------------------------------------------------------------------ building mps graphs
class MpsGraph:
    """A Graph of mps ops written the way the frontend writes them (segment sizes, absent ids,
    locations `node i`), with defaults for the attributes a test does not care about."""

    def __init__(self) -> None:
        self.g = Graph()
        self.count = 0

    def input(self, shape, dtype="f32") -> Value:
        return self.g.add_input(TensorType(tuple(shape), dtype), f"input{len(self.g.inputs)}")

    def constant(self, array, dtype=None) -> Value:
        from nn2tosa.ir import element_type_of

        array = np.asarray(array)
        t = TensorType(array.shape, dtype or element_type_of(array.dtype))
        return Value(self.g.add_op("mps.constant", (), [t], {"value": array.astype(t.numpy_dtype)}, Loc("value")), 0)

    def node(self, member: str, operands: dict, results: dict, **attrs) -> list[Value]:
        layout = LAYOUTS[member]
        values, sizes = [], []
        for f in layout.operands:
            given = operands.get(f.name)
            if f.variadic:
                given = list(given or [])
                if None in given:
                    attrs[absent_attr(f.name)] = [i for i, v in enumerate(given) if v is None]
                present = [v for v in given if v is not None]
            else:
                present = [] if given is None else [given]
            values += present
            sizes.append(len(present))
        if layout.has_operand_segments:
            attrs[OPERAND_SEGMENTS] = sizes
        types, rsizes = [], []
        for f in layout.results:
            given = results.get(f.name)
            present = list(given) if f.variadic else ([] if given is None else [given])
            types += [TensorType(tuple(s), d) for s, d in present]
            rsizes.append(len(present))
        if layout.has_result_segments:
            attrs[RESULT_SEGMENTS] = rsizes
        for name, kind in layout.attrs.items():
            if name not in attrs and kind in _DEFAULTS:
                attrs[name] = _DEFAULTS[kind]
        node = self.g.add_op(layout.op, values, types, attrs, Loc(f"node {self.count}", member))
        self.count += 1
        return self.g.results(node)

    def one(self, member: str, operands: dict, out_shape, out_dtype="f32", /, **attrs) -> Value:
        """A node with one result (`output_id`); attributes by keyword."""
        return self.node(member, operands, {"output_id": (out_shape, out_dtype)}, **attrs)[0]

    def run(self, outputs: list[Value], inputs: list[np.ndarray]) -> list[np.ndarray]:
        for i, v in enumerate(outputs):
            self.g.add_output(v, f"output{i}")
        verify(self.g)  # a well-formed mps graph to begin with
        PassManager.from_names("legalize-mps").run(self.g)
        assert not [n for n in self.g.nodes() if self.g.op(n).startswith("mps.")]
        return evaluate(self.g, inputs)


def unary_graph(member, shape, in_dtype="f32", out_dtype=None, /, **attrs):
    m = MpsGraph()
    x = m.input(shape, in_dtype)
    return m, m.one(member, {"input1_id": x}, shape, out_dtype or in_dtype, **attrs)


def binary(member, x, y, out_dtype="f32", /, **attrs) -> np.ndarray:
    m = MpsGraph()
    a, b = m.input(x.shape, _dt(x)), m.input(y.shape, _dt(y))
    shape = np.broadcast_shapes(x.shape, y.shape)
    (out,) = m.run([m.one(member, {"input1_id": a, "input2_id": b}, shape, out_dtype, **attrs)], [x, y])
    return out


def _dt(a: np.ndarray) -> str:
    from nn2tosa.ir import element_type_of

    return element_type_of(a.dtype)


# ------------------------------------------------------------------------------ members the backend never emits
def test_min_max_are_nan_propagating_binary_min_max():
    x = np.array([1.0, -2.0, np.nan, 3.0, 0.5], np.float32)
    y = np.array([0.5, -1.0, 1.0, np.nan, 0.5], np.float32)
    np.testing.assert_array_equal(binary("MPSMin", x, y), np.minimum(x, y))
    np.testing.assert_array_equal(binary("MPSMax", x, y), np.maximum(x, y))


def test_atan2_every_quadrant_and_axis():
    ys, xs = np.meshgrid([-2.0, -0.5, 0.0, 0.5, 2.0], [-3.0, -1.0, 0.0, 1.0, 3.0], indexing="ij")
    y, x = ys.astype(np.float32), xs.astype(np.float32)
    np.testing.assert_allclose(binary("MPSAtan2", y, x), np.arctan2(y, x), atol=1e-6)


# ------------------------------------------------------------------------------ arithmetic
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_division_rounding_modes(dtype):
    x = np.array([7, -7, 7, -7, 6, -1], dtype)
    y = np.array([2, 2, -2, -2, 4, 3], dtype)
    true_div = binary("MPSDiv", x, y, "f32")
    np.testing.assert_allclose(true_div, x.astype(np.float64) / y, rtol=1e-6)
    expect_dtype = "f32" if dtype == np.float32 else "i32"
    trunc = binary("MPSDiv", x, y, expect_dtype, rounding_mode="trunc")
    np.testing.assert_array_equal(trunc, np.trunc(x.astype(np.float64) / y))
    floor = binary("MPSDiv", x, y, expect_dtype, rounding_mode="floor")
    np.testing.assert_array_equal(floor, np.floor(x.astype(np.float64) / y))
    np.testing.assert_array_equal(binary("MPSFmod", x, y, expect_dtype), np.fmod(x, y))  # sign of x
    np.testing.assert_array_equal(binary("MPSRemainder", x, y, expect_dtype), np.mod(x, y))  # sign of y


def test_fmod_node_with_floor_rounding_is_floor_division():
    """The runtime's divModeTemplate takes the node's rounding_mode over the member's default; Fmod
    only keeps the remainder with "trunc"."""
    x, y = np.array([7.0, -7.0], np.float32), np.array([2.0, 2.0], np.float32)
    np.testing.assert_array_equal(binary("MPSFmod", x, y, rounding_mode="floor"), [3.0, -4.0])


def test_add_sub_alpha_float_and_integer():
    x, y = np.array([1.0, 2.0, -3.0], np.float32), np.array([0.5, -1.0, 2.0], np.float32)
    np.testing.assert_allclose(binary("MPSAdd", x, y, alpha=2.5), x + 2.5 * y)
    np.testing.assert_allclose(binary("MPSSub", x, y, alpha=0.5), x - 0.5 * y)
    xi, yi = np.array([1, 2, -3], np.int32), np.array([5, -1, 2], np.int32)
    np.testing.assert_array_equal(binary("MPSAdd", xi, yi, "i32", alpha=3.0), xi + 3 * yi)


def test_boolean_add_and_mul_are_or_and_and():
    x, y = np.array([True, True, False, False]), np.array([True, False, True, False])
    np.testing.assert_array_equal(binary("MPSAdd", x, y, "i1"), x | y)
    np.testing.assert_array_equal(binary("MPSMul", x, y, "i1"), x & y)


def test_mixed_operands_promote_like_pytorch():
    """int64 scalar minus float tensor (ut_logit's 1 - x) is float; an int32 tensor compared with a
    float one compares as floats."""
    m = MpsGraph()
    one = m.constant(np.array(1, np.int64))
    x = m.input([3])
    diff = m.one("MPSSub", {"input1_id": one, "input2_id": x}, [3], alpha=1.0)
    i = m.input([3], "i32")
    less = m.one("MPSLt", {"input1_id": i, "input2_id": x}, [3], "i1")
    xv, iv = np.array([0.25, 0.5, 2.0], np.float32), np.array([0, 1, 2], np.int32)
    got_diff, got_less = m.run([diff, less], [xv, iv])
    np.testing.assert_allclose(got_diff, 1 - xv)
    np.testing.assert_array_equal(got_less, iv < xv)


def test_float_to_int_cast_truncates_toward_zero():
    m, y = unary_graph("MPSCast", [4], "f32", "i32", dtype="mps_data_type_int32")
    (got,) = m.run([y], [np.array([1.7, -1.7, 2.5, -0.5], np.float32)])
    np.testing.assert_array_equal(got, [1, -1, 2, 0])


def test_round_is_half_to_even_and_integer_rounding_is_identity():
    m, y = unary_graph("MPSRound", [6])
    (got,) = m.run([y], [np.array([0.5, 1.5, 2.5, -0.5, -1.5, 2.4], np.float32)])
    np.testing.assert_array_equal(got, [0, 2, 2, -0, -2, 2])
    m, y = unary_graph("MPSFloor", [3], "i32")
    (got,) = m.run([y], [np.array([-3, 0, 5], np.int32)])
    np.testing.assert_array_equal(got, [-3, 0, 5])


def test_one_sided_clamp_on_integers():
    m = MpsGraph()
    x = m.input([4], "i32")
    y = m.one("MPSClamp", {"input1_id": x}, [4], "i32", min_value=-1.0, max_value=math.inf)
    (got,) = m.run([y], [np.array([-5, -1, 0, 9], np.int32)])
    np.testing.assert_array_equal(got, [-1, -1, 0, 9])


# ------------------------------------------------------------------------------ pooling
def torch_avg_pool(x, k, s, p, ceil_mode, count_include_pad, divisor=0):
    """PyTorch's avg_pool2d, written from its definition: output size with ceil_mode (the last window
    must start inside the input or the left padding), windows clipped to input + padding for the
    count_include_pad divisor, to the input otherwise."""
    n, c, h, w = x.shape

    def out_size(size):
        o = (size + 2 * p - k + ((s - 1) if ceil_mode else 0)) // s + 1
        return o - 1 if ceil_mode and (o - 1) * s >= size + p else o

    oh, ow = out_size(h), out_size(w)
    y = np.zeros((n, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            h0, w0 = i * s - p, j * s - p
            h1, w1 = min(h0 + k, h + p), min(w0 + k, w + p)
            pool = (h1 - h0) * (w1 - w0)
            h0c, w0c, h1c, w1c = max(h0, 0), max(w0, 0), min(h1, h), min(w1, w)
            total = x[:, :, h0c:h1c, w0c:w1c].sum(axis=(2, 3))
            d = divisor or (pool if count_include_pad else (h1c - h0c) * (w1c - w0c))
            y[:, :, i, j] = total / d
    return y


@pytest.mark.parametrize("count_include_pad", [True, False])
def test_avg_pool_ceil_mode_divides_by_pytorchs_window(count_include_pad):
    """k=3, s=2, p=1 on 6x6 with ceil_mode: the last window hangs past the padding. The backend records
    padding_bottom/right as padding * stride (2); PyTorch counts only its own padding (1)."""
    x = RNG.standard_normal((1, 2, 6, 6)).astype(np.float32)
    want = torch_avg_pool(x.astype(np.float64), 3, 2, 1, True, count_include_pad)
    m = MpsGraph()
    inp = m.input(x.shape)
    (y,) = m.node("MPSAvgPool2D", {"input1_id": inp}, {"output1_id": (want.shape, "f32")},
                  kernel_height=3, kernel_width=3, stride_height=2, stride_width=2, padding_top=1, padding_left=1,
                  padding_bottom=2, padding_right=2, dilation_height=1, dilation_width=1, ceil_mode=True,
                  count_include_pad=count_include_pad)
    (got,) = m.run([y], [x])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_avg_pool_divisor_override():
    x = RNG.standard_normal((1, 1, 5, 5)).astype(np.float32)
    want = torch_avg_pool(x.astype(np.float64), 2, 2, 1, False, True, divisor=3)
    m = MpsGraph()
    inp = m.input(x.shape)
    (y,) = m.node("MPSAvgPool2D", {"input1_id": inp}, {"output1_id": (want.shape, "f32")},
                  kernel_height=2, kernel_width=2, stride_height=2, stride_width=2, padding_top=1, padding_left=1,
                  padding_bottom=1, padding_right=1, dilation_height=1, dilation_width=1, count_include_pad=True,
                  divisor_override=3)
    (got,) = m.run([y], [x])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def torch_max_pool_with_indices(x, k, s, p, d, out):
    """max_pool2d_with_indices by its definition: the first maximum over the window taps in row-major
    scan order, skipping positions outside the input; the index is h * W + w within the plane."""
    n, c, h, w = x.shape
    values, indices = np.zeros((n, c) + out), np.zeros((n, c) + out, np.int64)
    for b in range(n):
        for ch in range(c):
            for i in range(out[0]):
                for j in range(out[1]):
                    best, at = -np.inf, -1
                    for ky in range(k):
                        for kx in range(k):
                            yy, xx = i * s - p + ky * d, j * s - p + kx * d
                            if 0 <= yy < h and 0 <= xx < w and x[b, ch, yy, xx] > best:
                                best, at = x[b, ch, yy, xx], yy * w + xx
                    values[b, ch, i, j], indices[b, ch, i, j] = best, at
    return values, indices


def test_max_pool_indices_with_padding_dilation_and_ceil_mode():
    x = RNG.standard_normal((2, 2, 7, 7)).astype(np.float32)
    # k=3, s=2, p=1, dilation 2, ceil_mode: out = ceil((7 + 2 - 5) / 2) + 1 = 3
    want_values, want_indices = torch_max_pool_with_indices(x, 3, 2, 1, 2, (3, 3))
    m = MpsGraph()
    inp = m.input(x.shape)
    values, indices = m.node("MPSMaxPool2DWithIndices", {"input1_id": inp},
                             {"output1_id": ((2, 2, 3, 3), "f32"), "output2_id": ((2, 2, 3, 3), "i64")},
                             kernel_height=3, kernel_width=3, stride_height=2, stride_width=2, padding_top=1,
                             padding_left=1, padding_bottom=2, padding_right=2, dilation_height=2,
                             dilation_width=2, ceil_mode=True)
    got_values, got_indices = m.run([values, indices], [x])
    np.testing.assert_array_equal(got_values, want_values.astype(np.float32))
    np.testing.assert_array_equal(got_indices, want_indices)


def test_unused_max_pool_indices_are_not_computed():
    m = MpsGraph()
    inp = m.input((1, 1, 4, 4))
    values, _ = m.node("MPSMaxPool2DWithIndices", {"input1_id": inp},
                       {"output1_id": ((1, 1, 2, 2), "f32"), "output2_id": ((1, 1, 2, 2), "i64")},
                       kernel_height=2, kernel_width=2, stride_height=2, stride_width=2, dilation_height=1,
                       dilation_width=1)
    m.run([values], [np.zeros((1, 1, 4, 4), np.float32)])
    assert set(m.g.histogram()) == {"nn.max_pool2d", "nn.transpose"}


# ------------------------------------------------------------------------------ normalization
def test_layer_norm_saved_mean_and_rstd_when_used():
    x = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    m = MpsGraph()
    inp = m.input(x.shape)
    bias = m.constant(np.full((3, 4), 0.5, np.float32))
    y, mean, rstd = m.node("MPSLayerNorm", {"input1_id": inp, "bias_id": bias},
                           {"output1_id": ((2, 3, 4), "f32"), "output2_id": ((2, 1, 1), "f32"),
                            "output3_id": ((2, 1, 1), "f32")}, normalized_shape=[3, 4], eps=1e-3)
    got_y, got_mean, got_rstd = m.run([y, mean, rstd], [x])
    x64 = x.astype(np.float64)
    want_mean = x64.mean(axis=(1, 2), keepdims=True)
    want_rstd = 1 / np.sqrt(x64.var(axis=(1, 2), keepdims=True) + 1e-3)
    np.testing.assert_allclose(got_mean, want_mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_rstd, want_rstd, rtol=1e-5)
    np.testing.assert_allclose(got_y, (x64 - want_mean) * want_rstd + 0.5, rtol=1e-5, atol=1e-5)


def test_batch_norm_without_affine_parameters():
    x = RNG.standard_normal((2, 3, 5)).astype(np.float32)
    mean, var = np.array([0.1, -0.2, 0.3], np.float32), np.array([1.0, 0.5, 2.0], np.float32)
    m = MpsGraph()
    inp = m.input(x.shape)
    y, _, _ = m.node("MPSBatchNorm", {"input_id": inp, "mean_id": m.constant(mean), "var_id": m.constant(var)},
                     {"output1_id": ((2, 3, 5), "f32"), "output2_id": ((0,), "f32"), "output3_id": ((0,), "f32")},
                     epsilon=1e-5)
    (got,) = m.run([y], [x])
    want = (x - mean[:, None]) / np.sqrt(var[:, None] + 1e-5)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------------------ indexing
@pytest.mark.parametrize("positions", [(1, 2), (1, 3), (0, 3)])
def test_index_tensor_several_indices_follow_numpy_advanced_indexing(positions):
    """PyTorch and numpy agree: adjacent index dimensions are replaced in place, others move to the front;
    negative indices count from the end."""
    x = RNG.standard_normal((4, 5, 6, 3)).astype(np.float32)
    i = np.array([[0, -1], [2, 1]], np.int64)
    j = np.array([1, -2], np.int64)
    key = [slice(None)] * 4
    key[positions[0]], key[positions[1]] = i % x.shape[positions[0]], j % x.shape[positions[1]]
    want = x[tuple(key)]
    m = MpsGraph()
    inp, a, b = m.input(x.shape), m.input(i.shape, "i64"), m.input(j.shape, "i64")
    indices = [None] * (positions[1] + 1)
    indices[positions[0]], indices[positions[1]] = a, b
    y = m.one("MPSIndexTensor", {"input1_id": inp, "indices_id": indices}, want.shape)
    (got,) = m.run([y], [x, i, j])
    np.testing.assert_array_equal(got, want)


def test_index_put_several_indices_assigns():
    x = RNG.standard_normal((3, 4, 5)).astype(np.float32)
    i, j = np.array([0, 2, -1], np.int64), np.array([1, 3, 0], np.int64)
    values = RNG.standard_normal((3, 1)).astype(np.float32)  # broadcast to x[:, i, j]'s [3, 3]
    want = x.copy()
    want[:, i, j] = values
    m = MpsGraph()
    inp, a, b, v = m.input(x.shape), m.input(i.shape, "i64"), m.input(j.shape, "i64"), m.input(values.shape)
    y = m.one("MPSIndexPut", {"input1_id": inp, "indices_id": [None, a, b], "values_id": v}, x.shape)
    (got,) = m.run([y], [x, i, j, values])
    np.testing.assert_array_equal(got, want)


def test_scatter_with_run_time_index_is_put_along_axis():
    x = RNG.standard_normal((3, 6)).astype(np.float32)
    index = np.array([[0, 5], [2, 3], [4, 1]], np.int64)
    src = RNG.standard_normal((3, 3)).astype(np.float32)  # only src[:, :2] is used
    want = x.copy()
    np.put_along_axis(want, index, src[:, :2], axis=1)
    m = MpsGraph()
    inp, idx, s = m.input(x.shape), m.input(index.shape, "i64"), m.input(src.shape)
    y = m.one("MPSScatter", {"input1_id": inp, "idx_id": idx, "src_id": s}, x.shape, dim=-1)
    (got,) = m.run([y], [x, index, src])
    np.testing.assert_array_equal(got, want)


# ------------------------------------------------------------------------------ shapes
def test_pixel_shuffle_by_definition():
    r, c, h, w = 2, 3, 2, 3
    x = np.arange(2 * c * r * r * h * w, dtype=np.float32).reshape(2, c * r * r, h, w)
    want = np.zeros((2, c, h * r, w * r), np.float32)
    for ch in range(c):
        for i in range(r):
            for j in range(r):
                want[:, ch, i::r, j::r] = x[:, ch * r * r + i * r + j]
    m, y = unary_graph("MPSPixelShuffle", x.shape, upscale_factor=r)
    m.g.types(y.node)[0] = TensorType(want.shape, "f32")
    (got,) = m.run([y], [x])
    np.testing.assert_array_equal(got, want)


def test_constant_pad_negative_amounts_crop():
    x = np.arange(20, dtype=np.float32).reshape(4, 5)
    m = MpsGraph()
    inp = m.input(x.shape)
    y = m.one("MPSConstantPadND", {"input1_id": inp}, (5, 5), pad=[-1, 1, 2, -1], value=9.0)
    (got,) = m.run([y], [x])
    want = np.pad(x[:3, 1:], ((2, 0), (0, 1)), constant_values=9.0)
    np.testing.assert_array_equal(got, want)


# ------------------------------------------------------------------------------ convolution
def torch_conv_transpose(x, w, stride, padding, output_padding):
    """ConvTranspose2d by its definition: each input pixel scatters w[cin, cout] into the output."""
    n, cin, h, wd = x.shape
    _, cout, kh, kw = w.shape
    full = np.zeros((n, cout, (h - 1) * stride + kh + output_padding, (wd - 1) * stride + kw + output_padding))
    for y in range(h):
        for xx in range(wd):
            full[:, :, y * stride:y * stride + kh, xx * stride:xx * stride + kw] += np.einsum(
                "nc,cokl->nokl", x[:, :, y, xx], w)
    return full[:, :, padding:full.shape[2] - padding, padding:full.shape[3] - padding]


def test_transposed_convolution_with_square_weights_is_told_apart_by_its_declared_shape():
    """ConvTranspose2d(4, 4, 3, stride=2, padding=1, output_padding=1): its weights [4, 4, 3, 3] also fit
    a forward convolution, but the declared result [1, 4, 6, 6] is the transposed one's."""
    x = RNG.standard_normal((1, 4, 3, 3)).astype(np.float32)
    w = RNG.standard_normal((4, 4, 3, 3)).astype(np.float32)
    bias = np.array([0.5, -0.5, 1.0, 0.0], np.float32)
    want = torch_conv_transpose(x.astype(np.float64), w.astype(np.float64), 2, 1, 1) + bias[:, None, None]
    m = MpsGraph()
    inp = m.input(x.shape)
    y = m.one("MPSConv2D", {"input1_id": inp, "input2_id": m.constant(w), "input3_id": m.constant(bias)},
              want.shape, stride_x=2, stride_y=2, dilation_x=1, dilation_y=1, groups=1, padding_left=1,
              padding_right=1, padding_top=1, padding_bottom=1)
    (got,) = m.run([y], [x])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------------------ int4 weights
def test_group_dequantization_with_zero_points_folds_to_a_constant():
    q = RNG.integers(-8, 8, (4, 8)).astype(np.int8)
    scales = RNG.uniform(0.01, 0.1, (4, 2)).astype(np.float32)
    zero_points = RNG.integers(-2, 3, (4, 2)).astype(np.int8)
    want = (q.reshape(4, 2, 4) - zero_points[..., None].astype(np.float64)) * scales[..., None]
    m = MpsGraph()
    w = m.one("MPSDequantizePerChannelGroup", {"input1_id": m.constant(q, "i4"), "scales_id": m.constant(scales),
                                               "zero_points_id": m.constant(zero_points)}, (4, 8),
              dtype="mps_data_type_int8", output_dtype="mps_data_type_float32", group_size=4, quant_min=-8, quant_max=7)
    (got,) = m.run([w], [])
    np.testing.assert_allclose(got, want.reshape(4, 8), rtol=1e-6)
    assert m.g.histogram() == {"nn.constant": 1}


def test_group_dequantization_with_bfloat16_scales():
    q = np.array([[1, -2, 3, -4]], np.int8)
    bits = np.array([[0x3F00, 0x4040]], np.uint16)  # bfloat16 0.5 and 3.0
    m = MpsGraph()
    w = m.one("MPSDequantizePerChannelGroup", {"input1_id": m.constant(q, "i4"), "scales_id": m.constant(bits, "bf16")},
              (1, 4), dtype="mps_data_type_int8", output_dtype="mps_data_type_float32", group_size=2)
    (got,) = m.run([w], [])
    np.testing.assert_array_equal(got, [[0.5, -1.0, 9.0, -12.0]])


def test_group_dequantization_of_run_time_weights():
    q = RNG.integers(-8, 8, (2, 6)).astype(np.int8)
    scales = np.array([[0.5, 0.25, 2.0], [1.0, 0.125, 4.0]], np.float32)
    m = MpsGraph()
    w = m.one("MPSDequantizePerChannelGroup", {"input1_id": m.input(q.shape, "i8"), "scales_id": m.constant(scales)},
              (2, 6), dtype="mps_data_type_int8", output_dtype="mps_data_type_float32", group_size=2)
    (got,) = m.run([w], [q])
    np.testing.assert_array_equal(got, q * np.repeat(scales, 2, axis=1))


# ------------------------------------------------------------------------------ fp16, constants, locations
def test_fp16_graph_computes_in_f16_between_its_boundary_casts():
    m = MpsGraph()
    x = m.input([4])
    half = m.one("MPSCast", {"input1_id": x}, [4], "f16", dtype="mps_data_type_float16")
    weight = m.constant(np.array([1, 2, 3, 4], np.float16))
    product = m.one("MPSMul", {"input1_id": half, "input2_id": weight}, [4], "f32")  # declared f32
    out = m.one("MPSCast", {"input1_id": product}, [4], "f32", dtype="mps_data_type_float32")
    xv = np.array([0.1, 1000.3, -3.0, 65000.0], np.float32)  # 65000 * 4 overflows f16: inf
    (got,) = m.run([out], [xv])
    mul = next(n for n in m.g.nodes() if m.g.op(n) == "nn.mul")
    assert m.g.types(mul)[0].dtype == "f16"
    assert m.g.type_of(m.g.outputs[0].value).dtype == "f32"
    with np.errstate(over="ignore"):
        want = (xv.astype(np.float16) * np.array([1, 2, 3, 4], np.float16)).astype(np.float32)
    np.testing.assert_array_equal(got, want)


def test_ops_keep_their_node_location_and_constants_stay_the_same_array():
    m = MpsGraph()
    x = m.input((1, 2, 4, 4))
    weights = np.ones((3, 2, 3, 3), np.float32)
    y = m.one("MPSConv2D", {"input1_id": x, "input2_id": m.constant(weights)}, (1, 3, 2, 2),
              stride_x=1, stride_y=1, dilation_x=1, dilation_y=1, groups=1)
    constant_array = next(m.g.attrs(n)["value"] for n in m.g.nodes() if m.g.op(n) == "mps.constant")
    m.run([y], [np.zeros((1, 2, 4, 4), np.float32)])
    locs = {m.g.loc(n) for n in m.g.nodes() if m.g.op(n) not in ("nn.constant", "graph.input")}
    assert locs == {Loc("node 0", "MPSConv2D")}
    (kept,) = [m.g.attrs(n)["value"] for n in m.g.nodes() if m.g.op(n) == "nn.constant"]
    assert kept is constant_array


# ------------------------------------------------------------------------------ errors
def unsupported_graph() -> MpsGraph:
    m = MpsGraph()
    x = m.input((2, 3))
    mask = m.input((2,), "i1")
    m.one("MPSIndexTensor", {"input1_id": x, "indices_id": [mask]}, (1, 3))  # boolean mask
    img = m.input((1, 1, 5, 5))
    m.node("MPSAvgPool2D", {"input1_id": img}, {"output1_id": ((1, 1, 3, 3), "f32")}, kernel_height=2,
           kernel_width=2, stride_height=1, stride_width=1, dilation_height=2, dilation_width=2)
    m.node("MPSBatchNorm", {"input_id": img}, {"output1_id": ((1, 1, 5, 5), "f32")}, epsilon=1e-5)
    for i, n in enumerate(list(m.g.nodes())):
        if m.g.op(n).startswith("mps.") and m.g.op(n) != "mps.constant":
            for v in m.g.results(n):
                m.g.add_output(v, f"out{i}")
    return m


def test_unsupported_nodes_are_listed_together():
    m = unsupported_graph()
    with pytest.raises(UnsupportedError) as e:
        PassManager.from_names("legalize-mps").run(m.g)
    assert [(u.where, u.what) for u in e.value.items] == [
        ("node 0", "MPSIndexTensor"), ("node 1", "MPSAvgPool2D"), ("node 2", "MPSBatchNorm")]
    assert "boolean mask" in e.value.items[0].why and "dilat" in e.value.items[1].why


def test_unsupported_nodes_exit_3_with_one_line(tmp_path):
    src = tmp_path / "unsupported.mlir"
    src.write_text(print_ir(unsupported_graph().g))
    proc = run_cli("opt", str(src), "--passes=legalize-mps")
    assert proc.returncode == 3, proc.stderr
    lines = proc.stderr.decode().strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in lines[0]
    assert "3 unsupported constructs" in lines[0]
    assert all(f"node {i}" in lines[0] for i in range(3))


def test_contradicting_declared_shape_is_invalid_input():
    m = MpsGraph()
    x = m.input((2, 3))
    y = m.one("MPSView", {"input1_id": x}, (4, 2), num_dims=2, shape=[4, 2])
    m.g.add_output(y, "out")
    with pytest.raises(InvalidInputError) as e:
        PassManager.from_names("legalize-mps").run(m.g)
    assert e.value.where == "node 0 (MPSView)"


# ------------------------------------------------------------------------------ constants and small cases
def test_full_arange_and_empty_cat_pieces():
    """full() of rank 0 stays rank 0; arange with an integer dtype truncates start + i * step (torch);
    an empty full() among cat's pieces (the runtime's nil tensor) contributes nothing."""
    m = MpsGraph()
    scalar = m.one("MPSFull", {}, (), "f32", shape=[], fill_value=2.5, dtype="mps_data_type_float32")
    ints = m.one("MPSArange", {}, (3,), "i64", start=0.5, end=3.0, step=1.0, dtype="mps_data_type_int64")
    x = m.input((2, 3))
    empty = m.one("MPSFull", {}, (0,), "f32", shape=[0], fill_value=0.0, dtype="mps_data_type_float32")
    joined = m.one("MPSCat", {"input_ids": [x, empty]}, (2, 3), dim=0)
    xv = RNG.standard_normal((2, 3)).astype(np.float32)
    got_scalar, got_ints, got_joined = m.run([scalar, ints, joined], [xv])
    assert got_scalar.shape == () and got_scalar == 2.5
    np.testing.assert_array_equal(got_ints, np.trunc(0.5 + np.arange(3)))
    np.testing.assert_array_equal(got_joined, xv)


def test_softmax_half_to_float_normalizes_f16_into_f32():
    x = np.array([[1.0, 2.0, 3.0], [-1.0, 0.0, 1.0]], np.float16)
    m, y = unary_graph("MPSSoftmax", x.shape, "f16", "f32", dim=1, half_to_float=True)
    (got,) = m.run([y], [x])
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, e / e.sum(axis=1, keepdims=True), rtol=1e-6)


def test_grouped_convolution_against_a_naive_loop():
    """groups=2 (not depthwise): output channel o reads the input channels of its group."""
    x = RNG.standard_normal((1, 4, 5, 5)).astype(np.float32)
    w = RNG.standard_normal((6, 2, 3, 3)).astype(np.float32)
    want = np.zeros((1, 6, 3, 3))
    for o in range(6):
        g = o // 3
        for i in range(3):
            for j in range(3):
                want[0, o, i, j] = np.sum(x[0, 2 * g:2 * g + 2, i:i + 3, j:j + 3] * w[o])
    m = MpsGraph()
    inp = m.input(x.shape)
    y = m.one("MPSConv2D", {"input1_id": inp, "input2_id": m.constant(w)}, want.shape,
              stride_x=1, stride_y=1, dilation_x=1, dilation_y=1, groups=2)
    (got,) = m.run([y], [x])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
