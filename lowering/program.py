"""Which graphs of a TOSA-level program are functions and which are the branch graphs their control
flow runs (a .tosa's COND_IF / WHILE_LOOP name them): both emitters and the API group them this way."""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from nn2tosa.diagnostics import Unsupported, UnsupportedError
from nn2tosa.ir import Graph

# The attributes of each control-flow op that name a branch graph, in region order.
BRANCH_ATTRS = {"tosa.cond_if": ("then_graph", "else_graph"), "tosa.while_loop": ("cond_graph", "body_graph")}


def named_graphs(graph: Graph) -> list[tuple[int, str, str]]:
    """(node, attribute, graph name) of every branch graph `graph`'s control-flow ops name."""
    return [(n, a, graph.attrs(n)[a]) for n in graph.nodes() for a in BRANCH_ATTRS.get(graph.op(n), ())]


def unknown_branches(graphs: Iterable[Graph], known: Iterable[str]) -> list[Unsupported]:
    """One item per control-flow attribute of `graphs` naming a graph not in `known` (the emitters
    list these with everything else they cannot write)."""
    known = set(known)
    return [Unsupported(g.op(node), f"{g.name}: {g.loc(node) or f'%{node}'}",
                        f"its {attr} {name!r} is not among the graphs converted")
            for g in graphs for node, attr, name in named_graphs(g) if name not in known]


def split_program(graphs: Sequence[Graph]) -> tuple[list[Graph], dict[str, Graph]]:
    """Graphs -> (the top-level functions, the branch graphs by name): a graph some control-flow op
    names is a branch, written inside that op (MLIR) or as a further region of its function (.tosa).
    Graphs that only name each other are UnsupportedError; names no graph has are `unknown_branches`."""
    referenced = {name for g in graphs for _, _, name in named_graphs(g)}
    functions = [g for g in graphs if g.name not in referenced]
    if graphs and not functions:
        raise UnsupportedError([Unsupported("control flow", ", ".join(g.name for g in graphs), "every graph is "
                                            "a branch of another (recursion, which TOSA does not have)")])
    return functions, {g.name: g for g in graphs if g.name in referenced}


def reachable_branches(graph: Graph, branches: Mapping[str, Graph]) -> list[Graph]:
    """The branch graphs `graph` runs, directly or through other branches, in first-named order
    (breadth first; names not in `branches` are skipped: `unknown_branches` reports them). A graph
    among them that runs itself is UnsupportedError (TOSA has no recursion)."""
    order: list[Graph] = []
    seen = {graph.name}
    pending = [graph]
    while pending:
        current = pending.pop(0)
        for node, _, name in named_graphs(current):
            if name in seen or name not in branches:
                continue
            seen.add(name)
            order.append(branches[name])
            pending.append(branches[name])
    pool = {**branches, graph.name: graph}
    recursive = [g.name for g in [graph, *order] if _runs_itself(g, pool)]
    if recursive:
        raise UnsupportedError([Unsupported("control flow", f"graph {recursive[0]!r}", "runs itself (recursion, "
                                            "which TOSA does not have)")])
    return order


def _runs_itself(graph: Graph, branches: Mapping[str, Graph]) -> bool:
    found: set[str] = set()
    pending = [graph]
    while pending:
        for _, _, name in named_graphs(pending.pop()):
            if name == graph.name:
                return True
            if name not in found and name in branches:
                found.add(name)
                pending.append(branches[name])
    return False


__all__ = ["BRANCH_ATTRS", "named_graphs", "unknown_branches", "split_program", "reachable_branches"]
