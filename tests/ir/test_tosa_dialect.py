"""The tosa dialect's registry against the two references it mirrors: the TOSA 1.0 operator list of
the flatbuffer schema, and MLIR 22's tosa dialect (operand counts and attribute names, read from
the generated Python bindings); plus its verifier, folders and the IR text round trip."""
from __future__ import annotations

import inspect
import re

import numpy as np
import pytest
from mlir.dialects import _tosa_ops_gen as mlir_tosa

from nn2tosa.diagnostics import UnsupportedError
from nn2tosa.ir import Builder, Graph, ShapeType, TensorType, Value, VerificationError, op_def, ops_of, verify
from nn2tosa.ir.text import parse_ir, print_ir
from nn2tosa.lowering.flatbuffer_emitter import build_flatbuffer
from nn2tosa.lowering.mlir_emitter import to_mlir
from nn2tosa.passes import PassManager
from nn2tosa.schemas import tosa_generated as fb

# IR-only attributes: the IR has no regions, so control flow names its branch graphs
IR_ONLY_ATTRS = {"tosa.cond_if": {"then_graph", "else_graph"}, "tosa.while_loop": {"cond_graph", "body_graph"}}


def tosa_1_0_ops() -> set[str]:
    """Op enum members of the schema up to CONST_SHAPE, the last TOSA 1.0 operator."""
    return {f"tosa.{name.lower()}" for name, value in vars(fb.Op).items()
            if isinstance(value, int) and 0 < value <= fb.Op.CONST_SHAPE}


def mlir_op_classes() -> dict[str, type]:
    return {cls.OPERATION_NAME: cls for cls in vars(mlir_tosa).values()
            if inspect.isclass(cls) and hasattr(cls, "OPERATION_NAME")}


def mlir_signature(cls: type) -> tuple[int | None, set[str], set[str]]:
    """(fixed operand count or None when variadic, required attribute names, optional ones),
    read from the generated builder's source."""
    source = inspect.getsource(cls.__init__)
    operand_calls = re.findall(r"operands\.(append|extend)\(", source)
    count = None if "extend" in operand_calls else len(operand_calls)
    required = set(re.findall(r'^\s+attributes\["(\w+)"\]', source, re.M))
    optional = set(re.findall(r'if \w+ is not None: attributes\["(\w+)"\]', source))
    return count, required, optional


def test_registry_holds_exactly_the_tosa_1_0_operators():
    assert {d.name for d in ops_of("tosa")} == tosa_1_0_ops()
    assert len(tosa_1_0_ops()) == 75


@pytest.mark.parametrize("name", sorted(tosa_1_0_ops()))
def test_op_matches_mlir_tosa_dialect(name):
    d = op_def(name)
    cls = mlir_op_classes()[name]
    count, required, optional = mlir_signature(cls)
    ours = set(d.attrs) - IR_ONLY_ATTRS.get(name, set())
    ours_required = {k for k, spec in d.attrs.items() if not spec.optional} - IR_ONLY_ATTRS.get(name, set())
    assert ours <= required | optional, f"attributes MLIR does not have: {ours - required - optional}"
    assert required <= ours_required, f"MLIR requires {required - ours_required}"
    if count is not None:
        assert d.operands == count
    assert d.doc and "Operands:" in d.doc


# ------------------------------------------------------------------------------ verifier
def tosa_graph() -> tuple[Graph, Builder]:
    g = Graph()
    return g, Builder(g, constant_dialect="tosa")


def const_shape(g: Graph, values: list[int]) -> Value:
    return Value(g.add_op("tosa.const_shape", (), [ShapeType(len(values))], {"values": np.array(values, np.int64)}), 0)


def problems(g: Graph) -> list[str]:
    try:
        verify(g)
    except VerificationError as e:
        return e.problems
    return []


