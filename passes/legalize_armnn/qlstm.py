"""QLstm (Arm NN's integer LSTM, one time step) as Arm NN's reference backend computes it.

CpuRef (RefQLstmWorkload) decodes every operand to float32 and keeps each gate in an int16 buffer:
every float32 operation that writes a buffer encodes its result there (round half away from zero,
saturate), and the next one reads it decoded. Most notably each multiply-add of a matrix-vector
product re-quantizes the gate to its intermediate scale (a saturating 16-bit accumulator at a
coarse scale), so the gate is not the real-valued product. Each such buffer write is written here
as nn.quantize to the buffer's type followed by nn.dequantize; the float32 operations between
are nn ops on f32, in CpuRef's order:

    gate = 0; for each column c of [input | outputStateIn]: gate = Q_int(gate + w[:, c] * x[c])
    peephole: gate = Q_int(gate + w_c * cell)          (input and forget read cellStateIn,
                                                        output reads the new cell state)
    layer norm: gate = Q_ln((gate - mean) / stddev); Q_ln(w_ln * gate); Q_4096(gate + bias)
                (Q_ln at inputScale * lnWeightScale * 1024; the bias read at lnWeightScale / 1024)
    i, f, o = Q_cell(sigmoid(gate)); g = Q_cell(tanh(gate))           (cellStateOut's scale)
    c' = Q_cell(f * c); CIFG: f = Q_cell(1 - f), c' = Q_cell(c' + g * f); else c' = Q_cell(c' + g * i)
    cell clip > 0: c' = Q_cell(clip(c'))
    hidden = Q_hidden(o * Q_cell(tanh(c')))            (QAsymmS8 at hiddenStateScale / zero point)
    projection: out16 = Q_out16(bias) or 0; out16 = Q_out16(out16 + w[:, c] * hidden[c]) per
                column (int16 at the output's scale and offset); out = Q_out(out16), clipped
                when projectionClip > 0; else out = Q_out(hidden)
    results: (outputStateOut = Q_state(out), cellStateOut = c', output = out)

Kept as CpuRef has it: the gate biases are read only with layer norm (without it CpuRef adds
none). A sigmoid or tanh between two buffers is a function of one int16 tensor, which lowering
turns into an exact lookup (rules/float_islands.py). The lowering's nn.quantize multiplies by
the f32 reciprocal of the scale where CpuRef divides: the two differ only on results within an
ulp of a half, never with the power-of-two scales of state buffers.

Under --semantics litert a QLstm is LiteRT's integer LSTM kernel instead (lstm_integer.py), where
that lowering takes it (lstm_integer.integer_cell_refusal).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import overload

import numpy as np

from nn2tosa.ir import Quant, TensorType, Value

from .layer import Layer, quantization
from .lstm_integer import integer_cell_refusal, integer_step
from .registry import rule

LAYER_NORM_EPSILON = np.float32(1e-8)  # RefQLstmWorkload's m_LayerNormEpsilon
F32 = np.float32


@dataclass
class _Buffer:
    """Where CpuRef stores a value: an int16 or int8 buffer with this scale and zero point."""

    dtype: str
    scale: float
    zero_point: int = 0


def qlstm_parameter_constant_per_tensor(layer: Layer, params: dict[str, Value], name: str) -> str | None:
    """Every parameter the QLstm descriptor's options need is in the file, constant, and quantized per
    tensor."""
    if name not in params:
        return f"the descriptor's options need {name}, which the file lacks"
    if layer.constant_value(params[name]) is None:
        return f"QLstm parameter {name} is not a constant"
    q = layer.type_of(params[name]).quant
    if q is None or q.axis is not None:
        return f"QLstm parameter {name} is not quantized per tensor"
    return None


def _qlstm_types(layer: Layer) -> list[TensorType]:
    return [layer.type_of(v) for v in layer.operands[:3]] + layer.result_types


def qlstm_per_tensor(layer: Layer) -> str | None:
    """QLstm's inputs and outputs are quantized per tensor."""
    if any(t.quant is None or t.quant.axis is not None for t in _qlstm_types(layer)):
        return "QLstm needs per-tensor quantized inputs and outputs"
    return None


