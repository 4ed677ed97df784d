"""Resize (nearest and bilinear) of NHWC images, float and quantized.

Along each axis nn samples the input at a source coordinate that is an exact rational affine
function of the output index o, src(o) = (o * d + offset) / n (in integers):
  align_corners    o * (in - 1) / (out - 1)            n = out - 1, d = in - 1, offset = 0
  half_pixel       (o + 1/2) * in / out - 1/2          n = 2 out,   d = 2 in,   offset = in - out
  otherwise        o * in / out                        n = out,     d = in,     offset = 0
Nearest takes floor(src + 1/2) (nearest_rounding 'half_up') or floor(src) ('floor': the same as
half_up of src - 1/2, i.e. n, d, offset doubled and offset - n), clamped to the input; bilinear
weighs the two clamped neighbours of floor(src) by the fraction of src (resize_sampling.py computes them).

That is exactly TOSA RESIZE with scale [n, d], offset and border = (out - 1) * d - (in - 1) * n +
offset (the border makes TOSA's output size formula give `out`): RESIZE picks floor(src) + 1 when
its fraction is >= 1/2 and clamps the neighbours the same way. RESIZE is used when both axes meet
its limits (n <= 2048, d < 16 n, -n <= offset < 16 n, -16 n <= border < n; level 8K: n <= 256 d)
and the type has a RESIZE (floats; i8/i16 nearest). An input axis of size 1 samples its only row
whatever the mode: RESIZE takes it with n = out, d = 1.

The TOSA reference model computes a float RESIZE's source coordinate y / n in f32, so it is off by
up to half an ulp of the coordinate: the index choice stays right while that ulp is below 1/n, and
f32 bilinear weights stay within the fp32 tolerance (the error is at most that ulp times the value
range) while the coordinate is below 512 (ulp 2^-15). f16/bf16 round far more than that anyway.

Otherwise (a downscale by 16 or more, an upscale beyond 256, align_corners onto one pixel from many,
large f32 images, i32 data) the resize is decomposed per axis, width first then height as nn
interpolates: the source rows are fetched with TOSA GATHER (indices computed here, exactly) and
bilinear weighs the two gathered neighbours with constant weights.

Quantized lowering: resize.

nearest moves the integers; bilinear is TOSA RESIZE's exact integer interpolation, one rounding.
Under LiteRT semantics TFLite's integer kernel: its 10-bit source coordinates as RESIZE's scale and
offset, its rounding (an aligned integer upscale of int8 data as a DEPTHWISE_CONV2D where a `--target`
preset asks for it: `_upscale`); nearest reads the rows TFLite's float32 coordinates give.
Samplings RESIZE cannot take compute in f32 as CpuRef does (quantization.float_fallback).
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import numpy as np

from nn2tosa.ir import TensorType, Value

from ..context import LoweringContext
from ..fixed_point.rescale import narrow, rescale
from ..registry import rule
from .convolution import FLOAT_TYPES
from .quantization import float_fallback, q_in, q_out
from .integer_convolution import ACCUMULATOR, spread_by_stride
from .resize_sampling import (Sampling, exact_nearest_indices, sampling, tflite_bilinear_sampling,
                              tflite_nearest_indices)
from .shape import movement


# element types RESIZE takes, per mode (integers: nearest only; bilinear of integers is fixed point)
RESIZE_TYPES = {"nearest": (*FLOAT_TYPES, "i8", "i16"), "bilinear": FLOAT_TYPES}
GATHER_TYPES = (*FLOAT_TYPES, "i8", "i16", "i32")


AxisMap = Callable[[Value], Value]  # [N, K, R] -> [N, K', R] along axis 1


def separable(ctx: LoweringContext, x: Value, out: tuple[int, int],
              along_height: AxisMap | None, along_width: AxisMap | None) -> Value:
    """x [N, H, W, C] -> [N, out_h, out_w, C], along the width first (on [N, W, H*C]), then the
    height (on [N, H, W'*C]), as nn interpolates; None: the axis is left as it is."""
    n, h, w, c = ctx.type_of(x).shape
    out_h, out_w = out
    if along_width is not None:
        t = along_width(ctx.reshape(ctx.transpose(x, (0, 2, 1, 3)), (n, w, h * c)))
        x = ctx.transpose(ctx.reshape(t, (n, out_w, h, c)), (0, 2, 1, 3))
    if along_height is not None:
        t = along_height(ctx.reshape(x, (n, h, out_w * c)))
        x = ctx.reshape(t, (n, out_h, out_w, c))
    return x


def gather_resize(ctx: LoweringContext, x: Value, rows: np.ndarray, columns: np.ndarray) -> Value:
    """x [N, H, W, C] -> [N, len(rows), len(columns), C] reading x[:, rows[i], columns[j]]."""
    _, h, w, _ = ctx.type_of(x).shape

    def along(index: np.ndarray, size: int) -> AxisMap | None:
        return None if np.array_equal(index, np.arange(size)) else lambda t: _gather_rows(ctx, t, index)
    return separable(ctx, x, (len(rows), len(columns)), along(rows, h), along(columns, w))


def weigh_integers(ctx: LoweringContext, x: Value, s: Sampling) -> Value:
    """Along axis 1 of i32 x [N, size, R]: (n - f) * x[i] + f * x[i + 1] with src = i + f / n and the
    neighbours clamped, RESIZE BILINEAR's integer weights along one axis (exact while it fits i32)."""
    base, fraction = s.floor_and_fraction()
    low = _gather_rows(ctx, x, np.clip(base, 0, s.size - 1))
    high = _gather_rows(ctx, x, np.clip(base + 1, 0, s.size - 1))
    return ctx.tosa.add(ctx.mul(low, ctx.const((s.n - fraction).reshape(1, -1, 1), "i32")),
                        ctx.mul(high, ctx.const(fraction.reshape(1, -1, 1), "i32")))


def resize_mode_known(ctx: LoweringContext) -> str | None:
    """The resize mode is 'nearest' or 'bilinear'."""
    if ctx.attrs["mode"] not in RESIZE_TYPES:
        return f"resize mode {ctx.attrs['mode']!r} is not 'nearest' or 'bilinear'"
    return None


def nearest_rounding_known(ctx: LoweringContext) -> str | None:
    """Nearest-neighbour rounding is 'half_up' or 'floor'."""
    if ctx.attrs.get("nearest_rounding", "half_up") not in ("half_up", "floor"):
        return f"nearest_rounding {ctx.attrs['nearest_rounding']!r} is not 'half_up' or 'floor'"
    return None


def float_resize_unquantized(ctx: LoweringContext) -> str | None:
    """The float rule resizes unquantized data, or nearest-neighbour data of one quantization (it only
    moves stored values); the quantized rules lower the rest."""
    x, y = ctx.nn_type("input"), ctx.nn_out_types[0]
    mode = ctx.attrs["mode"]
    if (x.quant is not None or y.quant is not None) and not (mode == "nearest" and x.quant == y.quant):
        return f"quantized {mode} resize is lowered by the quantized rules, not by the float one"
    return None


def resize_element_type(ctx: LoweringContext) -> str | None:
    """Bilinear resize takes floating-point data, nearest resize also i8, i16 and i32 (integers are
    interpolated only as fixed-point quantized data)."""
    dtype, mode = ctx.in_types[0].dtype, ctx.attrs["mode"]
    if dtype not in GATHER_TYPES or (mode == "bilinear" and dtype not in FLOAT_TYPES):
        return f"{mode} resize of {dtype} tensors: TOSA interpolates floats (integers only as fixed-point quantized data)"
    return None


def _tosa_resize(ctx: LoweringContext, x: Value, axes: tuple[Sampling, Sampling]) -> Value:
    sy, sx = axes
    mode = "BILINEAR" if ctx.attrs["mode"] == "bilinear" else "NEAREST_NEIGHBOR"
    operands = [x, ctx.shape([sy.n, sy.d, sx.n, sx.d]), ctx.shape([sy.offset, sx.offset]),
                ctx.shape([sy.border, sx.border])]
    return ctx.tosa.resize(*operands, mode=mode, types=[ctx.out_types[0]])


def _gather_rows(ctx: LoweringContext, x: Value, indices: np.ndarray) -> Value:
    """x [N, K, R] -> [N, len(indices), R], row i being x[:, indices[i]]."""
    n, _, r = ctx.type_of(x).shape
    index = ctx.const(np.tile(indices.astype(np.int32), (n, 1)), "i32")
    return ctx.tosa.gather(x, index)


def _interpolate_axis(ctx: LoweringContext, x: Value, s: Sampling) -> Value:
    """nn's resize along axis 1 of x [N, size, R] -> [N, out, R]."""
    if ctx.attrs["mode"] == "nearest":
        return _gather_rows(ctx, x, exact_nearest_indices(s))
    base, fraction = s.floor_and_fraction()
    dtype = ctx.type_of(x).dtype
    low = _gather_rows(ctx, x, np.clip(base, 0, s.size - 1))
    high = _gather_rows(ctx, x, np.clip(base + 1, 0, s.size - 1))
    weight = (fraction / s.n).reshape(1, -1, 1)
    return ctx.tosa.add(ctx.mul(low, ctx.const(1 - weight, dtype)),
                        ctx.mul(high, ctx.const(weight, dtype)))


def _decomposed_resize(ctx: LoweringContext, x: Value, axes: tuple[Sampling, Sampling]) -> Value:
    mode = ctx.attrs["mode"]

    def along(s: Sampling) -> AxisMap | None:
        return None if s.is_identity(mode) else lambda t: _interpolate_axis(ctx, t, s)
    sy, sx = axes
    return separable(ctx, x, (sy.out, sx.out), along(sy), along(sx))


@rule("nn.resize", constraints=(resize_mode_known, nearest_rounding_known, float_resize_unquantized,
                                 resize_element_type))
def resize(ctx: LoweringContext) -> Value:
    dtype = ctx.in_types[0].dtype
    x = ctx.operand("input")
    _, h, w, _ = ctx.type_of(x).shape
    oh, ow = ctx.attrs["size"]
    axes = (sampling(h, oh, ctx.attrs), sampling(w, ow, ctx.attrs))
    mode = ctx.attrs["mode"]
    if dtype in RESIZE_TYPES[mode] and all(s.fits_resize() and s.resize_is_exact(mode, dtype) for s in axes):
        return _tosa_resize(ctx, x, axes)
    return _decomposed_resize(ctx, x, axes)


def _keeps_integer_quantization(ctx: LoweringContext) -> bool:
    """One per-tensor quantization in and out, of int8 or int16 data (TFLite's uint8 kernels differ: float)."""
    xq, yq = q_in(ctx), q_out(ctx)
    return xq is not None and xq == yq and not xq.per_axis and xq.dtype in ACCUMULATOR and not xq.offset


def _tflite_samplings(ctx: LoweringContext) -> tuple[Sampling, Sampling]:
    _, h, w, _ = ctx.type_of(ctx.operand("input")).shape
    out_h, out_w = ctx.attrs["size"]
    return tflite_bilinear_sampling(h, out_h, ctx.attrs), tflite_bilinear_sampling(w, out_w, ctx.attrs)


def _integer_upscale(ctx: LoweringContext) -> tuple[bool, int] | None:
    """For TFLite's bilinear resize of int8 data that is an aligned integer upscale (`_upscale` computes it):
    whether RESIZE can take it and the bits of its weights' unit; else None."""
    if not _keeps_integer_quantization(ctx) or ctx.attrs["mode"] == "nearest":
        return None
    sy, sx = _tflite_samplings(ctx)
    if ctx.in_types[0].dtype != "i8" or _upscale_factor(sy) * _upscale_factor(sx) > _MAX_UPSCALE_WEIGHT:
        return None
    return sy.fits_resize() and sx.fits_resize(), (sy.n * sx.n).bit_length() - 1


def _upscale_past_resize(ctx: LoweringContext) -> bool:
    found = _integer_upscale(ctx)
    return found is not None and not found[0]


def _upscale_resize_takes(ctx: LoweringContext) -> bool:
    found = _integer_upscale(ctx)
    return found is not None and found[0]


def _upscale_resize_rounds(ctx: LoweringContext) -> bool:
    """An integer upscale RESIZE takes, whose sum needs rounding (a unit above 1)."""
    found = _integer_upscale(ctx)
    return found is not None and found[0] and found[1] > 0


def _upscale_form(ctx: LoweringContext) -> Value:
    """The aligned integer upscale as a DEPTHWISE_CONV2D (`_upscale`)."""
    sy, sx = _tflite_samplings(ctx)
    return _upscale(ctx, ctx.operand("input"), sy.n, sx.n)


# TFLite's integers (semantics "litert"), most specific first: an integer upscale RESIZE cannot take, or one the
# --target preset asks for as a DEPTHWISE_CONV2D or as a doubled RESIZE and one RESCALE; then its kernel.
UPSCALE = "resize_bilinear_integer_upscale"  # the pattern (lowering/npu_target.py)


@rule("nn.resize", quantized=True, benefit=13, semantics="litert", when=_upscale_past_resize)
def litert_upscale_past_resize(ctx: LoweringContext) -> Value:
    """An integer upscale past RESIZE's limits: the DEPTHWISE_CONV2D."""
    return _upscale_form(ctx)


@rule("nn.resize", quantized=True, benefit=12, semantics="litert", when=_upscale_resize_takes,
      choice=(UPSCALE, "depthwise_conv2d"))
def litert_upscale_depthwise(ctx: LoweringContext) -> Value:
    """An integer upscale the preset asks for as a DEPTHWISE_CONV2D (Vela maps no such RESIZE on Ethos-U55/U65)."""
    return _upscale_form(ctx)


@rule("nn.resize", quantized=True, benefit=11, semantics="litert", when=_upscale_resize_rounds,
      choice=(UPSCALE, "double_round_resize"))
def litert_upscale_double_round(ctx: LoweringContext) -> Value | None:
    """An integer upscale the preset asks for as one RESIZE and a RESCALE Vela fuses (`_double_round_resize`);
    falls through where the doubled scales leave RESIZE's limits."""
    sy, sx = _tflite_samplings(ctx)
    return _double_round_resize(ctx, ctx.operand("input"), sy, sx, (sy.n * sx.n).bit_length() - 1)


@rule("nn.resize", quantized=True, benefit=10, semantics="litert", when=_keeps_integer_quantization)
def litert_resize(ctx: LoweringContext) -> Value | list[Value] | None:
    """TFLite's integers: nearest its rows (`_tflite_nearest`), bilinear its ResizeBilinearInteger
    (`_tflite_bilinear`; where nothing computes that exactly, falls through)."""
    if ctx.attrs["mode"] == "nearest":
        return _tflite_nearest(ctx)
    return _tflite_bilinear(ctx, ctx.operand("input"), *_tflite_samplings(ctx))


@rule("nn.resize", quantized=True)
def quantized_resize(ctx: LoweringContext) -> Value | list[Value]:
    """nearest: the integers move. bilinear: TOSA RESIZE of the carried integers gives
    sum(w * x) with integer weights summing to n_y * n_x (exact); minus the zero point times that,
    one RESCALE by s_x / (n_y * n_x * s_y). Samplings RESIZE cannot take compute in f32."""
    xq, yq = q_in(ctx), q_out(ctx)
    if ctx.attrs["mode"] == "nearest":
        return movement(ctx)
    x = ctx.operand("input")
    _, h, w, _ = ctx.type_of(x).shape
    out_h, out_w = ctx.attrs["size"]
    sy, sx = sampling(h, out_h, ctx.attrs), sampling(w, out_w, ctx.attrs)
    if (xq is None or yq is None or xq.per_axis or yq.per_axis or xq.dtype not in ACCUMULATOR
            or not (sy.fits_resize() and sx.fits_resize())):
        return float_fallback(ctx)
    unit = sy.n * sx.n
    acc = _bilinear_sum(ctx, x, sy, sx, ACCUMULATOR[xq.dtype])
    shift = max(0, math.ceil(math.log2(max(xq.span * unit, 1))) - 30)
    if ctx.type_of(acc).dtype == "i48":
        acc = rescale(ctx, acc, 2.0 ** -shift, "i32")
    if xq.zero_point:
        acc = ctx.tosa.sub(acc, ctx.scalar(xq.zero_point * unit, "i32", 4))
    # exact halves are common here (weights in quarters for a 2x upscale): round them as Arm NN does
    return narrow(ctx, acc, xq.scale / (unit * yq.scale) * 2.0 ** shift, yq, max_abs=xq.span * unit >> shift)


def _bilinear_sum(ctx: LoweringContext, x: Value, sy: Sampling, sx: Sampling, acc_type: str) -> Value:
    """TOSA RESIZE BILINEAR of integers: sum(w * x), integer weights summing to sy.n * sx.n."""
    n, _, _, c = ctx.type_of(x).shape
    operands = [x, ctx.shape([sy.n, sy.d, sx.n, sx.d]), ctx.shape([sy.offset, sx.offset]),
                ctx.shape([sy.border, sx.border])]
    return ctx.tosa.resize(*operands, mode="BILINEAR", types=[TensorType((n, sy.out, sx.out, c), acc_type)])


def _tflite_bilinear(ctx: LoweringContext, x: Value, sy: Sampling, sx: Sampling) -> Value | None:
    """TFLite's ResizeBilinearInteger: the stored integers (zero point included: the quantization
    is the same in and out) weighed with its 10-bit weights, an exact sum over unit = sy.n * sx.n
    (a power of two: tflite_bilinear_sampling), rounded half away from zero. The sum comes from
    RESIZE, or beyond RESIZE's limits from GATHERed neighbours and constant weights while it fits
    i32 (always for i8). (An aligned integer upscale of int8 data may take another form first: the forms
    above.) None: nothing can compute it exactly."""
    dtype = ctx.type_of(x).dtype
    xq = q_in(ctx)
    assert xq is not None  # (resize takes TFLite's form for quantized data only)
    bits = (sy.n * sx.n).bit_length() - 1
    resizes = sy.fits_resize() and sx.fits_resize()
    if resizes:
        if dtype == "i16":
            return _rounded_i48_sum(ctx, x, sy, sx, bits)
        acc = _bilinear_sum(ctx, x, sy, sx, "i32")
    elif xq.span << bits < 1 << 31:
        def along(s: Sampling) -> AxisMap | None:  # an axis sampled in place has weights (1, 0): nothing to do
            return None if (s.n, s.d, s.offset, s.size) == (1, 1, 0, s.out) else lambda t: weigh_integers(ctx, t, s)
        acc = separable(ctx, ctx.cast(x, "i32"), (sy.out, sx.out), along(sy), along(sx))
    else:
        return None
    if bits:  # TOSA rounds half up: half away from zero is half up of acc - 1 where acc < 0 (acc >> 31 = -1)
        acc = ctx.tosa.add(acc, ctx.tosa.arithmetic_right_shift(acc, ctx.scalar(31, "i32", 4),
                                                                round=False))
        acc = ctx.tosa.arithmetic_right_shift(acc, ctx.scalar(bits, "i32", 4), round=True)
    return ctx.cast(acc, dtype)  # a weighted mean of the inputs: in range


def _double_round_resize(ctx: LoweringContext, x: Value, sy: Sampling, sx: Sampling, bits: int) -> Value | None:
    """int8 RESIZE's sum over 2**bits rounded half away from zero by one RESCALE, which Vela fuses into a
    RESIZE on Ethos-U85 (a scale that is a power of two): RESIZE with every scale term doubled on both
    axes (the same samples, weights 4 times as large: acc' = 4 acc) and RESCALE by 2**29 / 2**(31 + bits)
    = 2**-(bits + 2) with DOUBLE_ROUND, whose shift past 31 rounds (acc' 2**29 + 2**(30 + bits) +- 2**30)
    >> (31 + bits), + for acc' >= 0: the value v = acc / 2**bits, plus a half, plus or minus
    2**-(bits + 1), floored. v lies on the 2**-bits grid, so only an exact half moves, up above zero and
    down below it: TFLite's rounding. (Without the doubling the multiplier 2**(31 + bits - bits) would
    not fit; a smaller shift makes the +-2**30 a whole grid step.) None where the doubled scales leave
    RESIZE's limits."""
    ty, tx = (dataclasses.replace(s, n=2 * s.n, d=2 * s.d, offset=2 * s.offset) for s in (sy, sx))
    if not (ty.fits_resize() and tx.fits_resize()):
        return None
    acc = _bilinear_sum(ctx, x, ty, tx, "i32")
    return rescale(ctx, acc, 2.0 ** -(bits + 2), "i8", fixed=(1 << 29, 31 + bits), rounding="DOUBLE_ROUND")


_MAX_UPSCALE_WEIGHT = 64  # the centre weight k_y * k_x of `_upscale` in int8 (two 8x axes)


def _upscale_factor(s: Sampling) -> int:
    """k when the axis is an exact integer upscale with aligned corners (out - 1 = k (size - 1): TFLite's
    align_corners by an integer factor, k = 1 for an axis left alone), else a value past any limit."""
    exact = s.d == 1 and s.offset == 0 and s.size > 1 and s.border == 0
    return s.n if exact else _MAX_UPSCALE_WEIGHT + 1


def _upscale(ctx: LoweringContext, x: Value, ky: int, kx: int) -> Value:
    """The bilinear resize of an exact integer upscale (`_upscale_factor`) of int8 data: output o reads
    input o // k and the next with weights k - o % k and o % k, which is the input spread by k
    (`spread_by_stride`, zeros between) under a stride-1 DEPTHWISE_CONV2D of the triangle k - |t|
    (t = -(k-1)..k-1) on each axis, padded by k - 1: the integer sum in units of k_y k_x that RESIZE
    gives (Vela maps no such RESIZE on Ethos-U55/U65), stored integers weighed, zero points 0. One
    RESCALE divides by k_y k_x rounding halves away from zero, TFLite's rounding (`_half_away_divide`),
    and Vela fuses it into the DEPTHWISE_CONV2D."""
    channels = ctx.type_of(x).shape[-1]
    triangle = np.outer(*[np.array([k - abs(t) for t in range(1 - k, k)], np.int64) for k in (ky, kx)])
    weights = np.repeat(triangle[:, :, None, None], channels, axis=2).astype(np.int8)
    acc = ctx.tosa.depthwise_conv2d(spread_by_stride(ctx, x, (ky, kx), 0), ctx.const(weights, "i8"),
                                    ctx.const(np.zeros(channels, np.int64), "i32"), ctx.zero_point("i8"),
                                    ctx.zero_point("i8"), stride=[1, 1], pad=[ky - 1, ky - 1, kx - 1, kx - 1],
                                    dilation=[1, 1], acc_type="i32")
    return _half_away_divide(ctx, acc, ky * kx, 128 * ky * kx, "i8")


def _half_away_divide(ctx: LoweringContext, acc: Value, divisor: int, bound: int, dtype: str) -> Value:
    """acc / divisor rounded half away from zero, as one RESCALE of multiplier m = floor(2**s / d) + 1
    (s = 29 + bit length of d: m <= 2**30 + 1) and half-up rounding: m / 2**s exceeds 1 / d by
    0 < e <= 2**-s, which moves acc / d by at most bound * 2**-s < 1 / (2 d) (|acc| <= bound < 2**28),
    so every value that is not a half rounds as exact arithmetic does, and a half rounds up above zero
    and down below it. (AVG_POOL2D's reciprocal rounds by the same argument: `_reciprocal_scale_exact`.)"""
    shift = 29 + divisor.bit_length()
    if bound >= 1 << 28:
        raise ValueError(f"an accumulator bound of {bound} is past the one RESCALE rounding exactly")
    return rescale(ctx, acc, 1.0 / divisor, dtype, fixed=(((1 << shift) // divisor) + 1, shift),
                   rounding="SINGLE_ROUND")


def _rounded_i48_sum(ctx: LoweringContext, x: Value, sy: Sampling, sx: Sampling, bits: int) -> Value:
    """i16: RESIZE's i48 sum acc, over 2**bits rounded half away from zero. Only RESCALE (half up)
    reads i48. The sum of ~x = -x - 1 is -acc - 2**bits, so up = half_up(acc / 2**bits) and
    low = ~half_up((-acc - 2**bits) / 2**bits) = half_down(acc / 2**bits) differ only at exact
    halves, where the sign of low (that of acc) picks: up for acc >= 0."""
    up = rescale(ctx, _bilinear_sum(ctx, x, sy, sx, "i48"), 2.0 ** -bits, "i32")
    mirrored = rescale(ctx, _bilinear_sum(ctx, ctx.tosa.bitwise_not(x), sy, sx, "i48"), 2.0 ** -bits, "i32")
    low = ctx.tosa.bitwise_not(mirrored)
    negative = ctx.tosa.greater(ctx.scalar(0, "i32", 4), low)
    return ctx.cast(ctx.tosa.select(negative, low, up), "i16")


def _tflite_nearest(ctx: LoweringContext) -> Value | list[Value]:
    """TFLite's nearest resize reads the rows its float32 coordinates give (tflite_nearest_indices):
    RESIZE where they are nn's exact ones, GATHER of those rows otherwise. An nn nearest rounding
    other than TFLite's (floor, half up with align_corners or half-pixel centres) did not come from
    TFLite: it keeps nn's meaning."""
    x = ctx.operand("input")
    _, h, w, _ = ctx.type_of(x).shape
    out_h, out_w = ctx.attrs["size"]
    centred = ctx.attrs["align_corners"] or ctx.attrs["half_pixel_centers"]
    if ctx.attrs.get("nearest_rounding", "half_up") != ("half_up" if centred else "floor"):
        return movement(ctx)
    rows, columns = tflite_nearest_indices(h, out_h, ctx.attrs), tflite_nearest_indices(w, out_w, ctx.attrs)
    if (np.array_equal(rows, exact_nearest_indices(sampling(h, out_h, ctx.attrs)))
            and np.array_equal(columns, exact_nearest_indices(sampling(w, out_w, ctx.attrs)))):
        return movement(ctx)
    return gather_resize(ctx, x, rows, columns)
