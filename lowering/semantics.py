"""Which integers a quantized graph computes: LiteRT's (the default) or Arm NN CpuRef's.

Quantized `.armnn` files are almost always TFLite models quantized by the TFLiteConverter and parsed
by Arm NN's TfLite parser. Their integers mean what TFLite's integer kernels compute (LiteRT's
reference kernels: the arithmetic the model was calibrated for, and what TOSA's integer operators and
the NPU compilers consuming TOSA reproduce). Arm NN's CpuRef backend emulates those kernels in float32
and differs from them by one unit in many places and by more in a few; people validating against
CpuRef ask for its integers with `--semantics cpuref`.

The two differ only in the ops `DIFFERENCES` lists; every other quantized op has one lowering. A row of
one op's own kernel is declared beside that kernel (`differs`, e.g. lowering/rules/math.py), so the table is
whole once lowering.rules is imported. The choice travels in the passes' context
(nn2tosa.passes.context.PassContext), where `convert` puts it and the lowering rules read it
(`LoweringContext.semantics`).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from nn2tosa.dialects.integer_semantics import DEFAULT, MEANING, SEMANTICS

if TYPE_CHECKING:
    from .context import LoweringContext

FLOAT_TABLE = "dequantize, the float32 function, quantize (rounded half away from zero): one TABLE of those integers"

# nn op of a quantized graph -> (what LiteRT computes, what CpuRef computes), for the ops whose
# integers depend on the choice (the report names every layer lowered from one of them).
DIFFERENCES: dict[str, tuple[str, str]] = {
    "requantize": ("RESCALE with DOUBLE_ROUND: gemmlowp's rounding doubling high multiply, then a rounding "
                   "right shift (EXT-DOUBLEROUND)",
                   "float32 product rounded half away from zero (RESCALE SINGLE_ROUND, halves fixed up)"),
    # functions of one int8 tensor are one exact TABLE either way; its entries are computed by a numpy model
    # of LiteRT's kernel (lowering/fixed_point/litert_kernels.py) or through CpuRef's float32 function. Of an int16 tensor:
    # RESCALEs by TFLite's multipliers (requantize, abs, relu / clamp, leaky_relu), else a TABLE or GATHER
    "leaky_relu": ("MultiplyByQuantizedMultiplier of x - zp by the identity or the alpha multiplier (double rounding; "
                   "multipliers from float32 ratios of the scales)", FLOAT_TABLE),
    "relu, clamp": ("MultiplyByQuantizedMultiplier to the output scale, clamped to zp + roundf(bound / scale)",
                    FLOAT_TABLE),
    "abs": ("|x - zp| times MultiplyByQuantizedMultiplier (none when the scales are equal)", FLOAT_TABLE),
    "rsqrt": ("gemmlowp Newton-Raphson 1 / sqrt(x - zp) as a fixed-point multiplier, two "
              "MultiplyByQuantizedMultiplier steps; x == zp gives the largest output", FLOAT_TABLE),
    "sqrt": ("float32 sqrt divided by the output scale and truncated toward zero (not rounded)", FLOAT_TABLE),
    "sigmoid, tanh, exp, log, elu, gelu (int8)": (
        "a float32 table (LUTPopulate): the function times the float32 reciprocal of the output scale, rounded half "
        "away; log of a value <= 0 is the lowest output", FLOAT_TABLE),
    "requantize (int8 to int16)": ("TFLite's Requantize: MultiplyByQuantizedMultiplier of x - zp (one RESCALE "
                                   "DOUBLE_ROUND)", "an exact 256-entry GATHER of the float32 requantization"),
    "requantize, abs, relu, clamp, leaky_relu (int16)": (
        "one RESCALE DOUBLE_ROUND by TFLite's multiplier: negative halves round up",
        "RESCALE of |x| with the sign put back where halves can occur (halves away from zero)"),
    "exp, log, rsqrt, gelu (int16)": ("TFLite's 513-entry LUT (float32 samples less half their midpoint error), "
                                      "interpolated: one TOSA TABLE holding it",
                                      "the float32 function tabulated (interpolated TABLE when exact, else GATHER)"),
    "sigmoid, tanh (int16)": ("TFLite's fixed point: the input rounded to a 1/(3 * 4096) grid, interpolated in its "
                              "256-entry sigmoid table (no TOSA TABLE reproduces it: the table and its slopes as "
                              "int8 TABLEs of their bytes, the interpolation in i32, no GATHER)",
                              "the float32 function tabulated (interpolated TABLE when exact, else GATHER)"),
    "reduce_sum": ("the exact int32 sum of x - zp times s_in / s_out, rounded half away from zero, as LiteRT's builtin "
                   "SUM kernel (its reference kernel reads int8 and int16 data as uint8, which is not followed)",
                   "the same"),
    "reduce_mean": ("the same sum; the multiplier of s_in / s_out times 2**k / n truncated (k = floor(log2 n)), the "
                       "exponent lowered by k (QuantizedMeanOrSum)",
                       "the exact sum times s_in / (n * s_out) rounded half away from zero"),
    "reduce_prod": ("int8/int16: a chain in element order, each step the int64 product times the 16-bit "
                       "multiplier of s_in / s_out**(1/n) rounded (QuantizedReduceProd; TOSA MUL with a shift)",
                       "in f32: dequantized, multiplied, quantized"),
    "avg_pool2d": ("sum of the stored integers (x, not x - zp) of the window's input elements, (sum +- n // 2) / n "
                      "truncated: halves away from zero of the stored values (DEPTHWISE_CONV2D of ones, INTDIV)",
                      "TOSA AVG_POOL2D with zero points (its rounding of (sum of x - zp) / n)"),
    "pad": ("a quantized constant Pad of an Arm NN 20.08 or older file (padValue never written by that TfLite "
               "parser, 0) fills with the zero point, as TFLite's PAD", "the stored integer padValue, 0 there"),
    "add": ("x - zp shifted left 20 bits (8-bit) or 15 (16-bit), each times s / (2 max s), summed, times "
               "2 max s / (2**shift s_out): three MultiplyByQuantizedMultiplier (ADD; SUB alike)",
               "operands on a common fixed-point unit, one rounding half away from zero"),
    "sub": ("as nn.add, the second term subtracted", "as nn.add"),
    "mul": ("(a - zpa) * (b - zpb) times QuantizeMultiplier(s_a * s_b / s_y computed in float32), DOUBLE_ROUND",
               "the same product times the double ratio, halves away from zero"),
    "fully_connected": ("LiteRT's reference FULLY_CONNECTED rounds acc * s_x * s_w / s_y once in double "
                           "(RESCALE SINGLE_ROUND), not with MultiplyByQuantizedMultiplier as its convolutions",
                           "the same, halves away from zero"),
    "softmax": ("TFLite's reference kernels (lowering/fixed_point/litert_ops.py), where TFLite accepts the output "
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
    "resize": ("int8/int16 bilinear: TFLite's ResizeBilinearInteger, the stored integers weighed in 10-bit fixed "
               "point (ratio rounded to 1/1024: RESIZE scale [1024, r], offset r/2 - 512 for half-pixel), rounded "
               "half away from zero; nearest: the rows its float32 coordinates give (GATHER where they are not the "
               "exact ones)",
               "the exact rational coordinate, the zero point taken off and one RESCALE to the output quantization; "
               "nearest: the exact coordinate"),
    "lstm (int8 UnidirectionalSequenceLstm, QLstm)": (
        "TFLite's integer LSTM kernel (8x8_16): gates from int8 MATMULs and MultiplyByQuantizedMultiplier, integer "
        "layer norm, gemmlowp's int16 logistic / tanh, an int16 cell state at a power-of-two scale, CIFG, peephole, "
        "projection as LiteRT computes them; an int8 UnidirectionalSequenceLstm with layer norm or projection (whose "
        "intermediate scales Arm NN does not record) takes the cpuref lowering",
        "CpuRef's float32 steps between its gate buffers (QLstm: int16 buffers at the intermediate scales, no gate "
        "bias without layer norm; the int8 LSTM in f32 between dequantize and quantize)"),
    "squared_difference": ("int8: TFLite's kernel: each operand (x - zp) * 2**7 rescaled to a common unit, the i32 "
                           "difference squared, one RESCALE (DOUBLE_ROUND); TFLite has no uint8 or int16 kernel: "
                           "those take the cpuref lowering, its RESCALEs rounding as LiteRT's",
                           "(sa*A - sb*B)**2 / sy rounded half away from zero, from exact i32 products A*A, A*B, "
                           "B*B on a fixed-point fraction of the output step"),
}


def differs(op: str, litert: str, cpuref: str = FLOAT_TABLE) -> None:
    """Declare that `op`'s quantized integers differ between the two (a DIFFERENCES row): `litert` says what
    LiteRT computes, `cpuref` what CpuRef does (by default: its float32 function, tabulated)."""
    if op in DIFFERENCES:
        raise ValueError(f"two rows of {op} in DIFFERENCES")
    DIFFERENCES[op] = (litert, cpuref)


# ------------------------------------------------------------------------------ what a rule asks
# A lowering that is one source's own is a form registered with `semantics="litert"` (lowering/registry.py);
# a helper many forms share asks these where the two differ in one step of the same computation. Asking is
# reported (LoweringContext.semantics).
def computes_litert(ctx: LoweringContext) -> bool:
    """Whether the op's quantized integers are LiteRT's (the default), not CpuRef's."""
    return ctx.semantics == "litert"


def kernel_rounding(ctx: LoweringContext, litert: str) -> str | None:
    """The RESCALE rounding of a kernel that rounds its own way under LiteRT (`litert`, e.g. its reference
    FULLY_CONNECTED's one rounding in double: "SINGLE_ROUND"); None under CpuRef (the rescale helpers' own:
    halves away from zero)."""
    return litert if computes_litert(ctx) else None


def rounding_mode(ctx: LoweringContext) -> str:
    """RESCALE's rounding of a 32-bit multiplier: LiteRT's MultiplyByQuantizedMultiplier rounds twice
    (DOUBLE_ROUND), CpuRef's float32 product once (SINGLE_ROUND, halves fixed up where they occur)."""
    return "DOUBLE_ROUND" if computes_litert(ctx) else "SINGLE_ROUND"


__all__ = ["DEFAULT", "DIFFERENCES", "FLOAT_TABLE", "MEANING", "SEMANTICS", "computes_litert", "differs",
           "kernel_rounding", "rounding_mode"]
