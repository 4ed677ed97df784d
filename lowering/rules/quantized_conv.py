"""Quantized lowering, part 3: convolutions, fully connected, matmul, average pooling, resize.

A quantized convolution is TOSA's integer convolution with zero points (i8 activations: i32
accumulator; i16 activations: i48, the int16 extension) and a per-tensor or per-output-channel
RESCALE by s_x * s_w[c] / s_y. CpuRef sums float32 products instead, so the two agree except
where its float sum lands within rounding error of a half.

- weights are constants, converted here: unsigned (QAsymmU8) weights shift to i8 with their zero
  point; a bias is re-expressed in accumulator units round(b * s_b / (s_x * s_w[c])) when its scale
  is not s_x * s_w[c] already.
- i16 weights (QSymmS16) have no TOSA convolution with i16 activations: w = 256 * hi + lo with
  hi in -128..127 and lo in 0..255 (stored as lo - 128 with weight zero point -128) gives two
  i16 x i8 convolutions whose sum 256 * acc_hi + acc_lo is the exact accumulator.
- an i48 accumulator goes to i32 first by a power-of-two RESCALE (exact when the accumulator
  bound, computed from the weights and the input range, fits i32; otherwise the fewest low bits
  are rounded off), then to the output by a 32-bit multiplier: i48 RESCALE only takes 16-bit
  multipliers, which would round the output scale to 15 bits.
- fully_connected is a 1x1 conv2d ([rows, 1, 1, K] x [O, 1, 1, K]); matmul of two tensors is
  TOSA MATMUL with both zero points (i16 x i16 -> i48 with the int16 extension).
- avg_pool2d with one quantization in and out: TOSA AVG_POOL2D with zero points (counted padding
  is padded with the zero point explicitly); avg_pool3d: window sums from a CONV3D with a diagonal
  of ones, one rounding; bilinear resize: TOSA RESIZE's exact integer interpolation, one rounding
  (under LiteRT semantics TFLite's integer kernel: its 10-bit source coordinates as RESIZE's scale
  and offset, its rounding; nearest reads the rows TFLite's float32 coordinates give).
  Other cases (a rescaling average, a window count that varies, samplings RESIZE cannot take)
  compute in f32 as CpuRef does (quantized.float_fallback). Under LiteRT semantics avg_pool2d is
  TFLite's integer AveragePool (`_tflite_average_pool`) and fully_connected rounds once.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from nn2tosa.ir import TensorType, Value

from ..context import LoweringContext, constant_value
from ..npu_target import choose
from ..quant import QInfo, narrow, rescale, saturate_to
from . import rule
from .conv import drop_extra, fit_windows
from .pool import clip_windows, require_static_windows, static_windows, window_counts
from .resize import (AxisMap, Sampling, exact_nearest_indices, gather_resize, sampling, separable,
                     tflite_bilinear_sampling, tflite_nearest_indices, weigh_integers)
from .quantized import float_fallback, movement, q_in, q_out, require_per_tensor
from .shape import pad_constant, tosa_slice

ACCUMULATOR = {"i8": "i32", "i16": "i48"}


# ------------------------------------------------------------------------------ constraints
def constant_quantized_weights(ctx: LoweringContext, w: np.ndarray | None, wq: QInfo | None) -> str | None:
    """A quantized convolution's weights are constant and quantized."""
    if w is None or wq is None:
        return "quantized convolution with weights computed at run time"
    return None


def one_weight_zero_point(ctx: LoweringContext, wq: QInfo) -> str | None:
    """Weights have one zero point (per-channel scales are fine)."""
    if len(set(wq.zero_points)) > 1:
        return f"per-channel weight zero points ({len(set(wq.zero_points))} different)"
    return None


def constant_bias(ctx: LoweringContext, b: np.ndarray | None) -> str | None:
    """A quantized convolution's bias, if any, is constant."""
    if b is None:
        return "a bias computed at run time"
    return None


