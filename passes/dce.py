"""Dead-code elimination."""
from __future__ import annotations

from nn2tosa.ir import INPUT_OP, Graph
from nn2tosa.ir.effects import erasable_when_unused

from .manager import register_pass


def _removable(graph: Graph, node: int) -> bool:
    return graph.op(node) != INPUT_OP and erasable_when_unused(graph, node)


@register_pass("dce")
def dce(graph: Graph) -> None:
    """Erase operations none of whose results reach a graph output (graph inputs, and ops that declare or write state, stay)."""
    live_outputs = {o.value.node for o in graph.outputs}
    for node in reversed(graph.topological()):
        if node not in live_outputs and graph.nx.out_degree(node) == 0 and _removable(graph, node):
            graph.erase(node)
