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
    "softmax": ("TFLite's reference kernels (lowering/rules/quantized_litert.py), where TFLite accepts the output "
                "quantization (int8 1/256 zero point -128, uint8 1/256 zero point 0, int16 1/32768): int8/uint8 "
                "gemmlowp's fixed-point exp (four int8 TABLEs of its bytes) and Newton-Raphson reciprocal; int16 "
                "TFLite's interpolated exp and 1/(1+x) LUTs as int16 TABLEs. No GATHER, INTDIV or float",
                "float32 exp, sum and division rounded half away from zero: int8 an exact 256-entry GATHER of "
                "exp and one rounding INTDIV; int16 computed in f32 (pro_fp)"),
    "l2_normalize": ("TFLite's int8/uint8 kernels: sum of squares, GetInvSqrtQuantizedMultiplierExp's fixed-point "
                     "Newton-Raphson, MultiplyByQuantizedMultiplier per row; an output scale other than TFLite's "
                     "1/128 joins the row multiplier (one more SRDHM). int16: TFLite has no kernel, f32 as CpuRef",
                     "computed in f32 (pro_fp)"),
    "div": ("TFLite's DivElementwise (uint8, int8, int16): Newton-Raphson reciprocal of the divisor, the dividend "
            "shifted by its sign bits, two SRDHMs and a rounding shift, including what that shift gives past 31 "
            "bits for small dividends (far from the quotient, as LiteRT computes); a zero divisor divides by 1",
            "one rounding INTDIV of the rescaled dividend (int8), f32 (int16); a zero divisor saturates"),
}


def semantics_of(graph: Graph) -> str:
    """The semantics `graph`'s quantized ops are lowered with."""
    return str(graph.meta.get(SEMANTICS_KEY, DEFAULT))


def set_semantics(graph: Graph, semantics: str) -> None:
    if semantics not in SEMANTICS:
        raise ValueError(f"semantics {semantics!r}: one of {', '.join(SEMANTICS)}")
    graph.meta[SEMANTICS_KEY] = semantics
