"""Quantized LSTM layers as integer LSTM cells: TFLite's (nn.lstm_integer, under --semantics litert)
and Android NN's QUANTIZED_16BIT_LSTM (nn.quantized_lstm, under either semantics).

An int8 UnidirectionalSequenceLstm (the TFLite converter's full-integer LSTM, parsed by Arm NN's
TfLite parser) and a QLstm compute, in LiteRT, lstm_eval.cc's 8x8_16 integer kernel: int8 input and
output state, int16 cell state at a power-of-two scale, gates in Q3.12 (or, with layer norm, at the
intermediate scales) through gemmlowp's int16 logistic and tanh (lowering/rules/recurrent.py has
the arithmetic). The kernel reads TFLite's five intermediate tensors; Arm NN's QLstm descriptor keeps
their scales (the gate intermediates, hiddenStateScale / ZeroPoint), its UnidirectionalSequenceLstm
descriptor none: there the lowering needs none of them, which holds without layer norm and projection
(the gates are then Q3.12, and the hidden state takes the output's quantization, as TFLite's converter
gives it).

`integer_cell_refusal` says why a layer does not fit the kernel as lowered here; such a layer keeps the
CpuRef-style lowering.
"""
from __future__ import annotations

from nn2tosa.ir import Quant, TensorType, Value

from .layer import Layer, quantization
from .registry import rule

GATES = ("Input", "Forget", "Cell", "Output")
_BIAS = {"Input": "inputGateBias", "Forget": "forgetGateBias", "Cell": "cellBias", "Output": "outputGateBias"}


def _per_tensor(t: TensorType, dtype: str) -> bool:
    return t.dtype == dtype and t.quant is not None and t.quant.axis is None


def _needed(cifg: bool, peephole: bool, projection: bool, layer_norm: bool) -> dict[str, str]:
    """The parameters TFLite's integer kernel reads for these options -> their element type."""
    gates = GATES[1:] if cifg else GATES
    needed = {f"{prefix}{g}Weights": "i8" for g in gates for prefix in ("inputTo", "recurrentTo")}
    needed.update({_BIAS[g]: "i32" for g in gates})
    if peephole:
        needed.update({f"cellTo{g}Weights": "i16" for g in gates if g != "Cell"})
    if layer_norm:
        needed.update({f"{g[0].lower()}{g[1:]}LayerNormWeights": "i16" for g in gates})
    if projection:
        needed["projectionWeights"] = "i8"
    return needed


def check_shapes(layer: Layer, h: Value, c: Value, params: dict[str, Value], n_in: int, n_out: int) -> None:
    """ValueError (the layer is inconsistent: exit 2) unless the state and every parameter present have
    the shapes the cell's sizes give them: [batch, n_out] output state, [batch, cells] cell state,
    [cells, n_in] / [cells, n_out] weights, [cells] vectors, [n_out, cells] projection."""
    h_shape, c_shape = layer.type_of(h).shape, layer.type_of(c).shape
    if len(h_shape) != 2 or len(c_shape) != 2 or h_shape[0] != c_shape[0] or h_shape[1] != n_out:
        raise ValueError(f"output state {list(h_shape)} and cell state {list(c_shape)} do not fit {n_out} outputs")
    cells = c_shape[1]
    for name, v in params.items():
        if name.startswith("inputTo"):
            want = [cells, n_in]
        elif name.startswith("recurrentTo"):
            want = [cells, n_out]
        elif name == "projectionWeights":
            want = [n_out, cells]
        elif name == "projectionBias":
            want = [n_out]
        else:  # biases, peephole and layer norm weights
            want = [cells]
        if list(layer.type_of(v).shape) != want:
            raise ValueError(f"{name} has shape {list(layer.type_of(v).shape)}, the cell needs {want}")


