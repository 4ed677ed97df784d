"""numpy models of TFLite's (LiteRT's) reference integer kernels for elementwise functions of one tensor.

Each kernel maps every carried integer input of a quantized tensor (i8 values -128..127, i16 values
-32768..32767, uint8 data carried minus 128 as lowering/fixed_point/carrier.py describes) to the integer TFLite's
reference kernel (the BUILTIN_REF op resolver) stores, bit for bit: the lowering turns those results
into a TABLE (or a GATHER) instead of tabulating the float function the way Arm NN CpuRef computes it.

`kernel_for` is the one place that says which nn op runs which TFLite kernel; an op without one here
(None) is one TFLite computes in float exactly as CpuRef does (dequantize, float32 function, quantize),
so the float tabulation already gives its integers.

The fixed-point primitives (gemmlowp's, TFLite's MultiplyByQuantizedMultiplier and LUTPopulate) are
lowering/fixed_point/tflite.py's.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from .carrier import QInfo
from .carrier import round_half_away as _round_away
from .rescale import RescaleRangeError
from .tflite import (INT32_MAX, lut_int16_entries, lut_lookup_int16, multiply_by_quantized_multiplier,
                     quantize_multiplier, rounding_divide_by_pot, saturating_multiply_by_pot, srdhm)

Kernel = Callable[[np.ndarray], np.ndarray]  # carried integer inputs -> carried integer outputs
Transform = Callable[[np.ndarray], np.ndarray]  # real inputs -> real outputs (float32), tabulated by the LUTs
F32 = np.float32


# nn op -> (x, y, attrs) -> the model of TFLite's int8 -> int8 kernel of an op whose kernel is registered
# beside the op's lowering (`int8_kernel`), tried before the kernels below
INT8_KERNELS: dict[str, Callable[[QInfo, QInfo, Mapping], Kernel]] = {}
KernelFactory = TypeVar("KernelFactory", bound=Callable[[QInfo, QInfo, Mapping], Kernel])


def int8_kernel(op: str) -> Callable[[KernelFactory], KernelFactory]:
    """Register the model of TFLite's int8 kernel of nn op `op`, a function (x, y, attrs) -> Kernel: a
    quantized int8 function of one tensor whose LiteRT integers are that kernel's (rules/ says where)."""
    def register(factory: KernelFactory) -> KernelFactory:
        if op in INT8_KERNELS:
            raise ValueError(f"two int8 kernels of {op}")
        INT8_KERNELS[op] = factory
        return factory

    return register


def clip_to(v: np.ndarray, q: QInfo) -> np.ndarray:
    return np.clip(v, q.qmin, q.qmax).astype(np.int64)


# ------------------------------------------------------------------------------ 8-bit kernels
def int16_multiplier(real: float) -> tuple[int, int]:
    """QuantizeMultiplier, then DownScaleInt32ToInt16Multiplier: the 32-bit multiplier rounded to its
    high 16 bits (saturating at 32767)."""
    m, e = quantize_multiplier(real)
    return (32767 if m >= INT32_MAX - (1 << 15) else (m + (1 << 15)) >> 16), e


def wrap16(v: np.ndarray) -> np.ndarray:
    """An int16 C variable's wrap-around."""
    return ((np.asarray(v, np.int64) + 32768) & 0xFFFF) - 32768


def leaky_relu(x: QInfo, y: QInfo, alpha: float) -> Kernel:
    """reference_ops::QuantizeLeakyRelu: x - zp >= 0 times the identity multiplier, < 0 times the
    alpha multiplier (MultiplyByQuantizedMultiplier of |multiplier|, the sign applied after), plus
    the output zero point, saturated. The multipliers are float32 products and quotients of the scales."""
    identity = quantize_multiplier(float(F32(x.scale) / F32(y.scale)))
    alpha_m, alpha_e = quantize_multiplier(float(F32(x.scale) * F32(alpha) / F32(y.scale)))

    def run(v: np.ndarray) -> np.ndarray:
        d = np.asarray(v, np.int64) - x.zero_point
        low = multiply_by_quantized_multiplier(d, abs(alpha_m), alpha_e) * (-1 if alpha_m < 0 else 1)
        return clip_to(np.where(d >= 0, multiply_by_quantized_multiplier(d, *identity), low) + y.zero_point, y)

    return run


