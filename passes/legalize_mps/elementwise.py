"""Elementwise nodes: unary math, activations, binary arithmetic, divisions, comparisons, bitwise and
logical ops, where and clamp.

Operands are converted to the node's compute type first (core.py's module docstring): PyTorch
promotes the operands of a binary op, and `sqrt(int)` is a float. Each family is one table.
"""
from __future__ import annotations

import math

import numpy as np

from nn2tosa.ir import Value

from .core import Node, is_float, normalize_axis, rule

# member -> nn op, for unary nodes computing in their result's element type
UNARY = {
    "MPSExp": "nn.exp", "MPSExp2": "nn.exp2", "MPSReciprocal": "nn.reciprocal", "MPSSqrt": "nn.sqrt",
    "MPSNeg": "nn.neg", "MPSLog": "nn.log", "MPSLog10": "nn.log10", "MPSLog2": "nn.log2", "MPSErf": "nn.erf",
    "MPSFloor": "nn.floor", "MPSCeil": "nn.ceil", "MPSRsqrt": "nn.rsqrt", "MPSSigmoid": "nn.sigmoid",
    "MPSSin": "nn.sin", "MPSSign": "nn.sign", "MPSCos": "nn.cos", "MPSTan": "nn.tan", "MPSAbs": "nn.abs",
    "MPSAsin": "nn.asin", "MPSAcos": "nn.acos", "MPSAtan": "nn.atan", "MPSSinh": "nn.sinh", "MPSCosh": "nn.cosh",
    "MPSTanh": "nn.tanh", "MPSAsinh": "nn.asinh", "MPSAcosh": "nn.acosh", "MPSAtanh": "nn.atanh",
    "MPSRound": "nn.round",  # round half to even, as torch.round
    "MPSReLU": "nn.relu",
}
# Rounding an integer is the integer itself (torch.floor(int_tensor) returns it unchanged).
_INTEGER_IDENTITY = {"MPSFloor", "MPSCeil", "MPSRound"}
# The rest have integer forms; these only float ones (PyTorch promotes integers to float for them).
_FLOAT_ONLY = set(UNARY) - _INTEGER_IDENTITY - {"MPSNeg", "MPSSign", "MPSAbs", "MPSReLU"}


@rule(*UNARY)
def unary(n: Node) -> Value:
    x = n.input("input1_id")
    dtype = n.compute_dtype([x])
    if n.member in _INTEGER_IDENTITY and not is_float(dtype):
        return n.cast(x, dtype)
    if n.member in _FLOAT_ONLY and not is_float(dtype):  # found by bench/fuzz_long.py: sigmoid on bool
        raise ValueError(f"{n.member} computes floats, but the node declares a {dtype} result")
    return n.elementwise(UNARY[n.member], [x], dtype)


@rule("MPSIsnan", "MPSIsinf")
def float_class(n: Node) -> Value:
    x = n.input("input1_id")
    if not is_float(n.type_of(x).dtype):  # an integer is never NaN or infinite
        x = n.cast(x, "f32")
    return n.op("nn.isnan" if n.member == "MPSIsnan" else "nn.isinf", [x])


@rule("MPSLogicalNot")
def logical_not(n: Node) -> Value:
    return n.op("nn.logical_not", [n.cast(n.input("input1_id"), "i1")])


@rule("MPSBitwiseNot")
def bitwise_not(n: Node) -> Value:
    x = n.input("input1_id")
    if is_float(n.type_of(x).dtype):  # as for the binary bitwise nodes: PyTorch has none on floats
        raise ValueError(f"a bitwise operation on {n.type_of(x).dtype} tensors")
    return n.op("nn.logical_not" if n.type_of(x).dtype == "i1" else "nn.bitwise_not", [x])


# ------------------------------------------------------------------------------ activations
@rule("MPSHardTanh")
def hardtanh(n: Node) -> Value:
    x = n.input("input1_id")
    return n.elementwise("nn.clamp", [x], n.compute_dtype([x]),
                         {"min": float(n.attrs["min_value"]), "max": float(n.attrs["max_value"])})


