"""Canonicalize's power patterns: `nn.pow` by a constant exponent as the cheaper ops it equals.

nn.pow is numpy's x ** y for every x and y, which lowering builds around TOSA POW (defined only for
finite x > 0) with a dozen guards: about 35 TOSA ops, once per RMSNorm (`x.pow(2)`) in an LLM. With
one constant exponent (every element the same, the result typed as x, not quantized):

- y = 1: x itself.
- y = 2 .. 8, integer: products by square-and-multiply (x*x, x*x*x, (x*x)*(x*x), ...), at most
  `MAX_MULTIPLIES` multiplications. Multiplication is defined for every x, so this gives numpy's
  value also where TOSA POW is undefined: negative bases (the sign of an odd power), +-0, +-inf and
  NaN follow IEEE multiplication exactly as IEEE pow. x*x is correctly rounded (what a correctly
  rounded pow returns); higher powers round once per product: relative error under (y - 1) * 2**-24,
  i.e. under y - 1 ulp (tests/passes/test_power.py measures it against numpy). Integer tensors: the same products, which wrap as nn's integers (and the
  integer lowering's repeated squaring) do.
- y = -1: reciprocal (1/x: IEEE pow(x, -1) everywhere, signed zeros and infinities included).
- y = 0.5: sqrt(x) + 0.0 (the addition turns sqrt(-0) = -0 into pow's +0). Where x < 0 TOSA POW is
  undefined; there sqrt gives NaN, as pow does for finite x, but NaN for x = -inf where numpy's pow
  gives +inf.
- y = -0.5: rsqrt(x), equal to pow for every x > 0, +0, +inf and NaN; at x = -0 it gives -inf where
  pow gives +inf (TOSA POW is undefined at x = 0 with y <= 0) and NaN for x = -inf (pow: 0).

Other exponents (3.5, -2, 100, a tensor of several values) stay nn.pow: reciprocals of products
would overflow or underflow where the power does not, and long chains of products lose accuracy.
canonicalize.py adds these patterns to CANONICAL.
"""
from __future__ import annotations

import math

import numpy as np

from nn2tosa.ir import Graph, Value

from .rewrite import PatternSet, constant, new_constant, new_op, replace, result_type, uniform_scalar

POWER = PatternSet("power")

MAX_EXPONENT = 8  # the largest integer exponent written as products
MAX_MULTIPLIES = 4  # x**8 = ((x*x)^2)^2 takes 3; x**7 = x * x^2 * x^4 takes 4


def _exponent(graph: Graph, node: int) -> float | None:
    """The one value of the constant exponent of an nn.pow whose result has its base's type
    (shape included: the exponent broadcasts nothing) and no quantization; else None."""
    x, y = graph.operands(node)
    out = result_type(graph, node)
    if out.quant is not None or graph.type_of(x) != out or graph.tensor_type(y).quant is not None:
        return None
    return uniform_scalar(constant(graph, y))


def _products(graph: Graph, node: int, x: Value, n: int) -> Value:
    """x ** n (n >= 2) by square-and-multiply, as nn.mul ops like `node`."""
    result: Value | None = None
    square = x
    while n:
        if n & 1:
            result = square if result is None else new_op(graph, node, [result, square], {}, "nn.mul")
        n >>= 1
        if n:
            square = new_op(graph, node, [square, square], {}, "nn.mul")
    assert result is not None
    return result


def _multiplies(n: int) -> int:
    return n.bit_length() - 1 + bin(n).count("1") - 1


@POWER.pattern("nn.pow")
def pow_by_constant(graph: Graph, node: int) -> bool:
    y = _exponent(graph, node)
    if y is None:
        return False
    x = graph.operand(node, 0)
    out = result_type(graph, node)
    if y == 1:
        return replace(graph, node, x)
    if math.isfinite(y) and y == int(y) and 2 <= y <= MAX_EXPONENT and _multiplies(int(y)) <= MAX_MULTIPLIES:
        return replace(graph, node, _products(graph, node, x, int(y)))
    if not out.is_float:
        return False
    if y == -1:
        return replace(graph, node, new_op(graph, node, [x], {}, "nn.reciprocal"))
    if y == 0.5:
        root = new_op(graph, node, [x], {}, "nn.sqrt")
        zero = new_constant(graph, np.zeros((1,) * out.rank), x)
        return replace(graph, node, new_op(graph, node, [root, zero], {}, "nn.add"))
    if y == -0.5:
        return replace(graph, node, new_op(graph, node, [x], {}, "nn.rsqrt"))
    return False


__all__ = ["POWER", "MAX_EXPONENT"]
