"""Side effects, declared as traits of an op definition (MLIR's MemoryEffects, in miniature).

An op whose definition lists none of these constants in its `traits` is pure: only its results
matter, so passes may erase it when nothing reads them, merge it with an identical op, and move it.
An op with effects touches state that outlives one run (a TOSA variable) or state nobody declared
(a custom operator, a branch of control flow), and the passes treat it so:

- DCE and the rewriter never erase an op that declares or writes state, however unused its results
  (an op that only reads may go when nothing reads its result, as in MLIR);
- CSE merges two reads of the same state only when no op that may write it lies between them, and
  never merges writes, declarations or ops whose effects are unknown;
- ops with effects keep their relative order: `Graph.topological` runs them in creation order.

    define("tosa.variable_write", ..., traits={WRITES_VARIABLE})
"""
from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .registry import op_def

if TYPE_CHECKING:
    from .graph import Graph


class EffectKind(enum.Enum):
    DECLARE = "declare"  # brings state into being for the whole program (a variable and its initial value)
    READ = "read"
    WRITE = "write"


@dataclass(frozen=True)
class Effect:
    """One effect of an op on some state: the state is named by the op's attribute `resource_attr`,
    or, when that is None, it may be any state (what the op touches is not known)."""

    kind: EffectKind
    resource_attr: str | None = None


DECLARES_VARIABLE = Effect(EffectKind.DECLARE, "sym_name")
READS_VARIABLE = Effect(EffectKind.READ, "name")
WRITES_VARIABLE = Effect(EffectKind.WRITE, "name")
# An implementation-defined operator (tosa.custom) may read and write anything.
UNKNOWN_EFFECTS = Effect(EffectKind.WRITE, None)
# Control flow runs other graphs (the IR has no regions), which may hold variable accesses or custom
# ops; a pass sees one graph at a time, so a branch's effects count as unknown.
BRANCH_EFFECTS = Effect(EffectKind.WRITE, None)

ANY_RESOURCE = None  # the resource of an effect whose state is not known


def declared_effects(traits: Iterable[object]) -> tuple[Effect, ...]:
    """The Effect constants among an op definition's traits."""
    return tuple(t for t in traits if isinstance(t, Effect))


_HAS_EFFECTS: dict[str, bool] = {}  # op name -> whether its definition declares effects


def op_has_effects(op: str) -> bool:
    """Whether ops named `op` declare any effect (ops no dialect defines declare none)."""
    known = _HAS_EFFECTS.get(op)
    if known is None:
        d = op_def(op)
        if d is None:
            return False  # not cached: a dialect loaded later may still define it
        known = _HAS_EFFECTS[op] = bool(declared_effects(d.traits))
    return known


def effects_of(graph: Graph, node: int) -> list[tuple[EffectKind, str | None]]:
    """(kind, resource) of every effect of one op; resource None: it may be any state."""
    if not op_has_effects(graph.op(node)):
        return []
    d = op_def(graph.op(node))
    assert d is not None
    attrs = graph.attrs(node)
    found = []
    for e in declared_effects(d.traits):
        resource = attrs.get(e.resource_attr) if e.resource_attr is not None else ANY_RESOURCE
        found.append((e.kind, resource if isinstance(resource, str) else ANY_RESOURCE))
    return found


def is_pure(graph: Graph, node: int) -> bool:
    return not op_has_effects(graph.op(node))


def erasable_when_unused(graph: Graph, node: int) -> bool:
    """Whether removing the op once nothing reads its results changes nothing: it declares and
    writes no state (reading has no effect anyone could observe)."""
    return all(kind is EffectKind.READ for kind, _ in effects_of(graph, node))
