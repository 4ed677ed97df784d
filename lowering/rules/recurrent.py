"""The integer LSTM cells in TOSA integer ops, exactly as their reference kernels compute them.

nn.lstm_integer, TFLite's integer LSTM (lstm_eval.cc's 8x8_16 path with lstm.cc's Prepare; what
LiteRT computes for an int8 LSTM and a QLstm). Each gate in int16, Q3.12 without layer norm:
    gate = sat16(MBQM(h W_h^T - zp_h rowsum(W_h)) + sat16(MBQM(x W_x^T + b - zp_x rowsum(W_x))))
with MBQM TFLite's MultiplyByQuantizedMultiplier by the multiplier of s_w * s_in / 2**-12 (float32);
a peephole adds MBQM(w_c * c); layer norm (then at the gate's intermediate scale, the bias after it)
normalizes in the kernel's fixed point; then gemmlowp's int16 logistic (input, forget, output) or
tanh (cell candidate). The cell state (a power-of-two scale 2**k) is updated as
    c' = sat16(RoundingDivideByPOT(f * c, 15) + RoundingDivideByPOT(i * g, 30 + k)), clipped,
(i = 1 - f with CIFG) and the hidden state is h' = sat8(MBQM(o * tanh_{15+k}(c')) + zp_hidden), the
multiplier that of 2**-30 / s_hidden, or its projection. Two things LiteRT does that the arithmetic
alone does not say are reproduced (measured against LiteRT 2.3, tests/lowering/test_lstm_integer.py): the
peephole product walks n_output elements of the flat cell state (fewer than n_cell with a projection),
and a projected hidden state holds MBQM - zp, its projection adding zp rowsum(W_p).

nn.quantized_lstm, Android NN's QUANTIZED_16BIT_LSTM (TFLite's quantized LstmCell<4>): one MBQM of
the whole int32 sum b + (x - 128) W_x^T + (h - 128) W_h^T per gate, by the multiplier of 4096 s_b, to
Q3.12; the same gemmlowp functions; the state update in gemmlowp's 16-bit fixed point (SRDHM products:
TOSA MUL with shift 15, saturated).

The matrix products are int8 MATMULs (zero points 0, or the weights' for uint8 weights carried as
int8), MBQM is RESCALE with DOUBLE_ROUND (quant.requantize_like_tflite), RoundingDivideByPOT a
nudged arithmetic right shift, and gemmlowp's fixed-point logistic and tanh are functions of one
int16 tensor, tabulated for all 65536 inputs (lowering/fixed_point/tflite.py) and looked up by a GATHER:
no TOSA TABLE interpolates them exactly. Under `--target ethos-u55|ethos-u65` (no GATHER, BITWISE_AND,
int16 MATMUL or SELECT in Vela there) the activations are gemmlowp's steps in i32 (lowering/fixed_point/gemmlowp16.py) and
the layer norm's bit operations arithmetic (lowering/npu_target.py).
"""
from __future__ import annotations

import functools
import math

import numpy as np

from nn2tosa.ir import TensorType, Value

from ..context import LoweringContext, constant_value
from ..fixed_point import gemmlowp16
from ..fixed_point.carrier import QInfo, qinfo
from ..fixed_point.litert_ops import inverse_sqrt, rounding_divide
from ..fixed_point.rescale import clamp_int, requantize_like_tflite, rescale, saturate_to
from ..fixed_point.tflite import INT32_MAX, gemmlowp_logistic16, gemmlowp_tanh16, quantize_multiplier
from ..npu_target import choose
from ..registry import rule
from .quantization import gather_lookup
from .shape import pad_constant, tosa_slice


GATE_BIAS = {"Input": "inputGateBias", "Forget": "forgetGateBias", "Cell": "cellBias", "Output": "outputGateBias"}
_I32 = QInfo("i32", (1.0,), (0,), None)
_ALL_INT16 = np.arange(-32768, 32768)
F32 = np.float32


def _i32(ctx: LoweringContext, value: int, like: Value) -> Value:
    return ctx.scalar(value, "i32", ctx.type_of(like).rank)


