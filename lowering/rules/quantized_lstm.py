"""The integer LSTM cells in TOSA integer ops, exactly as their reference kernels compute them.

nn.lstm_integer, TFLite's integer LSTM (lstm_eval.cc's 8x8_16 path with lstm.cc's Prepare; what
LiteRT computes for an int8 LSTM and a QLstm). Each gate in int16 Q3.12:
    gate = sat16(MBQM(h W_h^T - zp_h rowsum(W_h)) + sat16(MBQM(x W_x^T + b - zp_x rowsum(W_x))))
with MBQM TFLite's MultiplyByQuantizedMultiplier by the multiplier of s_w * s_in / 2**-12 (float32), then
gemmlowp's int16 logistic (input, forget, output) or tanh (cell candidate) of the Q3.12 value. The cell
state (a power-of-two scale 2**k) is updated as
    c' = sat16(RoundingDivideByPOT(f * c, 15) + RoundingDivideByPOT(i * g, 30 + k)), clipped,
and the hidden state is h' = sat8(MBQM(o * tanh_{15+k}(c')) + zp_hidden), the multiplier that of
2**-30 / s_hidden (LiteRT adds the hidden zero point).

nn.quantized_lstm, Android NN's QUANTIZED_16BIT_LSTM (TFLite's quantized LstmCell<4>): one MBQM of
the whole int32 sum b + (x - 128) W_x^T + (h - 128) W_h^T per gate, by the multiplier of 4096 s_b, to
Q3.12; the same gemmlowp functions; the state update in gemmlowp's 16-bit fixed point (SRDHM products:
TOSA MUL with shift 15, saturated).

The matrix products are int8 MATMULs (zero points 0, or the weights' for uint8 weights carried as
int8), MBQM is RESCALE with DOUBLE_ROUND (quant.requantize_like_tflite), RoundingDivideByPOT a
nudged arithmetic right shift, and gemmlowp's fixed-point logistic and tanh are functions of one
int16 tensor, tabulated for all 65536 inputs (lowering/tflite_fixed.py) and looked up by a GATHER:
no TOSA TABLE interpolates them exactly.
"""
from __future__ import annotations

import math

import numpy as np

from nn2tosa.ir import TensorType, Value

from ..context import LoweringContext, LoweringUnsupported
from ..quant import QInfo, clamp_int, qinfo, requantize_like_tflite, saturate_to
from ..tflite_fixed import gemmlowp_logistic16, gemmlowp_tanh16, quantize_multiplier
from . import rule
from .conv import constant_value
from .quantized import gather_lookup

GATE_BIAS = {"Input": "inputGateBias", "Forget": "forgetGateBias", "Cell": "cellBias", "Output": "outputGateBias"}
_I32 = QInfo("i32", (1.0,), (0,), None)
_ALL_INT16 = np.arange(-32768, 32768)
F32 = np.float32


def _i32(ctx: LoweringContext, value: int, like: Value) -> Value:
    return ctx.scalar(value, "i32", ctx.type_of(like).rank)


def activation(ctx: LoweringContext, x: Value, function: str, integer_bits: int) -> Value:
    """gemmlowp's int16 logistic or tanh of FixedPoint<int16, integer_bits> raws: a 65536-entry GATHER."""
    fn = gemmlowp_logistic16 if function == "logistic" else gemmlowp_tanh16
    return gather_lookup(ctx, x, fn(_ALL_INT16, integer_bits), "i16")


def mul_i32(ctx: LoweringContext, a: Value, b: Value, shift: int = 0) -> Value:
    """a * b of two int16 (or int32) tensors in i32, TOSA MUL's shift rounding half up. Shift 15 is
    gemmlowp's 16-bit SaturatingRoundingDoublingHighMul before its saturation (both round halves up)."""
    a, b = (v if ctx.type_of(v).dtype == "i32" else ctx.cast(v, "i32") for v in (a, b))
    return ctx.op("tosa.mul", [a, b, ctx.const(np.array([shift], np.int8), "i8")])


def rounding_divide_by_pot(ctx: LoweringContext, x: Value, exponent: int) -> Value:
    """gemmlowp's RoundingDivideByPOT of i32 x (halves away from zero): x + 2**(exponent-1), less one
    when x < 0, shifted right arithmetically (valid for |x| < 2**31 - 2**(exponent-1))."""
    if exponent == 0:
        return x
    negative = ctx.binary("tosa.arithmetic_right_shift", x, _i32(ctx, 31, x), {"round": False})  # -1 or 0
    nudged = ctx.binary("tosa.add", ctx.binary("tosa.add", x, _i32(ctx, 1 << (exponent - 1), x)), negative)
    return ctx.binary("tosa.arithmetic_right_shift", nudged, _i32(ctx, exponent, x), {"round": False})