def bias_fits_accumulator(ctx: LoweringContext, units: np.ndarray, acc_scales: np.ndarray) -> str | None:
    """The bias, in units of the accumulator (input scale x weight scale), fits 48 bits, TOSA's widest
    accumulator."""
    beyond = ~(np.abs(units) < 2.0 ** 47)  # NaN too
    if beyond.any():
        return f"a bias of {units[beyond][0]:g} accumulator units (scale {acc_scales.min():g}), beyond a 48-bit accumulator"
    return None


def convolution_activations(ctx: LoweringContext, xq: QInfo) -> str | None:
    """Quantized convolution activations are i8, or i16 with zero point 0 (TOSA requires 0)."""
    if xq.dtype not in ACCUMULATOR:
        return f"quantized convolution of {xq.dtype} activations"
    if xq.dtype == "i16" and xq.zero_point != 0:
        return f"int16 activations with a non-zero zero point (TOSA requires 0; here {xq.zero_point})"
    return None


def convolution_weight_type(ctx: LoweringContext, xq: QInfo, wq: QInfo) -> str | None:
    """Weights are i8, or i16 with zero point 0 for i16 activations."""
    if wq.dtype == "i8" or (wq.dtype == "i16" and wq.zero_points[0] == 0 and xq.dtype == "i16"):
        return None
    return f"quantized convolution of {xq.dtype} data with {wq.dtype} weights"


def int16_accumulator_fits(ctx: LoweringContext, k: int) -> str | None:
    """With i16 weights, the accumulator fits i32 after dropping at most 8 bits."""
    if k > 8:
        return f"the int16 accumulator does not fit i32 after dropping 8 bits (it needs {k})"
    return None


def convolution_quantized_both_ends(ctx: LoweringContext, xq: QInfo | None, yq: QInfo | None) -> str | None:
    """A quantized convolution's input and result are both quantized (not float and quantized mixed)."""
    if xq is None or yq is None:
        return "a convolution mixing float and quantized tensors"
    return None


def matmul_operand_types(ctx: LoweringContext, aq: QInfo, bq: QInfo) -> str | None:
    """A quantized matmul multiplies i8 by i8, or i16 by i16 with zero points 0 (TOSA requires 0)."""
    if aq.dtype != bq.dtype or aq.dtype not in ACCUMULATOR:
        return f"quantized matmul of {aq.dtype} by {bq.dtype}"
    if aq.dtype == "i16" and (aq.zero_point or bq.zero_point):
        return "int16 matmul with non-zero zero points (TOSA requires 0)"
    return None


# what the convolution helpers below check, declared by every rule using them
CONVOLUTION_CORE = (convolution_activations, convolution_weight_type, int16_accumulator_fits)  # quantized_convolution
CONVOLUTION_CHECKS = (convolution_quantized_both_ends, constant_quantized_weights, one_weight_zero_point,
                      constant_bias, bias_fits_accumulator, *CONVOLUTION_CORE)


# ------------------------------------------------------------------------------ operands
def _weights(ctx: LoweringContext, k: int = 1) -> tuple[np.ndarray, QInfo]:
    w = constant_value(ctx, ctx.operands[k])
    wq = q_in(ctx, k)
    ctx.check(constant_quantized_weights, w, wq)
    assert w is not None and wq is not None  # (the check above)
    ctx.check(one_weight_zero_point, wq)
    return w, wq


def _out_channel_scales(wq: QInfo, channels: int, repeat: int = 1, tile: int = 1) -> np.ndarray:
    """Weight scale of every output channel (per-axis scales repeated/tiled for depthwise)."""
    scales = np.asarray(wq.scales, np.float64)
    if scales.size == 1:
        return np.full(channels, scales[0])
    scales = np.tile(np.repeat(scales, repeat), tile)
    if scales.size != channels:
        raise ValueError(f"{scales.size} weight scales for {channels} output channels")
    return scales


