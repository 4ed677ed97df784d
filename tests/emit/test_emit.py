"""Both emitters on hand-built TOSA-level graphs, checked with the real tools.

For every case (one small graph per op family and element type, with its inputs and the numpy
computation of what it must output):
  (a) the MLIR module verifies in-process and passes MLIR's tosa-attach-target +
      tosa-validate{strict-op-spec-alignment} with exactly the target target.py reports (dropping
      any one profile or extension of it makes validation fail);
  (b) our .tosa runs on the TOSA reference model with TOSA_VALID and gives the numpy results;
  (c) tosa-opt --tosa-serialize of our MLIR text gives a .tosa with the same tensor names whose
      reference-model outputs are bit-identical to our .tosa's;
  (d) the same graph gives byte-identical .tosa, MLIR text and bytecode twice.
"""
from __future__ import annotations

import functools
import math
import os
import subprocess
import sysconfig
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from nn2tosa.ir import Builder, Graph, Loc, ShapeType, TensorType, Value, verify
from nn2tosa.lowering.flatbuffer_emitter import build_flatbuffer
from nn2tosa.lowering.mlir_emitter import module_bytecode, module_text, to_mlir, validate, write_mlir
from nn2tosa.dialects.tosa_target import Target, required_target
from nn2tosa.schemas import tosa_generated as fb

ml_dtypes = pytest.importorskip("ml_dtypes", reason="ml_dtypes (from tosa-tools) gives bf16/fp8 numpy types")
trm = pytest.importorskip("tosa_reference_model", reason="the TOSA reference model comes with tosa-tools")
TOSA_OPT = Path(sysconfig.get_paths()["purelib"]) / "bin" / "tosa-opt"
os.environ.setdefault("TOSA_MODEL_NO_BACKTRACE", "1")


# ------------------------------------------------------------------------------ graph building
@dataclass
class Case:
    """A TOSA-level graph under construction, the inputs to feed it and the expected outputs."""

    g: Graph = field(default_factory=Graph)
    feeds: list[np.ndarray] = field(default_factory=list)
    expected: list[np.ndarray] = field(default_factory=list)
    tolerance: float = 0.0  # relative, for float outputs; 0 = bit exact

    def __post_init__(self) -> None:
        self.b = Builder(self.g, Loc("case"), constant_dialect="tosa")

    def input(self, name: str, array: np.ndarray, dtype: str | None = None) -> Value:
        dtype = dtype or _element_type(array)
        self.feeds.append(_to_reference(array, dtype))
        return self.g.add_input(TensorType(array.shape, dtype), name)

    def const(self, array: Any, dtype: str | None = None) -> Value:
        array = np.asarray(array)
        dtype = dtype or _element_type(array)
        return self.b.constant(_to_storage(array, dtype), dtype)

    def zp(self, dtype: str, value: int | float = 0) -> Value:
        return self.const(np.array([value]), dtype)

    def shape(self, values: list[int]) -> Value:
        node = self.g.add_op("tosa.const_shape", (), [ShapeType(len(values))], {"values": np.array(values, np.int64)},
                             Loc("shape"))
        return Value(node, 0)

    def op(self, name: str, operands: list[Value], shape: tuple[int, ...], dtype: str, **attrs: Any) -> Value:
        return self.b.op(f"tosa.{name}", operands, attrs, types=[TensorType(tuple(shape), dtype)])

    def output(self, value: Value, name: str, expected: np.ndarray) -> None:
        self.g.add_output(value, name)
        self.expected.append(_to_reference(np.asarray(expected), self.g.type_of(value).dtype))


def _element_type(array: np.ndarray) -> str:
    special = {np.dtype(ml_dtypes.bfloat16): "bf16", np.dtype(ml_dtypes.float8_e4m3fn): "f8E4M3FN",
               np.dtype(ml_dtypes.float8_e5m2): "f8E5M2", np.dtype(bool): "i1"}
    if array.dtype in special:
        return special[array.dtype]
    return {np.dtype(t): n for t, n in [(np.int8, "i8"), (np.int16, "i16"), (np.int32, "i32"), (np.float16, "f16"),
                                        (np.float32, "f32")]}[array.dtype]


def _to_storage(array: np.ndarray, dtype: str) -> np.ndarray:
    """Values -> the IR's storage (raw bits for bf16/fp8)."""
    numpy_type = {"bf16": ml_dtypes.bfloat16, "f8E4M3FN": ml_dtypes.float8_e4m3fn, "f8E5M2": ml_dtypes.float8_e5m2}
    if dtype in numpy_type:
        return np.asarray(array, dtype=numpy_type[dtype]).view(np.uint16 if dtype == "bf16" else np.uint8)
    return np.asarray(array, dtype=TensorType((), dtype).numpy_dtype)


def _to_reference(array: np.ndarray, dtype: str) -> np.ndarray:
    """Values -> what the reference model takes and returns (bf16 as uint16 bits, fp8 as uint8 bits)."""
    return _to_storage(array, dtype)


CASES: dict[str, Callable[[], Case]] = {}


def case(fn: Callable[[np.random.Generator], Case]) -> Callable[[np.random.Generator], Case]:
    """Register a case; its random data comes from a generator seeded by its name (reproducible)."""
    CASES[fn.__name__] = lambda: fn(np.random.default_rng(zlib.crc32(fn.__name__.encode())))
    return fn


def rand(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any = np.float32, lo: float = -1, hi: float = 1):
    if np.issubdtype(np.dtype(dtype), np.integer):
        return rng.integers(lo, hi, size=shape, endpoint=True).astype(dtype)
    return rng.uniform(lo, hi, size=shape).astype(dtype)


