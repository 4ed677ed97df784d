"""A greedy pattern-rewrite driver (MLIR's greedy driver, in miniature).

A pattern is a function `(graph, node) -> bool` that rewrites the IR around `node` and says
whether it changed anything (it must not edit the graph when it returns False). Patterns live
in a PatternSet, registered for the op names they match or for every op:

    PATTERNS = PatternSet("canonical")

    @PATTERNS.pattern("nn.identity")
    def remove_identity(graph: Graph, node: int) -> bool: ...

`apply_patterns_greedily(graph, PATTERNS)` keeps a worklist of ops, seeded once in topological
order. It pops an op, erases it if nothing uses it (and it declares or writes no state: see
nn2tosa.ir.effects), else folds it with its registry folder, else tries the patterns registered for
it in order until one fires. Every op an edit touches (created, rewired, gaining or losing a use:
the graph's listener reports them) goes back on the worklist, so the work is proportional to the
graph plus the edits, never to repeated sweeps. A budget of rewrites stops pattern sets that
ping-pong (the result is then still valid IR, just not fully simplified; `RewriteStats.converged`
says so).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

import numpy as np

from nn2tosa.ir import INPUT_OP, Graph, TensorType, Value, op_def
from nn2tosa.ir.effects import erasable_when_unused, op_has_effects

from .fold import constant_value, try_fold

PatternFn = Callable[[Graph, int], bool]

# A fold whose constant results hold more elements than this (and more than twice all of its
# constant operands together) is left to run on the target: broadcast_to or tile of a small
# constant would otherwise write a large tensor into the model.
MAX_GROWING_FOLD_ELEMENTS = 4096


@dataclass(frozen=True)
class Pattern:
    name: str
    fn: PatternFn
    ops: frozenset[str] | None  # None: tried on every op


class PatternSet:
    """Patterns by the op names they match, in registration order."""

    def __init__(self, name: str, patterns: Iterable[Pattern] = ()):
        self.name = name
        self._patterns: list[Pattern] = []
        self._by_op: dict[str, list[Pattern]] = {}
        for p in patterns:
            self.add(p)

    def add(self, pattern: Pattern) -> None:
        if any(p.name == pattern.name for p in self._patterns):
            raise ValueError(f"pattern {pattern.name} registered twice in {self.name}")
        self._patterns.append(pattern)
        self._by_op.clear()  # rebuilt lazily

    def pattern(self, *ops: str, name: str | None = None) -> Callable[[PatternFn], PatternFn]:
        """Decorator: register `fn` for `ops` (no ops: every op); its name defaults to fn's, dashed."""

        def wrap(fn: PatternFn) -> PatternFn:
            self.add(Pattern(name or fn.__name__.replace("_", "-"), fn, frozenset(ops) if ops else None))
            return fn

        return wrap

    def for_op(self, op: str) -> list[Pattern]:
        """The patterns to try on `op`: those naming it, and those for every op unless `op` has side
        effects (a pattern written for any op knows nothing of what must not move or go)."""
        found = self._by_op.get(op)
        if found is None:
            generic = not op_has_effects(op)
            found = self._by_op[op] = [p for p in self._patterns if op in (p.ops or ()) or p.ops is None and generic]
        return found

    def without(self, *names: str) -> PatternSet:
        """A copy of this set lacking the named patterns."""
        return PatternSet(self.name, (p for p in self._patterns if p.name not in names))

    def __iter__(self) -> Iterator[Pattern]:
        return iter(self._patterns)

    def __len__(self) -> int:
        return len(self._patterns)


@dataclass
class RewriteStats:
    """What one driver run did; `work` (ops visited + patterns tried) measures its cost."""

    visits: int = 0
    attempts: int = 0
    folds: int = 0
    erased: int = 0
    rewrites: dict[str, int] = field(default_factory=dict)
    converged: bool = True

    @property
    def applied(self) -> int:
        return self.folds + sum(self.rewrites.values())

    @property
    def work(self) -> int:
        return self.visits + self.attempts


def is_trivially_dead(graph: Graph, node: int) -> bool:
    """No op and no graph output reads it, and removing it changes nothing else."""
    if graph.nx.out_degree(node) or graph.op(node) == INPUT_OP or not erasable_when_unused(graph, node):
        return False
    return not any(o.value.node == node for o in graph.outputs)


def _fold_grows_constants(graph: Graph, node: int) -> bool:
    results = sum(t.num_elements for t in graph.types(node) if isinstance(t, TensorType))
    if results <= MAX_GROWING_FOLD_ELEMENTS:
        return False
    operands = sum(t.num_elements for v in graph.operands(node) if isinstance(t := graph.type_of(v), TensorType))
    return results > 2 * operands


def fold_op(graph: Graph, node: int) -> bool:
    """Replace `node` by constants when its registry folder computes it from constant operands."""
    d = op_def(graph.op(node))
    if d is None or d.fold is None or op_has_effects(d.name) or _fold_grows_constants(graph, node):
        return False  # (what an op with effects computes is not a function of its operands alone)
    return try_fold(graph, node)


