"""The nn -> tosa lowering rules: one registry, one small function (or table row) per nn op.

`@rule("nn.x", ...)` registers a function `(ctx: LoweringContext) -> Value | list[Value]`.
`@rule("nn.x", quantized=True)` registers the rule used instead when an operand or result of the
op has a quantized type (integer arithmetic with zero points and RESCALE), so float and quantized
lowering of an op live in separate, separately readable functions.
Importing this package imports every rule module, which registers its rules.
"""
from __future__ import annotations

from collections.abc import Callable

from ..context import LoweringContext

Rule = Callable[[LoweringContext], object]
RULES: dict[str, Rule] = {}
QUANTIZED_RULES: dict[str, Rule] = {}


def rule(*ops: str, quantized: bool = False) -> Callable[[Rule], Rule]:
    table = QUANTIZED_RULES if quantized else RULES

    def register(fn: Rule) -> Rule:
        for op in ops:
            if op in table:
                raise ValueError(f"a {'quantized ' if quantized else ''}lowering rule for {op} exists already")
            table[op] = fn
        return fn

    return register


def rule_for(op: str, quantized: bool) -> Rule | None:
    """The rule lowering `op`: its quantized rule when the op touches quantized types and one exists."""
    return (QUANTIZED_RULES.get(op) if quantized else None) or RULES.get(op)


from . import elementwise  # noqa: E402,F401  (registration)
from . import conv  # noqa: E402,F401  (registration)
from . import matmul  # noqa: E402,F401  (registration)
from . import pool  # noqa: E402,F401  (registration)
from . import math  # noqa: E402,F401  (registration)
from . import resize  # noqa: E402,F401  (registration)
from . import shape  # noqa: E402,F401  (registration)
from . import reduce  # noqa: E402,F401  (registration)
from . import norm  # noqa: E402,F401  (registration)