def clamp(x: QInfo, y: QInfo, low: float, high: float) -> Kernel:
    """QuantizedReluX (RELU, RELU6, RELU_N1_TO_1): MultiplyByQuantizedMultiplier by the float32 ratio of
    the scales plus the output zero point, clamped to zp + roundf(bound / scale) (float32 quotients)."""
    m, e = quantize_multiplier(float(F32(x.scale) / F32(y.scale)))

    def bound(value: float, other: int) -> int:
        with np.errstate(over="ignore"):
            steps = F32(value) / F32(y.scale)
        if not np.isfinite(steps):  # an infinite bound, or one whose float32 quotient overflows: no bound
            return other
        return y.zero_point + int(_round_away(steps))

    lo, hi = max(y.qmin, bound(low, y.qmin)), min(y.qmax, bound(high, y.qmax))

    def run(v: np.ndarray) -> np.ndarray:
        out = multiply_by_quantized_multiplier(np.asarray(v, np.int64) - x.zero_point, m, e) + y.zero_point
        return np.minimum(np.maximum(out, lo), hi).astype(np.int64)

    return run


def requantize(x: QInfo, y: QInfo) -> Kernel:
    """reference_ops::Requantize (QUANTIZE of an integer tensor): MultiplyByQuantizedMultiplier by the
    ratio of the scales in double, plus the output zero point, saturated."""
    m, e = quantize_multiplier(float(x.scale) / float(y.scale))

    def run(v: np.ndarray) -> np.ndarray:
        return clip_to(multiply_by_quantized_multiplier(np.asarray(v, np.int64) - x.zero_point, m, e) + y.zero_point, y)

    return run


def abs_(x: QInfo, y: QInfo) -> Kernel:
    """elementwise.cc AbsEvalQuantized: |x - zp|, times MultiplyByQuantizedMultiplier by the float32
    ratio of the scales unless the scales are equal, plus the output zero point, saturated."""
    same = F32(x.scale) == F32(y.scale)
    m, e = quantize_multiplier(float(F32(x.scale) / F32(y.scale)))

    def run(v: np.ndarray) -> np.ndarray:
        d = np.abs(np.asarray(v, np.int64) - x.zero_point)
        return clip_to((d if same else multiply_by_quantized_multiplier(d, m, e)) + y.zero_point, y)

    return run


def rsqrt(x: QInfo, y: QInfo) -> Kernel:
    """elementwise.cc RsqrtEvalQuantizedInt8: 1 / sqrt(x - zp) as a fixed-point multiplier (gemmlowp
    Newton-Raphson, GetInvSqrtQuantizedMultiplierExp), applied to 1 with 20 extra bits, then
    MultiplyByQuantizedMultiplier by 1 / (sqrt(input scale) * output scale) and 20 bits back; x == zp
    gives the largest output. TFLite rejects inputs below the zero point; they give it here too."""
    with np.errstate(divide="ignore"):  # tiny scales: the f32 product underflows to 0, 1/0 is inf, which
        # quantize_multiplier refuses (RescaleRangeError: the op unsupported)
        m, e = quantize_multiplier(float(np.float64(1.0) / np.float64(F32(np.sqrt(F32(x.scale))) * F32(y.scale))))
    shift = 20

    def one(d: int) -> int:
        if d <= 0:
            return y.qmax
        inv, inv_shift = inv_sqrt_multiplier_exp(d)
        data = multiply_by_quantized_multiplier(np.int64(1), inv, inv_shift + shift)
        return int(multiply_by_quantized_multiplier(data, m, e - shift)) + y.zero_point

    def run(v: np.ndarray) -> np.ndarray:
        d = np.asarray(v, np.int64) - x.zero_point
        table = {int(k): one(int(k)) for k in np.unique(d)}
        return clip_to(np.vectorize(table.__getitem__, otypes=[np.int64])(d), y)

    return run


