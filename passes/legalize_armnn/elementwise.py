"""Per-element layers: activations, elementwise binary/unary, comparisons, logical ops, casts,
quantize/dequantize, Prelu, Fill, and the pre-20.08 spellings of all of them.

Most are one table row: the Arm NN operation name -> the nn op. Operands broadcast the numpy way
in both (Arm NN aligns shapes of different rank at the right, like numpy).
"""
from __future__ import annotations

import math

import numpy as np

from nn2tosa.ir import TensorType, Value

from .layer import Layer
from .registry import rule

# ElementwiseBinary's BinaryOperation -> nn op (integer Div truncates toward zero in both).
BINARY = {
    "Add": "nn.add", "Sub": "nn.sub", "Mul": "nn.mul", "Div": "nn.div", "Maximum": "nn.maximum",
    "Minimum": "nn.minimum", "SqDiff": "nn.squared_difference", "Power": "nn.pow", "FloorDiv": "nn.floor_div",
}
# ElementwiseUnary's UnaryOperation -> nn op.
UNARY = {
    "Abs": "nn.abs", "Rsqrt": "nn.rsqrt", "Sqrt": "nn.sqrt", "Exp": "nn.exp", "Neg": "nn.neg",
    "LogicalNot": "nn.logical_not", "Log": "nn.log", "Sin": "nn.sin", "Ceil": "nn.ceil",
}
COMPARISON = {
    "Equal": "nn.equal", "NotEqual": "nn.not_equal", "Greater": "nn.greater", "GreaterOrEqual": "nn.greater_equal",
    "Less": "nn.less", "LessOrEqual": "nn.less_equal",
}
LOGICAL = {"LogicalAnd": "nn.logical_and", "LogicalOr": "nn.logical_or"}

# Layer types of Arm NN 20.08 and older that are one fixed operation of the tables above.
LEGACY = {
    "Addition": "nn.add", "Subtraction": "nn.sub", "Multiplication": "nn.mul", "Division": "nn.div",
    "Maximum": "nn.maximum", "Minimum": "nn.minimum", "Equal": "nn.equal", "Greater": "nn.greater",
    "Abs": "nn.abs", "Rsqrt": "nn.rsqrt", "Floor": "nn.floor",
}


# Unary math that only makes sense on floats. Arm NN's reference backend computes these on
# Signed32 data in float32 and stores the result truncated toward zero (its Int32 encoder is a
# static_cast), so integer operands get that float computation spelled out.
FLOAT_MATH = frozenset({"nn.exp", "nn.log", "nn.sin", "nn.ceil", "nn.floor", "nn.sqrt", "nn.rsqrt"})


def _one_op(layer: Layer, nn_op: str) -> list[Value]:
    """The layer is exactly `nn_op` on its operands, with the layer's result type."""
    out = layer.out_type
    if nn_op in FLOAT_MATH and out.quant is None and not out.is_float:
        floats = [layer.op("nn.cast", [x], type=TensorType(layer.type_of(x).shape, "f32")) for x in layer.operands]
        return [layer.op("nn.cast", [truncate(layer, layer.op(nn_op, floats))], type=out)]
    return [layer.op(nn_op, layer.operands, type=out)]


@rule(*LEGACY)
def _legacy(layer: Layer) -> list[Value]:
    return _one_op(layer, LEGACY[layer.type_name])


@rule("ElementwiseBinary")
def _elementwise_binary(layer: Layer) -> list[Value]:
    return _one_op(layer, BINARY[layer.attrs["operation"]])


@rule("ElementwiseUnary")
def _elementwise_unary(layer: Layer) -> list[Value]:
    return _one_op(layer, UNARY[layer.attrs["operation"]])


@rule("Comparison")
def _comparison(layer: Layer) -> list[Value]:
    return _one_op(layer, COMPARISON[layer.attrs["operation"]])


@rule("LogicalBinary")
def _logical_binary(layer: Layer) -> list[Value]:
    return _one_op(layer, LOGICAL[layer.attrs["operation"]])


@rule("Prelu")
def _prelu(layer: Layer) -> list[Value]:
    return _one_op(layer, "nn.prelu")


