"""Write LiteRT's outputs for the LSTM tests (tests/lowering/test_lstm_integer.py); see README.md here.

Run from the repository with the project's environment (it reads the corpus through nn2tosa):

    .venv/bin/python tests/data/lstm/make_litert_refs.py [--litert-python /work/litert-venv/bin/python]

Step 1 (project environment): each model is written as a layer list (JSON) and its constants (NPZ):
the corpus' integer LSTM files read with nn2tosa.load, and small synthetic layers drawn from a seeded
generator (kept here as synthetic_*.json / .npz, which the tests build Arm NN graphs from).
Step 2 (the LiteRT environment: ai-edge-litert 2.3.0, numpy<2.2): each layer list becomes a .tflite
(UNIDIRECTIONAL_SEQUENCE_LSTM / LSTM with TFLite's five integer-LSTM intermediates, the basic uint8
LSTM cell for QuantizedLstm, RESHAPE, FULLY_CONNECTED, LOGISTIC), which LiteRT's reference kernels
(OpResolverType.BUILTIN_REF) run on the given inputs; the outputs are saved as NAME.litert.outputK.npy
in the Arm NN layer's result order.
"""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
CORPUS = HERE.parents[2].parent / "shared" / "corpus"
CORPUS_FILES = ["armnn/tflite_23.08/tflm_dtln_noise_suppression.armnn",
                "armnn/perlayer_20.08/qlstm_basic_nolayernorm_qs8.armnn",
                "armnn/perlayer_23.08/qlstm_basic_nolayernorm_qs8.armnn",
                "armnn/perlayer_20.08/qlstm_cifg_peephole_projection_layernorm_qs8.armnn",
                "armnn/perlayer_23.08/qlstm_cifg_peephole_projection_layernorm_qs8.armnn",
                "armnn/perlayer_20.08/noexec/quantizedlstm_qu8.armnn",
                "armnn/perlayer_23.08/noexec/quantizedlstm_qu8.armnn"]
GATES = ("Input", "Forget", "Cell", "Output")
BIAS = {"Input": "inputGateBias", "Forget": "forgetGateBias", "Cell": "cellBias", "Output": "outputGateBias"}


# ------------------------------------------------------------------------------ step 1: layer lists
def dump_corpus_file(rel: str) -> tuple[dict, dict]:
    import nn2tosa
    from nn2tosa.passes.fold import constant_value

    g = nn2tosa.load(str(CORPUS / rel))
    names, layers, consts = {}, [], {}
    for n in g.topological():
        results = g.results(n)
        for i, r in enumerate(results):
            names[r] = f"n{n}_{i}"
        types = [{"shape": list(t.shape), "dtype": t.dtype,
                  "q": None if t.quant is None else [list(t.quant.scales), list(t.quant.zero_points)]}
                 for t in (g.type_of(r) for r in results)]
        attrs = {k: v for k, v in g.attrs(n).items() if isinstance(v, (int, float, str, bool, list))}
        layers.append({"op": g.op(n), "operands": [names[v] for v in g.operands(n)],
                       "results": [names[r] for r in results], "types": types, "attrs": attrs})
        if g.op(n) == "armnn.Constant":
            consts[names[results[0]]] = np.asarray(constant_value(g, results[0]))
    stem = Path(rel).stem
    inputs = {f"input{k}": np.load(CORPUS / Path(rel).parent / f"{stem}.input{k}.npy")
              for k in range(len(g.inputs))}
    return {"layers": layers}, {**consts, **inputs}


def _q(scale: float, zp: int = 0) -> list:
    return [[float(np.float32(scale))], [int(zp)]]


