"""The canonical `nn` dialect: the op set both frontends legalize into and lowering consumes.

Conventions: spatial ops are NHWC (NDHWC for 3-D); quantization lives on tensor types;
high-level ops (softmax, layer_norm, ...) stay whole until lowering. Every op's semantics are
documented in its `doc`, which `docs/supported_ops.md` is generated from.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from nn2tosa.ir import Dialect, Graph, Type, attr, define, register_dialect

register_dialect(Dialect("nn", "canonical neural-network ops", constant_op="nn.constant", constant_attr="value"))


def _verify_constant(graph: Graph, node: int) -> list[str]:
    value = graph.attrs(node)["value"]
    t = graph.types(node)[0]
    if tuple(value.shape) != tuple(t.shape):
        return [f"value shape {list(value.shape)} differs from result shape {list(t.shape)}"]
    if value.dtype != t.numpy_dtype:
        return [f"value dtype {value.dtype} does not hold {t.dtype}"]
    return []


define(
    "nn.constant",
    operands=0,
    attrs={"value": attr("tensor", "the tensor, in the storage type of the result")},
    doc="A constant tensor. Quantized constants hold their stored integers; the result type carries the scale.",
    verify=_verify_constant,
    traits={"constant"},
)


def _elementwise(fn: Any):
    def fold(attrs: dict[str, Any], values: list[np.ndarray], types: list[Type]) -> list[np.ndarray] | None:
        if any(t.quant is not None for t in types):  # quantized arithmetic is not plain numpy
            return None
        with np.errstate(all="ignore"):
            return [np.asarray(fn(*values)).astype(types[0].numpy_dtype)]

    return fold


# name -> (operand count, numpy function, doc)
_ELEMENTWISE = {
    "add": (2, np.add, "x + y, with numpy broadcasting."),
    "sub": (2, np.subtract, "x - y, with numpy broadcasting."),
    "mul": (2, np.multiply, "x * y, with numpy broadcasting."),
    "neg": (1, np.negative, "-x."),
}
for _name, (_n, _fn, _doc) in _ELEMENTWISE.items():
    define(f"nn.{_name}", operands=_n, doc=_doc, fold=_elementwise(_fn), traits={"elementwise"})


def _fold_reshape(attrs: dict[str, Any], values: list[np.ndarray], types: list[Type]) -> list[np.ndarray]:
    return [values[0].reshape(types[0].shape)]


def _fold_transpose(attrs: dict[str, Any], values: list[np.ndarray], types: list[Type]) -> list[np.ndarray]:
    return [np.ascontiguousarray(values[0].transpose(attrs["perm"]))]


define(
    "nn.reshape",
    operands=1,
    attrs={"shape": attr("ints", "the result shape")},
    doc="The same elements in row-major order, in a new shape.",
    fold=_fold_reshape,
)
define(
    "nn.transpose",
    operands=1,
    attrs={"perm": attr("ints", "result dimension i is input dimension perm[i]")},
    doc="Permute dimensions: result.shape[i] = input.shape[perm[i]].",
    fold=_fold_transpose,
)
