"""ExecuTorch CPU operator calls (`executorch.kernel`, frontend/mps/program.py) -> the nn dialect.

The legalize-mps pass runs these rules for the kernel calls of a whole program, in the same walk as
the MPS nodes (so every unsupported node and operator is reported together, and a partial conversion
leaves both to the host the same way). One rule per ATen operator, keyed by the operator name without
its overload (`aten::topk`): functional, `.out` and in-place overloads compute the same values.
The rule receives a `Call` (core.py): the call's arguments as the plan gives them (tensors as nn
values, scalars, int and bool lists, None) and the tensors it writes, and returns one nn value per
written tensor, with ATen's semantics. Families: copies.py (copies, clones, views, dim order,
indexing), creation.py (scalar_tensor, full, arange, ...), arith.py (elementwise arithmetic,
comparisons, where, casts), reductions.py (reductions, cumsum, topk, sort).
"""
from __future__ import annotations

from nn2tosa.ir import Graph

from . import arith, copies, creation, reductions  # noqa: F401  (rule registration)
from .core import RULES, Call

__all__ = ["RULES", "Call", "kernel_call"]


def kernel_call(graph: Graph, node: int) -> Call:
    """The call an `executorch.kernel` op makes (its rule is RULES[call.member])."""
    return Call(graph, node)
