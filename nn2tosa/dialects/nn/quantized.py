"""nn quantization ops and the integer recurrent cells."""
from __future__ import annotations

from nn2tosa.ir import Graph, TensorType, attr

from .common import Attrs, define_nn, same_shape

# ------------------------------------------------------------------------------ quantization
def _numbers(graph: Graph, node: int) -> list[str]:
    """A quantization converts real values: a Boolean has none (a file whose layer turns Booleans into
    a quantized type is refused here, not left to a TOSA CAST from i1 to f32, which no profile has)."""
    types = [graph.tensor_type(graph.operands(node)[0]), graph.tensor_type(graph.results(node)[0])]
    problems = same_shape(graph, node)
    if any(t.dtype == "i1" for t in types):
        problems.append(f"from {types[0]} to {types[1]}: a Boolean is not a number to quantize")
    return problems


define_nn("nn.quantize", operands=("x",), doc="Float to the quantized result type: clamp(round_half_away_from_zero(x / scale) + zp), as Arm NN quantizes.",
          infer=None, verify=_numbers)
define_nn("nn.dequantize", operands=("x",), doc="Quantized to float: (q - zp) * scale.", infer=None, verify=_numbers)
define_nn("nn.requantize", operands=("x",), doc="Quantized to another quantization: quantize(dequantize(q)).", infer=None,
          verify=_numbers, traits={"tabulated", "rescale_clamp", "litert_int16_rescale"})


# ------------------------------------------------------------------------------ integer recurrent cells
def _infer_lstm_integer(attrs: Attrs, types: list[TensorType]) -> list[TensorType]:
    x, h, c = types[:3]
    return [TensorType(h.shape, h.dtype), TensorType(c.shape, c.dtype)]


define_nn("nn.lstm_integer", operands=("x", "h", "c", "params*"), results=2,
          attrs={"params": attr("strs", "what each operand after (x, h, c) is, by Arm NN's LSTM parameter names "
                                        "(inputToForgetWeights, forgetGateBias, ...): constants"),
                 "cell_clip": attr("float", "> 0: the new cell state limited to +-cell_clip (real units)"),
                 "proj_clip": attr("float", "> 0: the projected output limited to +-proj_clip (real units)"),
                 "hidden": attr("floats", "[scale, zero point] of the hidden state o * tanh(c) (TFLite's fifth "
                                          "intermediate; the output's quantization without projection)"),
                 "gate_scales": attr("floats", "the input, forget, cell and output gates' intermediate scales "
                                               "(TFLite's first four intermediates; 2**-12 without layer norm)")},
          doc="One time step of TFLite's integer LSTM cell (lstm_eval.cc, 8x8_16: int8 x and h, int16 cell state of "
              "a power-of-two scale, int32 biases, int8 weights, int16 peephole and layer norm weights; CIFG, peephole, "
              "layer norm and projection when their parameters are present). Each gate MBQM(x W^T + b - zp_x rowsum "
              "W) + MBQM(h W^T - zp_h rowsum W) (+ MBQM(w_c c)), saturated to int16 at its intermediate scale (b "
              "after the layer norm when there is one), gemmlowp's int16 logistic / tanh; c' = f c >> 15 + i g >> (30 "
              "+ log2 scale_c) (i = 1 - f with CIFG), clipped; h' = MBQM(o tanh(c')) + the hidden zero point, or its "
              "projection (+ zp_h rowsum W_p, the output's zero point, clipped). Results: (h', c').",
          infer=_infer_lstm_integer)


def _infer_quantized_lstm(attrs: Attrs, types: list[TensorType]) -> list[TensorType]:
    x, c, h = types[:3]
    return [TensorType(c.shape, c.dtype), TensorType(h.shape, h.dtype)]


define_nn("nn.quantized_lstm", operands=("x", "c", "h", "params[12]"), results=2,
          attrs={"params": attr("strs", "what each operand after (x, c, h) is, by Arm NN's parameter names: 8 uint8 "
                                        "weights, 4 int32 biases, constants")},
          doc="One step of Android NN's QUANTIZED_16BIT_LSTM (TFLite's quantized LstmCell with 4 state integer bits): "
              "x and h uint8 at 1/128 (zero point 128), the cell state int16 Q4.11. Each gate MBQM(b + sum (x|h - 128) "
              "(w - zp_w)) by the multiplier of 4096 s_b, saturated to Q3.12; gemmlowp's int16 logistic (input, forget, "
              "output) and tanh (cell); c' = sat(Rescale<4>(i * g) + f * c); h' = 128 + clamp(RoundingDivideByPOT(o * "
              "tanh(Rescale<3>(c')), 8)), the products gemmlowp's 16-bit SRDHM. Results: (c', h').",
          infer=_infer_quantized_lstm)