def synthetic_sequence_lstm(seed: int, time_major: bool, steps: int, cell_exponent: int, cell_clip: float,
                            weight_scales: tuple[float, float] = (0.01, 0.04)) -> tuple[dict, dict]:
    """An int8 UnidirectionalSequenceLstm with zero points everywhere they may be, batch 2. Small
    weight scales make the gate multipliers shift right (where MultiplyByQuantizedMultiplier rounds twice)."""
    rng = np.random.default_rng(seed)
    batch, n_in, cells = 2, 5, 4
    x_q, h_q, c_q = _q(0.05, -3), _q(0.0078125, 5), _q(2.0 ** cell_exponent)
    layers, arrays = [], {}
    shape = [steps, batch, n_in] if time_major else [batch, steps, n_in]
    for name, t in (("x", {"shape": shape, "dtype": "i8", "q": x_q}),
                    ("h", {"shape": [batch, cells], "dtype": "i8", "q": h_q}),
                    ("c", {"shape": [batch, cells], "dtype": "i16", "q": c_q})):
        layers.append({"op": "graph.input", "operands": [], "results": [name], "types": [t], "attrs": {}})
    arrays["input0"] = rng.integers(-128, 128, shape).astype(np.int8)
    arrays["input1"] = rng.integers(-128, 128, (batch, cells)).astype(np.int8)
    arrays["input2"] = rng.integers(-12000, 12000, (batch, cells)).astype(np.int16)
    params = []
    for gate in GATES:
        for prefix, width, in_scale in (("inputTo", n_in, 0.05), ("recurrentTo", cells, 0.0078125)):
            name = f"{prefix}{gate}Weights"
            w_scale = float(rng.uniform(*weight_scales))
            arrays[name] = rng.integers(-127, 128, (cells, width)).astype(np.int8)
            layers.append({"op": "armnn.Constant", "operands": [], "results": [name],
                           "types": [{"shape": [cells, width], "dtype": "i8", "q": _q(w_scale)}], "attrs": {}})
            params.append(name)
            if prefix == "inputTo":
                bias_scale = float(np.float32(w_scale) * np.float32(in_scale))
                arrays[BIAS[gate]] = rng.integers(-3000, 3000, cells).astype(np.int32)
                layers.append({"op": "armnn.Constant", "operands": [], "results": [BIAS[gate]],
                               "types": [{"shape": [cells], "dtype": "i32", "q": _q(bias_scale)}], "attrs": {}})
                params.append(BIAS[gate])
    out_shape = [steps, batch, cells] if time_major else [batch, steps, cells]
    layers.append({"op": "armnn.UnidirectionalSequenceLstm", "operands": ["x", "h", "c", *params],
                   "results": ["state", "cell", "out"],
                   "types": [{"shape": [batch, cells], "dtype": "i8", "q": h_q},
                             {"shape": [batch, cells], "dtype": "i16", "q": c_q},
                             {"shape": out_shape, "dtype": "i8", "q": h_q}],
                   "attrs": {"activationFunc": 4, "clippingThresCell": cell_clip, "clippingThresProj": 0.0,
                             "cifgEnabled": False, "peepholeEnabled": False, "projectionEnabled": False,
                             "layerNormEnabled": False, "timeMajor": time_major, "inputParams": params}})
    return {"layers": layers, "outputs": ["out"]}, arrays


