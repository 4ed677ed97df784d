"""Transposed convolutions, quantized (the float rule: convolution.py): one TRANSPOSE_CONV2D and its RESCALE,
or under a `--target ethos-u*` preset the spread form (integer_convolution.py) or the phase form below.

The phase form: a quantized transposed convolution as stride-1 convolutions of its input, one output channel per
(phase, channel), where a `--target ethos-u*` preset asks for it (lowering/npu_target.py:
`transpose_conv` -> `phase_conv2d`).

Output o of a transposed convolution of stride s along one axis (o = s i + k + pad) reads only the
taps k = o - pad (mod s): output o = s q + r of phase r is a correlation of the input at rows q + u
with the taps of that phase, the same for every q. Each row phase is one CONV2D of the input itself
(no spread input, no multiplications by the zero points between), its output channels the column
phases times the channels, so that a CONCAT of the row phases along the width holds
(q_y, r_y, q_x, r_x, c) in memory order: the output, after a RESHAPE. Vela fuses the requantizing
RESCALE into each CONV2D, as into the stride-1 CONV2D of the spread form (integer_convolution.upsample_then_convolve), and
writes each CONV2D straight into its part of the CONCAT (a CONCAT along the rows of reshaped outputs
costs a memory copy per phase), without the spread's own operation: q8_transpose_conv 2,689 -> 1,280
cycles on Ethos-U55, against 1,920 for the `.tflite`'s convolution of its zero-upscaled input.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nn2tosa.dialects.tosa_builder import TosaBuilder
from nn2tosa.ir import Value

from ..context import LoweringContext
from ..fixed_point.carrier import QInfo
from ..registry import rule
from .convolution import convolution_quantizations
from .integer_convolution import (CONVOLUTION_CHECKS, bias_in_accumulator, constant_weights, out_channel_scales,
                                  quantized_convolution, upsample_then_convolve)
from .quantization import q_in
from .shape import concat, tosa_slice


@dataclass(frozen=True)
class AxisPhases:
    """One axis of a transposed convolution split into phases: output s q + r reads input q + u
    through tap s (d[r] - u) + t[r] for u in [d[r] - taps[r] + 1, d[r]]; `outputs` positions q per
    phase."""
    stride: int
    d: tuple[int, ...]
    t: tuple[int, ...]
    taps: tuple[int, ...]
    outputs: int

    def span(self, phases: range) -> tuple[int, int]:
        """(lowest offset u, number of taps) of the correlation serving `phases`."""
        live = [r for r in phases if self.taps[r] > 0]
        first = min(self.d[r] - self.taps[r] + 1 for r in live)
        return first, max(self.d[r] for r in live) - first + 1

    def tap(self, r: int, u: int, kernel: int) -> int | None:
        """The kernel tap phase r reads at offset u, or None."""
        k = self.stride * (self.d[r] - u) + self.t[r]
        return k if 0 <= self.d[r] - u < self.taps[r] and k < kernel else None


def axis_phases(length: int, stride: int, kernel: int, pad_before: int, pad_after: int) -> AxisPhases:
    """The phases of one axis: input `length`, TOSA's out_pad before and after."""
    out = (length - 1) * stride + kernel + pad_before + pad_after
    d, t = zip(*(divmod(r - pad_before, stride) for r in range(stride)))
    taps = tuple(max(0, -(-(kernel - tr) // stride)) for tr in t)
    return AxisPhases(stride, tuple(d), tuple(t), taps, -(-out // stride))


def phase_pads(axis: AxisPhases, phases: range, length: int) -> tuple[int, int]:
    """The pads before and after an input of `length` that the correlation serving `phases` reads
    (negative: it reads less than the whole input)."""
    first, size = axis.span(phases)
    return -first, axis.outputs - 1 + first + size - 1 - (length - 1)


def phases_fit(x_shape: tuple[int, ...], kernel: tuple[int, int], stride: list[int], out_pad: list[int]) -> bool:
    """Whether the phases tile the output exactly (each axis a multiple of its stride: else the output
    is a slice of the phases', which Vela copies, and the spread form costs less: 520 against 606
    cycles on Ethos-U55 for perlayer_23.08/transposeconv2d_nhwc_k3s2_pad1_bias_qs8) and every row
    phase's correlation pads the input by 0 or more at both ends (deeper crops would need a slice of
    the input)."""
    ys = axis_phases(x_shape[1], stride[0], kernel[0], out_pad[0], out_pad[1])
    xs = axis_phases(x_shape[2], stride[1], kernel[1], out_pad[2], out_pad[3])
    out = [(length - 1) * s + k + before + after
           for length, s, k, before, after in zip(x_shape[1:3], stride, kernel, out_pad[::2], out_pad[1::2])]
    if not all(ys.taps) or not all(xs.taps) or out[0] % stride[0] or out[1] % stride[1]:
        return False
    pads = [phase_pads(ys, range(r, r + 1), x_shape[1]) for r in range(ys.stride)]
    pads.append(phase_pads(xs, range(xs.stride), x_shape[2]))
    return all(p >= 0 for pair in pads for p in pair)


def phase_kernels(x_shape: tuple[int, ...], w: np.ndarray, weight_zp: int, stride: list[int],
                  out_pad: list[int]) -> list[tuple[np.ndarray, list[int]]]:
    """Per row phase of the transposed convolution of weights w (OHWI, TOSA's out_pad, `phases_fit`):
    the stride-1 CONV2D weights ((column phase, channel) as output channels; `weight_zp` where a
    phase reads no tap) and its pads."""
    o, kh, kw, _ = w.shape
    ys = axis_phases(x_shape[1], stride[0], kh, out_pad[0], out_pad[1])
    xs = axis_phases(x_shape[2], stride[1], kw, out_pad[2], out_pad[3])
    x_first, x_size = xs.span(range(xs.stride))
    left, right = phase_pads(xs, range(xs.stride), x_shape[2])
    kernels = []
    for ry in range(ys.stride):
        y_first, y_size = ys.span(range(ry, ry + 1))
        top, bottom = phase_pads(ys, range(ry, ry + 1), x_shape[1])
        weights = np.full((xs.stride, o, y_size, x_size, w.shape[3]), weight_zp, w.dtype)
        for rx in range(xs.stride):
            for i in range(y_size):
                ky = ys.tap(ry, y_first + i, kh)
                for j in range(x_size):
                    kx = xs.tap(rx, x_first + j, kw)
                    if ky is not None and kx is not None:
                        weights[rx, :, i, j, :] = w[:, ky, kx, :]
        kernels.append((weights.reshape(xs.stride * o, y_size, x_size, -1), [top, bottom, left, right]))
    return kernels


def phase_convolutions(ctx: LoweringContext, xq: QInfo, w: np.ndarray, wq: QInfo, bias: np.ndarray,
                       out_scales: np.ndarray, yq: QInfo, stride: list[int], out_pad: list[int]) -> Value:
    """The transposed convolution (TOSA's out_pad, `phases_fit`) as one CONV2D per row phase
    (`phase_kernels`), each requantized, side by side in a CONCAT along the width and reshaped to the
    transposed convolution's shape."""
    x = ctx.operand("input")
    rows = []
    for weights, pads in phase_kernels(ctx.type_of(x).shape, w, wq.zero_points[0], stride, out_pad):
        attrs = {"stride": [1, 1], "pad": pads, "dilation": [1, 1]}
        copies = weights.shape[0] // w.shape[0]
        rows.append(quantized_convolution(ctx, TosaBuilder.conv2d, x, xq, weights, wq, np.tile(bias, copies),
                                          np.tile(out_scales, copies), yq, (1, 2, 3), attrs, list(weights.shape[1:3])))
    n, q_y, q_x, _ = ctx.type_of(rows[0]).shape
    return ctx.reshape(concat(ctx, rows, 2), (n, q_y * stride[0], q_x * stride[1], w.shape[0]))


@dataclass(frozen=True)
class _Transposed:
    """What every form of a quantized transposed convolution computes from: the quantizations, the
    constant weights and bias in accumulator units, the output scales and TOSA's padding."""

    xq: QInfo
    yq: QInfo
    w: np.ndarray
    wq: QInfo
    bias: np.ndarray
    out_scales: np.ndarray
    stride: list[int]
    tosa_pad: list[int]
    out_pad: list[int]

    @staticmethod
    def of(ctx: LoweringContext) -> _Transposed:
        xq, yq = convolution_quantizations(ctx)
        w, wq = constant_weights(ctx)
        o, kh, kw, _ = w.shape
        acc_scales = xq.scale * out_channel_scales(wq, o)
        bias = bias_in_accumulator(ctx, acc_scales)
        out_pad = list(ctx.attrs["out_pad"])
        # TOSA needs out_pad > -kernel: crop deeper with a slice of the result
        tosa_pad = [max(p, 1 - k) for p, k in zip(out_pad, (kh, kh, kw, kw))]
        return _Transposed(xq, yq, w, wq, bias, acc_scales / yq.scale, list(ctx.attrs["stride"]), tosa_pad, out_pad)

    def cropped(self, ctx: LoweringContext, y: Value) -> Value:
        crop_top, crop_left = self.tosa_pad[0] - self.out_pad[0], self.tosa_pad[2] - self.out_pad[2]
        return tosa_slice(ctx, y, (0, crop_top, crop_left, 0), ctx.out_types[0].shape)


def _int8_input(ctx: LoweringContext) -> bool:
    xq = q_in(ctx)
    return xq is not None and xq.dtype == "i8"


def _spread(ctx: LoweringContext, t: _Transposed) -> Value:
    return t.cropped(ctx, upsample_then_convolve(ctx, t.xq, t.w, t.wq, t.bias, t.out_scales, t.yq, t.stride,
                                                 t.tosa_pad))


@rule("nn.transpose_conv2d", quantized=True, checks=CONVOLUTION_CHECKS, benefit=20,
      choice=("transpose_conv", "phase_conv2d"), when=_int8_input)
def transpose_conv2d_phases(ctx: LoweringContext) -> Value:
    """Stride-1 CONV2Ds of the input per row phase (below), or the spread form where they do not tile."""
    t = _Transposed.of(ctx)
    kh, kw = t.w.shape[1:3]
    if not phases_fit(ctx.type_of(ctx.operand("input")).shape, (kh, kw), t.stride, t.tosa_pad):
        return _spread(ctx, t)
    return t.cropped(ctx, phase_convolutions(ctx, t.xq, t.w, t.wq, t.bias, t.out_scales, t.yq, t.stride, t.tosa_pad))


@rule("nn.transpose_conv2d", quantized=True, checks=CONVOLUTION_CHECKS, benefit=10,
      choice=("transpose_conv", "upsample_then_conv2d"), when=_int8_input)
def transpose_conv2d_spread(ctx: LoweringContext) -> Value:
    """A stride-1 CONV2D of the input spread by the stride (integer_convolution.upsample_then_convolve)."""
    return _spread(ctx, _Transposed.of(ctx))


@rule("nn.transpose_conv2d", quantized=True, checks=CONVOLUTION_CHECKS)
def quantized_transpose_conv2d(ctx: LoweringContext) -> Value:
    """One TRANSPOSE_CONV2D and its RESCALE."""
    t = _Transposed.of(ctx)
    attrs = {"stride": t.stride, "out_pad": t.tosa_pad}
    return t.cropped(ctx, quantized_convolution(ctx, TosaBuilder.transpose_conv2d, ctx.operand("input"), t.xq, t.w, t.wq,
                                                t.bias, t.out_scales, t.yq, (1, 2, 3), attrs))