# ------------------------------------------------------------------------------ numpy references
def _windows(x: np.ndarray, kernel: tuple[int, int], stride: list[int], dilation: tuple[int, int] = (1, 1)):
    """Yield (ky, kx, patch) with patch[n, oy, ox, c] = x[n, oy*sy + ky*dy, ox*sx + kx*dx, c]."""
    _, h, w, _ = x.shape
    oh = (h - (kernel[0] - 1) * dilation[0] - 1) // stride[0] + 1
    ow = (w - (kernel[1] - 1) * dilation[1] - 1) // stride[1] + 1
    for ky in range(kernel[0]):
        for kx in range(kernel[1]):
            y0, x0 = ky * dilation[0], kx * dilation[1]
            yield ky, kx, x[:, y0:y0 + (oh - 1) * stride[0] + 1:stride[0], x0:x0 + (ow - 1) * stride[1] + 1:stride[1], :]


def _pad_nhwc(x: np.ndarray, pad: list[int], value: float = 0) -> np.ndarray:
    return np.pad(x, ((0, 0), (pad[0], pad[1]), (pad[2], pad[3]), (0, 0)), constant_values=value)


def np_conv2d(x, w, bias, pad, stride, dilation, x_zp=0, w_zp=0, wide=np.float64):
    xp = _pad_nhwc(x.astype(wide) - x_zp, pad)
    w = w.astype(wide) - w_zp
    out = sum(patch @ w[:, ky, kx, :].T for ky, kx, patch in _windows(xp, w.shape[1:3], stride, dilation))
    return out + bias


def np_depthwise(x, w, bias, pad, stride, dilation):
    xp = _pad_nhwc(x.astype(np.float64), pad)
    kh, kw, c, m = w.shape
    out = sum((patch[..., :, None] * w[ky, kx]).reshape(patch.shape[:3] + (c * m,))
              for ky, kx, patch in _windows(xp, (kh, kw), stride, dilation))
    return out + bias


def np_transpose_conv2d(x, w, bias, out_pad, stride):
    n, ih, iw, _ = x.shape
    o, kh, kw, _ = w.shape
    oh = (ih - 1) * stride[0] + out_pad[0] + out_pad[1] + kh
    ow = (iw - 1) * stride[1] + out_pad[2] + out_pad[3] + kw
    out = np.zeros((n, oh, ow, o)) + bias
    for iy in range(ih):
        for ix in range(iw):
            for ky in range(kh):
                for kx in range(kw):
                    oy, ox = iy * stride[0] + out_pad[0] + ky, ix * stride[1] + out_pad[2] + kx
                    if 0 <= oy < oh and 0 <= ox < ow:
                        out[:, oy, ox, :] += x[:, iy, ix, :].astype(np.float64) @ w[:, ky, kx, :].T
    return out


def np_rescale(x, multiplier, shift, in_zp, out_zp, out_dtype, double_round=False, in_unsigned=False,
               out_unsigned=False):
    """TOSA 1.0 RESCALE: apply_scale_32/16 of (x - in_zp), plus out_zp, saturated."""
    v = (x.view(np.uint8 if x.dtype == np.int8 else np.uint16) if in_unsigned else x).astype(np.int64) - in_zp
    multiplier = np.asarray(multiplier, np.int64)
    shift = np.asarray(shift, np.int64)
    rounding = np.left_shift(np.int64(1), shift - 1)
    if double_round:
        rounding = rounding + np.where(shift > 31, np.where(v >= 0, 1 << 30, -(1 << 30)), 0)
    r = ((v * multiplier + rounding) >> shift) + out_zp
    info = np.iinfo({np.int8: np.uint8, np.int16: np.uint16}[out_dtype] if out_unsigned else out_dtype)
    r = np.clip(r, info.min, info.max)
    return r.astype(np.uint8 if out_dtype == np.int8 else np.uint16).view(out_dtype) if out_unsigned else r.astype(out_dtype)


def np_resize(x, scale, offset, border, mode, integer):
    """TOSA 1.0 RESIZE (NHWC), with the spec's integer coordinate arithmetic."""
    n, ih, iw, c = x.shape
    sy_n, sy_d, sx_n, sx_d = scale
    oh = ((ih - 1) * sy_n - offset[0] + border[0]) // sy_d + 1
    ow = ((iw - 1) * sx_n - offset[1] + border[1]) // sx_d + 1
    y = np.arange(oh) * sy_d + offset[0]
    xx = np.arange(ow) * sx_d + offset[1]
    iy, ix = np.floor_divide(y, sy_n), np.floor_divide(xx, sx_n)
    ry, rx = y - iy * sy_n, xx - ix * sx_n
    y0, y1 = np.maximum(iy, 0), np.minimum(iy + 1, ih - 1)
    x0, x1 = np.maximum(ix, 0), np.minimum(ix + 1, iw - 1)
    if mode == "NEAREST":
        ys = np.where(2 * ry >= sy_n, y1, y0)
        xs = np.where(2 * rx >= sx_n, x1, x0)
        return x[:, ys][:, :, xs]
    wide = x.astype(np.int64 if integer else np.float64)
    unit_y, unit_x = (sy_n, sx_n) if integer else (1.0, 1.0)
    dy = (ry if integer else ry / sy_n)[None, :, None, None]
    dx = (rx if integer else rx / sx_n)[None, None, :, None]
    v = lambda ys, xs: wide[:, ys][:, :, xs]  # noqa: E731
    return (v(y0, x0) * (unit_y - dy) * (unit_x - dx) + v(y0, x1) * (unit_y - dy) * dx
            + v(y1, x0) * dy * (unit_x - dx) + v(y1, x1) * dy * dx)


# ------------------------------------------------------------------------------ the cases
CONV = {"pad": [1, 0, 2, 1], "stride": [2, 1], "dilation": [1, 2]}


