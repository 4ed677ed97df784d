"""Lowering of nn.matmul and nn.fully_connected, checked end to end against the numpy reference on
the TOSA reference model, with strict tosa-validate of the MLIR (tests/lowering_harness.py)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nn2tosa.diagnostics import UnsupportedError
from nn2tosa.ir import Graph, TensorType

from lowering_harness import builder, check_lowering, lower, nn_graph, random_input

pytest.importorskip("tosa_reference_model", reason="the TOSA reference model comes with tosa-tools")

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FLOATS = ("f32", "f16", "bf16")


@st.composite
def matmul_shapes(draw):
    """Operand shapes of rank >= 2 whose batch dimensions broadcast (either side may lack some)."""
    m, k, n = (draw(st.integers(1, 5)) for _ in range(3))
    batch = [draw(st.integers(1, 3)) for _ in range(draw(st.integers(0, 4)))]  # up to rank 6
    a_batch = [d if draw(st.booleans()) else 1 for d in batch][draw(st.integers(0, len(batch))):]
    b_batch = [d if draw(st.booleans()) else 1 for d in batch][draw(st.integers(0, len(batch))):]
    return (*a_batch, m, k), (*b_batch, k, n), draw(st.booleans())


@given(cases=st.lists(matmul_shapes(), min_size=1, max_size=6), dtype=st.sampled_from(FLOATS), seed=st.integers(0, 99))
@SETTINGS
def test_matmul_random(cases, dtype, seed):
    rng = np.random.default_rng(seed)
    g = Graph()
    b = builder(g)
    for i, (a_shape, b_shape, b_constant) in enumerate(cases):
        lhs = g.add_input(TensorType(a_shape, dtype), f"a{i}")
        rhs = (b.constant(random_input(rng, TensorType(b_shape, dtype)), dtype) if b_constant
               else g.add_input(TensorType(b_shape, dtype), f"b{i}"))
        g.add_output(b.op("nn.matmul", [lhs, rhs]), f"y{i}")
    check_lowering(g, seed=seed)


@st.composite
def fully_connected_shapes(draw):
    leading = [draw(st.integers(1, 4)) for _ in range(draw(st.integers(0, 5)))]  # up to rank 6
    k, o = draw(st.integers(1, 8)), draw(st.integers(1, 6))
    return (*leading, k), (o, k), draw(st.booleans()), draw(st.booleans())


@given(cases=st.lists(fully_connected_shapes(), min_size=1, max_size=6), dtype=st.sampled_from(FLOATS),
       seed=st.integers(0, 99))
@SETTINGS
def test_fully_connected_random(cases, dtype, seed):
    rng = np.random.default_rng(seed)
    g = Graph()
    b = builder(g)
    for i, (x_shape, w_shape, w_constant, with_bias) in enumerate(cases):
        x = g.add_input(TensorType(x_shape, dtype), f"x{i}")
        w = (b.constant(random_input(rng, TensorType(w_shape, dtype)), dtype) if w_constant
             else g.add_input(TensorType(w_shape, dtype), f"w{i}"))
        bias = [b.constant(random_input(rng, TensorType(w_shape[:1], dtype)), dtype)] if with_bias else []
        g.add_output(b.op("nn.fully_connected", [x, w, *bias]), f"y{i}")
    check_lowering(g, seed=seed)


def test_weight_matrix_joins_batch_into_rows():
    """b without batch: one [1, B*M, K] x [1, K, N] product, no tiling."""
    g, a, w = nn_graph({"a": ((2, 3, 4, 5), "f32"), "w": ((5, 6), "f32")})
    g.add_output(builder(g).op("nn.matmul", [a, w]), "y")
    report = check_lowering(g)
    assert report.tosa_ops["tosa.matmul"] == 1 and "tosa.tile" not in report.tosa_ops
    low = lower(g)
    (mm,) = [n for n in low.nodes() if low.op(n) == "tosa.matmul"]
    assert low.types(mm)[0].shape == (1, 24, 6)


def test_broadcast_batch_tiles_the_smaller_operand():
    g, a, w = nn_graph({"a": ((3, 3, 4), "f32"), "w": ((2, 1, 4, 5), "f32")})
    g.add_output(builder(g).op("nn.matmul", [a, w]), "y")
    report = check_lowering(g)
    assert report.tosa_ops["tosa.tile"] == 2  # a over the outer batch, w over the inner one


def test_f16_products_accumulate_in_f32_and_round_once():
    """512-long f16 dot products with a bias: a 1x1 CONV2D accumulating in f32 (the bias added there),
    one rounding to f16."""
    rng = np.random.default_rng(3)
    g, x = nn_graph({"x": ((3, 512), "f16")})
    b = builder(g)
    w = b.constant(random_input(rng, TensorType((4, 512), "f16")), "f16")
    bias = b.constant(random_input(rng, TensorType((4,), "f16")), "f16")
    g.add_output(b.op("nn.fully_connected", [x, w, bias]), "y")
    low = lower(g)
    (conv,) = [n for n in low.nodes() if low.op(n) == "tosa.conv2d"]
    assert low.attrs(conv)["acc_type"] == "f32" and low.types(conv)[0].dtype == "f16"
    assert "tosa.cast" not in low.histogram()
    report = check_lowering(g, tolerance={"f16": 1e-3})
    assert report.errors["y"] <= 1e-3


def test_constant_weights_are_not_transposed():
    """W [O, K] is the 1x1 convolution's [O, 1, 1, K]: the lowered constant is a view of the same bytes."""
    rng = np.random.default_rng(0)
    g, x = nn_graph({"x": ((2, 3), "f32")})
    b = builder(g)
    weights = random_input(rng, TensorType((4, 3), "f32"))
    w = b.constant(weights, "f32")
    g.add_output(b.op("nn.fully_connected", [x, w]), "y")
    report = check_lowering(g)
    assert "tosa.transpose" not in report.tosa_ops
    low = lower(g)
    (conv,) = [n for n in low.nodes() if low.op(n) == "tosa.conv2d"]
    lowered = low.attrs(low.operand(conv, 1).node)["values"]
    assert lowered.shape == (4, 1, 1, 3) and np.shares_memory(lowered, weights)


def test_i8_products_are_exact_and_wrap():
    g, a, w = nn_graph({"a": ((2, 3, 16), "i8"), "w": ((16, 5), "i8")})
    g.add_output(builder(g).op("nn.matmul", [a, w]), "y")  # i8 result: wraps, as nn integers do
    report = check_lowering(g, input_range=(-128, 127))
    assert report.tosa_ops["tosa.matmul"] == 1


@pytest.mark.parametrize("dtype", ["i16", "i32"])
def test_wider_integer_products_are_reported(dtype):
    g, a, w = nn_graph({"a": ((2, 3), dtype), "w": ((3, 2), dtype)})
    g.add_output(builder(g, "mm layer").op("nn.matmul", [a, w]), "y")
    with pytest.raises(UnsupportedError, match="mm layer.*TOSA MATMUL multiplies"):
        lower(g)