@rule("MPSClamp")
def clamp(n: Node) -> Value:
    """Bounds from MPSNode.min_max; an open side is +-inf (for integers, the type's own limit)."""
    x = n.input("input1_id")
    dtype = n.compute_dtype([x])
    low, high = float(n.attrs.get("min_value", -math.inf)), float(n.attrs.get("max_value", math.inf))
    if not is_float(dtype):
        info = np.iinfo(np.dtype(n.out.numpy_dtype))
        low, high = max(low, float(info.min)), min(high, float(info.max))
    return n.elementwise("nn.clamp", [x], dtype, {"min": low, "max": high})


@rule("MPSLeakyReLU")
def leaky_relu(n: Node) -> Value:
    x = n.input("input1_id")
    return n.elementwise("nn.leaky_relu", [x], n.compute_dtype([x]), {"alpha": float(n.attrs["negative_slope"])})


@rule("MPSGELU")
def gelu(n: Node) -> Value:
    """PyTorch's gelu; approximate="tanh" is the tanh formula (the MPS runtime builds tanh(x) * x
    instead, which is not what the file asks for)."""
    x = n.input("input1_id")
    approximate = "tanh" if n.attrs.get("approximate") == "tanh" else "none"
    return n.elementwise("nn.gelu", [x], n.compute_dtype([x]), {"approximate": approximate})


@rule("MPSSoftmax", "MPSLogSoftmax")
def softmax(n: Node) -> Value:
    x = n.input("input1_id")
    # half_to_float: an f16 input normalized into an f32 result
    dtype = "f32" if n.attrs.get("half_to_float") else n.compute_dtype([x])
    name = "nn.softmax" if n.member == "MPSSoftmax" else "nn.log_softmax"
    axis = normalize_axis(n.attrs["dim"], n.type_of(x).rank)
    return n.elementwise(name, [x], dtype, {"axis": axis, "beta": 1.0})


# ------------------------------------------------------------------------------ binary arithmetic
ARITHMETIC = {
    "MPSAdd": "nn.add", "MPSSub": "nn.sub", "MPSMul": "nn.mul", "MPSPow": "nn.pow",
    "MPSMinimum": "nn.minimum",  # torch.minimum: NaN propagates
    # never emitted by the backend; the schema lists them with the binary ops (torch.min(x, y) /
    # torch.max(x, y) on two tensors)
    "MPSMin": "nn.minimum", "MPSMax": "nn.maximum",
}


# On booleans PyTorch's add is `or`, mul, min are `and`, max is `or` (sub and pow refuse booleans).
BOOLEAN_ARITHMETIC = {"MPSAdd": "nn.logical_or", "MPSMul": "nn.logical_and", "MPSMinimum": "nn.logical_and",
                      "MPSMin": "nn.logical_and", "MPSMax": "nn.logical_or"}


@rule(*ARITHMETIC)
def arithmetic(n: Node) -> Value:
    x, y = n.input("input1_id"), n.input("input2_id")
    dtype = n.compute_dtype([x, y])
    if dtype == "i1":
        if n.member not in BOOLEAN_ARITHMETIC:
            raise ValueError(f"{n.member} of booleans (PyTorch refuses it)")
        return n.elementwise(BOOLEAN_ARITHMETIC[n.member], [x, y], dtype)
    alpha = n.attrs.get("alpha", 1.0)
    if alpha != 1.0:  # add/sub: x + alpha * y (an integer tensor takes an integral alpha)
        if not is_float(dtype) and not float(alpha).is_integer():
            raise ValueError(f"alpha {alpha} is not an integer, but the operands are {dtype}")
        y = n.op("nn.mul", [n.cast(y, dtype), n.scalar(alpha if is_float(dtype) else int(alpha), dtype)])
    return n.elementwise(ARITHMETIC[n.member], [x, y], dtype)