# ------------------------------------------------------------------------------ activations
# ActivationFunction -> (nn op, its attributes from (a, b)) for the functions that are one nn op.
# Arm NN writes SoftReLu as Sigmoid (the corpus README): the file's function is what counts.
_ACTIVATIONS = {
    "Sigmoid": ("nn.sigmoid", lambda a, b: {}),
    "ReLu": ("nn.relu", lambda a, b: {}),
    "BoundedReLu": ("nn.clamp", lambda a, b: {"min": b, "max": a}),  # min(a, max(b, x))
    "SoftReLu": ("nn.softplus", lambda a, b: {}),
    "LeakyReLu": ("nn.leaky_relu", lambda a, b: {"alpha": a}),
    "Abs": ("nn.abs", lambda a, b: {}),
    "Sqrt": ("nn.sqrt", lambda a, b: {}),
    "Square": ("nn.square", lambda a, b: {}),
    "Elu": ("nn.elu", lambda a, b: {"alpha": a}),
    "HardSwish": ("nn.hard_swish", lambda a, b: {}),
    "Gelu": ("nn.gelu", lambda a, b: {"approximate": "none"}),
}


def activation_function_known(layer: Layer, function: str) -> str | None:
    """The activation function is one of Arm NN's: Sigmoid, ReLu, BoundedReLu, SoftReLu, LeakyReLu, Abs,
    Sqrt, Square, Elu, HardSwish, Gelu, TanH, Linear."""
    if function not in _ACTIVATIONS and function not in ("TanH", "Linear"):
        return f"activation function {function} is unknown"
    return None


def activation(layer: Layer, x: Value, function: str, a: float, b: float, out: TensorType) -> Value:
    """Arm NN's ActivationFunction `function` with parameters a, b applied to x, result type `out`
    (also used by the LSTM cell for its activation; the rules calling it declare
    activation_function_known)."""
    layer.check(activation_function_known, function)
    if function in _ACTIVATIONS:
        name, params = _ACTIVATIONS[function]
        attrs = params(float(a), float(b))
        if any(isinstance(v, float) and math.isnan(v) for v in attrs.values()):
            raise ValueError(f"{function} parameter {attrs} is not a number")  # the layer is named: exit 2
        return layer.op(name, [x], attrs, type=out)
    if function in ("TanH", "Linear") and (math.isnan(a) or math.isnan(b)):
        raise ValueError(f"{function} parameters a={a}, b={b}: not numbers")
    if function == "TanH":  # a * tanh(b * x)
        if a == 1 and b == 1:
            return layer.op("nn.tanh", [x], type=out)
        x = layer.real(x)
        y = layer.op("nn.tanh", [_scaled(layer, x, b)])
        return layer.finish(_scaled(layer, y, a), out)
    if function == "Linear":  # a * x + b
        x = layer.real(x)
        y = _scaled(layer, x, a)
        if b != 0:
            y = layer.op("nn.add", [y, layer.scalar(b, y)])
        return layer.finish(y, out)
    raise AssertionError(function)  # activation_function_known lists every function handled above


def _scaled(layer: Layer, x: Value, factor: float) -> Value:
    return x if factor == 1 else layer.op("nn.mul", [x, layer.scalar(factor, x)])


@rule("Activation", checks=(activation_function_known,))
def _activation(layer: Layer) -> list[Value]:
    a = layer.attrs
    return [activation(layer, layer.operands[0], a["activationFunction"], a["a"], a["b"], layer.out_type)]


# ------------------------------------------------------------------------------ conversions
@rule("Quantize")
def _quantize(layer: Layer) -> list[Value]:
    """Float -> quantized is nn.quantize; quantized -> quantized (a requantization) nn.requantize."""
    x = layer.operands[0]
    name = "nn.requantize" if layer.type_of(x).quant is not None else "nn.quantize"
    return _one_op(layer, name)


@rule("Dequantize")
def _dequantize(layer: Layer) -> list[Value]:
    """Arm NN also "dequantizes" float data (Float16 weights to Float32): that is a cast."""
    quantized = layer.type_of(layer.operands[0]).quant is not None
    return _one_op(layer, "nn.dequantize" if quantized else "nn.cast")


