"""lowering/rules/math.py, division.py, activations.py and cast.py end to end: nn graphs -> numpy
reference (tests/nn_reference.py) vs the lowered .tosa on the TOSA reference model, and the MLIR
through strict tosa-validate.

Float functions are fed their whole domain: a dense grid around the interesting region, a log-spaced
sweep out to the f32 limits, and the special values (0, -0, inf, -inf, NaN). Errors are measured per
element as |got - want| / max(1, |want|) (the corpus' measure, without letting one large output hide
the error of a small one), and NaN/inf positions must agree exactly.
"""
from __future__ import annotations


import numpy as np
import pytest

from nn2tosa.ir import TensorType
from nn2tosa.lowering.flatbuffer_emitter import build_flatbuffer
from nn2tosa.lowering.mlir_emitter import to_mlir, validate
from nn2tosa.dialects.tosa_target import required_target

from lowering_harness import builder, check_lowering, lower, nn_graph, run_reference_model
from nn_reference import evaluate

pytest.importorskip("tosa_reference_model", reason="the TOSA reference model comes with tosa-tools")

SPECIALS = np.array([0.0, -0.0, np.inf, -np.inf, np.nan], np.float32)


def sweep(lo: float, hi: float, n: int = 600) -> np.ndarray:
    """A grid of [lo, hi], log-spaced sweeps of both signs out to f32's range, and the specials."""
    logs = np.logspace(-44, 38.5, 300)
    values = np.concatenate([np.linspace(lo, hi, n), logs, -logs, SPECIALS,
                             [1.0, -1.0, 0.5, -0.5, 1e-7, -1e-7, 2.0 ** 23 + 1, 2.5, -2.5, 3.5, 0.49999997]])
    with np.errstate(over="ignore"):
        return values.astype(np.float32)


def run(graph, inputs):
    """(expected, got, lowered graph): reference vs reference model; the MLIR validates strictly."""
    expected = evaluate(graph, inputs)
    low = lower(graph)
    target = required_target(low)
    assert not target.problems, target.problems
    assert validate(to_mlir(low, target=target), target) == []
    got = run_reference_model(bytes(build_flatbuffer(low)), [boundary(a) for a in inputs])
    return expected, [np.asarray(g).reshape(e.shape) for g, e in zip(got, expected)], low


def boundary(a: np.ndarray) -> np.ndarray:
    """An nn-level array as the TOSA graph's boundary tensor holds it: unsigned data as the same
    bits in the signed type, i64 as i32, f64 as f32 (the corpus harness does the same)."""
    a = np.asarray(a)
    if a.dtype.kind == "u" and a.dtype.itemsize <= 2:
        return a.view(f"i{a.dtype.itemsize}")
    return {np.dtype(np.int64): lambda v: v.astype(np.int32), np.dtype(np.float64): lambda v: v.astype(np.float32)}.get(
        a.dtype, lambda v: v)(a)


def same_integers(got: np.ndarray, want: np.ndarray, name: str) -> None:
    """Integer outputs compare as values of the nn type (the TOSA storage holds unsigned data as signed bits)."""
    if want.dtype.kind == "u" and want.dtype.itemsize == got.dtype.itemsize:
        got = got.view(want.dtype)
    np.testing.assert_array_equal(got.astype(np.int64), want.astype(np.int64), err_msg=name)


def elementwise_error(got: np.ndarray, want: np.ndarray) -> float:
    """Max over elements of |got - want| / max(1, |want|); NaN and infinity positions must agree."""
    got, want = got.astype(np.float64), want.astype(np.float64)
    assert (np.isnan(got) == np.isnan(want)).all(), f"NaN at {np.flatnonzero(np.isnan(got) != np.isnan(want))[:5]}"
    inf = np.isinf(got) | np.isinf(want)
    bad = np.flatnonzero(inf & (got != want) & ~np.isnan(want))
    assert bad.size == 0, f"infinities differ at {bad[:5]}: got {got.ravel()[bad[:5]]}, want {want.ravel()[bad[:5]]}"
    finite = np.isfinite(got) & np.isfinite(want)
    if not finite.any():
        return 0.0
    return float((np.abs(got[finite] - want[finite]) / np.maximum(1.0, np.abs(want[finite]))).max())


