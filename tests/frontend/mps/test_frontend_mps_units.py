"""Unit tests of the MPS frontend's rules that need no corpus: dtype numbering detection, int4 unpacking,
constant sizes, the generated op layouts."""
from __future__ import annotations

import numpy as np
import pytest

from nn2tosa.diagnostics import InvalidInputError
from nn2tosa.frontend.mps import constants, dtypes
from nn2tosa.frontend.mps.dialect import LAYOUTS, op_name
from nn2tosa.frontend.mps.payload import parse
from nn2tosa.frontend.mps.pte import program_schema
from nn2tosa.ir import TensorType, op_def
from nn2tosa.ir.registry import dialect


def fact(raw: int, *elements: str) -> dtypes.DTypeFact:
    return dtypes.DTypeFact(raw, frozenset(elements), "test")


# ------------------------------------------------------------------------------------- numbering rule
def test_float_only_graphs_tie_and_go_by_container():
    # float16 = 1 and float32 = 2 in both numberings
    assert dtypes.detect_numbering([fact(1, "f16"), fact(2, "f32")], [1, 2], False, has_header=True) == "current"
    assert dtypes.detect_numbering([fact(1, "f16"), fact(2, "f32")], [1, 2], False, has_header=False) == "legacy"


def test_bool_comparison_results_decide():
    # legacy bool = 9 (current int64); current bool = 15 (no legacy number)
    assert dtypes.detect_numbering([fact(9, "i1")], [2, 9], False, has_header=True) == "legacy"
    assert dtypes.detect_numbering([fact(15, "i1")], [2, 15], False, has_header=False) == "current"


def test_constant_sizes_decide():
    # an int64 constant of 3 elements: 24 bytes. legacy int64 = 7 (current int16: 6 bytes)
    allowed = dtypes.elements_of_size(3, 24)
    assert "i64" in allowed and "i16" not in allowed
    assert dtypes.detect_numbering([fact(7, *allowed)], [2, 7], False, has_header=True) == "legacy"
    # current int64 = 9 (legacy bool: 3 bytes)
    assert dtypes.detect_numbering([fact(9, *allowed)], [2, 9], False, has_header=False) == "current"


def test_eight_byte_integer_scalars_are_no_evidence():
    allowed = dtypes.elements_of_size(1, 8)
    assert {"i8", "i16", "i32", "i64", "ui8"} <= allowed and "f32" not in allowed and "i4" not in allowed


def test_numbers_outside_a_numbering_and_int4_nodes_contradict_legacy():
    assert dtypes.detect_numbering([], [2, 17], False, has_header=False) == "current"  # complex_float32
    assert dtypes.detect_numbering([], [1, 2], True, has_header=False) == "current"  # int4 dequant node


def test_legacy_table_is_the_old_python_enum():
    assert [dtypes.LEGACY_NAMES[i].removeprefix("mps_data_type_") for i in (3, 4, 9, 11)] == \
        ["bfloat16", "int8", "bool", "complex_float32"]
    assert dtypes.CURRENT_NAMES[3] == "mps_data_type_float64" and dtypes.CURRENT_NAMES[15] == "mps_data_type_bool"


# ------------------------------------------------------------------------------------------ constants
def test_int4_low_nibble_first_sign_extended():
    data = memoryview(bytes([0x8F, 0x70, 0x21]))
    out = constants.decode(data, 0, 3, TensorType((5,), "i4"), where="t")
    assert out.tolist() == [-1, -8, 0, 7, 1]  # 0x8F: low F = -1, high 8 = -8; last high nibble unused
    assert out.dtype == np.int8


def test_views_need_no_alignment():
    raw = memoryview(b"\x00" + np.array([1.5, -2.0], "<f2").tobytes())
    out = constants.decode(raw, 1, 4, TensorType((2,), "f16"), where="t")
    assert out.tolist() == [1.5, -2.0] and not out.flags.owndata and not out.flags.aligned


def test_integer_scalar_in_8_bytes_reads_leading_bytes():
    raw = memoryview(np.array([-5], "<i8").tobytes())
    assert constants.decode(raw, 0, 8, TensorType((1,), "i32"), where="t").tolist() == [-5]
    assert constants.decode(raw, 0, 8, TensorType((1,), "i8"), where="t").tolist() == [-5]


def test_wrong_sizes_and_dynamic_constants_are_errors():
    raw = memoryview(bytes(16))
    with pytest.raises(InvalidInputError, match="holds 12 bytes, expected 16"):
        constants.decode(raw, 0, 12, TensorType((4,), "f32"), where="value 3")
    with pytest.raises(InvalidInputError, match="holds 8 bytes, expected 4"):
        constants.decode(raw, 0, 8, TensorType((1,), "f32"), where="value 3")  # not an integer scalar
    with pytest.raises(InvalidInputError, match="dynamic"):
        constants.decode(raw, 0, 4, TensorType((-1,), "f32"), where="value 3")


def test_bool_bytes_other_than_0_1_are_normalised():
    out = constants.decode(memoryview(bytes([0, 1, 2])), 0, 3, TensorType((3,), "i1"), where="t")
    assert out.tolist() == [False, True, True]


# ------------------------------------------------------------------------------------ op definitions
def test_every_union_member_is_a_registered_op():
    assert len(LAYOUTS) == 90
    assert dialect("mps").constant_op == "mps.constant" and dialect("mps").constant_attr == "value"
    for member, layout in LAYOUTS.items():
        d = op_def(op_name(member))
        assert d is not None and d.name == "mps." + member[3:]
        assert set(layout.attrs) <= set(d.attrs)


def test_layouts_follow_the_field_names():
    assert [f.name for f in LAYOUTS["MPSBatchNorm"].results] == ["output1_id", "output2_id", "output3_id"]
    assert [f.name for f in LAYOUTS["MPSBatchNorm"].operands] == ["input_id", "mean_id", "var_id", "weight_id", "bias_id"]
    assert LAYOUTS["MPSExpand"].table == "MPSView" and LAYOUTS["MPSExpand"].attrs == {"num_dims": "i32", "shape": "i32s"}
    assert [f.variadic for f in LAYOUTS["MPSIndexPut"].operands] == [False, True, False]
    assert LAYOUTS["MPSSlice"].attrs == {"dim": "int", "start": "int", "end": "int", "step": "int"}
    assert LAYOUTS["MPSCast"].enums == {"dtype": "MPSDataType"}
    assert not LAYOUTS["MPSFull"].operands and len(LAYOUTS["MPSReLU"].operands) == 1


# --------------------------------------------------------------------------------------- containers
def test_payload_header_ranges():
    header = b"\x00\x00\x00\x00MP00" + (48).to_bytes(8, "little") + (16).to_bytes(8, "little")
    p = parse(memoryview(header + bytes(48)))
    assert (p.flatbuffer_start, p.flatbuffer_end, p.constants_start, p.constants_end) == (24, 48, 48, 64)
    with pytest.raises(InvalidInputError, match="runs past the end"):
        parse(memoryview(header + bytes(30)))


def test_program_schema_keeps_upstream_slots():
    """The fields read from a .pte sit in the vtable slots ExecuTorch's schema gives them."""
    s = program_schema()
    slots = lambda table: {f.name: f.slot for f in s.tables[table].fields}  # noqa: E731
    assert slots("Program")["backend_delegate_data"] == 3 and slots("Program")["segments"] == 4
    assert slots("ExecutionPlan")["delegates"] == 7 and slots("ExecutionPlan")["operators"] == 6
    assert slots("BackendDelegate") == {"id": 0, "processed": 1, "compile_specs": 2}
