"""TOSA activation and elementwise operators (numpy-style broadcasting of equal-rank operands): one
record each. A plain elementwise op is one line: name, doc, support table, inference."""
from __future__ import annotations

from typing import Any

import numpy as np

from nn2tosa.ir import Graph, TensorType, attr
from nn2tosa.ir.registry import Inferrer
from nn2tosa.tosa_flatbuffer.fields_0100 import (RESULT, Attr, ClampBounds, MulShift, PropagatesNan, TableContents,
                                                 ZeroPoint, legacy)

from . import infer
from .attrs import NAN_MODE
from .record import Support, TosaOp, operands, register, support
from .support import (ARITH_I32_ANY, ARITH_I32_INT, BOOL, FLOAT_UNARY, INT_BITWISE, SHIFT, SIG_IN, SIG_IN_OUT)

ELEMENTWISE = frozenset({"elementwise"})
_BINARY = operands("input1", "input2")
_UNARY = operands("input1")


def _verify_clamp(graph: Graph, node: int) -> list[str]:
    """Integer bounds that are values of the input's type (both the flatbuffer and MLIR store them
    in it: a damaged .tosa file can claim anything)."""
    t = graph.type_of(graph.operand(node, 0))
    if not isinstance(t, TensorType) or t.dtype not in ("i8", "i16", "i32"):
        return []
    info = np.iinfo(t.numpy_dtype)
    return [f"{name} {graph.attrs(node)[name]} is not an {t.dtype} value" for name in ("min_val", "max_val")
            if not info.min <= graph.attrs(node)[name] <= info.max]


def binary(name: str, doc: str, supported: Support, result: Inferrer = infer.binary, **more: Any) -> TosaOp:
    """An elementwise op of two operands of one element type (the result's too, unless `result` says)."""
    return TosaOp(name, _BINARY, doc, supported, infer=result, traits=ELEMENTWISE, **more)


def unary(name: str, doc: str, supported: Support, **more: Any) -> TosaOp:
    """An elementwise op of one operand whose result has its type."""
    return TosaOp(name, _UNARY, doc, supported, infer=infer.same, traits=ELEMENTWISE, **more)