@case
def conv2d_f32(rng):
    c = Case(tolerance=1e-5)
    x, w, b = rand(rng, (1, 8, 8, 3)), rand(rng, (4, 3, 2, 3)), rand(rng, (4,))
    y = c.op("conv2d", [c.input("input.1", x), c.const(w), c.const(b), c.zp("f32"), c.zp("f32")],
             (1, 4, 9, 4), "f32", acc_type="f32", **CONV)
    c.output(y, "conv_out", np_conv2d(x, w, b, **CONV))
    return c


@case
def conv2d_i8_zero_points(rng):
    c = Case()
    x, w, b = rand(rng, (2, 5, 5, 4), np.int8, -128, 127), rand(rng, (3, 3, 3, 4), np.int8, -127, 127), \
        rand(rng, (3,), np.int32, -1000, 1000)
    attrs = {"pad": [1, 1, 1, 1], "stride": [1, 1], "dilation": [1, 1]}
    y = c.op("conv2d", [c.input("x", x), c.const(w), c.const(b), c.zp("i8", -3), c.zp("i8", 5)],
             (2, 5, 5, 3), "i32", acc_type="i32", **attrs)
    c.output(y, "acc", np_conv2d(x, w, b, x_zp=-3, w_zp=5, wide=np.int64, **attrs).astype(np.int32))
    return c


@case
def conv2d_i16_i48_rescale(rng):
    """int16 activations: i48 accumulator and bias, then RESCALE i48 -> i16 (EXT-INT16)."""
    c = Case()
    x, w = rand(rng, (1, 4, 4, 2), np.int16, -30000, 30000), rand(rng, (2, 2, 2, 2), np.int8, -127, 127)
    b = np.array([1 << 33, -(1 << 33)], np.int64)
    attrs = {"pad": [0, 0, 0, 0], "stride": [1, 1], "dilation": [1, 1]}
    acc = c.op("conv2d", [c.input("x", x), c.const(w), c.const(b, "i48"), c.zp("i16"), c.zp("i8")],
               (1, 3, 3, 2), "i48", acc_type="i48", **attrs)
    # an i48 input takes a 16-bit multiplier (scale32 false)
    y = c.op("rescale", [acc, c.const([1 << 14], "i16"), c.const([38], "i8"), c.zp("i48"), c.zp("i16")],
             (1, 3, 3, 2), "i16", scale32=False, rounding_mode="SINGLE_ROUND", per_channel=False,
             input_unsigned=False, output_unsigned=False)
    wide = np_conv2d(x, w, b, wide=np.int64, **attrs)
    c.output(y, "y", np_rescale(wide, 1 << 14, 38, 0, 0, np.int16))
    return c


@case
def conv2d_int4_weights(rng):
    c = Case()
    x, w = rand(rng, (1, 3, 3, 5), np.int8, -128, 127), rand(rng, (2, 2, 2, 5), np.int8, -7, 7)
    attrs = {"pad": [0, 1, 0, 1], "stride": [1, 1], "dilation": [1, 1]}
    y = c.op("conv2d", [c.input("x", x), c.const(w, "i4"), c.const(np.zeros(2, np.int32)), c.zp("i8"), c.zp("i4")],
             (1, 3, 3, 2), "i32", acc_type="i32", **attrs)
    c.output(y, "y", np_conv2d(x, w, 0, wide=np.int64, **attrs).astype(np.int32))
    return c


@case
def conv2d_f16_f32_accumulator(rng):
    c = Case(tolerance=2e-3)
    x, w, b = rand(rng, (1, 4, 4, 3), np.float16), rand(rng, (2, 3, 3, 3), np.float16), rand(rng, (2,), np.float16)
    attrs = {"pad": [1, 1, 1, 1], "stride": [1, 1], "dilation": [1, 1]}
    y = c.op("conv2d", [c.input("x", x), c.const(w), c.const(b), c.zp("f16"), c.zp("f16")], (1, 4, 4, 2), "f16",
             acc_type="f32", **attrs)
    c.output(y, "y", np_conv2d(x, w, b.astype(np.float64), **attrs).astype(np.float16))
    return c


@case
def conv3d_f32(rng):
    c = Case(tolerance=1e-5)
    x, w, b = rand(rng, (1, 5, 3, 4, 2)), rand(rng, (3, 2, 2, 3, 2)), rand(rng, (3,))
    pad, stride = [1, 0, 0, 1, 1, 1], [2, 1, 1]
    y = c.op("conv3d", [c.input("x", x), c.const(w), c.const(b), c.zp("f32"), c.zp("f32")], (1, 3, 3, 4, 3), "f32",
             acc_type="f32", pad=pad, stride=stride, dilation=[1, 1, 1])
    xp = np.pad(x.astype(np.float64), ((0, 0), (1, 0), (0, 1), (1, 1), (0, 0)))
    out = np.zeros((1, 3, 3, 4, 3)) + b
    for kd in range(2):
        for ky in range(2):
            for kx in range(3):
                patch = xp[:, kd:kd + 5:2, ky:ky + 3, kx:kx + 4, :]
                out += patch @ w[:, kd, ky, kx, :].T
    c.output(y, "y", out)
    return c


@case
def depthwise_conv2d_f32(rng):
    c = Case(tolerance=1e-5)
    x, w, b = rand(rng, (1, 6, 5, 3)), rand(rng, (3, 2, 3, 2)), rand(rng, (6,))
    attrs = {"pad": [1, 1, 0, 1], "stride": [1, 2], "dilation": [2, 1]}
    y = c.op("depthwise_conv2d", [c.input("x", x), c.const(w), c.const(b), c.zp("f32"), c.zp("f32")],
             (1, 4, 3, 6), "f32", acc_type="f32", **attrs)
    c.output(y, "y", np_depthwise(x, w, b, **attrs))
    return c


