"""Quantized lowering: average pooling.

- avg_pool2d with one quantization in and out: TOSA AVG_POOL2D with zero points (counted padding
  is padded with the zero point explicitly). Under LiteRT semantics it is TFLite's integer
  AveragePool (`_tflite_average_pool`).
- avg_pool3d: window sums from a CONV3D with a diagonal of ones (quantized_convolution), one
  rounding.
Other cases (a rescaling average, a window count that varies) compute in f32 as CpuRef does
(quantized.float_fallback).
"""
from __future__ import annotations

import math

import numpy as np

from nn2tosa.ir import Value

from ..context import LoweringContext
from ..fixed_point.carrier import QInfo
from ..fixed_point.rescale import rescale, saturate_to
from . import rule
from .conv import drop_extra, fit_windows
from .pool import clip_windows, require_static_windows, static_windows, window_counts
from .quantized import float_fallback, q_in, q_out
from .quantized_convolution import ACCUMULATOR, CONVOLUTION_CORE, quantized_convolution
from .shape import pad_constant


@rule("nn.avg_pool2d", quantized=True, checks=(static_windows,))
def avg_pool2d(ctx: LoweringContext) -> Value | list[Value]:
    """One quantization in and out: AVG_POOL2D with the zero point (TOSA leaves padding out of the
    count; padding nn counts is padded with the zero point, i.e. real zeros, before)."""
    xq, yq = q_in(ctx), q_out(ctx)
    kernel, stride = list(ctx.attrs["kernel"]), list(ctx.attrs["stride"])
    pad, count_pad = list(ctx.attrs["pad"]), list(ctx.attrs["count_pad"])
    if (xq is None or yq is None or xq.per_axis or xq != yq or xq.dtype not in ACCUMULATOR
            or int(ctx.attrs["divisor"]) > 0):
        return float_fallback(ctx)
    require_static_windows(ctx, ctx.in_types[0].shape[1:3], "avg_pool2d")
    if not any(count_pad):
        kernel, pad = clip_windows(ctx.in_types[0].shape[1:3], kernel, stride, pad)
    if ctx.semantics == "litert" and not any(count_pad):
        return _tflite_average_pool(ctx, xq, kernel, stride, pad)
    uncounted = [p - c for p, c in zip(pad, count_pad)]
    if any(u >= kernel[i // 2] for i, u in enumerate(uncounted)):
        return float_fallback(ctx)
    x = ctx.operands[0]
    if any(count_pad):
        x = pad_constant(ctx, x, [0, 0, *count_pad, 0, 0], xq.zero_point)
    x, uncounted, extra = fit_windows(ctx, x, kernel, stride, uncounted)
    zp_in, zp_out = ctx.zero_point(xq.dtype, xq.zero_point), ctx.zero_point(yq.dtype, yq.zero_point)
    y = ctx.op("tosa.avg_pool2d", [x, zp_in, zp_out],
               {"kernel": kernel, "stride": stride, "pad": uncounted, "acc_type": "i32"})
    return drop_extra(ctx, y, extra)


def _reciprocal_scale_exact(xq: QInfo, counts: np.ndarray) -> bool:
    """Whether TOSA AVG_POOL2D's division of a window sum S by its count n rounds S / n half away from
    zero for every sum of stored integers of xq's type. It multiplies by reciprocal_scale(n) =
    floor((2**30 + 1) * 2**k / n) / 2**(30 + k) (2**(k-1) < n <= 2**k), never below 1 / n, and rounds
    half up: an excess e over 1 / n moves S / n by e * |S|, which leaves every rounding as exact
    arithmetic's while e * max |S| < 1 / (2 n) (values of S / n + 1/2 are 1 / (2 n) apart). Above
    zero that is half up; below, the excess pushes exact halves down: half away from zero, TFLite's
    (S +- n // 2) / n truncated."""
    largest = max(abs(xq.qmin + xq.offset), abs(xq.qmax + xq.offset))
    for n in np.unique(counts):
        n = int(n)
        if n <= 0:  # a window of padding only (TFLite refuses it): left to the INTDIV form
            return False
        k = (n - 1).bit_length()
        excess = (((1 << 30) + 1 << k) // n) / 2.0 ** (30 + k) - 1.0 / n
        if excess * largest * n >= 1.0 / (2 * n):
            return False
    return True


def _tflite_average_pool(ctx: LoweringContext, xq: QInfo, kernel: list[int], stride: list[int],
                         pad: list[int]) -> Value:
    """TFLite's integer AveragePool (input and output quantized alike, padding not counted): the sum
    of the stored integers of each window divided by its count n, rounded half away from zero as
    (sum +- n // 2) / n truncated. TOSA AVG_POOL2D computes exactly that with zero points that make
    it sum the stored integers (0, or -128 for uint8 carried as int8: TFLite sums the unsigned
    values) wherever `_reciprocal_scale_exact` holds (every 8-bit pool; 16-bit windows up to
    thousands of elements): one op every Ethos-U maps. Elsewhere: exact window sums from a
    DEPTHWISE_CONV2D with weights 1 (padding reads 0 and is out of the count), the sign's half
    added, INTDIV (truncating) by the per-position count."""
    x = ctx.operands[0]
    _, h, w, c = ctx.type_of(x).shape
    _, oh, ow, _ = ctx.out_types[0].shape
    counts = np.outer(*(window_counts(size, out, k, s, pad[2 * i], 0, 0)
                        for i, (size, out, k, s) in enumerate(zip((h, w), (oh, ow), kernel, stride))))
    if np.all(counts == counts.flat[0]):
        counts = counts[:1, :1]
    counts = counts.reshape((1, *counts.shape, 1)).astype(np.int64)
    x, window_pad, extra = fit_windows(ctx, x, kernel, stride, pad)
    if _reciprocal_scale_exact(xq, counts):
        zp = ctx.zero_point(xq.dtype, -xq.offset)
        y = ctx.op("tosa.avg_pool2d", [x, zp, zp],
                   {"kernel": kernel, "stride": stride, "pad": window_pad, "acc_type": "i32"})
        return drop_extra(ctx, y, extra)
    acc_type = ACCUMULATOR[xq.dtype]
    ones = ctx.const(np.ones((*kernel, c, 1), np.int8), "i8")
    attrs = {"pad": window_pad, "stride": stride, "dilation": [1, 1], "acc_type": acc_type}
    total = ctx.op("tosa.depthwise_conv2d", [x, ones, ctx.const(np.zeros(c, np.int64), acc_type),
                                              ctx.zero_point(xq.dtype), ctx.zero_point("i8")], attrs)
    total = drop_extra(ctx, total, extra)
    if acc_type == "i48":  # |sum| <= 32768 * n fits i32: an exact RESCALE by 1
        total = rescale(ctx, total, 1.0, "i32")
    if xq.offset:  # uint8 data: TFLite sums the unsigned integers, x + 128 each
        total = ctx.binary("tosa.add", total, ctx.const(xq.offset * counts, "i32"))
    positive = ctx.binary("tosa.greater", total, ctx.scalar(0, "i32", 4))
    halves = (ctx.const(counts // 2, "i32"), ctx.const(-(counts // 2), "i32"))
    half = ctx.op("tosa.select", ctx.same_rank(positive, *halves))
    mean = ctx.binary("tosa.intdiv", ctx.binary("tosa.add", total, half), ctx.const(counts, "i32"))
    if xq.offset:
        mean = ctx.binary("tosa.sub", mean, ctx.scalar(xq.offset, "i32", 4))
    return saturate_to(ctx, mean, xq.dtype)


@rule("nn.avg_pool3d", quantized=True, checks=CONVOLUTION_CORE)
def avg_pool3d(ctx: LoweringContext) -> Value | list[Value]:
    """TOSA has no 3-D average pool: window sums come exact from a CONV3D with weights 1 on the
    diagonal of [C, KD, KH, KW, C] (padding reads the zero point), divided by the window size in one
    rounding. A count that varies across windows (padding left out of it) computes in f32."""
    xq, yq = q_in(ctx), q_out(ctx)
    kernel, pad, count_pad = list(ctx.attrs["kernel"]), list(ctx.attrs["pad"]), list(ctx.attrs["count_pad"])
    divisor = int(ctx.attrs["divisor"])
    if (xq is None or yq is None or xq.per_axis or yq.per_axis or xq.dtype != "i8"
            or (count_pad != pad and divisor <= 0)):
        return float_fallback(ctx)
    count = divisor if divisor > 0 else math.prod(kernel)
    channels = ctx.type_of(ctx.operands[0]).shape[-1]
    weights = np.zeros((channels, *kernel, channels), np.int8)
    weights[np.arange(channels), ..., np.arange(channels)] = 1
    ones = QInfo("i8", (1.0,), (0,), None)
    attrs = {"stride": list(ctx.attrs["stride"]), "pad": pad, "dilation": [1, 1, 1]}
    factor = np.full(channels, xq.scale / (count * yq.scale))
    return quantized_convolution(ctx, "tosa.conv3d", ctx.operands[0], xq, weights, ones, np.zeros(channels, np.int64),
                                 factor, yq, (1, 2, 3, 4), attrs, kernel)