def synthetic_qlstm(seed: int, cifg: bool, peephole: bool, projection: bool, layer_norm: bool,
                    cell_clip: float = 0.0, projection_clip: float = 0.0) -> tuple[dict, dict]:
    """A QLstm with the given options, batch 2, 5 inputs, 4 cells (3 outputs with projection)."""
    rng = np.random.default_rng(seed)
    batch, n_in, cells = 2, 5, 4
    n_out = 3 if projection else cells
    x_q, h_q, c_q = _q(0.05, -3), _q(0.0078125, 2), _q(2.0 ** -11)
    hidden = (0.00390625, 1) if projection else (0.0078125, 2)
    layers = [{"op": "graph.input", "operands": [], "results": [name], "types": [t], "attrs": {}}
              for name, t in (("x", {"shape": [batch, n_in], "dtype": "i8", "q": x_q}),
                              ("h", {"shape": [batch, n_out], "dtype": "i8", "q": h_q}),
                              ("c", {"shape": [batch, cells], "dtype": "i16", "q": c_q}))]
    arrays = {"input0": rng.integers(-128, 128, (batch, n_in)).astype(np.int8),
              "input1": rng.integers(-128, 128, (batch, n_out)).astype(np.int8),
              "input2": rng.integers(-6000, 6000, (batch, cells)).astype(np.int16)}
    params = []

    def constant(name: str, values: np.ndarray, dtype: str, scale: float) -> None:
        arrays[name] = values
        layers.append({"op": "armnn.Constant", "operands": [], "results": [name],
                       "types": [{"shape": list(values.shape), "dtype": dtype, "q": _q(scale)}], "attrs": {}})
        params.append(name)

    for gate in GATES[1:] if cifg else GATES:
        constant(f"inputTo{gate}Weights", rng.integers(-127, 128, (cells, n_in)).astype(np.int8), "i8", 0.00315)
        constant(f"recurrentTo{gate}Weights", rng.integers(-127, 128, (cells, n_out)).astype(np.int8), "i8", 0.00315)
        if layer_norm:
            constant(BIAS[gate], rng.integers(-4_000_000, 4_000_000, cells).astype(np.int32), "i32", 1e-7)
            constant(f"{gate[0].lower()}{gate[1:]}LayerNormWeights", rng.integers(9000, 24000, cells).astype(np.int16),
                     "i16", 2.0 ** -14)
        else:
            constant(BIAS[gate], rng.integers(-3000, 3000, cells).astype(np.int32), "i32",
                     float(np.float32(0.05) * np.float32(0.00315)))
        if peephole and gate != "Cell":
            constant(f"cellTo{gate}Weights", rng.integers(-6000, 6000, cells).astype(np.int16), "i16", 2.0 ** -14)
    if projection:
        constant("projectionWeights", rng.integers(-127, 128, (n_out, cells)).astype(np.int8), "i8", 0.01)
        constant("projectionBias", rng.integers(-300, 300, n_out).astype(np.int32), "i32",
                 float(np.float32(hidden[0]) * np.float32(0.01)))
    attrs = {"cellClip": cell_clip, "projectionClip": projection_clip, "cifgEnabled": cifg,
             "peepholeEnabled": peephole, "projectionEnabled": projection, "layerNormEnabled": layer_norm,
             "inputIntermediateScale": 0.007, "forgetIntermediateScale": 0.0061, "cellIntermediateScale": 0.007,
             "outputIntermediateScale": 0.0055, "hiddenStateScale": hidden[0], "hiddenStateZeroPoint": hidden[1],
             "inputParams": params}
    attrs = {k: float(np.float32(v)) if isinstance(v, float) else v for k, v in attrs.items()}
    out_t = {"shape": [batch, n_out], "dtype": "i8", "q": h_q}
    layers.append({"op": "armnn.QLstm", "operands": ["x", "h", "c", *params], "results": ["state", "cell", "out"],
                   "types": [out_t, {"shape": [batch, cells], "dtype": "i16", "q": c_q}, out_t], "attrs": attrs})
    return {"layers": layers, "outputs": ["state", "cell", "out"]}, arrays


def synthetic_quantized_lstm(seed: int) -> tuple[dict, dict]:
    """An Android NN QuantizedLstm, batch 3, 6 inputs, 5 cells."""
    rng = np.random.default_rng(seed)
    batch, n_in, cells = 3, 6, 5
    w_scale, w_zp = 0.004, 121
    io_q, c_q = _q(1 / 128, 128), _q(2.0 ** -11)
    layers = [{"op": "graph.input", "operands": [], "results": ["x"],
               "types": [{"shape": [batch, n_in], "dtype": "ui8", "q": io_q}], "attrs": {}},
              {"op": "graph.input", "operands": [], "results": ["h"],
               "types": [{"shape": [batch, cells], "dtype": "ui8", "q": io_q}], "attrs": {}},
              {"op": "graph.input", "operands": [], "results": ["c"],
               "types": [{"shape": [batch, cells], "dtype": "i16", "q": c_q}], "attrs": {}}]
    arrays = {"input0": rng.integers(0, 256, (batch, n_in)).astype(np.uint8),
              "input1": rng.integers(0, 256, (batch, cells)).astype(np.uint8),
              "input2": rng.integers(-20000, 20000, (batch, cells)).astype(np.int16)}
    params = []
    for prefix, width in (("inputTo", n_in), ("recurrentTo", cells)):
        for gate in GATES:
            name = f"{prefix}{gate}Weights"
            arrays[name] = rng.integers(0, 256, (cells, width)).astype(np.uint8)
            layers.append({"op": "armnn.Constant", "operands": [], "results": [name],
                           "types": [{"shape": [cells, width], "dtype": "ui8", "q": _q(w_scale, w_zp)}], "attrs": {}})
            params.append(name)
    for gate in GATES:
        arrays[BIAS[gate]] = rng.integers(-8000, 8000, cells).astype(np.int32)
        layers.append({"op": "armnn.Constant", "operands": [], "results": [BIAS[gate]],
                       "types": [{"shape": [cells], "dtype": "i32", "q": _q(float(np.float32(1 / 128 * w_scale)))}],
                       "attrs": {}})
        params.append(BIAS[gate])
    layers.append({"op": "armnn.QuantizedLstm", "operands": ["x", "c", "h", *params], "results": ["cell", "out"],
                   "types": [{"shape": [batch, cells], "dtype": "i16", "q": c_q},
                             {"shape": [batch, cells], "dtype": "ui8", "q": io_q}],
                   "attrs": {"inputParams": params}})
    return {"layers": layers, "outputs": ["cell", "out"]}, arrays


