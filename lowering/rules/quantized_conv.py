"""Quantized lowering, part 3: convolutions, fully connected, matmul.

Each rule reads its quantizations and constant operands and hands them to `quantized_convolution`
(quantized_convolution.py: the integer convolution, its accumulator and RESCALE):
- conv2d (grouped: depthwise or one convolution per group), depthwise_conv2d, conv3d,
  transpose_conv2d (TOSA needs out_pad > -kernel: a slice of the result crops deeper);
  under a `--target` preset some become the forms of quantized_conv_npu.py and
  quantized_transpose_conv_npu.py.
- fully_connected is a 1x1 conv2d ([rows, 1, 1, K] x [O, 1, 1, K]); under LiteRT semantics it
  rounds once. matmul of two tensors is TOSA MATMUL with both zero points (i16 x i16 -> i48 with
  the int16 extension).
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from nn2tosa.ir import TensorType, Value

from ..context import LoweringContext
from ..npu_target import choose
from ..fixed_point.carrier import QInfo
from ..fixed_point.rescale import narrow, rescale
from . import rule
from .quantized import float_fallback, q_in, q_out, require_per_tensor
from .quantized_conv_npu import subsample_first, upsample_then_convolve
from .quantized_convolution import (ACCUMULATOR, CONVOLUTION_CHECKS, bias_in_accumulator, constant_weights,
                                    convolution_quantized_both_ends, matmul_operand_types, out_channel_scales,
                                    quantized_convolution)
from .quantized_transpose_conv_npu import phase_convolutions, phases_fit
from .shape import tosa_slice


def _conv_quants(ctx: LoweringContext) -> tuple[QInfo, QInfo]:
    xq, yq = q_in(ctx), q_out(ctx)
    ctx.check(convolution_quantized_both_ends, xq, yq)
    assert xq is not None and yq is not None
    require_per_tensor(ctx, xq, yq)
    return xq, yq


def _window_attrs(ctx: LoweringContext) -> dict:
    return {"stride": list(ctx.attrs["stride"]), "pad": list(ctx.attrs["pad"]), "dilation": list(ctx.attrs["dilation"])}


def _windows(kernel: Sequence[int], dilation: Sequence[int]) -> list[int]:
    return [(k - 1) * d + 1 for k, d in zip(kernel, dilation)]


@rule("nn.conv2d", quantized=True, checks=CONVOLUTION_CHECKS)
def conv2d(ctx: LoweringContext) -> Value:
    xq, yq = _conv_quants(ctx)
    w, wq = constant_weights(ctx)
    o, kh, kw, per_group = w.shape
    groups = int(ctx.attrs["groups"])
    acc_scales = xq.scale * out_channel_scales(wq, o)
    bias = bias_in_accumulator(ctx, acc_scales)
    out_scales = acc_scales / yq.scale
    attrs = _window_attrs(ctx)
    window = _windows((kh, kw), attrs["dilation"])
    x = ctx.operands[0]
    if groups == 1:
        if window == [1, 1]:
            x, attrs = subsample_first(ctx, x, xq, attrs)
        return quantized_convolution(ctx, "tosa.conv2d", x, xq, w, wq, bias, out_scales, yq, (1, 2, 3), attrs, window)
    if per_group == 1:  # one input channel per group: depthwise, output channel c*M + m as in nn
        dw = np.ascontiguousarray(w.reshape(groups, o // groups, kh, kw).transpose(2, 3, 0, 1))
        return quantized_convolution(ctx, "tosa.depthwise_conv2d", x, xq, dw, wq, bias, out_scales, yq, (0, 1),
                                     attrs, window)
    n, h, wd, _ = ctx.type_of(x).shape
    per_out = o // groups
    parts = []
    for g in range(groups):
        xg = tosa_slice(ctx, x, (0, 0, 0, g * per_group), (n, h, wd, per_group))
        sl = slice(g * per_out, (g + 1) * per_out)
        parts.append(quantized_convolution(ctx, "tosa.conv2d", xg, xq, np.ascontiguousarray(w[sl]), wq, bias[sl],
                                           out_scales[sl], yq, (1, 2, 3), attrs, window))
    return ctx.op("tosa.concat", parts, {"axis": 3})


@rule("nn.depthwise_conv2d", quantized=True, checks=CONVOLUTION_CHECKS)
def depthwise_conv2d(ctx: LoweringContext) -> Value:
    xq, yq = _conv_quants(ctx)
    w, wq = constant_weights(ctx)
    kh, kw, c, m = w.shape
    if wq.axis is None or len(wq.scales) == 1:
        weight_scales = out_channel_scales(wq, c * m)
    elif wq.axis == 2:
        weight_scales = out_channel_scales(wq, c * m, repeat=m)
    else:
        weight_scales = out_channel_scales(wq, c * m, tile=c)
    acc_scales = xq.scale * weight_scales
    bias = bias_in_accumulator(ctx, acc_scales)
    attrs = _window_attrs(ctx)
    # the accumulator bound sums over the window of each (c, m) output channel
    return quantized_convolution(ctx, "tosa.depthwise_conv2d", ctx.operands[0], xq, w, wq, bias,
                                 acc_scales / yq.scale, yq, (0, 1), attrs, _windows((kh, kw), attrs["dilation"]))


@rule("nn.conv3d", quantized=True, checks=CONVOLUTION_CHECKS)
def conv3d(ctx: LoweringContext) -> Value:
    xq, yq = _conv_quants(ctx)
    w, wq = constant_weights(ctx)
    o, kd, kh, kw, _ = w.shape
    acc_scales = xq.scale * out_channel_scales(wq, o)
    bias = bias_in_accumulator(ctx, acc_scales)
    attrs = _window_attrs(ctx)
    return quantized_convolution(ctx, "tosa.conv3d", ctx.operands[0], xq, w, wq, bias, acc_scales / yq.scale, yq,
                                 (1, 2, 3, 4), attrs, _windows((kd, kh, kw), attrs["dilation"]))


@rule("nn.transpose_conv2d", quantized=True, checks=CONVOLUTION_CHECKS)
def transpose_conv2d(ctx: LoweringContext) -> Value:
    xq, yq = _conv_quants(ctx)
    w, wq = constant_weights(ctx)
    o, kh, kw, _ = w.shape
    acc_scales = xq.scale * out_channel_scales(wq, o)
    bias = bias_in_accumulator(ctx, acc_scales)
    out_pad = list(ctx.attrs["out_pad"])
    # TOSA needs out_pad > -kernel: crop deeper with a slice of the result
    tosa_pad = [max(p, 1 - k) for p, k in zip(out_pad, (kh, kh, kw, kw))]
    attrs = {"stride": list(ctx.attrs["stride"]), "out_pad": tosa_pad}
    form = choose(ctx, "transpose_conv") if xq.dtype == "i8" else "transpose_conv2d"
    if form == "phase_conv2d" and phases_fit(ctx.type_of(ctx.operands[0]).shape, (kh, kw), attrs["stride"], tosa_pad):
        y = phase_convolutions(ctx, xq, w, wq, bias, acc_scales / yq.scale, yq, attrs["stride"], tosa_pad)
    elif form != "transpose_conv2d":
        y = upsample_then_convolve(ctx, xq, w, wq, bias, acc_scales / yq.scale, yq, attrs["stride"], tosa_pad)
    else:
        y = quantized_convolution(ctx, "tosa.transpose_conv2d", ctx.operands[0], xq, w, wq, bias,
                                  acc_scales / yq.scale, yq, (1, 2, 3), attrs)
    crop_top, crop_left = tosa_pad[0] - out_pad[0], tosa_pad[2] - out_pad[2]
    return tosa_slice(ctx, y, (0, crop_top, crop_left, 0), ctx.out_types[0].shape)


@rule("nn.fully_connected", quantized=True, checks=CONVOLUTION_CHECKS)
def fully_connected(ctx: LoweringContext) -> Value:
    """x [..., K] times W^T [K, O]: a 1x1 conv2d of [rows, 1, 1, K] with [O, 1, 1, K] weights."""
    xq, yq = _conv_quants(ctx)
    w, wq = constant_weights(ctx)
    o, k = w.shape
    acc_scales = xq.scale * out_channel_scales(wq, o)
    bias = bias_in_accumulator(ctx, acc_scales)
    x = ctx.operands[0]
    rows = ctx.type_of(x).num_elements // k
    attrs = {"stride": [1, 1], "pad": [0, 0, 0, 0], "dilation": [1, 1]}
    # LiteRT's reference FULLY_CONNECTED rounds acc * s_x * s_w / s_y once, in double (not
    # MultiplyByQuantizedMultiplier as its convolutions do): one rounding, SINGLE_ROUND
    rounding = "SINGLE_ROUND" if ctx.semantics == "litert" else None
    y = quantized_convolution(ctx, "tosa.conv2d", ctx.reshape(x, (rows, 1, 1, k)), xq, w.reshape(o, 1, 1, k), wq,
                              bias, acc_scales / yq.scale, yq, (1, 2, 3), attrs, rounding=rounding)
    return ctx.reshape(y, ctx.out_types[0].shape)


@rule("nn.matmul", quantized=True, checks=(matmul_operand_types,))
def matmul(ctx: LoweringContext) -> Value | list[Value]:
    """TOSA MATMUL of the carried integers with both zero points, then one RESCALE."""
    aq, bq, yq = q_in(ctx, 0), q_in(ctx, 1), q_out(ctx)
    if aq is None or bq is None or yq is None:
        return float_fallback(ctx)
    require_per_tensor(ctx, aq, bq, yq)
    ctx.check(matmul_operand_types, aq, bq)
    a, b = ctx.same_rank(*ctx.operands)
    a_shape, b_shape = ctx.type_of(a).shape, ctx.type_of(b).shape
    (m, k), n = a_shape[-2:], b_shape[-1]
    batch = ctx.out_types[0].shape[:-2]
    count = math.prod(batch)
    a3 = ctx.reshape(_tiled(ctx, a, batch), (count, m, k))
    b3 = ctx.reshape(_tiled(ctx, b, batch), (count, k, n))
    acc_type = ACCUMULATOR[aq.dtype]
    acc = ctx.op("tosa.matmul", [a3, b3, ctx.zero_point(aq.dtype, aq.zero_point), ctx.zero_point(bq.dtype, bq.zero_point)],
                 types=[TensorType((count, m, n), acc_type)])
    scale = aq.scale * bq.scale / yq.scale
    if acc_type == "i48":
        shift = max(0, math.ceil(math.log2(max(aq.span * bq.span * k, 1))) - 30)
        acc = rescale(ctx, acc, 2.0 ** -shift, "i32")
        scale *= 2.0 ** shift
    exact_bound = None if acc_type == "i48" and shift else aq.span * bq.span * k
    return ctx.reshape(narrow(ctx, acc, scale, yq, max_abs=exact_bound), ctx.out_types[0].shape)


def _tiled(ctx: LoweringContext, x: Value, batch: Sequence[int]) -> Value:
    shape = ctx.type_of(x).shape
    multiples = [b // d for b, d in zip(batch, shape[:-2])] + [1, 1]
    if all(mult == 1 for mult in multiples):
        return x
    out = tuple(d * mult for d, mult in zip(shape, multiples))
    return ctx.op("tosa.tile", [x, ctx.shape(multiples)], types=[ctx.type_of(x).with_shape(out)])