def _bias_in_accumulator(ctx: LoweringContext, acc_scales: np.ndarray) -> np.ndarray:
    """The bias as integers of the accumulator (scale s_x * s_w[c]), int64; zeros without one."""
    channels = acc_scales.size
    if len(ctx.operands) < 3:
        return np.zeros(channels, np.int64)
    b = constant_value(ctx, ctx.operands[2])
    bq = q_in(ctx, 2)
    ctx.check(constant_bias, b)
    assert b is not None
    if bq is None:  # a float bias: CpuRef adds it to the float sum
        real = b.astype(np.float64)
    else:
        real = (b.astype(np.int64) - np.asarray(bq.zero_points)) * np.asarray(bq.scales, np.float64)
        ratio = np.asarray(bq.scales, np.float64) / acc_scales
        if bq.zero_points == (0,) * len(bq.zero_points) and np.all(np.abs(ratio - 1) < 1e-6):
            return np.broadcast_to(b.astype(np.int64), (channels,)).copy()
    with np.errstate(all="ignore"):
        units = np.floor(np.broadcast_to(real, (channels,)) / acc_scales + 0.5)
    ctx.check(bias_fits_accumulator, units, acc_scales)
    return units.astype(np.int64)


def _accumulator_bits(weights_abs_sum: np.ndarray, span: int, bias: np.ndarray) -> int:
    """How many low bits an accumulator must lose to fit i32 (0 when it fits)."""
    bound = float(np.max(weights_abs_sum * span + np.abs(bias))) if bias.size else 0.0
    return max(0, math.ceil(math.log2(max(bound, 1.0))) - 30)


def _abs_sums(w: np.ndarray, zero_point: int, axes: tuple[int, ...]) -> np.ndarray:
    """Sum of |w - zero_point| over `axes`, flattened (int64). int8 weights go through a 256-entry
    table of |v - zero_point| (at most 255: one byte per weight instead of a wide temporary)."""
    if w.dtype == np.int8:
        table = np.abs(np.arange(-128, 128) - zero_point).astype(np.uint8)
        centred = table[w.view(np.uint8) ^ np.uint8(0x80)]
    else:  # |i16 - zero point| fits i32: half int64's temporary
        centred = np.abs(w.astype(np.int32) - zero_point)
    return centred.sum(axis=axes, dtype=np.int64).reshape(-1)


