"""The IR: a dataflow graph of operations over a networkx.MultiDiGraph (`Graph.nx`), which
networkx's algorithms and drawing take as it is (docs/architecture.md: how the IR maps onto it).

A node is an operation: its data holds `op` (dialect-prefixed name such as "nn.conv2d"),
`attrs` (dict of Python values, numpy arrays for tensors), `loc` (a Loc or None) and `types`
(one Type per result). An edge u -> v with key k says that operand k of v is result
`result` of u, so operands of an op are its in-edges ordered by key. Graph inputs are nodes
whose op is INPUT_OP (one result, attribute `name`); graph outputs are an ordered list of
(Value, name). There is no stored op order: printing and passes walk a topological order
with ties broken by creation order, so "insert before" is simply "create and wire".
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import heapq

from networkx import MultiDiGraph
from networkx import _clear_cache as nx_clear_cache  # what networkx's own edits call (backend caches)

from nn2tosa import limits

from .effects import op_has_effects
from .types import TensorType, Type, as_tensor

INPUT_OP = "graph.input"


class Value(NamedTuple):
    """Result `index` of operation `node`."""

    node: int
    index: int = 0  # type: ignore[assignment]  # the field hides tuple.index, which no Value needs


@dataclass(frozen=True)
class Loc:
    """Source location: a name (layer or node name) and an optional detail (e.g. "layer 3")."""

    name: str
    detail: str | None = None

    def __str__(self) -> str:
        return self.name if self.detail is None else f"{self.name} ({self.detail})"


class Output:
    """A graph output: the value it reads (reassignable) and its name.

    The graph indexes its outputs by value, so that asking whether a value is an output costs the
    same for a graph with 50,000 outputs as for one with 1: assigning `value` keeps that index."""

    __slots__ = ("_value", "name", "_graph")

    def __init__(self, value: Value, name: str):
        self._value = Value(*value)
        self.name = name
        self._graph: Graph | None = None  # the graph whose index holds this output

    @property
    def value(self) -> Value:
        return self._value

    @value.setter
    def value(self, value: Value) -> None:
        old, self._value = self._value, Value(*value)
        if self._graph is not None:
            self._graph._output_moved(self, old)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Output) and (self._value, self.name) == (other._value, other.name)

    __hash__ = None  # type: ignore[assignment]  # mutable, like the dataclass it replaces

    def __repr__(self) -> str:
        return f"Output(value={self._value!r}, name={self.name!r})"


class Use(NamedTuple):
    """Operand `operand` of operation `node`."""

    node: int
    operand: int


@dataclass
class Graph:
    """One function: operations, ordered named inputs and outputs, and graph-level facts (`meta`)."""

    name: str = "main"
    meta: dict[str, Any] = field(default_factory=dict)  # graph-level facts: source format, version, ...
    nx: MultiDiGraph = field(default_factory=MultiDiGraph)
    inputs: list[int] = field(default_factory=list)
    outputs: list[Output] = field(default_factory=list)
    _next_id: int = 0
    # Called with a node id whenever that op is created, gains or loses an operand or a use, so a
    # rewrite driver can revisit exactly what an edit touched (MLIR's rewriter listener). Not copied.
    listener: Callable[[int], None] | None = field(default=None, repr=False, compare=False)
    # value -> the outputs reading it, and the (list identity, length) of `outputs` it was built for:
    # appending to or replacing the list directly makes it rebuild (see _outputs_of)
    _output_index: dict[Value, list[Output]] = field(default_factory=dict, repr=False, compare=False)
    _output_index_key: tuple[int, int] | None = field(default=None, repr=False, compare=False)
    # the ops whose definitions declare side effects (nn2tosa.ir.effects), kept in order by topological()
    _effectful: set[int] = field(default_factory=set, repr=False, compare=False)

    def _touched(self, node: int) -> None:
        if self.listener is not None:
            self.listener(node)

    # ---- building -------------------------------------------------------------------
    def add_op(
        self,
        op: str,
        operands: Iterable[Value] = (),
        types: Iterable[Type] = (),
        attrs: dict[str, Any] | None = None,
        loc: Loc | None = None,
    ) -> int:
        """Create an operation and wire its operands; returns its node id."""
        if len(self.nx) >= limits.current().max_ops:  # a reader or a pass expanding without bound (an LSTM
            raise limits.LimitExceededError(  # unrolled over 65,536 steps) stops here, not at 2 GB of graph
                f"graph {self.name!r} would have more than {len(self.nx)} operations, the limit "
                f"({limits.flag('max_ops')})")
        node = self._next_id
        self._next_id += 1
        g = self.nx  # networkx's add_node for a new node, written into its dicts (see _connect)
        g._succ[node], g._pred[node] = {}, {}
        g._node[node] = {"op": op, "attrs": dict(attrs or {}), "loc": loc, "types": list(types)}
        nx_clear_cache(g)
        if op_has_effects(op):
            self._effectful.add(node)
        for k, v in enumerate(operands):
            self._connect(v, node, k)
        self._touched(node)
        return node

    def add_input(self, type_: Type, name: str, loc: Loc | None = None) -> Value:
        node = self.add_op(INPUT_OP, (), [type_], {"name": name}, loc)
        self.inputs.append(node)
        return Value(node, 0)

    def add_output(self, value: Value, name: str) -> None:
        value = Value(*value)
        self._check_value(value)
        self.outputs.append(Output(value, name))

    def _check_value(self, value: Value) -> None:
        if value.node not in self.nx._node:
            raise KeyError(f"no operation %{value.node}")
        if not 0 <= value.index < len(self.nx._node[value.node]["types"]):
            raise KeyError(f"%{value.node} has no result #{value.index}")

    def _connect(self, value: Value, node: int, operand: int) -> None:
        value = Value(*value)
        self._check_value(value)
        # networkx's add_edge(value.node, node, key=operand, result=value.index), written into its
        # adjacency dicts as networkx lays them out (_succ[u][v] and _pred[v][u] are one {key: data} dict):
        # every op a reader or a pass creates comes through here, and the method costs a third more
        g = self.nx
        keyed = g._succ[value.node].get(node)
        if keyed is None:
            keyed = g._succ[value.node][node] = g._pred[node][value.node] = {}
        keyed[operand] = {"result": value.index}
        nx_clear_cache(g)
        self._touched(value.node)
        self._touched(node)

    # ---- reading --------------------------------------------------------------------
    def __contains__(self, node: int) -> bool:
        return node in self.nx

    def __len__(self) -> int:
        return self.nx.number_of_nodes()

    def op(self, node: int) -> str:
        return self.nx._node[node]["op"]

    def attrs(self, node: int) -> dict[str, Any]:
        return self.nx._node[node]["attrs"]

    def loc(self, node: int) -> Loc | None:
        return self.nx._node[node]["loc"]

    def types(self, node: int) -> list[Type]:
        return self.nx._node[node]["types"]

    def type_of(self, value: Value) -> Type:
        return self.nx._node[value.node]["types"][value.index]

    def tensor_type(self, value: Value) -> TensorType:
        """`type_of(value)` where only a tensor can flow: every operand and result of an nn op, and
        every TOSA operand that is not a shape (`!tosa.shape` values are the only other kind)."""
        return as_tensor(self.nx._node[value.node]["types"][value.index], value)

    def results(self, node: int) -> list[Value]:
        return [Value(node, i) for i in range(len(self.types(node)))]

    # The edge queries below read networkx's adjacency dicts (`_pred[v][u][key]` / `_succ[u][v][key]`
    # -> edge data) directly: they run a few times per op in every pass, and networkx's edge views
    # cost several times the lookup itself.
    def operands(self, node: int) -> list[Value]:
        """Operand values in operand order."""
        edges = sorted((key, u, data["result"]) for u, keyed in self.nx._pred[node].items()
                       for key, data in keyed.items())
        return [Value(u, r) for _, u, r in edges]

    def operand(self, node: int, k: int) -> Value:
        for u, keyed in self.nx._pred[node].items():
            data = keyed.get(k)
            if data is not None:
                return Value(u, data["result"])
        raise IndexError(f"{self.op(node)} %{node} has no operand #{k}")

    def users(self, value: Value) -> list[Use]:
        """Uses of a value by operations (graph outputs are not included)."""
        node, index = value
        return sorted(Use(v, key) for v, keyed in self.nx._succ[node].items()
                      for key, data in keyed.items() if data["result"] == index)

    def has_uses(self, value: Value) -> bool:
        return self.is_output(value) or bool(self.users(value))

    def is_output(self, value: Value) -> bool:
        return bool(self._outputs_of().get(Value(*value)))

    def _outputs_of(self) -> dict[Value, list[Output]]:
        """The output index, rebuilt when `outputs` was replaced, appended to or shortened directly."""
        key = (id(self.outputs), len(self.outputs))
        if self._output_index_key != key:
            index: dict[Value, list[Output]] = {}
            for out in self.outputs:
                out._graph = self
                index.setdefault(out.value, []).append(out)
            self._output_index, self._output_index_key = index, key
        return self._output_index

    def _output_moved(self, out: Output, old: Value) -> None:
        """`out.value` changed from `old`: keep the index (when it is current) in step."""
        if self._output_index_key != (id(self.outputs), len(self.outputs)):
            return  # stale: the next lookup rebuilds it
        index = self._output_index
        readers = index.get(old, [])
        if any(o is out for o in readers):
            readers[:] = [o for o in readers if o is not out]
            if not readers:
                del index[old]
        index.setdefault(out.value, []).append(out)

    def nodes(self) -> Iterator[int]:
        """All operations in creation order."""
        return iter(sorted(self.nx.nodes))

    def topological(self) -> list[int]:
        """Operations in dependency order, ties broken by creation order (deterministic). Ops with
        side effects (nn2tosa.ir.effects) also depend on each other: they run in creation order,
        so a read of a variable stays on its side of every write."""
        pred, succ = self.nx._pred, self.nx._succ
        indegree = {n: sum(len(keyed) for keyed in sources.values()) for n, sources in pred.items()}
        # each op with effects waits for the one created before it
        effectful = sorted(self._effectful)
        after = dict(zip(effectful, effectful[1:]))
        for n in effectful[1:]:
            indegree[n] += 1
        ready = [n for n, d in indegree.items() if d == 0]
        heapq.heapify(ready)
        order = []
        while ready:
            n = heapq.heappop(ready)
            order.append(n)
            for v, keyed in succ[n].items():
                indegree[v] -= len(keyed)
                if indegree[v] == 0:
                    heapq.heappush(ready, v)
            if after:
                v = after.get(n)
                if v is not None:
                    indegree[v] -= 1
                    if indegree[v] == 0:
                        heapq.heappush(ready, v)
        if len(order) != len(indegree):
            raise ValueError("the graph has a cycle")
        return order

    def input_values(self) -> list[Value]:
        return [Value(n, 0) for n in self.inputs]

    def input_name(self, node: int) -> str:
        return self.attrs(node)["name"]

    # ---- editing --------------------------------------------------------------------
    def _disconnect(self, u: int, v: int, key: int) -> None:
        """networkx's remove_edge(u, v, key), on its dicts as _connect writes them."""
        g = self.nx
        keyed = g._succ[u][v]
        del keyed[key]
        if not keyed:
            del g._succ[u][v], g._pred[v][u]
        nx_clear_cache(g)

    def set_operand(self, node: int, k: int, value: Value) -> None:
        for u in [u for u, keyed in self.nx._pred[node].items() if k in keyed]:
            self._disconnect(u, node, k)
            self._touched(u)
        self._connect(value, node, k)

    def set_operands(self, node: int, values: Iterable[Value]) -> None:
        for u, key in [(u, key) for u, keyed in self.nx._pred[node].items() for key in keyed]:
            self._disconnect(u, node, key)
            self._touched(u)
        self._touched(node)
        for k, v in enumerate(values):
            self._connect(v, node, k)

    def replace_all_uses(self, old: Value, new: Value) -> None:
        """Every operand and graph output reading `old` reads `new` instead."""
        old, new = Value(*old), Value(*new)
        self._check_value(new)
        for use in self.users(old):
            self._disconnect(old.node, use.node, use.operand)
            self._connect(new, use.node, use.operand)
        for out in list(self._outputs_of().get(old, ())):
            out.value = new
            self._touched(new.node)
        self._touched(old.node)

    def replace_op(self, node: int, new_results: list[Value]) -> None:
        """Redirect every use of `node`'s results to `new_results`, then erase `node`."""
        for i, new in enumerate(new_results):
            self.replace_all_uses(Value(node, i), new)
        self.erase(node)

    def erase(self, node: int) -> None:
        """Remove an operation whose results are no longer used."""
        if self.nx._succ[node] or any(self.is_output(v) for v in self.results(node)):
            raise ValueError(f"cannot erase {self.op(node)} %{node}: its results are still used")
        if node in self.inputs:
            self.inputs.remove(node)
        producers = set(self.nx._pred[node])
        self.nx.remove_node(node)
        self._effectful.discard(node)
        for u in sorted(producers):
            self._touched(u)

    def copy(self) -> Graph:
        """A structural copy; attribute values (numpy arrays included) are shared, not copied."""
        g = Graph(self.name, dict(self.meta))
        # nodes, then edges in edge order (as networkx's add_node and add_edges_from would), written into
        # networkx's dicts as add_op and _connect do: a pass that copies a 10,000-op graph pays per op
        source, copy = self.nx, g.nx
        for n, data in source._node.items():
            copy._node[n] = {"op": data["op"], "attrs": dict(data["attrs"]), "loc": data["loc"],
                             "types": list(data["types"])}
            copy._succ[n], copy._pred[n] = {}, {}
        for u, targets in source._succ.items():
            for v, keyed in targets.items():
                copy._succ[u][v] = copy._pred[v][u] = {k: dict(data) for k, data in keyed.items()}
        g.inputs = list(self.inputs)
        g.outputs = [Output(o.value, o.name) for o in self.outputs]
        g._next_id = self._next_id
        g._effectful = set(self._effectful)
        return g

    def histogram(self) -> dict[str, int]:
        """Op name -> count, graph inputs excluded, sorted by name."""
        counts: dict[str, int] = {}
        for _, op in self.nx.nodes(data="op"):
            if op != INPUT_OP:
                counts[op] = counts.get(op, 0) + 1
        return dict(sorted(counts.items()))