def integer_cell_refusal(layer: Layer, cifg: bool, peephole: bool, projection: bool, layer_norm: bool,
                         knows_intermediates: bool) -> str | None:
    """None when the layer is TFLite's integer LSTM as nn.lstm_integer lowers it, else why not.
    `knows_intermediates`: the layer records TFLite's intermediate scales (QLstm)."""
    from ..context import pass_context

    if pass_context().semantics != "litert":
        return "cpuref semantics"
    if (layer_norm or projection) and not knows_intermediates:
        return "layer norm and projection need TFLite's intermediate scales, which the layer does not record"
    x, h, c = (layer.type_of(v) for v in layer.operands[:3])
    if not (_per_tensor(x, "i8") and _per_tensor(h, "i8") and _per_tensor(c, "i16") and x.rank in (2, 3)):
        return "not an int8 / int16 LSTM"
    cells = c.shape[-1]
    if peephole and h.shape[-1] > cells:  # the kernel's peephole walks n_output elements of the cell state
        return "a peephole with more outputs than cells: TFLite's kernel reads past its cell state"
    if layer_norm and (cells < 2 or cells > 1024 or cells & (cells - 1)):
        return "TFLite's integer layer norm computes the variance for 2 to 1024 cells, a power of two, only"
    params = dict(zip(layer.attrs["inputParams"], layer.operands[3:]))
    needed = _needed(cifg, peephole, projection, layer_norm)
    if projection and "projectionBias" in params:
        needed["projectionBias"] = "i32"
    for name, dtype in needed.items():
        if name not in params or layer.constant_value(params[name]) is None:
            return f"{name} is missing or not constant"
        if not _per_tensor(layer.type_of(params[name]), dtype):
            return f"{name} is not per-tensor {dtype}"
    return None


def integer_step(layer: Layer, x: Value, h: Value, c: Value, *, hidden: tuple[float, int], cell_clip: float,
                 projection_clip: float = 0.0, gate_scales: tuple[float, ...] = (2.0 ** -12,) * 4
                 ) -> tuple[Value, Value]:
    """(h', c') of one time step, c' quantized as c and h' as the hidden state (as h with projection).
    `gate_scales`: the intermediate scales of the input, forget, cell and output gates (layer norm)."""
    a = layer.attrs
    cifg = a["cifgEnabled"]
    projection = a["projectionEnabled"]
    needed = _needed(cifg, a["peepholeEnabled"], projection, a["layerNormEnabled"])
    params = dict(zip(a["inputParams"], layer.operands[3:]))
    names = [n for n in a["inputParams"] if n in needed or (projection and n == "projectionBias")]
    h_type, c_type = layer.type_of(h), layer.type_of(c)
    x_shape = layer.type_of(x).shape
    if len(x_shape) != 2 or x_shape[0] != h_type.shape[0]:
        raise ValueError(f"an input of shape {list(x_shape)} for an output state of shape {list(h_type.shape)}")
    check_shapes(layer, h, c, {n: params[n] for n in names}, x_shape[1],
                 h_type.shape[1] if projection else c_type.shape[1])
    out_quant = h_type.quant if projection else Quant((float(hidden[0]),), (int(hidden[1]),))
    results = layer.builder.op_results(
        "nn.lstm_integer", [x, h, c, *(params[n] for n in names)],
        {"params": names, "cell_clip": float(cell_clip), "proj_clip": float(projection_clip),
         "hidden": [float(hidden[0]), float(hidden[1])], "gate_scales": [float(s) for s in gate_scales]},
        [TensorType(h_type.shape, "i8", out_quant), c_type])
    return results[0], results[1]


_ANDROID_PARAMS = ["inputToInputWeights", "inputToForgetWeights", "inputToCellWeights", "inputToOutputWeights",
                   "recurrentToInputWeights", "recurrentToForgetWeights", "recurrentToCellWeights",
                   "recurrentToOutputWeights", "inputGateBias", "forgetGateBias", "cellBias", "outputGateBias"]


def quantized_lstm_types(layer: Layer) -> str | None:
    """QuantizedLstm's input and output state are per-tensor quantized uint8, its cell state per-tensor
    quantized int16."""
    x, c, h = (layer.type_of(v) for v in layer.operands[:3])
    if not (_per_tensor(x, "ui8") and _per_tensor(h, "ui8") and _per_tensor(c, "i16")):
        return (f"QuantizedLstm takes uint8 input and output state and an int16 cell state (not {x.dtype}, "
                f"{h.dtype} and {c.dtype}, each quantized per tensor)")
    return None