register(
    # Activation functions
    TosaOp("clamp", operands("input"),
           "min(max(x, min_val), max_val); bounds are in the input's element type (no zero point).",
           support(SIG_IN, {"int": "i8", "fp": "f16 f32", "int16": "i16", "bf16": "bf16"}),
           attrs={"min_val": attr("scalar_like:0", "lower bound"), "max_val": attr("scalar_like:0", "upper bound"),
                  "nan_mode": NAN_MODE}, infer=infer.same, verify=_verify_clamp,
           legacy=legacy("CLAMP", "ClampAttribute", ClampBounds(), PropagatesNan())),
    TosaOp("erf", operands("input"), "Gauss error function, elementwise.", FLOAT_UNARY, infer=infer.same),
    TosaOp("sigmoid", operands("input"), "1 / (1 + exp(-x)), elementwise.", FLOAT_UNARY, infer=infer.same),
    TosaOp("tanh", operands("input"), "Hyperbolic tangent, elementwise.", FLOAT_UNARY, infer=infer.same),

    # Elementwise binary operators
    binary("add", "x + y (integer addition wraps).", ARITH_I32_ANY),
    binary("bitwise_and", "x & y.", INT_BITWISE),
    binary("bitwise_or", "x | y.", INT_BITWISE),
    binary("bitwise_xor", "x ^ y.", INT_BITWISE),
    binary("intdiv", "Integer x / y rounded toward zero.", support(SIG_IN, {"any": "i32"})),
    binary("logical_and", "Boolean x and y.", BOOL),
    binary("logical_left_shift", "x << y.", SHIFT),
    binary("logical_right_shift", "x >> y with zeros shifted in.", SHIFT),
    binary("logical_or", "Boolean x or y.", BOOL),
    binary("logical_xor", "Boolean x xor y.", BOOL),
    binary("pow", "x ** y (floating point).", FLOAT_UNARY),
    binary("sub", "x - y (integer subtraction wraps).", ARITH_I32_ANY),
    binary("arithmetic_right_shift", "x >> y with sign extension; `round` adds the last bit shifted out.",
           INT_BITWISE, attrs={"round": attr("bool", "round to nearest instead of toward minus infinity")},
           legacy=legacy("ARITHMETIC_RIGHT_SHIFT", "ArithmeticRightShiftAttribute", Attr("round"))),
    binary("maximum", "Elementwise maximum.", ARITH_I32_INT, attrs={"nan_mode": NAN_MODE},
           legacy=legacy("MAXIMUM", None, PropagatesNan())),
    binary("minimum", "Elementwise minimum.", ARITH_I32_INT, attrs={"nan_mode": NAN_MODE},
           legacy=legacy("MINIMUM", None, PropagatesNan())),
    TosaOp("mul", operands("input1", "input2", "shift:const"),
           "x * y; for i32 results of integer inputs, rounded right shift by `shift` (a tensor<1xi8> constant).",
           support(SIG_IN_OUT, {"int": "i8,i32 i16,i32", "any": "i32,i32", "fp": "f16,f16 f32,f32",
                                "bf16": "bf16,bf16"}),
           infer=infer.mul, traits=ELEMENTWISE, legacy=legacy("MUL", "MulAttribute", MulShift())),
    TosaOp("table", operands("input1", "table:const"),
           "Table lookup: i8 input indexes a 256-entry i8 table; i16 input interpolates a 513-entry i16 table to i32.",
           support(SIG_IN, {"int": "i8", "int16": "i16"}), infer=infer.table,
           legacy=legacy("TABLE", "TableAttribute", TableContents())),

    # Elementwise unary operators
    unary("abs", "|x|.", ARITH_I32_INT),
    unary("bitwise_not", "~x.", INT_BITWISE),
    unary("ceil", "Smallest integer value >= x.", FLOAT_UNARY),
    unary("clz", "Number of leading zero bits of an i32.", support(SIG_IN, {"int": "i32"})),
    unary("cos", "cos(x).", FLOAT_UNARY, legacy="COS is not a TOSA 0.90 operator"),
    unary("exp", "e ** x.", FLOAT_UNARY),
    unary("floor", "Largest integer value <= x.", FLOAT_UNARY),
    unary("log", "Natural logarithm.", FLOAT_UNARY),
    unary("logical_not", "Boolean not.", BOOL),
    unary("reciprocal", "1 / x.", FLOAT_UNARY),
    unary("rsqrt", "1 / sqrt(x).", FLOAT_UNARY),
    unary("sin", "sin(x).", FLOAT_UNARY, legacy="SIN is not a TOSA 0.90 operator"),
    TosaOp("negate", operands("input1", "input1_zp:const", "output_zp:const"),
           "-(x - input1_zp) + output_zp, saturating for integers.",
           support(SIG_IN, {"int": "i8 i16 i32", "fp": "f16 f32", "bf16": "bf16"}), infer=infer.same,
           traits=ELEMENTWISE, legacy=legacy("NEGATE", "NegateAttribute", ZeroPoint("input1_zp", 1, like=0),
                                             ZeroPoint("output_zp", 2, like=RESULT))),

    # Elementwise ternary and comparison operators
    TosaOp("select", operands("input1", "input2", "input3"), "input1 ? input2 : input3 (input1 is i1).",
           support(("o1",), {"any": "i1", "int": "i8 i16 i32", "fp": "f16 f32", "bf16": "bf16"}),
           infer=infer.select, traits=ELEMENTWISE),
    binary("equal", "x == y, i1 result.", ARITH_I32_INT, result=infer.comparison),
    binary("greater", "x > y, i1 result.", ARITH_I32_INT, result=infer.comparison),
    binary("greater_equal", "x >= y, i1 result.", ARITH_I32_INT, result=infer.comparison),
)