def inv_sqrt_multiplier_exp(value: int) -> tuple[int, int]:
    """TFLite's GetInvSqrtQuantizedMultiplierExp (reverse shift -1): 1 / sqrt(value) as a Q0.31 multiplier
    and a left shift, by five Newton-Raphson steps in gemmlowp's 3-integer-bit fixed point."""
    if value <= 1:
        return INT32_MAX, 0
    shift = 11
    while value >= 1 << 29:
        value //= 4
        shift += 1
    pairs = ((32 - value.bit_length()) - 1) // 2 - 1  # CountLeadingZeros - 1, in bit pairs, less one
    shift -= pairs
    value <<= 2 * pairs

    def mul(a: int, b: int) -> int:
        return int(srdhm(np.int64(a), np.int64(b)))

    half_input = int(rounding_divide_by_pot(np.int64(value >> 1), 1))
    half_three = (1 << 28) + (1 << 27)  # 1.5 with 3 integer bits
    x = 1 << 28  # one with 3 integer bits
    for _ in range(5):
        x3 = int(saturating_multiply_by_pot(np.int64(mul(mul(x, x), x)), 6))  # 9 integer bits -> 3
        x = int(saturating_multiply_by_pot(np.int64(mul(half_three, x) - mul(half_input, x3)), 3))  # 6 -> 3
    x = mul(x, 1518500250)  # times sqrt(2) / 2 (Q0.31)
    if shift < 0:
        x <<= -shift
        shift = 0
    return x, -shift


def sqrt(x: QInfo, y: QInfo) -> Kernel:
    """elementwise.cc SqrtEvalQuantized: float32 scale * (x - zp), float32 sqrt, divided by the output
    scale in float32 and truncated toward zero (a C cast, not rounded), plus the zero point, saturated.
    TFLite rejects negative inputs; they give sqrt(0) here."""

    def run(v: np.ndarray) -> np.ndarray:
        real = F32(x.scale) * (np.asarray(v, np.int64) - x.zero_point).astype(F32)
        out = np.sqrt(np.maximum(real, F32(0))) / F32(y.scale)
        return clip_to(np.trunc(out).astype(np.int64) + y.zero_point, y)

    return run


def lut_int8(x: QInfo, y: QInfo, transform: Transform) -> Kernel:
    """LUTPopulate<int8_t> (logistic, tanh, exp, log, elu, gelu): the float32 transform of float32
    scale * (x - zp), times the float32 reciprocal of the output scale (not divided by it), rounded
    half away from zero, plus the zero point, saturated."""
    inverse = F32(1) / F32(y.scale)

    def run(v: np.ndarray) -> np.ndarray:
        real = F32(x.scale) * (np.asarray(v, np.int64) - x.zero_point).astype(F32)
        with np.errstate(all="ignore"):
            out = np.asarray(transform(real), F32) * inverse
        return clip_to(_round_away(np.nan_to_num(out, nan=0.0, posinf=1e30, neginf=-1e30)) + y.zero_point, y)

    return run


def _sigmoid(v: np.ndarray) -> np.ndarray:
    return F32(1) / (F32(1) + np.exp(-v))


def _log(y: QInfo) -> Transform:
    # LogLUTPrepare: log of a value <= 0 is the output's lowest real value (no NaN, no -inf)
    lowest = F32((y.qmin - y.zero_point) * F32(y.scale))
    return lambda v: np.where(v <= 0, lowest, np.log(np.where(v <= 0, F32(1), v)))


def _gelu(approximate: bool) -> Transform:
    from math import erfc

    if approximate:  # GeluTransformApproximate
        k = F32(math.sqrt(2 / math.pi))
        return lambda v: F32(0.5) * v * (F32(1) + np.tanh(k * (v + F32(0.044715) * v * v * v)))
    # GeluTransform: 0.5 x erfc(-x / sqrt(2)), erfc in float32
    erfc32 = np.vectorize(lambda t: float(F32(erfc(float(t)))), otypes=[F32])
    return lambda v: F32(0.5) * v * erfc32(v * F32(-math.sqrt(0.5)))


