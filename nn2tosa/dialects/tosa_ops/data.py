"""TOSA reductions, data layout, scatter/gather, resize, type conversion, data nodes, custom
operators, control flow, variables and shapes: one record each."""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from nn2tosa.ir import Graph, ShapeType, TensorType, attr
from nn2tosa.ir.effects import (BRANCH_EFFECTS, DECLARES_VARIABLE, READS_VARIABLE, UNKNOWN_EFFECTS,
                                 WRITES_VARIABLE)
from nn2tosa.ir.verify import constant_verifier
from nn2tosa.tosa_flatbuffer.fields_0100 import (FOLDED_INTO_FIELDS, RESULT, Attr, ConstVector, DoubleRound,
                                                 ImplementationAttrs, PadValue, PropagatesNan, ShapeField, Unsigned,
                                                 ZeroPoint, legacy)

from . import infer, levels
from .attrs import AXIS, NAN_MODE
from .record import Support, TosaOp, operands, register, support, tensor_type_problems
from .support import (ANY, ARITH_I32_INT, BOOL, CONTROL_FLOW, DATA_MOVEMENT, DATA_NODE_INPUT, DATA_NODE_RESULT,
                      E4, E5, FLOAT_UNARY, GATHER, REDUCE_MINMAX, SIG_IN, SIG_IN_OUT, cast_rows, variable)

_const_values = constant_verifier("values")
_AXIS_ONLY = {"axis": AXIS}
_VARIABLES_0100 = "variables are not in the 0.90 layout"
# the 0.100 layout keeps branches as blocks of the main region; nn2tosa writes them in 1.0 only
_CONTROL_FLOW_0100 = "control flow is written in the TOSA 1.0 layout only (--tosa-version 1.0)"


def _verify_const(graph: Graph, node: int) -> list[str]:
    return tensor_type_problems(graph.types(node)[0]) or _const_values(graph, node)


def _shape_lengths(lengths: Callable[[int, int], tuple[int, ...]]) -> Callable[[Graph, int], list[str]]:
    """A verifier that the shape operands after the first hold `lengths(input rank, result rank)`
    values each (what the level checks, the writers and the reference model read)."""

    def verify(graph: Graph, node: int) -> list[str]:
        operands = graph.operands(node)
        t_in, t_out = graph.type_of(operands[0]), graph.types(node)[0]
        if not isinstance(t_in, TensorType) or not isinstance(t_out, TensorType):
            return []  # the operand kinds' own verifier says so
        expected = lengths(t_in.rank, t_out.rank)
        return [f"operand #{k} must be a !tosa.shape<{n}>, is {graph.type_of(v)}"
                for k, (v, n) in enumerate(zip(operands[1:], expected), start=1)
                if not (isinstance(graph.type_of(v), ShapeType) and graph.type_of(v).rank == n)]

    return verify


def _verify_const_shape(graph: Graph, node: int) -> list[str]:
    value = graph.attrs(node)["values"]
    t = graph.types(node)[0]
    if not isinstance(t, ShapeType):
        return [f"result must be a !tosa.shape, is {t}"]
    if value.ndim != 1 or value.shape[0] != t.rank or value.dtype != np.int64:
        return [f"values must be a 1-D int64 array of {t.rank} elements, is {value.dtype}{list(value.shape)}"]
    return []


def _reduce(name: str, doc: str, supported: Support, nan_mode: bool = False) -> TosaOp:
    """A reduction along `axis` (kept with size 1); `nan_mode` for those that compare."""
    attrs = {"axis": AXIS, "nan_mode": NAN_MODE} if nan_mode else _AXIS_ONLY
    fields = (Attr("axis"), PropagatesNan()) if nan_mode else (Attr("axis"),)
    return TosaOp(name, operands("input"), doc + " The axis is kept with size 1.", supported, attrs=attrs,
                  infer=infer.reduce, legacy=legacy(name.upper(), "AxisAttribute", *fields))