def test_verifier_accepts_well_formed_tosa():
    g, b = tosa_graph()
    x = g.add_input(TensorType((2, 3), "i8"), "x")
    r = b.op("tosa.reshape", [x, const_shape(g, [3, 2])], types=[TensorType((3, 2), "i8")])
    n = b.op("tosa.negate", [r, b.constant(np.array([1], np.int8)), b.constant(np.array([0], np.int8))],
             types=[TensorType((3, 2), "i8")])
    g.add_output(n, "y")
    assert problems(g) == []


@pytest.mark.parametrize("mistake, expected", [
    ("tensor_as_shape", "must be a !tosa.shape value"),
    ("zero_point_not_constant", "must be produced by tosa.const"),
    ("quantized_type", "carry no quantization"),
    ("unsigned_type", "not a TOSA 1.0 type"),
    ("const_dtype", "does not hold"),
    ("const_shape_dtype", "1-D int64"),
    ("const_beyond_i48", "beyond i48"),
    ("const_beyond_i4", "beyond i4"),
    ("slice_start_length", "operand #1 must be a !tosa.shape<2>, is !tosa.shape<0>"),
    ("pad_padding_length", "operand #1 must be a !tosa.shape<4>, is !tosa.shape<2>"),
    ("tile_multiples_length", "operand #1 must be a !tosa.shape<2>, is !tosa.shape<3>"),
    ("reshape_shape_length", "operand #1 must be a !tosa.shape<2>, is !tosa.shape<1>"),
])
def test_verifier_reports_tosa_level_mistakes(mistake, expected):
    from nn2tosa.ir import Quant

    g, b = tosa_graph()
    x = g.add_input(TensorType((2, 3), "i8"), "x")
    zp = b.constant(np.array([0], np.int8))
    if mistake == "tensor_as_shape":
        b.op("tosa.reshape", [x, b.constant(np.array([3, 2], np.int64))], types=[TensorType((3, 2), "i8")])
    elif mistake == "zero_point_not_constant":
        z = g.add_input(TensorType((1,), "i8"), "z")
        b.op("tosa.negate", [x, z, zp], types=[TensorType((2, 3), "i8")])
    elif mistake == "quantized_type":
        b.op("tosa.negate", [x, zp, zp], types=[TensorType((2, 3), "i8", Quant((0.5,), (0,)))])
    elif mistake == "unsigned_type":
        b.op("tosa.abs", [g.add_input(TensorType((2,), "ui8"), "u")], types=[TensorType((2,), "ui8")])
    elif mistake == "const_dtype":
        g.add_op("tosa.const", (), [TensorType((2,), "f32")], {"values": np.zeros(2, np.float64)})
    elif mistake == "const_shape_dtype":
        g.add_op("tosa.const_shape", (), [ShapeType(2)], {"values": np.array([1, 2], np.int32)})
    elif mistake == "const_beyond_i48":  # int64 storage holding a value i48 cannot
        g.add_op("tosa.const", (), [TensorType((2,), "i48")], {"values": np.array([0, 1 << 47], np.int64)})
    elif mistake == "slice_start_length":  # a file whose shape value lost its elements
        b.op("tosa.slice", [x, const_shape(g, []), const_shape(g, [1, 1])], types=[TensorType((1, 1), "i8")])
    elif mistake == "pad_padding_length":
        b.op("tosa.pad", [x, const_shape(g, [1, 1]), zp], types=[TensorType((2, 5), "i8")])
    elif mistake == "tile_multiples_length":
        b.op("tosa.tile", [x, const_shape(g, [1, 1, 1])], types=[TensorType((2, 3), "i8")])
    elif mistake == "reshape_shape_length":
        b.op("tosa.reshape", [x, const_shape(g, [6])], types=[TensorType((3, 2), "i8")])
    elif mistake == "const_beyond_i4":
        g.add_op("tosa.const", (), [TensorType((2,), "i4")], {"values": np.array([-9, 7], np.int8)})
    found = problems(g)
    assert any(expected in p for p in found), found


