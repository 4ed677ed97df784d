"""The table of legalization rules: Arm NN layer type -> function building its nn ops.

    @rule("Floor")
    def _floor(layer: Layer) -> list[Value]:
        return [layer.op("nn.floor", layer.operands, type=layer.out_type)]

A rule returns one value per result of the layer (the values that replace them). What it cannot
express it states as named constraints (nn2tosa/ir/constraints.py): `@rule("X", constraints=(c,))`. Layer types with no meaning in nn are listed in NO_MEANING with the reason users
are shown.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable

from nn2tosa.ir import Value
from nn2tosa.ir.constraints import Constraint
from nn2tosa.ir.registry import registering

from .layer import Layer

Rule = Callable[[Layer], list[Value]]
RULES: dict[str, Rule] = {}

# Layer types that describe no computation on tensors nn can express, with the reason.
NO_MEANING: dict[str, str] = {
    "Switch": "control flow: routes its input to one of two outputs by a run-time condition (TOSA 1.0 has no "
              "data-dependent routing of this kind)",
    "Merge": "control flow: forwards whichever input is available (the counterpart of Switch)",
    "StandIn": "a placeholder for a layer Arm NN could not represent; it has no defined computation",
    "PreCompiled": "holds a backend-specific compiled blob, not a computation on tensors",
}


def rule(*layer_types: str, constraints: Iterable[Constraint] = (),
         checks: Iterable[Constraint] = ()) -> Callable[[Rule], Rule]:
    """Register a rule for one or more Arm NN layer types; `constraints` are evaluated before it runs,
    `checks` by its body (`layer.check(c, ...)`; nn2tosa/ir/constraints.py)."""
    return registering(RULES, layer_types, "legalization rules for Arm NN", constraints, checks)