def qlstm_rank_2(layer: Layer) -> str | None:
    """QLstm's inputs and outputs are [batch, size] tensors."""
    ranks = [t.rank for t in _qlstm_types(layer)]
    if any(r != 2 for r in ranks):
        return f"QLstm takes [batch, size] tensors (not ranks {ranks})"
    return None


def qlstm_scales_positive(layer: Layer) -> str | None:
    """QLstm's buffer scales (intermediate, hidden state, inputs and outputs) are positive: CpuRef divides
    by them."""
    a = layer.attrs
    scales = [a[f"{g}IntermediateScale"] for g in ("forget", "cell", "output")] + [a["hiddenStateScale"]]
    scales += [] if a["cifgEnabled"] else [a["inputIntermediateScale"]]
    scales += [t.quant.scale for t in _qlstm_types(layer) if t.quant is not None]
    if not all(s > 0 for s in scales):
        return f"QLstm with a buffer scale that is not positive (CpuRef would divide by it): {min(scales)}"
    return None


class _QLstm:
    def __init__(self, layer: Layer):
        self.layer = layer
        a = layer.attrs
        self.cifg, self.peephole = bool(a["cifgEnabled"]), bool(a["peepholeEnabled"])
        self.projection, self.layer_norm = bool(a["projectionEnabled"]), bool(a["layerNormEnabled"])
        self.params = dict(zip(a["inputParams"], layer.operands[3:]))
        self.batch = layer.type_of(layer.operands[0]).shape[0]

    # ---- constants, decoded as CpuRef's decoders decode them --------------------------------
    def decoded(self, name: str, scale: float | None = None) -> np.ndarray:
        """The parameter's float32 values: scale * (stored - zero point) in float32; `scale`
        overrides the file's (CpuRef reads layer-norm gate biases at lnWeightScale / 1024)."""
        self.layer.check(qlstm_parameter_constant_per_tensor, self.params, name)
        v = self.params[name]
        stored = self.layer.constant_value(v)
        q = self.layer.type_of(v).quant
        assert stored is not None and q is not None  # (the check above)
        s = F32(q.scale if scale is None else scale)
        return ((np.asarray(stored, np.int64) - q.zero_point).astype(F32) * s).astype(F32)

    def const(self, values: np.ndarray) -> Value:
        values = np.ascontiguousarray(values, F32)
        return self.layer.constant(values, TensorType(values.shape, "f32"))

    # ---- float32 operations and buffer writes -----------------------------------------------
    def op(self, name: str, operands: list[Value], attrs: dict | None = None) -> Value:
        """A float32 op; a buffer operand is read through its own nn.dequantize (one per use, so
        that a sigmoid or tanh of it is a float island of its own: rules/float_islands.py)."""
        return self.layer.op(name, [self.layer.real(v) for v in operands], attrs)

    def scalar(self, value: float) -> Value:
        return self.layer.constant(np.asarray(value, F32), TensorType((), "f32"))

    def write(self, v: Value, buf: _Buffer) -> Value:
        """v (float32, or another buffer read) written to the buffer: the quantized value."""
        v = self.layer.real(v)
        shape = self.layer.type_of(v).shape
        quant = Quant((float(buf.scale),), (int(buf.zero_point),))
        return self.layer.op("nn.quantize", [v], type=TensorType(shape, buf.dtype, quant))

    def column(self, x: Value, c: int) -> Value:
        return self.op("nn.slice", [x], {"begin": [0, c], "size": [self.batch, 1]})

    @overload
    def multiply_accumulate(self, acc: Value, weights: np.ndarray, x: Value, buf: _Buffer) -> Value: ...
    @overload
    def multiply_accumulate(self, acc: None, weights: np.ndarray, x: Value, buf: _Buffer) -> Value | None: ...

    def multiply_accumulate(self, acc: Value | None, weights: np.ndarray, x: Value, buf: _Buffer) -> Value | None:
        """MatrixBatchVectorMultiplyAccumulate: acc[b, r] += w[r, c] * x[b, c], one column at a time,
        each sum written to the buffer (None still when there is no acc and no column)."""
        for c in range(weights.shape[1]):
            product = self.op("nn.mul", [self.const(weights[:, c].reshape(1, -1)), self.column(x, c)])
            acc = self.write(product if acc is None else self.op("nn.add", [acc, product]), buf)
        return acc

    def cwise_accumulate(self, acc: Value, vector: np.ndarray, batch_vector: Value, buf: _Buffer) -> Value:
        return self.write(self.op("nn.add", [acc, self.op("nn.mul", [self.const(vector.reshape(1, -1)),
                                                                     batch_vector])]), buf)

    def normalized(self, x: Value, buf: _Buffer) -> Value:
        """MeanStddevNormalization over each batch row: float32 running sums of x and x * x in
        column order, mean = sum / n, variance = sum_sq / n - mean * mean, and (x - mean) / sqrt
        (1 / sqrt(epsilon) when the variance is exactly 0)."""
        n = self.layer.type_of(x).shape[1]
        cols = [self.column(x, c) for c in range(n)]
        total, squares = cols[0], self.op("nn.mul", [cols[0], cols[0]])
        for col in cols[1:]:
            total = self.op("nn.add", [total, col])
            squares = self.op("nn.add", [squares, self.op("nn.mul", [col, col])])
        count = self.scalar(float(n))
        mean = self.op("nn.div", [total, count])
        variance = self.op("nn.sub", [self.op("nn.div", [squares, count]), self.op("nn.mul", [mean, mean])])
        zero = self.op("nn.equal", [variance, self.scalar(0.0)])
        inverse = self.op("nn.select", [zero, self.scalar(F32(1) / np.sqrt(LAYER_NORM_EPSILON)),
                                        self.op("nn.rsqrt", [variance])])
        return self.write(self.op("nn.mul", [self.op("nn.sub", [x, mean]), inverse]), buf)

    # ---- the cell -----------------------------------------------------------------------------
    def gate(self, name: str, x: Value, h: Value, cell: Value | None, intermediate: float, act_buf: _Buffer,
             function: str, bias: str, input_scale: float) -> Value:
        """One gate: multiply-adds at its intermediate scale, peephole, layer norm, activation
        (written at the cell state's scale)."""
        buf = _Buffer("i16", intermediate)
        first = self.multiply_accumulate(None, self.decoded(f"inputTo{name}Weights"), x, buf)
        acc = self.multiply_accumulate(first, self.decoded(f"recurrentTo{name}Weights"), h, buf)
        if acc is None:
            raise ValueError(f"a {name.lower()} gate of no input and no output columns")
        if cell is not None:
            acc = self.cwise_accumulate(acc, self.decoded(f"cellTo{name}Weights"), cell, buf)
        if self.layer_norm:
            ln_name = f"{name[0].lower()}{name[1:]}LayerNormWeights"
            ln_weights = self.decoded(ln_name)
            ln_scale = quantization(self.layer.type_of(self.params[ln_name])).scale
            ln_buf = _Buffer("i16", float(F32(input_scale) * F32(ln_scale) * F32(1024)))
            acc = self.normalized(acc, ln_buf)
            acc = self.write(self.op("nn.mul", [self.const(ln_weights.reshape(1, -1)), acc]), ln_buf)
            bias_values = self.decoded(bias, float(F32(ln_scale) / F32(1024)))
            acc = self.write(self.op("nn.add", [acc, self.const(bias_values.reshape(1, -1))]), _Buffer("i16", 1 / 4096))
        return self.write(self.op(function, [acc]), act_buf)

    def step(self) -> list[Value]:
        layer = self.layer
        x, h, c = (layer.real(v) for v in layer.operands[:3])
        input_scale = quantization(layer.type_of(layer.operands[0])).scale  # (qlstm_per_tensor)
        state_t, cell_t, out_t = layer.result_types
        cell_q, out_q = quantization(cell_t), quantization(out_t)
        a = layer.attrs
        # gate buffers take the cell state's scale for their activations (offset 0); c' its own type
        gate_buf = _Buffer("i16", cell_q.scale)
        cell_buf = _Buffer("i16", cell_q.scale, cell_q.zero_point)
        peep = c if self.peephole else None
        forget = self.gate("Forget", x, h, peep, a["forgetIntermediateScale"], function="nn.sigmoid",
                           bias="forgetGateBias", act_buf=gate_buf, input_scale=input_scale)
        candidate = self.gate("Cell", x, h, None, a["cellIntermediateScale"], function="nn.tanh", bias="cellBias",
                              act_buf=gate_buf, input_scale=input_scale)
        new_cell = self.write(self.op("nn.mul", [forget, c]), cell_buf)
        if self.cifg:  # CpuRef overwrites the forget gate with 1 - f
            other = self.write(self.op("nn.sub", [self.scalar(1.0), forget]), gate_buf)
        else:
            other = self.gate("Input", x, h, peep, a["inputIntermediateScale"], function="nn.sigmoid",
                              bias="inputGateBias", act_buf=gate_buf, input_scale=input_scale)
        new_cell = self.write(self.op("nn.add", [new_cell, self.op("nn.mul", [candidate, other])]), cell_buf)
        if a["cellClip"] > 0:
            bound = float(a["cellClip"])
            new_cell = self.write(self.op("nn.clamp", [new_cell], {"min": -bound, "max": bound}), cell_buf)
        out_gate = self.gate("Output", x, h, new_cell if self.peephole else None, a["outputIntermediateScale"],
                             function="nn.sigmoid", bias="outputGateBias", act_buf=gate_buf, input_scale=input_scale)
        squashed = self.write(self.op("nn.tanh", [new_cell]), gate_buf)
        hidden = self.write(self.op("nn.mul", [out_gate, squashed]),
                            _Buffer("i8", a["hiddenStateScale"], a["hiddenStateZeroPoint"]))
        out_buf = _Buffer(out_t.dtype, out_q.scale, out_q.zero_point)
        if self.projection:
            wide = _Buffer("i16", out_q.scale, out_q.zero_point)
            shape = (self.batch, out_t.shape[1])
            if "projectionBias" in self.params:
                bias = self.decoded("projectionBias").reshape(1, -1)
                acc = self.write(self.const(np.broadcast_to(bias, shape)), wide)
            else:  # CpuRef's zero-filled int16 buffer, read with the output's zero point
                acc = self.const(np.full(shape, F32(wide.scale) * F32(-wide.zero_point), F32))
            acc = self.multiply_accumulate(acc, self.decoded("projectionWeights"), hidden, wide)
            out = self.write(acc, out_buf)
            if a["projectionClip"] > 0:
                bound = float(a["projectionClip"])
                out = self.write(self.op("nn.clamp", [out], {"min": -bound, "max": bound}), out_buf)
        else:
            out = self.write(hidden, out_buf)
        # outputStateOut is a copy of the output (re-encoded when its type differs); c' is cellStateOut
        return [layer.finish(out, state_t), layer.finish(new_cell, cell_t), layer.finish(out, out_t)]


@rule("QLstm", constraints=(qlstm_per_tensor, qlstm_rank_2, qlstm_scales_positive),
      checks=(qlstm_parameter_constant_per_tensor,))
def _qlstm(layer: Layer) -> list[Value]:
    a = layer.attrs
    if integer_cell_refusal(layer, a["cifgEnabled"], a["peepholeEnabled"], a["projectionEnabled"],
                            a["layerNormEnabled"], knows_intermediates=True) is None:  # LiteRT's kernel
        x, h, c = layer.operands[:3]
        scales = tuple(a[f"{g}IntermediateScale"] for g in ("input", "forget", "cell", "output"))
        h_new, c_new = integer_step(layer, x, h, c, hidden=(a["hiddenStateScale"], a["hiddenStateZeroPoint"]),
                                    cell_clip=a["cellClip"], projection_clip=a["projectionClip"],
                                    gate_scales=scales if a["layerNormEnabled"] else (2.0 ** -12,) * 4)
        state_t, cell_t, out_t = layer.result_types
        return [layer.finish(h_new, state_t), layer.finish(c_new, cell_t), layer.finish(h_new, out_t)]
    return _QLstm(layer).step()