@functools.lru_cache(maxsize=16)
def _table(function: str, integer_bits: int) -> np.ndarray:
    fn = gemmlowp_logistic16 if function == "logistic" else gemmlowp_tanh16
    table = fn(_ALL_INT16, integer_bits).astype(np.int16)
    table.setflags(write=False)
    return table


def activation(ctx: LoweringContext, x: Value, function: str, integer_bits: int) -> Value:
    """gemmlowp's int16 logistic or tanh of FixedPoint<int16, integer_bits> raws: a 65536-entry GATHER, or
    under `--target ethos-u55|ethos-u65` its fixed-point steps (lowering/fixed_point/gemmlowp16.py)."""
    tanh = function == "tanh"
    if gemmlowp16.supported(integer_bits, tanh) and choose(ctx, "lstm_activation") == "fixed_point":
        return gemmlowp16.logistic_or_tanh16(ctx, x, integer_bits, tanh)
    return gather_lookup(ctx, x, _table(function, integer_bits), "i16")


def mul_i32(ctx: LoweringContext, a: Value, b: Value, shift: int = 0) -> Value:
    """a * b of two int16 (or int32) tensors in i32, TOSA MUL's shift rounding half up. Shift 15 is
    gemmlowp's 16-bit SaturatingRoundingDoublingHighMul before its saturation (both round halves up)."""
    a, b = (v if ctx.type_of(v).dtype == "i32" else ctx.cast(v, "i32") for v in (a, b))
    return ctx.tosa.mul(a, b, ctx.const(np.array([shift], np.int8), "i8"))


def rounding_divide_by_pot(ctx: LoweringContext, x: Value, exponent: int) -> Value:
    """gemmlowp's RoundingDivideByPOT of i32 x (halves away from zero): x + 2**(exponent-1), less one
    when x < 0, shifted right arithmetically (valid for |x| < 2**31 - 2**(exponent-1))."""
    if exponent == 0:
        return x
    negative = ctx.tosa.arithmetic_right_shift(x, _i32(ctx, 31, x), round=False)  # -1 or 0
    nudged = ctx.tosa.add(ctx.tosa.add(x, _i32(ctx, 1 << (exponent - 1), x)), negative)
    return ctx.tosa.arithmetic_right_shift(nudged, _i32(ctx, exponent, x), round=False)


def matmul_accumulate(ctx: LoweringContext, v: Value, weights: np.ndarray, weights_zp: int = 0) -> Value:
    """v [batch, width] (int8 carried values) times (weights - weights_zp)^T, weights [cells, width]
    carried int8: an exact int32 [batch, cells] (TOSA MATMUL with the weights' zero point)."""
    batch, width = ctx.type_of(v).shape
    cells = weights.shape[0]
    a = ctx.reshape(v, (1, batch, width))
    b = ctx.const(np.ascontiguousarray(weights.T.reshape(1, width, cells)).astype(np.int8), "i8")
    acc = ctx.tosa.matmul(a, b, ctx.zero_point("i8"), ctx.zero_point("i8", weights_zp),
                          types=[TensorType((1, batch, cells), "i32")])
    return ctx.reshape(acc, (batch, cells))


def add_constant(ctx: LoweringContext, x: Value, values: np.ndarray) -> Value:
    if not np.any(values):
        return x
    return ctx.tosa.add(x, ctx.const(values.reshape(1, -1).astype(np.int32), "i32"))


def lstm_parameter_constant(ctx: LoweringContext, name: str, values: np.ndarray | None) -> str | None:
    """An integer LSTM's parameters (weights, biases, peephole and layer-norm coefficients) are constant."""
    if values is None:
        return f"LSTM parameter {name} is not a constant"
    return None


def cell_scale_power_of_two(ctx: LoweringContext, cq: QInfo) -> str | None:
    """TFLite's integer LSTM's cell state scale is a power of two from 2^-15 to 2^-9."""
    cell_log2 = math.log2(cq.scale)
    if cell_log2 != round(cell_log2):
        return f"TFLite's integer LSTM needs a power-of-two cell state scale (not {cq.scale})"
    exponent = int(round(cell_log2))
    if not 0 <= 15 + exponent <= 6:  # the integer bits TFLite's ApplyTanh of the cell state takes
        return f"a cell state scale of 2**{exponent}: TFLite's integer LSTM takes 2**-15 .. 2**-9"
    return None


