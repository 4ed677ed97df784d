"""The CPU operator rules (passes/legalize_executorch), one call each: a graph of one `executorch.kernel`
op (as frontend/mps/program.py builds them) converted and run on the TOSA reference model, against
numpy's computation of the ATen operator. Inputs have distinct values (no ties for sort and topk)."""
from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from nn2tosa import convert
from nn2tosa.check import Runnable, compare, run
from nn2tosa.diagnostics import UnsupportedError
from nn2tosa.ir import Graph, Loc, TensorType, Value

pytest.importorskip("tosa_reference_model", reason="tosa-tools (the TOSA reference model) is not installed")

DTYPES = {np.dtype(np.float32): "f32", np.dtype(np.int64): "i64", np.dtype(np.int32): "i32", np.dtype(bool): "i1"}
rng = np.random.default_rng(5)
X = rng.permutation(24).astype(np.float32).reshape(2, 3, 4) / 4 - 3  # distinct values
IDX = np.array([[3, -1, 0], [2, 2, -7]], dtype=np.int64)


def T(k: int) -> dict[str, Any]:
    return {"kind": "Tensor", "in": k}


def OUT(k: int) -> dict[str, Any]:
    return {"kind": "Tensor", "out": k}


def S(kind: str, value: Any) -> dict[str, Any]:
    return {"kind": kind, "value": value}


def kernel_graph(operator: str, args: list[dict], inputs: list[np.ndarray], outs: list[np.ndarray]) -> Graph:
    g = Graph("main")
    g.meta["format"] = "mps"
    values = [g.add_input(TensorType(a.shape, DTYPES[a.dtype]), f"input{k}") for k, a in enumerate(inputs)]
    node = g.add_op("executorch.kernel", values, [TensorType(o.shape, DTYPES[o.dtype]) for o in outs],
                    {"operator": operator, "arguments": json.dumps(args)}, Loc("instruction 0", operator))
    for r in range(len(outs)):
        g.add_output(Value(node, r), f"output{r}")
    return g


def run_kernel(operator: str, args: list[dict], inputs: list[np.ndarray], expected: list[np.ndarray]) -> None:
    g = kernel_graph(operator, args, inputs, expected)
    result = convert(g)
    model = Runnable("kernel", result.tosa_flatbuffer(), [f"input{k}" for k in range(len(inputs))],
                     [TensorType(a.shape, DTYPES[a.dtype]) for a in inputs],
                     [TensorType(e.shape, DTYPES[e.dtype]) for e in expected],
                     [f"output{k}" for k in range(len(expected))], "EIGHTK")
    outputs, status, messages = run(model, inputs)
    assert status == "TOSA_VALID", messages
    for e, a in zip(expected, outputs):
        assert a.dtype == e.dtype
        c = compare(e, a, "mixed")
        assert c.ok, (operator, c, e, a)


