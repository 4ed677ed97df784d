"""Sliding windows as TOSA takes them, shared by convolutions, pooling and resize: `fit_windows` makes every
window extent a whole number of strides (TOSA's exact output sizes), `drop_extra` takes off the output
positions that made TOSA compute, `slice_of` slices a value (a constant in place).
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from nn2tosa.ir import Value

from ..context import LoweringContext, constant_value
from .shape import tosa_slice


def slice_of(ctx: LoweringContext, x: Value, begin: Sequence[int], size: Sequence[int]) -> Value:
    """x[begin : begin + size] in every dimension; constants (weights, biases) are sliced here."""
    array = constant_value(ctx, x)
    if array is None or tuple(size) == ctx.type_of(x).shape:
        return tosa_slice(ctx, x, begin, size)
    return ctx.const(np.ascontiguousarray(array[tuple(slice(b, b + s) for b, s in zip(begin, size))]),
                     ctx.type_of(x).dtype)


def fit_windows(ctx: LoweringContext, x: Value, windows: Sequence[int], strides: Sequence[int],
                pads: Sequence[int]) -> tuple[Value, list[int], list[int]]:
    """x (spatial dimensions 1..len(windows)) and pads such that every window extent fits a whole
    number of strides, as TOSA requires: the (size + pads - window) % stride rows past the last window
    are taken off the trailing padding first, then off the input.

    When no window reaches the input along an axis, dropping rows could leave no input at all; the
    trailing padding then grows to the next whole stride instead, and TOSA computes one output
    position more than nn. Returns x, pads and those extra positions per axis (see `drop_extra`)."""
    t = ctx.type_of(x)
    pads = list(pads)
    size = list(t.shape)
    extra_outputs = [0] * len(windows)
    for i, (window, stride) in enumerate(zip(windows, strides)):
        extra = (t.shape[1 + i] + pads[2 * i] + pads[2 * i + 1] - window) % stride
        from_pad = min(extra, pads[2 * i + 1])
        if extra - from_pad >= t.shape[1 + i]:
            pads[2 * i + 1] += stride - extra
            extra_outputs[i] = 1
            continue
        pads[2 * i + 1] -= from_pad
        size[1 + i] -= extra - from_pad
    return slice_of(ctx, x, [0] * t.rank, size), pads, extra_outputs


def drop_extra(ctx: LoweringContext, y: Value, extra_outputs: Sequence[int]) -> Value:
    """y without the extra trailing output positions `fit_windows` made TOSA compute."""
    shape = list(ctx.type_of(y).shape)
    for i, extra in enumerate(extra_outputs):
        shape[1 + i] -= extra
    return slice_of(ctx, y, [0] * len(shape), shape)
