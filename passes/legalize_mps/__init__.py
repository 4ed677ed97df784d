"""The `legalize-mps` pass: ExecuTorch MPS nodes (`mps.*`, docs/frontend_mps.md) -> the nn dialect.

Every node becomes nn ops computing what the file says, at the node's location: PyTorch's
semantics for the aten op the backend serialized, with the file's own parameters (where the backend
dropped or changed a parameter, the file's version wins; the rule docstrings say where the MPS
runtime itself deviates from both).

- one rule per MPSNodeUnion member (core.py: `rule`, `Node`), grouped by family: elementwise.py
  (unary math, activations, binary arithmetic, divisions, comparisons, bitwise, where, clamp),
  shape.py (views, permutes, cat/split/slice/select, pixel shuffle, pad, casts, full/arange as
  constants), indexing.py (index_select, embedding, index.Tensor, index_put, scatter),
  layers.py (convolutions, pooling, batch/layer norm, mean, matmul/addmm, int4 dequantization);
- NCHW tensors stay NCHW; NHWC-only nn ops get explicit nn.transpose on both sides and their
  weights transposed constants (canonicalize folds and cancels them);
- element types: what MPS computes, f16 between an fp16 graph's boundary casts (core.py);
  the graph's inputs and outputs keep their declared types;
- the CPU operator calls of a whole ExecuTorch program (`executorch.kernel`) are legalized in the same
  walk by passes/legalize_executorch's rules;
- `mps.constant` becomes `nn.constant` on the same (zero-copy) array;
- nodes nn cannot express are collected, and the pass raises one UnsupportedError listing all of
  them (node, type, why) after trying every node (a partial conversion sets
  PassContext.keep_unsupported instead: they stay in place, see passes/context.py's report_unsupported).
  A node whose declared shapes contradict what it computes is invalid input (exit 2).

Constants no op reads any more (consumed at compile time, such as int4 weights) are removed at the
end.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from nn2tosa.diagnostics import InvalidInputError, Unsupported
from nn2tosa.ir import Builder, Graph, TensorType, Value

from nn2tosa.frontend.mps.program import KERNEL_OP

from ..legalize_executorch import RULES as EXECUTORCH_RULES, kernel_call
from ..context import report_unsupported
from ..manager import register_pass
from . import elementwise, indexing, layers, shape  # noqa: F401  (rule registration)
from .core import RULES, Node, NotLegalizable, Results, is_float, no_int4_data, used_result_has_counterpart

__all__ = ["legalize_mps", "RULES"]


@register_pass("legalize-mps")
def legalize_mps(graph: Graph) -> None:
    """Rewrite mps.* nodes into nn ops with the file's semantics (all unsupported nodes reported at once)."""
    declared_outputs = [graph.tensor_type(o.value) for o in graph.outputs]  # (mps and nn: tensors only)
    unsupported: list[Unsupported] = []
    constants: list[Value] = []
    for node in graph.topological():
        op = graph.op(node)
        if op == "mps.constant":
            constants.append(_constant(graph, node))
            _replace(graph, node, [(Value(node, 0), constants[-1])])
            continue
        n: Node
        rules: Mapping[str, Callable[[Any], Results]]
        if op == KERNEL_OP:  # a CPU operator call of a whole ExecuTorch program
            n, rules = kernel_call(graph, node), EXECUTORCH_RULES
        elif op.startswith("mps."):
            n, rules = Node(graph, node), RULES
        else:
            continue
        try:
            rule = rules.get(n.member)
            if rule is None:
                raise NotLegalizable("no legalization rule for this node type" if rules is RULES else
                                     "no legalization rule for this operator")
            n.check(no_int4_data)
            replacements = _checked(n, n.apply(rule))
        except NotLegalizable as e:
            unsupported.append(Unsupported(n.member, n.where, e.why))
            continue
        # the node's fields or declared shapes contradict each other (an axis past the rank: IndexError)
        except (ValueError, IndexError, ZeroDivisionError, OverflowError) as e:
            raise InvalidInputError(str(e), where=f"{n.where} ({n.member})") from None
        _replace(graph, node, replacements)
    report_unsupported(unsupported)  # raises, unless a partial conversion keeps them in place
    _keep_output_types(graph, declared_outputs)
    for v in constants:  # the ones consumed at compile time (int4 weights, scatter indices, ...)
        if not graph.has_uses(v):
            graph.erase(v.node)




def _constant(graph: Graph, node: int) -> Value:
    """The same array (a view into the file) and type as an nn.constant."""
    new = graph.add_op("nn.constant", (), graph.types(node), {"value": graph.attrs(node)["value"]}, graph.loc(node))
    return Value(new, 0)


def _checked(n: Node, results: Results) -> list[tuple[Value, Value]]:
    """(mps result, nn value) pairs for the results the file has, checked against the declared types:
    the shape must agree; an integer or boolean result gets its declared type (a float one keeps the
    precision it was computed in)."""
    results = [results] if isinstance(results, Value) else list(results)
    if len(results) != len(n.result_values):
        raise AssertionError(f"the {n.member} rule made {len(results)} results for {len(n.result_values)}")
    pairs = []
    for i, (new, old) in enumerate(zip(results, n.result_values)):
        if old is None:  # -1 in the file
            continue
        declared = n.type_of(old)
        if new is None:
            if not n.graph.has_uses(old):
                continue
            n.check(used_result_has_counterpart, i, declared)
            new = n.constant(np.zeros(declared.shape), declared.dtype)
        have = n.type_of(new)
        if have.shape != declared.shape:
            raise ValueError(f"the file declares result #{i} as {declared}, but the node computes {list(have.shape)}")
        if have.dtype != declared.dtype and not (is_float(have.dtype) and is_float(declared.dtype)):
            new = n.cast(new, declared.dtype)
        pairs.append((old, new))
    return pairs


def _replace(graph: Graph, node: int, pairs: list[tuple[Value, Value]]) -> None:
    for old, new in pairs:
        graph.replace_all_uses(old, new)
    graph.erase(node)


def _keep_output_types(graph: Graph, declared: list[TensorType]) -> None:
    """Graph outputs keep their declared element type (an fp16 graph's outputs are already cast back by
    the backend's in-place casts; this covers graphs without them)."""
    for out, t in zip(graph.outputs, declared):
        have = graph.tensor_type(out.value)
        if have.dtype != t.dtype:
            b = Builder(graph, loc=graph.loc(out.value.node))
            out.value = b.op("nn.cast", [out.value], types=[have.with_dtype(t.dtype)])