# nn op -> the part of the real line its grid covers (the log sweep and specials are added)
FLOAT_UNARY_GRIDS = {
    "nn.sqrt": (0, 10), "nn.exp2": (-130, 130), "nn.log2": (0, 10), "nn.log10": (0, 10), "nn.tan": (-7, 7),
    "nn.asin": (-1, 1), "nn.acos": (-1, 1), "nn.atan": (-10, 10), "nn.sinh": (-90, 90), "nn.cosh": (-90, 90),
    "nn.asinh": (-10, 10), "nn.acosh": (1, 10), "nn.atanh": (-1, 1), "nn.round": (-6, 6),
    "nn.softplus": (-30, 30), "nn.hard_swish": (-5, 5), "nn.relu": (-2, 2), "nn.sign": (-2, 2),
}
MEASURED: dict[str, float] = {}


@pytest.mark.parametrize("op", sorted(FLOAT_UNARY_GRIDS))
def test_float_unary_f32_over_the_domain(op):
    x = sweep(*FLOAT_UNARY_GRIDS[op])
    g, v = nn_graph({"x": (x.shape, "f32")})
    g.add_output(builder(g).op(op, [v]), "y")
    (want,), (got,), _ = run(g, [x])
    error = elementwise_error(got, want)
    MEASURED[op] = error
    assert error <= 2e-6, f"{op}: {error:.3g}"


def test_round_is_half_to_even_exactly():
    x = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5, 0.49999997, 8388607.5, 8388609.0, -0.3, 1e30], np.float32)
    g, v = nn_graph({"x": (x.shape, "f32")})
    g.add_output(builder(g).op("nn.round", [v]), "y")
    (want,), (got,), _ = run(g, [x])
    np.testing.assert_array_equal(got, want)


def test_float_unary_f16_and_bf16_keep_their_type():
    """The graph's tensors stay f16/bf16; the decomposition computes in f32 between casts."""
    for dtype in ("f16", "bf16"):
        g, v = nn_graph({"x": ((40,), dtype)})
        b = builder(g)
        for op in ("nn.atan", "nn.sinh", "nn.log2", "nn.softplus", "nn.round", "nn.sqrt"):
            g.add_output(b.op(op, [b.op("nn.abs", [v]) if op in ("nn.log2", "nn.sqrt") else v]), op[3:])
        report = check_lowering(g, seed=3, input_range=(-4, 4))
        low = lower(g)
        assert all(low.type_of(o.value).dtype == dtype for o in low.outputs)
        assert max(report.errors.values()) <= 1e-2, report.errors


BINARY_CASES = {
    # op -> (x range, y range)
    "nn.div": ((-100, 100), (-10, 10)),
    "nn.floor_div": ((-100, 100), (-10, 10)),
    "nn.mod": ((-100, 100), (-10, 10)),
    "nn.fmod": ((-100, 100), (-10, 10)),
    "nn.squared_difference": ((-100, 100), (-100, 100)),
    "nn.pow": ((-4, 4), (-6, 6)),
}


def _binary_inputs(rng, xr, yr, n=400):
    x = rng.uniform(*xr, n)
    y = rng.uniform(*yr, n)
    # integer-valued quotients and exact multiples (where a one-ulp slip changes floor/trunc)
    k = rng.integers(-50, 50, 100)
    d = rng.choice([0.1, 0.3, 0.7, 1.1, 3.0, -0.1, -0.3, 2.5, 1e-3], 100)
    x = np.concatenate([x, k * d, [5.0, -5.0, 0.0, -0.0, 1.0, np.inf, -np.inf, np.nan, 3.0, 7.0, 1e30, -1e30, 1e-30,
                                   -2.0, -2.0, -8.0, 2.0, 0.0, 1.0, -1.0, 3e38, 1e-40]])
    y = np.concatenate([y, d, [np.inf, -np.inf, 0.0, 2.0, np.nan, 3.0, 2.0, 0.5, 0.0, -0.0, 3.7, 3.7, 0.7,
                               3.0, 0.5, -1.0 / 3, np.inf, -2.0, np.nan, np.inf, 1e-3, 3.0]])
    return x.astype(np.float32), y.astype(np.float32)


@pytest.mark.parametrize("op", sorted(BINARY_CASES))
def test_float_binary_f32(op):
    rng = np.random.default_rng(7)
    x, y = _binary_inputs(rng, *BINARY_CASES[op])
    g, vx, vy = nn_graph({"x": (x.shape, "f32"), "y": (y.shape, "f32")})
    g.add_output(builder(g).op(op, [vx, vy]), "z")
    (want,), (got,), _ = run(g, [x, y])
    error = elementwise_error(got, want)
    MEASURED[op] = error
    assert error <= 2e-6, f"{op}: {error:.3g}"


