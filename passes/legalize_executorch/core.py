"""What a rule sees of one ExecuTorch operator call, and the rule registry.

A `Call` is a legalize_mps `Node` (the same builder, casts, constants and checks) whose fields are the
call's arguments instead of an MPS node's: `call.arg(k)` is argument k as the plan gives it (an nn
Value for a tensor, int / float / bool / str, a list for IntList and BoolList, a list of Values
for a TensorList, None for None), `call.outs` the types of the tensors it writes, in argument order.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from nn2tosa.ir import Builder, Graph, TensorType, Value
from nn2tosa.ir.constraints import Constraint
from nn2tosa.ir.registry import registering

from ..legalize_mps.core import Node, NotLegalizable, Results, normalize_axis

Rule = Callable[["Call"], Results]
RULES: dict[str, Rule] = {}

# topk / sort take one max-and-mask round per element they produce
MAX_SELECTION_ROUNDS = 256


def rule(*operators: str, constraints: Iterable[Constraint] = (),
         checks: Iterable[Constraint] = ()) -> Callable[[Rule], Rule]:
    """Register a rule for ATen operators, named without overload ("aten::cumsum")."""
    return registering(RULES, operators, "legalization rules for", constraints, checks)


class Call(Node):
    """One `executorch.kernel` op being legalized."""

    def __init__(self, graph: Graph, node: int):  # (a Node's fields come from the call, not an MPS table)
        self.graph = graph
        self.node = node
        attrs = graph.attrs(node)
        self.operator: str = attrs["operator"]
        self.member = self.operator.split(".", 1)[0]  # the rule key, e.g. "aten::topk"
        self.attrs: dict[str, Any] = {}
        self.fields = {}
        self.loc = graph.loc(node)
        self.builder = Builder(graph, loc=self.loc)
        self.result_values: list[Value | None] = list(graph.results(node))
        self.arguments: list[dict[str, Any]] = json.loads(attrs["arguments"])
        self._operands = graph.operands(node)

    def _tensor(self, ref: dict[str, Any]) -> Value:
        if "in" not in ref:  # an out-argument: nothing to read (the result is what the rule computes)
            raise ValueError("reads an out-argument tensor")
        return self._operands[ref["in"]]

    def arg(self, k: int, default: Any = None) -> Any:
        """Argument k (absent arguments, as ExecuTorch drops trailing defaults, give `default`)."""
        if k >= len(self.arguments):
            return default
        a = self.arguments[k]
        kind = a["kind"]
        if kind == "Tensor":
            return self._tensor(a) if "in" in a else None
        if kind in ("TensorList", "OptionalTensorList"):
            return [None if item is None or "in" not in item else self._tensor(item) for item in a["items"]]
        if kind == "None":
            return default
        return a["value"]

    def tensor(self, k: int) -> Value:
        v = self.arg(k)
        if not isinstance(v, Value):
            raise ValueError(f"argument {k} is {self.arguments[k]['kind'] if k < len(self.arguments) else 'absent'}, "
                             "where a tensor is read")
        return v

    def int_arg(self, k: int, default: int | None = None) -> int:
        v = self.arg(k, default)
        if isinstance(v, bool) or not isinstance(v, int):
            raise ValueError(f"argument {k} is {v!r}, where an integer is needed")
        return v

    def ints(self, k: int, default: Sequence[int] = ()) -> list[int]:
        v = self.arg(k, list(default))
        if isinstance(v, int):
            return [v]
        if not isinstance(v, list) or not all(isinstance(i, int) for i in v):
            raise ValueError(f"argument {k} is {v!r}, where a list of integers is needed")
        return list(v)

    def bool_arg(self, k: int, default: bool = False) -> bool:
        v = self.arg(k, default)
        if not isinstance(v, (bool, int)):
            raise ValueError(f"argument {k} is {v!r}, where a boolean is needed")
        return bool(v)

    def scalar_arg(self, k: int) -> float | int | bool:
        v = self.arg(k)
        if isinstance(v, str) and v in ("inf", "-inf", "nan"):
            return float(v)
        if not isinstance(v, (int, float, bool)):
            raise ValueError(f"argument {k} is {v!r}, where a number is needed")
        return v

    @property
    def outs(self) -> list[TensorType]:
        return [self.type_of(v) for v in self.result_values if v is not None]

    def axis(self, dim: int, rank: int) -> int:
        return normalize_axis(dim, rank)

    def like(self, x: Value, t: TensorType) -> Value:
        """x broadcast to t's shape and converted to t's element type (what writing into an out tensor does)."""
        x = self.cast(x, t.dtype)
        if tuple(self.type_of(x).shape) != tuple(t.shape):
            x = self.op("nn.broadcast_to", [x], {"shape": list(t.shape)})
        return x


__all__ = ["Call", "RULES", "rule", "NotLegalizable", "MAX_SELECTION_ROUNDS"]
