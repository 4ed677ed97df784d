"""The LSTM family: Lstm (one time step) and UnidirectionalSequenceLstm (a sequence, unrolled over
time), as nn fully_connected / sigmoid / tanh / mul / add ops.

One step of Arm NN's LSTM cell (its reference LstmImpl; W* are [cells, inputs] matrices, so
x @ W^T is nn.fully_connected):
    gate_acc(g) = x W_xg^T + h W_hg^T (+ peephole: c * w_cg) ; with layer norm: LN(acc) * w_lng + b_g,
                                                               else the bias b_g is added first
    i = sigmoid(gate_acc(input))          (CIFG: i = 1 - f)
    f = sigmoid(gate_acc(forget))
    g = act(gate_acc(cell))               (peephole of i and f read the old cell state)
    c' = f * c + i * g, clipped to +-clippingThresCell when > 0
    o = sigmoid(gate_acc(output))         (its peephole reads c')
    hidden = o * act(c')
    out = hidden, or (hidden W_proj^T + b_proj) clipped to +-clippingThresProj when projecting
    h' = out
`act` is activationFunc (TfLite's codes: 0 none, 1 relu, 3 relu6, 4 tanh, 6 sigmoid). Quirk kept:
with activationFunc 0 Arm NN multiplies o by g, not by c' (its cell scratch keeps g). LN is
(x - mean) / sqrt(var), with var 1e-8 when it is 0 (nn.layer_norm with epsilon 1e-8).
Lstm's results: scratch buffer (the final gate buffers: [i,] act(c') or g, f (1 - f with CIFG),
hidden, laid out gate-major as Arm NN does), output state h', cell state c', output.

Quantized LSTMs compute in float between nn.dequantize and nn.quantize (see layer.py), except an int8
UnidirectionalSequenceLstm under --semantics litert, whose steps are TFLite's integer LSTM cell
(nn.lstm_integer, lstm_integer.py).
"""
from __future__ import annotations

from dataclasses import dataclass

from nn2tosa.ir import TensorType, Value

from .elementwise import activation, activation_function_known
from .layer import Layer
from .lstm_integer import integer_cell_refusal, integer_step
from .registry import rule

# LstmDescriptor.activationFunc (TfLite fused activation codes) -> Arm NN activation (function, a, b).
_CELL_ACTIVATIONS = {1: ("ReLu", 0.0, 0.0), 3: ("BoundedReLu", 6.0, 0.0), 4: ("TanH", 1.0, 1.0), 6: ("Sigmoid", 0.0, 0.0)}
LAYER_NORM_EPSILON = 1e-8  # Arm NN's m_LayerNormEpsilon for float LSTMs