def test_remainders_of_huge_quotients_are_exact():
    """fmod/mod stay exact when x / y is far beyond 2^24 (the remainder is still exactly representable)."""
    x = np.array([1e10, -1e10, 3e38, 1e30, 123456789.0, 2.0 ** 100, -7e25], np.float32)
    y = np.array([3.7, 3.7, 0.1, -7.0, 1e-3, 3.0, 0.013], np.float32)
    g, vx, vy = nn_graph({"x": (x.shape, "f32"), "y": (y.shape, "f32")})
    b = builder(g)
    g.add_output(b.op("nn.fmod", [vx, vy]), "fmod")
    g.add_output(b.op("nn.mod", [vx, vy]), "mod")
    want, got, _ = run(g, [x, y])
    for w, o in zip(want, got):
        np.testing.assert_array_equal(o, w)


@pytest.mark.parametrize("dtype", ["i8", "i16", "i32", "ui8"])
def test_integer_divisions_and_friends(dtype):
    rng = np.random.default_rng(11)
    info = np.iinfo(TensorType((), dtype).numpy_dtype)
    x = rng.integers(info.min, info.max, 300, endpoint=True).astype(info.dtype)
    y = rng.integers(max(info.min, -40), min(info.max, 40), 300, endpoint=True).astype(info.dtype)
    y[y == 0] = 3
    g, vx, vy = nn_graph({"x": (x.shape, dtype), "y": (y.shape, dtype)})
    b = builder(g)
    for op in ("nn.div", "nn.floor_div", "nn.mod", "nn.fmod", "nn.squared_difference", "nn.sign", "nn.relu",
               "nn.square"):
        g.add_output(b.op(op, [vx, vy] if op in ("nn.div", "nn.floor_div", "nn.mod", "nn.fmod",
                                              "nn.squared_difference") else [vx]), op[3:])
    g.add_output(b.op("nn.clamp", [vx], {"min": -20.5, "max": 100.2}), "clamp")
    g.add_output(b.op("nn.clamp", [vx], {"min": 10.0, "max": 5.0}), "clamp_inverted")  # all max
    want, got, _ = run(g, [x, y])
    for o, w, out in zip(got, want, g.outputs):
        same_integers(o, w, out.name)


@pytest.mark.parametrize("dtype", ["i8", "i16", "i32", "ui8"])
def test_shifts(dtype):
    rng = np.random.default_rng(5)
    info = np.iinfo(TensorType((), dtype).numpy_dtype)
    bits = info.bits
    x = rng.integers(info.min, info.max, 200, endpoint=True).astype(info.dtype)
    s = rng.integers(0, bits - 1, 200, endpoint=True).astype(info.dtype)
    g, vx, vs = nn_graph({"x": (x.shape, dtype), "s": (s.shape, dtype)})
    b = builder(g)
    g.add_output(b.op("nn.shift_left", [vx, vs]), "shl")
    g.add_output(b.op("nn.shift_right", [vx, vs]), "shr")
    want, got, _ = run(g, [x, s])
    for o, w, out in zip(got, want, g.outputs):
        same_integers(o, w, out.name)


def test_activations_with_attributes_broadcasting_and_ranks():
    rng = np.random.default_rng(2)
    g, vx, va = nn_graph({"x": ((2, 3, 4, 5), "f32"), "alpha": ((5,), "f32")})
    b = builder(g)
    outs = {
        "leaky": b.op("nn.leaky_relu", [vx], {"alpha": 0.1}),
        "leaky_neg": b.op("nn.leaky_relu", [vx], {"alpha": -1.5}),
        "elu": b.op("nn.elu", [vx], {"alpha": 1.3}),
        "gelu": b.op("nn.gelu", [vx], {"approximate": "none"}),
        "gelu_tanh": b.op("nn.gelu", [vx], {"approximate": "tanh"}),
        "prelu": b.op("nn.prelu", [vx, va]),
        "clamp": b.op("nn.clamp", [vx], {"min": -0.25, "max": 0.75}),
        "clamp_open": b.op("nn.clamp", [vx], {"min": float("-inf"), "max": 1.0}),
        "clamp_inverted": b.op("nn.clamp", [vx], {"min": 7e-45, "max": 0.0}),  # all max (found by fuzzing)
        "hard_swish": b.op("nn.hard_swish", [vx]),
        "isnan": b.op("nn.isnan", [vx]),
        "isinf": b.op("nn.isinf", [vx]),
    }
    for name, v in outs.items():
        g.add_output(v, name)
    x = rng.uniform(-6, 6, (2, 3, 4, 5)).astype(np.float32)
    x.flat[:4] = [np.nan, np.inf, -np.inf, -0.0]
    report = check_lowering(g, [x, rng.uniform(-1, 1, 5).astype(np.float32)])
    MEASURED.update({f"nn.{k}": v for k, v in report.errors.items()})