# ------------------------------------------------------------------------------ folders, text form
def test_fold_pass_folds_transpose_and_identity_of_constants():
    g, b = tosa_graph()
    c = b.constant(np.arange(6, dtype=np.int32).reshape(2, 3))
    t = b.op("tosa.transpose", [c], {"perms": [1, 0]}, types=[TensorType((3, 2), "i32")])
    i = b.op("tosa.identity", [t], types=[TensorType((3, 2), "i32")])
    g.add_output(i, "y")
    PassManager.from_names("fold,dce").run(g)
    assert g.histogram() == {"tosa.const": 1}
    np.testing.assert_array_equal(g.attrs(g.outputs[0].value.node)["values"], np.arange(6).reshape(2, 3).T)


def test_text_round_trip_keeps_every_attribute_kind():
    g, b = tosa_graph()
    x = g.add_input(TensorType((1, 4, 4, 2), "i8"), "x")
    zp = b.constant(np.array([0], np.int8))
    w = b.constant(np.array([[[[1, -2], [3, 4]], [[-5, 6], [7, -7]]]], np.int8), "i4")  # rank-4 i4 constant
    conv = b.op("tosa.conv2d", [x, w, b.constant(np.zeros(1, np.int32)), zp, b.constant(np.array([0], np.int8), "i4")],
                {"pad": [0, 1, 0, 1], "stride": [1, 1], "dilation": [1, 1], "acc_type": "i32"},
                types=[TensorType((1, 4, 4, 1), "i32")])
    resc = b.op("tosa.rescale", [conv, b.constant(np.array([1 << 30], np.int32)), b.constant(np.array([33], np.int8)),
                                 b.constant(np.array([0], np.int32)), zp],
                {"scale32": True, "rounding_mode": "SINGLE_ROUND", "per_channel": False, "input_unsigned": False,
                 "output_unsigned": False}, types=[TensorType((1, 4, 4, 1), "i8")])
    clamp = b.op("tosa.clamp", [resc], {"min_val": -3, "max_val": 100, "nan_mode": "IGNORE"},
                 types=[TensorType((1, 4, 4, 1), "i8")])
    t = b.op("tosa.transpose", [clamp], {"perms": [0, 3, 1, 2]}, types=[TensorType((1, 1, 4, 4), "i8")])
    mask = b.constant(np.array([[True, False], [False, True]]))  # rank-2 bool constant
    g.add_output(t, "out")
    g.add_output(mask, "mask")
    verify(g)
    back = parse_ir(print_ir(g))[0]
    verify(back)
    for original, parsed in zip(g.topological(), back.topological()):
        assert back.op(parsed) == g.op(original)
        a, b2 = g.attrs(original), back.attrs(parsed)
        assert a.keys() == b2.keys()
        for k in a:
            if isinstance(a[k], np.ndarray):
                np.testing.assert_array_equal(a[k], b2[k])
            else:
                assert a[k] == b2[k], k


def test_emitters_list_everything_they_cannot_write():
    g, b = tosa_graph()
    x = g.add_input(TensorType((2,), "f32"), "x")
    y = b.op("nn.neg", [x], types=[TensorType((2,), "f32")])
    z = b.op("tosa.cond_if", [b.constant(np.array([True])), y], {"then_graph": "a", "else_graph": "b"},
             types=[TensorType((2,), "f32")])
    g.add_output(z, "z")
    for emit in (to_mlir, build_flatbuffer):
        with pytest.raises(UnsupportedError) as e:
            emit(g)
        assert {item.what for item in e.value.items} == {"nn.neg", "tosa.cond_if"}


