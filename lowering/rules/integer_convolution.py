"""The quantized convolution core the quantized rules share: the support conditions of a quantized
convolution, its constant operands in accumulator units, and `quantized_convolution`.

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
- windows that do not tile the padded width grow taps of weight zero point rather than slicing the
  input (`widen_rather_than_trim`).

The quantized convolution forms a `--target ethos-u*` preset asks for (lowering/npu_target.py:
`choose`), because Vela maps them better than the plain TOSA convolution: a strided 1x1 convolution
as a subsample then stride 1 (`subsample_first`), a transposed convolution as a stride-1 CONV2D of
its input spread out by the stride (`upsample_then_convolve`, `spread_by_stride`; the bilinear upscale of
resize.py's quantized bilinear spreads its input the same way).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
import math

import numpy as np

from nn2tosa.dialects.tosa_builder import TosaBuilder
from nn2tosa.ir import Value

from ..context import LoweringContext, constant_value
from ..fixed_point.carrier import QInfo
from ..fixed_point.rescale import narrow, rescale
from ..npu_target import choose
from .quantization import q_in
from .windows import drop_extra, fit_windows


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
CONVOLUTION_CORE = (convolution_activations, convolution_weight_type, int16_accumulator_fits)  # for `quantized_convolution`
CONVOLUTION_CHECKS = (convolution_quantized_both_ends, constant_quantized_weights, one_weight_zero_point,
                      constant_bias, bias_fits_accumulator, *CONVOLUTION_CORE)


# The TOSA convolution a convolution helper builds, as the typed builder's method, unbound (TosaBuilder.conv2d,
# depthwise_conv2d, conv3d or transpose_conv2d: mypy checks the name where it is written): they share operands
# (input, weight, bias and two zero points), so `op(ctx.tosa, x, w, bias, x_zp, w_zp, **attributes)` builds any.
ConvolutionOp = Callable[..., Value]


# ------------------------------------------------------------------------------ operands
def constant_weights(ctx: LoweringContext) -> tuple[np.ndarray, QInfo]:
    """The op's constant quantized "weight" operand and its quantization."""
    w = constant_value(ctx, ctx.operand("weight"))
    wq = q_in(ctx, "weight")
    ctx.check(constant_quantized_weights, w, wq)
    assert w is not None and wq is not None  # (the check above)
    ctx.check(one_weight_zero_point, wq)
    return w, wq


def out_channel_scales(wq: QInfo, channels: int, repeat: int = 1, tile: int = 1) -> np.ndarray:
    """Weight scale of every output channel (per-axis scales repeated/tiled for depthwise)."""
    scales = np.asarray(wq.scales, np.float64)
    if scales.size == 1:
        return np.full(channels, scales[0])
    scales = np.tile(np.repeat(scales, repeat), tile)
    if scales.size != channels:
        raise ValueError(f"{scales.size} weight scales for {channels} output channels")
    return scales


def bias_in_accumulator(ctx: LoweringContext, acc_scales: np.ndarray) -> np.ndarray:
    """The bias as integers of the accumulator (scale s_x * s_w[c]), int64; zeros without one."""
    channels = acc_scales.size
    bias = ctx.optional_operand("bias")
    if bias is None:
        return np.zeros(channels, np.int64)
    b = constant_value(ctx, bias)
    bq = q_in(ctx, "bias")
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
def quantized_convolution(ctx: LoweringContext, op: ConvolutionOp, x: Value, xq: QInfo, w: np.ndarray, wq: QInfo,
                          bias: np.ndarray, out_scales: np.ndarray, yq: QInfo, channel_axis_sum: tuple[int, ...],
                          attrs: dict, window: Sequence[int] | None = None, rounding: str | None = None) -> Value:
    """TOSA convolution `op` (a TosaBuilder method) of carried x with constant weights w (carried, zero point in wq), bias
    in accumulator units, then RESCALE by out_scales (per output channel) to yq (`rounding`: see narrow).
    `channel_axis_sum`: the weight axes summed per output channel (for the accumulator bound)."""
    ctx.check(convolution_activations, xq)
    attrs = dict(attrs)
    extra: list[int] = []
    if window is not None:
        w, window = widen_rather_than_trim(ctx, op, x, w, wq.zero_points[0], window, attrs)
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
        y = op(ctx.tosa, x, ctx.const(weights, "i8"), ctx.const(bias_values, acc_type),
               ctx.zero_point(xq.dtype, xq.zero_point), ctx.zero_point("i8", weight_zp), **attrs)
        return drop_extra(ctx, y, extra)

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
    return narrow(ctx, ctx.tosa.add(high, low), out_scales * 2.0 ** k, yq, max_abs=None if k else bound,
                  rounding=rounding)