def test_select_broadcasts_all_three_operands():
    rng = np.random.default_rng(4)
    g, c, x, y = nn_graph({"c": ((3, 1), "i1"), "x": ((4,), "f16"), "y": ((2, 1, 1), "f16")})
    g.add_output(builder(g).op("nn.select", [c, x, y]), "z")
    check_lowering(g, [rng.random((3, 1)) < 0.5, rng.uniform(-1, 1, 4).astype(np.float16),
                       rng.uniform(-1, 1, (2, 1, 1)).astype(np.float16)])


CAST_TYPES = ["f32", "f16", "bf16", "i32", "i16", "i8", "i1", "ui8", "ui16", "i64", "f64"]


def _cast_input(dtype: str) -> np.ndarray:
    floats = np.array([-300.7, -129.5, -128.5, -2.5, -1.5, -0.5, 0.0, 0.5, 1.5, 2.5, 126.5, 127.5, 200.0, 255.5,
                       256.0, 40000.0, -40000.0, 3e9, -3e9, 1e-3])
    if dtype == "i1":
        return np.array([True, False] * 10)
    if dtype == "bf16":
        return (floats.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    t = TensorType((), dtype).numpy_dtype
    if t.kind == "f":
        return floats.astype(t)
    info = np.iinfo(t)
    return np.linspace(max(info.min, -2 ** 31), min(info.max, 2 ** 31 - 1), 20).astype(t)


@pytest.mark.parametrize("src", CAST_TYPES)
def test_cast_to_every_type(src):
    x = _cast_input(src)
    g, v = nn_graph({"x": (x.shape, src)})
    b = builder(g)
    for dst in CAST_TYPES:
        if dst != src:
            g.add_output(b.op("nn.cast", [v], types=[TensorType(x.shape, dst)]), f"to_{dst}")
    want, got, _ = run(g, [x])
    failures = []
    for o, w, out in zip(got, want, g.outputs):
        dst = out.name[3:]
        try:
            if dst == "bf16":
                np.testing.assert_array_equal(o.view(np.uint16), w)
            elif dst in ("f32", "f16", "f64"):  # f64 is f32 in TOSA
                np.testing.assert_array_equal(o.astype(np.float64), w.astype(o.dtype).astype(np.float64))
            elif dst == "i1":
                np.testing.assert_array_equal(o, w)
            elif dst == "i64":  # TOSA's i32 carries i64 values that fit it
                fits = (w >= -2 ** 31) & (w < 2 ** 31)
                same_integers(o[fits], w[fits], out.name)
            else:
                same_integers(o, w, out.name)
        except AssertionError as e:
            failures.append(f"{src} -> {dst}: {e}")
    assert not failures, "\n".join(failures)


def test_report_measured_errors(capsys):
    """Not a check: prints what the tests above measured (run with -s to see it)."""
    with capsys.disabled():
        for op, error in sorted(MEASURED.items()):
            print(f"  {op:28s} max error {error:.3g}")


@pytest.mark.parametrize("dtype", ["i32", "i16", "i8"])
def test_integer_pow_wraps_like_nn_integers(dtype):
    rng = np.random.default_rng(12)
    x = rng.integers(-9, 9, 200).astype(TensorType((), dtype).numpy_dtype)
    y = rng.integers(0, 12, 200).astype(x.dtype)
    x[:4], y[:4] = [3, -2, 7, 0], [31, 19, 0, 0]  # overflowing powers wrap; 0 ** 0 == 1
    g, vx, vy = nn_graph({"x": (x.shape, dtype), "y": (y.shape, dtype)})
    b = builder(g)
    g.add_output(b.op("nn.pow", [vx, vy]), "runtime_exponent")
    g.add_output(b.op("nn.pow", [vx, b.constant(np.array([3], x.dtype))]), "cube")
    want, got, low = run(g, [x, y])
    for o, w, out in zip(got, want, g.outputs):
        same_integers(o, w, out.name)


def test_rank_0_and_rank_6_operands():
    """Scalars (rank 0) and rank-6 tensors, the extremes TOSA level 8K allows, broadcasting together."""
    rng = np.random.default_rng(13)
    g, s, t = nn_graph({"s": ((), "f32"), "t": ((2, 1, 2, 1, 2, 3), "f32")})
    b = builder(g)
    for op in ("nn.atan", "nn.round", "nn.sign", "nn.softplus"):
        g.add_output(b.op(op, [s]), f"{op[3:]}_scalar")
    g.add_output(b.op("nn.pow", [t, s]), "pow_6d")
    g.add_output(b.op("nn.fmod", [s, t]), "fmod_6d")
    g.add_output(b.op("nn.select", [b.op("nn.isnan", [s]), s, t]), "select_6d")
    g.add_output(b.op("nn.cast", [s], types=[TensorType((), "i16")]), "cast_scalar")
    check_lowering(g, [np.array(2.5, np.float32), rng.uniform(0.5, 3, (2, 1, 2, 1, 2, 3)).astype(np.float32)])


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_ops_computed_in_their_own_16_bit_type(dtype):
    """Selections, clamps and slopes need no wider arithmetic: they stay f16/bf16 (bf16 needs its extension)."""
    rng = np.random.default_rng(14)
    g, x, alpha = nn_graph({"x": ((3, 8), dtype), "alpha": ((8,), dtype)})
    b = builder(g)
    outs = {"leaky": b.op("nn.leaky_relu", [x], {"alpha": 0.2}), "prelu": b.op("nn.prelu", [x, alpha]),
            "clamp": b.op("nn.clamp", [x], {"min": -0.3, "max": 0.6}), "relu": b.op("nn.relu", [x]),
            "sign": b.op("nn.sign", [x]), "isinf": b.op("nn.isinf", [x]),
            "squared_difference": b.op("nn.squared_difference", [x, alpha]),
            "div": b.op("nn.div", [x, alpha]), "hard_swish": b.op("nn.hard_swish", [x])}
    for name, v in outs.items():
        g.add_output(v, name)
    report = check_lowering(g, seed=15, input_range=(-3, 3))
    assert dtype != "bf16" or "bf16" in report.target
    native = nn_graph({"x": ((3, 8), dtype)})
    nb = builder(native[0])
    for op, attrs in (("nn.leaky_relu", {"alpha": 0.2}), ("nn.clamp", {"min": -0.3, "max": 0.6}), ("nn.relu", {}),
                      ("nn.sign", {}), ("nn.isinf", {})):
        native[0].add_output(nb.op(op, [native[1]], attrs), op)
    assert "tosa.cast" not in lower(native[0]).histogram()


def test_remainders_by_constant_divisors_and_f16_are_exact():
    """Fewer reduction steps for a constant divisor or f16 operands still cover their whole range."""
    x = np.array([3.4e38, -3.4e38, 1e30, 7.0, -2.5e20, 1e-30], np.float32)
    h = np.array([65504.0, -65504.0, 1000.0, 3.0, 6e-8, -0.5], np.float16)
    g, vx, vh, vy = nn_graph({"x": (x.shape, "f32"), "h": (h.shape, "f16"), "y": (h.shape, "f16")})
    b = builder(g)
    for d in (0.013, -7.5, 1e-30):
        c = b.constant(np.array([d], np.float32))
        g.add_output(b.op("nn.fmod", [vx, c]), f"fmod_{d}")
        g.add_output(b.op("nn.mod", [vx, c]), f"mod_{d}")
    g.add_output(b.op("nn.fmod", [vh, vy]), "fmod_f16")
    g.add_output(b.op("nn.mod", [vh, vy]), "mod_f16")
    y = np.array([6e-8, 3e-3, -7e-5, 0.7, 1e-4, 6e-8], np.float16)
    want, got, _ = run(g, [x, h, y])
    for o, w, out in zip(got, want, g.outputs):
        np.testing.assert_array_equal(o, w, err_msg=out.name)


def test_remainders_and_quotients_of_random_f32_bit_patterns():
    """3000 pairs drawn from all finite f32 bit patterns (every magnitude, subnormals included):
    fmod and mod exact, floor_div exact up to 2^23 and within an ulp past it."""
    rng = np.random.default_rng(16)
    x, y = rng.integers(0, 2 ** 32, (2, 3000), dtype=np.uint64).astype(np.uint32).view(np.float32)
    finite = np.isfinite(x) & np.isfinite(y)
    x, y = x[finite], y[finite]
    g, vx, vy = nn_graph({"x": (x.shape, "f32"), "y": (y.shape, "f32")})
    b = builder(g)
    for op in ("nn.fmod", "nn.mod", "nn.floor_div", "nn.div"):
        g.add_output(b.op(op, [vx, vy]), op)
    want, got, _ = run(g, [x, y])
    for o, w, out in zip(got, want, g.outputs):
        if out.name in ("nn.fmod", "nn.mod"):
            np.testing.assert_array_equal(o, w, err_msg=out.name)
        else:
            assert elementwise_error(o, w) <= 2e-7, out.name