def _split_i16_weights(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """i16 weights as 256 * hi + lo: hi (int8) and lo - 128 (int8, weight zero point -128)."""
    w = w.astype(np.int64)
    lo = w & 0xFF
    hi = (w - lo) >> 8
    return hi.astype(np.int8), (lo - 128).astype(np.int8)


# ------------------------------------------------------------------------------ the convolution
def quantized_convolution(ctx: LoweringContext, op: str, x: Value, xq: QInfo, w: np.ndarray, wq: QInfo,
                          bias: np.ndarray, out_scales: np.ndarray, yq: QInfo, channel_axis_sum: tuple[int, ...],
                          attrs: dict, window: Sequence[int] | None = None, rounding: str | None = None) -> Value:
    """TOSA convolution `op` of carried x with constant weights w (carried, zero point in wq), bias
    in accumulator units, then RESCALE by out_scales (per output channel) to yq (`rounding`: see narrow).
    `channel_axis_sum`: the weight axes summed per output channel (for the accumulator bound)."""
    ctx.check(convolution_activations, xq)
    attrs = dict(attrs)
    extra: list[int] = []
    if window is not None:
        w, window = _widen_rather_than_trim(ctx, op, x, w, wq.zero_points[0], window, attrs)
        x, attrs["pad"], extra = fit_windows(ctx, x, window, attrs["stride"], attrs["pad"])
    acc_type = ACCUMULATOR[xq.dtype]
    attrs["acc_type"] = acc_type
    wzp = wq.zero_points[0]
    sums: list[np.ndarray] = []

    def abs_sum() -> np.ndarray:
        """Sum of |w - zero point| per output channel (it reads every weight: only when asked)."""
        if not sums:
            sums.append(_abs_sums(w, wzp, channel_axis_sum))
        return sums[0]

    def bound() -> int:
        return int(np.max(abs_sum() * xq.span + np.abs(bias))) if bias.size else 0

    def conv(weights: np.ndarray, weight_zp: int, bias_values: np.ndarray) -> Value:
        operands = [x, ctx.const(weights, "i8"), ctx.const(bias_values, acc_type), ctx.zero_point(xq.dtype, xq.zero_point),
                    ctx.zero_point("i8", weight_zp)]
        return drop_extra(ctx, ctx.op(op, operands, attrs), extra)

    if wq.dtype == "i8":
        acc = conv(w, wzp, bias)
        if acc_type == "i32":
            return narrow(ctx, acc, out_scales, yq, max_abs=bound, rounding=rounding)
        k = _accumulator_bits(abs_sum(), xq.span, bias)
        acc = rescale(ctx, acc, 2.0 ** -k, "i32")
        return narrow(ctx, acc, out_scales * 2.0 ** k, yq, max_abs=None if k else bound, rounding=rounding)
    ctx.check(convolution_weight_type, xq, wq)
    hi, lo = _split_i16_weights(w)
    per_channel = math.prod(w.shape) // max(abs_sum().size, 1)
    k = _accumulator_bits(abs_sum() + 512 * per_channel, xq.span, bias)  # |256 hi| + |lo| <= |w| + 510
    ctx.check(int16_accumulator_fits, k)
    high = rescale(ctx, conv(hi, 0, np.zeros_like(bias)), 2.0 ** (8 - k), "i32")
    low = rescale(ctx, conv(lo, -128, bias), 2.0 ** -k, "i32")
    return narrow(ctx, ctx.binary("tosa.add", high, low), out_scales * 2.0 ** k, yq, max_abs=None if k else bound,
                  rounding=rounding)


# The weight axis of the kernel width, per TOSA convolution whose width may grow
_KERNEL_WIDTH_AXIS = {"tosa.conv2d": 2, "tosa.depthwise_conv2d": 1}


def _widen_rather_than_trim(ctx: LoweringContext, op: str, x: Value, w: np.ndarray, weight_zp: int,
                            window: Sequence[int], attrs: dict) -> tuple[np.ndarray, list[int]]:
    """TOSA needs the windows to tile the padded width exactly; the columns past the last window
    that the trailing padding cannot absorb (`fit_windows` would slice them off the input) become
    taps of weight zero point at the kernel's right instead, which add nothing. The input is then
    read whole: a slice narrowing the width makes Vela keep the input in its linear layout, about
    twice the memory traffic of its brick layout (ResNet-50's stride-2 1x1 convolutions, -3.3 M
    cycles on Ethos-U85), for a few more MACs. Rows past the last window are still sliced off:
    that keeps the layout. Dilated widths are left to `fit_windows`."""
    axis = _KERNEL_WIDTH_AXIS.get(op)
    if axis is None or attrs["dilation"][1] != 1:
        return w, list(window)
    width = ctx.type_of(x).shape[2]
    _, _, pad_left, pad_right = attrs["pad"]
    taps = (width + pad_left + pad_right - window[1]) % attrs["stride"][1] - pad_right
    if taps <= 0 or taps >= width:
        return w, list(window)
    padding = [(0, 0)] * w.ndim
    padding[axis] = (0, taps)
    return np.pad(w, padding, constant_values=weight_zp), [window[0], window[1] + taps]


def _subsample_first(ctx: LoweringContext, x: Value, xq: QInfo, attrs: dict) -> tuple[Value, dict]:
    """A strided 1x1 convolution of int8 data whose windows do not tile the width (ResNet's stride-2
    1x1 convolutions on even sizes) as a subsample of the input, then a stride-1 convolution, where the
    --target preset asks for it: the subsample is a DEPTHWISE_CONV2D of weight 1 at the window's
    first tap (zero points 0: the accumulator is the stored integer) and a RESCALE by 1 (multiplier
    2**30, shift 30: exact), so it computes the very integers it reads. Its windows tile as the
    convolution's would (`_widen_rather_than_trim`, `fit_windows`), and the same subsample of the
    same input merges (cse) when several convolutions read it. Returns the convolution's input and
    attributes (unchanged elsewhere)."""
    stride = attrs["stride"]
    if stride == [1, 1] or any(attrs["pad"]) or xq.dtype != "i8":
        return x, attrs
    channels = ctx.type_of(x).shape[3]
    one_hot = np.ones((1, 1, channels, 1), np.int8)
    sub_attrs = {"stride": list(stride), "pad": [0, 0, 0, 0], "dilation": [1, 1]}
    one_hot, window = _widen_rather_than_trim(ctx, "tosa.depthwise_conv2d", x, one_hot, 0, [1, 1], sub_attrs)
    if window == [1, 1] or choose(ctx, "strided_pointwise_conv_untiled") != "subsample_first":
        return x, attrs
    x, sub_attrs["pad"], _ = fit_windows(ctx, x, window, stride, sub_attrs["pad"])
    operands = [x, ctx.const(one_hot, "i8"), ctx.const(np.zeros(channels, np.int64), "i32"), ctx.zero_point("i8"),
                ctx.zero_point("i8")]
    picked = ctx.op("tosa.depthwise_conv2d", operands, {**sub_attrs, "acc_type": "i32"})
    return rescale(ctx, picked, 1.0, "i8"), {**attrs, "stride": [1, 1]}


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
    w, wq = _weights(ctx)
    o, kh, kw, per_group = w.shape
    groups = int(ctx.attrs["groups"])
    acc_scales = xq.scale * _out_channel_scales(wq, o)
    bias = _bias_in_accumulator(ctx, acc_scales)
    out_scales = acc_scales / yq.scale
    attrs = _window_attrs(ctx)
    window = _windows((kh, kw), attrs["dilation"])
    x = ctx.operands[0]
    if groups == 1:
        if window == [1, 1]:
            x, attrs = _subsample_first(ctx, x, xq, attrs)
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
    w, wq = _weights(ctx)
    kh, kw, c, m = w.shape
    if wq.axis is None or len(wq.scales) == 1:
        weight_scales = _out_channel_scales(wq, c * m)
    elif wq.axis == 2:
        weight_scales = _out_channel_scales(wq, c * m, repeat=m)
    else:
        weight_scales = _out_channel_scales(wq, c * m, tile=c)
    acc_scales = xq.scale * weight_scales
    bias = _bias_in_accumulator(ctx, acc_scales)
    attrs = _window_attrs(ctx)
    # the accumulator bound sums over the window of each (c, m) output channel
    return quantized_convolution(ctx, "tosa.depthwise_conv2d", ctx.operands[0], xq, w, wq, bias,
                                 acc_scales / yq.scale, yq, (0, 1), attrs, _windows((kh, kw), attrs["dilation"]))


@rule("nn.conv3d", quantized=True, checks=CONVOLUTION_CHECKS)
def conv3d(ctx: LoweringContext) -> Value:
    xq, yq = _conv_quants(ctx)
    w, wq = _weights(ctx)
    o, kd, kh, kw, _ = w.shape
    acc_scales = xq.scale * _out_channel_scales(wq, o)
    bias = _bias_in_accumulator(ctx, acc_scales)
    attrs = _window_attrs(ctx)
    return quantized_convolution(ctx, "tosa.conv3d", ctx.operands[0], xq, w, wq, bias, acc_scales / yq.scale, yq,
                                 (1, 2, 3, 4), attrs, _windows((kd, kh, kw), attrs["dilation"]))


@rule("nn.transpose_conv2d", quantized=True, checks=CONVOLUTION_CHECKS)
def transpose_conv2d(ctx: LoweringContext) -> Value:
    xq, yq = _conv_quants(ctx)
    w, wq = _weights(ctx)
    o, kh, kw, _ = w.shape
    acc_scales = xq.scale * _out_channel_scales(wq, o)
    bias = _bias_in_accumulator(ctx, acc_scales)
    out_pad = list(ctx.attrs["out_pad"])
    # TOSA needs out_pad > -kernel: crop deeper with a slice of the result
    tosa_pad = [max(p, 1 - k) for p, k in zip(out_pad, (kh, kh, kw, kw))]
    attrs = {"stride": list(ctx.attrs["stride"]), "out_pad": tosa_pad}
    if xq.dtype == "i8" and choose(ctx, "transpose_conv") == "upsample_then_conv2d":
        y = _upsample_then_convolve(ctx, xq, w, wq, bias, acc_scales / yq.scale, yq, attrs["stride"], tosa_pad)
    else:
        y = quantized_convolution(ctx, "tosa.transpose_conv2d", ctx.operands[0], xq, w, wq, bias,
                                  acc_scales / yq.scale, yq, (1, 2, 3), attrs)
    crop_top, crop_left = tosa_pad[0] - out_pad[0], tosa_pad[2] - out_pad[2]
    return tosa_slice(ctx, y, (0, crop_top, crop_left, 0), ctx.out_types[0].shape)


def _upsample_then_convolve(ctx: LoweringContext, xq: QInfo, w: np.ndarray, wq: QInfo, bias: np.ndarray,
                            out_scales: np.ndarray, yq: QInfo, stride: list[int], out_pad: list[int]) -> Value:
    """A transposed convolution as the stride-1 CONV2D of its input spread out by the stride, where the
    --target preset asks for it: Vela fuses no RESCALE but a unit one into a TRANSPOSE_CONV2D (its
    quantization check knows no such hardware op), so the requantization ran alone (U55: 65,536 cycles
    for 16 x 16 x 5 outputs); a CONV2D takes it. The spreading is a TRANSPOSE_CONV2D of identity 1x1
    weights with the input zero point: (x - zp) on the stride's grid, 0 between, and a RESCALE by 1
    adding zp back, so the gaps hold the zero point (real 0) and the grid the very inputs. The
    transposed convolution's sum over input rows i and taps k with o = s i + k + out_pad_top is then
    the correlation of the spread rows with the flipped kernel, padded by K - 1 + out_pad at each end
    (0 or more: the rule keeps out_pad > -K). Padding adds nothing, as the zero point does."""
    x = _spread(ctx, ctx.operands[0], stride, xq.zero_point)
    _, kh, kw, _ = w.shape
    pads = [k - 1 + p for k, p in zip((kh, kh, kw, kw), out_pad)]
    attrs = {"stride": [1, 1], "pad": pads, "dilation": [1, 1]}
    return quantized_convolution(ctx, "tosa.conv2d", x, xq, np.ascontiguousarray(w[:, ::-1, ::-1, :]), wq, bias,
                                 out_scales, yq, (1, 2, 3), attrs, [kh, kw])


def _spread(ctx: LoweringContext, x: Value, stride: Sequence[int], zero_point: int) -> Value:
    """int8 x spread out by the stride: x[i, j] at (s_y i, s_x j), `zero_point` between (output
    (h - 1) s_y + 1 rows). A TRANSPOSE_CONV2D of identity 1x1 weights with that input zero point gives
    x - zp on the grid and 0 between; a RESCALE by 1 (2**30 >> 30: exact) adds zp back, and Vela fuses
    such a unit RESCALE into the TRANSPOSE_CONV2D."""
    if list(stride) == [1, 1]:
        return x
    channels = ctx.type_of(x).shape[3]
    identity = np.zeros((channels, 1, 1, channels), np.int8)
    identity[np.arange(channels), 0, 0, np.arange(channels)] = 1
    operands = [x, ctx.const(identity, "i8"), ctx.const(np.zeros(channels, np.int64), "i32"),
                ctx.zero_point("i8", zero_point), ctx.zero_point("i8")]
    spread = ctx.op("tosa.transpose_conv2d", operands, {"stride": list(stride), "out_pad": [0, 0, 0, 0],
                                                        "acc_type": "i32"})
    return rescale(ctx, spread, 1.0, "i8", out_zp=zero_point)


@rule("nn.fully_connected", quantized=True, checks=CONVOLUTION_CHECKS)
def fully_connected(ctx: LoweringContext) -> Value:
    """x [..., K] times W^T [K, O]: a 1x1 conv2d of [rows, 1, 1, K] with [O, 1, 1, K] weights."""
    xq, yq = _conv_quants(ctx)
    w, wq = _weights(ctx)
    o, k = w.shape
    acc_scales = xq.scale * _out_channel_scales(wq, o)
    bias = _bias_in_accumulator(ctx, acc_scales)
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
def matmul(ctx: LoweringContext) -> Value:
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


# ------------------------------------------------------------------------------ pooling and resize
@rule("nn.avg_pool2d", quantized=True, checks=(static_windows,))
def avg_pool2d(ctx: LoweringContext) -> Value:
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
def avg_pool3d(ctx: LoweringContext) -> Value:
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


@rule("nn.resize", quantized=True)
def resize(ctx: LoweringContext) -> Value:
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
    bits = (sy.n * sx.n).bit_length() - 1
    resizes = sy.fits_resize() and sx.fits_resize()
    upscale = dtype == "i8" and _upscale_factor(sy) * _upscale_factor(sx) <= _MAX_UPSCALE_WEIGHT
    if upscale and (not resizes or choose(ctx, "resize_bilinear_integer_upscale") == "depthwise_conv2d"):
        return _upscale(ctx, x, sy.n, sx.n)
    if resizes:
        if dtype == "i16":
            return _rounded_i48_sum(ctx, x, sy, sx, bits)
        acc = _bilinear_sum(ctx, x, sy, sx, "i32")
    elif q_in(ctx).span << bits < 1 << 31:
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


_MAX_UPSCALE_WEIGHT = 64  # the centre weight k_y * k_x of `_upscale` in int8 (two 8x axes)


def _upscale_factor(s: Sampling) -> int:
    """k when the axis is an exact integer upscale with aligned corners (out - 1 = k (size - 1): TFLite's
    align_corners by an integer factor, k = 1 for an axis left alone), else a value past any limit."""
    exact = s.d == 1 and s.offset == 0 and s.size > 1 and s.border == 0
    return s.n if exact else _MAX_UPSCALE_WEIGHT + 1


def _upscale(ctx: LoweringContext, x: Value, ky: int, kx: int) -> Value:
    """The bilinear resize of an exact integer upscale (`_upscale_factor`) of int8 data: output o reads
    input o // k and the next with weights k - o % k and o % k, which is the input spread by k
    (`_spread`, zeros between) under a stride-1 DEPTHWISE_CONV2D of the triangle k - |t|
    (t = -(k-1)..k-1) on each axis, padded by k - 1: the integer sum in units of k_y k_x that RESIZE
    gives (Vela maps no such RESIZE on Ethos-U55/U65), stored integers weighed, zero points 0. One
    RESCALE divides by k_y k_x rounding halves away from zero, TFLite's rounding (`_half_away_divide`),
    and Vela fuses it into the DEPTHWISE_CONV2D."""
    channels = ctx.type_of(x).shape[-1]
    triangle = np.outer(*[np.array([k - abs(t) for t in range(1 - k, k)], np.int64) for k in (ky, kx)])
    weights = np.repeat(triangle[:, :, None, None], channels, axis=2).astype(np.int8)
    attrs = {"stride": [1, 1], "pad": [ky - 1, ky - 1, kx - 1, kx - 1], "dilation": [1, 1], "acc_type": "i32"}
    operands = [_spread(ctx, x, (ky, kx), 0), ctx.const(weights, "i8"), ctx.const(np.zeros(channels, np.int64), "i32"),
                ctx.zero_point("i8"), ctx.zero_point("i8")]
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
