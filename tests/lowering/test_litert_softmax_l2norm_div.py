"""Quantized ops lowered with LiteRT's integers (semantics "litert") where CpuRef computes in float:
one op lowered, run on the TOSA reference model and compared element by element with an independent
model of TFLite's reference kernel (tests/tflite_kernels.py, itself checked against LiteRT 2.3's
BUILTIN_REF kernels on generated one-op models while it was written). The target must be integer
only: pro_int (+ int16 for 16-bit data), no pro_fp.
"""
from __future__ import annotations

import numpy as np
import pytest

from nn2tosa.dialects.tosa import with_distinct_outputs
from nn2tosa.dialects.tosa_target import required_target

import tflite_kernels as tfl
from test_quant import one_op, qtype, run

pytest.importorskip("tosa_reference_model", reason="the TOSA reference model comes with tosa-tools")


def integer_target(low) -> set[str]:
    target = required_target(with_distinct_outputs(low))
    assert "pro_fp" not in target.profiles, target.reasons
    return set(target.profiles) | set(target.extensions)


def op_counts(low) -> dict[str, int]:
    counts: dict[str, int] = {}
    for n in low.nodes():
        counts[low.op(n)] = counts.get(low.op(n), 0) + 1
    return counts


def softmax_inputs(rng: np.random.Generator, shape: tuple[int, ...], dtype, spreads: tuple[int, ...]) -> np.ndarray:
    """Rows of several spreads: near-equal rows (large sums), wide rows (one dominant element), and
    rows at the type's extremes."""
    info = np.iinfo(dtype)
    rows = []
    for k in range(int(np.prod(shape[:-1]))):
        spread = spreads[k % len(spreads)]
        wide = spread >= (info.max - info.min) // 2
        centre = 0 if wide else int(rng.integers(info.min + spread, info.max - spread + 1))
        rows.append(np.clip(rng.integers(centre - spread, centre + spread + 1, shape[-1]), info.min, info.max))
    x = np.array(rows).reshape(shape).astype(dtype)
    x.reshape(-1)[:2] = info.min, info.max
    return x


@pytest.mark.parametrize("scale,beta,depth", [(0.0235, 1.0, 10), (0.1, 1.0, 33), (0.004, 2.0, 200),
                                              (0.7, 0.37, 7), (0.00390625, 1.0, 511),
                                              (0.1, 1.0, 1000)])  # ResNet-50's: sums past 512, shifts past 31
def test_int8_softmax_is_tflites(scale, beta, depth):
    rng = np.random.default_rng(depth)
    x = softmax_inputs(rng, (24, depth), np.int8, (0, 2, 10, 60, 127, 255))
    g = one_op("nn.softmax", {"x": qtype(x.shape, "i8", scale, 5)}, qtype(x.shape, "i8", 1 / 256, -128),
               {"axis": 1, "beta": beta})
    (got,), low = run(g, [x], semantics="litert")
    want = tfl.softmax_int8(x, scale, beta)
    assert np.array_equal(got.reshape(want.shape), want)
    assert integer_target(low) <= {"pro_int"}
    counts = op_counts(low)
    assert counts["tosa.table"] == 4 and "tosa.gather" not in counts and "tosa.intdiv" not in counts


def test_uint8_softmax_is_tflites():
    """uint8 is carried as int8 - 128; TFLite's uint8 kernel writes exp / sum * 256 + 0, the same bits."""
    rng = np.random.default_rng(3)
    x = softmax_inputs(rng, (2, 3, 16), np.uint8, (0, 5, 40, 255))
    g = one_op("nn.softmax", {"x": qtype(x.shape, "ui8", 0.05, 128)}, qtype(x.shape, "ui8", 1 / 256, 0),
               {"axis": 2, "beta": 1.0})
    (got,), _ = run(g, [x.view(np.int8)], semantics="litert")
    want = tfl.softmax_int8((x.astype(np.int64) - 128).astype(np.int8), 0.05, 1.0) + 128
    assert np.array_equal(got.view(np.uint8).reshape(want.shape), want)


@pytest.mark.parametrize("scale,beta,depth", [(1 / 4096, 1.0, 10), (0.0003, 1.0, 64), (3e-5, 2.0, 300),
                                              (0.002, 0.6, 5), (1e-4, 1.0, 1)])
def test_int16_softmax_is_tflites(scale, beta, depth):
    rng = np.random.default_rng(depth)
    x = softmax_inputs(rng, (24, depth), np.int16, (0, 3, 100, 3000, 20000, 32767))
    g = one_op("nn.softmax", {"x": qtype(x.shape, "i16", scale)}, qtype(x.shape, "i16", 1 / 32768),
               {"axis": 1, "beta": beta})
    (got,), low = run(g, [x], semantics="litert")
    want = tfl.softmax_int16(x, scale, beta)
    assert np.array_equal(got.reshape(want.shape), want)
    assert integer_target(low) <= {"pro_int", "int16", "doubleround"}
    counts = op_counts(low)
    assert counts["tosa.table"] == 2 and "tosa.gather" not in counts