def states_uint8(ctx: LoweringContext) -> str | None:
    """QuantizedLstm's input and output state are uint8 (the kernel subtracts 128 from them)."""
    xq, hq = qinfo(ctx.nn_type("x")), qinfo(ctx.nn_type("h"))
    if xq.offset != 128 or hq.offset != 128:
        return "QuantizedLstm's input and output state must be uint8"
    return None


class _Params:
    """The layer's constant parameters by Arm NN name: stored integers and quantization."""

    def __init__(self, ctx: LoweringContext):
        names = ctx.attrs["params"]
        self.ctx = ctx
        self.values = dict(zip(names, ctx.operand_run("params")))
        self.types = dict(zip(names, ctx.nn_run_types("params")))

    def __getitem__(self, name: str) -> tuple[np.ndarray, QInfo]:
        values = constant_value(self.ctx, self.values[name])
        self.ctx.check(lstm_parameter_constant, name, values)
        assert values is not None
        return np.asarray(values, np.int64), qinfo(self.types[name])


# ------------------------------------------------------------------------------ TFLite's integer LSTM
_Q3_12 = F32(2.0 ** -12)  # the gates' intermediate scale without layer norm


class _IntegerCell:
    """LstmStepInteger8x8_16. Which options the layer has follows from the parameters present, as in
    TFLite: CIFG without input-gate weights, peephole with cell-to-gate weights, layer norm with its
    coefficients, projection with projection weights."""

    def __init__(self, ctx: LoweringContext):
        self.ctx = ctx
        self.params = _Params(ctx)
        names = set(ctx.attrs["params"])
        self.cifg = "inputToInputWeights" not in names
        self.peephole = "cellToForgetWeights" in names
        self.layer_norm = "forgetLayerNormWeights" in names
        self.projection = "projectionWeights" in names
        self.xq, self.hq, self.cq = (qinfo(ctx.nn_type(name)) for name in ("x", "h", "c"))
        ctx.check(cell_scale_power_of_two, self.cq)
        self.cell_exponent = int(round(math.log2(self.cq.scale)))
        self.gate_scales = dict(zip(("Input", "Forget", "Cell", "Output"),
                                    (F32(s) for s in ctx.attrs["gate_scales"])))

    def product(self, v: Value, vq: QInfo, name: str, bias: np.ndarray | None, out_scale: F32,
                zero_point_sign: int = -1) -> Value:
        """MBQM(v W^T + bias + sign * zp_v rowsum(W)) as i32 [batch, rows], the multiplier that of
        s_w * s_v / out_scale (float32, as Prepare computes it)."""
        w, wq = self.params[name]
        acc = matmul_accumulate(self.ctx, v, w)
        acc = add_constant(self.ctx, acc, zero_point_sign * vq.zero_point * w.sum(axis=1) + (0 if bias is None else bias))
        multiplier, exponent = quantize_multiplier(float(F32(wq.scale) * F32(vq.scale) / out_scale))
        return requantize_like_tflite(self.ctx, acc, multiplier, exponent, _I32, "DOUBLE_ROUND")

    def gate(self, name: str, x: Value, h: Value, cell: Value | None, function: str) -> Value:
        """One gate's activation, Q0.15 int16 [batch, cells]; `cell` the state its peephole reads."""
        ctx = self.ctx
        scale = self.gate_scales[name] if self.layer_norm else _Q3_12
        bias = None if self.layer_norm else self.params[GATE_BIAS[name]][0]  # with layer norm it follows the norm
        # the kernel accumulates into the int16 gate buffer, saturating after each part
        total = clamp_int(ctx, self.product(x, self.xq, f"inputTo{name}Weights", bias, scale), -32768, 32767)
        total = ctx.tosa.add(self.product(h, self.hq, f"recurrentTo{name}Weights", None, scale), total)
        total = clamp_int(ctx, total, -32768, 32767)
        if cell is not None:
            total = clamp_int(ctx, ctx.tosa.add(self.peephole_part(name, cell, scale), total), -32768, 32767)
        if self.layer_norm:
            total = self.normalized(total, name)
        return activation(ctx, ctx.cast(total, "i16"), function, 3)

    def peephole_part(self, name: str, cell: Value, scale: F32) -> Value:
        """VectorBatchVectorCwiseProductAccumulate(w_c, n_output, c, ...) as the kernel calls it: its
        vector size is n_output, not n_cell, over the flat [batch * n_cell] buffers, so element t of the
        first batch * n_output gets MBQM(w_c[t mod n_output] * c[t]) and the others nothing (the same as
        the elementwise product unless a projection makes n_output < n_cell)."""
        ctx = self.ctx
        w, wq = self.params[f"cellTo{name}Weights"]
        real = F32(float(2.0 ** self.cell_exponent) * float(F32(wq.scale)) / float(scale))  # double, then float
        multiplier, exponent = quantize_multiplier(float(real))
        batch, cells = ctx.type_of(cell).shape
        outputs = ctx.type_of(ctx.operand("h")).shape[1]
        if outputs == cells:
            product = mul_i32(ctx, cell, ctx.const(w.reshape(1, -1).astype(np.int32), "i32"))
            return requantize_like_tflite(ctx, product, multiplier, exponent, _I32, "DOUBLE_ROUND")
        used = batch * outputs  # < batch * cells: the legalization refuses more (the kernel reads past the buffer)
        flat = tosa_slice(ctx, ctx.reshape(cell, (1, batch * cells)), [0, 0], [1, used])
        weights = np.tile(w[:outputs], batch).reshape(1, used).astype(np.int32)
        part = requantize_like_tflite(ctx, mul_i32(ctx, flat, ctx.const(weights, "i32")), multiplier, exponent, _I32,
                                      "DOUBLE_ROUND")
        return ctx.reshape(pad_constant(ctx, part, [0, 0, 0, batch * cells - used], 0), (batch, cells))

    def normalized(self, x: Value, name: str) -> Value:
        """ApplyLayerNorm of a gate (i32 holding int16 values) [batch, cells] -> i32 holding int16: the
        row's mean and variance in the kernel's fixed point (1024 x - mean, variance floor'ed from int64
        sums), MBQM by GetInvSqrtQuantizedMultiplierExp of it, times the coefficients plus the gate bias,
        rounded by 1024, MBQM by the coefficients' scale (exponent + 12), saturated."""
        ctx = self.ctx
        batch, n = ctx.type_of(x).shape
        k = n.bit_length() - 1
        w, wq = self.params[f"{name[0].lower()}{name[1:]}LayerNormWeights"]
        bias = self.params[GATE_BIAS[name]][0]
        guard = max(1, int(F32(10000) * F32(wq.scale)))  # Prepare's variance guard (float product, truncated)
        total = ctx.tosa.reduce_sum(x, axis=1)  # [batch, 1]
        variance = _variance_floor(ctx, x, total, k)
        # variance2 < 1 takes the guard
        none = ctx.tosa.sub(_i32(ctx, 1, variance), ctx.tosa.minimum(variance, _i32(ctx, 1, variance)))
        variance = ctx.tosa.add(variance, mul_i32(ctx, none, _i32(ctx, guard, none)))
        multiplier, right = _inverse_sqrt_multiplier(ctx, variance)
        mean = mul_i32(ctx, total, _i32(ctx, 1 << (10 - k), total))  # sum * 1024 / n, exact for n = 2**k <= 1024
        shifted = ctx.tosa.sub(mul_i32(ctx, x, _i32(ctx, 1024, x)), mean)
        rescaled = rounding_divide(ctx, mul_i32(ctx, shifted, multiplier, 31), right)
        weighted = ctx.tosa.add(mul_i32(ctx, rescaled, ctx.const(w.reshape(1, -1).astype(np.int32), "i32")),
                                ctx.const(bias.reshape(1, -1).astype(np.int32), "i32"))
        ln_multiplier, ln_exponent = quantize_multiplier(float(F32(wq.scale)))
        out = requantize_like_tflite(ctx, rounding_divide_by_pot(ctx, weighted, 10), ln_multiplier, ln_exponent + 12,
                                     _I32, "DOUBLE_ROUND")
        return clamp_int(ctx, out, -32768, 32767)

    def step(self) -> list[Value]:
        ctx = self.ctx
        x, h, c = ctx.operand("x"), ctx.operand("h"), ctx.operand("c")
        peep = c if self.peephole else None
        input_gate = None if self.cifg else self.gate("Input", x, h, peep, "logistic")
        f = self.gate("Forget", x, h, peep, "logistic")
        g = self.gate("Cell", x, h, None, "tanh")
        # CIFG: Sub1Vector, 32767 - f
        i = ctx.tosa.sub(_i32(ctx, 32767, f), ctx.cast(f, "i32")) if input_gate is None else input_gate
        kept = rounding_divide_by_pot(ctx, mul_i32(ctx, f, c), 15)
        added = rounding_divide_by_pot(ctx, mul_i32(ctx, i, g), 30 + self.cell_exponent)
        cell = saturate_to(ctx, ctx.tosa.add(kept, added), "i16")
        clip = float(ctx.attrs["cell_clip"])
        if clip > 0:  # Prepare: static_cast<int16>(clamp(clip / scale)), truncated
            bound = int(min(max(float(F32(clip) / F32(self.cq.scale)), -32768.0), 32767.0))
            cell = clamp_int(ctx, cell, -bound, bound)
        o = self.gate("Output", x, h, cell if self.peephole else None, "logistic")
        squashed = activation(ctx, cell, "tanh", 15 + self.cell_exponent)
        hidden_scale, hidden_zp = ctx.attrs["hidden"]
        multiplier, exponent = quantize_multiplier(float(F32(2.0 ** -15 / float(F32(hidden_scale)) * 2.0 ** -15)))
        # LiteRT adds the hidden zero point, but subtracts it when the hidden state is projected (whose bias
        # then gets + zp rowsum(W_p)): measured against LiteRT 2.3 (tests/lowering/test_lstm_integer.py)
        hidden_q = QInfo("i8", (1.0,), (-int(hidden_zp) if self.projection else int(hidden_zp),), None)
        hidden = requantize_like_tflite(ctx, mul_i32(ctx, o, squashed), multiplier, exponent, hidden_q, "DOUBLE_ROUND")
        if self.projection:
            hidden = self.projected(hidden, hidden_q, F32(hidden_scale))
        return [hidden, cell]

    def projected(self, hidden: Value, hidden_q: QInfo, hidden_scale: F32) -> Value:
        """MatrixBatchVectorMultiplyAccumulate into the int8 output state: MBQM(hidden W_p^T + b_p
        + zp rowsum(W_p)) + zp_out (hidden holding MBQM - zp), saturated, then clipped (on the stored
        values) to the truncated proj_clip / s_out."""
        ctx = self.ctx
        bias = self.params["projectionBias"][0] if "projectionBias" in self.params.values else None
        w, wq = self.params["projectionWeights"]
        acc = matmul_accumulate(ctx, hidden, w)
        acc = add_constant(ctx, acc, -hidden_q.zero_point * w.sum(axis=1) + (0 if bias is None else bias))
        multiplier, exponent = quantize_multiplier(float(F32(wq.scale) * hidden_scale / F32(self.hq.scale)))
        out = requantize_like_tflite(ctx, acc, multiplier, exponent, QInfo("i8", (1.0,), (self.hq.zero_point,), None),
                                     "DOUBLE_ROUND")
        clip = float(ctx.attrs["proj_clip"])
        if clip > 0:
            bound = int(min(max(float(F32(clip) / F32(self.hq.scale)), -128.0), 127.0))
            out = clamp_int(ctx, out, -bound, bound)
        return out


