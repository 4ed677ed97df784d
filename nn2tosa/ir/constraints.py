"""Support stated as named constraints, the way Arm's Vela states what its NPU runs.

A constraint is a small function of what a rule receives (a lowering context, an Arm NN layer, an
MPS node), and, for a check that needs values the rule computes first, of those values. Its
docstring states the condition a supported op meets, in the user's words (docs/supported_ops.md
prints it); it returns None when the op meets it, or the reason it does not, with the actual values
(the one-line error naming the layer, exit 3). Both texts live in one function, so they agree.

A rule names its constraints where it registers:

    @rule("nn.pad", constraints=(pad_mode_known,), checks=(reflected_dimension_wider_than_one,))

`constraints` are evaluated by the driver before the rule runs (`Checks.apply`): the first unmet one
is the reason the op is unsupported. `checks` are the ones the rule's body evaluates itself
(`subject.check(fn, *values)`) once it has computed what they need; they are listed so that the
documentation knows them too. A subject class's `general` checks are those its shared helpers
evaluate for any rule (a reshape keeping a per-axis quantized dimension whole): documented once.
"""
from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, ClassVar

# (subject, *values) -> None when met, else the reason (with the actual values)
Constraint = Callable[..., "str | None"]

# When true (the tests set it), a check the running rule did not declare is an error: the generated
# documentation would miss it. Off in a user's run, where the check still refuses the op correctly.
STRICT = False


@dataclass(frozen=True)
class Declared:
    """A rule's constraints: evaluated before it runs, and evaluated by its body."""

    before: tuple[Constraint, ...] = ()
    inside: tuple[Constraint, ...] = ()

    @property
    def all(self) -> tuple[Constraint, ...]:
        return self.before + tuple(c for c in self.inside if c not in self.before)


_DECLARED: dict[Callable[..., Any], Declared] = {}


def declare(rule: Callable[..., Any], constraints: Iterable[Constraint] = (),
            checks: Iterable[Constraint] = ()) -> None:
    """Attach constraints to a rule (a function registered under several keys gets the union)."""
    constraints, checks = tuple(constraints), tuple(checks)
    for c in constraints + checks:
        if not describe(c):
            raise ValueError(f"constraint {c.__qualname__} has no docstring: it is the documentation")
    old = _DECLARED.get(rule, Declared())
    _DECLARED[rule] = Declared(old.before + tuple(c for c in constraints if c not in old.before),
                               old.inside + tuple(c for c in checks if c not in old.inside))


def declared(rule: Callable[..., Any]) -> Declared:
    return _DECLARED.get(rule, Declared())


def describe(c: Constraint) -> str:
    """A constraint's condition for the documentation: its docstring's first paragraph, on one line."""
    doc = inspect.getdoc(c) or ""
    return " ".join(doc.split("\n\n", 1)[0].split())


class Checks:
    """What rules receive (LoweringContext, Layer, Node) evaluates constraints through this mixin."""

    # raised with the reason when a constraint is unmet (the pass collects these)
    refusal: ClassVar[type[Exception]]
    # checks the shared helpers of the subject evaluate for any rule (documented once per pass)
    general: ClassVar[tuple[Constraint, ...]] = ()
    _allowed: frozenset[Constraint] = frozenset()
    _rule: str = "no rule"

    def check(self, c: Constraint, *values: Any) -> None:
        """Refuse the op (raise `refusal`) unless constraint `c` holds for it and `values`."""
        if STRICT and c not in self._allowed and c not in self.general:
            raise AssertionError(f"{c.__qualname__} is evaluated by rule {self._rule}, which does not declare it "
                                 "(add it to the rule's constraints= or checks=)")
        reason = c(self, *values)
        if reason is not None:
            raise self.refusal(reason)

    def apply(self, rule: Callable[[Any], Any]) -> Any:
        """Run `rule` on this subject: its declared constraints first, then its body."""
        saved = self._allowed, self._rule
        d = declared(rule)
        self._allowed, self._rule = frozenset(d.all), f"{rule.__module__}.{rule.__qualname__}"
        try:
            for c in d.before:
                self.check(c)
            return rule(self)
        finally:
            self._allowed, self._rule = saved
