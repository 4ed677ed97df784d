"""The tosa op table is the one place a TOSA op's facts live: a throwaway elementwise op defined
here, as one record and nothing else, is printed and parsed, verified, given its TOSA 1.0 target,
written by both .tosa writers (byte for byte what FLOOR, whose opcode it borrows, gives; and run
on the reference model) and documented in docs/supported_ops.md."""
from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from nn2tosa import docs
from nn2tosa.dialects.tosa_ops import TOSA_OPS, TosaOp, operands, register
from nn2tosa.dialects.tosa_ops import infer
from nn2tosa.dialects.tosa_ops.support import FLOAT_UNARY
from nn2tosa.dialects.tosa_target import NotTosaError, require_tosa_1_0, required_target
from nn2tosa.ir import Graph, Quant, TensorType, Value, VerificationError, op_def, ops_of, verify
from nn2tosa.ir import registry
from nn2tosa.ir.text import print_ir
from nn2tosa.lowering.flatbuffer_0100 import build_flatbuffer_0100
from nn2tosa.lowering.flatbuffer_emitter import build_flatbuffer

NAME = "tosa.test_round_down"


@pytest.fixture
def round_down() -> Iterator[TosaOp]:
    """tosa.test_round_down: FLOOR again, under another name, registered for one test."""
    op = TosaOp("test_round_down", operands("input1"), "Largest integer value <= x (a test's copy of FLOOR).",
                FLOAT_UNARY, infer=infer.same, traits=frozenset({"elementwise"}), opcode="FLOOR")
    register(op)
    try:
        yield op
    finally:
        del TOSA_OPS[NAME]
        del registry._OPS[NAME]


def _graph(op: str, dtype: str = "f32", result: str | None = None, quant: Quant | None = None) -> Graph:
    g = Graph("main")
    x = g.add_input(TensorType((2, 3), dtype, quant), "x")
    node = g.add_op(op, [x], [TensorType((2, 3), result or dtype)], {})
    g.add_output(Value(node, 0), "y")
    return g


def test_the_record_defines_the_op(round_down: TosaOp) -> None:
    d = op_def(NAME)
    assert d is not None and d.operands == 1 and d.infer is infer.same and "elementwise" in d.traits
    assert d.doc == "Largest integer value <= x (a test's copy of FLOOR). Operands: input1."
    assert NAME in {o.name for o in ops_of("tosa")}


def test_printer(round_down: TosaOp) -> None:
    """(Parsing the text back needs MLIR's tosa dialect to know the op, as it knows every real one:
    MLIR refuses unknown operations of a registered dialect.)"""
    text = print_ir(_graph(NAME))
    assert f'"{NAME}"(%arg0) : (tensor<2x3xf32>) -> tensor<2x3xf32>' in text


def test_verifier(round_down: TosaOp) -> None:
    verify(_graph(NAME))
    with pytest.raises(VerificationError, match=r"result #0 is tensor<2x3xi32>, expected f32"):
        verify(_graph(NAME, result="i32"))  # the record's inference: the result has the operand's type
    with pytest.raises(VerificationError, match="is quantized; TOSA-level types carry no quantization"):
        verify(_graph(NAME, "i8", quant=Quant((0.5,), (0,))))  # the record's operand kinds


def test_target_inference(round_down: TosaOp) -> None:
    assert str(required_target(_graph(NAME))) == "TOSA 1.0 pro_fp, level 8k"
    target = required_target(_graph(NAME, "bf16"))
    assert (target.profiles, target.extensions) == (("pro_fp",), ("bf16",))
    assert target.reasons["bf16"].startswith(NAME)
    with pytest.raises(NotTosaError, match=f"no TOSA 1.0 profile or extension has {NAME} on i32"):
        require_tosa_1_0(_graph(NAME, "i32"))


def test_both_writers_write_it_as_floor(round_down: TosaOp) -> None:
    assert bytes(build_flatbuffer(_graph(NAME))) == bytes(build_flatbuffer(_graph("tosa.floor")))
    assert bytes(build_flatbuffer_0100(_graph(NAME))) == bytes(build_flatbuffer_0100(_graph("tosa.floor")))


def test_the_written_op_runs(round_down: TosaOp) -> None:
    trm = pytest.importorskip("tosa_reference_model", reason="the TOSA reference model comes with tosa-tools")
    x = np.array([[-1.5, -0.0, 0.25], [2.0, 7.9, -3.1]], dtype=np.float32)
    outputs, status = trm.run(bytes(build_flatbuffer(_graph(NAME))), [x], tosa_level="EIGHTK")
    assert status == trm.GraphStatus.TOSA_VALID
    np.testing.assert_array_equal(outputs[0], np.floor(x))


def test_docs(round_down: TosaOp) -> None:
    row = ("| `test_round_down` | Largest integer value <= x (a test's copy of FLOOR). | input1 |  | "
           "pro_fp: f16, f32; bf16: bf16 | FLOOR |")
    assert row in docs.generate().splitlines()


def test_fixture_leaves_no_trace() -> None:
    assert NAME not in TOSA_OPS and op_def(NAME) is None
    assert f"`{NAME.split('.')[1]}`" not in docs.generate()


def test_every_tosa_op_is_one_record() -> None:
    assert {d.name for d in ops_of("tosa")} == set(TOSA_OPS)


def test_a_row_without_a_legacy_form_has_nothing_to_fold() -> None:
    """The default 0.100 form (an operator of the same name, no attribute table) would lose a
    constant operand or an attribute: such a record must say where 0.100 keeps them."""
    with pytest.raises(ValueError, match="need a 0.100 row"):
        register(TosaOp("test_scaled", operands("input1", "scale:const"), "x * scale.", FLOAT_UNARY))
    assert "tosa.test_scaled" not in TOSA_OPS and op_def("tosa.test_scaled") is None