def _variance_floor(ctx: LoweringContext, x: Value, total: Value, k: int) -> Value:
    """ApplyLayerNorm's variance of each row of n = 2**k int16 values (x in i32, `total` the row sums):
    with mean = sum * 2**(10-k), (sum_sq * 2**(20-k) - mean**2) / 2**20 in int64 is floor((n sum_sq -
    sum**2) / n**2), computed here without 64-bit values. sum_sq - 2**(k-1) is an exact i48 MATMUL of
    int16 vectors (one more element pair, -1 times 2**(k-1)); one RESCALE rounding it by 2**k gives
    qA = floor(sum_sq / n), the low k bits of the squares summed in i32 give rA = sum_sq mod n. With
    sum = n m + r and T = rA - 2 m r = n qT + rT (floored), the variance is
    qA - m**2 + qT - (1 if n rT < r**2 else 0). Under `--target ethos-u55|ethos-u65` (no BITWISE_AND, no
    int16 MATMUL there) v mod n is v - floor(v / n) n and qA = sum(sq >> k) + (sum(sq mod n) >> k)."""
    batch, n = ctx.type_of(x).shape
    low = (1 << k) - 1
    arithmetic = choose(ctx, "lstm_layer_norm") == "arithmetic"

    def low_bits(v: Value) -> Value:  # v mod n: BITWISE_AND, or v - (v >> k) * n (floored: the same bits)
        if not arithmetic:
            return ctx.tosa.bitwise_and(v, _i32(ctx, low, v))
        return ctx.tosa.sub(v, mul_i32(ctx, floor_by_n(v), _i32(ctx, 1 << k, v)))

    def floor_by_n(v: Value) -> Value:  # floor(v / n)
        return ctx.tosa.arithmetic_right_shift(v, _i32(ctx, k, v), round=False)

    squares = mul_i32(ctx, x, x)
    r_sum = ctx.tosa.reduce_sum(low_bits(squares), axis=1)
    r_a = low_bits(r_sum)
    if arithmetic:  # no i48 MATMUL either: sum_sq = n sum(sq >> k) + sum(sq mod n), each sum within i32
        q_a = ctx.tosa.add(ctx.tosa.reduce_sum(floor_by_n(squares), axis=1), floor_by_n(r_sum))
    else:
        q_a = _sum_of_squares_over_n(ctx, x, k)

    m, r = floor_by_n(total), low_bits(total)  # total = n m + r, 0 <= r < n (floored)
    t = ctx.tosa.sub(r_a, mul_i32(ctx, mul_i32(ctx, m, r), _i32(ctx, 2, m)))
    q_t, r_t = floor_by_n(t), low_bits(t)
    fraction = ctx.tosa.sub(mul_i32(ctx, r_t, _i32(ctx, n, r_t)), mul_i32(ctx, r, r))
    below = ctx.tosa.arithmetic_right_shift(fraction, _i32(ctx, 31, fraction), round=False)  # -1 or 0
    return ctx.tosa.add(ctx.tosa.add(ctx.tosa.sub(q_a, mul_i32(ctx, m, m)), q_t), below)


