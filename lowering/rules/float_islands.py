"""Float islands between dequantize and quantize that compute a function of one quantized tensor.

legalize-armnn writes a quantized layer it decomposes into several nn ops as CpuRef computes it:
nn.dequantize, float ops, nn.quantize (Linear activations a * x + b, Casts between quantized
types, ...). When those float ops are elementwise and read nothing but the dequantized tensor and
scalar constants, the island is a function of that one quantized tensor: its result for every
possible input (256, or 65536 for i16) is computed here with the nn ops' own float32 folders, and
lowering emits one exact lookup (quantization.lookup: TABLE or GATHER) instead of float TOSA ops,
so the graph stays in pro_int.

`find_islands(graph)` runs before lowering (on nn types); lower-to-tosa lowers each island's
nn.quantize with `Island.rule` and skips the island's interior ops, which the lookup replaces.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from nn2tosa.ir import Graph, TensorType, Type, Value, op_def

from ..context import LoweringContext
from ..fixed_point.carrier import QInfo, qinfo
from .quantization import lookup

# element types of island values: f32 (the nn folders compute in the result's numpy type) and the
# booleans of comparisons and selects
_ISLAND_TYPES = ("f32", "i1")

# one float op of an island: op, attrs, operands (island values or scalar constants), result, dtype
Step = tuple[str, dict[str, Any], list[Value | np.ndarray], Value, str]


@dataclass
class Island:
    """dequantize (`root`) -> elementwise float ops -> nn.quantize (`end`), read when it is found
    (lowering replaces the constants it reads before the island's end is lowered)."""

    root: int
    end: int
    steps: list[Step]
    result: Value  # the value nn.quantize encodes
    xq: QInfo  # the root's operand
    yq: QInfo  # the end's result
    interior: set[int] = field(default_factory=set)  # ops the lookup replaces (root included when unused)
    round_first: bool = False  # the end is nn.cast to an integer type: round half to even first

    def function(self, real: np.ndarray) -> np.ndarray:
        """The island as a numpy function of the root's real (float32) values, through the nn ops'
        own folders."""
        values: dict[Value, np.ndarray] = {Value(self.root, 0): np.asarray(real, np.float32)}
        for op, attrs, operands, result, dtype in self.steps:
            args = [values[o] if isinstance(o, Value) else o for o in operands]
            d = op_def(op)
            assert d is not None and d.fold is not None, op  # (_elementwise_float admits ops with a folder)
            with np.errstate(all="ignore"):
                out = d.fold(dict(attrs), args, [TensorType(np.shape(real), dtype)])
            assert out is not None, f"{op} did not fold"
            values[result] = np.asarray(out[0])
        y = values[self.result].astype(np.float32)
        return np.round(y) if self.round_first else y

    def rule(self, graph: Graph) -> Callable[[LoweringContext], Value]:
        def lower(ctx: LoweringContext) -> Value:
            return lookup(ctx, graph.operand(self.root, 0), self.function, self.xq, self.yq)

        return lower


def _scalar_constant(graph: Graph, v: Value) -> bool:
    if graph.op(v.node) != "nn.constant":
        return False
    t = graph.tensor_type(v)
    return t.quant is None and t.num_elements == 1 and t.dtype in _ISLAND_TYPES


def _elementwise_float(graph: Graph, node: int, shape: tuple[int, ...]) -> bool:
    d = op_def(graph.op(node))
    if d is None or d.fold is None or "elementwise" not in d.traits or len(graph.types(node)) != 1:
        return False
    t = graph.types(node)[0]
    return isinstance(t, TensorType) and t.quant is None and t.dtype in _ISLAND_TYPES and tuple(t.shape) == shape


def _per_tensor_carrier(t: Type) -> QInfo | None:
    if not isinstance(t, TensorType) or t.quant is None:
        return None
    try:
        q = qinfo(t)
    except ValueError:
        return None
    return q if not q.per_axis and q.dtype in ("i8", "i16") else None


def _end_encoding(graph: Graph, node: int) -> tuple[QInfo, bool] | None:
    """How an island ending at `node` encodes its result: nn.quantize to a per-tensor i8/i16 type,
    or nn.cast to an integer type (round half to even, saturate: scale 1, zero point 0)."""
    t = graph.types(node)[0]
    if graph.op(node) == "nn.quantize":
        q = _per_tensor_carrier(t)
        return None if q is None else (q, False)
    if graph.op(node) == "nn.cast" and isinstance(t, TensorType) and t.quant is None and t.dtype in ("i8", "i16", "i32"):
        return QInfo(t.dtype, (1.0,), (0,), None), True
    return None


def find_islands(graph: Graph) -> dict[int, Island]:
    """Islands by their nn.quantize op (see the module doc)."""
    islands: dict[int, Island] = {}
    position: dict[int, int] = {}
    for root in list(graph.nodes()):  # (a root read outside its island is copied: nodes are added)
        if graph.op(root) != "nn.dequantize":
            continue
        xq = _per_tensor_carrier(graph.type_of(graph.operand(root, 0)))
        root_type = graph.tensor_type(Value(root, 0))
        shape = tuple(root_type.shape)
        if xq is None or root_type.dtype != "f32":
            continue
        # grow the island: ops whose operands are all island values or scalar constants
        members: set[int] = set()
        frontier = [Value(root, 0)]
        ends: dict[int, tuple[QInfo, bool]] = {}  # island ends and how they encode (_end_encoding)
        values = {Value(root, 0)}
        while frontier:
            v = frontier.pop()
            for use in graph.users(v):
                node = use.node
                if node in members or node in ends:
                    continue
                operands = graph.operands(node)
                if not all(o in values or _scalar_constant(graph, o) for o in operands):
                    continue
                encoding = _end_encoding(graph, node)
                if encoding is not None:
                    ends[node] = encoding
                elif _elementwise_float(graph, node, shape):
                    members.add(node)
                    values.add(Value(node, 0))
                    frontier.append(Value(node, 0))
        # every member's value must stay inside the island (read by members or ends only)
        inside = members | set(ends)
        if not ends or any(graph.is_output(Value(m, 0)) or any(u.node not in inside for u in graph.users(Value(m, 0)))
                           for m in members):
            continue
        if not position:
            position.update((n, i) for i, n in enumerate(graph.topological()))
        order = sorted(members, key=position.__getitem__)
        root_private = not graph.is_output(Value(root, 0)) and all(u.node in inside for u in graph.users(Value(root, 0)))
        if not root_private:  # its other readers lower it on its own: the island reads a private copy
            root, root_private = _private_copy(graph, root, inside), True
            values = {Value(root, 0)} | {Value(m, 0) for m in members}
        steps: list[Step] = []
        for node in order:
            inputs: list[Value | np.ndarray] = [o if o in values else np.asarray(graph.attrs(o.node)["value"]).reshape(())
                                                for o in graph.operands(node)]
            steps.append((graph.op(node), dict(graph.attrs(node)), inputs, Value(node, 0),
                          graph.tensor_type(Value(node, 0)).dtype))
        interior = set(members) | ({root} if root_private else set())
        for end, (yq, rounding) in ends.items():
            islands[end] = Island(root, end, steps, graph.operand(end, 0), xq, yq, interior, rounding)
    return islands


def _private_copy(graph: Graph, root: int, readers: set[int]) -> int:
    """A second nn.dequantize of the root's operand, read by `readers` instead of the root (the
    lowering replaces a root that other ops read, and an island must still find its operand)."""
    copy = graph.add_op("nn.dequantize", [graph.operand(root, 0)], list(graph.types(root)), dict(graph.attrs(root)),
                        graph.loc(root))
    for node in readers:
        for k, v in enumerate(graph.operands(node)):
            if v == Value(root, 0):
                graph.set_operand(node, k, Value(copy, 0))
    return copy


def erase_dead(graph: Graph, island: Island) -> None:
    """Remove the island's ops nothing reads any more (after its nn.quantize was replaced)."""
    erased = True
    while erased:
        erased = False
        for node in island.interior:
            if node in graph and not graph.has_uses(Value(node, 0)):
                graph.erase(node)
                erased = True
