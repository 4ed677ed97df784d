"""Helpers the nn op definitions share: the typed `define_nn`, broadcasting, inference and folder
builders, verifiers."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from nn2tosa.ir import AttrSpec, Graph, OpDef, TensorType, Type, as_tensor, define
from nn2tosa.ir.registry import Arity, Folder, Inferrer, Trait, Verifier, arity_of, operand_specs

Attrs = dict[str, Any]
# nn ops take and produce tensors only (a !tosa.shape value is TOSA's, never an nn op's operand or
# result), so their inference functions and folders are written on TensorType; `define_nn` checks
# that once for all of them, where the registry's signatures over every Type meet them.
TensorInferrer = Callable[[Attrs, list[TensorType]], list[TensorType]]
TensorFolder = Callable[[Attrs, list[np.ndarray], list[TensorType]], list[np.ndarray] | None]


def tensors(types: list[Type]) -> list[TensorType]:
    """An nn op's operand or result types, as the tensors they are."""
    return [as_tensor(t, "an nn op's operand or result") for t in types]


def define_nn(
    name: str,
    operands: tuple[str, ...] = (),
    results: Arity = 1,
    attrs: dict[str, AttrSpec] | None = None,
    doc: str = "",
    verify: Verifier | None = None,
    fold: TensorFolder | None = None,
    traits: Iterable[Trait] = (),
    infer: TensorInferrer | None = None,
) -> OpDef:
    """`define` for an nn op, whose `infer` and `fold` take TensorType lists and whose operands are
    named (`operands`: "weight", "bias?" optional, "inputs+" one or more, "params*" any number,
    "params[12]" exactly 12; see registry.operand_specs): the arity follows from the names, and rules
    read operands by name (`ctx.operand("weight")`, lowering/context.py)."""
    specs = operand_specs(operands)
    return define(name, arity_of(specs), results, attrs, doc, verify, None if fold is None else _on_tensors_fold(fold),
                  traits, infer=None if infer is None else _on_tensors_infer(infer), operand_names=specs)


def _on_tensors_infer(infer: TensorInferrer) -> Inferrer:
    def on_types(attrs: Attrs, types: list[Type]) -> list[Type]:
        return list(infer(attrs, tensors(types)))

    return on_types


def _on_tensors_fold(fold: TensorFolder) -> Folder:
    def on_types(attrs: Attrs, values: list[np.ndarray], types: list[Type]) -> list[np.ndarray] | None:
        return fold(attrs, values, tensors(types))

    return on_types


def broadcast_shape(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    """Numpy broadcasting of static shapes (raises ValueError when they do not broadcast)."""
    return tuple(np.broadcast_shapes(*[tuple(s) for s in shapes]))


def same(attrs: Attrs, types: list[TensorType]) -> list[TensorType]:
    return [types[0]]


def broadcast(dtype_from: int = 0, dtype: str | None = None) -> TensorInferrer:
    def infer(attrs: Attrs, types: list[TensorType]) -> list[TensorType]:
        shape = broadcast_shape(*[t.shape for t in types])
        return [TensorType(shape, dtype or types[dtype_from].dtype)]

    return infer


def same_dtypes(graph: Graph, node: int, first: int = 0) -> list[str]:
    dtypes = {graph.tensor_type(v).dtype for v in graph.operands(node)[first:]}
    return [] if len(dtypes) <= 1 else [f"operands have different element types {sorted(dtypes)}"]


def fold_with(fn: Callable[..., Any]) -> TensorFolder:
    def fold(attrs: Attrs, values: list[np.ndarray], types: list[TensorType]) -> list[np.ndarray] | None:
        if any(t.quant is not None for t in types):  # quantized arithmetic is not plain numpy
            return None
        with np.errstate(all="ignore"):
            return [np.asarray(fn(*values, **attrs) if attrs else fn(*values)).astype(types[0].numpy_dtype)]

    return fold


def axes_ok(axes: list[int], rank: int) -> bool:
    return all(0 <= a < rank for a in axes) and len(set(axes)) == len(axes)


def same_shape(graph: Graph, node: int) -> list[str]:
    """A type conversion keeps its operand's shape (its result type is given, not inferred: a file
    whose declared output shape contradicts the input's is caught here, at the layer or node)."""
    have, want = graph.tensor_type(graph.operands(node)[0]).shape, graph.tensor_type(graph.results(node)[0]).shape
    return [] if tuple(have) == tuple(want) else [f"result shape {list(want)} differs from the operand's {list(have)}"]