@case
def transpose_conv2d_f32(rng):
    c = Case(tolerance=1e-5)
    x, w, b = rand(rng, (1, 3, 2, 2)), rand(rng, (3, 3, 2, 2)), rand(rng, (3,))
    attrs = {"out_pad": [0, 1, 1, 0], "stride": [2, 2]}
    y = c.op("transpose_conv2d", [c.input("x", x), c.const(w), c.const(b), c.zp("f32"), c.zp("f32")],
             (1, 8, 5, 3), "f32", acc_type="f32", **attrs)
    c.output(y, "y", np_transpose_conv2d(x, w, b, **attrs))
    return c


@case
def matmul_i8_and_f16(rng):
    c = Case(tolerance=1e-3)
    a, bm = rand(rng, (2, 3, 4), np.int8, -128, 127), rand(rng, (2, 4, 5), np.int8, -128, 127)
    y = c.op("matmul", [c.input("a", a), c.input("b", bm), c.zp("i8", 2), c.zp("i8", -1)], (2, 3, 5), "i32")
    c.output(y, "ab", ((a.astype(np.int64) - 2) @ (bm.astype(np.int64) + 1)).astype(np.int32))
    fa, fbm = rand(rng, (1, 2, 8), np.float16), rand(rng, (1, 8, 3), np.float16)
    fy = c.op("matmul", [c.input("fa", fa), c.const(fbm), c.zp("f16"), c.zp("f16")], (1, 2, 3), "f32")
    c.output(fy, "fab", fa.astype(np.float64) @ fbm.astype(np.float64))
    return c


@case
def pooling_f32_i8(rng):
    c = Case(tolerance=1e-6)
    x = rand(rng, (1, 5, 6, 2))
    attrs = {"kernel": [3, 2], "stride": [2, 2], "pad": [1, 1, 1, 1]}
    avg = c.op("avg_pool2d", [c.input("x", x), c.zp("f32"), c.zp("f32")], (1, 3, 4, 2), "f32", acc_type="f32", **attrs)
    xp, ones = _pad_nhwc(x.astype(np.float64), attrs["pad"]), _pad_nhwc(np.ones_like(x, np.float64), attrs["pad"])
    total = sum(p for _, _, p in _windows(xp, (3, 2), attrs["stride"]))
    count = sum(p for _, _, p in _windows(ones, (3, 2), attrs["stride"]))
    c.output(avg, "avg", total / count)
    q = rand(rng, (1, 4, 4, 3), np.int8, -128, 127)
    mp = c.op("max_pool2d", [c.input("q", q)], (1, 4, 4, 3), "i8", kernel=[3, 3], stride=[1, 1], pad=[1, 1, 1, 1])
    qp = _pad_nhwc(q, [1, 1, 1, 1], -128)
    c.output(mp, "max", np.max([p for _, _, p in _windows(qp, (3, 3), [1, 1])], axis=0))
    return c


@case
def elementwise_f32(rng):
    c = Case(tolerance=2e-6)
    a, b = rand(rng, (2, 3, 4)), rand(rng, (1, 3, 1), lo=0.5, hi=2)
    x, y = c.input("a", a), c.input("b", b)
    s = (2, 3, 4)
    c.output(c.op("add", [x, y], s, "f32"), "add", a + b)
    c.output(c.op("sub", [x, y], s, "f32"), "sub", a - b)
    c.output(c.op("mul", [x, y, c.zp("i8")], s, "f32"), "mul", a * b)
    c.output(c.op("maximum", [x, y], s, "f32"), "max", np.maximum(a, b))
    c.output(c.op("minimum", [x, y], s, "f32", nan_mode="IGNORE"), "min", np.minimum(a, b))
    c.output(c.op("pow", [c.op("abs", [x], s, "f32"), y], s, "f32"), "pow", np.abs(a) ** b)
    c.output(c.op("greater", [x, y], s, "i1"), "gt", a > b)
    c.output(c.op("select", [c.op("greater_equal", [x, y], s, "i1"), x, y], s, "f32"), "sel", np.where(a >= b, a, b))
    c.output(c.op("clamp", [x], s, "f32", min_val=-0.25, max_val=0.5), "clamp", np.clip(a, -0.25, 0.5))
    return c


@case
def unary_f32(rng):
    c = Case(tolerance=2e-5)
    a = rand(rng, (3, 5), lo=0.1, hi=3)
    x = c.input("x", a)
    erf = np.vectorize(math.erf)
    for name, fn in [("exp", np.exp), ("log", np.log), ("sin", np.sin), ("cos", np.cos), ("rsqrt", lambda v: 1 / np.sqrt(v)),
                     ("reciprocal", lambda v: 1 / v), ("ceil", np.ceil), ("floor", np.floor), ("tanh", np.tanh),
                     ("sigmoid", lambda v: 1 / (1 + np.exp(-v))), ("erf", erf)]:
        c.output(c.op(name, [x], (3, 5), "f32"), name, fn(a.astype(np.float64)))
    c.output(c.op("negate", [x, c.zp("f32"), c.zp("f32")], (3, 5), "f32"), "neg", -a)
    return c


