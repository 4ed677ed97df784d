"""The quantization ops (quantize, dequantize, requantize, quantized constants) and what every quantized
form builds on: the quantization of operands and results, exact lookups of a function of one quantized
tensor, requantization, and the float fallback.

Every quantized rule runs instead of the float rule when an operand or result of the op is quantized
(`@rule(..., quantized=True)`); values are carried as lowering/fixed_point/carrier.py describes (QAsymmU8 as
i8 minus 128). The semantics reproduced are Arm NN CpuRef's: decode to float32, compute, encode
(round half away from zero, saturate).

- nn.constant: the stored integers as carried (ui8 - 128).
- nn.dequantize: (x - zp) as i32, CAST to f32, times the scale (per axis too) - exactly CpuRef's
  float32 product. nn.quantize: x / scale (a multiplication by the f32 reciprocal), rounded half
  away from zero in f32, + zp, saturated.
- `lookup`: a function of one quantized tensor, exactly: an i8 input has 256 values, so a lookup
  table computed here through the source semantics is exact: TOSA TABLE for an i8 result, GATHER
  from a 256-entry table for i16/i32 results; i16 inputs TOSA's interpolated 513-entry TABLE when it
  is exact on all 65536 inputs, else an exact 65536-entry GATHER; an i32 result (Cast of QSymmS16 to
  Signed32) is CAST, MUL, ADD when the table is affine. Under litert semantics (lowering/semantics.py)
  the tables hold what TFLite's integer kernel of the op computes where it has one (`kernel_results`,
  lowering/fixed_point/litert_kernels.py). The rules using it: activations.py.
- `requantize_value`: x re-encoded in another quantization (a table from i8, else one RESCALE).
- `float_fallback`: ops with no integer lowering yet (power, L2 pooling, ...; L2 normalization
  and int16 softmax under semantics "cpuref" only) compute as CpuRef does: dequantize the operands to f32, lower the op with its float rule,
  quantize the result (the TOSA graph then needs pro_fp as well as pro_int).
"""
from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from nn2tosa.ir import TensorType, Value, op_def

from ..context import LoweringContext, constant_value
from ..fixed_point.carrier import QInfo, carried_values, qinfo
from ..fixed_point.litert_kernels import kernel_for
from ..fixed_point.rescale import narrow, rescale, saturate_to, ties_possible, widen
from ..fixed_point.tables import source_results, table_i16
from ..registry import RULES, ops_with, rule
from ..semantics import computes_litert
from .arith import Arith


# ------------------------------------------------------------------------------ helpers
def q_in(ctx: LoweringContext, k: int | str = 0) -> QInfo | None:
    """The quantization of operand `k` (its name in the op's definition, or its position), None if it has none."""
    t = ctx.nn_type(k) if isinstance(k, str) else ctx.nn_in_types[k]
    return qinfo(t) if isinstance(t, TensorType) and t.quant is not None else None


def q_out(ctx: LoweringContext, k: int = 0) -> QInfo | None:
    t = ctx.nn_out_types[k]
    return qinfo(t) if isinstance(t, TensorType) and t.quant is not None else None


def require_per_tensor(ctx: LoweringContext, *qs: QInfo | None) -> None:
    ctx.check(quantized_per_tensor, *qs)


def quantized_per_tensor(ctx: LoweringContext, *qs: QInfo | None) -> str | None:
    """Quantized operands and results are quantized per tensor (one scale and zero point), except where
    a rule takes per-channel data (convolution weights and biases)."""
    if any(q is not None and q.per_axis for q in qs):
        return f"{ctx.op_name} of per-axis quantized data"
    return None


def quantizes_per_tensor(ctx: LoweringContext, q: QInfo) -> str | None:
    """A result computed in float is quantized per tensor (quantize, and the float fallback)."""
    if q.per_axis:
        return "quantizing to a per-axis quantized type"
    return None


def real_function_known(ctx: LoweringContext, definition: object) -> str | None:
    """An elementwise op tabulated for quantized data has a real-valued definition (a constant folder) to
    tabulate."""
    if definition is None:
        return f"no real-valued definition of {ctx.op_name} to tabulate"
    return None