# ------------------------------------------------------------------------------ 16-bit kernels
# TFLite's constant sigmoid_table_uint16: sigmoid(i / 24), i = 0..255, in unsigned Q0.16 (the last entry
# held at 65535), shared by its int16 logistic and tanh. The values are data the kernels are defined by:
# 44 of them differ by one from round(65536 * sigmoid(i / 24)), so they cannot be recomputed here.
_SIGMOID_TABLE = np.array([
    32768, 33451, 34133, 34813, 35493, 36169, 36843, 37513, 38180, 38841, 39498, 40149, 40794, 41432, 42064,
    42688, 43304, 43912, 44511, 45102, 45683, 46255, 46817, 47369, 47911, 48443, 48964, 49475, 49975, 50464,
    50942, 51409, 51865, 52311, 52745, 53169, 53581, 53983, 54374, 54755, 55125, 55485, 55834, 56174, 56503,
    56823, 57133, 57433, 57724, 58007, 58280, 58544, 58800, 59048, 59288, 59519, 59743, 59959, 60168, 60370,
    60565, 60753, 60935, 61110, 61279, 61441, 61599, 61750, 61896, 62036, 62172, 62302, 62428, 62549, 62666,
    62778, 62886, 62990, 63090, 63186, 63279, 63368, 63454, 63536, 63615, 63691, 63765, 63835, 63903, 63968,
    64030, 64090, 64148, 64204, 64257, 64308, 64357, 64405, 64450, 64494, 64536, 64576, 64614, 64652, 64687,
    64721, 64754, 64786, 64816, 64845, 64873, 64900, 64926, 64950, 64974, 64997, 65019, 65039, 65060, 65079,
    65097, 65115, 65132, 65149, 65164, 65179, 65194, 65208, 65221, 65234, 65246, 65258, 65269, 65280, 65291,
    65301, 65310, 65319, 65328, 65337, 65345, 65352, 65360, 65367, 65374, 65381, 65387, 65393, 65399, 65404,
    65410, 65415, 65420, 65425, 65429, 65433, 65438, 65442, 65445, 65449, 65453, 65456, 65459, 65462, 65465,
    65468, 65471, 65474, 65476, 65479, 65481, 65483, 65485, 65488, 65489, 65491, 65493, 65495, 65497, 65498,
    65500, 65501, 65503, 65504, 65505, 65507, 65508, 65509, 65510, 65511, 65512, 65513, 65514, 65515, 65516,
    65517, 65517, 65518, 65519, 65520, 65520, 65521, 65522, 65522, 65523, 65523, 65524, 65524, 65525, 65525,
    65526, 65526, 65526, 65527, 65527, 65528, 65528, 65528, 65529, 65529, 65529, 65529, 65530, 65530, 65530,
    65530, 65531, 65531, 65531, 65531, 65531, 65532, 65532, 65532, 65532, 65532, 65532, 65533, 65533, 65533,
    65533, 65533, 65533, 65533, 65533, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534,
    65535], dtype=np.int64)


def _checked_log2(scale: float) -> tuple[int, bool]:
    """TFLite's CheckedLog2 in float32: the rounded log2 and whether the scale is a power of two."""
    log2 = F32(np.log(F32(scale))) * (F32(1) / F32(np.log(F32(2))))
    rounded = F32(_round_away(log2))
    return int(rounded), bool(abs(F32(log2 - rounded)) < F32(1e-3))


