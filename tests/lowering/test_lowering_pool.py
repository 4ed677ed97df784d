"""Lowering of the 2-D and 3-D max/avg/l2 pools, checked end to end against the numpy reference on the
TOSA reference model, with strict tosa-validate of the MLIR (tests/lowering_harness.py)."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nn2tosa.diagnostics import UnsupportedError
from nn2tosa.ir import Graph, Quant, TensorType

from lowering_harness import builder, check_lowering, lower

pytest.importorskip("tosa_reference_model", reason="the TOSA reference model comes with tosa-tools")

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FLOATS = ("f32", "f16", "bf16")


@st.composite
def windows(draw, dims: int, dilation: bool = False, max_pad: int = 4):
    """(input shape, attrs) of a pool over `dims` spatial dimensions: padding up to beyond the kernel."""
    kernel = [draw(st.integers(1, 4)) for _ in range(dims)]
    stride = [draw(st.integers(1, 3)) for _ in range(dims)]
    dil = [draw(st.integers(1, 3)) if dilation else 1 for _ in range(dims)]
    pad = [draw(st.integers(0, max_pad)) for _ in range(2 * dims)]
    size = [max(draw(st.integers(1, 8 if dims == 2 else 5)), (k - 1) * d + 1 - pad[2 * i] - pad[2 * i + 1])
            for i, (k, d) in enumerate(zip(kernel, dil))]
    attrs = {"kernel": kernel, "stride": stride, "pad": pad}
    if dilation:
        attrs["dilation"] = dil
    return (draw(st.integers(1, 2)), *size, draw(st.integers(1, 3))), attrs


@st.composite
def average_attrs(draw, dims: int):
    """avg_pool attrs: padding counted fully, partly or not at all, or a divisor."""
    shape, attrs = draw(windows(dims))
    how = draw(st.sampled_from(["none", "all", "part", "divisor"]))
    count = {"none": [0] * (2 * dims), "all": list(attrs["pad"]), "divisor": [0] * (2 * dims),
             "part": [draw(st.integers(0, p)) for p in attrs["pad"]]}[how]
    return shape, {**attrs, "count_pad": count, "divisor": draw(st.integers(1, 20)) if how == "divisor" else 0}


def _run(cases: list, op: str, dtype: str, seed: int) -> None:
    g = Graph()
    for i, (shape, attrs) in enumerate(cases):
        x = g.add_input(TensorType(shape, dtype), f"x{i}")
        g.add_output(builder(g).op(op, [x], attrs), f"y{i}")
    check_lowering(g, seed=seed)


@given(cases=st.lists(windows(2, dilation=True), min_size=1, max_size=6), dtype=st.sampled_from(FLOATS + ("i8",)),
       seed=st.integers(0, 99))
@SETTINGS
def test_max_pool2d_random(cases, dtype, seed):
    _run(cases, "nn.max_pool2d", dtype, seed)


@given(cases=st.lists(average_attrs(2), min_size=1, max_size=6), dtype=st.sampled_from(FLOATS), seed=st.integers(0, 99))
@SETTINGS
def test_avg_pool2d_random(cases, dtype, seed):
    _run(cases, "nn.avg_pool2d", dtype, seed)


@given(cases=st.lists(windows(2), min_size=1, max_size=6), dtype=st.sampled_from(FLOATS), seed=st.integers(0, 99))
@SETTINGS
def test_l2_pool2d_random(cases, dtype, seed):
    _run(cases, "nn.l2_pool2d", dtype, seed)


@given(cases=st.lists(windows(3, max_pad=3), min_size=1, max_size=4), dtype=st.sampled_from(FLOATS),
       seed=st.integers(0, 99))
@SETTINGS
def test_max_pool3d_random(cases, dtype, seed):
    _run(cases, "nn.max_pool3d", dtype, seed)


@given(cases=st.lists(average_attrs(3), min_size=1, max_size=4), dtype=st.sampled_from(FLOATS), seed=st.integers(0, 99))
@SETTINGS
def test_avg_pool3d_random(cases, dtype, seed):
    _run(cases, "nn.avg_pool3d", dtype, seed)


@given(cases=st.lists(windows(3, max_pad=3), min_size=1, max_size=4), dtype=st.sampled_from(FLOATS),
       seed=st.integers(0, 99))
@SETTINGS
def test_l2_pool3d_random(cases, dtype, seed):
    _run(cases, "nn.l2_pool3d", dtype, seed)


# ------------------------------------------------------------------------------ named edges
def _pool(op: str, shape, attrs, dtype: str = "f32", quant: Quant | None = None) -> Graph:
    g = Graph()
    x = g.add_input(TensorType(shape, dtype, quant), "x")
    g.add_output(builder(g, "pool layer").op(op, [x], attrs), "y")
    return g


def test_native_pools_stay_single_ops():
    """Padding below the kernel, nothing counted: one TOSA pool each, no decomposition."""
    attrs = {"kernel": [3, 3], "stride": [2, 2], "pad": [1, 1, 1, 1]}
    report = check_lowering(_pool("nn.max_pool2d", (1, 7, 7, 2), {**attrs, "dilation": [1, 1]}))
    assert report.tosa_ops == {"tosa.max_pool2d": 1}
    report = check_lowering(_pool("nn.avg_pool2d", (1, 7, 7, 2), {**attrs, "count_pad": [0] * 4, "divisor": 0}))
    assert set(report.tosa_ops) == {"tosa.avg_pool2d", "tosa.const"}


def test_counted_padding_is_explicit_and_needs_no_rescale():
    attrs = {"kernel": [3, 3], "stride": [1, 1], "pad": [1, 1, 1, 1], "count_pad": [1, 1, 1, 1], "divisor": 0}
    report = check_lowering(_pool("nn.avg_pool2d", (1, 5, 5, 2), attrs))
    assert report.tosa_ops["tosa.pad"] == 1 and "tosa.mul" not in report.tosa_ops


def test_windows_over_uncounted_padding_only_are_nan():
    """pad 3 >= kernel 2, nothing counted: the first window holds no counted element, 0 / 0."""
    attrs = {"kernel": [2, 2], "stride": [2, 2], "pad": [3, 1, 0, 0], "count_pad": [0] * 4, "divisor": 0}
    report = check_lowering(_pool("nn.avg_pool2d", (1, 4, 4, 1), attrs))
    assert report.tosa_ops["tosa.mul"] == 1


def test_divisor_override():
    attrs = {"kernel": [2, 3], "stride": [1, 2], "pad": [1, 0, 1, 1], "count_pad": [0] * 4, "divisor": 4}
    check_lowering(_pool("nn.avg_pool2d", (2, 5, 6, 3), attrs))


def test_dilated_max_pool_is_one_pool_of_the_phases():
    attrs = {"kernel": [3, 3], "stride": [2, 1], "pad": [2, 2, 2, 2], "dilation": [2, 2]}
    report = check_lowering(_pool("nn.max_pool2d", (1, 9, 8, 2), attrs))
    assert report.tosa_ops["tosa.max_pool2d"] == 1 and report.tosa_ops["tosa.transpose"] == 2


def test_max_pool_padding_at_least_the_kernel_is_explicit_lowest_value():
    attrs = {"kernel": [2, 2], "stride": [1, 1], "pad": [3, 0, 0, 2], "dilation": [1, 1]}
    report = check_lowering(_pool("nn.max_pool2d", (1, 3, 3, 1), attrs))  # first rows: -inf
    assert report.tosa_ops["tosa.pad"] == 1


def test_max_pool_of_integers_and_matching_quantization():
    attrs = {"kernel": [3, 3], "stride": [2, 2], "pad": [1, 4, 1, 1], "dilation": [1, 2]}
    check_lowering(_pool("nn.max_pool2d", (1, 6, 6, 2), attrs, "i16"), input_range=(-32768, 32767))
    q = Quant((0.25,), (-3,))
    g = Graph()
    x = g.add_input(TensorType((1, 6, 6, 2), "i8", q), "x")
    g.add_output(builder(g).op("nn.max_pool2d", [x], attrs, types=[TensorType((1, 5, 2, 2), "i8", q)]), "y")
    check_lowering(g, input_range=(-128, 127))
    report = check_lowering(_pool("nn.max_pool3d", (1, 3, 4, 4, 2), {"kernel": [2, 2, 2], "stride": [1, 2, 1],
                                                                        "pad": [1, 0, 0, 1, 2, 0]}, "i8"),
                            input_range=(-128, 127))
    assert report.tosa_ops["tosa.max_pool2d"] == 2


def test_3d_pools_are_two_2d_passes():
    attrs = {"kernel": [2, 3, 2], "stride": [2, 1, 2], "pad": [1, 0, 1, 1, 0, 1]}
    report = check_lowering(_pool("nn.avg_pool3d", (1, 5, 6, 7, 2), {**attrs, "count_pad": [1, 0, 0, 1, 0, 0],
                                                                     "divisor": 0}))
    assert report.tosa_ops["tosa.avg_pool2d"] == 2


def test_i32_max_pool_is_reported():
    attrs = {"kernel": [2, 2], "stride": [1, 1], "pad": [0] * 4, "dilation": [1, 1]}
    with pytest.raises(UnsupportedError, match="pool layer.*on i32 tensors: TOSA MAX_POOL2D takes floats, i8 and i16"):
        lower(_pool("nn.max_pool2d", (1, 3, 3, 1), attrs, "i32"))


@pytest.mark.parametrize("op", ["nn.avg_pool2d", "nn.l2_pool2d"])
def test_integer_averages_are_reported(op):
    attrs = {"kernel": [2, 2], "stride": [1, 1], "pad": [0] * 4}
    if op == "nn.avg_pool2d":
        attrs.update(count_pad=[0] * 4, divisor=0)
    with pytest.raises(UnsupportedError, match="pool layer.*on i8 tensors"):
        lower(_pool(op, (1, 3, 3, 1), attrs, "i8"))


def test_pool_outputs_are_exact_for_max():
    """Max pooling (any decomposition) is exact: bit-identical to the reference."""
    attrs = {"kernel": [3, 2], "stride": [3, 2], "pad": [2, 4, 1, 3], "dilation": [3, 2]}
    report = check_lowering(_pool("nn.max_pool2d", (2, 10, 9, 3), attrs), tolerance={"f32": 0.0})
    assert report.errors["y"] == 0.0


# ------------------------------------------------------------------------------ windows past the input
def _covered(size: int, kernel: int, stride: int, before: int, after: int) -> list[tuple[int, int]]:
    """The input rows each output position's window holds, as (first, last) clipped to the input."""
    out = (size + before + after - kernel) // stride + 1
    return [(max(o * stride - before, 0), min(o * stride - before + kernel - 1, size - 1)) for o in range(out)]