def lookup_types(ctx: LoweringContext, xq: QInfo, yq: QInfo) -> str | None:
    """A tabulated elementwise op reads i8 data, or i16 data into i8, i16 or i32."""
    if xq.dtype == "i8" or (xq.dtype == "i16" and yq.dtype in ("i8", "i16", "i32")):
        return None
    return f"{ctx.op_name} from {xq.dtype} to {yq.dtype} quantized data"


def has_float_rule(ctx: LoweringContext) -> str | None:
    """An op computed as CpuRef computes it (dequantized, in float, quantized back) has a float rule."""
    if RULES.get(ctx.op_name) is None:
        return "no float lowering to compute it through"
    return None


def same_quantization(a: QInfo, b: QInfo) -> bool:
    return a.dtype == b.dtype and a.scales == b.scales and a.zero_points == b.zero_points


# ------------------------------------------------------------------------------ float <-> quantized
def _channel_shape(q: QInfo, rank: int) -> tuple[int, ...]:
    shape = [1] * rank
    if q.axis is not None:
        shape[q.axis] = len(q.scales)
    return tuple(shape)


def dequantize_value(ctx: LoweringContext, x: Value, q: QInfo, dtype: str = "f32") -> Value:
    """Float values scale * (x - zp), as CpuRef's float32 Dequantize computes them; a constant is
    dequantized here."""
    t = ctx.type_of(x)
    shape = _channel_shape(q, t.rank)
    scales = np.asarray(q.scales, np.float32).reshape(shape)
    zps = np.asarray(q.zero_points, np.int64).reshape(shape)
    array = constant_value(ctx, x)
    if array is not None:
        real = (array.astype(np.int64) - zps).astype(np.float32) * scales
        return ctx.const(real.astype(TensorType((), dtype).numpy_dtype), dtype)
    v = ctx.cast(x, "i32")
    if np.any(zps):
        v = ctx.tosa.sub(v, ctx.const(zps.astype(np.int32), "i32"))
    y = ctx.mul(ctx.cast(v, "f32"), ctx.const(scales, "f32"))
    return ctx.cast(y, dtype)


def quantize_value(ctx: LoweringContext, x: Value, q: QInfo) -> Value:
    """Arm NN's Quantize of float x: round_half_away(x / scale) + zp, saturated to q's carried type.
    The division is a multiplication by the f32 reciprocal of the scale (TOSA has no float
    division); rounding half away from zero is spelled out in f32."""
    t = ctx.type_of(x)
    ctx.check(quantizes_per_tensor, q)
    x = ctx.cast(x, "f32")
    rank = t.rank

    def f(value: float) -> Value:
        return ctx.scalar(value, "f32", rank)

    scaled = ctx.mul(x, f(float(np.float32(1.0) / np.float32(q.scale))))
    magnitude = ctx.tosa.abs(scaled)
    whole = ctx.tosa.floor(magnitude)
    fraction = ctx.tosa.sub(magnitude, whole)
    up = ctx.tosa.greater_equal(fraction, f(0.5))
    rounded = ctx.tosa.select(up, ctx.tosa.add(whole, f(1.0)), whole)
    negative = ctx.tosa.greater(f(0.0), scaled)
    signed = ctx.tosa.select(negative, ctx.negate(rounded), rounded)
    # saturate in f32 first: CAST of an out-of-range float to an integer is not portable
    lo, hi = q.qmin - q.zero_point, q.qmax - q.zero_point
    bounded = ctx.tosa.clamp(signed, min_val=float(lo), max_val=float(hi))
    v = ctx.cast(bounded, "i32")
    if q.zero_point:
        v = ctx.tosa.add(v, ctx.scalar(q.zero_point, "i32", rank))
    return saturate_to(ctx, v, q.dtype)


@rule("nn.constant", quantized=True)
def constant(ctx: LoweringContext) -> Value:
    t = ctx.nn_out_types[0]
    return ctx.const(carried_values(ctx.attrs["value"], t), qinfo(t).dtype)


@rule("nn.dequantize", quantized=True)
def dequantize(ctx: LoweringContext) -> Value:
    xq = q_in(ctx)
    assert xq is not None, "a dequantize of unquantized data"
    return dequantize_value(ctx, ctx.operand("x"), xq, ctx.out_types[0].dtype)