@dataclass
class _Cell:
    """Everything one step needs: the layer, its descriptor and its parameters by name (as float values)."""

    layer: Layer
    params: dict[str, Value]
    cifg: bool
    peephole: bool
    projection: bool
    layer_norm: bool
    clip_cell: float
    clip_projection: float
    act: tuple[str, float, float] | None

    def op(self, name: str, operands: list[Value], attrs: dict | None = None) -> Value:
        return self.layer.op(name, operands, attrs)

    def act_of(self, v: Value, act: tuple[str, float, float]) -> Value:
        """`act` (the cell's activation, which the caller found it has) applied to v."""
        function, a, b = act
        return activation(self.layer, v, function, a, b, self.layer.type_of(v))

    def gate(self, x: Value, h: Value, c: Value | None, gate: str, bias: str) -> Value:
        """The pre-activation value of one gate."""
        p = self.params
        with_bias = [] if self.layer_norm else [p[bias]]
        acc = self.op("nn.add", [self.op("nn.fully_connected", [x, p[f"inputTo{gate}Weights"], *with_bias]),
                                 self.op("nn.fully_connected", [h, p[f"recurrentTo{gate}Weights"]])])
        if c is not None:
            acc = self.op("nn.add", [acc, self.op("nn.mul", [c, p[f"cellTo{gate}Weights"]])])
        if self.layer_norm:  # normalized, scaled by the gate's weights, then the bias
            acc = self.op("nn.layer_norm", [acc, p[f"{gate.lower()}LayerNormWeights"], p[bias]],
                          {"axes": [1], "epsilon": LAYER_NORM_EPSILON})
        return acc

    def clip(self, v: Value, bound: float) -> Value:
        return v if bound <= 0 else self.op("nn.clamp", [v], {"min": -float(bound), "max": float(bound)})

    def step(self, x: Value, h: Value, c: Value) -> tuple[list[Value], Value, Value]:
        """(scratch gate blocks, h', c') of one time step."""
        peep = c if self.peephole else None
        forget = self.op("nn.sigmoid", [self.gate(x, h, peep, "Forget", "forgetGateBias")])
        candidate = self.gate(x, h, None, "Cell", "cellBias")
        if self.act is not None:
            candidate = self.act_of(candidate, self.act)
        if self.cifg:
            one = self.layer.scalar(1.0, forget)
            input_gate = self.op("nn.sub", [one, forget])
        else:
            input_gate = self.op("nn.sigmoid", [self.gate(x, h, peep, "Input", "inputGateBias")])
        c_new = self.op("nn.add", [self.op("nn.mul", [forget, c]), self.op("nn.mul", [input_gate, candidate])])
        c_new = self.clip(c_new, self.clip_cell)
        out_gate = self.op("nn.sigmoid", [self.gate(x, h, c_new if self.peephole else None, "Output", "outputGateBias")])
        cell_scratch = self.act_of(c_new, self.act) if self.act is not None else candidate
        hidden = self.op("nn.mul", [out_gate, cell_scratch])
        out = hidden
        if self.projection:
            bias = [self.params["projectionBias"]] if "projectionBias" in self.params else []
            out = self.clip(self.op("nn.fully_connected", [hidden, self.params["projectionWeights"], *bias]),
                            self.clip_projection)
        forget_scratch = input_gate if self.cifg else forget  # Arm NN overwrites f with 1 - f under CIFG
        blocks = [cell_scratch, forget_scratch, hidden] if self.cifg else [input_gate, cell_scratch, forget_scratch, hidden]
        return blocks, out, c_new


def lstm_activation_known(layer: Layer) -> str | None:
    """The LSTM's activationFunc is one of Arm NN's: 0 (none), 1 (ReLu), 3 (ReLu6), 4 (TanH), 6 (Sigmoid)."""
    code = layer.attrs["activationFunc"]
    if code != 0 and code not in _CELL_ACTIVATIONS:
        return f"LSTM activationFunc {code} is none of Arm NN's (0, 1, 3, 4, 6)"
    return None


def lstm_parameters_present(layer: Layer) -> str | None:
    """The file holds every parameter the LSTM descriptor's options (CIFG, peephole, projection, layer
    norm) need."""
    present = set(list(layer.attrs["inputParams"])[:max(len(layer.operands) - 3, 0)])
    missing = [n for n in _needed_parameters(layer.attrs) if n not in present]
    if missing:
        return f"the descriptor's options need parameters the file lacks: {', '.join(missing)}"
    return None


def _needed_parameters(a: dict) -> list[str]:
    needed = ["inputToForgetWeights", "inputToCellWeights", "inputToOutputWeights", "recurrentToForgetWeights",
              "recurrentToCellWeights", "recurrentToOutputWeights", "forgetGateBias", "cellBias", "outputGateBias"]
    if not a["cifgEnabled"]:
        needed += ["inputToInputWeights", "recurrentToInputWeights", "inputGateBias"]
        needed += ["cellToInputWeights"] if a["peepholeEnabled"] else []
        needed += ["inputLayerNormWeights"] if a["layerNormEnabled"] else []
    needed += ["cellToForgetWeights", "cellToOutputWeights"] if a["peepholeEnabled"] else []
    needed += ["projectionWeights"] if a["projectionEnabled"] else []
    needed += ["forgetLayerNormWeights", "cellLayerNormWeights", "outputLayerNormWeights"] if a["layerNormEnabled"] else []
    return needed


