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
    "resize": ("int8/int16 bilinear: TFLite's ResizeBilinearInteger, the stored integers weighed in 10-bit fixed "
               "point (ratio rounded to 1/1024: RESIZE scale [1024, r], offset r/2 - 512 for half-pixel), rounded "
               "half away from zero; nearest: the rows its float32 coordinates give (GATHER where they are not the "
               "exact ones)",
               "the exact rational coordinate, the zero point taken off and one RESCALE to the output quantization; "
               "nearest: the exact coordinate"),
}


def semantics_of(graph: Graph) -> str:
    """The semantics `graph`'s quantized ops are lowered with."""
    return str(graph.meta.get(SEMANTICS_KEY, DEFAULT))


def set_semantics(graph: Graph, semantics: str) -> None:
    if semantics not in SEMANTICS:
        raise ValueError(f"semantics {semantics!r}: one of {', '.join(SEMANTICS)}")
    graph.meta[SEMANTICS_KEY] = semantics
