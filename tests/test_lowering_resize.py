"""Lowering of nn.resize, checked end to end against the numpy reference (which samples with float64
coordinates, written from the nn doc) on the TOSA reference model, with strict tosa-validate of the
MLIR (tests/lowering_harness.py)."""
from __future__ import annotations

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