_FLOATS_AND_BOOL = frozenset({"f16", "f32", "f64", "bf16", "i1"})  # targets a float converts to without truncation


def cast_per_tensor(layer: Layer) -> str | None:
    """A Cast's operand and result are not quantized per axis."""
    types = [layer.type_of(layer.operands[0]), layer.out_type]
    if any(t.quant is not None and t.quant.axis is not None for t in types):
        return "a Cast of per-axis quantized data"
    return None


@rule("Cast", constraints=(cast_per_tensor,))
def _cast(layer: Layer) -> list[Value]:
    """Arm NN's Cast converts stored values and ignores quantization (its reference backend resets
    scale and zero point to 1 and 0 on both sides): a quantized operand is its stored integers, a
    quantized result stores the value rounded half away from zero and saturated, and a float
    becomes a plain integer by C++'s static_cast, truncating toward zero. nn.cast does not touch
    quantized types, so those ends are spelled out: stored integer = round(dequantized / scale +
    zero_point), and a result storing r is nn.quantize of (r - zero_point) * scale."""
    x, out = layer.operands[0], layer.out_type
    src = layer.type_of(x)
    if src.quant is None and out.quant is None and not (src.is_float and out.dtype not in _FLOATS_AND_BOOL):
        return _one_op(layer, "nn.cast")
    value = x
    if src.quant is not None:  # the stored integers, as floats
        real = layer.op("nn.dequantize", [x], type=TensorType(src.shape, src.quant.expressed))
        shifted = layer.op("nn.add", [layer.op("nn.mul", [real, layer.scalar(1 / src.quant.scale, real)]),
                                      layer.scalar(src.quant.zero_point, real)])
        value = layer.op("nn.round", [shifted])
    if out.quant is None:
        if layer.type_of(value).is_float and out.dtype not in _FLOATS_AND_BOOL:
            value = truncate(layer, value)
        return [layer.op("nn.cast", [value], type=out)]
    if not layer.type_of(value).is_float:
        value = layer.op("nn.cast", [value], type=TensorType(src.shape, out.quant.expressed))
    info = np.iinfo(out.numpy_dtype)
    stored = layer.op("nn.clamp", [round_half_away(layer, value)], {"min": float(info.min), "max": float(info.max)})
    centred = layer.op("nn.sub", [stored, layer.scalar(out.quant.zero_point, stored)])
    real = layer.op("nn.mul", [centred, layer.scalar(out.quant.scale, centred)])
    return [layer.op("nn.quantize", [real], type=out)]


def truncate(layer: Layer, x: Value) -> Value:
    """Float x rounded toward zero (what C++ float -> int conversion does): x < 0 ? ceil(x) : floor(x)."""
    negative = layer.op("nn.less", [x, layer.scalar(0.0, x)])
    return layer.op("nn.select", [negative, layer.op("nn.ceil", [x]), layer.op("nn.floor", [x])])


def round_half_away(layer: Layer, x: Value) -> Value:
    """Float x rounded to the nearest integer, halves away from zero (C's roundf): sign(x) * floor(|x| + 0.5)."""
    magnitude = layer.op("nn.floor", [layer.op("nn.add", [layer.op("nn.abs", [x]), layer.scalar(0.5, x)])])
    return layer.op("nn.mul", [layer.op("nn.sign", [x]), magnitude])


def fill_unquantized(layer: Layer) -> str | None:
    """A Fill's result is not quantized: Arm NN defines no encoding of its value in one."""
    if layer.out_type.quant is not None:
        return "a quantized Fill result has no defined encoding of its value"
    return None


@rule("Fill", constraints=(fill_unquantized,))
def _fill(layer: Layer) -> list[Value]:
    """A tensor of the result's (static) shape holding `value`; the shape operand is not needed."""
    out = layer.out_type
    value = layer.attrs["value"]
    return [layer.constant(np.full(out.shape, value, dtype=out.numpy_dtype), out)]