register(
    # Reductions
    _reduce("reduce_all", "Logical and along `axis`.", BOOL),
    _reduce("reduce_any", "Logical or along `axis`.", BOOL),
    _reduce("reduce_product", "Product along `axis`.", FLOAT_UNARY),
    _reduce("reduce_sum", "Sum along `axis`.", ARITH_I32_INT),
    _reduce("reduce_max", "Maximum along `axis`.", REDUCE_MINMAX, nan_mode=True),
    _reduce("reduce_min", "Minimum along `axis`.", REDUCE_MINMAX, nan_mode=True),

    # Data layout
    # CONCAT is the one data-movement op whose i16 form needs EXT-INT16
    TosaOp("concat", (1, None), "Concatenation of the inputs along `axis`.",
           support(SIG_IN, {"any": "i1", "int": "i8 i32", "int16": "i16", "fp": "f16 f32", "fp8e4m3": E4,
                            "fp8e5m2": E5, "bf16": "bf16"}),
           attrs=_AXIS_ONLY, infer=infer.concat, level=levels.tensor_list, legacy=legacy("CONCAT", "AxisAttribute", Attr("axis"))),
    TosaOp("pad", operands("input1", "padding:shape", "pad_const:const"),
           "Pads each dimension by padding[2i] before and padding[2i+1] after with pad_const (a 1-element constant).",
           DATA_MOVEMENT, verify=_shape_lengths(lambda r_in, r_out: (2 * r_in,)),
           legacy=legacy("PAD", "PadAttribute", ShapeField("padding", 1), PadValue())),
    TosaOp("reshape", operands("input1", "shape:shape"), "The same elements in row-major order with shape `shape`.",
           DATA_MOVEMENT, verify=_shape_lengths(lambda r_in, r_out: (r_out,)), legacy=legacy("RESHAPE", "ReshapeAttribute", ShapeField("new_shape", 1))),
    TosaOp("reverse", operands("input1"), "Reverses the order of elements along `axis`.", DATA_MOVEMENT,
           attrs=_AXIS_ONLY, infer=infer.same, legacy=legacy("REVERSE", "AxisAttribute", Attr("axis"))),
    TosaOp("slice", operands("input1", "start:shape", "size:shape"),
           "The sub-tensor of `size` elements starting at `start`.", DATA_MOVEMENT,
           verify=_shape_lengths(lambda r_in, r_out: (r_in, r_in)),
           legacy=legacy("SLICE", "SliceAttribute", ShapeField("start", 1), ShapeField("size", 2))),
    TosaOp("tile", operands("input1", "multiples:shape"), "Repeats the input `multiples[i]` times along dimension i.",
           DATA_MOVEMENT, verify=_shape_lengths(lambda r_in, r_out: (r_in,)), legacy=legacy("TILE", "TileAttribute", ShapeField("multiples", 1))),
    TosaOp("transpose", operands("input1"), "Permutes dimensions: result.shape[i] = input.shape[perms[i]].",
           DATA_MOVEMENT, attrs={"perms": attr("i32s", "result dimension i is input dimension perms[i]")},
           infer=infer.transpose, fold=infer.fold_transpose,
           legacy=legacy("TRANSPOSE", "TransposeAttribute", Attr("perms"))),

    # Scatter and gather
    TosaOp("gather", operands("values", "indices"), "output[n, w, c] = values[n, indices[n, w], c].", GATHER,
           infer=infer.gather),
    TosaOp("scatter", operands("values_in", "indices", "input"),
           "values_in with values_out[n, indices[n, w], c] = input[n, w, c].", GATHER, infer=infer.first),

    # Image
    TosaOp("resize", operands("input", "scale:shape", "offset:shape", "border:shape"),
           "NHWC resize by scale [y_n, y_d, x_n, x_d] with offset [y, x] and border [y, x]; nearest or bilinear.",
           support(SIG_IN_OUT, {"int": "i8,i32 i8,i8", "fp": "f16,f16 f32,f32", "int16": "i16,i48 i16,i16",
                                "bf16": "bf16,bf16"}),
           attrs={"mode": attr("enum:tosa.resize_mode", "NEAREST_NEIGHBOR or BILINEAR (MLIR's names)")},
           verify=_shape_lengths(lambda r_in, r_out: (4, 2, 2)), level=levels.resize, legacy=legacy("RESIZE", "ResizeAttribute", ShapeField("scale", 1, bits=16),
                         ShapeField("offset", 2, bits=16), ShapeField("border", 3, bits=16),
                         Attr("mode", renamed=(("NEAREST_NEIGHBOR", "NEAREST"),)))),

    # Type conversion
    TosaOp("cast", operands("input"), "Converts element types: float to int rounds to nearest even and saturates; "
           "to i1 is x != 0.", support(SIG_IN_OUT, cast_rows())),
    TosaOp("rescale", operands("input", "multiplier:const", "shift:const", "input_zp:const", "output_zp:const"),
           "Integer rescale: ((x - input_zp) * multiplier >> shift) + output_zp, saturated to the output type; "
           "per channel along the last axis when per_channel.",
           support(SIG_IN_OUT, {"int": " ".join(f"{a},{b}" for a in ("i8", "i16", "i32") for b in ("i8", "i16", "i32")),
                                "int16": "i48,i8 i48,i16 i48,i32"}),
           attrs={"scale32": attr("bool", "multiplier is i32 (true) or i16 (false)"),
                  "rounding_mode": attr("enum:tosa.rounding_mode", "SINGLE_ROUND, INEXACT_ROUND or DOUBLE_ROUND"),
                  "per_channel": attr("bool", "one multiplier/shift per channel of the last axis"),
                  "input_unsigned": attr("bool", "the i8/i16 input holds unsigned values"),
                  "output_unsigned": attr("bool", "the i8/i16 output holds unsigned values")},
           # rounding modes beyond SINGLE_ROUND come from extensions
           attribute_extensions={"rounding_mode": {"DOUBLE_ROUND": "doubleround", "INEXACT_ROUND": "inexactround"}},
           # (fields are read in order: the multiplier's element type depends on scale32)
           legacy=legacy("RESCALE", "RescaleAttribute", Attr("scale32"), DoubleRound(), Attr("per_channel"),
                         Unsigned("input_unsigned"), Unsigned("output_unsigned"),
                         ZeroPoint("input_zp", 3, like=0, unsigned="input_unsigned"),
                         ZeroPoint("output_zp", 4, like=RESULT, unsigned="output_unsigned"),
                         ConstVector("multiplier", 1, lambda attrs, input_type: "i32" if attrs["scale32"] else "i16"),
                         ConstVector("shift", 2, lambda attrs, input_type: "i8"))),

    # Data nodes
    TosaOp("const", (), "A constant tensor.", DATA_NODE_RESULT,
           attrs={"values": attr("tensor", "the tensor, in the storage dtype of the result element type")},
           verify=_verify_const, check_kinds=False, traits=frozenset({"constant"})),
    TosaOp("identity", operands("input1"), "Returns its input unchanged.", DATA_NODE_INPUT, infer=infer.same,
           fold=infer.fold_identity),

    # Custom operators
    TosaOp("custom", (0, None), "An implementation-defined operator named by domain and operator name.", ANY,
           results=(0, None),
           attrs={"operator_name": attr("str", "the operator's name"), "domain_name": attr("str", "its domain"),
                  "implementation_attrs": attr("str", "implementation-defined attributes")},
           traits=frozenset({UNKNOWN_EFFECTS}), level=levels.tensor_list,
           legacy=legacy("CUSTOM", "CustomAttribute", Attr("operator_name"), Attr("domain_name"),
                         ImplementationAttrs())),

    # Control flow (branches are other graphs of the module, named: the IR has no regions)
    TosaOp("cond_if", (1, None), "Runs then_graph if the i1 condition (first operand) is true, else else_graph, "
           "on the remaining operands.", CONTROL_FLOW, results=(0, None),
           attrs={"then_graph": attr("str", "name of the graph run when true"),
                  "else_graph": attr("str", "name of the graph run when false")},
           traits=frozenset({"control_flow", BRANCH_EFFECTS}), level=levels.tensor_list,
           legacy=legacy("COND_IF", "CondIfAttribute", Attr("then_graph", "then_branch"),
                         Attr("else_graph", "else_branch")), legacy_unwritten=_CONTROL_FLOW_0100),
    TosaOp("while_loop", (0, None), "Runs body_graph while cond_graph returns true, threading the operands.",
           CONTROL_FLOW, results=(0, None),
           attrs={"cond_graph": attr("str", "name of the condition graph"),
                  "body_graph": attr("str", "name of the body graph")},
           traits=frozenset({"control_flow", BRANCH_EFFECTS}), level=levels.tensor_list,
           legacy=legacy("WHILE_LOOP", "WhileLoopAttribute", Attr("cond_graph", "cond_branch"),
                         Attr("body_graph", "body_branch")), legacy_unwritten=_CONTROL_FLOW_0100),

    # Variables
    TosaOp("variable", (), "Declares a persistent variable tensor.", variable(("type",)), results=0,
           attrs={"sym_name": attr("str", "the variable's name"), "var_shape": attr("ints", "its shape"),
                  "type": attr("elemtype", "its element type"),
                  "initial_value": attr("tensor", "its initial value", optional=True)},
           traits=frozenset({"variable", DECLARES_VARIABLE}), legacy=_VARIABLES_0100),
    TosaOp("variable_write", operands("input1"), "Writes a variable.", variable(SIG_IN), results=0,
           attrs={"name": attr("str", "the variable")}, traits=frozenset({"variable", WRITES_VARIABLE}),
           legacy=_VARIABLES_0100),
    TosaOp("variable_read", (), "Reads a variable.", variable(("r0",)), attrs={"name": attr("str", "the variable")},
           traits=frozenset({"variable", READS_VARIABLE}), legacy=_VARIABLES_0100),

    # Shapes
    TosaOp("const_shape", (), "A constant shape value (!tosa.shape<rank>), the operand form of static shape "
           "parameters.", ANY,
           attrs={"values": attr("tensor", "the shape's values: a 1-D int64 array of `rank` elements")},
           verify=_verify_const_shape, check_kinds=False, traits=frozenset({"constant"}), legacy=FOLDED_INTO_FIELDS),
)