SYNTHETIC = {
    "synthetic_sequence_lstm_batch_major": lambda: synthetic_sequence_lstm(20, False, 3, -11, 1.5),
    "synthetic_sequence_lstm_time_major": lambda: synthetic_sequence_lstm(21, True, 2, -12, 0.0),
    "synthetic_sequence_lstm_small_weights": lambda: synthetic_sequence_lstm(23, False, 4, -11, 0.0, (0.0002, 0.002)),
    "synthetic_quantized_lstm": lambda: synthetic_quantized_lstm(22),
    "synthetic_qlstm_cifg": lambda: synthetic_qlstm(30, True, False, False, False),
    "synthetic_qlstm_peephole": lambda: synthetic_qlstm(31, False, True, False, False),
    "synthetic_qlstm_projection": lambda: synthetic_qlstm(32, False, False, True, False),
    "synthetic_qlstm_layer_norm": lambda: synthetic_qlstm(33, False, False, False, True),
    "synthetic_qlstm_all": lambda: synthetic_qlstm(34, True, True, True, True),
    "synthetic_qlstm_all_clipped": lambda: synthetic_qlstm(35, True, True, True, True, 0.5, 0.1),
}


def main() -> None:
    litert_python = sys.argv[sys.argv.index("--litert-python") + 1] if "--litert-python" in sys.argv \
        else "/work/litert-venv/bin/python"
    with tempfile.TemporaryDirectory() as tmp:
        jobs = []
        for rel in CORPUS_FILES:
            meta, arrays = dump_corpus_file(rel)
            name = f"{Path(rel).stem}.{Path(rel).parts[1].split('_')[-1]}"  # e.g. qlstm_basic_nolayernorm_qs8.23.08
            jobs.append((name, meta, arrays, Path(tmp)))
        for name, make in SYNTHETIC.items():
            meta, arrays = make()
            (HERE / f"{name}.json").write_text(json.dumps(meta, indent=1) + "\n")
            np.savez(HERE / f"{name}.npz", **arrays)
            jobs.append((name, meta, arrays, Path(tmp)))
        for name, meta, arrays, where in jobs:
            (where / f"{name}.json").write_text(json.dumps(meta))
            np.savez(where / f"{name}.npz", **arrays)
        subprocess.run([litert_python, __file__, "--run", tmp, str(HERE), *[j[0] for j in jobs]], check=True)