@rule("MPSAtan2")
def atan2(n: Node) -> Value:
    """atan2(y, x) (input1 = y, as torch.atan2(input, other)) from atan: atan(y / x), moved by +-pi when
    x < 0, and +-pi/2 (0 for y == 0) when x == 0."""
    y, x = n.input("input1_id"), n.input("input2_id")
    dtype = n.compute_dtype([y, x])
    y, x = n.cast(y, dtype), n.cast(x, dtype)
    zero = n.scalar(0, dtype)
    angle = n.op("nn.atan", [n.op("nn.div", [y, x])])
    upper_half = n.op("nn.greater_equal", [y, zero])
    shift = n.op("nn.select", [upper_half, n.scalar(math.pi, dtype), n.scalar(-math.pi, dtype)])
    angle = n.op("nn.select", [n.op("nn.less", [x, zero]), n.op("nn.add", [angle, shift]), angle])
    on_axis = n.op("nn.mul", [n.op("nn.sign", [y]), n.scalar(math.pi / 2, dtype)])
    return n.op("nn.select", [n.op("nn.equal", [x, zero]), on_axis, angle])


# ------------------------------------------------------------------------------ divisions
# The runtime's divModeTemplate: the rounding mode (the node's own, else the member's default) picks
# true / trunc / floor division; Fmod with trunc and Remainder with floor keep the remainder
# x - q * y instead of the quotient q.
_DEFAULT_ROUNDING = {"MPSDiv": None, "MPSFmod": "trunc", "MPSRemainder": "floor"}
_REMAINDER_OF: dict[tuple[str, str | None], str] = {("MPSFmod", "trunc"): "nn.fmod",
                                                    ("MPSRemainder", "floor"): "nn.mod"}


@rule(*_DEFAULT_ROUNDING)
def division(n: Node) -> Value:
    x, y = n.input("input1_id"), n.input("input2_id")
    mode = n.attrs.get("rounding_mode", _DEFAULT_ROUNDING[n.member])
    remainder = _REMAINDER_OF.get((n.member, mode))
    dtype = n.compute_dtype([x, y])
    if remainder is not None:
        return n.elementwise(remainder, [x, y], dtype)
    if mode is None:  # true division; an integer result (not PyTorch's, but a file may say so) truncates
        return n.elementwise("nn.div", [x, y], dtype)
    if mode == "floor":
        return n.elementwise("nn.floor_div", [x, y], dtype)
    if mode == "trunc":
        q = n.elementwise("nn.div", [x, y], dtype)  # integers: nn.div truncates toward zero already
        return n.trunc(q)
    raise ValueError(f"unknown rounding_mode {mode!r}")


# ------------------------------------------------------------------------------ comparisons and logic
COMPARISONS = {
    "MPSEq": "nn.equal", "MPSNe": "nn.not_equal", "MPSGe": "nn.greater_equal", "MPSGt": "nn.greater",
    "MPSLe": "nn.less_equal", "MPSLt": "nn.less",
}


@rule(*COMPARISONS)
def comparison(n: Node) -> Value:
    x, y = n.input("input1_id"), n.input("input2_id")
    return n.elementwise(COMPARISONS[n.member], [x, y], n.common_dtype([x, y]))


# member -> (op on booleans, op on integers): the runtime uses logical ops for bool tensors
BITWISE = {
    "MPSBitwiseAnd": ("nn.logical_and", "nn.bitwise_and"),
    "MPSBitwiseOr": ("nn.logical_or", "nn.bitwise_or"),
    "MPSBitwiseXor": ("nn.logical_xor", "nn.bitwise_xor"),
}


@rule(*BITWISE)
def bitwise(n: Node) -> Value:
    x, y = n.input("input1_id"), n.input("input2_id")
    dtype = n.out.dtype
    if is_float(dtype):  # PyTorch has no bitwise ops on floats (found by bench/fuzz_long.py: an internal error)
        raise ValueError(f"a bitwise operation on {dtype} tensors")
    on_bool, on_int = BITWISE[n.member]
    return n.elementwise(on_bool if dtype == "i1" else on_int, [x, y], dtype)


@rule("MPSWhere")
def where(n: Node) -> Value:
    cond, x, y = n.input("input1_id"), n.input("input2_id"), n.input("input3_id")
    dtype = n.compute_dtype([x, y])
    return n.op("nn.select", [n.cast(cond, "i1"), n.cast(x, dtype), n.cast(y, dtype)])