def test_softmax_outside_tflites_quantization_keeps_the_cpuref_lowering():
    """An int16 output scale TFLite's kernel refuses (it requires 1/32768): computed as CpuRef does."""
    g = one_op("nn.softmax", {"x": qtype((2, 8), "i16", 1e-3)}, qtype((2, 8), "i16", 1e-4), {"axis": 1, "beta": 1.0})
    x = np.arange(-8, 8, dtype=np.int16).reshape(2, 8) * 1000
    (_,), low = run(g, [x], semantics="litert")
    assert "pro_fp" in required_target(with_distinct_outputs(low)).profiles


@pytest.mark.parametrize("dtype,zero_point,depth", [("i8", 0, 16), ("i8", -7, 3), ("i8", 100, 64), ("ui8", 128, 16),
                                                    ("ui8", 3, 40), ("ui8", 250, 1)])
def test_l2_normalization_is_tflites(dtype, zero_point, depth):
    """TFLite's kernels at their output scale 1/128 (int8 zero point 0, uint8 128): exact, including
    rows of one repeated value (the sum of squares 0 or 1 takes the kernel's special case) and rows
    whose sum of squares exceeds 2**29."""
    rng = np.random.default_rng(depth)
    np_type = np.int8 if dtype == "i8" else np.uint8
    info = np.iinfo(np_type)
    rows = [np.clip(zero_point + rng.integers(-s, s + 1, depth), info.min, info.max)
            for s in (0, 1, 2, 5, 30, 127, 255) for _ in range(4)]
    rows.append(np.full(depth, info.max if zero_point < 0 or dtype == "ui8" and zero_point < 128 else info.min))
    x = np.array(rows).astype(np_type)
    out = qtype(x.shape, dtype, 1 / 128, 0 if dtype == "i8" else 128)
    g = one_op("nn.l2_normalize", {"x": qtype(x.shape, dtype, 0.02, zero_point)}, out, {"axes": [1], "epsilon": 1e-12})
    (got,), low = run(g, [x.view(np.int8)], semantics="litert")
    want = tfl.l2_normalization(x, zero_point, dtype == "ui8")
    assert np.array_equal(got.view(np_type).reshape(want.shape).astype(np.int64), want)
    # uint8 graph inputs and outputs: their boundary RESCALEs take the semantics' DOUBLE_ROUND
    assert integer_target(low) <= ({"pro_int"} if dtype == "i8" else {"pro_int", "doubleround"})
    assert "tosa.gather" not in op_counts(low) and "tosa.intdiv" not in op_counts(low)


@pytest.mark.parametrize("dtype,output_scale", [("i8", 1 / 127.5), ("ui8", 1 / 127.5), ("i8", 1 / 100), ("i8", 0.02)])
def test_l2_normalization_at_other_output_scales(dtype, output_scale):
    """Output scales TFLite refuses (Arm NN files use 1/127.5): TFLite's arithmetic with the ratio in
    the row multiplier, as tests/tflite_kernels.py's extension of the kernel models it."""
    rng = np.random.default_rng(11)
    np_type = np.int8 if dtype == "i8" else np.uint8
    zero_point = 3 if dtype == "i8" else 130
    info = np.iinfo(np_type)
    x = np.clip(zero_point + rng.integers(-60, 61, (40, 12)), info.min, info.max).astype(np_type)
    out = qtype(x.shape, dtype, output_scale, 0 if dtype == "i8" else 128)
    g = one_op("nn.l2_normalize", {"x": qtype(x.shape, dtype, 0.02, zero_point)}, out, {"axes": [1], "epsilon": 1e-12})
    (got,), low = run(g, [x.view(np.int8)], semantics="litert")
    want = tfl.l2_normalization(x, zero_point, dtype == "ui8", output_scale)
    assert np.array_equal(got.view(np_type).reshape(want.shape).astype(np.int64), want)
    assert "pro_fp" not in required_target(with_distinct_outputs(low)).profiles


def test_large_l2_sums_normalize_like_tflite():
    """Sums of squares from 2 to past 2**29 (4096 channels of +-127 give 2**26; 40000 give 6.4e8)."""
    rng = np.random.default_rng(5)
    x = rng.integers(-128, 128, (3, 40000)).astype(np.int8)
    x[1] = 1
    x[2, :] = 0
    x[2, :3] = (1, -1, 1)
    g = one_op("nn.l2_normalize", {"x": qtype(x.shape, "i8", 0.1)}, qtype(x.shape, "i8", 1 / 128), {"axes": [1],
                                                                                                     "epsilon": 1e-12})
    (got,), _ = run(g, [x], semantics="litert")
    assert np.array_equal(got.reshape(x.shape), tfl.l2_normalization(x, 0, False))


# ------------------------------------------------------------------------------ corpus files
def _nn_op(path):
    from nn2tosa.api import load

    g = load(path)
    node = next(n for n in g.nodes() if g.op(n) != "graph.input")
    return g.attrs(node), [g.type_of(v) for v in g.operands(node)], g.types(node)[0]