def _input_rescale_16(scale: float, pot_shifts: tuple[int, ...]) -> tuple[int, int]:
    """The int16 logistic / tanh input multiplier and right shift (TanhPrepare / SigmoidPrepare): for a
    power-of-two scale 2**(shift - 12), shift in `pot_shifts`, 3 << shift without a right shift; else
    scale * 3 * 4096 doubled until above 16383.5 (at most 31 times), truncated, and the doublings."""
    log2, pot = _checked_log2(scale)
    if pot and (12 + log2) in pot_shifts:
        return 3 << (12 + log2), 0
    multiplier, shift = float(F32(scale)) * 4096.0 * 3.0, 0
    if not multiplier < 1 << 16:  # the kernel's int32 product of an int16 input would overflow
        raise RescaleRangeError(f"int16 logistic/tanh of input scale {scale:g}: TFLite's input multiplier "
                                f"{multiplier:g} overflows its 32-bit products")
    while multiplier <= 32767.0 / 2.0 and shift <= 30:
        shift += 1
        multiplier *= 2.0
    return int(multiplier), shift


def _scaled_input_16(v: np.ndarray, multiplier: int, shift: int) -> np.ndarray:
    rounding = 1 << (shift - 1) if shift > 0 else 0
    return (np.asarray(v, np.int64) * multiplier + rounding) >> shift


def _sigmoid_segment(a: np.ndarray, bits: int, saturated: int) -> np.ndarray:
    """TFLite's interpolation of |x| in its 256-entry sigmoid table: a >> bits indexes it, the low `bits`
    bits interpolate between that entry and the next; from index 255 on, `saturated`."""
    index = np.minimum(a >> bits, 254)
    low, high = _SIGMOID_TABLE[index], _SIGMOID_TABLE[index + 1]
    return np.where((a >> bits) >= 255, saturated, (low << bits) + (a & ((1 << bits) - 1)) * (high - low))


@dataclass(frozen=True)
class SigmoidFixedPoint:
    """The integers of TFLite's int16 logistic / tanh kernels (logistic16, tanh16), for lowerings that
    compute them step by step: s = (x * multiplier + rounding) >> shift, a = |s|, the table
    index a >> bits (saturated at 255: `entries` and `slopes` have 256 elements, the last one the
    saturated result with slope 0), r = entries[i] << bits + (a & (2**bits - 1)) * slopes[i], and the
    output from r: logistic (r + 512) >> 10 for s >= 0, 32768 minus it below; tanh ((r + 128) >> 8) -
    32768 for s >= 0, its negation below (both the kernels' integers, rearranged)."""

    tanh: bool
    multiplier: int
    shift: int
    bits: int
    entries: np.ndarray
    slopes: np.ndarray


def sigmoid_fixed_point(op: str, x: QInfo, y: QInfo) -> SigmoidFixedPoint | None:
    """The fixed point of TFLite's int16 logistic (`op` "nn.sigmoid") or tanh ("nn.tanh") for these
    quantizations, or None where `kernel_for` gives no such kernel."""
    if op not in ("nn.sigmoid", "nn.tanh") or x.dtype != "i16" or kernel_for(op, {}, x, y) is None:
        return None
    tanh = op == "nn.tanh"
    multiplier, shift = _input_rescale_16(x.scale, (0, 1) if tanh else (0,))
    if multiplier << 15 >= 1 << 31:  # x * multiplier must stay in int32 (a scale past 2.67: all saturated)
        return None
    bits, saturated = (8, 0xFFFF << 8) if tanh else (9, 0x7FFF << 10)
    entries = _SIGMOID_TABLE.copy()
    slopes = np.append(np.diff(_SIGMOID_TABLE), 0)
    entries[255] = saturated >> bits
    return SigmoidFixedPoint(tanh, multiplier, shift, bits, entries, slopes)


def logistic16(x: QInfo, y: QInfo) -> Kernel:
    """reference_integer_ops::Logistic (int16, output scale 2**-15): the input rescaled so that 4096 * 3
    is 1.0, |x| split into a table index (>> 9) and 9 interpolation bits into TFLite's 256-entry
    sigmoid table (sigmoid(i / 24) in Q0.16), saturated at index 255, mirrored for negative inputs
    (1 - sigmoid(|x|)) and rounded back to Q0.15."""
    multiplier, shift = _input_rescale_16(x.scale, (0,))

    def run(v: np.ndarray) -> np.ndarray:
        s = _scaled_input_16(v, multiplier, shift)
        result = _sigmoid_segment(np.abs(s), 9, 0x7FFF << 10)
        result = np.where(s >= 0, result + (1 << 9), (1 << 25) - result + (1 << 9) - 1)
        return clip_to(result >> 10, y)

    return run