CASES = [
    ("aten::slice_copy.Tensor_out", [T(0), S("Int", 2), S("Int", -3), S("None", None), S("Int", 2), OUT(0)], [X],
     [X[:, :, -3::2]]),
    ("aten::select_copy.int_out", [T(0), S("Int", 1), S("Int", -1), OUT(0)], [X], [X[:, -1]]),
    ("aten::cat.out", [{"kind": "TensorList", "items": [{"in": 0}, {"in": 1}]}, S("Int", -1), OUT(0)], [X, X * 2],
     [np.concatenate([X, X * 2], -1)]),
    ("aten::index_select.out", [T(0), S("Int", 2), T(1), OUT(0)], [X, np.array([3, -4, 1], np.int64)],
     [X[:, :, [3, 0, 1]]]),
    ("aten::gather.out", [T(0), S("Int", 1), T(1), S("Bool", False), OUT(0)],
     [X, np.array([[[2, 0, 1, 1]], [[0, 0, 2, 1]]], np.int64)],
     [np.take_along_axis(X, np.array([[[2, 0, 1, 1]], [[0, 0, 2, 1]]]), 1)]),
    ("aten::as_strided_copy.out", [T(0), S("IntList", [4, 3]), S("IntList", [1, 4]), S("Int", 12), OUT(0)], [X],
     [X.reshape(-1)[12:].reshape(3, 4).T]),
    ("aten::embedding.out", [T(0), T(1), S("Int", -1), S("Bool", False), S("Bool", False), OUT(0)],
     [X.reshape(6, 4), np.array([[5, 0], [2, 2]], np.int64)], [X.reshape(6, 4)[[[5, 0], [2, 2]]]]),
    ("aten::permute_copy.out", [T(0), S("IntList", [2, 0, 1]), OUT(0)], [X], [X.transpose(2, 0, 1)]),
    ("aten::expand_copy.out", [T(0), S("IntList", [2, 2, 3, 4]), S("Bool", False), OUT(0)], [X],
     [np.broadcast_to(X, (2, 2, 3, 4)).copy()]),
    ("dim_order_ops::_to_dim_order_copy.out", [T(0), S("Bool", False), S("IntList", [0, 2, 1]), OUT(0)], [IDX],
     [IDX.astype(np.float32)]),
    ("aten::add.out", [T(0), T(1), S("Int", 3), OUT(0)], [IDX, IDX * 5], [IDX + 3 * (IDX * 5)]),
    ("aten::sub.Scalar_out", [T(0), S("Int", 7), S("Int", 1), OUT(0)], [IDX], [IDX - 7]),
    ("aten::floor_divide.out", [T(0), T(1), OUT(0)], [IDX, np.array([2, -3, 4], np.int64)],
     [np.floor_divide(IDX, [2, -3, 4])]),
    ("aten::remainder.Scalar_out", [T(0), S("Int", 3), OUT(0)], [IDX], [np.remainder(IDX, 3)]),
    ("aten::div.out_mode", [T(0), T(1), S("String", "trunc"), OUT(0)], [X, X[..., ::-1] + 0.3],
     [np.trunc(X / (X[..., ::-1] + 0.3))]),
    ("aten::lt.Scalar_out", [T(0), S("Double", 0.25), OUT(0)], [X], [X < 0.25]),
    ("aten::where.self_out", [T(0), T(1), T(2), OUT(0)], [X > 0, X, -X], [np.where(X > 0, X, -X)]),
    ("aten::sum.IntList_out", [T(0), S("IntList", [0, 2]), S("Bool", True), S("None", None), OUT(0)], [X],
     [X.sum((0, 2), keepdims=True)]),
    ("aten::amax.out", [T(0), S("IntList", [-1]), S("Bool", False), OUT(0)], [X], [X.max(-1)]),
    ("aten::argmax.out", [T(0), S("Int", 1), S("Bool", False), OUT(0)], [X], [X.argmax(1)]),
    ("aten::all.all_out", [T(0), OUT(0)], [X > -3], [np.array((X > -3).all())]),
    ("aten::sum.out", [T(0), S("Int", 6), OUT(0)], [X], [np.array(X.sum(), np.float32)]),  # (6: the dtype, float)
    ("aten::any.out", [T(0), S("Int", 0), S("Bool", False), OUT(0)], [X > 2], [(X > 2).any(0)]),
    ("aten::cumsum.out", [T(0), S("Int", -1), S("None", None), OUT(0)], [IDX], [np.cumsum(IDX, -1)]),
    ("aten::cumsum.out", [T(0), S("Int", 0), S("None", None), OUT(0)], [X], [np.cumsum(X, 0)]),
    ("aten::sort.values", [T(0), S("Int", 1), S("Bool", True), OUT(0), OUT(1)], [X],
     [-np.sort(-X, 1), np.argsort(-X, 1).astype(np.int64)]),
    ("aten::argsort.out", [T(0), S("Int", -1), S("Bool", False), OUT(0)], [X], [np.argsort(X, -1).astype(np.int64)]),
    ("aten::topk.values", [T(0), S("Int", 2), S("Int", 1), S("Bool", False), S("Bool", True), OUT(0), OUT(1)], [X],
     [np.sort(X, 1)[:, :2], np.argsort(X, 1)[:, :2].astype(np.int64)]),
    ("aten::max.dim_max", [T(0), S("Int", 2), S("Bool", True), OUT(0), OUT(1)], [X],
     [X.max(2, keepdims=True), X.argmax(2)[..., None].astype(np.int64)]),
    ("aten::full_like.out", [T(0), S("Double", -2.5), S("None", None), OUT(0)], [X], [np.full_like(X, -2.5)]),
    ("aten::arange.start_out", [S("Int", 3), S("Int", 11), S("Int", 2), OUT(0)], [X],
     [np.arange(3, 11, 2, dtype=np.int64)]),
    ("aten::copy.out", [T(0), T(1), S("Bool", False), OUT(0)], [X, np.float32([1, 2, 3, 4])],
     [np.broadcast_to(np.float32([1, 2, 3, 4]), X.shape).copy()]),
]


@pytest.mark.parametrize("operator,args,inputs,expected", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_rule_computes_what_aten_does(operator: str, args: list[dict], inputs: list[np.ndarray],
                                      expected: list[np.ndarray]):
    run_kernel(operator, args, inputs, expected)


def test_an_operator_without_a_rule_is_listed_with_the_others():
    g = kernel_graph("aten::_fft_r2c.out", [T(0), S("IntList", [1]), S("Int", 0), S("Bool", True), OUT(0)], [X], [X])
    with pytest.raises(UnsupportedError, match=r"instruction 0.*no legalization rule for this operator"):
        convert(g)
    g = kernel_graph("aten::sort.values", [T(0), S("Int", 1), S("Bool", False), OUT(0), OUT(1)],
                     [np.zeros((1, 300), np.float32)], [np.zeros((1, 300), np.float32), np.zeros((1, 300), np.int64)])
    with pytest.raises(UnsupportedError, match="selecting 300 elements takes one round each"):
        convert(g)
