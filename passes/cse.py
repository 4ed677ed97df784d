"""The `cse` pass: common-subexpression elimination.

Two ops are the same computation when they have the same name, the same operands (in order),
the same result types and equal attributes, numpy arrays compared by dtype, shape and bytes (so
constants with identical contents merge, and NaN payloads count as equal). Ops no dialect defines
are left alone, and so are ops with side effects (nn2tosa.ir.effects) but reads: two reads of the
same state merge only when no op that may write it runs between them. One walk in topological order
(which keeps ops with effects in their order): operands are already merged when an op is looked at,
so chains of duplicates collapse in the same walk. The first op (in topological order) survives,
with its location.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from nn2tosa.ir import INPUT_OP, Graph, op_def
from nn2tosa.ir.effects import EffectKind, effects_of, op_has_effects

from .manager import register_pass

# Arrays are bucketed by a fingerprint of this many sampled elements, then compared in full: hashing
# every byte of every weight would read the whole model for the few constants that match.
_SAMPLES = 16


def _fingerprint(value: Any) -> Any:
    """A hashable stand-in for an attribute value: equal values give equal fingerprints."""
    if isinstance(value, np.ndarray):
        flat = value.reshape(-1)
        step = max(1, flat.size // _SAMPLES)
        return ("ndarray", value.dtype.str, value.shape, flat[::step][:_SAMPLES].tobytes())
    if isinstance(value, (list, tuple)):
        return tuple(_fingerprint(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _fingerprint(v)) for k, v in value.items()))
    if isinstance(value, float) and value != value:  # NaN equals nothing, its bits do
        return ("nan", np.float64(value).tobytes())
    return value


def _bytes_of(array: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(array).reshape(-1).view(np.uint8)


def attrs_equal(a: Any, b: Any) -> bool:
    """Attribute equality, numpy arrays by dtype, shape and bytes."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.dtype == b.dtype
                and a.shape == b.shape and np.array_equal(_bytes_of(a), _bytes_of(b)))
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(attrs_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(attrs_equal(a[k], b[k]) for k in a)
    if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
        return np.float64(a).tobytes() == np.float64(b).tobytes()
    if isinstance(a, (bool, np.bool_)) != isinstance(b, (bool, np.bool_)):
        return False  # True == 1 in Python, but a bool attribute is not an integer one
    return bool(a == b)


class _Writes:
    """How many ops that may write each piece of state the walk has passed: a read is keyed by these
    counts, so two reads merge only when no write to their state lies between them."""

    def __init__(self) -> None:
        self.to: dict[str, int] = {}
        self.to_anything = 0  # ops whose effects are unknown

    def note(self, effects: list[tuple[EffectKind, str | None]]) -> None:
        for kind, resource in effects:
            if kind is EffectKind.READ:
                continue
            if resource is None:
                self.to_anything += 1
            else:
                self.to[resource] = self.to.get(resource, 0) + 1

    def seen_by(self, effects: list[tuple[EffectKind, str | None]]) -> tuple[Any, ...] | None:
        """The writes a read-only op's reads have seen; None when the op does more than read."""
        if any(kind is not EffectKind.READ or resource is None for kind, resource in effects):
            return None
        return (self.to_anything, *sorted((r, self.to.get(r, 0)) for _, r in effects if r is not None))


def eliminate_common_subexpressions(graph: Graph) -> int:
    """Merge duplicate ops (in place); returns how many were removed."""
    seen: dict[Any, list[int]] = {}
    writes = _Writes()
    merged = 0
    for node in graph.topological():
        op = graph.op(node)
        if op == INPUT_OP or op_def(op) is None:
            continue
        state: tuple[Any, ...] = ()
        if op_has_effects(op):
            effects = effects_of(graph, node)
            writes.note(effects)
            seen_writes = writes.seen_by(effects)
            if seen_writes is None:
                continue
            state = seen_writes
        attrs = graph.attrs(node)
        key = (op, tuple(graph.operands(node)), tuple(graph.types(node)), _fingerprint(attrs), state)
        candidates = seen.setdefault(key, [])
        same = next((c for c in candidates if attrs_equal(graph.attrs(c), attrs)), None)
        if same is None:
            candidates.append(node)
        else:
            graph.replace_op(node, graph.results(same))
            merged += 1
    return merged


@register_pass("cse")
def cse(graph: Graph) -> None:
    """Merge ops computing the same thing (same op, operands, attributes, types); identical constants merge."""
    eliminate_common_subexpressions(graph)
