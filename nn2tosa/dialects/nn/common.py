"""Helpers the nn op definitions share: broadcasting, inference and folder builders, verifiers."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from nn2tosa.ir import Graph, TensorType, Type

Attrs = dict[str, Any]


def broadcast_shape(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    """Numpy broadcasting of static shapes (raises ValueError when they do not broadcast)."""
    return tuple(np.broadcast_shapes(*[tuple(s) for s in shapes]))


def _same(attrs: Attrs, types: list[Type]) -> list[Type]:
    return [types[0]]


def _unquantized(t: TensorType) -> TensorType:
    return TensorType(t.shape, t.dtype)


def _broadcast(dtype_from: int | None = 0, dtype: str | None = None) -> Callable[[Attrs, list[Type]], list[Type]]:
    def infer(attrs: Attrs, types: list[Type]) -> list[Type]:
        shape = broadcast_shape(*[t.shape for t in types])
        return [TensorType(shape, dtype or types[dtype_from].dtype)]

    return infer


def _same_dtypes(graph: Graph, node: int, first: int = 0) -> list[str]:
    dtypes = {graph.type_of(v).dtype for v in graph.operands(node)[first:]}
    return [] if len(dtypes) <= 1 else [f"operands have different element types {sorted(dtypes)}"]


def _fold_with(fn: Callable[..., Any]) -> Callable[[Attrs, list[np.ndarray], list[Type]], list[np.ndarray] | None]:
    def fold(attrs: Attrs, values: list[np.ndarray], types: list[Type]) -> list[np.ndarray] | None:
        if any(t.quant is not None for t in types):  # quantized arithmetic is not plain numpy
            return None
        with np.errstate(all="ignore"):
            return [np.asarray(fn(*values, **attrs) if attrs else fn(*values)).astype(types[0].numpy_dtype)]

    return fold


def _axes_ok(axes: list[int], rank: int) -> bool:
    return all(0 <= a < rank for a in axes) and len(set(axes)) == len(axes)


def _same_shape(graph: Graph, node: int) -> list[str]:
    """A type conversion keeps its operand's shape (its result type is given, not inferred: a file
    whose declared output shape contradicts the input's is caught here, at the layer or node)."""
    have, want = graph.type_of(graph.operands(node)[0]).shape, graph.types(node)[0].shape
    return [] if tuple(have) == tuple(want) else [f"result shape {list(want)} differs from the operand's {list(have)}"]
