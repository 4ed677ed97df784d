"""The part of networkx's MultiDiGraph the IR uses, over plain dicts.

The IR started on networkx.MultiDiGraph (DESIGN.md) and uses a dozen of its methods; importing
networkx costs every run about as much CPU time as numpy does, and 20 MB (it loads ~370 modules).
This class keeps the same data layout (`_node[n]` -> attribute dict; `_succ[u][v]` and `_pred[v][u]`
-> the same {key: edge data} dict) and the same iteration orders (insertion), so the graph reads
and prints exactly as it did, and code written against networkx's views (`nodes(data=...)`,
`edges(keys=..., data=...)`, `in_edges`, `out_degree`, ...) keeps working. `to_networkx` gives a
real networkx graph for the rare algorithm the IR lacks (imported only then).
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any


class NodeView:
    """`graph.nodes`: iterate, `len`, `in`, `nodes[n]` (the attribute dict) and
    `nodes(data=True | "name", default=None)` ((node, dict) or (node, value) pairs)."""

    __slots__ = ("_node",)

    def __init__(self, node: dict[Any, dict[str, Any]]):
        self._node = node

    def __iter__(self) -> Iterator[Any]:
        return iter(self._node)

    def __len__(self) -> int:
        return len(self._node)

    def __contains__(self, n: object) -> bool:
        return n in self._node

    def __getitem__(self, n: Any) -> dict[str, Any]:
        return self._node[n]

    def __call__(self, data: bool | str = False, default: Any = None) -> Iterable[Any]:
        if data is False:
            return iter(self._node)
        if data is True:
            return iter(self._node.items())
        return ((n, d.get(data, default)) for n, d in self._node.items())


def _edges(adjacency: dict[Any, dict[Any, dict[Any, dict]]], nodes: Iterable[Any], incoming: bool, keys: bool,
           data: bool | str, default: Any) -> Iterator[tuple]:
    """Edges (u, v[, key][, data]) of `nodes` in networkx's order: by node, then neighbour, then key."""
    for n in nodes:
        for neighbour, keyed in adjacency[n].items():
            u, v = (neighbour, n) if incoming else (n, neighbour)
            for key, attrs in keyed.items():
                edge: tuple = (u, v, key) if keys else (u, v)
                if data is True:
                    edge += (attrs,)
                elif data is not False:
                    edge += (attrs.get(data, default),)
                yield edge


class MultiDiGraph:
    """A directed multigraph with keyed parallel edges (networkx.MultiDiGraph's subset, see the module doc)."""

    def __init__(self) -> None:
        self._node: dict[Any, dict[str, Any]] = {}
        self._succ: dict[Any, dict[Any, dict[Any, dict]]] = {}
        self._pred: dict[Any, dict[Any, dict[Any, dict]]] = {}
        self._adj = self._succ
        self.nodes = NodeView(self._node)

    # ---- nodes ---------------------------------------------------------------------
    def __iter__(self) -> Iterator[Any]:
        return iter(self._node)

    def __len__(self) -> int:
        return len(self._node)

    def __contains__(self, n: object) -> bool:
        try:
            return n in self._node
        except TypeError:
            return False

    def number_of_nodes(self) -> int:
        return len(self._node)

    def add_node(self, n: Any, **attr: Any) -> None:
        if n not in self._node:
            self._succ[n] = {}
            self._pred[n] = {}
            self._node[n] = attr
        else:
            self._node[n].update(attr)

    def remove_node(self, n: Any) -> None:
        succ = self._succ[n]
        del self._node[n]
        for v in succ:
            del self._pred[v][n]
        del self._succ[n]
        for u in self._pred[n]:
            del self._succ[u][n]
        del self._pred[n]

    def successors(self, n: Any) -> Iterator[Any]:
        return iter(self._succ[n])

    def predecessors(self, n: Any) -> Iterator[Any]:
        return iter(self._pred[n])

    # ---- edges ---------------------------------------------------------------------
    def add_edge(self, u: Any, v: Any, key: Any = None, **attr: Any) -> Any:
        for n in (u, v):
            if n not in self._node:
                self.add_node(n)
        keyed = self._succ[u].get(v)
        if keyed is None:
            keyed = self._succ[u][v] = self._pred[v][u] = {}
        if key is None:
            key = len(keyed)
            while key in keyed:
                key += 1
        keyed.setdefault(key, {}).update(attr)
        return key

    def add_edges_from(self, edges: Iterable[tuple]) -> None:
        """(u, v), (u, v, key) or (u, v, key, data) tuples."""
        for e in edges:
            if len(e) == 4:
                self.add_edge(e[0], e[1], e[2], **e[3])
            elif len(e) == 3:
                self.add_edge(e[0], e[1], e[2])
            else:
                self.add_edge(e[0], e[1])

    def remove_edge(self, u: Any, v: Any, key: Any = None) -> None:
        keyed = self._succ[u][v]
        if key is None:
            keyed.popitem()
        else:
            del keyed[key]
        if not keyed:
            del self._succ[u][v]
            del self._pred[v][u]

    def number_of_edges(self) -> int:
        return sum(len(keyed) for targets in self._succ.values() for keyed in targets.values())

    def edges(self, keys: bool = False, data: bool | str = False, default: Any = None) -> Iterator[tuple]:
        return _edges(self._succ, self._succ, False, keys, data, default)

    def out_edges(self, n: Any = None, keys: bool = False, data: bool | str = False,
                  default: Any = None) -> Iterator[tuple]:
        return _edges(self._succ, self._succ if n is None else (n,), False, keys, data, default)

    def in_edges(self, n: Any = None, keys: bool = False, data: bool | str = False,
                 default: Any = None) -> Iterator[tuple]:
        return _edges(self._pred, self._pred if n is None else (n,), True, keys, data, default)

    def out_degree(self, n: Any = None) -> Any:
        """Edges leaving `n` (parallel ones counted); without `n`, (node, degree) pairs."""
        if n is None:
            return ((m, sum(map(len, targets.values()))) for m, targets in self._succ.items())
        return sum(map(len, self._succ[n].values()))

    def in_degree(self, n: Any = None) -> Any:
        """Edges entering `n` (parallel ones counted); without `n`, (node, degree) pairs."""
        if n is None:
            return ((m, sum(map(len, sources.values()))) for m, sources in self._pred.items())
        return sum(map(len, self._pred[n].values()))

    # ---- networkx ------------------------------------------------------------------
    def to_networkx(self) -> Any:
        """The same graph as a networkx.MultiDiGraph (same node and edge order), for its algorithms."""
        import networkx as nx

        g = nx.MultiDiGraph()
        for n, attrs in self._node.items():
            g.add_node(n, **attrs)
        g.add_edges_from(self.edges(keys=True, data=True))
        return g