@given(size=st.integers(1, 9), kernel=st.integers(1, 40), stride=st.integers(1, 4), before=st.integers(0, 40),
       after=st.integers(0, 40))
@settings(max_examples=400, deadline=None)
def test_clipped_windows_hold_the_same_rows(size, kernel, stride, before, after):
    from nn2tosa.lowering.rules.pooling import clip_windows
    if size + before + after < kernel:
        return
    (k,), (b, a) = clip_windows([size], [kernel], [stride], [before, after])
    assert 1 <= k <= max(size + before, 1) and 0 <= b and 0 <= a
    assert _covered(size, k, stride, b, a) == _covered(size, kernel, stride, before, after)


@pytest.mark.parametrize("op,extra", [("nn.max_pool2d", {"dilation": [1, 1]}),
                                      ("nn.avg_pool2d", {"count_pad": [0] * 4, "divisor": 0})])
def test_huge_windows_shrink_to_the_input(op, extra):
    """A fuzzed poolHeight of 2**31 - 1 made the reference model loop 2**31 taps per output: the
    lowering pools with a window no longer than the input plus its leading padding."""
    attrs = {"kernel": [2 ** 31 - 1, 3], "stride": [1, 1], "pad": [1, 2 ** 31 - 3, 1, 1], **extra}
    low = lower(_pool(op, (1, 5, 6, 2), attrs))
    pools = [low.attrs(n) for n in low.nodes() if low.op(n) == op.replace("nn.", "tosa.")]
    assert [(list(a["kernel"]), list(a["pad"])) for a in pools] == [([6, 3], [1, 4, 1, 1])]
    # the same windows, as the numpy reference can run them (it pads explicitly)
    check_lowering(_pool(op, (1, 5, 6, 2), {**attrs, "kernel": [9, 3], "pad": [1, 7, 1, 1]}))
