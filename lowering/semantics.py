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
MEANING = {"litert": "TFLite's integer kernels", "cpuref": "Arm NN CpuRef's float32 emulation of them"}
DEFAULT = "litert"
SEMANTICS_KEY = "integer_semantics"
SEMANTICS_DEPENDENT_KEY = "semantics_dependent"  # meta: "; "-joined locations of the ops that consulted it

# nn op of a quantized graph -> (what LiteRT computes, what CpuRef computes), for the ops whose
# integers depend on the choice (the report names every layer lowered from one of them).
DIFFERENCES: dict[str, tuple[str, str]] = {
    "requantize": ("RESCALE with DOUBLE_ROUND: gemmlowp's rounding doubling high multiply, then a rounding "
                   "right shift (EXT-DOUBLEROUND)",
                   "float32 product rounded half away from zero (RESCALE SINGLE_ROUND, halves fixed up)"),
}


def semantics_of(graph: Graph) -> str:
    """The semantics `graph`'s quantized ops are lowered with."""
    return str(graph.meta.get(SEMANTICS_KEY, DEFAULT))


def set_semantics(graph: Graph, semantics: str) -> None:
    if semantics not in SEMANTICS:
        raise ValueError(f"semantics {semantics!r}: one of {', '.join(SEMANTICS)}")
    graph.meta[SEMANTICS_KEY] = semantics
