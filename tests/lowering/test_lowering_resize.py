"""Lowering of nn.resize, checked end to end against the numpy reference (which samples with float64
coordinates, written from the nn doc) on the TOSA reference model, with strict tosa-validate of the
MLIR (tests/lowering_harness.py)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nn2tosa.diagnostics import UnsupportedError
from nn2tosa.ir import Graph, Quant, TensorType

from lowering_harness import builder, check_lowering, lower
from nn2tosa.lowering.rules.resize import sampling

pytest.importorskip("tosa_reference_model", reason="the TOSA reference model comes with tosa-tools")

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FLOATS = ("f32", "f16", "bf16")


@st.composite
def resize_cases(draw, mode: str):
    """(input shape, attrs): sizes from 1 to far beyond RESIZE's 16x downscale and 256x upscale limits."""
    sizes = st.one_of(st.integers(1, 9), st.integers(10, 40))
    h, w = draw(sizes), draw(sizes)
    out = [draw(st.one_of(st.integers(1, 12), st.integers(13, 300))) for _ in range(2)]
    attrs = {"size": out, "mode": mode, "align_corners": draw(st.booleans()), "half_pixel_centers": draw(st.booleans())}
    if mode == "nearest" and draw(st.booleans()):
        attrs["nearest_rounding"] = draw(st.sampled_from(["half_up", "floor"]))
    return (draw(st.integers(1, 2)), h, w, draw(st.integers(1, 2))), attrs


def _run(cases: list, dtype: str, seed: int, **options) -> None:
    g = Graph()
    for i, (shape, attrs) in enumerate(cases):
        x = g.add_input(TensorType(shape, dtype), f"x{i}")
        g.add_output(builder(g).op("nn.resize", [x], attrs), f"y{i}")
    check_lowering(g, seed=seed, **options)


@given(cases=st.lists(resize_cases("bilinear"), min_size=1, max_size=4), dtype=st.sampled_from(FLOATS),
       seed=st.integers(0, 99))
@SETTINGS
def test_bilinear_random(cases, dtype, seed):
    _run(cases, dtype, seed)


@given(cases=st.lists(resize_cases("nearest"), min_size=1, max_size=4),
       dtype=st.sampled_from(FLOATS + ("i8", "i16", "i32")), seed=st.integers(0, 99))
@SETTINGS
def test_nearest_random(cases, dtype, seed):
    """Nearest picks input pixels: the result must be bit-exact."""
    _run(cases, dtype, seed, tolerance={d: 0.0 for d in FLOATS}, input_range=(-1000, 1000))


# ------------------------------------------------------------------------------ named edges
def _resize(shape, attrs, dtype: str = "f32", quant: Quant | None = None, out_quant: Quant | None = None) -> Graph:
    g = Graph()
    x = g.add_input(TensorType(shape, dtype, quant), "x")
    out = TensorType((shape[0], *attrs["size"], shape[3]), dtype, out_quant)
    g.add_output(builder(g, "resize layer").op("nn.resize", [x], attrs, types=[out]), "y")
    return g


def _attrs(size, mode="bilinear", align_corners=False, half_pixel=False, **more):
    return {"size": list(size), "mode": mode, "align_corners": align_corners, "half_pixel_centers": half_pixel, **more}


@pytest.mark.parametrize("size, align, half, expected", [
    # (in, out): n, d, offset, border
    ((4, 8), False, False, (2, 1, 0, 1)),       # x * 4/8
    ((4, 8), False, True, (4, 2, -1, 1)),       # (x + 1/2) * 4/8 - 1/2 = (2x - 1) / 4
    ((4, 7), True, False, (2, 1, 0, 0)),        # x * 3/6
    ((5, 3), False, False, (3, 5, 0, -2)),      # downscale, non-integer ratio
    ((1, 6), True, True, (6, 1, 0, 5)),         # one input row: n = out, d = 1
])
def test_sampling_parameters(size, align, half, expected):
    s = sampling(*size, _attrs((0, 0), align_corners=align, half_pixel=half))
    assert (s.n, s.d, s.offset, s.border) == expected and s.fits_resize()


def test_nearest_floor_halves_the_coordinate_grid():
    """floor(src) = half_up(src - 1/2): scale doubled, offset - n."""
    s = sampling(4, 8, _attrs((0, 0), "nearest", nearest_rounding="floor"))
    assert (s.n, s.d, s.offset) == (2, 1, -1)  # x / 2 - 1/2


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
def test_common_cases_are_one_resize(mode):
    for shape, size, align, half in [((1, 4, 5, 3), (8, 10), False, False), ((1, 4, 5, 3), (7, 9), True, False),
                                     ((2, 6, 6, 1), (3, 4), False, True), ((1, 3, 3, 2), (16, 13), False, True)]:
        report = check_lowering(_resize(shape, _attrs(size, mode, align, half)))
        assert report.tosa_ops.get("tosa.resize") == 1 and "tosa.gather" not in report.tosa_ops


