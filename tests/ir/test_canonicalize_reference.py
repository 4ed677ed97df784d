"""The numpy reference evaluator (tests/nn_reference.py) against hand-computed values, naive loops,
and the dialect's own folders (two independent implementations of the same docs must agree)."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from nn2tosa.ir import Graph, Quant, TensorType, Value, op_def, ops_of

import nn_reference
from nn_reference import evaluate, to_real, to_storage


def run(op: str, inputs: list[np.ndarray], out_shape, attrs=None, out_dtype="f32", consts=()) -> np.ndarray:
    """Evaluate one op on graph inputs (then constant operands)."""
    g = Graph()
    operands = [g.add_input(TensorType(a.shape, "f32" if a.dtype == np.float32 else "i32"), f"in{i}")
                for i, a in enumerate(inputs)]
    for c in consts:
        operands.append(Value(g.add_op("nn.constant", [], [TensorType(c.shape, "f32")], {"value": c})))
    node = g.add_op(op, operands, [TensorType(tuple(out_shape), out_dtype)], attrs or {})
    g.add_output(Value(node), "y")
    return evaluate(g, inputs)[0]


def naive_conv2d(x, w, stride, dilation, pad, groups):
    n, h, wd, c = x.shape
    o, kh, kw, cg = w.shape
    xp = np.pad(x, [(0, 0), (pad[0], pad[1]), (pad[2], pad[3]), (0, 0)])
    oh = (h + pad[0] + pad[1] - (kh - 1) * dilation[0] - 1) // stride[0] + 1
    ow = (wd + pad[2] + pad[3] - (kw - 1) * dilation[1] - 1) // stride[1] + 1
    out = np.zeros((n, oh, ow, o))
    per_group = o // groups
    for b, y, xx, oc in itertools.product(range(n), range(oh), range(ow), range(o)):
        g = oc // per_group
        for ky, kx, ic in itertools.product(range(kh), range(kw), range(cg)):
            out[b, y, xx, oc] += xp[b, y * stride[0] + ky * dilation[0], xx * stride[1] + kx * dilation[1],
                                    g * cg + ic] * w[oc, ky, kx, ic]
    return out


def test_conv2d_matches_a_naive_loop():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 5, 6, 4)).astype(np.float32)
    w = rng.standard_normal((6, 3, 2, 2)).astype(np.float32)
    attrs = {"stride": [2, 1], "dilation": [1, 2], "pad": [1, 2, 0, 1], "groups": 2}
    want = naive_conv2d(x.astype(np.float64), w.astype(np.float64), attrs["stride"], attrs["dilation"], attrs["pad"], 2)
    got = run("nn.conv2d", [x], want.shape, attrs, consts=[w])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_depthwise_output_channel_is_c_times_m_plus_m():
    x = np.zeros((1, 1, 1, 2), np.float32)
    x[..., 0], x[..., 1] = 1.0, 10.0
    w = np.arange(1, 7, dtype=np.float32).reshape(1, 1, 2, 3)  # [KH, KW, C=2, M=3]
    got = run("nn.depthwise_conv2d", [x], (1, 1, 1, 6), {"stride": [1, 1], "dilation": [1, 1], "pad": [0, 0, 0, 0]},
              consts=[w])
    np.testing.assert_array_equal(got.reshape(-1), [1, 2, 3, 40, 50, 60])


def test_transpose_conv2d_scatters_and_out_pad_crops():
    x = np.array([1.0, 2.0], np.float32).reshape(1, 1, 2, 1)
    w = np.array([1.0, 10.0, 100.0], np.float32).reshape(1, 1, 3, 1)  # [O, KH, KW, I]
    # full output (stride 2): [1, 10, 100+2, 20, 200], then crop one column on the left
    got = run("nn.transpose_conv2d", [x], (1, 1, 4, 1), {"stride": [1, 2], "out_pad": [0, 0, -1, 0]}, consts=[w])
    np.testing.assert_array_equal(got.reshape(-1), [10, 102, 20, 200])


def test_avg_pool_counts_only_the_counted_padding():
    x = np.ones((1, 1, 2, 1), np.float32)
    common = {"kernel": [1, 2], "stride": [1, 1], "pad": [0, 0, 1, 1], "divisor": 0}
    # counted on the left only: windows [pad, 1] / 2, [1, 1] / 2, [1, pad] / 1
    got = run("nn.avg_pool2d", [x], (1, 1, 3, 1), {**common, "count_pad": [0, 0, 1, 0]})
    np.testing.assert_array_equal(got.reshape(-1), [0.5, 1.0, 1.0])
    got = run("nn.avg_pool2d", [x], (1, 1, 3, 1), {**common, "count_pad": [0, 0, 0, 0], "divisor": 4})
    np.testing.assert_array_equal(got.reshape(-1), [0.25, 0.5, 0.25])


def test_max_pool_padding_never_wins():
    x = -np.ones((1, 1, 1, 1), np.float32)
    got = run("nn.max_pool2d", [x], (1, 1, 1, 1), {"kernel": [3, 3], "stride": [1, 1], "pad": [1, 1, 1, 1],
                                                   "dilation": [1, 1]})
    assert got.item() == -1.0


def test_resize_coordinates():
    x = np.array([0.0, 10.0], np.float32).reshape(1, 1, 2, 1)
    attrs = {"size": [1, 3], "mode": "bilinear", "align_corners": True, "half_pixel_centers": False}
    np.testing.assert_allclose(run("nn.resize", [x], (1, 1, 3, 1), attrs).reshape(-1), [0, 5, 10])
    attrs = {"size": [1, 4], "mode": "bilinear", "align_corners": False, "half_pixel_centers": True}
    np.testing.assert_allclose(run("nn.resize", [x], (1, 1, 4, 1), attrs).reshape(-1), [0, 2.5, 7.5, 10])
    attrs = {"size": [1, 4], "mode": "nearest", "align_corners": False, "half_pixel_centers": False}
    np.testing.assert_array_equal(run("nn.resize", [x], (1, 1, 4, 1), attrs).reshape(-1), [0, 10, 10, 10])


def test_strided_slice_with_negative_stride_reaches_index_zero():
    x = np.arange(5, dtype=np.float32)
    got = run("nn.strided_slice", [x], (3,), {"begin": [4], "end": [-6], "strides": [-2]})
    np.testing.assert_array_equal(got, [4, 2, 0])


@pytest.mark.parametrize("mode,want", [("constant", [9, 1, 2, 3, 9, 9]), ("reflect", [2, 1, 2, 3, 2, 1]),
                                       ("symmetric", [1, 1, 2, 3, 3, 2]), ("edge", [1, 1, 2, 3, 3, 3])])
def test_pad_modes(mode, want):
    x = np.array([1.0, 2.0, 3.0], np.float32)
    got = run("nn.pad", [x], (6,), {"pads": [1, 2], "mode": mode, "value": 9.0})
    np.testing.assert_array_equal(got, want)


def test_quantized_storage_round_trip_and_rounding():
    t = TensorType((4,), "i8", Quant((0.5,), (-3,)))
    real = np.array([-100.0, 0.25, 0.75, 1.0])
    stored = to_storage(real, t)
    np.testing.assert_array_equal(stored, [-128, -2, -1, -1])  # clamped; 0.5 and 1.5 round away from zero
    np.testing.assert_array_equal(to_real(stored, t), [-62.5, 0.5, 1.0, 1.0])
    per_axis = TensorType((2, 1), "i8", Quant((1.0, 0.1), (0, 0), axis=0))
    np.testing.assert_allclose(to_real(np.array([[5], [5]], np.int8), per_axis), [[5.0], [0.5]])


def test_bf16_storage_rounds_to_nearest_even():
    t = TensorType((2,), "bf16")
    bits = to_storage(np.array([1.0, 1.0 + 2 ** -8]), t)  # the second is halfway: stays at 1.0
    np.testing.assert_array_equal(bits, [0x3F80, 0x3F80])
    np.testing.assert_array_equal(to_real(bits, t), [1.0, 1.0])


# ------------------------------------------------------------------------------ against the dialect's folders
def _folder_cases():
    for d in ops_of("nn"):
        if d.fold is not None and d.infer is not None and "elementwise" in d.traits and d.operands in (1, 2) \
                and not d.attrs:
            yield d.name


@pytest.mark.parametrize("op", sorted(_folder_cases()))
def test_elementwise_ops_agree_with_the_dialect_folders(op):
    """Two independent readings of each op's doc (the folder and the reference) give the same numbers."""
    d = op_def(op)
    rng = np.random.default_rng(1)
    integer = op.split(".")[1] in ("bitwise_and", "bitwise_or", "bitwise_xor", "shift_left", "shift_right",
                                   "bitwise_not", "floor_div", "mod", "fmod", "div")
    logical = op.split(".")[1].startswith("logical")
    if logical:
        dtype, values = "i1", [rng.random(6) < 0.5 for _ in range(d.operands)]
    elif integer:
        dtype, values = "i32", [rng.integers(1, 20, 6).astype(np.int32) for _ in range(d.operands)]
        if op.endswith("shift_left") or op.endswith("shift_right"):
            values[1] = rng.integers(0, 4, 6).astype(np.int32)
    else:
        dtype, values = "f32", [(rng.random(6) * 0.9 + 0.05).astype(np.float32) for _ in range(d.operands)]
    in_type = TensorType((6,), dtype)
    out_type = d.infer({}, [in_type] * d.operands)[0]
    folded = d.fold({}, values, [out_type])[0]
    g = Graph()
    ins = [g.add_input(in_type, f"in{i}") for i in range(d.operands)]
    g.add_output(Value(g.add_op(op, ins, [out_type])), "y")
    reference = evaluate(g, values)[0]
    np.testing.assert_allclose(reference.astype(np.float64), np.asarray(folded).astype(np.float64), rtol=2e-6)


def test_every_nn_op_has_a_reference():
    assert {d.name for d in ops_of("nn")} <= nn_reference.supported_ops()
