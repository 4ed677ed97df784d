"""The nn -> tosa lowering rules: one registry, one small function (or table row) per nn op.

`@rule("nn.x", ...)` registers a function `(ctx: LoweringContext) -> Value | list[Value]`.
Importing this package imports every rule module, which registers its rules.
"""
from __future__ import annotations

from collections.abc import Callable

from ..context import LoweringContext

Rule = Callable[[LoweringContext], object]
RULES: dict[str, Rule] = {}


def rule(*ops: str) -> Callable[[Rule], Rule]:
    def register(fn: Rule) -> Rule:
        for op in ops:
            if op in RULES:
                raise ValueError(f"a lowering rule for {op} exists already")
            RULES[op] = fn
        return fn

    return register


from . import elementwise  # noqa: E402,F401  (registration)
from . import conv  # noqa: E402,F401  (registration)
from . import matmul  # noqa: E402,F401  (registration)
from . import pool  # noqa: E402,F401  (registration)
from . import math  # noqa: E402,F401  (registration)
from . import resize  # noqa: E402,F401  (registration)
from . import shape  # noqa: E402,F401  (registration)
from . import reduce  # noqa: E402,F401  (registration)
from . import norm  # noqa: E402,F401  (registration)
