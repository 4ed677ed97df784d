"""The tosa op table: one record per TOSA 1.0 operator (record.TosaOp), split by op family.

    tensor.py       convolutions, pooling, matmul, argmax, FFT
    elementwise.py  activations, elementwise unary/binary/ternary ops, comparisons, TABLE
    data.py         reductions, data layout, gather/scatter, resize, cast/rescale, constants,
                    custom, control flow, variables, shapes

Importing this package registers every op (the IR registry's definition and `TOSA_OPS`).
"""
from __future__ import annotations

from . import tensor, elementwise, data  # noqa: F401,I001  (each registers its rows, in this order)
from .record import TOSA_ELEMENT_TYPES, TOSA_OPS, Operand, Support, TosaOp, View, operands, register

__all__ = ["TOSA_ELEMENT_TYPES", "TOSA_OPS", "Operand", "Support", "TosaOp", "View", "operands", "register"]
