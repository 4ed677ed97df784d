"""The `tosa` dialect: every TOSA 1.0 operator, as the lowering produces and the emitters consume it.

Operand order, attribute names and attribute kinds follow MLIR's tosa dialect (LLVM 22), so that
`nn2tosa.ir.mlir_bridge.to_module` builds ops MLIR's verifier accepts, and the flatbuffer emitter
maps each op to its TOSA 1.0 operator and attribute table. Conventions of TOSA-level graphs:

- Operand forms are TOSA 1.0's exactly: zero points, RESCALE multiplier/shift, MUL shift, TABLE
  contents and PAD pad_const are `tosa.const` operands (attribute `values`); shape parameters
  (RESHAPE, SLICE, TILE, PAD padding, RESIZE scale/offset/border) are `tosa.const_shape` values of
  type `ShapeType(rank)` (`!tosa.shape<rank>`) whose `values` is a 1-D int64 array.
- Element types are TOSA's: i1, i4, i8, i16, i32, i48, f16, bf16, f32, f8E4M3FN, f8E5M2. Tensor
  types carry no quantization (it has been lowered into zero points and RESCALE) and are signless:
  unsigned 8/16-bit data exists only at a RESCALE with input_unsigned/output_unsigned.
- Constants hold their storage: bf16 and fp8 as raw bits, i4 unpacked one per int8, i48 in int64.
- COND_IF and WHILE_LOOP name their branch graphs (other graphs of the same module) in string
  attributes, since the IR has no regions; VARIABLE ops mirror MLIR's attributes. The IR can hold
  them, but neither emitter writes them yet (they raise UnsupportedError).

Each op's `doc` gives its semantics in one line followed by its operand list; `docs/` and the
supported-ops report are generated from it.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from nn2tosa.diagnostics import Unsupported
from nn2tosa.ir import INPUT_OP, Dialect, Graph, ShapeType, TensorType, Type, Value, attr, define, op_def, register_dialect
from nn2tosa.ir.effects import (BRANCH_EFFECTS, DECLARES_VARIABLE, READS_VARIABLE, UNKNOWN_EFFECTS,
                                 WRITES_VARIABLE)
from nn2tosa.ir.registry import AttrSpec, Trait
from nn2tosa.ir.verify import constant_verifier

register_dialect(Dialect("tosa", "TOSA 1.0 operators", constant_op="tosa.const", constant_attr="values"))
_const_values = constant_verifier("values")

# Element types a TOSA 1.0 tensor may have (MLIR spellings).
TOSA_ELEMENT_TYPES = frozenset({"i1", "i4", "i8", "i16", "i32", "i48", "f16", "bf16", "f32", "f8E4M3FN", "f8E5M2"})

# ---------------------------------------------------------------- attribute specs used by many ops
ACC_TYPE = attr("elemtype", "accumulator element type: i32 (int8), i48 (int16), f16 or f32")
NAN_MODE = attr("enum:tosa.nan_mode", "PROPAGATE (the default when absent) or IGNORE: whether a NaN operand "
                "gives NaN or is skipped", optional=True)
LOCAL_BOUND = attr("bool", "true allows an implementation-defined local error bound (default false)", optional=True)
AXIS = attr("i32", "the axis the op works along")
PAD4 = attr("ints", "[top, bottom, left, right] padding")
STRIDE2 = attr("ints", "[y, x] stride")
DILATION2 = attr("ints", "[y, x] dilation")
KERNEL2 = attr("ints", "[y, x] kernel size")


def _operand_kinds_verifier(shapes: Sequence[int], constants: Sequence[int]) -> Callable[[Graph, int], list[str]]:
    """A verifier checking what every TOSA op shares: operands at `shapes` are shape values,
    operands at `constants` come from tosa.const, all other operands and results are tensors of
    TOSA element types without quantization."""

    def verify(graph: Graph, node: int) -> list[str]:
        problems = []
        for k, value in enumerate(graph.operands(node)):
            t = graph.type_of(value)
            if k in shapes:
                if not isinstance(t, ShapeType):
                    problems.append(f"operand #{k} must be a !tosa.shape value, is {t}")
                continue
            problems.extend(f"operand #{k}: {p}" for p in _tensor_type_problems(t))
            if k in constants and graph.op(value.node) != "tosa.const":
                problems.append(f"operand #{k} must be produced by tosa.const, not {graph.op(value.node)}")
        for i, t in enumerate(graph.types(node)):
            problems.extend(f"result #{i}: {p}" for p in _tensor_type_problems(t))
        return problems

    return verify


def _tensor_type_problems(t: Type) -> list[str]:
    if not isinstance(t, TensorType):
        return [f"must be a tensor, is {t}"]
    if t.quant is not None:
        return [f"{t} is quantized; TOSA-level types carry no quantization (use zero points and RESCALE)"]
    if t.dtype not in TOSA_ELEMENT_TYPES:
        return [f"element type {t.dtype} is not a TOSA 1.0 type"]
    return []


def _verify_const(graph: Graph, node: int) -> list[str]:
    return _tensor_type_problems(graph.types(node)[0]) or _const_values(graph, node)


def _verify_const_shape(graph: Graph, node: int) -> list[str]:
    value = graph.attrs(node)["values"]
    t = graph.types(node)[0]
    if not isinstance(t, ShapeType):
        return [f"result must be a !tosa.shape, is {t}"]
    if value.ndim != 1 or value.shape[0] != t.rank or value.dtype != np.int64:
        return [f"values must be a 1-D int64 array of {t.rank} elements, is {value.dtype}{list(value.shape)}"]
    return []


# ---------------------------------------------------------------- folders
def _fold_transpose(attrs: dict[str, Any], values: list[np.ndarray], types: list[Type]) -> list[np.ndarray]:
    return [np.ascontiguousarray(values[0].transpose(attrs["perms"]))]


def _fold_identity(attrs: dict[str, Any], values: list[np.ndarray], types: list[Type]) -> list[np.ndarray]:
    return [values[0]]


# ---------------------------------------------------------------- result type inference
# infer(attrs, operand types) -> result types, for the ops whose result type follows from operand
# types and attributes alone (not reshape/slice/tile/pad/resize, whose shapes are shape operands'
# values, nor cast/rescale/matmul/const, whose result element type is a choice). The IR verifier
# checks declared result types against it, and `Builder.op` can leave `types=` out for these ops.
Attrs = dict[str, Any]


def _tensor(types: list[Type], k: int) -> TensorType:
    t = types[k]
    if not isinstance(t, TensorType):
        raise ValueError(f"operand #{k} is not a tensor")
    return t


def _broadcast(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    """TOSA broadcasting: equal ranks, each dimension equal or 1 (-1 is unknown)."""
    if len({len(s) for s in shapes}) != 1:
        raise ValueError(f"ranks differ: {[list(s) for s in shapes]}")
    out = []
    for dims in zip(*shapes):
        known = {d for d in dims if d != 1}
        if len(known - {-1}) > 1:
            raise ValueError(f"shapes {[list(s) for s in shapes]} do not broadcast")
        out.append(max(known - {-1}, default=-1 if -1 in known else 1))
    return tuple(out)


def _elementwise(result_dtype: Callable[[str], str] = lambda d: d, data_operand: int = 0, operands: int = 2):
    def infer(attrs: Attrs, types: list[Type]) -> list[Type]:
        shape = _broadcast(*(_tensor(types, k).shape for k in range(operands)))
        return [TensorType(shape, result_dtype(_tensor(types, data_operand).dtype))]
    return infer


def _same(attrs: Attrs, types: list[Type]) -> list[Type]:
    return [_tensor(types, 0).with_dtype(_tensor(types, 0).dtype)]


def _reduce(attrs: Attrs, types: list[Type]) -> list[Type]:
    t = _tensor(types, 0)
    shape = list(t.shape)
    shape[attrs["axis"]] = 1
    return [TensorType(tuple(shape), t.dtype)]


def _argmax(attrs: Attrs, types: list[Type]) -> list[Type]:
    shape = list(_tensor(types, 0).shape)
    del shape[attrs["axis"]]
    return [TensorType(tuple(shape), "i32")]


def _concat(attrs: Attrs, types: list[Type]) -> list[Type]:
    first = _tensor(types, 0)
    axis = attrs["axis"]
    shape = list(first.shape)
    shape[axis] = sum(_tensor(types, k).shape[axis] for k in range(len(types)))
    return [TensorType(tuple(shape), first.dtype)]


def _transpose(attrs: Attrs, types: list[Type]) -> list[Type]:
    t = _tensor(types, 0)
    return [TensorType(tuple(t.shape[p] for p in attrs["perms"]), t.dtype)]


def _gather(attrs: Attrs, types: list[Type]) -> list[Type]:
    values, indices = _tensor(types, 0), _tensor(types, 1)
    return [TensorType((values.shape[0], indices.shape[1], values.shape[2]), values.dtype)]


def _output_size(size: int, pad_before: int, pad_after: int, kernel: int, stride: int, dilation: int = 1) -> int:
    span = size - 1 + pad_before + pad_after - (kernel - 1) * dilation
    if span % stride:
        raise ValueError(f"output size ({span} / stride {stride}) is not a whole number")
    return span // stride + 1


# Convolution result element type by input element type (floats keep theirs; fp8 gives f16).
_CONV_RESULT = {"i8": "i32", "i16": "i48", "f8E4M3FN": "f16", "f8E5M2": "f16"}


def _conv(kernel_dims: slice, channels: Callable[[tuple[int, ...], tuple[int, ...]], int]):
    """Convolution over the spatial dims of NHWC / NDHWC input; `kernel_dims` picks the kernel
    sizes out of the weight shape, `channels(input shape, weight shape)` the output channels."""
    def infer(attrs: Attrs, types: list[Type]) -> list[Type]:
        x, w = _tensor(types, 0), _tensor(types, 1)
        kernel = w.shape[kernel_dims]
        spatial = [_output_size(x.shape[1 + i], attrs["pad"][2 * i], attrs["pad"][2 * i + 1], k, attrs["stride"][i],
                                attrs["dilation"][i]) for i, k in enumerate(kernel)]
        return [TensorType((x.shape[0], *spatial, channels(x.shape, w.shape)), _CONV_RESULT.get(x.dtype, x.dtype))]
    return infer


def _transpose_conv2d(attrs: Attrs, types: list[Type]) -> list[Type]:
    x, w = _tensor(types, 0), _tensor(types, 1)
    out_pad, stride = attrs["out_pad"], attrs["stride"]
    oh = (x.shape[1] - 1) * stride[0] + out_pad[0] + out_pad[1] + w.shape[1]
    ow = (x.shape[2] - 1) * stride[1] + out_pad[2] + out_pad[3] + w.shape[2]
    return [TensorType((x.shape[0], oh, ow, w.shape[0]), _CONV_RESULT.get(x.dtype, x.dtype))]


def _pool(attrs: Attrs, types: list[Type]) -> list[Type]:
    x = _tensor(types, 0)
    pad, kernel, stride = attrs["pad"], attrs["kernel"], attrs["stride"]
    oh = _output_size(x.shape[1], pad[0], pad[1], kernel[0], stride[0])
    ow = _output_size(x.shape[2], pad[2], pad[3], kernel[1], stride[1])
    return [TensorType((x.shape[0], oh, ow, x.shape[3]), x.dtype)]


def _fft(attrs: Attrs, types: list[Type]) -> list[Type]:
    return [_tensor(types, 0)] * 2


def _rfft(attrs: Attrs, types: list[Type]) -> list[Type]:
    n, h, w = _tensor(types, 0).shape
    return [TensorType((n, h, w // 2 + 1), _tensor(types, 0).dtype)] * 2


_SAME_DTYPE_BINARY = ("add", "sub", "maximum", "minimum", "pow", "bitwise_and", "bitwise_or", "bitwise_xor", "intdiv",
                      "logical_and", "logical_or", "logical_xor", "logical_left_shift", "logical_right_shift",
                      "arithmetic_right_shift")
_SAME_TYPE_UNARY = ("abs", "bitwise_not", "ceil", "clz", "cos", "exp", "floor", "log", "logical_not", "reciprocal",
                    "rsqrt", "sin", "erf", "sigmoid", "tanh", "identity", "clamp", "negate", "reverse")
INFER: dict[str, Callable[[Attrs, list[Type]], list[Type]]] = {
    **{name: _elementwise() for name in _SAME_DTYPE_BINARY},
    **{name: _same for name in _SAME_TYPE_UNARY},
    **{name: _elementwise(lambda d: "i1") for name in ("equal", "greater", "greater_equal")},
    **{name: _reduce for name in ("reduce_all", "reduce_any", "reduce_max", "reduce_min", "reduce_product",
                                   "reduce_sum")},
    "mul": _elementwise(lambda d: "i32" if d in ("i8", "i16") else d),
    "select": _elementwise(data_operand=1, operands=3),
    "table": lambda attrs, types: [_tensor(types, 0).with_dtype("i32" if _tensor(types, 0).dtype == "i16" else "i8")],
    "argmax": _argmax,
    "concat": _concat,
    "transpose": _transpose,
    "gather": _gather,
    "scatter": lambda attrs, types: [_tensor(types, 0)],
    "conv2d": _conv(slice(1, 3), lambda x, w: w[0]),
    "conv3d": _conv(slice(1, 4), lambda x, w: w[0]),
    "depthwise_conv2d": _conv(slice(0, 2), lambda x, w: w[2] * w[3]),
    "transpose_conv2d": _transpose_conv2d,
    "avg_pool2d": _pool,
    "max_pool2d": _pool,
    "fft2d": _fft,
    "rfft2d": _rfft,
}


# ---------------------------------------------------------------- the op table
def _op(
    name: str,
    operands: Sequence[str] | tuple[int, int | None],
    doc: str,
    *,
    results: int | tuple[int, int | None] = 1,
    attrs: dict[str, AttrSpec] | None = None,
    shapes: Iterable[int] = (),
    constants: Iterable[int] = (),
    verify: Callable[[Graph, int], list[str]] | None = None,
    fold: Any = None,
    traits: Iterable[Trait] = (),
) -> None:
    """Define tosa.<name>. `operands` names the operands (or gives a variadic arity); `shapes` and
    `constants` are the positions of shape operands and of operands that must be tosa.const."""
    if isinstance(operands, tuple) and operands and isinstance(operands[0], int):
        arity: Any = operands
        operand_doc = "variadic tensors"
    else:
        arity = len(operands)
        operand_doc = ", ".join(operands) if operands else "none"
    define(
        f"tosa.{name}",
        operands=arity,
        results=results,
        attrs=attrs,
        doc=f"{doc} Operands: {operand_doc}.",
        verify=verify or _operand_kinds_verifier(tuple(shapes), tuple(constants)),
        fold=fold,
        traits=traits,
        infer=INFER.get(name),
    )


# Tensor operators
_op("argmax", ("input",), "Index (i32) of the largest value along `axis`, which is removed from the shape.",
    attrs={"axis": AXIS, "nan_mode": NAN_MODE})
_op("avg_pool2d", ("input", "input_zp", "output_zp"),
    "NHWC average pooling; padding is excluded from the divisor; integer results are rounded.",
    attrs={"kernel": KERNEL2, "stride": STRIDE2, "pad": PAD4, "acc_type": ACC_TYPE}, constants=(1, 2))
_CONV_ATTRS = {"pad": PAD4, "stride": STRIDE2, "dilation": DILATION2, "acc_type": ACC_TYPE, "local_bound": LOCAL_BOUND}
_op("conv2d", ("input", "weight", "bias", "input_zp", "weight_zp"),
    "NHWC 2-D convolution with OHWI weights and per-output-channel bias.", attrs=_CONV_ATTRS, constants=(3, 4))
_op("conv3d", ("input", "weight", "bias", "input_zp", "weight_zp"),
    "NDHWC 3-D convolution with ODHWI weights and per-output-channel bias.",
    attrs={"pad": attr("ints", "[front, back, top, bottom, left, right] padding"),
           "stride": attr("ints", "[d, y, x] stride"), "dilation": attr("ints", "[d, y, x] dilation"),
           "acc_type": ACC_TYPE, "local_bound": LOCAL_BOUND}, constants=(3, 4))
_op("depthwise_conv2d", ("input", "weight", "bias", "input_zp", "weight_zp"),
    "NHWC depthwise convolution with [KH, KW, C, M] weights: output channel c*M+m.",
    attrs=_CONV_ATTRS, constants=(3, 4))
_op("fft2d", ("input_real", "input_imag"), "2-D discrete Fourier transform over H and W of [N, H, W] inputs.",
    results=2, attrs={"inverse": attr("bool", "true computes the inverse transform"), "local_bound": LOCAL_BOUND})
_op("matmul", ("a", "b", "a_zp", "b_zp"), "Batched matrix product [N, H, C] x [N, C, W] -> [N, H, W].",
    constants=(2, 3))
_op("max_pool2d", ("input",), "NHWC max pooling; padding never wins.",
    attrs={"kernel": KERNEL2, "stride": STRIDE2, "pad": PAD4, "nan_mode": NAN_MODE})
_op("rfft2d", ("input_real",), "2-D real-input Fourier transform of [N, H, W] -> two [N, H, W/2+1] outputs.",
    results=2, attrs={"local_bound": LOCAL_BOUND})
_op("transpose_conv2d", ("input", "weight", "bias", "input_zp", "weight_zp"),
    "NHWC transposed (fractionally strided) 2-D convolution with OHWI weights.",
    attrs={"out_pad": attr("ints", "[top, bottom, left, right] output padding (may be negative)"),
           "stride": STRIDE2, "acc_type": ACC_TYPE, "local_bound": LOCAL_BOUND}, constants=(3, 4))

# Activation functions
def _verify_clamp(graph: Graph, node: int) -> list[str]:
    """The common checks, and integer bounds that are values of the input's type (both the
    flatbuffer and MLIR store them in it: a damaged .tosa file can claim anything)."""
    problems = _operand_kinds_verifier((), ())(graph, node)
    t = graph.type_of(graph.operand(node, 0))
    if not problems and t.dtype in ("i8", "i16", "i32"):
        info = np.iinfo(t.numpy_dtype)
        problems += [f"{name} {graph.attrs(node)[name]} is not an {t.dtype} value" for name in ("min_val", "max_val")
                     if not info.min <= graph.attrs(node)[name] <= info.max]
    return problems


_op("clamp", ("input",), "min(max(x, min_val), max_val); bounds are in the input's element type (no zero point).",
    attrs={"min_val": attr("scalar_like:0", "lower bound"), "max_val": attr("scalar_like:0", "upper bound"),
           "nan_mode": NAN_MODE}, verify=_verify_clamp)
_op("erf", ("input",), "Gauss error function, elementwise.")
_op("sigmoid", ("input",), "1 / (1 + exp(-x)), elementwise.")
_op("tanh", ("input",), "Hyperbolic tangent, elementwise.")

# Elementwise binary operators (numpy-style broadcasting of equal-rank operands)
_BINARY = {
    "add": "x + y (integer addition wraps).",
    "bitwise_and": "x & y.",
    "bitwise_or": "x | y.",
    "bitwise_xor": "x ^ y.",
    "intdiv": "Integer x / y rounded toward zero.",
    "logical_and": "Boolean x and y.",
    "logical_left_shift": "x << y.",
    "logical_right_shift": "x >> y with zeros shifted in.",
    "logical_or": "Boolean x or y.",
    "logical_xor": "Boolean x xor y.",
    "pow": "x ** y (floating point).",
    "sub": "x - y (integer subtraction wraps).",
}
for _name, _doc in _BINARY.items():
    _op(_name, ("input1", "input2"), _doc, traits={"elementwise"})
_op("arithmetic_right_shift", ("input1", "input2"), "x >> y with sign extension; `round` adds the last bit shifted out.",
    attrs={"round": attr("bool", "round to nearest instead of toward minus infinity")}, traits={"elementwise"})
_op("maximum", ("input1", "input2"), "Elementwise maximum.", attrs={"nan_mode": NAN_MODE}, traits={"elementwise"})
_op("minimum", ("input1", "input2"), "Elementwise minimum.", attrs={"nan_mode": NAN_MODE}, traits={"elementwise"})
_op("mul", ("input1", "input2", "shift"),
    "x * y; for i32 results of integer inputs, rounded right shift by `shift` (a tensor<1xi8> constant).",
    constants=(2,), traits={"elementwise"})
_op("table", ("input1", "table"),
    "Table lookup: i8 input indexes a 256-entry i8 table; i16 input interpolates a 513-entry i16 table to i32.",
    constants=(1,))

# Elementwise unary operators
_UNARY = {
    "abs": "|x|.",
    "bitwise_not": "~x.",
    "ceil": "Smallest integer value >= x.",
    "clz": "Number of leading zero bits of an i32.",
    "cos": "cos(x).",
    "exp": "e ** x.",
    "floor": "Largest integer value <= x.",
    "log": "Natural logarithm.",
    "logical_not": "Boolean not.",
    "reciprocal": "1 / x.",
    "rsqrt": "1 / sqrt(x).",
    "sin": "sin(x).",
}
for _name, _doc in _UNARY.items():
    _op(_name, ("input1",), _doc, traits={"elementwise"})
_op("negate", ("input1", "input1_zp", "output_zp"), "-(x - input1_zp) + output_zp, saturating for integers.",
    constants=(1, 2), traits={"elementwise"})

# Elementwise ternary and comparison operators
_op("select", ("input1", "input2", "input3"), "input1 ? input2 : input3 (input1 is i1).", traits={"elementwise"})
_op("equal", ("input1", "input2"), "x == y, i1 result.", traits={"elementwise"})
_op("greater", ("input1", "input2"), "x > y, i1 result.", traits={"elementwise"})
_op("greater_equal", ("input1", "input2"), "x >= y, i1 result.", traits={"elementwise"})

# Reductions (the reduced axis is kept with size 1)
_REDUCE = {
    "reduce_all": "Logical and along `axis`.",
    "reduce_any": "Logical or along `axis`.",
    "reduce_product": "Product along `axis`.",
    "reduce_sum": "Sum along `axis`.",
}
for _name, _doc in _REDUCE.items():
    _op(_name, ("input",), _doc + " The axis is kept with size 1.", attrs={"axis": AXIS})
_op("reduce_max", ("input",), "Maximum along `axis`. The axis is kept with size 1.", attrs={"axis": AXIS, "nan_mode": NAN_MODE})
_op("reduce_min", ("input",), "Minimum along `axis`. The axis is kept with size 1.", attrs={"axis": AXIS, "nan_mode": NAN_MODE})

# Data layout
_op("concat", (1, None), "Concatenation of the inputs along `axis`.", attrs={"axis": AXIS})
_op("pad", ("input1", "padding", "pad_const"),
    "Pads each dimension by padding[2i] before and padding[2i+1] after with pad_const (a 1-element constant).",
    shapes=(1,), constants=(2,))
_op("reshape", ("input1", "shape"), "The same elements in row-major order with shape `shape`.", shapes=(1,))
_op("reverse", ("input1",), "Reverses the order of elements along `axis`.", attrs={"axis": AXIS})
_op("slice", ("input1", "start", "size"), "The sub-tensor of `size` elements starting at `start`.", shapes=(1, 2))
_op("tile", ("input1", "multiples"), "Repeats the input `multiples[i]` times along dimension i.", shapes=(1,))
_op("transpose", ("input1",), "Permutes dimensions: result.shape[i] = input.shape[perms[i]].",
    attrs={"perms": attr("i32s", "result dimension i is input dimension perms[i]")}, fold=_fold_transpose)

# Scatter and gather
_op("gather", ("values", "indices"), "output[n, w, c] = values[n, indices[n, w], c].")
_op("scatter", ("values_in", "indices", "input"), "values_in with values_out[n, indices[n, w], c] = input[n, w, c].")

# Image
_op("resize", ("input", "scale", "offset", "border"),
    "NHWC resize by scale [y_n, y_d, x_n, x_d] with offset [y, x] and border [y, x]; nearest or bilinear.",
    attrs={"mode": attr("enum:tosa.resize_mode", "NEAREST_NEIGHBOR or BILINEAR (MLIR's names)")}, shapes=(1, 2, 3))

# Type conversion
_op("cast", ("input",), "Converts element types: float to int rounds to nearest even and saturates; "
    "to i1 is x != 0.")
_op("rescale", ("input", "multiplier", "shift", "input_zp", "output_zp"),
    "Integer rescale: ((x - input_zp) * multiplier >> shift) + output_zp, saturated to the output type; "
    "per channel along the last axis when per_channel.",
    attrs={"scale32": attr("bool", "multiplier is i32 (true) or i16 (false)"),
           "rounding_mode": attr("enum:tosa.rounding_mode", "SINGLE_ROUND, INEXACT_ROUND or DOUBLE_ROUND"),
           "per_channel": attr("bool", "one multiplier/shift per channel of the last axis"),
           "input_unsigned": attr("bool", "the i8/i16 input holds unsigned values"),
           "output_unsigned": attr("bool", "the i8/i16 output holds unsigned values")},
    constants=(1, 2, 3, 4))

# Data nodes
define("tosa.const", operands=0,
       attrs={"values": attr("tensor", "the tensor, in the storage dtype of the result element type")},
       doc="A constant tensor. Operands: none.", verify=_verify_const, traits={"constant"})
_op("identity", ("input1",), "Returns its input unchanged.", fold=_fold_identity)

# Custom operators
_op("custom", (0, None), "An implementation-defined operator named by domain and operator name.",
    results=(0, None),
    attrs={"operator_name": attr("str", "the operator's name"), "domain_name": attr("str", "its domain"),
           "implementation_attrs": attr("str", "implementation-defined attributes")},
    traits={UNKNOWN_EFFECTS})

# Control flow (branches are other graphs of the module, named: the IR has no regions)
_op("cond_if", (1, None), "Runs then_graph if the i1 condition (first operand) is true, else else_graph, "
    "on the remaining operands.", results=(0, None),
    attrs={"then_graph": attr("str", "name of the graph run when true"),
           "else_graph": attr("str", "name of the graph run when false")}, traits={"control_flow", BRANCH_EFFECTS})
_op("while_loop", (0, None), "Runs body_graph while cond_graph returns true, threading the operands.",
    results=(0, None),
    attrs={"cond_graph": attr("str", "name of the condition graph"), "body_graph": attr("str", "name of the body graph")},
    traits={"control_flow", BRANCH_EFFECTS})

# Variables
_op("variable", (), "Declares a persistent variable tensor.", results=0,
    attrs={"sym_name": attr("str", "the variable's name"), "var_shape": attr("ints", "its shape"),
           "type": attr("elemtype", "its element type"),
           "initial_value": attr("tensor", "its initial value", optional=True)}, traits={"variable", DECLARES_VARIABLE})
_op("variable_write", ("input1",), "Writes a variable.", results=0, attrs={"name": attr("str", "the variable")},
    traits={"variable", WRITES_VARIABLE})
_op("variable_read", (), "Reads a variable.", attrs={"name": attr("str", "the variable")},
    traits={"variable", READS_VARIABLE})

# Shapes
define("tosa.const_shape", operands=0,
       attrs={"values": attr("tensor", "the shape's values: a 1-D int64 array of `rank` elements")},
       doc="A constant shape value (!tosa.shape<rank>), the operand form of static shape parameters. Operands: none.",
       verify=_verify_const_shape, traits={"constant"})


def unsupported_for_emission(graphs: Iterable[Graph]) -> list[Unsupported]:
    """What the emitters cannot write, all of it: ops of other dialects (not lowered)."""
    items = []
    for g in graphs:
        for node in g.nodes():
            op = g.op(node)
            if op == INPUT_OP:
                continue
            d = op_def(op)
            where = f"{g.name}: {g.loc(node) or f'%{node}'}"
            if d is None or d.dialect != "tosa":
                items.append(Unsupported(op, where, "not lowered to TOSA"))
    return items


def with_distinct_outputs(graph: Graph) -> Graph:
    """`graph`, or a copy of it in which every output has a tensor of its own: an output that
    returns a graph input or a value an earlier output returns reads a new tosa.identity of it.
    Both emitters write this form, so every input and output name reaches the .tosa (tosa-opt
    would otherwise name such an output after the input, or repeat the earlier output's name)."""
    seen = set(graph.input_values())
    needs_copy = []
    for i, out in enumerate(graph.outputs):
        if out.value in seen:
            needs_copy.append(i)
        seen.add(out.value)
    if not needs_copy:
        return graph
    g = graph.copy()
    for i in needs_copy:
        out = g.outputs[i]
        node = g.add_op("tosa.identity", [out.value], [g.type_of(out.value)], {})
        out.value = Value(node, 0)
    return g