def _sum_of_squares_over_n(ctx: LoweringContext, x: Value, k: int) -> Value:
    """floor(sum_sq / 2**k) of each row: an exact i48 MATMUL of sum_sq - 2**(k-1), rounded by a RESCALE."""
    batch, n = ctx.type_of(x).shape
    x16 = ctx.cast(x, "i16")
    row = ctx.tosa.concat([ctx.reshape(x16, (batch, 1, n)), ctx.const(np.full((batch, 1, 1), -1, np.int16), "i16")],
                          axis=2)
    column = ctx.tosa.concat([ctx.reshape(x16, (batch, n, 1)),
                              ctx.const(np.full((batch, 1, 1), 1 << (k - 1), np.int16), "i16")], axis=1)
    zero = ctx.zero_point("i16")
    squares48 = ctx.tosa.matmul(row, column, zero, zero, types=[TensorType((batch, 1, 1), "i48")])
    return ctx.reshape(rescale(ctx, squares48, 1.0, "i32", fixed=(1 << 14, k + 14), rounding="SINGLE_ROUND"), (batch, 1))


def _inverse_sqrt_multiplier(ctx: LoweringContext, variance: Value) -> tuple[Value, Value]:
    """GetInvSqrtQuantizedMultiplierExp(variance, reverse_shift -1) as MultiplyByQuantizedMultiplier
    takes it: (multiplier, right shift). The kernel's exponent 11 - p, when negative, moves into the
    multiplier by a plain left shift (wrapping, as in C); a variance of 1 is (2**31 - 1, 0)."""
    inverse, p = inverse_sqrt(ctx, ctx.tosa.maximum(variance, _i32(ctx, 2, variance)))
    eleven = _i32(ctx, 11, p)
    into = ctx.tosa.maximum(ctx.tosa.sub(p, eleven), _i32(ctx, 0, p))
    right = ctx.tosa.maximum(ctx.tosa.sub(eleven, p), _i32(ctx, 0, p))
    inverse = ctx.tosa.logical_left_shift(inverse, into)
    if choose(ctx, "lstm_layer_norm") == "arithmetic":  # [v == 1] = [v < 2] - [v < 1], from sign bits
        def below(bound: int) -> Value:
            return ctx.tosa.sub(_i32(ctx, 0, variance), ctx.tosa.arithmetic_right_shift(
                ctx.tosa.sub(variance, _i32(ctx, bound, variance)), _i32(ctx, 31, variance), round=False))
        one = ctx.tosa.sub(below(2), below(1))
        other = ctx.tosa.sub(_i32(ctx, 1, one), one)
        return (ctx.tosa.add(mul_i32(ctx, inverse, other), mul_i32(ctx, one, _i32(ctx, INT32_MAX, one))),
                mul_i32(ctx, right, other))
    one = ctx.tosa.equal(variance, _i32(ctx, 1, variance))
    return (ctx.tosa.select(one, _i32(ctx, INT32_MAX, inverse), inverse),
            ctx.tosa.select(one, _i32(ctx, 0, right), right))


