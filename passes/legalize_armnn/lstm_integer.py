"""Quantized LSTM layers as TFLite's integer LSTM cell (nn.lstm_integer), under --semantics litert.

An int8 UnidirectionalSequenceLstm (the TFLite converter's full-integer LSTM, parsed by Arm NN's
TfLite parser) and a QLstm compute, in LiteRT, lstm_eval.cc's 8x8_16 integer kernel: int8 input and
output state, int16 cell state at a power-of-two scale, gates in Q3.12 through gemmlowp's int16
logistic and tanh (lowering/rules/quantized_lstm.py has the arithmetic). Arm NN's files keep no
TFLite intermediate tensors; without layer norm the kernel needs none but the hidden state's
quantization, which is the output's when there is no projection (TFLite's converter gives them one
quantization) and the QLstm descriptor's hiddenStateScale / hiddenStateZeroPoint otherwise.

`integer_cell_refusal` says why a layer does not fit that kernel as lowered here (layer norm,
peephole, CIFG and projection are not lowered yet): such a layer keeps the CpuRef-style lowering.
"""
from __future__ import annotations

from nn2tosa.ir import Quant, TensorType, Value

from .layer import Layer, NotLegalizable
from .registry import rule

_NEEDED = ["inputToInputWeights", "inputToForgetWeights", "inputToCellWeights", "inputToOutputWeights",
           "recurrentToInputWeights", "recurrentToForgetWeights", "recurrentToCellWeights", "recurrentToOutputWeights",
           "inputGateBias", "forgetGateBias", "cellBias", "outputGateBias"]


def _per_tensor(t: TensorType, dtype: str) -> bool:
    return t.dtype == dtype and t.quant is not None and t.quant.axis is None


def integer_cell_refusal(layer: Layer, cifg: bool, peephole: bool, projection: bool, layer_norm: bool) -> str | None:
    """None when the layer is TFLite's integer LSTM as nn.lstm_integer lowers it, else why not."""
    from nn2tosa.lowering.semantics import semantics_of

    if semantics_of(layer.graph) != "litert":
        return "cpuref semantics"
    if cifg or peephole or projection or layer_norm:
        return "CIFG, peephole, projection and layer norm are lowered as CpuRef computes them"
    x, h, c = (layer.type_of(v) for v in layer.operands[:3])
    if not (_per_tensor(x, "i8") and _per_tensor(h, "i8") and _per_tensor(c, "i16") and x.rank in (2, 3)):
        return "not an int8 / int16 LSTM"
    params = dict(zip(layer.attrs["inputParams"], layer.operands[3:]))
    for name in _NEEDED:
        if name not in params or layer.constant_value(params[name]) is None:
            return f"{name} is missing or not constant"
        kind = "i32" if name.endswith("Bias") else "i8"
        if not _per_tensor(layer.type_of(params[name]), kind):
            return f"{name} is not per-tensor {kind}"
    return None


def integer_step(layer: Layer, x: Value, h: Value, c: Value, hidden: tuple[float, int], cell_clip: float
                 ) -> tuple[Value, Value]:
    """(h', c') of one time step: h' quantized as the hidden state, c' as c."""
    names = [n for n in layer.attrs["inputParams"] if n in _NEEDED]
    params = dict(zip(layer.attrs["inputParams"], layer.operands[3:]))
    h_type, c_type = layer.type_of(h), layer.type_of(c)
    hidden_type = TensorType(h_type.shape, "i8", Quant((float(hidden[0]),), (int(hidden[1]),)))
    node = layer.builder.op_results("nn.lstm_integer", [x, h, c, *(params[n] for n in names)],
                                    {"params": names, "cell_clip": float(cell_clip),
                                     "hidden": [float(hidden[0]), float(hidden[1])]}, [hidden_type, c_type])
    return node[0], node[1]


_ANDROID_PARAMS = ["inputToInputWeights", "inputToForgetWeights", "inputToCellWeights", "inputToOutputWeights",
                   "recurrentToInputWeights", "recurrentToForgetWeights", "recurrentToCellWeights",
                   "recurrentToOutputWeights", "inputGateBias", "forgetGateBias", "cellBias", "outputGateBias"]


@rule("QuantizedLstm")
def _quantized_lstm(layer: Layer) -> list[Value]:
    """Android NN's QUANTIZED_16BIT_LSTM (one step; nn.quantized_lstm): its integers are its definition,
    under either semantics. Operands (input, cellStateIn, outputStateIn, parameters); results
    (cellStateOut, output)."""
    x, c, h = (layer.type_of(v) for v in layer.operands[:3])
    if not (_per_tensor(x, "ui8") and _per_tensor(h, "ui8") and _per_tensor(c, "i16")):
        raise NotLegalizable("QuantizedLstm takes uint8 input and output state and an int16 cell state")
    if x.rank != 2 or h.rank != 2 or c.rank != 2:
        raise NotLegalizable("QuantizedLstm takes [batch, size] tensors")
    params = dict(zip(layer.attrs["inputParams"], layer.operands[3:]))
    for name in _ANDROID_PARAMS:
        if name not in params or layer.constant_value(params[name]) is None:
            raise NotLegalizable(f"QuantizedLstm parameter {name} is missing or not constant")
        kind = "i32" if name.endswith("Bias") else "ui8"
        if not _per_tensor(layer.type_of(params[name]), kind):
            raise NotLegalizable(f"QuantizedLstm parameter {name} is not per-tensor {kind}")
    for group in (_ANDROID_PARAMS[:8], _ANDROID_PARAMS[8:]):  # the kernel reads one weight and one bias tensor
        if len({layer.type_of(params[n]).quant for n in group}) > 1:
            raise NotLegalizable("QuantizedLstm's weights (and its biases) must share one quantization, as Android "
                                 "NN requires: its kernel multiplies them concatenated")
    cell, hidden = layer.builder.op_results("nn.quantized_lstm", [*layer.operands[:3], *(params[n] for n in _ANDROID_PARAMS)],
                                            {"params": _ANDROID_PARAMS}, [c, h])
    cell_t, out_t = layer.result_types
    return [layer.finish(cell, cell_t), layer.finish(hidden, out_t)]
