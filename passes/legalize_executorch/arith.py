"""Elementwise operators: arithmetic (the int64 index arithmetic of positions and counters among them),
divisions with their rounding modes, comparisons, logic, where, clamp. `other` may be a tensor or a
Scalar (`add.Scalar`); ATen computes in the promoted type, which the out tensor declares, and a
comparison in the promoted type of its operands."""
from __future__ import annotations

from nn2tosa.ir import Value

from ..legalize_mps.core import is_float, promote
from .core import Call, rule

ARITHMETIC = {"aten::add": "nn.add", "aten::sub": "nn.sub", "aten::mul": "nn.mul", "aten::rsub": "nn.sub",
              "aten::minimum": "nn.minimum", "aten::maximum": "nn.maximum", "aten::pow": "nn.pow"}
BOOLEAN = {"aten::add": "nn.logical_or", "aten::mul": "nn.logical_and", "aten::minimum": "nn.logical_and",
           "aten::maximum": "nn.logical_or"}
COMPARISONS = {"aten::eq": "nn.equal", "aten::ne": "nn.not_equal", "aten::lt": "nn.less", "aten::le": "nn.less_equal",
               "aten::gt": "nn.greater", "aten::ge": "nn.greater_equal"}
LOGICAL = {"aten::logical_and": "nn.logical_and", "aten::logical_or": "nn.logical_or",
           "aten::logical_xor": "nn.logical_xor"}
UNARY = {"aten::neg": "nn.neg", "aten::abs": "nn.abs", "aten::exp": "nn.exp", "aten::log": "nn.log",
         "aten::sqrt": "nn.sqrt", "aten::rsqrt": "nn.rsqrt", "aten::sigmoid": "nn.sigmoid", "aten::tanh": "nn.tanh",
         "aten::sin": "nn.sin", "aten::cos": "nn.cos", "aten::floor": "nn.floor", "aten::ceil": "nn.ceil",
         "aten::reciprocal": "nn.reciprocal", "aten::relu": "nn.relu", "aten::sign": "nn.sign"}


def operand(c: Call, k: int, dtype: str) -> Value:
    """Argument k (a tensor or a Scalar) in `dtype`."""
    v = c.arg(k)
    if isinstance(v, Value):
        return c.cast(v, dtype)
    return c.scalar(c.scalar_arg(k), dtype)


def _operand_dtype(c: Call, k: int) -> str | None:
    v = c.arg(k)
    return c.type_of(v).dtype if isinstance(v, Value) else None


@rule(*ARITHMETIC)
def arithmetic(c: Call) -> Value:
    """add/sub(self, other, alpha): self +- alpha * other; rsub: other - alpha * self."""
    dtype = c.out.dtype
    x, y = operand(c, 0, dtype), operand(c, 1, dtype)
    if dtype == "i1":
        if c.member not in BOOLEAN:
            raise ValueError(f"{c.member} of booleans (PyTorch refuses it)")
        return c.op(BOOLEAN[c.member], [x, y])
    alpha = c.scalar_arg(2) if len(c.arguments) > 2 and c.arguments[2]["kind"] in ("Int", "Double") else 1
    if c.member == "aten::rsub":
        x, y = y, x
    if alpha != 1:
        y = c.op("nn.mul", [y, c.scalar(alpha if is_float(dtype) else int(alpha), dtype)])
    return c.op(ARITHMETIC[c.member], [x, y])


@rule(*UNARY)
def unary(c: Call) -> Value:
    dtype = c.out.dtype
    return c.op(UNARY[c.member], [c.cast(c.tensor(0), dtype)])


@rule("aten::div", "aten::floor_divide", "aten::remainder", "aten::fmod")
def division(c: Call) -> Value:
    """div(self, other, rounding_mode=None|'trunc'|'floor'); floor_divide; remainder (floor: the sign of
    other, nn.mod); fmod (trunc: the sign of self, nn.fmod). Integer arithmetic stays integer."""
    dtype = c.out.dtype
    x, y = operand(c, 0, dtype), operand(c, 1, dtype)
    if c.member == "aten::remainder":
        return c.op("nn.mod", [x, y])
    if c.member == "aten::fmod":
        return c.op("nn.fmod", [x, y])
    mode = "floor" if c.member == "aten::floor_divide" else c.arg(2)
    if mode is None:
        return c.op("nn.div", [x, y])
    if mode == "floor":
        return c.op("nn.floor_div", [x, y])
    if mode == "trunc":
        return c.trunc(c.op("nn.div", [x, y]))
    raise ValueError(f"unknown rounding_mode {mode!r}")


@rule(*COMPARISONS)
def comparison(c: Call) -> Value:
    dtype = promote([d for d in (_operand_dtype(c, 0), _operand_dtype(c, 1)) if d is not None])
    return c.op(COMPARISONS[c.member], [operand(c, 0, dtype), operand(c, 1, dtype)])


@rule(*LOGICAL)
def logical(c: Call) -> Value:
    return c.cast(c.op(LOGICAL[c.member], [operand(c, 0, "i1"), operand(c, 1, "i1")]), c.out.dtype)


@rule("aten::logical_not", "aten::bitwise_not")
def logical_not(c: Call) -> Value:
    x = c.tensor(0)
    if c.member == "aten::bitwise_not" and c.type_of(x).dtype != "i1":
        return c.op("nn.bitwise_not", [x])
    return c.cast(c.op("nn.logical_not", [c.cast(x, "i1")]), c.out.dtype)


@rule("aten::where")
def where(c: Call) -> Value:
    """where(condition, self, other)."""
    dtype = c.out.dtype
    return c.op("nn.select", [operand(c, 0, "i1"), operand(c, 1, dtype), operand(c, 2, dtype)])


@rule("aten::clamp")
def clamp(c: Call) -> Value:
    """clamp(self, min=None, max=None): max(min(x, max), min) with the bounds as given."""
    dtype = c.out.dtype
    x = c.cast(c.tensor(0), dtype)
    if c.arg(1) is not None:
        x = c.op("nn.maximum", [x, operand(c, 1, dtype)])
    if c.arg(2) is not None:
        x = c.op("nn.minimum", [x, operand(c, 2, dtype)])
    return x