@rule("nn.lstm_integer", quantized=True, checks=(cell_scale_power_of_two, lstm_parameter_constant))
def lstm_integer(ctx: LoweringContext) -> list[Value]:
    ctx.semantics_consulted = True  # legalize-armnn chose LiteRT's kernel for --semantics litert: the report says so
    return _IntegerCell(ctx).step()


# ------------------------------------------------------------------------------ Android NN's QUANTIZED_16BIT_LSTM
_STATE_INTEGER_BITS = 4  # the cell state is Q4.11


def _srdhm16(ctx: LoweringContext, a: Value, b: Value) -> Value:
    """gemmlowp's 16-bit SaturatingRoundingDoublingHighMul of two int16 tensors, as int16."""
    return saturate_to(ctx, mul_i32(ctx, a, b, 15), "i16")


@rule("nn.quantized_lstm", quantized=True, checks=(states_uint8, lstm_parameter_constant))
def quantized_lstm(ctx: LoweringContext) -> list[Value]:
    x, c, h = ctx.operand("x"), ctx.operand("c"), ctx.operand("h")
    xq, cq, hq = (qinfo(ctx.nn_type(name)) for name in ("x", "c", "h"))
    params = _Params(ctx)
    # the kernel subtracts 128 from x and h whatever their zero point (Android NN requires 128): the carried
    # int8 values of uint8 data are exactly that (stored - 128)
    ctx.check(states_uint8)
    gates = {}
    for name, function in (("Input", "logistic"), ("Cell", "tanh"), ("Forget", "logistic"), ("Output", "logistic")):
        parts = []
        for prefix, v in (("inputTo", x), ("recurrentTo", h)):
            w, wq = params[f"{prefix}{name}Weights"]  # carried int8 (stored - 128), zero point likewise
            parts.append(matmul_accumulate(ctx, v, w, wq.zero_point))
        acc = ctx.tosa.add(parts[0], parts[1])
        bias, bq = params[GATE_BIAS[name]]
        acc = add_constant(ctx, acc, bias)
        multiplier, exponent = quantize_multiplier(4096.0 * bq.scale)
        total = saturate_to(ctx, requantize_like_tflite(ctx, acc, multiplier, exponent, _I32, "DOUBLE_ROUND"), "i16")
        gates[name] = activation(ctx, total, function, 3)
    modulated = rounding_divide_by_pot(ctx, ctx.cast(_srdhm16(ctx, gates["Input"], gates["Cell"]), "i32"),
                                       _STATE_INTEGER_BITS)  # Q0.15 -> Q4.11
    kept = _srdhm16(ctx, gates["Forget"], c)
    cell = saturate_to(ctx, ctx.tosa.add(modulated, ctx.cast(kept, "i32")), "i16")
    # Rescale<3>: the Q4.11 state read as Q3.12, a saturating doubling
    as_q3 = saturate_to(ctx, mul_i32(ctx, cell, _i32(ctx, 2, cell)), "i16")
    out = _srdhm16(ctx, gates["Output"], activation(ctx, as_q3, "tanh", 3))
    hidden = saturate_to(ctx, rounding_divide_by_pot(ctx, ctx.cast(out, "i32"), 8), "i8")  # + 128: uint8
    return [cell, hidden]
