"""Quantized lowering: resize.

nearest moves the integers; bilinear is TOSA RESIZE's exact integer interpolation, one rounding.
Under LiteRT semantics TFLite's integer kernel: its 10-bit source coordinates as RESIZE's scale and
offset, its rounding (an aligned integer upscale of int8 data as a DEPTHWISE_CONV2D where a `--target`
preset asks for it: `_upscale`); nearest reads the rows TFLite's float32 coordinates give.
Samplings RESIZE cannot take compute in f32 as CpuRef does (quantized.float_fallback).
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from nn2tosa.ir import TensorType, Value

from ..context import LoweringContext
from ..npu_target import choose
from ..fixed_point.rescale import narrow, rescale
from . import rule
from .quantized import float_fallback, q_in, q_out
from .quantized_movement import movement
from .quantized_conv_npu import spread_by_stride
from .quantized_convolution import ACCUMULATOR
from .resize import (AxisMap, Sampling, exact_nearest_indices, gather_resize, sampling, separable,
                     tflite_bilinear_sampling, tflite_nearest_indices, weigh_integers)


@rule("nn.resize", quantized=True)
def resize(ctx: LoweringContext) -> Value | list[Value]:
    """nearest: the integers move. bilinear: TOSA RESIZE of the carried integers gives
    sum(w * x) with integer weights summing to n_y * n_x (exact); minus the zero point times that,
    one RESCALE by s_x / (n_y * n_x * s_y). Samplings RESIZE cannot take compute in f32.
    Under LiteRT semantics an integer resize keeping its quantization computes TFLite's integers."""
    xq, yq = q_in(ctx), q_out(ctx)
    litert = (ctx.semantics == "litert" and xq is not None and xq == yq and not xq.per_axis
              and xq.dtype in ACCUMULATOR and not xq.offset)  # TFLite's uint8 kernels differ (float)
    if ctx.attrs["mode"] == "nearest":
        return _tflite_nearest(ctx) if litert else movement(ctx)
    x = ctx.operands[0]
    _, h, w, _ = ctx.type_of(x).shape
    out_h, out_w = ctx.attrs["size"]
    if litert:
        sy, sx = tflite_bilinear_sampling(h, out_h, ctx.attrs), tflite_bilinear_sampling(w, out_w, ctx.attrs)
        y = _tflite_bilinear(ctx, x, sy, sx)
        if y is not None:
            return y
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
        acc = ctx.binary("tosa.sub", acc, ctx.scalar(xq.zero_point * unit, "i32", 4))
    # exact halves are common here (weights in quarters for a 2x upscale): round them as Arm NN does
    return narrow(ctx, acc, xq.scale / (unit * yq.scale) * 2.0 ** shift, yq, max_abs=xq.span * unit >> shift)


def _bilinear_sum(ctx: LoweringContext, x: Value, sy: Sampling, sx: Sampling, acc_type: str) -> Value:
    """TOSA RESIZE BILINEAR of integers: sum(w * x), integer weights summing to sy.n * sx.n."""
    n, _, _, c = ctx.type_of(x).shape
    operands = [x, ctx.shape([sy.n, sy.d, sx.n, sx.d]), ctx.shape([sy.offset, sx.offset]),
                ctx.shape([sy.border, sx.border])]
    return ctx.op("tosa.resize", operands, {"mode": "BILINEAR"}, types=[TensorType((n, sy.out, sx.out, c), acc_type)])


def _tflite_bilinear(ctx: LoweringContext, x: Value, sy: Sampling, sx: Sampling) -> Value | None:
    """TFLite's ResizeBilinearInteger: the stored integers (zero point included: the quantization
    is the same in and out) weighed with its 10-bit weights, an exact sum over unit = sy.n * sx.n
    (a power of two: tflite_bilinear_sampling), rounded half away from zero. The sum comes from
    RESIZE, or beyond RESIZE's limits from GATHERed neighbours and constant weights while it fits
    i32 (always for i8). An aligned integer upscale of int8 data is a DEPTHWISE_CONV2D instead where
    the --target preset asks for it (`_upscale`; Vela maps no such RESIZE on Ethos-U55/U65) or
    RESIZE cannot take it. None: nothing can compute it exactly."""
    dtype = ctx.type_of(x).dtype
    xq = q_in(ctx)
    assert xq is not None  # (resize takes TFLite's form for quantized data only)
    bits = (sy.n * sx.n).bit_length() - 1
    resizes = sy.fits_resize() and sx.fits_resize()
    upscale = dtype == "i8" and _upscale_factor(sy) * _upscale_factor(sx) <= _MAX_UPSCALE_WEIGHT
    form = choose(ctx, "resize_bilinear_integer_upscale") if upscale and resizes else None
    if upscale and (not resizes or form == "depthwise_conv2d"):
        return _upscale(ctx, x, sy.n, sx.n)
    if form == "double_round_resize" and bits:
        y = _double_round_resize(ctx, x, sy, sx, bits)
        if y is not None:
            return y
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
        acc = ctx.binary("tosa.add", acc, ctx.binary("tosa.arithmetic_right_shift", acc, ctx.scalar(31, "i32", 4),
                                                     {"round": False}))
        acc = ctx.binary("tosa.arithmetic_right_shift", acc, ctx.scalar(bits, "i32", 4), {"round": True})
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
    attrs = {"stride": [1, 1], "pad": [ky - 1, ky - 1, kx - 1, kx - 1], "dilation": [1, 1], "acc_type": "i32"}
    operands = [spread_by_stride(ctx, x, (ky, kx), 0), ctx.const(weights, "i8"),
                ctx.const(np.zeros(channels, np.int64), "i32"), ctx.zero_point("i8"), ctx.zero_point("i8")]
    acc = ctx.op("tosa.depthwise_conv2d", operands, attrs)
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
    mirrored = rescale(ctx, _bilinear_sum(ctx, ctx.op("tosa.bitwise_not", [x]), sy, sx, "i48"), 2.0 ** -bits, "i32")
    low = ctx.op("tosa.bitwise_not", [mirrored])
    negative = ctx.binary("tosa.greater", ctx.scalar(0, "i32", 4), low)
    return ctx.cast(ctx.op("tosa.select", [negative, low, up]), "i16")


def _tflite_nearest(ctx: LoweringContext) -> Value | list[Value]:
    """TFLite's nearest resize reads the rows its float32 coordinates give (tflite_nearest_indices):
    RESIZE where they are nn's exact ones, GATHER of those rows otherwise. An nn nearest rounding
    other than TFLite's (floor, half up with align_corners or half-pixel centres) did not come from
    TFLite: it keeps nn's meaning."""
    x = ctx.operands[0]
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