def test_beyond_resize_limits_is_gathered():
    """A 20x downscale (d >= 16 n) and align_corners onto one pixel from 30: per-axis GATHER."""
    report = check_lowering(_resize((1, 40, 30, 2), _attrs((2, 1), align_corners=True)))
    assert "tosa.resize" not in report.tosa_ops and report.tosa_ops["tosa.gather"] == 4


def test_large_f32_bilinear_is_gathered_for_exact_weights():
    """The reference model's RESIZE divides y / n in f32: at 600 rows its coordinate is off by up to
    3e-5, times the neighbours' difference. The decomposition's weights are exact: one rounding."""
    report = check_lowering(_resize((1, 600, 2, 1), _attrs((1200, 2), half_pixel=True)), tolerance={"f32": 1e-6})
    assert "tosa.resize" not in report.tosa_ops
    report = check_lowering(_resize((1, 600, 2, 1), _attrs((1200, 2), half_pixel=True), "f16"))
    assert report.tosa_ops["tosa.resize"] == 1  # f16's own rounding is far coarser


def test_integer_nearest_uses_resize_for_i8_and_gather_for_i32():
    attrs = _attrs((7, 5), "nearest", half_pixel=True)
    assert check_lowering(_resize((1, 3, 4, 2), attrs, "i8"), input_range=(-128, 127)).tosa_ops["tosa.resize"] == 1
    assert "tosa.gather" in check_lowering(_resize((1, 3, 4, 2), attrs, "i32"), input_range=(-9, 9)).tosa_ops


def test_quantized_nearest_with_one_quantization_resizes_the_integers():
    q = Quant((0.1,), (4,))
    check_lowering(_resize((1, 3, 3, 1), _attrs((6, 6), "nearest"), "i8", q, q), input_range=(-128, 127))


@pytest.mark.parametrize("dtype, quant, why", [  # (quantized resizes have their own rules)
    ("i8", None, "bilinear resize of i8 tensors"),
    ("i1", None, "of i1 tensors"),
    ("f32", None, "nearest_rounding 'round_half_even' is not"),
])
def test_unsupported_resizes_are_reported(dtype, quant, why):
    mode = "bilinear" if dtype == "i8" else "nearest"
    more = {"nearest_rounding": "round_half_even"} if dtype == "f32" else {}
    g = _resize((1, 3, 3, 1), _attrs((6, 6), mode, **more), dtype, quant, quant)
    with pytest.raises(UnsupportedError, match=f"resize layer.*{why}"):
        lower(g)