@case
def integer_arithmetic_i32(rng):
    c = Case()
    a, b = rand(rng, (4, 6), np.int32, -100000, 100000), rand(rng, (4, 6), np.int32, 1, 3000)
    sh = rand(rng, (4, 6), np.int32, 0, 12)
    x, y, s = c.input("a", a), c.input("b", b), c.input("s", sh)
    shape = (4, 6)
    c.output(c.op("add", [x, y], shape, "i32"), "add", a + b)
    c.output(c.op("sub", [x, y], shape, "i32"), "sub", a - b)
    c.output(c.op("mul", [x, y, c.zp("i8", 3)], shape, "i32"), "mul_shift3",
             ((a.astype(np.int64) * b + 4) >> 3).astype(np.int32))
    c.output(c.op("intdiv", [x, y], shape, "i32"), "div", (np.sign(a) * (np.abs(a) // b)).astype(np.int32))
    c.output(c.op("maximum", [x, y], shape, "i32"), "max", np.maximum(a, b))
    c.output(c.op("abs", [x], shape, "i32"), "abs", np.abs(a))
    c.output(c.op("bitwise_and", [x, y], shape, "i32"), "and", a & b)
    c.output(c.op("bitwise_or", [x, y], shape, "i32"), "or", a | b)
    c.output(c.op("bitwise_xor", [x, y], shape, "i32"), "xor", a ^ b)
    c.output(c.op("bitwise_not", [x], shape, "i32"), "not", ~a)
    c.output(c.op("logical_left_shift", [x, s], shape, "i32"), "shl", (a.astype(np.int64) << sh).astype(np.int32))
    c.output(c.op("logical_right_shift", [x, s], shape, "i32"), "shr", (a.view(np.uint32) >> sh.astype(np.uint32)).view(np.int32))
    rounded = (a >> sh) + np.where((sh > 0) & ((a >> np.maximum(sh - 1, 0)) & 1 == 1), 1, 0)
    c.output(c.op("arithmetic_right_shift", [x, s], shape, "i32", round=True), "ashr", rounded.astype(np.int32))
    c.output(c.op("clz", [x], shape, "i32"), "clz",
             np.array([32 - int(v).bit_length() if v >= 0 else 0 for v in a.ravel()], np.int32).reshape(shape))
    c.output(c.op("equal", [x, y], shape, "i1"), "eq", a == b)
    return c


@case
def small_integers_i8_i16(rng):
    c = Case()
    a, b = rand(rng, (3, 4), np.int8, -128, 127), rand(rng, (3, 4), np.int8, -128, 127)
    x, y = c.input("a", a), c.input("b", b)
    c.output(c.op("mul", [x, y, c.zp("i8")], (3, 4), "i32"), "mul", a.astype(np.int32) * b)
    c.output(c.op("negate", [x, c.zp("i8", 3), c.zp("i8", -2)], (3, 4), "i8"), "neg",
             np.clip(-(a.astype(np.int32) - 3) - 2, -128, 127).astype(np.int8))
    c.output(c.op("clamp", [x], (3, 4), "i8", min_val=-20, max_val=30), "clamp", np.clip(a, -20, 30))
    h = rand(rng, (2, 5), np.int16, -32768, 32767)
    xh = c.input("h", h)
    c.output(c.op("reduce_min", [xh], (1, 5), "i16", axis=0), "hmin", h.min(axis=0, keepdims=True))
    c.output(c.op("bitwise_xor", [xh, xh], (2, 5), "i16"), "hxor", np.zeros_like(h))
    return c


@case
def booleans(rng):
    c = Case()
    p, q = rng.random((2, 3, 4)) > 0.5, rng.random((2, 3, 4)) > 0.3
    x, y = c.input("p", p), c.input("q", q)
    c.output(c.op("logical_and", [x, y], p.shape, "i1"), "and", p & q)
    c.output(c.op("logical_or", [x, y], p.shape, "i1"), "or", p | q)
    c.output(c.op("logical_xor", [x, y], p.shape, "i1"), "xor", p ^ q)
    c.output(c.op("logical_not", [x], p.shape, "i1"), "not", ~p)
    c.output(c.op("reduce_any", [x], (2, 1, 4), "i1", axis=1), "any", p.any(axis=1, keepdims=True))
    c.output(c.op("reduce_all", [y], (2, 3, 1), "i1", axis=2), "all", q.all(axis=2, keepdims=True))
    c.output(c.op("transpose", [x], (4, 2, 3), "i1", perms=[2, 0, 1]), "t", p.transpose(2, 0, 1))
    return c


@case
def rescale_modes(rng):
    c = Case()
    v = rand(rng, (2, 3), np.int32, -(1 << 20), 1 << 20)
    x = c.input("acc", v)
    common = {"per_channel": False, "input_unsigned": False, "output_unsigned": False}
    c.output(c.op("rescale", [x, c.const([1373724854], "i32"), c.const([36], "i8"), c.zp("i32"), c.zp("i8", -5)],
                  (2, 3), "i8", scale32=True, rounding_mode="SINGLE_ROUND", **common),
             "single", np_rescale(v, 1373724854, 36, 0, -5, np.int8))
    c.output(c.op("rescale", [x, c.const([1803013871], "i32"), c.const([40], "i8"), c.zp("i32"), c.zp("i16")],
                  (2, 3), "i16", scale32=True, rounding_mode="DOUBLE_ROUND", **common),
             "double", np_rescale(v, 1803013871, 40, 0, 0, np.int16, double_round=True))
    q = rand(rng, (2, 2, 3), np.int8, -128, 127)
    multipliers, shifts = np.array([20000, 16384, 30000], np.int16), np.array([14, 15, 16], np.int8)
    c.output(c.op("rescale", [c.input("q", q), c.const(multipliers), c.const(shifts), c.zp("i8", 4), c.zp("i8", -3)],
                  (2, 2, 3), "i8", scale32=False, rounding_mode="SINGLE_ROUND", per_channel=True,
                  input_unsigned=False, output_unsigned=False),
             "per_channel", np_rescale(q, multipliers, shifts, 4, -3, np.int8))
    u = rand(rng, (5,), np.int8, -128, 127)  # raw bytes of uint8 data
    c.output(c.op("rescale", [c.input("u8", u), c.const([1 << 30], "i32"), c.const([30], "i8"), c.zp("i8", 128 - 256),
                              c.zp("i8")], (5,), "i8", scale32=True, rounding_mode="SINGLE_ROUND", per_channel=False,
                  input_unsigned=True, output_unsigned=False),
             "from_u8", np_rescale(u, 1 << 30, 30, 128, 0, np.int8, in_unsigned=True))
    return c


@case
def tables_i8_i16(rng):
    c = Case()
    a = rand(rng, (4, 8), np.int8, -128, 127)
    table8 = rand(rng, (256,), np.int8, -128, 127)
    c.output(c.op("table", [c.input("a", a), c.const(table8)], (4, 8), "i8"), "t8", table8[a.astype(np.int32) + 128])
    h = rand(rng, (3, 7), np.int16, -32768, 32767)
    # TOSA requires neighbouring entries to differ by an int16 (the interpolation slope)
    table16 = (np.linspace(-30000, 30000, 513) + rand(rng, (513,), np.int32, -500, 500)).astype(np.int16)
    idx, frac = (h.astype(np.int32) + 32768) >> 7, (h.astype(np.int32) + 32768) & 0x7F
    base, nxt = table16[idx].astype(np.int32), table16[idx + 1].astype(np.int32)
    c.output(c.op("table", [c.input("h", h), c.const(table16)], (3, 7), "i32"), "t16", (base << 7) + (nxt - base) * frac)
    return c


@case
def data_layout_f32(rng):
    c = Case()
    a = rand(rng, (2, 3, 4))
    x = c.input("x", a)
    c.output(c.op("reshape", [x, c.shape([4, 6])], (4, 6), "f32"), "reshape", a.reshape(4, 6))
    c.output(c.op("transpose", [x], (4, 2, 3), "f32", perms=[2, 0, 1]), "transpose", a.transpose(2, 0, 1))
    c.output(c.op("slice", [x, c.shape([1, 0, 1]), c.shape([1, 2, 3])], (1, 2, 3), "f32"), "slice", a[1:2, 0:2, 1:4])
    c.output(c.op("pad", [x, c.shape([0, 1, 2, 0, 1, 1]), c.zp("f32", 1.5)], (3, 5, 6), "f32"), "pad",
             np.pad(a, ((0, 1), (2, 0), (1, 1)), constant_values=1.5))
    c.output(c.op("tile", [x, c.shape([1, 2, 1])], (2, 6, 4), "f32"), "tile", np.tile(a, (1, 2, 1)))
    c.output(c.op("reverse", [x], (2, 3, 4), "f32", axis=1), "reverse", a[:, ::-1, :])
    c.output(c.op("concat", [x, x, c.const(np.ones((2, 1, 4), np.float32))], (2, 7, 4), "f32", axis=1), "concat",
             np.concatenate([a, a, np.ones((2, 1, 4), np.float32)], axis=1))
    c.output(c.op("identity", [x], (2, 3, 4), "f32"), "identity", a)
    return c


@case
def data_layout_i8_i16(rng):
    c = Case()
    a = rand(rng, (3, 4), np.int8, -128, 127)
    h = rand(rng, (3, 2), np.int16, -32768, 32767)
    x, xh = c.input("a", a), c.input("h", h)
    c.output(c.op("pad", [x, c.shape([1, 0, 0, 2]), c.zp("i8", -7)], (4, 6), "i8"), "pad",
             np.pad(a, ((1, 0), (0, 2)), constant_values=-7))
    c.output(c.op("concat", [xh, xh], (3, 4), "i16", axis=1), "concat16", np.concatenate([h, h], axis=1))
    c.output(c.op("slice", [xh, c.shape([1, 1]), c.shape([2, 1])], (2, 1), "i16"), "slice16", h[1:3, 1:2])
    return c


@case
def gather_scatter(rng):
    c = Case()
    values = rand(rng, (2, 5, 3))
    idx = np.array([[4, 0, 2, 2], [1, 3, 0, 4]], np.int32)
    g = c.op("gather", [c.input("values", values), c.input("indices", idx)], (2, 4, 3), "f32")
    c.output(g, "gathered", np.take_along_axis(values, idx[:, :, None].astype(np.int64), axis=1))
    base = rand(rng, (1, 6, 2), np.int32, -50, 50)
    upd = rand(rng, (1, 3, 2), np.int32, -50, 50)
    sidx = np.array([[5, 0, 3]], np.int32)
    out = base.copy()
    out[0, sidx[0]] = upd[0]
    s = c.op("scatter", [c.input("base", base), c.const(sidx), c.input("updates", upd)], (1, 6, 2), "i32")
    c.output(s, "scattered", out)
    return c


@case
def reductions_and_argmax(rng):
    c = Case(tolerance=1e-6)
    a = rand(rng, (3, 4, 5))
    x = c.input("x", a)
    c.output(c.op("reduce_sum", [x], (3, 1, 5), "f32", axis=1), "sum", a.astype(np.float64).sum(axis=1, keepdims=True))
    c.output(c.op("reduce_max", [x], (3, 4, 1), "f32", axis=2), "max", a.max(axis=2, keepdims=True))
    c.output(c.op("reduce_product", [x], (1, 4, 5), "f32", axis=0), "prod", a.astype(np.float64).prod(axis=0, keepdims=True))
    c.output(c.op("argmax", [x], (3, 5), "i32", axis=1), "argmax", a.argmax(axis=1).astype(np.int32))
    q = rand(rng, (2, 6), np.int8, -128, 127)
    c.output(c.op("reduce_max", [c.input("q", q)], (2, 1), "i8", axis=1), "qmax", q.max(axis=1, keepdims=True))
    s = rand(rng, (4, 3), np.int32, -1000, 1000)
    c.output(c.op("reduce_sum", [c.input("s", s)], (1, 3), "i32", axis=0), "isum", s.sum(axis=0, keepdims=True))
    return c


@case
def casts(rng):
    c = Case()
    f = np.array([-300.0, -128.5, -2.5, -1.5, 0.5, 1.5, 2.49, 126.5, 127.5, 1000.0], np.float32)
    x = c.input("f", f)
    n = (10,)
    c.output(c.op("cast", [x], n, "i8"), "f32_i8", np.clip(np.rint(f), -128, 127).astype(np.int8))
    c.output(c.op("cast", [x], n, "i32"), "f32_i32", np.rint(f).astype(np.int32))
    c.output(c.op("cast", [x], n, "f16"), "f32_f16", f.astype(np.float16))
    c.output(c.op("cast", [x], n, "bf16"), "f32_bf16", f.astype(ml_dtypes.bfloat16))
    q = rand(rng, (6,), np.int8, -128, 127)
    xq = c.input("q", q)
    c.output(c.op("cast", [xq], (6,), "f32"), "i8_f32", q.astype(np.float32))
    c.output(c.op("cast", [xq], (6,), "i1"), "i8_bool", q != 0)
    p = rng.random(6) > 0.5
    c.output(c.op("cast", [c.input("p", p)], (6,), "i32"), "bool_i32", p.astype(np.int32))
    return c


@case
def bf16_arithmetic(rng):
    c = Case()
    a = rand(rng, (3, 4)).astype(ml_dtypes.bfloat16)
    b = rand(rng, (3, 4)).astype(ml_dtypes.bfloat16)
    x, y = c.input("a", a), c.input("b", b)
    c.output(c.op("add", [x, y], (3, 4), "bf16"), "add", (a.astype(np.float32) + b.astype(np.float32)).astype(ml_dtypes.bfloat16))
    c.output(c.op("clamp", [x], (3, 4), "bf16", min_val=-0.3, max_val=0.3), "clamp",
             np.clip(a.astype(np.float32), np.float32(ml_dtypes.bfloat16(-0.3)), np.float32(ml_dtypes.bfloat16(0.3)))
             .astype(ml_dtypes.bfloat16))
    c.output(c.op("cast", [x], (3, 4), "f32"), "widen", a.astype(np.float32))
    return c


@case
def fp8_casts(rng):
    c = Case()
    f = np.array([0.5, -1.25, 3.0, 448.0, -0.001953125, 20.0], np.float32)
    x = c.input("f", f)
    e4 = c.op("cast", [x], (6,), "f8E4M3FN")
    c.output(e4, "to_e4m3", f.astype(ml_dtypes.float8_e4m3fn))
    c.output(c.op("cast", [c.op("cast", [x], (6,), "f8E5M2")], (6,), "f16"), "via_e5m2",
             f.astype(ml_dtypes.float8_e5m2).astype(np.float16))
    return c


@case
def resize_i8_bilinear_f32_nearest(rng):
    c = Case(tolerance=1e-6)
    q = rand(rng, (1, 2, 3, 2), np.int8, -128, 127)
    scale, offset, border = [2, 1, 2, 1], [0, 0], [1, 1]
    y = c.op("resize", [c.input("q", q), c.shape(scale), c.shape(offset), c.shape(border)], (1, 4, 6, 2), "i32",
             mode="BILINEAR")
    c.output(y, "bilinear", np_resize(q, scale, offset, border, "BILINEAR", integer=True).astype(np.int32))
    f = rand(rng, (1, 3, 3, 2))
    scale, offset, border = [3, 2, 3, 2], [1, -1], [-1, 1]
    y = c.op("resize", [c.input("f", f), c.shape(scale), c.shape(offset), c.shape(border)], (1, 3, 5, 2), "f32",
             mode="NEAREST_NEIGHBOR")
    c.output(y, "nearest", np_resize(f, scale, offset, border, "NEAREST", integer=False))
    return c


@case
def fft(rng):
    c = Case(tolerance=1e-4)
    re, im = rand(rng, (1, 4, 8)), rand(rng, (1, 4, 8))
    xr, xi = c.input("re", re), c.input("im", im)
    out = c.b.op_results("tosa.fft2d", [xr, xi], {"inverse": False},
                         types=[TensorType((1, 4, 8), "f32"), TensorType((1, 4, 8), "f32")])
    spectrum = np.fft.fft2(re.astype(np.float64) + 1j * im)
    c.output(out[0], "fft_re", spectrum.real)
    c.output(out[1], "fft_im", spectrum.imag)
    rout = c.b.op_results("tosa.rfft2d", [xr], {}, types=[TensorType((1, 4, 5), "f32"), TensorType((1, 4, 5), "f32")])
    rspectrum = np.fft.rfft2(re.astype(np.float64))
    c.output(rout[0], "rfft_re", rspectrum.real)
    c.output(rout[1], "rfft_im", rspectrum.imag)
    return c


@case
def boundary_names_and_copies(rng):
    """A graph input returned as an output, one value returned twice, a constant returned:
    names survive and every output gets its own tensor."""
    c = Case()
    a = rand(rng, (2, 2))
    x = c.input("input:0", a)
    s = c.op("add", [x, x], (2, 2), "f32")
    c.output(x, "passthrough", a)
    c.output(s, "twice.a", a + a)
    c.output(s, "twice.b", a + a)
    c.output(c.const(np.arange(3, dtype=np.int32)), "constant", np.arange(3, dtype=np.int32))
    return c


# ------------------------------------------------------------------------------ running
@functools.lru_cache(maxsize=None)
def built(name: str) -> tuple[Case, bytes]:
    c = CASES[name]()
    verify(c.g)
    return c, bytes(build_flatbuffer(c.g))


def run_reference(data: bytes, feeds: list[np.ndarray]) -> list[np.ndarray]:
    outputs, status = trm.run(data, feeds, tosa_level="EIGHTK")
    assert status == trm.GraphStatus.TOSA_VALID, status
    # bf16 and fp8 come back as void records: their bits
    return [o.view({1: np.uint8, 2: np.uint16}[o.dtype.itemsize]) if o.dtype.kind == "V" else o for o in outputs]


@functools.lru_cache(maxsize=None)
def our_outputs(name: str) -> tuple[np.ndarray, ...]:
    c, data = built(name)
    return tuple(run_reference(data, c.feeds))


def _as_float(a: np.ndarray, dtype: str) -> np.ndarray:
    bits_type = {"bf16": ml_dtypes.bfloat16, "f8E4M3FN": ml_dtypes.float8_e4m3fn, "f8E5M2": ml_dtypes.float8_e5m2}
    return a.view(bits_type[dtype]).astype(np.float64) if dtype in bits_type else a.astype(np.float64)


@pytest.mark.parametrize("name", CASES)
def test_reference_model_matches_numpy(name):
    c, _ = built(name)
    outputs = our_outputs(name)
    assert len(outputs) == len(c.expected)
    for out, expected, spec in zip(outputs, c.expected, c.g.outputs):
        t = c.g.type_of(spec.value)
        assert out.shape == t.shape, spec.name
        if t.is_float and c.tolerance:
            got, want = _as_float(out, t.dtype), _as_float(expected, t.dtype)
            scale = max(1.0, float(np.abs(want).max()))
            assert np.abs(got - want).max() <= c.tolerance * scale, spec.name
        else:
            assert out.dtype == expected.dtype, spec.name
            np.testing.assert_array_equal(out, expected, err_msg=spec.name)


def _without(target: Target, item: str) -> Target:
    return replace(target, profiles=tuple(p for p in target.profiles if p != item),
                   extensions=tuple(e for e in target.extensions if e != item))


@pytest.mark.parametrize("name", CASES)
def test_mlir_validates_for_exactly_the_reported_target(name):
    c, _ = built(name)
    target = required_target(c.g)
    assert target.problems == () and target.level == "8k"
    module = to_mlir(c.g)  # verifies in-process
    assert validate(module) == []  # against the target_env the module carries
    assert validate(module, target) == []
    for item in target.profiles + target.extensions:
        assert validate(module, _without(target, item)), f"{target} without {item} still validates"


def _block(data: bytes) -> Any:
    return fb.TosaGraph.GetRootAs(data, 0).Regions(0).Blocks(0)


def _boundary_names(data: bytes) -> tuple[list[str], list[str]]:
    block = _block(data)
    return ([block.Inputs(i).decode() for i in range(block.InputsLength())],
            [block.Outputs(i).decode() for i in range(block.OutputsLength())])


@pytest.mark.parametrize("name", CASES)
def test_tosa_opt_serialization_of_our_mlir_agrees(name, tmp_path):
    c, data = built(name)
    mlir_path, tosa_path = tmp_path / "g.mlir", tmp_path / "g.tosa"
    write_mlir(to_mlir(c.g), mlir_path)
    subprocess.run([str(TOSA_OPT), f"--tosa-serialize=tosa-flatbuffer-filename={tosa_path} "
                    "retain-graph-input-output-names", str(mlir_path), "-o", os.devnull], check=True, timeout=120)
    theirs = tosa_path.read_bytes()
    assert _boundary_names(theirs) == _boundary_names(data)
    assert _boundary_names(data) == ([c.g.input_name(n) for n in c.g.inputs], [o.name for o in c.g.outputs])
    for ours, other in zip(our_outputs(name), run_reference(theirs, c.feeds), strict=True):
        np.testing.assert_array_equal(ours, other)


@pytest.mark.parametrize("name", ["conv2d_f32", "rescale_modes", "data_layout_f32", "boundary_names_and_copies"])
def test_same_graph_gives_identical_bytes(name):
    first, second = CASES[name](), CASES[name]()
    assert bytes(build_flatbuffer(first.g)) == bytes(build_flatbuffer(second.g))
    m1, m2 = to_mlir(first.g), to_mlir(second.g)
    assert module_text(m1) == module_text(m2)
    assert module_bytecode(m1) == module_bytecode(m2)


def test_flatbuffer_layout():
    """Version 1.0.0 final, one region/block "main", CONST data and CONST_SHAPE shapes as TOSA 1.0 has them."""
    c, data = built("data_layout_f32")
    assert data[4:8] == b"TOSA"
    graph = fb.TosaGraph.GetRootAs(data, 0)
    v = graph.Version()
    assert (v._Major(), v._Minor(), v._Patch(), v._Draft()) == (1, 0, 0, False)
    assert graph.RegionsLength() == 1 and graph.Regions(0).Name() == b"main"
    block = _block(data)
    assert block.Name() == b"main"
    shapes = {block.Shapes(i).Name().decode(): block.Shapes(i) for i in range(block.ShapesLength())}
    reshape = next(block.Operators(i) for i in range(block.OperatorsLength()) if block.Operators(i).Op() == fb.Op.RESHAPE)
    shape = shapes[reshape.Inputs(1).decode()]
    assert shape.Rank() == 2
    assert np.frombuffer(shape.DataAsNumpy().tobytes(), "<i8").tolist() == [4, 6]
    ops = {block.Operators(i).Op() for i in range(block.OperatorsLength())}
    assert {fb.Op.CONST, fb.Op.CONST_SHAPE} <= ops
    for i in range(block.TensorsLength()):
        t = block.Tensors(i)
        if t.DataLength():
            assert t.DataLength() % 8 == 0
            assert t._tab.Vector(t._tab.Offset(10)) % 8 == 0  # the data field is force_align: 8