# ------------------------------------------------------------------------------ type inference
def test_builder_infers_result_types_of_tosa_ops():
    g, b = tosa_graph()
    x = g.add_input(TensorType((1, 8, 8, 3), "i8"), "x")
    zp = b.constant(np.array([0], np.int8))
    conv = b.op("tosa.conv2d", [x, b.constant(np.zeros((4, 3, 2, 3), np.int8)), b.constant(np.zeros(4, np.int32)), zp, zp],
                {"pad": [1, 0, 2, 1], "stride": [2, 1], "dilation": [1, 2], "acc_type": "i32"})
    assert g.type_of(conv) == TensorType((1, 4, 9, 4), "i32")
    dw = b.op("tosa.depthwise_conv2d", [x, b.constant(np.zeros((3, 3, 3, 2), np.int8)), b.constant(np.zeros(6, np.int32)),
                                        zp, zp], {"pad": [1, 1, 1, 1], "stride": [1, 1], "dilation": [1, 1], "acc_type": "i32"})
    assert g.type_of(dw) == TensorType((1, 8, 8, 6), "i32")
    pooled = b.op("tosa.max_pool2d", [x], {"kernel": [2, 2], "stride": [2, 2], "pad": [0, 0, 0, 0]})
    assert g.type_of(pooled) == TensorType((1, 4, 4, 3), "i8")
    y = g.add_input(TensorType((1, 1, 8, 1), "i8"), "y")
    assert g.type_of(b.op("tosa.mul", [x, y, b.constant(np.array([0], np.int8))])) == TensorType((1, 8, 8, 3), "i32")
    assert g.type_of(b.op("tosa.greater", [x, y])) == TensorType((1, 8, 8, 3), "i1")
    assert g.type_of(b.op("tosa.argmax", [x], {"axis": 3})) == TensorType((1, 8, 8), "i32")
    assert g.type_of(b.op("tosa.reduce_sum", [conv], {"axis": 2})) == TensorType((1, 4, 1, 4), "i32")
    assert g.type_of(b.op("tosa.concat", [x, x], {"axis": 3})) == TensorType((1, 8, 8, 6), "i8")
    assert g.type_of(b.op("tosa.transpose", [x], {"perms": [0, 3, 1, 2]})) == TensorType((1, 3, 8, 8), "i8")
    assert problems(g) == []


@pytest.mark.parametrize("build, expected", [
    (lambda b, x: b.op("tosa.max_pool2d", [x], {"kernel": [2, 2], "stride": [2, 2], "pad": [0, 0, 0, 0]},
                       types=[TensorType((1, 2, 2, 3), "i8")]), "result #0 is tensor<1x2x2x3xi8>, expected i8 of shape [1, 3, 3, 3]"),
    (lambda b, x: b.op("tosa.max_pool2d", [x], {"kernel": [2, 2], "stride": [3, 3], "pad": [0, 0, 0, 0]},
                       types=[TensorType((1, 2, 2, 3), "i8")]), "not a whole number"),
    (lambda b, x: b.op("tosa.add", [x, b.constant(np.zeros((1, 2, 1, 3), np.int8))],
                       types=[TensorType((1, 6, 6, 3), "i8")]), "do not broadcast"),
])
def test_verifier_checks_declared_result_types(build, expected):
    g, b = tosa_graph()
    build(b, g.add_input(TensorType((1, 6, 6, 3), "i8"), "x"))
    assert any(expected in p for p in problems(g)), problems(g)


