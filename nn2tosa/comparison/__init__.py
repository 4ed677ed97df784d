"""`nn2tosa compare`: where a converted model's numbers part from a reference, layer by layer.

nn2tosa.comparison.run (the comparison), .points (where each source tensor is in the converted graph),
.dump (the reference model's intermediate tensors), .references (npy directory, Arm NN debug dump,
float), .nn_numpy (the float64 evaluator), .metrics, .table (stdout, JSON), .html (the page),
.command (the command line). `compare` and `CompareResult` are imported on first use, so the command
line's parser (which reads .command) loads no numpy.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nn2tosa.comparison.run import CompareResult, Row, compare

__all__ = ["compare", "CompareResult", "Row"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from nn2tosa.comparison import run

        return getattr(run, name)
    raise AttributeError(f"module 'nn2tosa.comparison' has no attribute {name!r}")
