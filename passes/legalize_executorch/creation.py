"""Operators that make tensors from scalars: scalar_tensor, full, zeros, ones, arange. Their values are
known when converting: each becomes an nn.constant of the out tensor's type (ATen's conversion of the
scalar to that type: a float written to an integer tensor truncates toward zero)."""
from __future__ import annotations

import numpy as np

from nn2tosa.ir import Value

from .core import Call, rule


def _filled(c: Call, value: float | int | bool) -> Value:
    c.check_computed(c.out.shape, "result")
    t = c.out
    if t.numpy_dtype.kind in "iu" and isinstance(value, float):
        value = int(np.trunc(value)) if np.isfinite(value) else 0
    return c.constant(np.full(t.shape, value), t.dtype)


@rule("aten::scalar_tensor")
def scalar_tensor(c: Call) -> Value:
    return _filled(c, c.scalar_arg(0))


@rule("aten::full")
def full(c: Call) -> Value:
    """full(size, fill_value)."""
    return _filled(c, c.scalar_arg(1))


@rule("aten::full_like")
def full_like(c: Call) -> Value:
    """full_like(self, fill_value)."""
    return _filled(c, c.scalar_arg(1))


@rule("aten::zeros", "aten::zeros_like", "aten::empty", "aten::empty_like", "aten::new_zeros")
def zeros(c: Call) -> Value:
    """zeros; empty's contents are unspecified, zeros are as good as any."""
    return _filled(c, 0)


@rule("aten::ones", "aten::ones_like", "aten::new_ones")
def ones(c: Call) -> Value:
    return _filled(c, 1)


@rule("aten::arange")
def arange(c: Call) -> Value:
    """arange(end) or arange(start, end, step): start + step * i for the out tensor's length."""
    scalars = [a for a in range(len(c.arguments)) if c.arguments[a]["kind"] in ("Int", "Double")]
    start: float | int
    step: float | int
    if len(scalars) == 1:
        start, step = 0, 1
    else:
        start = c.scalar_arg(scalars[0])
        step = c.scalar_arg(scalars[2]) if len(scalars) > 2 else 1
    t = c.out
    if t.rank != 1:
        raise ValueError(f"arange into a tensor of rank {t.rank}")
    c.check_computed(t.shape, "result")
    values = start + step * np.arange(t.shape[0], dtype=np.float64 if t.numpy_dtype.kind == "f" else np.int64)
    return c.constant(values, t.dtype)