# The weight axis of the kernel width, per TOSA convolution whose width may grow
_KERNEL_WIDTH_AXIS: dict[ConvolutionOp, int] = {TosaBuilder.conv2d: 2, TosaBuilder.depthwise_conv2d: 1}


def widen_rather_than_trim(ctx: LoweringContext, op: ConvolutionOp, x: Value, w: np.ndarray, weight_zp: int,
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


def subsample_first(ctx: LoweringContext, x: Value, xq: QInfo, attrs: dict) -> tuple[Value, dict]:
    """A strided 1x1 convolution of int8 data whose windows do not tile the width (ResNet's stride-2
    1x1 convolutions on even sizes) as a subsample of the input, then a stride-1 convolution, where the
    --target preset asks for it: the subsample is a DEPTHWISE_CONV2D of weight 1 at the window's
    first tap (zero points 0: the accumulator is the stored integer) and a RESCALE by 1 (multiplier
    2**30, shift 30: exact), so it computes the very integers it reads. Its windows tile as the
    convolution's would (`widen_rather_than_trim`, `fit_windows`), and the same subsample of the
    same input merges (cse) when several convolutions read it. Returns the convolution's input and
    attributes (unchanged elsewhere)."""
    stride = attrs["stride"]
    if stride == [1, 1] or any(attrs["pad"]) or xq.dtype != "i8":
        return x, attrs
    channels = ctx.type_of(x).shape[3]
    one_hot = np.ones((1, 1, channels, 1), np.int8)
    sub_attrs = {"stride": list(stride), "pad": [0, 0, 0, 0], "dilation": [1, 1]}
    one_hot, window = widen_rather_than_trim(ctx, TosaBuilder.depthwise_conv2d, x, one_hot, 0, [1, 1], sub_attrs)
    if window == [1, 1] or choose(ctx, "strided_pointwise_conv_untiled") != "subsample_first":
        return x, attrs
    x, sub_attrs["pad"], _ = fit_windows(ctx, x, window, stride, sub_attrs["pad"])
    picked = ctx.tosa.depthwise_conv2d(x, ctx.const(one_hot, "i8"), ctx.const(np.zeros(channels, np.int64), "i32"),
                                       ctx.zero_point("i8"), ctx.zero_point("i8"), pad=sub_attrs["pad"],
                                       stride=sub_attrs["stride"], dilation=sub_attrs["dilation"], acc_type="i32")
    return rescale(ctx, picked, 1.0, "i8"), {**attrs, "stride": [1, 1]}


def upsample_then_convolve(ctx: LoweringContext, xq: QInfo, w: np.ndarray, wq: QInfo, bias: np.ndarray,
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
    x = spread_by_stride(ctx, ctx.operand("input"), stride, xq.zero_point)
    _, kh, kw, _ = w.shape
    pads = [k - 1 + p for k, p in zip((kh, kh, kw, kw), out_pad)]
    attrs = {"stride": [1, 1], "pad": pads, "dilation": [1, 1]}
    return quantized_convolution(ctx, TosaBuilder.conv2d, x, xq, np.ascontiguousarray(w[:, ::-1, ::-1, :]), wq, bias,
                                 out_scales, yq, (1, 2, 3), attrs, [kh, kw])


def spread_by_stride(ctx: LoweringContext, x: Value, stride: Sequence[int], zero_point: int) -> Value:
    """int8 x spread out by the stride: x[i, j] at (s_y i, s_x j), `zero_point` between (output
    (h - 1) s_y + 1 rows). A TRANSPOSE_CONV2D of identity 1x1 weights with that input zero point gives
    x - zp on the grid and 0 between; a RESCALE by 1 (2**30 >> 30: exact) adds zp back, and Vela fuses
    such a unit RESCALE into the TRANSPOSE_CONV2D."""
    if list(stride) == [1, 1]:
        return x
    channels = ctx.type_of(x).shape[3]
    identity = np.zeros((channels, 1, 1, channels), np.int8)
    identity[np.arange(channels), 0, 0, np.arange(channels)] = 1
    spread = ctx.tosa.transpose_conv2d(x, ctx.const(identity, "i8"), ctx.const(np.zeros(channels, np.int64), "i32"),
                                       ctx.zero_point("i8", zero_point), ctx.zero_point("i8"), stride=list(stride),
                                       out_pad=[0, 0, 0, 0], acc_type="i32")
    return rescale(ctx, spread, 1.0, "i8", out_zp=zero_point)