def quantized_lstm_rank_2(layer: Layer) -> str | None:
    """QuantizedLstm's input and states are [batch, size] tensors."""
    ranks = [layer.type_of(v).rank for v in layer.operands[:3]]
    if ranks != [2, 2, 2]:
        return f"QuantizedLstm takes [batch, size] tensors (not ranks {ranks})"
    return None


def quantized_lstm_parameters(layer: Layer, params: dict[str, Value]) -> str | None:
    """QuantizedLstm's twelve parameters are present and constant, the weights per-tensor quantized
    uint8, the biases int32."""
    for name in _ANDROID_PARAMS:
        if name not in params or layer.constant_value(params[name]) is None:
            return f"QuantizedLstm parameter {name} is missing or not constant"
        kind = "i32" if name.endswith("Bias") else "ui8"
        if not _per_tensor(layer.type_of(params[name]), kind):
            return f"QuantizedLstm parameter {name} is not per-tensor {kind}"
    return None


def quantized_lstm_fixed_formats(layer: Layer) -> str | None:
    """QuantizedLstm's uint8 data is at scale 1/128, zero point 128, and its int16 cell state Q4.11
    (scale 2^-11, zero point 0): the only formats Android NN's QUANTIZED_16BIT_LSTM computes."""
    x, c, h = (quantization(layer.type_of(v)) for v in layer.operands[:3])  # (quantized_lstm_types)
    if any(q.scale != 1 / 128 or q.zero_point != 128 for q in (x, h)) or c.scale != 2.0 ** -11 or c.zero_point != 0:
        return ("QuantizedLstm computes uint8 data at 1/128 (zero point 128) and a Q4.11 int16 cell state only "
                f"(Android NN's QUANTIZED_16BIT_LSTM), not input {x.scale}/{x.zero_point}, output state "
                f"{h.scale}/{h.zero_point}, cell state {c.scale}/{c.zero_point}")
    return None


def quantized_lstm_shared_quantization(layer: Layer, params: dict[str, Value]) -> str | None:
    """QuantizedLstm's weights share one quantization, and so do its biases, as Android NN requires: its
    kernel multiplies them concatenated."""
    for group in (_ANDROID_PARAMS[:8], _ANDROID_PARAMS[8:]):  # the kernel reads one weight and one bias tensor
        if len({layer.type_of(params[n]).quant for n in group}) > 1:
            return ("QuantizedLstm's weights (and its biases) must share one quantization, as Android NN requires: "
                    "its kernel multiplies them concatenated")
    return None


@rule("QuantizedLstm", constraints=(quantized_lstm_types, quantized_lstm_rank_2),
      checks=(quantized_lstm_parameters, quantized_lstm_fixed_formats, quantized_lstm_shared_quantization))
def _quantized_lstm(layer: Layer) -> list[Value]:
    """Android NN's QUANTIZED_16BIT_LSTM (one step; nn.quantized_lstm): its integers are its definition,
    under either semantics. Operands (input, cellStateIn, outputStateIn, parameters); results
    (cellStateOut, output)."""
    x, c, h = (layer.type_of(v) for v in layer.operands[:3])
    params = dict(zip(layer.attrs["inputParams"], layer.operands[3:]))
    if x.shape[0] != h.shape[0]:
        raise ValueError(f"an input of shape {list(x.shape)} for an output state of shape {list(h.shape)}")
    check_shapes(layer, layer.operands[2], layer.operands[1], {n: params[n] for n in _ANDROID_PARAMS if n in params},
                 x.shape[1], c.shape[1])
    layer.check(quantized_lstm_parameters, params)
    # Android NN's prepare: the kernel's fixed formats (it reads no other scale but the bias's)
    layer.check(quantized_lstm_fixed_formats)
    layer.check(quantized_lstm_shared_quantization, params)
    cell, hidden = layer.builder.op_results("nn.quantized_lstm", [*layer.operands[:3], *(params[n] for n in _ANDROID_PARAMS)],
                                            {"params": _ANDROID_PARAMS}, [c, h])
    cell_t, out_t = layer.result_types
    return [layer.finish(cell, cell_t), layer.finish(hidden, out_t)]
