"""TFLite's integer LSTM cell (nn.lstm_integer) in TOSA integer ops: LiteRT's integers exactly.

The kernel (lstm_eval.cc's 8x8_16 path, with lstm.cc's Prepare) computes each gate in int16 Q3.12:
    gate = sat16(MBQM(h W_h^T - zp_h rowsum(W_h)) + sat16(MBQM(x W_x^T + b - zp_x rowsum(W_x))))
with MBQM TFLite's MultiplyByQuantizedMultiplier by the multiplier of s_w * s_in / 2**-12 (float32), then
gemmlowp's int16 logistic (input, forget, output) or tanh (cell candidate) of the Q3.12 value. The cell
state (a power-of-two scale 2**k) is updated as
    c' = sat16(RoundingDivideByPOT(f * c, 15) + RoundingDivideByPOT(i * g, 30 + k)), clipped,
and the hidden state is h' = sat8(MBQM(o * tanh_{15+k}(c')) + zp_hidden), the multiplier that of
2**-30 / s_hidden. The matrix products are int8 MATMULs with zero points 0 (the input's zero point
is folded into the bias, as the kernel does), the roundings RESCALE (DOUBLE_ROUND: MBQM) and a
rounding right shift; gemmlowp's fixed-point logistic and tanh are functions of one int16 tensor,
tabulated for all 65536 inputs (lowering/tflite_fixed.py) and looked up by a GATHER: no TOSA TABLE
interpolates them exactly.
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

_GATE_BIAS = {"Input": "inputGateBias", "Forget": "forgetGateBias", "Cell": "cellBias", "Output": "outputGateBias"}
_INT16 = QInfo("i16", (1.0,), (0,), None)
_ALL_INT16 = np.arange(-32768, 32768)
F32 = np.float32


def _multiplier(real: F32) -> tuple[int, int]:
    """TFLite's QuantizeMultiplier of a float32 effective scale (computed in float32, as Prepare does)."""
    return quantize_multiplier(float(real))