# ------------------------------------------------------------------------------ LiteRT's integers
# numpy models of TFLite's reference kernels (tensorflow/lite/kernels/internal/reference:
# ResizeBilinearInteger for int8/int16, GetNearestNeighbor), checked against LiteRT's BUILTIN_REF
# interpreter on variants of the corpus models (shapes, modes, int16, nearest) while writing them.
def _c_div(a: np.ndarray, b: int) -> np.ndarray:
    """C's integer division (truncates toward zero)."""
    return np.sign(a) * (np.abs(a) // b)


def _tflite_bilinear_axis(size: int, out: int, align: bool, half: bool):
    num, den = (size - 1, out - 1) if align and out > 1 else (size, out)
    scale_10 = (1024 * num + den // 2) // den
    s = np.arange(out, dtype=np.int64) * scale_10 + (scale_10 // 2 - 512 if half else 0)
    low = np.maximum(_c_div(s, 1024), 0)
    high = np.minimum(_c_div(s + 1023, 1024), size - 1)
    return low, high, s - 1024 * low  # neighbours and the weight of `high` (of 1024)


def tflite_bilinear_sum(x: np.ndarray, size: tuple[int, int], align: bool, half: bool) -> np.ndarray:
    """TFLite's output_20: the four neighbours weighed in 1/1024ths per axis."""
    x = x.astype(np.int64)
    y0, y1, fy = _tflite_bilinear_axis(x.shape[1], size[0], align, half)
    x0, x1, fx = _tflite_bilinear_axis(x.shape[2], size[1], align, half)
    fy, fx = fy[None, :, None, None], fx[None, None, :, None]
    at = lambda ys, xs: x[:, ys][:, :, xs]  # noqa: E731
    return (at(y0, x0) * (1024 - fy) * (1024 - fx) + at(y1, x0) * fy * (1024 - fx)
            + at(y0, x1) * (1024 - fy) * fx + at(y1, x1) * fy * fx)


def tflite_resize_bilinear(x: np.ndarray, size: tuple[int, int], align: bool, half: bool) -> np.ndarray:
    acc = tflite_bilinear_sum(x, size, align, half)
    return _c_div(acc + np.where(acc > 0, 1 << 19, -(1 << 19)), 1 << 20)


def tflite_nearest_axis(size: int, out: int, align: bool, half: bool) -> np.ndarray:
    f32 = np.float32
    scale = f32(size - 1) / f32(out - 1) if align and out > 1 else f32(size) / f32(out)
    v = (np.arange(out).astype(f32) + f32(0.5 if half else 0.0)) * scale
    index = np.floor(v + f32(0.5)) if align else np.floor(v)  # TfLiteRound: v >= 0
    return np.clip(index.astype(np.int64), 0, size - 1)


def _litert_resize(shape, size, mode, align, half, dtype, seed, attrs_more=None, target=None):
    from test_quant import one_op, qtype, run

    lo, hi = (-128, 127) if dtype == "i8" else (-32768, 32767)
    rng = np.random.default_rng(seed)
    x = rng.integers(lo, hi + 1, shape, dtype=np.int64)
    x[0, 0, 0] = lo  # the extremes, and flat regions where exact halves meet
    x[0, -1, -1] = hi
    npdtype = np.int8 if dtype == "i8" else np.int16
    q = (0.0213, 5) if dtype == "i8" else (0.00041, 0)
    attrs = {**_attrs(size, mode, align, half), **(attrs_more or {})}
    g = one_op("nn.resize", {"x": qtype(shape, dtype, *q)}, qtype((shape[0], *size, shape[3]), dtype, *q), attrs)
    (got,), low = run(g, [x.astype(npdtype)], semantics="litert", target=target)
    return x, got.astype(np.int64), low


BILINEAR_CASES = [  # (input [N, H, W, C], output size, align_corners, half_pixel_centers)
    ((1, 8, 8, 4), (15, 15), True, False),    # the corpus file's 2x - 1 upscale
    ((2, 9, 7, 3), (4, 3), True, False),      # downscale, ratios 8/3 and 3
    ((1, 8, 8, 4), (13, 11), False, True),    # non-integer upscale: 630/1024 and 745/1024
    ((1, 13, 11, 2), (5, 4), False, True),    # non-integer downscale
    ((1, 5, 7, 3), (9, 17), False, False),    # plain, non-integer upscale
    ((1, 10, 9, 2), (3, 4), False, False),    # plain downscale
    ((1, 1, 5, 2), (6, 3), False, True),      # one input row
    ((1, 4, 6, 1), (1, 1), True, False),      # onto one pixel
]


@pytest.mark.parametrize("dtype", ["i8", "i16"])
@pytest.mark.parametrize("shape, size, align, half", BILINEAR_CASES)
def test_litert_bilinear_is_tflites_integer_kernel(shape, size, align, half, dtype):
    x, got, low = _litert_resize(shape, size, "bilinear", align, half, dtype, seed=sum(shape) + sum(size))
    want = tflite_resize_bilinear(x, size, align, half)
    assert np.array_equal(got, want), f"{int((got != want).sum())} of {got.size} off"
    assert sum(op == "tosa.resize" for op in (low.op(n) for n in low.nodes())) == (1 if dtype == "i8" else 2)


@pytest.mark.parametrize("dtype", ["i8", "i16"])
def test_litert_bilinear_rounds_halves_away_from_zero(dtype):
    """2x half-pixel upscale: weights in quarters per axis, so exact halves of both signs occur;
    TOSA's half-up rounding alone would be one too high on every negative one."""
    x, got, _ = _litert_resize((1, 6, 6, 8), (12, 12), "bilinear", False, True, dtype, seed=3)
    acc = tflite_bilinear_sum(x, (12, 12), False, True)
    assert ((acc < 0) & (acc % (1 << 20) == 1 << 19)).any()  # the data has negative halves
    assert np.array_equal(got, tflite_resize_bilinear(x, (12, 12), False, True))


@pytest.mark.parametrize("shape, size", [
    ((1, 8, 8, 4), (15, 15)),  # the corpus file's 2x - 1 upscale
    ((2, 4, 6, 3), (13, 6)),  # 4x rows, columns left alone
    ((1, 3, 2, 2), (17, 9)),  # 8x rows and columns (the largest centre weight, 64)
    ((1, 5, 4, 5), (17, 7)),  # 4x rows, 2x columns
])
@pytest.mark.parametrize("target", ["ethos-u55", "ethos-u85"])
def test_litert_aligned_upscale_for_npus_is_tflites_kernel(shape, size, target):
    """Under the Ethos-U55 preset an aligned integer upscale of int8 data is the input spread by the
    factor, a DEPTHWISE_CONV2D of triangle weights and one RESCALE whose multiplier, just above
    1 / (k_y k_x), rounds halves away from zero; under the Ethos-U85 preset one RESIZE of doubled scale
    terms and one DOUBLE_ROUND RESCALE by a power of two, whose sign-dependent rounding term rounds
    halves away from zero. Both are TFLite's integers, negative halves included. (TFLite's 10-bit
    coordinates make only power-of-two factors exact upscales.)"""
    x, got, low = _litert_resize(shape, size, "bilinear", True, False, "i8", seed=sum(size), target=target)
    assert np.array_equal(got, tflite_resize_bilinear(x, size, True, False))
    ops = [low.op(n) for n in low.nodes()]
    if target == "ethos-u85":
        assert ops.count("tosa.resize") == 1 and ops.count("tosa.rescale") == 1
        assert "tosa.arithmetic_right_shift" not in ops
        rescale = next(n for n in low.nodes() if low.op(n) == "tosa.rescale")
        assert low.attrs(rescale)["rounding_mode"] == "DOUBLE_ROUND"
    else:
        assert "tosa.resize" not in ops and ops.count("tosa.depthwise_conv2d") == 1
        assert ops.count("tosa.rescale") == 1 + ("tosa.transpose_conv2d" in ops)
    acc = tflite_bilinear_sum(x, size, True, False)
    assert ((acc < 0) & (acc % (1 << 20) == 1 << 19)).any()  # the data has negative halves


@pytest.mark.parametrize("shape, size, align, half", [
    ((1, 26, 5, 2), (22, 7), False, False),   # float32 floor(o * 26/22) is one row short at o = 11
    ((1, 14, 3, 1), (23, 3), True, False),    # float32 round(o * 13/22) misses a half
    ((1, 2, 4, 2), (41, 9), False, True),     # float32 floor((o + 1/2) * 2/41)
])
def test_litert_nearest_reads_tflites_float32_rows(shape, size, align, half):
    attrs_more = {} if align or half else {"nearest_rounding": "floor"}
    x, got, low = _litert_resize(shape, size, "nearest", align, half, "i8", seed=1, attrs_more=attrs_more)
    rows = tflite_nearest_axis(shape[1], size[0], align, half)
    columns = tflite_nearest_axis(shape[2], size[1], align, half)
    assert np.array_equal(got, x[:, rows][:, :, columns])
    assert "tosa.gather" in {low.op(n) for n in low.nodes()}  # the exact rows differ: no RESIZE


@pytest.mark.parametrize("dtype", ["i8", "i16"])
@pytest.mark.parametrize("align, half", [(False, False), (True, False), (False, True)])
def test_litert_bilinear_beyond_resize_gathers_tflites_sum(align, half, dtype):
    """A 20x downscale (beyond RESIZE's 16x): the same integer sum from GATHERed neighbours."""
    x, got, low = _litert_resize((2, 40, 30, 2), (2, 3), "bilinear", align, half, dtype, seed=5)
    assert np.array_equal(got, tflite_resize_bilinear(x, (2, 3), align, half))
    ops = {low.op(n) for n in low.nodes()}
    assert "tosa.resize" not in ops and "tosa.gather" in ops


def test_cpuref_semantics_keeps_the_exact_coordinates():
    """Under cpuref the same op samples nn's exact coordinate (CpuRef's): 8 -> 13 half-pixel is
    (o + 1/2) * 8/13 - 1/2 = (16 o - 5) / 26, not TFLite's (630 o - 197) / 1024."""
    from test_quant import one_op, qtype, run

    t = qtype((1, 8, 8, 1), "i8", 0.0078, -1)
    g = one_op("nn.resize", {"x": t}, qtype((1, 13, 11, 1), "i8", 0.0078, -1), _attrs((13, 11), half_pixel=True))
    _, low = run(g, [np.zeros((1, 8, 8, 1), np.int8)], semantics="cpuref")
    resize = next(n for n in low.nodes() if low.op(n) == "tosa.resize")
    scale = low.attrs(low.operands(resize)[1].node)["values"]
    assert list(scale) == [26, 16, 22, 16]
