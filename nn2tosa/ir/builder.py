"""A small op builder for passes: creates ops with inferred result types and constants.

    b = Builder(graph, loc=graph.loc(node))
    y = b.op("nn.add", [x, b.constant(np.float32(1))])          # result type inferred
    q = b.op("nn.conv2d", [x, w], attrs, types=[quantized_type])  # or given
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from nn2tosa.fileio import mapping_of
from nn2tosa.limits import reserve

from .graph import Graph, Loc, Value
from .registry import dialect, op_def
from .types import Quant, TensorType, Type, element_type_of


class Builder:
    def __init__(self, graph: Graph, loc: Loc | None = None, constant_dialect: str = "nn"):
        self.graph = graph
        self.loc = loc
        self.constant_dialect = constant_dialect

    def op(
        self,
        name: str,
        operands: Sequence[Value] = (),
        attrs: dict[str, Any] | None = None,
        types: Sequence[Type] | None = None,
    ) -> Value:
        """Create `name`; returns its first result (see `op_results` for all)."""
        return self.op_results(name, operands, attrs, types)[0]

    def op_results(
        self,
        name: str,
        operands: Sequence[Value] = (),
        attrs: dict[str, Any] | None = None,
        types: Sequence[Type] | None = None,
    ) -> list[Value]:
        attrs = dict(attrs or {})
        if types is None:
            d = op_def(name)
            if d is None or d.infer is None:
                raise ValueError(f"{name} cannot infer its result types: pass types=")
            types = d.infer(attrs, [self.graph.type_of(v) for v in operands])
        node = self.graph.add_op(name, operands, types, attrs, self.loc)
        return self.graph.results(node)

    def constant(self, value: Any, dtype: str | None = None, quant: Quant | None = None) -> Value:
        """A constant of this builder's dialect; `dtype` (MLIR element type) defaults from numpy's."""
        array = np.asarray(value)
        if dtype is None:
            dtype = element_type_of(array.dtype)
        t = TensorType(array.shape, dtype, quant)
        # nn2tosa.limits: one tensor, and the total; a view of the mapped input kept as it is (a
        # multi-GB model's weights passed through a legalization) builds nothing and is not charged
        if not (mapping_of(array) is not None and array.dtype == t.numpy_dtype and array.flags.c_contiguous):
            reserve(t.shape, t.dtype, "a constant built by a pass")
        array = np.asarray(array, dtype=t.numpy_dtype)
        if not array.flags.c_contiguous:
            array = array.copy()
        d = dialect(self.constant_dialect)
        if d is None or d.constant_op is None or d.constant_attr is None:
            raise ValueError(f"dialect {self.constant_dialect} has no constant op")
        node = self.graph.add_op(d.constant_op, (), [t], {d.constant_attr: array}, self.loc)
        return Value(node, 0)

    def type_of(self, value: Value) -> Type:
        return self.graph.type_of(value)
