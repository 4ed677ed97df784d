"""Bad .tosa files: every corruption is one InvalidInputError (exit 2) naming where, never a traceback.

Structural damage (truncation, flipped bytes) is caught by the whole-buffer verifier before reading;
content that is well-formed flatbuffer but inconsistent TOSA (hand-made with flatc from JSON) is
caught while reading, and the message names the operator index and op or the tensor.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import run_cli
from test_emit import built
from test_tosa_reader import flatc_binary

from nn2tosa.diagnostics import InvalidInputError, Nn2TosaError
from nn2tosa.frontend import load
from nn2tosa.ir import verify
from nn2tosa.lowering.flatbuffer_0100 import build_flatbuffer_0100


def _doc(tensors: list[dict], operators: list[dict], inputs: list[str], outputs: list[str], shapes=(),
         extra_regions=()) -> str:
    block = {"name": "main", "tensors": tensors, "operators": operators, "inputs": inputs, "outputs": outputs,
             "shapes": list(shapes)}
    return json.dumps({"version": {"_major": 1, "_minor": 0, "_patch": 0, "_draft": False},
                       "regions": [{"name": "main", "blocks": [block]}, *extra_regions]})


def _t(name: str, shape: list[int], dtype: str = "FP32", **more) -> dict:
    return {"name": name, "shape": shape, "type": dtype, **more}


def _op(op: str, inputs: list[str], outputs: list[str], attribute_type: str | None = None, **attribute) -> dict:
    o = {"op": op, "inputs": inputs, "outputs": outputs}
    if attribute_type:
        o.update(attribute_type=attribute_type, attribute=attribute)
    return o


ADD = "AddAttribute"
CASES = {
    "missing_tensor": (
        _doc([_t("x", [2]), _t("y", [2])], [_op("ADD", ["x", "nope"], ["y"], ADD)], ["x"], ["y"]),
        r"operator 0 \(ADD\).*input 'nope' is neither a graph input nor written by an operator"),
    "short_constant_data": (
        _doc([_t("w", [4], data=[0] * 12), _t("x", [4]), _t("y", [4])],
             [_op("CONST", [], ["w"], "ConstAttribute"), _op("ADD", ["x", "w"], ["y"], ADD)], ["x"], ["y"]),
        r"operator 0 \(CONST\).*tensor 'w' \(tensor<4xf32>\) needs 16 bytes of data, has 12"),
    "duplicate_tensor_name": (
        _doc([_t("x", [2]), _t("x", [3])], [], ["x"], ["x"]), r"two tensors are named 'x'"),
    "cycle": (
        _doc([_t("x", [2]), _t("a", [2]), _t("b", [2])],
             [_op("ADD", ["x", "b"], ["a"], ADD), _op("ADD", ["x", "a"], ["b"], ADD)], ["x"], ["a"]),
        r"operator [01] \(ADD\).*\(a cycle\)"),
    "attribute_table_of_another_op": (
        _doc([_t("x", [2]), _t("y", [2])], [_op("ADD", ["x", "x"], ["y"], "Conv2dAttribute", pad=[0, 0, 0, 0])],
             ["x"], ["y"]),
        r"operator 0 \(ADD\).*carries a Conv2dAttribute, expected a AddAttribute"),
    "unknown_accumulator": (
        _doc([_t("x", [1, 2, 2, 1]), _t("zp", [1], data=[0] * 4), _t("y", [1, 2, 2, 1])],
             [_op("CONST", [], ["zp"], "ConstAttribute"),
              _op("AVG_POOL2D", ["x", "zp", "zp"], ["y"], "AvgPool2dAttribute", kernel=[1, 1], stride=[1, 1],
                  pad=[0, 0, 0, 0])], ["x"], ["y"]),
        r"operator 1 \(AVG_POOL2D\).*AvgPool2dAttribute.acc_type is missing or UNKNOWN"),
    "output_never_written": (
        _doc([_t("x", [2]), _t("z", [2])], [], ["x"], ["z"]),
        r"graph output 'z' is neither a graph input nor written by an operator"),
    "inconsistent_shapes": (
        _doc([_t("x", [2]), _t("y", [3])], [_op("ADD", ["x", "x"], ["y"], ADD)], ["x"], ["y"]),
        r"operator 0 \(ADD\).*result #0 is tensor<3xf32>, expected f32 of shape \[2\]"),
    "unknown_op_code": (
        _doc([_t("x", [2]), _t("y", [2])], [_op("UNKNOWN", ["x"], ["y"])], ["x"], ["y"]),
        r"operator 0 \(UNKNOWN\).*op code UNKNOWN \(0\) is not an operator"),
    "short_shape_data": (
        _doc([_t("x", [6]), _t("y", [2, 3])],
             [_op("CONST_SHAPE", [], ["s"], "ConstShapeAttribute"), _op("RESHAPE", ["x", "s"], ["y"], "ReshapeAttribute")],
             ["x"], ["y"], shapes=[{"name": "s", "rank": 2, "data": [2, 0, 0, 0, 0, 0, 0, 0]}]),
        r"operator 0 \(CONST_SHAPE\).*shape 's' of rank 2 needs 16 bytes of data, has 8"),
    "external_data_past_the_end": (
        _doc([_t("w", [4], offset=1 << 20, size=16), _t("x", [4]), _t("y", [4])],
             [_op("CONST", [], ["w"], "ConstAttribute"), _op("ADD", ["x", "w"], ["y"], ADD)], ["x"], ["y"]),
        r"tensor 'w' keeps 16 bytes at file offset 1048576, past the end of the file"),
    "branch_graph_missing": (
        _doc([_t("c", [], "BOOL"), _t("x", [2]), _t("y", [2])],
             [_op("COND_IF", ["c", "x"], ["y"], "CondIfAttribute", then_graph="then", else_graph="nowhere")],
             ["c", "x"], ["y"],
             extra_regions=[{"name": "then", "blocks": [{"name": "then", "inputs": ["a"], "outputs": ["a"],
                                                         "tensors": [_t("a", [2])]}]}]),
        r"tosa.cond_if names else_graph 'nowhere', which the file does not hold"),
    "constant_of_dynamic_shape": (
        _doc([_t("w", [-1], data=[0] * 8), _t("x", [2]), _t("y", [2])],
             [_op("CONST", [], ["w"], "ConstAttribute"), _op("ADD", ["x", "w"], ["y"], ADD)], ["x"], ["y"]),
        r"operator 0 \(CONST\).*constant 'w' has no static tensor shape"),
    "negative_dimension": (
        _doc([_t("x", [2, -3]), _t("y", [2])], [_op("IDENTITY", ["x"], ["y"], "IdentityAttribute")], ["x"], ["y"]),
        r"tensor 'x' has shape \[2, -3\]"),
    "variable_read_by_a_non_identity": (
        _doc([_t("v", [2], variable=True, variable_name="v"), _t("x", [2]), _t("y", [2])],
             [_op("ADD", ["x", "v"], ["y"], ADD)], ["x"], ["y"]),
        r"operator 0 \(ADD\).*reads variable 'v' directly"),
}


@pytest.mark.parametrize("name", CASES)
def test_inconsistent_content_names_the_place(name, tmp_path):
    doc, message = CASES[name]
    with pytest.raises(InvalidInputError, match=message):
        load(flatc_binary(doc, "tosa", tmp_path))


def test_cli_reports_one_line_and_exit_2(tmp_path):
    doc, _ = CASES["missing_tensor"]
    path = tmp_path / "bad.tosa"
    path.write_bytes(flatc_binary(doc, "tosa", tmp_path))
    r = run_cli("convert", str(path), "-o", str(tmp_path / "out.mlir"))
    err = r.stderr.decode()
    assert r.returncode == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"nn2tosa: error: {path}: region 'main' block 'main': operator 0 (ADD)")


def test_every_truncation_is_invalid_input():
    _, data = built("conv2d_i8_zero_points")
    for cut in range(8, len(data), 3):
        with pytest.raises(InvalidInputError):
            load(data[:cut])


@pytest.mark.parametrize("layout", ["1.0", "0.100"])
def test_flipped_bytes_never_escape_as_other_errors(layout):
    """Each of 600 random single-byte corruptions either reads (and then verifies) or is an
    nn2tosa error; nothing else (IndexError, struct.error, numpy errors ...) gets out."""
    c, data = built("conv2d_i8_zero_points" if layout == "0.100" else "data_layout_i8_i16")
    if layout == "0.100":
        data = bytes(build_flatbuffer_0100(c.g))
    rng = np.random.default_rng(20261)
    outcomes = {"read": 0, "error": 0}
    for _ in range(600):
        corrupt = bytearray(data)
        at = int(rng.integers(0, len(data)))
        corrupt[at] ^= int(rng.integers(1, 256))
        try:
            graphs = load(bytes(corrupt))
        except Nn2TosaError:
            outcomes["error"] += 1
            continue
        for g in graphs:
            verify(g)
        outcomes["read"] += 1
    assert outcomes["error"] > 100 and outcomes["read"] > 0  # both kinds happen: the test exercises both paths
