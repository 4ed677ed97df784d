"""Dead-code elimination."""
from __future__ import annotations

from nn2tosa.ir import INPUT_OP, Graph, op_def

from .manager import register_pass


def _removable(graph: Graph, node: int) -> bool:
    op = graph.op(node)
    if op == INPUT_OP:
        return False
    d = op_def(op)
    return d is None or "side_effect" not in d.traits


@register_pass("dce")
def dce(graph: Graph) -> None:
    """Erase operations none of whose results reach a graph output (graph inputs stay)."""
    live_outputs = {o.value.node for o in graph.outputs}
    for node in reversed(graph.topological()):
        if node not in live_outputs and graph.nx.out_degree(node) == 0 and _removable(graph, node):
            graph.erase(node)