def apply_patterns_greedily(
    graph: Graph,
    patterns: PatternSet,
    *,
    fold: bool = True,
    max_rewrites: int | None = None,
) -> RewriteStats:
    """Apply `patterns` (and registry folders) until none applies or the rewrite budget runs out.

    The default budget, 10 rewrites per op plus 100, is far above what a terminating pattern set
    needs: every pattern here removes an op or moves one toward the graph outputs."""
    order = graph.topological()
    budget = 10 * len(order) + 100 if max_rewrites is None else max_rewrites
    worklist = list(reversed(order))  # popped from the end: producers before their users
    queued = set(order)
    touched: list[int] = []
    stats = RewriteStats()
    previous_listener = graph.listener
    graph.listener = touched.append
    try:
        while worklist:
            node = worklist.pop()
            queued.discard(node)
            if node not in graph:
                continue
            stats.visits += 1
            touched.clear()
            if is_trivially_dead(graph, node):
                graph.erase(node)
                stats.erased += 1
            elif fold and fold_op(graph, node):
                stats.folds += 1
            elif not _apply_first_pattern(graph, node, patterns, stats, touched):
                continue
            if stats.applied > budget:
                stats.converged = False
                break
            # Older ops first (mostly producers), so a consumer sees its operands simplified.
            for n in sorted(set(touched) | {node}, reverse=True):
                if n in graph and n not in queued:
                    worklist.append(n)
                    queued.add(n)
    finally:
        graph.listener = previous_listener
    return stats


def _apply_first_pattern(graph: Graph, node: int, patterns: PatternSet, stats: RewriteStats,
                         touched: list[int]) -> bool:
    for p in patterns.for_op(graph.op(node)):
        stats.attempts += 1
        if p.fn(graph, node):
            stats.rewrites[p.name] = stats.rewrites.get(p.name, 0) + 1
            return True
        if touched:
            raise RuntimeError(f"pattern {p.name} edited the IR around {graph.op(node)} %{node} "
                               "but reported no change")
    return False


# ------------------------------------------------------------------------------ helpers for patterns
def replace(graph: Graph, node: int, *values: Value) -> bool:
    """Redirect the uses of `node`'s results to `values` and erase it; returns True (a pattern's answer)."""
    graph.replace_op(node, [Value(*v) for v in values])
    return True


def single_use(graph: Graph, value: Value) -> bool:
    """Exactly one op reads `value` and it is not a graph output."""
    return len(graph.users(value)) == 1 and not graph.is_output(value)


def producer(graph: Graph, value: Value, op: str | Iterable[str]) -> int | None:
    """The node producing `value` when its op is `op` (or one of them), else None."""
    name = graph.op(value.node)
    return value.node if (name == op if isinstance(op, str) else name in op) else None


def constant(graph: Graph, value: Value) -> np.ndarray | None:
    """The value's constant data (stored form), or None."""
    return constant_value(graph, value)


def real_constant(graph: Graph, value: Value) -> np.ndarray | None:
    """The real values a constant stands for: stored integers dequantized (per-tensor only)."""
    data = constant_value(graph, value)
    if data is None:
        return None
    t = graph.type_of(value)
    q = t.quant if isinstance(t, TensorType) else None
    if q is None:
        return data
    if q.axis is not None:
        return None
    return (data.astype(np.float64) - q.zero_point) * q.scale


def uniform_scalar(array: np.ndarray | None) -> float | None:
    """The one value every element of `array` holds, or None (empty, differing elements or NaN)."""
    if array is None or array.size == 0 or array.dtype.kind not in "fiub":
        return None
    flat = array.reshape(-1)
    first = flat[0]
    if not np.all(flat == first):  # also rejects NaN, which equals nothing
        return None
    return float(first)


# For patterns on nn ops, whose operands and results are tensors (a `!tosa.shape` is TOSA's alone)
def operand_type(graph: Graph, node: int, k: int = 0) -> TensorType:
    return graph.tensor_type(graph.operand(node, k))


def result_type(graph: Graph, node: int, k: int = 0) -> TensorType:
    return graph.tensor_type(Value(node, k))


def new_op(graph: Graph, like: int, operands: list[Value], attrs: dict | None = None, op: str | None = None,
           types: list | None = None) -> Value:
    """An op like `like` (same name, result types, location) with other operands, attributes or types."""
    node = graph.add_op(op or graph.op(like), operands, graph.types(like) if types is None else types,
                        dict(graph.attrs(like) if attrs is None else attrs), graph.loc(like))
    return Value(node, 0)


def new_constant(graph: Graph, array: np.ndarray, like: Value) -> Value:
    """An nn.constant holding `array` in the type of `like` (its shape may differ)."""
    t = graph.tensor_type(like)
    array = np.ascontiguousarray(array, dtype=t.numpy_dtype)
    node = graph.add_op("nn.constant", (), [t.with_shape(array.shape)], {"value": array}, graph.loc(like.node))
    return Value(node, 0)