# file pattern -> the largest |litert - CpuRef| (LSB) measured: CpuRef computes in float32
CORPUS_VS_CPUREF = {"*/softmax_*_qs16.armnn": 2, "*/l2norm_*_qs8.armnn": 1, "*/l2norm_*_qu8.armnn": 1,
                    "*/division_*_q*.armnn": 0, "*/elementwisebinary_div_*_q*.armnn": 0}


def _corpus_entries() -> list:
    from fnmatch import fnmatch

    from conftest import CORPUS

    if not CORPUS.exists():
        return []
    from corpus_harness import entries

    return entries(lambda e: any(fnmatch(e["file"], p) for p in CORPUS_VS_CPUREF))


@pytest.mark.parametrize("e", _corpus_entries(), ids=lambda e: e["file"])
def test_corpus_file_is_integer_and_tflites(e):
    """The corpus' int16 softmax, int8/uint8 L2 normalization and division files under litert: integer only,
    equal to the model of TFLite's kernel on the file's input, within the measured bound of CpuRef's
    float32 outputs."""
    from fnmatch import fnmatch

    from corpus_harness import convert_entry, load_expected, load_inputs, model_path, run_reference

    conv = convert_entry(e, semantics="litert")
    assert "pro_fp" not in conv.result.target.profiles, conv.result.target.reasons
    (got,), status = run_reference(conv.tosa, load_inputs(e))
    assert status == "TOSA_VALID"
    (cpuref,) = load_expected(e)
    got = np.asarray(got).reshape(cpuref.shape)
    got = got.view(cpuref.dtype) if got.dtype != cpuref.dtype else got
    attrs, in_types, yt = _nn_op(model_path(e))
    xt = in_types[0]
    x, *rest = (np.load(model_path(e).parent / f) for f in e["input_files"])
    if "div" in e["file"]:
        info = np.iinfo(x.dtype)
        qa, qb, qy = ((t.quant.scales[0], int(t.quant.zero_points[0])) for t in (*in_types, yt))
        want = tfl.div(x, rest[0], qa, qb, qy, info.min, info.max)
    elif "softmax" in e["file"]:
        axis = int(attrs["axis"]) % x.ndim
        want = np.moveaxis(tfl.softmax_int16(np.moveaxis(x, axis, -1), xt.quant.scales[0], attrs["beta"]), -1, axis)
    else:
        axis = 3 if attrs["dataLayout"] == "NHWC" else 1
        want = np.moveaxis(tfl.l2_normalization(np.moveaxis(x, axis, -1), int(xt.quant.zero_points[0]),
                                                x.dtype == np.uint8, yt.quant.scales[0]), -1, axis)
    assert np.array_equal(got.astype(np.int64), want)
    bound = next(b for p, b in CORPUS_VS_CPUREF.items() if fnmatch(e["file"], p))
    assert np.abs(got.astype(np.int64) - cpuref.astype(np.int64)).max() <= bound


@pytest.mark.parametrize("dtype,qa,qb,qy", [
    ("i8", (0.05, -3), (0.04, 7), (0.1, 2)),
    ("i8", (0.047, -116), (0.93, -58), (0.098, -110)),  # small dividends: TFLite's far-off results
    ("ui8", (0.1, 128), (0.05, 120), (0.2, 128)),
    ("ui8", (0.0109, 250), (0.315, 200), (0.19, 113)),
    ("i16", (1e-3, 0), (5e-4, 0), (2e-3, 0)),
    ("i16", (3e-5, 0), (1e-3, 0), (1e-4, 0)),
])
def test_division_is_tflites(dtype, qa, qb, qy):
    """Every dividend against divisors spread over the type (one broadcast row), zero divisors left out."""
    np_type = {"i8": np.int8, "ui8": np.uint8, "i16": np.int16}[dtype]
    info = np.iinfo(np_type)
    a = np.linspace(info.min, info.max, 256).round().astype(np_type)[:, None]
    b = np.linspace(info.min, info.max, 33).round().astype(np.int64)
    b = np.where(b == qb[1], b + 1, b).astype(np_type)[None, :]
    out = (a.shape[0], b.shape[1])
    g = one_op("nn.div", {"a": qtype(a.shape, dtype, *qa), "b": qtype(b.shape, dtype, *qb)}, qtype(out, dtype, *qy))
    (got,), low = run(g, [a.view(np.int8) if dtype == "ui8" else a, b.view(np.int8) if dtype == "ui8" else b],
                      semantics="litert")
    want = tfl.div(a, b, qa, qb, qy, info.min, info.max)
    assert np.array_equal(got.view(np_type).reshape(out).astype(np.int64), want)
    allowed = {"pro_int", "int16"} | ({"doubleround"} if dtype == "ui8" else set())
    assert integer_target(low) <= allowed
    assert "tosa.intdiv" not in op_counts(low) and "tosa.select" not in op_counts(low)
