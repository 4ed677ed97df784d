"""The nn -> tosa lowering rules: one registry, one small function (or table row) per nn op.

`@rule("nn.x", ...)` registers a function `(ctx: LoweringContext) -> Value | list[Value]`.
`@rule("nn.x", constraints=(c1,), checks=(c2,))`: the rule's named constraints (nn2tosa/ir/constraints.py),
`c1` evaluated before the rule runs, `c2` by its body (`ctx.check(c2, ...)`); their docstrings are
the support conditions docs/supported_ops.md lists.
`@rule("nn.x", quantized=True)` registers the rule used instead when an operand or result of the
op has a quantized type (integer arithmetic with zero points and RESCALE), so float and quantized
lowering of an op live in separate, separately readable functions.
Importing this package imports every rule module, which registers its rules.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

from nn2tosa.ir import Value, ops_of
from nn2tosa.ir.constraints import Constraint
from nn2tosa.ir.registry import registering

from ..context import LoweringContext, float_rule_unquantized

Rule = Callable[[LoweringContext], Value | list[Value]]
RULES: dict[str, Rule] = {}
QUANTIZED_RULES: dict[str, Rule] = {}
R = TypeVar("R", bound=Rule)  # a rule keeps its own signature where it is called directly


def rule(*ops: str, quantized: bool = False, constraints: Iterable[Constraint] = (),
         checks: Iterable[Constraint] = ()) -> Callable[[R], R]:
    """Register a rule; `constraints` are evaluated before it runs, `checks` by its body
    (nn2tosa/ir/constraints.py)."""
    if quantized:
        register = registering(QUANTIZED_RULES, ops, "quantized lowering rules for", constraints, checks)
    else:
        register = registering(RULES, ops, "lowering rules for", constraints, checks)

    def decorate(fn: R) -> R:
        register(fn)
        return fn

    return decorate


def ops_with(trait: str) -> tuple[str, ...]:
    """The nn ops whose definition declares `trait` (NAMED_TRAITS, nn2tosa/ir/registry.py): how quantized
    lowering treats an op is said on the op (nn2tosa/dialects/nn/), not in a list beside the rules."""
    return tuple(d.name for d in ops_of("nn") if trait in d.traits)


# Ops that only move stored values: their float rule is right for quantized tensors too, as long
# as every quantized operand and result has the same quantization (the integers are carried).
CARRY_QUANTIZATION = frozenset(ops_with("carries_quantization"))


def rule_for(op: str, quantized: bool) -> Rule | None:
    """The rule lowering `op`. For an op touching quantized types: its quantized rule, else its float
    rule if the op only carries stored values (CARRY_QUANTIZATION), else None."""
    if not quantized:
        return RULES.get(op)
    return QUANTIZED_RULES.get(op) or (RULES.get(op) if op in CARRY_QUANTIZATION else None)


from . import elementwise  # noqa: E402,F401  (registration)
from . import conv  # noqa: E402,F401  (registration)
from . import matmul  # noqa: E402,F401  (registration)
from . import pool  # noqa: E402,F401  (registration)
from . import math  # noqa: E402,F401  (registration)
from . import division  # noqa: E402,F401  (registration)
from . import activation  # noqa: E402,F401  (registration)
from . import cast  # noqa: E402,F401  (registration)
from . import resize  # noqa: E402,F401  (registration)
from . import shape  # noqa: E402,F401  (registration)
from . import reduce  # noqa: E402,F401  (registration)
from . import norm  # noqa: E402,F401  (registration)
from . import quantized  # noqa: E402,F401  (registration)
from . import quantized_unary  # noqa: E402,F401  (registration)
from . import quantized_movement  # noqa: E402,F401  (registration)
from . import quantized_arith  # noqa: E402,F401  (registration)
from . import quantized_reduce  # noqa: E402,F401  (registration)
from . import quantized_conv  # noqa: E402,F401  (registration)
from . import quantized_pool  # noqa: E402,F401  (registration)
from . import quantized_resize  # noqa: E402,F401  (registration)
from . import quantized_lstm  # noqa: E402,F401  (registration)

# The checks of helpers many rules share, whatever the rule (docs/supported_ops.md lists them once).
LoweringContext.general = (float_rule_unquantized, quantized.quantized_per_tensor, quantized.quantizes_per_tensor,
                           quantized.real_function_known, quantized.lookup_types, quantized.has_float_rule)
