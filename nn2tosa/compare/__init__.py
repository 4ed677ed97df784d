"""`nn2tosa compare`: where a converted model's numbers part from a reference, layer by layer.

nn2tosa.compare.run (the comparison), .points (where each source tensor is in the converted graph),
.dump (the reference model's intermediate tensors), .references (npy directory, Arm NN debug dump,
float), .nn_numpy (the float64 evaluator), .metrics, .table (stdout, JSON), .html (the page).
"""
from __future__ import annotations

from nn2tosa.compare.run import CompareResult, Row, compare

__all__ = ["compare", "CompareResult", "Row"]
