"""The graph checked against the resource limits (nn2tosa/limits.py): what a reader produced, before
any pass runs (`check_graph`), and the result types the passes built (`check_results`).

Here, in the IR, and not in limits.py: the IR builds on the limits (Graph.add_op, Builder.constant),
so the limits must not build on the IR.
"""
from __future__ import annotations

import numpy as np

from nn2tosa.diagnostics import InvalidInputError
from nn2tosa.limits import LimitExceededError, check_tensor, current, flag

from .graph import Graph
from .registry import dialect
from .types import TensorType, numpy_dtype


def check_results(graph: Graph) -> None:
    """Every result type's rank, dimensions and size within the limits (LimitExceededError naming
    the op): what a file declares, and what the passes built from it (a pooling stride of 2^29 that
    lowering pads the input for would otherwise hand the reference model a 4 GiB tensor)."""
    for node, data in graph.nx.nodes(data=True):
        for i, t in enumerate(data["types"]):
            if isinstance(t, TensorType):
                check_tensor(t.shape, t.dtype, f"result #{i}", where=_where(graph, node))


def check_graph(graph: Graph) -> None:
    """Semantic checks of a graph a reader produced, before any pass runs: op count; every result
    type (rank, dimensions, declared size); list attributes' lengths; constants whose data does not
    match their type's shape and element type; operands reading results that do not exist; cycles.
    (Repeated output names are the emitters' to make unique, with a suffix.) Raises
    InvalidInputError / LimitExceededError naming the op."""
    bounds = current()
    if len(graph) > bounds.max_ops:
        raise LimitExceededError(f"graph {graph.name!r} has {len(graph)} operations, above the limit of "
                                 f"{bounds.max_ops} ({flag('max_ops')})")
    check_results(graph)
    constant_attr: dict[str, str | None] = {}  # op name -> its constant attribute, if it is a constant op
    for node, data in graph.nx.nodes(data=True):
        op = data["op"]
        where = _where(graph, node)
        for name, value in data["attrs"].items():
            if isinstance(value, (list, tuple)) and len(value) > bounds.max_list_length:
                raise LimitExceededError(f"attribute {name!r} lists {len(value)} values, above the limit of "
                                         f"{bounds.max_list_length} ({flag('max_list_length')})", where=where)
        if op not in constant_attr:
            d = dialect(op.split(".", 1)[0])
            constant_attr[op] = d.constant_attr if d is not None and d.constant_op == op else None
        attr = constant_attr[op]
        if attr is not None and len(data["types"]) == 1 and isinstance(data["types"][0], TensorType):
            value, t = data["attrs"].get(attr), data["types"][0]
            if isinstance(value, np.ndarray) and (value.shape != t.shape or value.dtype != numpy_dtype(t.dtype)):
                raise InvalidInputError(f"constant data of shape {list(value.shape)} ({value.dtype}) does not match "
                                        f"its type {t}", where=where)
    for u, v, key, result in graph.nx.edges(keys=True, data="result"):
        if not 0 <= result < len(graph.types(u)):
            raise InvalidInputError(f"operand #{key} reads result #{result} of an op with "
                                    f"{len(graph.types(u))} results", where=_where(graph, v))
    try:
        graph.topological()
    except ValueError:
        raise InvalidInputError("the graph has a cycle", where=f"graph {graph.name!r}") from None


def _where(graph: Graph, node: int) -> str:
    loc = graph.loc(node)
    return f"{graph.op(node)}" + (f" at {loc}" if loc is not None else f" %{node}")
