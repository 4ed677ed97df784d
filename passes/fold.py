"""Constant folding driven by the op registry: an op whose OpDef has a `fold` function and
whose operands are all constants is replaced by constants of its dialect."""
from __future__ import annotations

import numpy as np

from nn2tosa.ir import Graph, TensorType, Value, dialect, op_def
from nn2tosa.limits import affordable, reserve

from .manager import register_pass


def constant_value(graph: Graph, value: Value) -> np.ndarray | None:
    """The numpy value of `value` if a constant op of its dialect produces it, else None."""
    op = graph.op(value.node)
    d = dialect(op.split(".", 1)[0])
    if d is None or d.constant_op != op or d.constant_attr is None:
        return None
    return graph.attrs(value.node)[d.constant_attr]


def make_constant(graph: Graph, dialect_name: str, array: np.ndarray, like: Value) -> Value:
    """A constant op of `dialect_name` holding `array`, typed like `like` (same quantization)."""
    d = dialect(dialect_name)
    if d is None or d.constant_op is None or d.constant_attr is None:
        raise ValueError(f"dialect {dialect_name} has no constant op")
    t = graph.type_of(like)
    if not isinstance(t, TensorType):  # a `!tosa.shape` needs tosa.const_shape, which no folder makes
        raise ValueError(f"a {d.constant_op} cannot hold {like}, a {t}")
    array = np.asarray(array, dtype=t.numpy_dtype).reshape(t.shape)
    node = graph.add_op(d.constant_op, (), [t], {d.constant_attr: array}, graph.loc(like.node))
    return Value(node, 0)


def try_fold(graph: Graph, node: int) -> bool:
    """Fold one op if it can be folded; returns whether it was."""
    d = op_def(graph.op(node))
    if d is None or d.fold is None:
        return False
    operands = graph.operands(node)
    values = [a for a in (constant_value(graph, v) for v in operands) if a is not None]
    if len(values) != len(operands):
        return False
    tensors = [t for t in graph.types(node) if isinstance(t, TensorType)]
    if not all(affordable(t.shape, t.dtype) for t in tensors):
        return False  # a result the resource limits cannot afford: the op stays, computed at run time
    results = d.fold(graph.attrs(node), values, graph.types(node))
    if results is None:
        return False
    for t in tensors:  # what the folder built counts towards nn2tosa.limits' total budget
        reserve(t.shape, t.dtype, f"folding {graph.op(node)}")
    new = [make_constant(graph, d.dialect, r, Value(node, i)) for i, r in enumerate(results)]
    graph.replace_op(node, new)
    for v in set(operands):  # constants only this op read are dead now
        if v.node in graph and not graph.nx.out_degree(v.node) and not graph.is_output(v):
            graph.erase(v.node)
    return True


@register_pass("fold")
def fold(graph: Graph) -> None:
    """Replace every operation computable from constants by its constant results."""
    for node in graph.topological():
        if node in graph:
            try_fold(graph, node)
