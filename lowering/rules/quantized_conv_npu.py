"""The quantized convolution forms a `--target ethos-u*` preset asks for (lowering/npu_target.py:
`choose`), because Vela maps them better than the plain TOSA convolution: a strided 1x1 convolution
as a subsample then stride 1 (`subsample_first`), a transposed convolution as a stride-1 CONV2D of
its input spread out by the stride (`upsample_then_convolve`, `spread_by_stride`; the bilinear upscale of
resize.py's quantized bilinear spreads its input the same way).
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from nn2tosa.ir import Value

from ..context import LoweringContext
from ..npu_target import choose
from ..fixed_point.carrier import QInfo
from ..fixed_point.rescale import rescale
from .windows import fit_windows
from .quantized_convolution import quantized_convolution, widen_rather_than_trim


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
    one_hot, window = widen_rather_than_trim(ctx, "tosa.depthwise_conv2d", x, one_hot, 0, [1, 1], sub_attrs)
    if window == [1, 1] or choose(ctx, "strided_pointwise_conv_untiled") != "subsample_first":
        return x, attrs
    x, sub_attrs["pad"], _ = fit_windows(ctx, x, window, stride, sub_attrs["pad"])
    operands = [x, ctx.const(one_hot, "i8"), ctx.const(np.zeros(channels, np.int64), "i32"), ctx.zero_point("i8"),
                ctx.zero_point("i8")]
    picked = ctx.op("tosa.depthwise_conv2d", operands, {**sub_attrs, "acc_type": "i32"})
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
    x = spread_by_stride(ctx, ctx.operands[0], stride, xq.zero_point)
    _, kh, kw, _ = w.shape
    pads = [k - 1 + p for k, p in zip((kh, kh, kw, kw), out_pad)]
    attrs = {"stride": [1, 1], "pad": pads, "dilation": [1, 1]}
    return quantized_convolution(ctx, "tosa.conv2d", x, xq, np.ascontiguousarray(w[:, ::-1, ::-1, :]), wq, bias,
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
    operands = [x, ctx.const(identity, "i8"), ctx.const(np.zeros(channels, np.int64), "i32"),
                ctx.zero_point("i8", zero_point), ctx.zero_point("i8")]
    spread = ctx.op("tosa.transpose_conv2d", operands, {"stride": list(stride), "out_pad": [0, 0, 0, 0],
                                                        "acc_type": "i32"})
    return rescale(ctx, spread, 1.0, "i8", out_zp=zero_point)