class _IntegerCell:
    def __init__(self, ctx: LoweringContext):
        self.ctx = ctx
        names = ctx.attrs["params"]
        self.params = dict(zip(names, ctx.operands[3:]))
        self.param_types = dict(zip(names, ctx.nn_in_types[3:]))
        self.xq, self.hq, self.cq = (qinfo(t) for t in ctx.nn_in_types[:3])
        self.batch = ctx.in_types[0].shape[0]
        cell_log2 = math.log2(self.cq.scale)
        if cell_log2 != round(cell_log2):
            raise LoweringUnsupported("TFLite's integer LSTM needs a power-of-two cell state scale")
        self.cell_exponent = int(round(cell_log2))
        if not 0 <= 15 + self.cell_exponent <= 6:  # the integer bits of TFLite's ApplyTanh of the cell state
            raise LoweringUnsupported(f"a cell state scale of 2**{self.cell_exponent}: TFLite's integer LSTM "
                                      "takes 2**-15 .. 2**-9")

    def weights(self, name: str) -> tuple[np.ndarray, float]:
        values = constant_value(self.ctx, self.params[name])
        if values is None:
            raise LoweringUnsupported(f"LSTM parameter {name} is not a constant")
        return np.asarray(values, np.int64), qinfo(self.param_types[name]).scale

    def scalar(self, value: int, like: Value) -> Value:
        return self.ctx.scalar(value, "i32", self.ctx.type_of(like).rank)

    def product(self, v: Value, vq: QInfo, name: str, bias: np.ndarray | None, gate_scale: F32) -> Value:
        """MBQM(v W^T + bias - zp_v rowsum(W)) as i32 [batch, cells] (int8 MATMUL, zero points 0)."""
        ctx = self.ctx
        w, w_scale = self.weights(name)
        cells, width = w.shape
        effective_bias = -vq.zero_point * w.sum(axis=1) + (0 if bias is None else bias)
        a = ctx.reshape(v, (1, self.batch, width))
        b = ctx.const(np.ascontiguousarray(w.T.reshape(1, width, cells)).astype(np.int8), "i8")
        zero = ctx.zero_point("i8")
        acc = ctx.op("tosa.matmul", [a, b, zero, zero], types=[TensorType((1, self.batch, cells), "i32")])
        acc = ctx.binary("tosa.add", ctx.reshape(acc, (self.batch, cells)),
                         ctx.const(effective_bias.reshape(1, cells).astype(np.int32), "i32"))
        multiplier, exponent = _multiplier(F32(w_scale) * F32(vq.scale) / gate_scale)
        return requantize_like_tflite(ctx, acc, multiplier, exponent, QInfo("i32", (1.0,), (0,), None))

    def gate(self, name: str, x: Value, h: Value, function: str) -> Value:
        """One gate's activation, Q0.15 int16 [batch, cells]."""
        gate_scale = F32(2.0 ** -12)  # Q3.12: TFLite's intermediate scale without layer norm
        bias = self.weights(_GATE_BIAS[name])[0]
        from_input = saturate_to(self.ctx, self.product(x, self.xq, f"inputTo{name}Weights", bias, gate_scale), "i16")
        from_state = self.product(h, self.hq, f"recurrentTo{name}Weights", None, gate_scale)
        total = saturate_to(self.ctx, self.ctx.binary("tosa.add", from_state, self.ctx.cast(from_input, "i32")), "i16")
        table = gemmlowp_logistic16(_ALL_INT16, 3) if function == "logistic" else gemmlowp_tanh16(_ALL_INT16, 3)
        return gather_lookup(self.ctx, total, table, "i16")

    def scaled_product(self, a: Value, b: Value, shift: int) -> Value:
        """RoundingDivideByPOT(a * b, shift) of two int16 tensors, as i32: the product plus 2**(shift-1)
        less one when it is negative, shifted right (halves away from zero)."""
        ctx = self.ctx
        p = ctx.op("tosa.mul", [ctx.cast(a, "i32"), ctx.cast(b, "i32"), ctx.const(np.array([0], np.int8), "i8")])
        negative = ctx.binary("tosa.arithmetic_right_shift", p, self.scalar(31, p), {"round": False})
        nudged = ctx.binary("tosa.add", ctx.binary("tosa.add", p, self.scalar(1 << (shift - 1), p)), negative)
        return ctx.binary("tosa.arithmetic_right_shift", nudged, self.scalar(shift, p), {"round": False})

    def step(self) -> list[Value]:
        ctx = self.ctx
        x, h, c = ctx.operands[:3]
        i = self.gate("Input", x, h, "logistic")
        f = self.gate("Forget", x, h, "logistic")
        g = self.gate("Cell", x, h, "tanh")
        o = self.gate("Output", x, h, "logistic")
        kept = self.scaled_product(f, c, 15)
        added = self.scaled_product(i, g, 30 + self.cell_exponent)
        cell = saturate_to(ctx, ctx.binary("tosa.add", kept, added), "i16")
        clip = float(ctx.attrs["cell_clip"])
        if clip > 0:  # Prepare: static_cast<int16>(clamp(clip / scale)), truncated
            bound = int(min(max(F32(clip) / F32(self.cq.scale), -32768.0), 32767.0))
            cell = clamp_int(ctx, cell, -bound, bound)
        squashed = gather_lookup(ctx, cell, gemmlowp_tanh16(_ALL_INT16, 15 + self.cell_exponent), "i16")
        hidden_scale, hidden_zp = ctx.attrs["hidden"]
        multiplier, exponent = _multiplier(F32(2.0 ** -15) / F32(hidden_scale) * F32(2.0 ** -15))
        p = ctx.op("tosa.mul", [ctx.cast(o, "i32"), ctx.cast(squashed, "i32"), ctx.const(np.array([0], np.int8), "i8")])
        hidden = requantize_like_tflite(ctx, p, multiplier, exponent, QInfo("i8", (1.0,), (int(hidden_zp),), None))
        return [hidden, cell]


@rule("nn.lstm_integer", quantized=True)
def lstm_integer(ctx: LoweringContext) -> list[Value]:
    return _IntegerCell(ctx).step()