# ------------------------------------------------------------------------------ the typed builder (issue 29)
def test_typed_builder_module_is_current():
    """nn2tosa/dialects/tosa_builder.py is what the generator makes of the records today."""
    import subprocess
    import sys

    run = subprocess.run([sys.executable, "-m", "nn2tosa.dialects.tosa_ops.generate_builder", "--check"],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr


def test_typed_builder_operands_are_mlirs():
    """Each builder method takes the operands MLIR 22's generated tosa builder takes, by the same names
    in the same order (a variadic op: one sequence), and its attributes are among MLIR's (but the IR's
    branch graph names)."""
    from nn2tosa.dialects.tosa_builder import TosaBuilder
    from nn2tosa.dialects.tosa_ops import TOSA_OPS

    classes = mlir_op_classes()
    for name, record in sorted(TOSA_OPS.items()):
        if name not in classes:  # a test's throwaway op
            continue
        method = inspect.signature(getattr(TosaBuilder, record.name)).parameters.values()
        positional = [p.name for p in method if p.kind == p.POSITIONAL_OR_KEYWORD][1:]
        keywords = {p.name for p in method if p.kind == p.KEYWORD_ONLY} - {"types"} - IR_ONLY_ATTRS.get(name, set())
        theirs = [p for p in inspect.signature(classes[name].__init__).parameters if p not in ("self", "loc", "ip")]
        if record.is_variadic:
            assert positional == ["inputs"], name
        else:
            start = theirs.index(positional[0]) if positional else 0
            assert theirs[start:start + len(positional)] == positional, (name, positional, theirs)
        assert {a.rstrip("_") for a in set(theirs) - set(positional)} >= keywords, (name, keywords, theirs)


def test_typed_builder_equalizes_ranks_of_elementwise_tensor_operands():
    """An elementwise op's tensor operands go through `equal_ranks` (not MUL's shift); other ops'
    do not; an optional attribute given as None is left out; what is built verifies."""
    from nn2tosa.dialects.tosa_builder import TosaBuilder

    g = Graph("ranks")
    x = g.add_input(TensorType((2, 3), "f32"), "x")
    b = Builder(g, constant_dialect="tosa")
    calls: list[int] = []

    def equal_ranks(*values: Value) -> list[Value]:
        calls.append(len(values))
        rank = max(len(g.tensor_type(v).shape) for v in values)
        return [v if len(g.tensor_type(v).shape) == rank else b.op(
            "tosa.reshape", [v, Value(g.add_op("tosa.const_shape", (), [ShapeType(rank)],
                                               {"values": np.array((1,) * (rank - 1) + g.tensor_type(v).shape)}), 0)],
            types=[TensorType((1,) * (rank - 1) + g.tensor_type(v).shape, "f32")]) for v in values]

    tosa = TosaBuilder(b, equal_ranks)
    y = tosa.add(x, b.constant(np.ones(3, np.float32), "f32"))
    y = tosa.mul(y, x, b.constant(np.zeros(1, np.int8), "i8"))
    y = tosa.maximum(tosa.abs(y), x, nan_mode=None)
    g.add_output(y, "y")
    assert calls == [2, 2, 2]
    assert "nan_mode" not in g.attrs(y.node)
    assert [g.op(n) for n in g.nodes() if g.op(n) == "tosa.reshape"] == ["tosa.reshape"]
    verify(g)


def test_nn_operand_names_make_the_arity():
    from nn2tosa.ir.registry import OperandSpec, arity_of, operand_specs

    assert arity_of(operand_specs(("input", "weight", "bias?"))) == (2, 3)
    assert arity_of(operand_specs(("inputs+",))) == (1, None)
    assert arity_of(operand_specs(("x", "h", "c", "params*"))) == (3, None)
    assert arity_of(operand_specs(("x", "c", "h", "params[12]"))) == 15
    assert operand_specs(("bias?",)) == (OperandSpec("bias", optional=True),)
    for bad in (("x", "x"), ("bias?", "x"), ("params*", "x"), ("not a name",)):
        with pytest.raises(ValueError):
            operand_specs(bad)
    for d in ops_of("nn"):  # every nn op names its operands, and the names make its arity
        assert d.name == "nn.constant" or d.operand_names, d.name
        assert arity_of(d.operand_names) == d.operands, d.name


def test_lowering_context_reads_operands_by_name():
    from nn2tosa.lowering.context import LoweringContext

    g = Graph("conv")
    x = g.add_input(TensorType((1, 4, 4, 2), "f32"), "x")
    w = g.add_input(TensorType((3, 1, 1, 2), "f32"), "w")
    attrs = {"stride": [1, 1], "dilation": [1, 1], "pad": [0, 0, 0, 0], "groups": 1}
    y = Builder(g).op("nn.conv2d", [x, w], attrs)
    ctx = LoweringContext(g, y.node, [g.tensor_type(x), g.tensor_type(w)])
    assert ctx.operand("input") == x and ctx.operand("weight") == w
    assert ctx.optional_operand("bias") is None
    assert ctx.nn_type("weight") == g.tensor_type(w)
    with pytest.raises(ValueError, match="no operand named 'weights'"):
        ctx.operand("weights")
    with pytest.raises(ValueError, match="optional"):
        ctx.operand("bias")