def tanh16(x: QInfo, y: QInfo) -> Kernel:
    """reference_integer_ops::Tanh (int16, output scale 2**-15): tanh(x) = 2 sigmoid(2x) - 1 through the
    same 256-entry sigmoid table as logistic16, with 8 interpolation bits (|x| >> 8 indexes it),
    saturated at index 255, mirrored for negative inputs and rounded back to Q0.15."""
    multiplier, shift = _input_rescale_16(x.scale, (0, 1))

    def run(v: np.ndarray) -> np.ndarray:
        s = _scaled_input_16(v, multiplier, shift)
        result = _sigmoid_segment(np.abs(s), 8, 0xFFFF << 8)
        result = np.where(s >= 0, result - (1 << 23) + (1 << 7), -result + (1 << 23) + (1 << 7) - 1)
        return clip_to(result >> 8, y)

    return run


def lut_int16(x: QInfo, y: QInfo, transform: Transform) -> Kernel:
    """LUTPopulate<int16_t> and LUTLookup (int16 exp, log, rsqrt, gelu): TFLite's 513-entry float32
    table (tflite.lut_int16_entries), interpolated within each 128-input segment. Zero points
    enter only through the ranges: the table holds no output zero point, as TFLite's does not."""
    table = lut_int16_entries(transform, F32, x.scale, x.zero_point, y.scale, y.zero_point)
    return lambda v: wrap16(lut_lookup_int16(v, table))


# ------------------------------------------------------------------------------ which kernel
def kernel_for(op: str, attrs: Mapping, x: QInfo, y: QInfo) -> Kernel | None:
    """The TFLite kernel model nn op `op` (attributes `attrs`) lowers to for input `x` and output `y`
    quantizations, or None where TFLite computes what CpuRef computes (dequantize, float32, quantize)."""
    if x.dtype == "i8" and y.dtype == "i8":
        if op in INT8_KERNELS:
            return INT8_KERNELS[op](x, y, attrs)
        if op == "nn.leaky_relu":
            return leaky_relu(x, y, float(attrs["alpha"]))
        if op in ("nn.relu", "nn.clamp"):
            low, high = (attrs["min"], attrs["max"]) if op == "nn.clamp" else (0.0, math.inf)
            return clamp(x, y, float(min(low, high)), float(high))
        if op in ("nn.requantize", "nn.identity"):
            return requantize(x, y)
        if op == "nn.abs":
            return abs_(x, y)
        if op == "nn.rsqrt":
            return rsqrt(x, y)
        if op == "nn.sqrt":
            return sqrt(x, y)
        transforms: dict[str, Transform] = {
            "nn.sigmoid": _sigmoid, "nn.tanh": np.tanh, "nn.exp": np.exp, "nn.log": _log(y),
            "nn.elu": lambda v: np.where(v < 0, F32(attrs.get("alpha", 1.0)) * np.expm1(v), v),
            "nn.gelu": _gelu(attrs.get("approximate", "none") == "tanh")}
        if op in transforms:
            return lut_int8(x, y, transforms[op])
    if x.dtype == "i16" and y.dtype == "i16" and x.zero_point == 0 and y.zero_point == 0:
        transforms16: dict[str, Transform] = {
            "nn.exp": np.exp, "nn.log": _log(y), "nn.gelu": _gelu(attrs.get("approximate", "none") == "tanh"),
            "nn.rsqrt": lambda v: np.where(v <= 0, F32(32767) * F32(y.scale),
                                           F32(1) / np.sqrt(np.where(v <= 0, F32(1), v)))}
        if op in transforms16:
            return lut_int16(x, y, transforms16[op])
        log2, pot = _checked_log2(y.scale)
        if pot and log2 == -15:  # TFLite's only int16 output quantization of these two
            if op == "nn.sigmoid":
                return logistic16(x, y)
            if op == "nn.tanh":
                return tanh16(x, y)
    return None
