"""The integer LSTM cells in integer TOSA (lowering/rules/recurrent.py), judged by LiteRT:

- int8 UnidirectionalSequenceLstm and QLstm under the default semantics (litert) compute TFLite's
  integer LSTM kernel, QuantizedLstm Android NN's QUANTIZED_16BIT_LSTM (TFLite's uint8 LSTM cell);
- the expected integers are LiteRT 2.3's (reference kernels) on the same layers written as .tflite
  files (tests/data/lstm, made by tests/data/lstm/make_litert_refs.py): the corpus' files and small
  synthetic layers (zero points, several time steps, batch and time major, cell clipping);
- the numpy models of the kernels (tests/lstm_kernels.py) agree with LiteRT too, and with the TOSA
  graphs on random inputs; gemmlowp's 16-bit logistic and tanh, which the lowering tabulates, agree
  with the scalar model's.

QuantizedLstm is Android NN's operation, whose reference (QuantizedLSTM.cpp, TFLite's reference
LstmCell<4>) rounds the gate accumulators with MultiplyByQuantizedMultiplier; LiteRT runs its optimized
uint8 cell, whose fully connected part (ruy) rounds a negative exact half of the last right shift up:
on the synthetic layer that changes 2 of 15 cell states by one, which the model with that rounding
reproduces (the corpus files have no such half).
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from conftest import CORPUS, requires_corpus
from corpus_harness import entries, load_inputs, run_reference
from lstm_kernels import android_quantized_lstm_step, logistic16, tanh16, tflite_lstm_step

from nn2tosa.api import convert
from nn2tosa.ir import Graph, Loc, Quant, TensorType
from nn2tosa.lowering.flatbuffer_emitter import build_flatbuffer
from nn2tosa.lowering.fixed_point.tflite import gemmlowp_logistic16, gemmlowp_tanh16

DATA = Path(__file__).parents[1] / "data" / "lstm"


def _litert(name: str) -> list[np.ndarray]:
    files = sorted(DATA.glob(f"{name}.litert.output*.npy"))
    assert files, f"no LiteRT outputs for {name} in {DATA}"
    return [np.load(f) for f in files]


def _run(result, inputs: list[np.ndarray]) -> list[np.ndarray]:
    outputs, status = run_reference(bytes(build_flatbuffer(result.graph)), inputs)
    assert status == "TOSA_VALID"
    return outputs


def _assert_exact(got: list[np.ndarray], want: list[np.ndarray]) -> None:
    for have, expected in zip(got, want, strict=True):
        expected = np.asarray(expected)
        have = np.asarray(have).reshape(expected.shape)
        if have.dtype != expected.dtype and have.dtype.itemsize == expected.dtype.itemsize:
            have = have.view(expected.dtype)  # uint8 data travels as the same bits in int8
        diff = np.abs(have.astype(np.int64) - expected.astype(np.int64))
        assert diff.max() == 0, f"{int((diff > 0).sum())} of {diff.size} elements differ (max {int(diff.max())})"


# ------------------------------------------------------------------------------ gemmlowp's fixed point
@pytest.mark.parametrize("integer_bits", [0, 3, 4, 6])
def test_gemmlowp_tables_are_the_scalar_models(integer_bits):
    inputs = np.concatenate([np.arange(-32768, 32768, 37), [-32768, -1, 0, 1, 32767]])
    for table, model in ((gemmlowp_logistic16, logistic16), (gemmlowp_tanh16, tanh16)):
        want = np.array([model(int(v), integer_bits) for v in inputs])
        np.testing.assert_array_equal(table(inputs, integer_bits), want)


# ------------------------------------------------------------------------------ the corpus
CORPUS_FILES = {"armnn/tflite_23.08/tflm_dtln_noise_suppression.armnn": "tflm_dtln_noise_suppression.23.08",
                "armnn/perlayer_20.08/qlstm_basic_nolayernorm_qs8.armnn": "qlstm_basic_nolayernorm_qs8.20.08",
                "armnn/perlayer_23.08/qlstm_basic_nolayernorm_qs8.armnn": "qlstm_basic_nolayernorm_qs8.23.08",
                "armnn/perlayer_20.08/qlstm_cifg_peephole_projection_layernorm_qs8.armnn":
                    "qlstm_cifg_peephole_projection_layernorm_qs8.20.08",
                "armnn/perlayer_23.08/qlstm_cifg_peephole_projection_layernorm_qs8.armnn":
                    "qlstm_cifg_peephole_projection_layernorm_qs8.23.08",
                "armnn/perlayer_20.08/noexec/quantizedlstm_qu8.armnn": "quantizedlstm_qu8.20.08",
                "armnn/perlayer_23.08/noexec/quantizedlstm_qu8.armnn": "quantizedlstm_qu8.23.08"}


@requires_corpus
@pytest.mark.parametrize("file", list(CORPUS_FILES))
def test_corpus_file_gives_litert_integers_in_pro_int(file):
    (e,) = entries(lambda e: e["file"] == file)
    result = convert(str(CORPUS / file))
    assert "pro_fp" not in result.target.profiles, result.target.reasons  # integers only
    _assert_exact(_run(result, load_inputs(e)), _litert(CORPUS_FILES[file]))


# ------------------------------------------------------------------------------ synthetic layers
def _synthetic(name: str) -> tuple[Graph, list[np.ndarray], dict]:
    """The Arm NN graph of a layer list make_litert_refs.py wrote, its inputs and its arrays."""
    meta = json.loads((DATA / f"{name}.json").read_text())
    arrays = dict(np.load(DATA / f"{name}.npz"))
    g, values = Graph(), {}
    g.meta["format"] = "armnn"

    def t(spec: dict) -> TensorType:
        q = spec["q"]
        return TensorType(tuple(spec["shape"]), spec["dtype"], Quant(tuple(q[0]), tuple(q[1])))

    for layer in meta["layers"]:
        if layer["op"] == "graph.input":
            values[layer["results"][0]] = g.add_input(t(layer["types"][0]), layer["results"][0])
            continue
        attrs = {"value": arrays[layer["results"][0]]} if layer["op"] == "armnn.Constant" else layer["attrs"]
        node = g.add_op(layer["op"], [values[v] for v in layer["operands"]], [t(s) for s in layer["types"]], attrs,
                        Loc(layer["results"][0]))
        values.update(zip(layer["results"], g.results(node)))
    for name_ in meta["outputs"]:
        g.add_output(values[name_], name_)
    return g, [arrays[f"input{k}"] for k in range(3)], arrays


SEQUENCES = ["synthetic_sequence_lstm_batch_major", "synthetic_sequence_lstm_time_major",
             "synthetic_sequence_lstm_small_weights"]
# QLstm with each option, and all of them: the projected ones show two things LiteRT does that the
# kernel's arithmetic alone does not say (the numpy model has both): the peephole product walks n_output
# elements of the flat cell state (a projection makes that fewer than n_cell), and a projected hidden
# state holds MBQM - zp, its projection adding zp rowsum(W_p) (saturated hidden values show it)
QLSTMS = ["synthetic_qlstm_cifg", "synthetic_qlstm_peephole", "synthetic_qlstm_projection",
          "synthetic_qlstm_layer_norm", "synthetic_qlstm_all", "synthetic_qlstm_all_clipped"]


@pytest.mark.parametrize("name", SEQUENCES + QLSTMS)
def test_synthetic_layer_gives_litert_integers(name):
    graph, inputs, _ = _synthetic(name)
    _assert_exact(_run(convert(graph), inputs), _litert(name))


def _tflite_model(name: str, inputs: list[np.ndarray], arrays: dict) -> list[np.ndarray]:
    """tests/lstm_kernels.py's TFLite cell on the synthetic layer: stepped along the sequence of an
    UnidirectionalSequenceLstm (its output), one step of a QLstm (output state, cell state, output)."""
    meta = json.loads((DATA / f"{name}.json").read_text())
    layer = meta["layers"][-1]
    a = layer["attrs"]
    quant = {r: (s["q"][0][0], s["q"][1][0]) for lyr in meta["layers"] for r, s in zip(lyr["results"], lyr["types"])}
    q = {"x": quant["x"], "h": quant["h"], "c": quant["c"], **{n: quant[n] for n in a["inputParams"]}}
    params = {n: arrays[n] for n in a["inputParams"]}
    x, h, c = inputs
    if layer["op"] == "armnn.QLstm":
        h, c = tflite_lstm_step(x, h, c, params, q, a["cellClip"], (a["hiddenStateScale"], a["hiddenStateZeroPoint"]),
                                a["projectionClip"], [a[f"{g}IntermediateScale"] for g in ("input", "forget", "cell",
                                                                                               "output")])
        return [h, c, h]
    seq = x if a["timeMajor"] else x.transpose(1, 0, 2)
    outs = []
    for step in seq:
        h, c = tflite_lstm_step(step, h, c, params, q, a["clippingThresCell"])
        outs.append(h)
    out = np.stack(outs)
    return [out if a["timeMajor"] else out.transpose(1, 0, 2)]


@pytest.mark.parametrize("name", SEQUENCES + QLSTMS)
def test_tflite_cell_model_is_litert_and_the_graph_on_random_inputs(name):
    graph, inputs, arrays = _synthetic(name)
    _assert_exact(_tflite_model(name, inputs, arrays), _litert(name))
    result = convert(graph)
    rng = np.random.default_rng(5)
    for _ in range(3):
        x = rng.integers(-128, 128, inputs[0].shape).astype(np.int8)
        h = rng.integers(-128, 128, inputs[1].shape).astype(np.int8)
        c = rng.integers(-32768, 32768, inputs[2].shape).astype(np.int16)
        _assert_exact(_run(result, [x, h, c]), _tflite_model(name, [x, h, c], arrays))


def test_android_model_is_litert_and_the_graph_on_random_inputs():
    name = "synthetic_quantized_lstm"
    graph, inputs, arrays = _synthetic(name)
    params = {k: v for k, v in arrays.items() if k not in ("input0", "input1", "input2")}

    def model(x, h, c, ruy_rounding=False):
        return android_quantized_lstm_step(x, c, h, params, 121, float(np.float32(1 / 128 * 0.004)), ruy_rounding)

    assert all(np.array_equal(a, b) for a, b in zip(model(*inputs, ruy_rounding=True), _litert(name)))
    want = model(*inputs)
    assert int((want[0] != _litert(name)[0]).sum()) == 2 and np.abs(want[0] - _litert(name)[0]).max() == 1
    result = convert(graph)
    _assert_exact(_run(result, inputs), list(want))
    rng = np.random.default_rng(6)
    for _ in range(3):
        x = rng.integers(0, 256, inputs[0].shape).astype(np.uint8)
        h = rng.integers(0, 256, inputs[1].shape).astype(np.uint8)
        c = rng.integers(-32768, 32768, inputs[2].shape).astype(np.int16)
        _assert_exact(_run(result, [x, h, c]), list(model(x, h, c)))


def test_cpuref_semantics_keeps_the_cpuref_lowering_of_an_int8_lstm():
    """Under --semantics cpuref the int8 LSTM is CpuRef's float computation, not TFLite's kernel."""
    graph, _, _ = _synthetic("synthetic_sequence_lstm_batch_major")
    ops = {graph_op for r in (convert(graph, semantics="cpuref"),) for graph_op in r.graph.histogram()}
    assert "tosa.gather" not in ops and "tosa.matmul" not in ops
