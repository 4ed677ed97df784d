"""lowering/rules/reductions.py end to end: nn graphs -> numpy reference (tests/nn_reference.py) vs the
lowered .tosa on the TOSA reference model, and the MLIR through strict tosa-validate."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from nn2tosa.ir import TensorType

from lowering_harness import builder, check_lowering, lower, nn_graph

pytest.importorskip("tosa_reference_model", reason="the TOSA reference model comes with tosa-tools")

REDUCTIONS = ["nn.reduce_sum", "nn.reduce_mean", "nn.reduce_max", "nn.reduce_min", "nn.reduce_prod",
              "nn.reduce_any", "nn.reduce_all"]
AXIS_SETS = [[0], [2], [1, 3], [0, 1, 2, 3], [3, 0]]
SHAPE = (2, 3, 4, 3)


def _data(rng, dtype):
    if dtype == "i1":
        return rng.random(SHAPE) < 0.7
    t = TensorType(SHAPE, dtype).numpy_dtype
    if dtype == "bf16":
        return (rng.uniform(0.5, 1.5, SHAPE).astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    if t.kind == "f":  # products of 72 values: keep them near 1
        return (rng.uniform(0.5, 1.5, SHAPE) * rng.choice([-1, 1], SHAPE)).astype(t)
    info = np.iinfo(t)
    return rng.integers(max(info.min, -60), min(info.max, 60), SHAPE, endpoint=True).astype(t)


@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16", "i32", "i16", "i8", "i1"])
def test_every_reduction_over_several_axes_both_keep_dims(dtype):
    rng = np.random.default_rng(1)
    g, x = nn_graph({"x": (SHAPE, dtype)})
    b = builder(g)
    for op, axes, keep in itertools.product(REDUCTIONS, AXIS_SETS, (True, False)):
        if op == "nn.reduce_prod" and dtype in ("i32", "i16", "i8") and len(axes) > 2:
            continue  # 72-element integer products overflow: wrapping agrees, but tells nothing
        g.add_output(b.op(op, [x], {"axes": axes, "keep_dims": keep}), f"{op[10:]}_{'_'.join(map(str, axes))}_{keep}")
    report = check_lowering(g, [_data(rng, dtype)], tolerance={"f16": 3e-3, "bf16": 1e-2})
    low = lower(g)
    assert {low.type_of(o.value).dtype for o in low.outputs} == {dtype}
    if dtype in ("f16", "bf16"):  # accumulation in f32
        assert any(low.op(n) == "tosa.reduce_sum" and low.types(n)[0].dtype == "f32" for n in low.nodes())
    assert max(report.errors.values()) <= 1e-5 or dtype != "f32"


def test_reductions_of_f32_sums_accumulate_well():
    rng = np.random.default_rng(2)
    g, x = nn_graph({"x": ((1000, 3), "f16")})
    g.add_output(builder(g).op("nn.reduce_mean", [x], {"axes": [0], "keep_dims": False}), "mean")
    report = check_lowering(g, [rng.uniform(0, 1, (1000, 3)).astype(np.float16)])
    assert report.errors["mean"] < 1e-3  # an f16 accumulator would be off by ~1e-2


@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16", "i8", "i16", "i32", "i1"])
def test_argmax_argmin_first_index_on_ties(dtype):
    rng = np.random.default_rng(3)
    shape = (3, 4, 5)
    g, x = nn_graph({"x": (shape, dtype)})
    b = builder(g)
    for op, axis, keep, out in itertools.product(("nn.argmax", "nn.argmin"), range(3), (True, False), ("i32", "i64")):
        g.add_output(b.op(op, [x], {"axis": axis, "keep_dims": keep, "output_type": out}),
                     f"{op[3:]}_{axis}_{keep}_{out}")
    if dtype == "i1":
        data = rng.random(shape) < 0.5
    elif dtype == "bf16":
        data = (rng.integers(-3, 3, shape).astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    else:  # few distinct values: many ties
        data = rng.integers(-3, 3, shape).astype(TensorType(shape, dtype).numpy_dtype)
        if dtype in ("i8", "i16", "i32"):
            info = np.iinfo(data.dtype)
            data.flat[:4] = [info.min, info.max, info.min, info.max]
    check_lowering(g, [data])


def test_argmax_with_nan_picks_the_first_nan():
    g, x = nn_graph({"x": ((2, 4), "f32")})
    b = builder(g)
    g.add_output(b.op("nn.argmax", [x], {"axis": 1, "keep_dims": False, "output_type": "i32"}), "max")
    g.add_output(b.op("nn.argmin", [x], {"axis": 1, "keep_dims": False, "output_type": "i32"}), "min")
    check_lowering(g, [np.array([[1, np.nan, 3, np.nan], [-np.inf, 2, np.inf, -np.inf]], np.float32)])


def test_rank_6_reductions_and_rank_1_to_rank_0():
    rng = np.random.default_rng(4)
    shape = (2, 1, 3, 2, 1, 2)
    g, x, v = nn_graph({"x": (shape, "f32"), "v": ((5,), "i32")})
    b = builder(g)
    g.add_output(b.op("nn.reduce_sum", [x], {"axes": [0, 2, 5], "keep_dims": False}), "sum6")
    g.add_output(b.op("nn.reduce_max", [x], {"axes": [1, 3], "keep_dims": True}), "max6")
    g.add_output(b.op("nn.argmax", [x], {"axis": 5, "keep_dims": False, "output_type": "i64"}), "argmax6")
    g.add_output(b.op("nn.reduce_sum", [v], {"axes": [0], "keep_dims": False}), "to_scalar")
    g.add_output(b.op("nn.argmin", [v], {"axis": 0, "keep_dims": False, "output_type": "i32"}), "argmin_scalar")
    check_lowering(g, [rng.standard_normal(shape).astype(np.float32), rng.integers(-9, 9, 5).astype(np.int32)])
