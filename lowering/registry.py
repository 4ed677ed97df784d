"""The registry of nn -> tosa lowering rules: one rule per op, made of forms (one function or table row each),
registered by the op-family modules of lowering/rules/.

`@rule("nn.x", ...)` registers a form, a function `(ctx: LoweringContext) -> Value | list[Value] | None`.
An op's rule (`RULES["nn.x"]`, `QUANTIZED_RULES["nn.x"]`: an `OpLowering`) tries its forms in order of
`benefit` (highest first, then in registration order), as MLIR tries its patterns: a form whose
conditions do not hold, or which returns None, falls through to the next. A form's conditions:
- `quantized=True`: the form is used instead of the float ones when an operand or result of the op has a
  quantized type (integer arithmetic with zero points and RESCALE);
- `semantics="litert"` / `"cpuref"`: only when the graph's quantized integers are that source's
  (lowering/semantics.py; consulting it is reported);
- `choice=(pattern, form)`: only when the --target preset chooses that form of that pattern
  (lowering/npu_target.py; the choice is reported);
- `when=predicate(ctx)`: a condition on the op itself (its types, attributes), evaluated first.
`constraints=(c1,)`, `checks=(c2,)`: the op's named constraints (nn2tosa/ir/constraints.py), `c1`
evaluated before any form runs, `c2` by a form's body (`ctx.check(c2, ...)`); their docstrings are the
support conditions docs/supported_ops.md lists.
This module only holds the tables; importing lowering.rules fills them (each family module registers its forms
with `rule`), so read them from there.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TypeVar

from nn2tosa.ir import Value, ops_of
from nn2tosa.ir.constraints import Constraint, declare

from .context import LoweringContext, LoweringUnsupported
from .npu_target import choose

Rule = Callable[[LoweringContext], Value | list[Value]]
FormFunction = Callable[[LoweringContext], "Value | list[Value] | None"]
R = TypeVar("R", bound=FormFunction)  # a form keeps its own signature where it is called directly


@dataclass(frozen=True)
class Form:
    """One way of lowering an op and the conditions it applies under."""

    fn: FormFunction
    benefit: int = 0
    semantics: str | None = None  # "litert" / "cpuref": only under those integers
    choice: tuple[str, str] | None = None  # (pattern, form): only when the --target preset chooses it
    when: Callable[[LoweringContext], bool] | None = None

    def applies(self, ctx: LoweringContext) -> bool:
        """Whether the form applies: its own condition on the op first, then the semantics, then the
        target's choice (the last two are reported when consulted, so they are asked only when needed)."""
        if self.when is not None and not self.when(ctx):
            return False
        if self.semantics is not None and ctx.semantics != self.semantics:
            return False
        return self.choice is None or choose(ctx, self.choice[0]) == self.choice[1]


class OpLowering:
    """The rule of one op (its float or its quantized lowering): its forms, tried in order of benefit."""

    def __init__(self, op: str, quantized: bool):
        self.op, self.quantized = op, quantized
        self.forms: list[Form] = []
        self.__qualname__ = f"{'quantized ' if quantized else ''}rule of {op}"  # how ctx.apply names it

    def add(self, form: Form) -> None:
        unconditional = (form.semantics, form.choice, form.when) == (None, None, None)
        if any(f.fn is form.fn or (unconditional and (f.semantics, f.choice, f.when) == (None, None, None)
                                   and f.benefit == form.benefit) for f in self.forms):
            # two forms that would always be tried in the same place: the second could never run
            raise ValueError(f"two {'quantized ' if self.quantized else ''}lowering rules for {self.op}")
        self.forms.append(form)
        self.forms.sort(key=lambda f: -f.benefit)  # stable: equal benefits keep their registration order

    def __call__(self, ctx: LoweringContext) -> Value | list[Value]:
        for form in self.forms:
            if form.applies(ctx):
                result = ctx.apply(form.fn)
                if result is not None:
                    return result
        raise LoweringUnsupported(f"no form of {'quantized ' if self.quantized else ''}{self.op[3:]} applies")

    def __repr__(self) -> str:
        return f"OpLowering({self.op!r}, {[f.fn.__qualname__ for f in self.forms]})"


RULES: dict[str, OpLowering] = {}
QUANTIZED_RULES: dict[str, OpLowering] = {}


def rule(*ops: str, quantized: bool = False, constraints: Iterable[Constraint] = (),
         checks: Iterable[Constraint] = (), benefit: int = 0, semantics: str | None = None,
         choice: tuple[str, str] | None = None, when: Callable[[LoweringContext], bool] | None = None
         ) -> Callable[[R], R]:
    """Register a form of each op's rule (see the module doc); `constraints` are evaluated before the op's
    forms run, `checks` by a form's body (nn2tosa/ir/constraints.py)."""
    table = QUANTIZED_RULES if quantized else RULES
    constraints, checks = tuple(constraints), tuple(checks)

    def decorate(fn: R) -> R:
        for op in ops:
            lowering = table.setdefault(op, OpLowering(op, quantized))
            lowering.add(Form(fn, benefit, semantics, choice, when))
            declare(lowering, constraints, checks)
        declare(fn, (), constraints + checks)  # evaluated once, by the op's rule; allowed in the form's body
        return fn

    return decorate


def ops_with(trait: str) -> tuple[str, ...]:
    """The nn ops whose definition declares `trait` (NAMED_TRAITS, nn2tosa/ir/registry.py): how quantized
    lowering treats an op is said on the op (nn2tosa/dialects/nn/), not in a list beside the rules."""
    return tuple(d.name for d in ops_of("nn") if trait in d.traits)


# Ops that only move stored values: their float rule is right for quantized tensors too, as long
# as every quantized operand and result has the same quantization (the integers are carried).
CARRY_QUANTIZATION = frozenset(ops_with("carries_quantization"))


def rule_for(op: str, quantized: bool) -> OpLowering | None:
    """The rule lowering `op`. For an op touching quantized types: its quantized rule, else its float
    rule if the op only carries stored values (CARRY_QUANTIZATION), else None."""
    if not quantized:
        return RULES.get(op)
    return QUANTIZED_RULES.get(op) or (RULES.get(op) if op in CARRY_QUANTIZATION else None)