# ------------------------------------------------------------------------------ step 2: .tflite on LiteRT
def run_on_litert(src: Path, dst: Path, name: str) -> None:
    import flatbuffers
    from ai_edge_litert import schema_py_generated as S
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    meta = json.loads((src / f"{name}.json").read_text())
    arrays = np.load(src / f"{name}.npz")
    info = {r: t for layer in meta["layers"] for r, t in zip(layer["results"], layer["types"])}
    ttypes = {"i8": S.TensorType.INT8, "ui8": S.TensorType.UINT8, "i16": S.TensorType.INT16, "i32": S.TensorType.INT32}
    model = S.ModelT()
    model.version, model.buffers, model.operatorCodes = 3, [S.BufferT()], []
    sg = S.SubGraphT()
    sg.tensors, sg.operators, sg.inputs, sg.outputs = [], [], [], []
    model.subgraphs = [sg]
    index: dict[str, int] = {}
    feeds: list[tuple[int, np.ndarray]] = []  # tensor, value (graph inputs and LSTM state variables)
    results: list[int] = []  # tensors read after the run, in the Arm NN layer's result order

    def tensor(tname: str, shape, dtype: str, q, data: np.ndarray | None = None, variable: bool = False) -> int:
        t = S.TensorT()
        t.shape, t.type, t.name, t.isVariable = list(shape), ttypes[dtype], tname, variable
        if q is not None:
            t.quantization = S.QuantizationParametersT()
            t.quantization.scale, t.quantization.zeroPoint = [float(s) for s in q[0]], [int(z) for z in q[1]]
        buf = S.BufferT()
        if data is not None:
            buf.data = list(np.ascontiguousarray(data).tobytes())
        model.buffers.append(buf)
        t.buffer = len(model.buffers) - 1
        sg.tensors.append(t)
        return len(sg.tensors) - 1

    def value(v: str) -> int:
        if v not in index:
            t = info[v]
            index[v] = tensor(v, t["shape"], t["dtype"], t["q"], arrays[v] if v in arrays.files else None)
        return index[v]

    def graph_value(v: str) -> np.ndarray | None:
        """The data of a constant or graph input, for a state the LSTM keeps in a variable."""
        if v in arrays.files:
            return arrays[v]
        k = [layer["results"][0] for layer in meta["layers"] if layer["op"] == "graph.input"].index(v)
        return arrays[f"input{k}"]

    def operator(code: int, version: int, inputs, outputs, options_type=0, options=None, intermediates=None):
        codes = [c.builtinCode for c in model.operatorCodes]
        if code not in codes:
            c = S.OperatorCodeT()
            c.builtinCode, c.deprecatedBuiltinCode, c.version = code, min(code, 127), version
            model.operatorCodes.append(c)
            codes.append(code)
        o = S.OperatorT()
        o.opcodeIndex, o.inputs, o.outputs = codes.index(code), inputs, outputs
        o.builtinOptionsType, o.builtinOptions, o.intermediates = options_type, options, intermediates
        sg.operators.append(o)

    tfl_order = ["inputToInputWeights", "inputToForgetWeights", "inputToCellWeights", "inputToOutputWeights",
                 "recurrentToInputWeights", "recurrentToForgetWeights", "recurrentToCellWeights",
                 "recurrentToOutputWeights", "cellToInputWeights", "cellToForgetWeights", "cellToOutputWeights",
                 "inputGateBias", "forgetGateBias", "cellBias", "outputGateBias", "projectionWeights", "projectionBias",
                 "@state", "@cell", "inputLayerNormWeights", "forgetLayerNormWeights", "cellLayerNormWeights",
                 "outputLayerNormWeights"]
    inputs_seen = 0
    for layer in meta["layers"]:
        op, a = layer["op"], layer["attrs"]
        if op == "graph.input":
            if inputs_seen == 0:  # the others are LSTM states (variables in TFLite)
                sg.inputs.append(value(layer["results"][0]))
                feeds.append((index[layer["results"][0]], arrays["input0"]))
            inputs_seen += 1
        elif op in ("armnn.UnidirectionalSequenceLstm", "armnn.QLstm"):
            x, h, c, *ps = layer["operands"]
            by_name = dict(zip(a["inputParams"], ps))
            ins = [value(x)]
            for n in tfl_order:
                if n in ("@state", "@cell"):
                    v = h if n == "@state" else c
                    t = info[v]
                    ins.append(tensor(v + "_var", t["shape"], t["dtype"], t["q"], variable=True))
                    feeds.append((ins[-1], graph_value(v)))
                else:
                    ins.append(value(by_name[n]) if n in by_name else -1)
            out = value(layer["results"][2])
            if op == "armnn.QLstm":
                hidden = _q(a["hiddenStateScale"], a["hiddenStateZeroPoint"])
            else:  # the converter gives the hidden state the output's quantization when there is no projection
                hidden = info[layer["results"][2]]["q"]
            gate_scales = [2.0 ** -12] * 4  # what TFLite uses without layer norm, whatever the tensors say
            if op == "armnn.QLstm" and a["layerNormEnabled"]:
                gate_scales = [a[f"{g}IntermediateScale"] for g in ("input", "forget", "cell", "output")]
            inter = [tensor(f"{out}_gate{k}", [], "i16", _q(scale)) for k, scale in enumerate(gate_scales)]
            inter.append(tensor(f"{out}_hidden", [], "i8", hidden))
            if op == "armnn.QLstm":
                opt = S.LSTMOptionsT()
                opt.fusedActivationFunction, opt.cellClip, opt.projClip = 4, a["cellClip"], a["projectionClip"]
                operator(S.BuiltinOperator.LSTM, 4, ins, [out], S.BuiltinOptions.LSTMOptions, opt, inter)
            else:
                opt = S.UnidirectionalSequenceLSTMOptionsT()
                opt.fusedActivationFunction, opt.cellClip = a["activationFunc"], a["clippingThresCell"]
                opt.projClip, opt.timeMajor = a["clippingThresProj"], a["timeMajor"]
                operator(S.BuiltinOperator.UNIDIRECTIONAL_SEQUENCE_LSTM, 3, ins, [out],
                         S.BuiltinOptions.UnidirectionalSequenceLSTMOptions, opt, inter)
            results[:] = [ins[18], ins[19], out] if op == "armnn.QLstm" else [out]
        elif op == "armnn.QuantizedLstm":  # TFLite's basic LSTM cell, weights [4 * cells, in + out]
            x, c, h, *ps = layer["operands"]
            by_name = dict(zip(a["inputParams"], ps))
            order = ("Input", "Cell", "Forget", "Output")
            w = np.concatenate([np.concatenate([arrays[by_name[f"inputTo{g}Weights"]],
                                                arrays[by_name[f"recurrentTo{g}Weights"]]], axis=1) for g in order])
            b = np.concatenate([arrays[by_name[BIAS[g]]] for g in order])
            wq, bq = info[by_name["inputToInputWeights"]]["q"], info[by_name["inputGateBias"]]["q"]
            (batch, n_in), cells = info[x]["shape"], info[c]["shape"][1]
            n_out = info[h]["shape"][1]
            th, tc = value(h), value(c)
            feeds += [(th, graph_value(h)), (tc, graph_value(c))]
            sg.inputs += [th, tc]
            outs = [value(layer["results"][1]), value(layer["results"][0]),
                    tensor("concat", [batch, n_in + n_out], "ui8", _q(1 / 128, 128)),
                    tensor("activations", [batch, 4 * cells], "i16", _q(2.0 ** -12))]
            opt = S.LSTMOptionsT()
            opt.fusedActivationFunction, opt.kernelType = 4, S.LSTMKernelType.BASIC
            operator(S.BuiltinOperator.LSTM, 2, [value(x), th, tensor("w", w.shape, "ui8", wq, w),
                                                 tensor("b", b.shape, "i32", bq, b), tc], outs,
                     S.BuiltinOptions.LSTMOptions, opt)
            results[:] = [outs[1], outs[0]]
        elif op == "armnn.Reshape":
            shape = a["targetShape"]
            operator(S.BuiltinOperator.RESHAPE, 1, [value(layer["operands"][0]),
                                                    tensor(layer["results"][0] + "_shape", [len(shape)], "i32", None,
                                                           np.array(shape, np.int32))], [value(layer["results"][0])])
            results[:] = [index[layer["results"][0]]]
        elif op == "armnn.FullyConnected":
            operator(S.BuiltinOperator.FULLY_CONNECTED, 4, [value(v) for v in layer["operands"]],
                     [value(layer["results"][0])], S.BuiltinOptions.FullyConnectedOptions, S.FullyConnectedOptionsT())
            results[:] = [index[layer["results"][0]]]
        elif op == "armnn.Activation" and a["activationFunction"] == "Sigmoid":
            operator(S.BuiltinOperator.LOGISTIC, 2, [value(layer["operands"][0])], [value(layer["results"][0])])
            results[:] = [index[layer["results"][0]]]
        elif op != "armnn.Constant":
            raise SystemExit(f"{name}: no TFLite operator for {op}")
    sg.outputs = [results[-1]]
    builder = flatbuffers.Builder(1024)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    interpreter = Interpreter(model_content=bytes(builder.Output()),
                              experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    interpreter.allocate_tensors()
    for t, v in feeds:  # inputs, and the LSTM state variables (TFLite resets them to zero)
        interpreter.set_tensor(t, np.asarray(v).reshape(interpreter.get_tensor(t).shape))
    interpreter.invoke()
    for k, t in enumerate(results):
        np.save(dst / f"{name}.litert.output{k}.npy", interpreter.get_tensor(t))
    print(name, [interpreter.get_tensor(t).shape for t in results])


if __name__ == "__main__":
    if "--run" in sys.argv:
        src, dst, *names = sys.argv[sys.argv.index("--run") + 1:]
        for n in names:
            run_on_litert(Path(src), Path(dst), n)
    else:
        main()
