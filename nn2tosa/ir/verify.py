"""Structural and per-op verification of a Graph."""
from __future__ import annotations

from typing import Any

import numpy as np

from .graph import INPUT_OP, Graph
from .registry import AttrSpec, arity_ok, arity_str, is_known_dialect, op_def
from .types import ShapeType, TensorType, beyond_type


class VerificationError(Exception):
    """The IR breaks an invariant; `problems` lists every one found."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        super().__init__(problems[0] + more)


_INT_KINDS = {"int", "i64", "i32", "i16", "i8", "i1"}
_INT_LIST_KINDS = {"ints", "i64s", "i32s", "i16s", "i8s"}


def _attr_kind_ok(spec: AttrSpec, value: Any) -> bool:
    kind = spec.kind.split(":", 1)[0]
    if kind in _INT_KINDS:
        return isinstance(value, (int, np.integer)) and not isinstance(value, bool)
    if kind in ("float", "f64", "f32"):
        return isinstance(value, (float, int, np.floating)) and not isinstance(value, bool)
    if kind == "bool":
        return isinstance(value, (bool, np.bool_))
    if kind in ("str", "enum"):
        return isinstance(value, str)
    if kind in _INT_LIST_KINDS:
        return isinstance(value, (list, tuple)) and all(isinstance(v, (int, np.integer)) for v in value)
    if kind in ("floats", "f64s", "f32s"):
        return isinstance(value, (list, tuple)) and all(isinstance(v, (int, float, np.number)) for v in value)
    if kind == "bools":
        return isinstance(value, (list, tuple)) and all(isinstance(v, (bool, np.bool_)) for v in value)
    if kind == "strs":
        return isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value)
    if kind == "tensor":
        return isinstance(value, np.ndarray)
    if kind == "type":
        return isinstance(value, (TensorType, ShapeType))
    if kind == "elemtype":
        return isinstance(value, str)
    if kind == "scalar_like":
        return isinstance(value, (int, float, np.number)) and not isinstance(value, bool)
    if kind == "dict":
        return isinstance(value, dict)
    return True


def constant_verifier(attr_name: str):
    """The verifier of a dialect's constant op: its `attr_name` array holds exactly the result's
    shape in the result element type's storage dtype."""

    def verify_constant(graph: Graph, node: int) -> list[str]:
        value = graph.attrs(node)[attr_name]
        t = graph.types(node)[0]
        if not isinstance(t, TensorType):
            return ["the result is not a tensor"]
        if tuple(value.shape) != tuple(t.shape):
            return [f"{attr_name} shape {list(value.shape)} differs from result shape {list(t.shape)}"]
        if value.dtype != t.numpy_dtype:
            return [f"{attr_name} dtype {value.dtype} does not hold {t.dtype} (expected {t.numpy_dtype})"]
        beyond = beyond_type(value, t.dtype)
        return [f"{attr_name} {beyond}"] if beyond else []

    return verify_constant


def op_problems(graph: Graph, node: int) -> list[str]:
    """What is wrong with one operation (empty when it verifies)."""
    op = graph.op(node)
    where = f"{op} %{node}" + (f" at {graph.loc(node)}" if graph.loc(node) else "")
    problems = []
    types = graph.types(node)
    if any(not isinstance(t, (TensorType, ShapeType)) for t in types):
        problems.append(f"{where}: a result has no type")
    operands = graph.operands(node)
    keys = sorted(k for _, _, k in graph.nx.in_edges(node, keys=True))
    if keys != list(range(len(keys))):
        problems.append(f"{where}: operands are not numbered 0..n-1 ({keys})")
    for k, v in enumerate(operands):
        if v.index >= len(graph.types(v.node)):
            problems.append(f"{where}: operand #{k} reads result #{v.index} of %{v.node}, which has fewer")
    if op == INPUT_OP:
        if len(types) != 1 or operands or not isinstance(graph.attrs(node).get("name"), str):
            problems.append(f"{where}: a graph input has one result, no operands and a name")
        return problems
    dialect = op.split(".", 1)[0]
    d = op_def(op)
    if d is None:
        if is_known_dialect(dialect):
            problems.append(f"{where}: {dialect} defines no op {op!r}")
        return problems
    if not arity_ok(d.operands, len(operands)):
        problems.append(f"{where}: expects {arity_str(d.operands)} operands, has {len(operands)}")
    if not arity_ok(d.results, len(types)):
        problems.append(f"{where}: expects {arity_str(d.results)} results, has {len(types)}")
    attrs = graph.attrs(node)
    for name, spec in d.attrs.items():
        if name not in attrs:
            if not spec.optional:
                problems.append(f"{where}: missing attribute {name!r}")
        elif not _attr_kind_ok(spec, attrs[name]):
            problems.append(f"{where}: attribute {name!r} is not of kind {spec.kind}: {attrs[name]!r:.80}")
    if not d.open_attrs:
        extra = sorted(set(attrs) - set(d.attrs))
        if extra:
            problems.append(f"{where}: unknown attributes {extra}")
    if d.infer is not None and not problems:
        problems.extend(f"{where}: {p}" for p in _inferred_type_problems(graph, node, d))
    if d.verify is not None and not problems:
        problems.extend(f"{where}: {p}" for p in d.verify(graph, node))
    return problems


def _inferred_type_problems(graph: Graph, node: int, d) -> list[str]:
    """Declared result types against what the op's `infer` computes (shape and storage dtype)."""
    try:
        expected = d.infer(graph.attrs(node), [graph.type_of(v) for v in graph.operands(node)])
    except Exception as e:  # an inconsistent op makes inference itself fail
        return [f"operands and attributes are inconsistent: {e}"]
    problems = []
    for i, (got, want) in enumerate(zip(graph.types(node), expected)):
        if isinstance(want, TensorType) and isinstance(got, TensorType):
            if tuple(got.shape) != tuple(want.shape) or got.dtype != want.dtype:
                problems.append(f"result #{i} is {got}, expected {want.dtype} of shape {list(want.shape)}")
        elif type(got) is not type(want) or got != want:
            problems.append(f"result #{i} is {got}, expected {want}")
    return problems


def verify(graph: Graph) -> None:
    """Raise VerificationError listing every broken invariant of the graph."""
    problems = []
    try:
        graph.topological()
    except ValueError:
        problems.append(f"{graph.name}: the graph has a cycle")
    for n in graph.nodes():
        problems.extend(op_problems(graph, n))
    for n in graph.inputs:
        if n not in graph or graph.op(n) != INPUT_OP:
            problems.append(f"{graph.name}: input %{n} is not a graph input op")
    stray = [n for n, op in graph.nx.nodes(data="op") if op == INPUT_OP and n not in graph.inputs]
    if stray:
        problems.append(f"{graph.name}: input ops {stray} are not listed as graph inputs")
    for i, out in enumerate(graph.outputs):
        if out.value.node not in graph or out.value.index >= len(graph.types(out.value.node)):
            problems.append(f"{graph.name}: output #{i} ({out.name}) reads a value that does not exist")
    if problems:
        raise VerificationError(problems)
