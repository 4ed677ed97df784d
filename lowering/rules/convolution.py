"""Convolutions: conv2d (any groups), depthwise_conv2d, conv3d, transpose_conv2d; and the helpers the
other windowed and float-only families (pooling, matmul, resize) share.

TOSA's convolutions take nn's layouts as they are (NHWC / NDHWC input; [O, KH, KW, I],
[KH, KW, C, M], [O, KD, KH, KW, I] weights), plus operands nn leaves implicit: a bias (zeros [1]
when nn has none), zero points (0 for floats) and an accumulator type: f32 for every float input,
so f16 and bf16 convolutions accumulate in f32 and round once to their own type.

Where TOSA is stricter than nn:
- Output sizes must come out exact: (in - 1 + pads - (kernel - 1) * dilation) divisible by the
  stride, where nn rounds down. The rows no window reaches are dropped instead (trailing padding
  first, then trailing input rows): `fit_windows`.
- A grouped convolution has no TOSA op. One input channel per group (groups == channels) is a
  depthwise convolution with rearranged weights; other group counts become one convolution per
  group on a channel slice, concatenated.
- transpose_conv2d's out_pad must be > -kernel: a deeper crop keeps out_pad at 1 - kernel and
  slices the rest off the result.

Quantized conv2d (grouped: depthwise or one convolution per group), depthwise_conv2d and conv3d read their
quantizations and constant operands and hand them to `quantized_convolution` (integer_convolution.py: the
integer convolution, its accumulator and RESCALE, and the forms an NPU preset asks for); quantized
transposed convolutions: transpose_convolution.py.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from nn2tosa.dialects.tosa_builder import TosaBuilder
from nn2tosa.ir import TensorType, Value

from ..context import LoweringContext, constant_value, float_rule_unquantized
from ..fixed_point.carrier import QInfo
from ..registry import rule
from .integer_convolution import (CONVOLUTION_CHECKS, ConvolutionOp, bias_in_accumulator, constant_weights,
                                  convolution_quantized_both_ends, out_channel_scales, quantized_convolution,
                                  subsample_first)
from .quantization import q_in, q_out, require_per_tensor
from .shape import concat, tosa_slice
from .windows import drop_extra, fit_windows, slice_of


FLOAT_TYPES = ("f32", "f16", "bf16")
# accumulator of a TOSA convolution / average pool by element type: f32 for every float (TOSA
# allows f16 accumulation of f16 data, but f32 keeps nn's one rounding per result)
ACCUMULATOR = {"f32": "f32", "f16": "f32", "bf16": "f32"}


# ------------------------------------------------------------------------------ shared helpers
def float_type(ctx: LoweringContext, what: str) -> str:
    """The float element type `ctx`'s op computes in: its operands' and result's common type, or f32
    when they mix precisions (f32 holds every f16 and bf16 value exactly). Integer operands are
    reported unsupported (quantized ones never reach a float rule: lowering/registry.py's rule_for)."""
    ctx.check(float_rule_unquantized, what)
    ctx.check(float_tensors, what)
    dtypes = {t.dtype for t in ctx.in_types + ctx.out_types if isinstance(t, TensorType)}
    return dtypes.pop() if len(dtypes) == 1 else "f32"


def float_tensors(ctx: LoweringContext, what: str) -> str | None:
    """Operands and results are floating point (or quantized data, which the quantized rules lower):
    TOSA computes the op on those only."""
    dtypes = {t.dtype for t in ctx.in_types + ctx.out_types if isinstance(t, TensorType)}
    others = sorted(dtypes - set(FLOAT_TYPES))
    if others:
        return f"{what} on {', '.join(others)} tensors: TOSA computes it on floats (or quantized data) only"
    return None


def _real(values: np.ndarray, dtype: str) -> np.ndarray:
    """Stored values of a float type as float32/float16 numbers (bf16 bits widened to float32)."""
    return (values.astype(np.uint32) << 16).view(np.float32) if dtype == "bf16" else values


def cast(ctx: LoweringContext, v: Value, dtype: str) -> Value:
    """v converted to float type `dtype`: a constant (weights, biases) is converted here, rounding to
    nearest even as TOSA CAST does, other values by a CAST op."""
    t = ctx.type_of(v)
    array = constant_value(ctx, v)
    if t.dtype == dtype or array is None or t.dtype not in FLOAT_TYPES or dtype not in FLOAT_TYPES:
        return ctx.cast(v, dtype)
    return ctx.const(_real(array, t.dtype).astype(np.float32 if dtype == "bf16" else TensorType((), dtype).numpy_dtype),
                     dtype)


def rearrange(ctx: LoweringContext, v: Value, perm: Sequence[int] | None = None,
              shape: Sequence[int] | None = None) -> Value:
    """v transposed by `perm`, then reshaped to `shape`; a constant is rearranged here (once, in
    numpy) rather than by TOSA ops at every inference."""
    array = constant_value(ctx, v)
    if array is not None:
        if perm is not None:
            array = array.transpose(perm)
        if shape is not None:
            array = array.reshape(shape)
        return ctx.const(np.ascontiguousarray(array), ctx.type_of(v).dtype)
    if perm is not None:
        v = ctx.transpose(v, perm)
    return ctx.reshape(v, shape) if shape is not None else v


def convolution(ctx: LoweringContext, op: ConvolutionOp, x: Value, w: Value, bias: Value | None, dtype: str, *,
                kernel: Sequence[int], pad: Sequence[int], stride: Sequence[int],
                dilation: Sequence[int] | None = None) -> Value:
    """TOSA convolution `op` (a TosaBuilder method) in `dtype` (operands cast to it; f32 accumulation), bias zeros when
    None. The result has element type `dtype`."""
    x, w = cast(ctx, x, dtype), cast(ctx, w, dtype)
    attrs = {"stride": list(stride), "acc_type": ACCUMULATOR[dtype]}
    if dilation is not None:  # every convolution but transpose_conv2d
        windows = [(k - 1) * d + 1 for k, d in zip(kernel, dilation)]
        x, pad, extra = fit_windows(ctx, x, windows, stride, pad)
        attrs.update(pad=pad, dilation=list(dilation))
    else:
        attrs["out_pad"], extra = list(pad), []
    bias = ctx.const(np.zeros(1), dtype) if bias is None else cast(ctx, bias, dtype)
    zero = ctx.zero_point(dtype)
    return drop_extra(ctx, op(ctx.tosa, x, w, bias, zero, zero, **attrs), extra)


def _bias(ctx: LoweringContext) -> Value | None:
    return ctx.optional_operand("bias")


def _finish(ctx: LoweringContext, y: Value) -> Value:
    return ctx.cast(y, ctx.out_types[0].dtype)


# ------------------------------------------------------------------------------ rules
@rule("nn.conv2d", checks=(float_tensors,))
def conv2d(ctx: LoweringContext) -> Value:
    dtype = float_type(ctx, "conv2d")
    x, w, bias = ctx.operand("input"), ctx.operand("weight"), _bias(ctx)
    o, kh, kw, per_group = ctx.type_of(w).shape
    groups = ctx.attrs["groups"]
    window = {"kernel": (kh, kw), "pad": ctx.attrs["pad"], "stride": ctx.attrs["stride"],
              "dilation": ctx.attrs["dilation"]}
    if groups == 1:
        return _finish(ctx, convolution(ctx, TosaBuilder.conv2d, x, w, bias, dtype, **window))
    if per_group == 1:  # one input channel per group: depthwise, output channel c*M + m as in nn
        w = rearrange(ctx, w, shape=(groups, o // groups, kh, kw))
        w = rearrange(ctx, w, perm=(2, 3, 0, 1))
        return _finish(ctx, convolution(ctx, TosaBuilder.depthwise_conv2d, x, w, bias, dtype, **window))
    n, h, wd, _ = ctx.type_of(x).shape
    per_out = o // groups
    outputs = []
    for g in range(groups):
        xg = slice_of(ctx, x, (0, 0, 0, g * per_group), (n, h, wd, per_group))
        wg = slice_of(ctx, w, (g * per_out, 0, 0, 0), (per_out, kh, kw, per_group))
        bg = None if bias is None else slice_of(ctx, bias, (g * per_out,), (per_out,))
        outputs.append(convolution(ctx, TosaBuilder.conv2d, xg, wg, bg, dtype, **window))
    return _finish(ctx, concat(ctx, outputs, axis=3))


@rule("nn.depthwise_conv2d", checks=(float_tensors,))
def depthwise_conv2d(ctx: LoweringContext) -> Value:
    dtype = float_type(ctx, "depthwise_conv2d")
    kh, kw, _, _ = ctx.type_of(ctx.operand("weight")).shape
    return _finish(ctx, convolution(ctx, TosaBuilder.depthwise_conv2d, ctx.operand("input"), ctx.operand("weight"),
                                    _bias(ctx), dtype, kernel=(kh, kw), pad=ctx.attrs["pad"],
                                    stride=ctx.attrs["stride"], dilation=ctx.attrs["dilation"]))


@rule("nn.conv3d", checks=(float_tensors,))
def conv3d(ctx: LoweringContext) -> Value:
    dtype = float_type(ctx, "conv3d")
    _, kd, kh, kw, _ = ctx.type_of(ctx.operand("weight")).shape
    return _finish(ctx, convolution(ctx, TosaBuilder.conv3d, ctx.operand("input"), ctx.operand("weight"), _bias(ctx), dtype,
                                    kernel=(kd, kh, kw), pad=ctx.attrs["pad"], stride=ctx.attrs["stride"],
                                    dilation=ctx.attrs["dilation"]))


@rule("nn.transpose_conv2d", checks=(float_tensors,))
def transpose_conv2d(ctx: LoweringContext) -> Value:
    dtype = float_type(ctx, "transpose_conv2d")
    _, kh, kw, _ = ctx.type_of(ctx.operand("weight")).shape
    out_pad = ctx.attrs["out_pad"]
    # TOSA needs out_pad > -kernel: crop deeper with a slice of the result
    tosa_pad = [max(p, 1 - k) for p, k in zip(out_pad, (kh, kh, kw, kw))]
    y = convolution(ctx, TosaBuilder.transpose_conv2d, ctx.operand("input"), ctx.operand("weight"), _bias(ctx), dtype,
                    kernel=(kh, kw), pad=tosa_pad, stride=ctx.attrs["stride"])
    crop_top, crop_left = tosa_pad[0] - out_pad[0], tosa_pad[2] - out_pad[2]
    y = slice_of(ctx, y, (0, crop_top, crop_left, 0), ctx.out_types[0].shape)
    return _finish(ctx, y)


def convolution_quantizations(ctx: LoweringContext) -> tuple[QInfo, QInfo]:
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
def quantized_conv2d(ctx: LoweringContext) -> Value:
    xq, yq = convolution_quantizations(ctx)
    w, wq = constant_weights(ctx)
    o, kh, kw, per_group = w.shape
    groups = int(ctx.attrs["groups"])
    acc_scales = xq.scale * out_channel_scales(wq, o)
    bias = bias_in_accumulator(ctx, acc_scales)
    out_scales = acc_scales / yq.scale
    attrs = _window_attrs(ctx)
    window = _windows((kh, kw), attrs["dilation"])
    x = ctx.operand("input")
    if groups == 1:
        if window == [1, 1]:
            x, attrs = subsample_first(ctx, x, xq, attrs)
        return quantized_convolution(ctx, TosaBuilder.conv2d, x, xq, w, wq, bias, out_scales, yq, (1, 2, 3), attrs, window)
    if per_group == 1:  # one input channel per group: depthwise, output channel c*M + m as in nn
        dw = np.ascontiguousarray(w.reshape(groups, o // groups, kh, kw).transpose(2, 3, 0, 1))
        return quantized_convolution(ctx, TosaBuilder.depthwise_conv2d, x, xq, dw, wq, bias, out_scales, yq, (0, 1),
                                     attrs, window)
    n, h, wd, _ = ctx.type_of(x).shape
    per_out = o // groups
    parts = []
    for g in range(groups):
        xg = tosa_slice(ctx, x, (0, 0, 0, g * per_group), (n, h, wd, per_group))
        sl = slice(g * per_out, (g + 1) * per_out)
        parts.append(quantized_convolution(ctx, TosaBuilder.conv2d, xg, xq, np.ascontiguousarray(w[sl]), wq, bias[sl],
                                           out_scales[sl], yq, (1, 2, 3), attrs, window))
    return ctx.tosa.concat(parts, axis=3)


@rule("nn.depthwise_conv2d", quantized=True, checks=CONVOLUTION_CHECKS)
def quantized_depthwise_conv2d(ctx: LoweringContext) -> Value:
    xq, yq = convolution_quantizations(ctx)
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
    return quantized_convolution(ctx, TosaBuilder.depthwise_conv2d, ctx.operand("input"), xq, w, wq, bias,
                                 acc_scales / yq.scale, yq, (0, 1), attrs, _windows((kh, kw), attrs["dilation"]))


@rule("nn.conv3d", quantized=True, checks=CONVOLUTION_CHECKS)
def quantized_conv3d(ctx: LoweringContext) -> Value:
    xq, yq = convolution_quantizations(ctx)
    w, wq = constant_weights(ctx)
    o, kd, kh, kw, _ = w.shape
    acc_scales = xq.scale * out_channel_scales(wq, o)
    bias = bias_in_accumulator(ctx, acc_scales)
    attrs = _window_attrs(ctx)
    return quantized_convolution(ctx, TosaBuilder.conv3d, ctx.operand("input"), xq, w, wq, bias, acc_scales / yq.scale, yq,
                                 (1, 2, 3, 4), attrs, _windows((kd, kh, kw), attrs["dilation"]))