def matmul_accumulate(ctx: LoweringContext, v: Value, weights: np.ndarray, weights_zp: int = 0) -> Value:
    """v [batch, width] (int8 carried values) times (weights - weights_zp)^T, weights [cells, width]
    carried int8: an exact int32 [batch, cells] (TOSA MATMUL with the weights' zero point)."""
    batch, width = ctx.type_of(v).shape
    cells = weights.shape[0]
    a = ctx.reshape(v, (1, batch, width))
    b = ctx.const(np.ascontiguousarray(weights.T.reshape(1, width, cells)).astype(np.int8), "i8")
    acc = ctx.op("tosa.matmul", [a, b, ctx.zero_point("i8"), ctx.zero_point("i8", weights_zp)],
                 types=[TensorType((1, batch, cells), "i32")])
    return ctx.reshape(acc, (batch, cells))


def add_constant(ctx: LoweringContext, x: Value, values: np.ndarray) -> Value:
    if not np.any(values):
        return x
    return ctx.binary("tosa.add", x, ctx.const(values.reshape(1, -1).astype(np.int32), "i32"))


class _Params:
    """The layer's constant parameters by Arm NN name: stored integers and quantization."""

    def __init__(self, ctx: LoweringContext, first: int):
        names = ctx.attrs["params"]
        self.ctx = ctx
        self.values = dict(zip(names, ctx.operands[first:]))
        self.types = dict(zip(names, ctx.nn_in_types[first:]))

    def __getitem__(self, name: str) -> tuple[np.ndarray, QInfo]:
        values = constant_value(self.ctx, self.values[name])
        if values is None:
            raise LoweringUnsupported(f"LSTM parameter {name} is not a constant")
        return np.asarray(values, np.int64), qinfo(self.types[name])


# ------------------------------------------------------------------------------ TFLite's integer LSTM
class _IntegerCell:
    def __init__(self, ctx: LoweringContext):
        self.ctx = ctx
        self.params = _Params(ctx, 3)
        self.xq, self.hq, self.cq = (qinfo(t) for t in ctx.nn_in_types[:3])
        cell_log2 = math.log2(self.cq.scale)
        if cell_log2 != round(cell_log2):
            raise LoweringUnsupported("TFLite's integer LSTM needs a power-of-two cell state scale")
        self.cell_exponent = int(round(cell_log2))
        if not 0 <= 15 + self.cell_exponent <= 6:  # the integer bits TFLite's ApplyTanh of the cell state takes
            raise LoweringUnsupported(f"a cell state scale of 2**{self.cell_exponent}: TFLite's integer LSTM "
                                      "takes 2**-15 .. 2**-9")

    def product(self, v: Value, vq: QInfo, name: str, bias: np.ndarray | None, gate_scale: F32) -> Value:
        """MBQM(v W^T + bias - zp_v rowsum(W)) as i32 [batch, cells]."""
        w, wq = self.params[name]
        acc = matmul_accumulate(self.ctx, v, w)
        acc = add_constant(self.ctx, acc, -vq.zero_point * w.sum(axis=1) + (0 if bias is None else bias))
        multiplier, exponent = quantize_multiplier(float(F32(wq.scale) * F32(vq.scale) / gate_scale))
        return requantize_like_tflite(self.ctx, acc, multiplier, exponent, _I32, "DOUBLE_ROUND")

    def gate(self, name: str, x: Value, h: Value, function: str) -> Value:
        """One gate's activation, Q0.15 int16 [batch, cells]."""
        ctx = self.ctx
        gate_scale = F32(2.0 ** -12)  # Q3.12: TFLite's intermediate scale without layer norm
        bias = self.params[GATE_BIAS[name]][0]
        # the kernel accumulates into the int16 gate buffer: the input part saturates before the state part adds
        from_input = clamp_int(ctx, self.product(x, self.xq, f"inputTo{name}Weights", bias, gate_scale), -32768, 32767)
        from_state = self.product(h, self.hq, f"recurrentTo{name}Weights", None, gate_scale)
        total = saturate_to(ctx, ctx.binary("tosa.add", from_state, from_input), "i16")
        return activation(ctx, total, function, 3)

    def step(self) -> list[Value]:
        ctx = self.ctx
        x, h, c = ctx.operands[:3]
        i = self.gate("Input", x, h, "logistic")
        f = self.gate("Forget", x, h, "logistic")
        g = self.gate("Cell", x, h, "tanh")
        o = self.gate("Output", x, h, "logistic")
        kept = rounding_divide_by_pot(ctx, mul_i32(ctx, f, c), 15)
        added = rounding_divide_by_pot(ctx, mul_i32(ctx, i, g), 30 + self.cell_exponent)
        cell = saturate_to(ctx, ctx.binary("tosa.add", kept, added), "i16")
        clip = float(ctx.attrs["cell_clip"])
        if clip > 0:  # Prepare: static_cast<int16>(clamp(clip / scale)), truncated
            bound = int(min(max(F32(clip) / F32(self.cq.scale), -32768.0), 32767.0))
            cell = clamp_int(ctx, cell, -bound, bound)
        squashed = activation(ctx, cell, "tanh", 15 + self.cell_exponent)
        hidden_scale, hidden_zp = ctx.attrs["hidden"]
        multiplier, exponent = quantize_multiplier(float(F32(2.0 ** -15 / float(F32(hidden_scale)) * 2.0 ** -15)))
        hidden = requantize_like_tflite(ctx, mul_i32(ctx, o, squashed), multiplier, exponent,
                                        QInfo("i8", (1.0,), (int(hidden_zp),), None), "DOUBLE_ROUND")
        return [hidden, cell]