def _cell(layer: Layer, data_inputs: int = 3) -> _Cell:
    """The cell of an LSTM layer whose rule declares lstm_activation_known and lstm_parameters_present."""
    a = layer.attrs
    code = a["activationFunc"]
    names = a["inputParams"]
    params = {name: layer.real(v) for name, v in zip(names, layer.operands[data_inputs:])}
    return _Cell(layer, params, a["cifgEnabled"], a["peepholeEnabled"], a["projectionEnabled"], a["layerNormEnabled"],
                 float(a["clippingThresCell"]), float(a["clippingThresProj"]), _CELL_ACTIVATIONS.get(code))


@rule("Lstm", constraints=(lstm_activation_known, lstm_parameters_present),
      checks=(activation_function_known,))
def _lstm(layer: Layer) -> list[Value]:
    cell = _cell(layer)
    x, h, c = (layer.real(v) for v in layer.operands[:3])
    blocks, h_new, c_new = cell.step(x, h, c)
    batch, units = layer.type_of(c_new).shape
    stacked = layer.op("nn.concat", blocks, {"axis": 0})  # [gates * batch, units]: Arm NN's memory order
    scratch = layer.reshape(stacked, [batch, units * len(blocks)])
    scratch_t, state_t, cell_t, out_t = layer.result_types
    return [layer.finish(scratch, scratch_t), layer.finish(h_new, state_t), layer.finish(c_new, cell_t),
            layer.finish(h_new, out_t)]


@rule("UnidirectionalSequenceLstm", constraints=(lstm_activation_known, lstm_parameters_present),
      checks=(activation_function_known,))
def _sequence_lstm(layer: Layer) -> list[Value]:
    """The cell applied along time (dimension 0 with timeMajor, else 1), the state carried from
    step to step; the output stacks h' of every step. Results: (final output state, final cell
    state, output) when the layer has three, else just the output."""
    cell = _cell(layer)
    a = layer.attrs
    integer = integer_cell_refusal(layer, cell.cifg, cell.peephole, cell.projection, cell.layer_norm,
                                   knows_intermediates=False) is None
    if integer:  # TFLite's integer kernel (lstm_integer.py): the hidden state is quantized as the output
        out_quant = layer.result_types[-1].quant
        if out_quant is None:
            raise ValueError(f"an int8 LSTM whose output is {layer.result_types[-1].dtype}, not quantized")
        hidden = (out_quant.scale, out_quant.zero_point)
        seq, h, c = layer.operands[:3]
        step = lambda x, h, c: integer_step(layer, x, h, c, hidden=hidden,  # noqa: E731
                                            cell_clip=a["clippingThresCell"])
    else:
        seq, h, c = (layer.real(v) for v in layer.operands[:3])
        step = lambda x, h, c: cell.step(x, h, c)[1:]  # noqa: E731
    time_axis = 0 if layer.attrs["timeMajor"] else 1
    shape = list(layer.type_of(seq).shape)
    steps, batch = shape[time_axis], shape[1 - time_axis]
    declared = layer.result_types[-1].shape
    if len(declared) != 3 or declared[time_axis] != steps:  # before unrolling steps x ~30 ops (found by fuzzing)
        raise ValueError(f"{steps} time steps in, an output of shape {list(declared)}")
    outputs = []
    for t in range(steps):
        begin = [0] * 3
        begin[time_axis] = t
        size = list(shape)
        size[time_axis] = 1
        x = layer.reshape(layer.move("nn.slice", seq, {"begin": begin, "size": size}), [batch, shape[2]])
        h, c = step(x, h, c)
        one_step = [1, batch] if time_axis == 0 else [batch, 1]
        outputs.append(layer.reshape(h, one_step + [layer.type_of(h).shape[1]]))
    step_t = layer.type_of(outputs[0])
    joined = list(step_t.shape)
    joined[time_axis] = steps
    output = outputs[0] if steps == 1 else layer.op("nn.concat", outputs, {"axis": time_axis},
                                                     TensorType(tuple(joined), step_t.dtype, step_t.quant))
    if len(layer.result_types) == 1:
        return [layer.finish(output)]
    state_t, cell_t, out_t = layer.result_types
    return [layer.finish(h, state_t), layer.finish(c, cell_t), layer.finish(output, out_t)]
