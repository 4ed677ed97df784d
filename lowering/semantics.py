"""Which integers a quantized graph computes: LiteRT's (the default) or Arm NN CpuRef's.

Quantized `.armnn` files are almost always TFLite models quantized by the TFLiteConverter and parsed
by Arm NN's TfLite parser. Their integers mean what TFLite's integer kernels compute (LiteRT's
reference kernels: the arithmetic the model was calibrated for, and what TOSA's integer operators and
the NPU compilers consuming TOSA reproduce). Arm NN's CpuRef backend emulates those kernels in float32
and differs from them by one unit in many places and by more in a few; people validating against
CpuRef ask for its integers with `--semantics cpuref`.

The two differ only in the ops `DIFFERENCES` lists; every other quantized op has one lowering. The
choice travels in the graph's meta (`SEMANTICS_KEY`), where `convert` puts it and the lowering rules
read it (`LoweringContext.semantics`).
"""
from __future__ import annotations

from nn2tosa.ir import Graph

SEMANTICS = ("litert", "cpuref")
DEFAULT = "litert"
SEMANTICS_KEY = "quantized_semantics"

# nn op of a quantized graph -> (what LiteRT computes, what CpuRef computes), for the ops whose
# integers depend on the choice (the report names every layer lowered from one of them).
DIFFERENCES: dict[str, tuple[str, str]] = {
    "requantize": ("RESCALE with DOUBLE_ROUND: gemmlowp's rounding doubling high multiply, then a rounding "
                   "right shift (EXT-DOUBLEROUND)",
                   "float32 product rounded half away from zero (RESCALE SINGLE_ROUND, halves fixed up)"),
    "squared_difference": ("int8: TFLite's kernel: each operand (x - zp) * 2**7 rescaled to a common unit, the i32 "
                           "difference squared, one RESCALE (DOUBLE_ROUND); TFLite has no uint8 or int16 kernel: "
                           "those take the cpuref lowering, its RESCALEs rounding as LiteRT's",
                           "(sa*A - sb*B)**2 / sy rounded half away from zero, from exact i32 products A*A, A*B, "
                           "B*B on a fixed-point fraction of the output step"),
}


def semantics_of(graph: Graph) -> str:
    """The semantics `graph`'s quantized ops are lowered with."""
    return str(graph.meta.get(SEMANTICS_KEY, DEFAULT))


def set_semantics(graph: Graph, semantics: str) -> None:
    if semantics not in SEMANTICS:
        raise ValueError(f"semantics {semantics!r}: one of {', '.join(SEMANTICS)}")
    graph.meta[SEMANTICS_KEY] = semantics