@rule("nn.lstm_integer", quantized=True)
def lstm_integer(ctx: LoweringContext) -> list[Value]:
    return _IntegerCell(ctx).step()


# ------------------------------------------------------------------------------ Android NN's QUANTIZED_16BIT_LSTM
_STATE_INTEGER_BITS = 4  # the cell state is Q4.11


def _srdhm16(ctx: LoweringContext, a: Value, b: Value) -> Value:
    """gemmlowp's 16-bit SaturatingRoundingDoublingHighMul of two int16 tensors, as int16."""
    return saturate_to(ctx, mul_i32(ctx, a, b, 15), "i16")


@rule("nn.quantized_lstm", quantized=True)
def quantized_lstm(ctx: LoweringContext) -> list[Value]:
    x, c, h = ctx.operands[:3]
    xq, cq, hq = (qinfo(t) for t in ctx.nn_in_types[:3])
    params = _Params(ctx, 3)
    # the kernel subtracts 128 from x and h whatever their zero point (Android NN requires 128): the carried
    # int8 values of uint8 data are exactly that (stored - 128)
    if xq.offset != 128 or hq.offset != 128:
        raise LoweringUnsupported("QuantizedLstm's input and output state must be uint8")
    gates = {}
    for name, function in (("Input", "logistic"), ("Cell", "tanh"), ("Forget", "logistic"), ("Output", "logistic")):
        acc = None
        for prefix, v in (("inputTo", x), ("recurrentTo", h)):
            w, wq = params[f"{prefix}{name}Weights"]  # carried int8 (stored - 128), zero point likewise
            part = matmul_accumulate(ctx, v, w, wq.zero_point)
            acc = part if acc is None else ctx.binary("tosa.add", acc, part)
        bias, bq = params[GATE_BIAS[name]]
        acc = add_constant(ctx, acc, bias)
        multiplier, exponent = quantize_multiplier(4096.0 * bq.scale)
        total = saturate_to(ctx, requantize_like_tflite(ctx, acc, multiplier, exponent, _I32, "DOUBLE_ROUND"), "i16")
        gates[name] = activation(ctx, total, function, 3)
    modulated = rounding_divide_by_pot(ctx, ctx.cast(_srdhm16(ctx, gates["Input"], gates["Cell"]), "i32"),
                                       _STATE_INTEGER_BITS)  # Q0.15 -> Q4.11
    kept = _srdhm16(ctx, gates["Forget"], c)
    cell = saturate_to(ctx, ctx.binary("tosa.add", modulated, ctx.cast(kept, "i32")), "i16")
    # Rescale<3>: the Q4.11 state read as Q3.12, a saturating doubling
    as_q3 = saturate_to(ctx, mul_i32(ctx, cell, _i32(ctx, 2, cell)), "i16")
    out = _srdhm16(ctx, gates["Output"], activation(ctx, as_q3, "tanh", 3))
    hidden = saturate_to(ctx, rounding_divide_by_pot(ctx, ctx.cast(out, "i32"), 8), "i8")  # + 128: uint8
    return [cell, hidden]