@rule("nn.quantize", quantized=True)
def quantize(ctx: LoweringContext) -> Value:
    yq = q_out(ctx)
    assert yq is not None, "a quantize to an unquantized type"
    return quantize_value(ctx, ctx.operand("x"), yq)


# ------------------------------------------------------------------------------ functions of one tensor
RealFunction = Callable[[np.ndarray], np.ndarray]


def _erf(x: np.ndarray) -> np.ndarray:
    return np.vectorize(math.erf, otypes=[np.float64])(x)


def source_function(ctx: LoweringContext) -> RealFunction:
    """The op's float32 function, as the nn dialect defines it (its folder), on real values."""
    name, attrs = ctx.op_name, dict(ctx.attrs)
    if name == "nn.gelu":
        if attrs.get("approximate", "none") == "tanh":
            return lambda x: (np.float32(0.5) * x * (np.float32(1) + np.tanh(
                np.float32(np.sqrt(2 / np.pi)) * (x + np.float32(0.044715) * x * x * x)))).astype(np.float32)
        return lambda x: (np.float32(0.5) * x * (np.float32(1) + _erf(x / np.float32(np.sqrt(2))).astype(np.float32))
                          ).astype(np.float32)
    if name in ("nn.requantize", "nn.identity"):
        return lambda x: x
    d = op_def(name)
    ctx.check(real_function_known, None if d is None else d.fold)
    assert d is not None and d.fold is not None  # (the check above)
    fold = d.fold

    def fn(x: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            out = fold(attrs, [np.asarray(x, np.float32)], [TensorType(tuple(np.shape(x)), "f32")])
        ctx.check(real_function_known, out)
        assert out is not None
        return np.asarray(out[0], np.float32)

    return fn


def gather_lookup(ctx: LoweringContext, x: Value, table: np.ndarray, dtype: str) -> Value:
    """table[x - min(x's type)] for i8 / i16 x, any integer result type: TOSA GATHER from a
    [1, 256 or 65536, 1] constant."""
    t = ctx.type_of(x)
    size = np.asarray(table).size
    index = ctx.tosa.add(ctx.cast(x, "i32"), ctx.scalar(size // 2, "i32", t.rank))
    n = t.num_elements
    values = ctx.const(np.asarray(table).reshape(1, size, 1), dtype)
    gathered = ctx.tosa.gather(values, ctx.reshape(index, (1, n)), types=[TensorType((1, n, 1), dtype)])
    return ctx.reshape(gathered, t.shape)


def kernel_results(ctx: LoweringContext, xq: QInfo, yq: QInfo) -> np.ndarray | None:
    """Under litert semantics, what TFLite's integer kernel of the op stores for every carried input of
    x's type, in order (lowering/fixed_point/litert_kernels.py); None where the op has none (then, and under cpuref,
    the float function is tabulated as CpuRef computes it)."""
    kernel = kernel_for(ctx.op_name, ctx.attrs, xq, yq) if computes_litert(ctx) else None
    return None if kernel is None else kernel(np.arange(xq.qmin, xq.qmax + 1))


def lookup(ctx: LoweringContext, x: Value, fn: RealFunction, xq: QInfo, yq: QInfo) -> Value:
    """y = the target integers of x elementwise, exactly: TFLite's kernel's (`kernel_results`) or
    encode(fn(decode(x))). For i8 inputs a TABLE (i8 result) or a 256-entry GATHER (wider result);
    for i16 inputs TOSA's interpolated TABLE (one, or a high/low pair) when it reproduces the target
    for all 65536 inputs (checked here), else a 65536-entry GATHER. Interpolation over 128-input
    segments is exact for slowly curving functions only: at the corpus' input scales tanh and
    sigmoid miss by one unit on 5-20% of the inputs and sqrt, log, rsqrt near 0 by far more, which
    is why exactness decides, not the table size. TFLite's int16 exp, log, rsqrt and gelu interpolate
    513-entry tables as TOSA does (one exact TABLE); its int16 logistic and tanh round their input to
    another grid and interpolate 512- or 256-input segments of a different table: no TOSA TABLE pair
    reproduces them, and `unary` computes them step by step (fixed_point.litert_ops.sigmoid_tanh_int16)."""
    ctx.check(lookup_types, xq, yq)
    kernel = kernel_results(ctx, xq, yq)
    want = kernel if kernel is not None else source_results(fn, xq, yq)
    if xq.dtype == "i8":
        if yq.dtype == "i8":
            return ctx.tosa.table(x, ctx.const(want.astype(np.int8), "i8"))
        return gather_lookup(ctx, x, want, yq.dtype)
    if xq.dtype == "i16" and yq.dtype in ("i8", "i16"):
        table = table_i16(fn, xq, yq, kernel)
        if table.misses:
            return gather_lookup(ctx, x, want, yq.dtype)
        raws = [ctx.tosa.table(x, ctx.const(e, "i16")) for e in table.entries]
        raw = raws[0] if len(raws) == 1 else ctx.tosa.add(
            ctx.mul(raws[0], ctx.scalar(256, "i32", ctx.type_of(x).rank)), raws[1])
        # a shift judged with half-up rounding: DOUBLE_ROUND would round some values below a half up
        return rescale(ctx, raw, 2.0 ** -table.shift, yq.dtype, out_zp=yq.zero_point, rounding="SINGLE_ROUND")
    if xq.dtype == "i16" and yq.dtype == "i32":
        # e.g. Arm NN's Cast of QSymmS16 to Signed32, which keeps the stored integers: an affine
        # table is CAST (and MUL, ADD); anything else a 65536-entry i32 GATHER
        results = source_results(fn, xq, yq)
        return affine_lookup(ctx, x, results, xq) or gather_lookup(ctx, x, results, yq.dtype)
    raise AssertionError(f"{xq.dtype} -> {yq.dtype}")  # lookup_types


def affine_lookup(ctx: LoweringContext, x: Value, results: np.ndarray, xq: QInfo) -> Value | None:
    """results[x - qmin] as i32 arithmetic when the table is exactly slope * x + intercept with
    integers that keep every product in i32; None otherwise."""
    inputs = np.arange(xq.qmin, xq.qmax + 1, dtype=np.int64)
    results = np.asarray(results, np.int64)
    slope = int(results[1] - results[0])
    intercept = int(results[0] - slope * inputs[0])
    if not np.array_equal(results, slope * inputs + intercept) or abs(slope) * (xq.qmax + 1) >= 1 << 31:
        return None
    rank = ctx.type_of(x).rank
    v = ctx.cast(x, "i32")
    if slope != 1:
        v = ctx.mul(v, ctx.scalar(slope, "i32", rank))
    if intercept:
        v = ctx.tosa.add(v, ctx.scalar(intercept, "i32", rank))
    return v


def requantize_value(ctx: LoweringContext, x: Value, xq: QInfo, yq: QInfo) -> Value:
    """x re-encoded in y's quantization: an exact table from i8 (to i16 under litert semantics one RESCALE,
    TFLite's Requantize); from wider types one RESCALE, or `narrow`'s half-away rounding where the
    ratio of scales can make exact halves."""
    if same_quantization(xq, yq):
        return x
    if xq.dtype == "i8" and yq.dtype == "i16" and yq.zero_point == 0 and computes_litert(ctx):
        # TFLite's Requantize: MultiplyByQuantizedMultiplier of x - zp, one RESCALE (no GATHER table;
        # RESCALE has no int16 output zero point, TFLite's int16 has none either)
        return rescale(ctx, x, xq.scale / yq.scale, yq.dtype, in_zp=xq.zero_point, out_zp=yq.zero_point)
    if xq.dtype == "i8":
        return lookup(ctx, x, lambda r: r, xq, yq)
    ratio = xq.scale / yq.scale
    if ties_possible(ratio, xq.span):  # e.g. halving: round the halves away from zero as Arm NN does
        return narrow(ctx, widen(ctx, x, xq), ratio, yq, max_abs=xq.span)
    return rescale(ctx, x, ratio, yq.dtype, in_zp=xq.zero_point, out_zp=yq.zero_point)


# ------------------------------------------------------------------------------ float fallback
_PLAIN_INTEGERS = frozenset({"i8", "i16", "i32"})  # the integer types TOSA CAST takes to f32


def float_fallback(ctx: LoweringContext) -> Value | list[Value]:
    """The op computed as CpuRef computes it: quantized operands dequantized to f32 (constants
    here), the op lowered by its float rule, quantized results encoded back."""
    ctx.check(has_float_rule)
    float_rule = RULES[ctx.op_name]
    operands, in_types = [], []
    for v, t in zip(ctx.operands, ctx.nn_in_types):
        if isinstance(t, TensorType) and t.quant is not None:
            v = dequantize_value(ctx, v, qinfo(t))
            t = TensorType(t.shape, "f32")
        elif isinstance(t, TensorType) and t.dtype in _PLAIN_INTEGERS:
            # An unquantized integer beside quantized ones holds its value (scale 1, zero point 0):
            # the float computation sees it as f32, never a float op on an integer tensor.
            v = ctx.cast(v, "f32")
            t = TensorType(t.shape, "f32")
        operands.append(v)
        in_types.append(t)
    out_types = [TensorType(t.shape, "f32") if _stored_from_float(t) else t for t in ctx.nn_out_types]
    graph = ctx.graph
    node = graph.add_op(ctx.op_name, operands, out_types, dict(ctx.attrs), ctx.loc)
    inner = LoweringContext(graph, node, in_types)
    try:
        results = inner.apply(float_rule)
    except Exception:
        graph.erase(node)
        raise
    graph.erase(node)
    single = isinstance(results, Value)
    results = [results] if single else list(results)
    out = [_stored(ctx, v, t) for v, t in zip(results, ctx.nn_out_types)]
    return out[0] if single else out


def _stored_from_float(t: TensorType) -> bool:
    """A result the float computation produces as f32: quantized, or an unquantized integer."""
    return t.quant is not None or t.dtype in _PLAIN_INTEGERS


def _stored(ctx: LoweringContext, v: Value, t: TensorType) -> Value:
    """The float computation's result `v` stored as the op's result type `t`: quantized; or, for an
    unquantized integer, its value truncated toward zero (Arm NN's Int32 encoder is a C++
    static_cast) and saturated by CAST; other types (booleans, floats) as computed."""
    if t.quant is not None:
        return quantize_value(ctx, v, qinfo(t))
    if t.dtype in _PLAIN_INTEGERS:
        return ctx.cast(Arith(ctx, "f32", t.rank).truncate(v), t.dtype)
    return v


@rule(*ops_with("float_when_quantized"), quantized=True)
def fallback(ctx: LoweringContext) -> Value | list[Value]:
    return float_fallback(ctx)


# ------------------------------------------------------------------------------ the quantized forms' prologue
# A quantized op whose data operand or result is not quantized computes as CpuRef does, in float: one form
# (`float_when_an_end_is_not_quantized`), tried first, so the op's other quantized forms read both
# quantizations (`quantized_ends`).
def an_end_not_quantized(*operands: int) -> Callable[[LoweringContext], bool]:
    """The condition: one of these operands, or the result, is not quantized."""
    def condition(ctx: LoweringContext) -> bool:
        return q_out(ctx) is None or any(q_in(ctx, k) is None for k in operands)

    return condition


def in_float(ctx: LoweringContext) -> Value | list[Value]:
    """An end not quantized: CpuRef's float computation."""
    return float_fallback(ctx)


def float_when_an_end_is_not_quantized(*ops: str, operands: tuple[int, ...] = (0,)) -> None:
    """Register `in_float` as the first quantized form of each of `ops`, for the result or one of
    `operands` (the data operands) not quantized."""
    rule(*ops, quantized=True, benefit=100, when=an_end_not_quantized(*operands))(in_float)


def quantized_ends(ctx: LoweringContext, per_tensor: bool = True) -> tuple[QInfo, QInfo]:
    """Operand 0's and the result's quantizations, required per tensor unless `per_tensor` is False (a
    form that reads more first): in the forms tried after `in_float`, both ends are quantized."""
    xq, yq = q_in(ctx), q_out(ctx)
    assert xq is not None and yq is not None, "in_float takes an end that is not quantized"
    if per_tensor:
        require_per_tensor(ctx, xq, yq)
    return xq, yq
