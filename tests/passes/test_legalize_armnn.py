"""legalize-armnn on the corpus: every Arm NN file legalizes into nn ops whose meaning, computed by
the independent numpy evaluator (tests/nn_reference.py), matches Arm NN CpuRef's outputs within the
manifest's tolerance class (corpus README); files with layers nn cannot express are reported, all
of them at once. Unit tests of semantics no corpus file exercises are in test_legalize_armnn_units.py.
"""
from __future__ import annotations

import random

import numpy as np
import pytest

from conftest import CORPUS, corpus_manifest, requires_corpus
from corpus_harness import data_path, judge, load_expected
from nn_reference import evaluate

from nn2tosa.diagnostics import InvalidInputError, UnsupportedError
from nn2tosa.frontend import load
from nn2tosa.frontend.armnn.catalogue import layer_kinds
from nn2tosa.ir import INPUT_OP, verify
from nn2tosa.passes import PassManager
from nn2tosa.passes.context import PassContext
from nn2tosa.passes.legalize_armnn import NO_MEANING, RULES

pytestmark = requires_corpus

ARMNN = [e for e in corpus_manifest() if e["format"] == "armnn"]

# Normalization LocalContrast has no computation in Arm NN; the others have no meaning in nn at all.
_LOCAL_CONTRAST = "localcontrast"


def _unsupported_layers(e: dict) -> int:
    """How many layers of the file the pass must report (by the manifest's histogram and name)."""
    n = sum(count for name, count in e["histogram"].items() if name in NO_MEANING)
    return n + (e["histogram"].get("Normalization", 0) if _LOCAL_CONTRAST in e["file"] else 0)


# Arm NN CpuRef's int8 LSTM re-quantizes every partial sum of a gate to the output's 8-bit scale (its
# scratch buffers are encoded in the output's type), which a float computation between one dequantize
# and one quantize does not reproduce (the corpus README: up to 229 LSB from LiteRT as well).
_KNOWN_MISMATCH = {
    "armnn/tflite_23.08/tflm_dtln_noise_suppression.armnn":
        "CpuRef's int8 LSTM quantizes its gate accumulators after every multiply-add (issue 7)",
}

WITH_OUTPUTS = [e for e in ARMNN if e["expected_files"] and not _unsupported_layers(e)]


def _legalized(e: dict, pipeline: str = "legalize-armnn"):
    (graph,) = load(str(CORPUS / e["file"]))
    # CpuRef's integers: what the outputs compared with came from; verified after each pass
    PassManager.from_names(pipeline, context=PassContext("cpuref")).run(graph)
    return graph


def _inputs(e: dict) -> list[np.ndarray]:
    return [np.load(data_path(e, f)) for f in e["input_files"]]


def _check_matches(e: dict, pipeline: str) -> None:
    graph = _legalized(e, pipeline)
    assert all(graph.op(n) == INPUT_OP or graph.op(n).startswith("nn.") for n in graph.nodes())
    j = judge(load_expected(e), evaluate(graph, _inputs(e)), e["tolerance"])
    assert j.ok, "; ".join(j.problems)


def _params(entries: list[dict]) -> list:
    return [pytest.param(e, id=e["file"], marks=[pytest.mark.xfail(reason=_KNOWN_MISMATCH[e["file"]], strict=True)]
                         if e["file"] in _KNOWN_MISMATCH else []) for e in entries]


@pytest.mark.parametrize("e", _params(WITH_OUTPUTS))
def test_legalized_file_computes_what_cpuref_computed(e: dict) -> None:
    _check_matches(e, "legalize-armnn")


@pytest.mark.parametrize("e", _params(WITH_OUTPUTS))
def test_legalized_and_canonicalized_file_still_matches(e: dict) -> None:
    _check_matches(e, "legalize-armnn,canonicalize")


@pytest.mark.parametrize("e", [pytest.param(e, id=e["file"]) for e in ARMNN if _unsupported_layers(e)])
def test_layers_without_meaning_are_reported_together(e: dict) -> None:
    (graph,) = load(str(CORPUS / e["file"]))
    with pytest.raises(UnsupportedError) as info:
        PassManager.from_names("legalize-armnn").run(graph)
    items = info.value.items
    assert len(items) == _unsupported_layers(e)
    assert all(i.where.startswith("layer ") and i.why for i in items)
    assert {i.what for i in items} <= set(NO_MEANING) | {"Normalization"}


@pytest.mark.parametrize("e", [pytest.param(e, id=e["file"]) for e in ARMNN
                               if not e["expected_files"] and not _unsupported_layers(e)])
def test_files_cpuref_cannot_run_still_legalize(e: dict) -> None:
    graph = _legalized(e)
    verify(graph)
    assert not any(graph.op(n).startswith("armnn.") for n in graph.nodes())


def test_every_layer_type_of_the_schema_has_a_rule_or_a_reason() -> None:
    names = {k.name for k in layer_kinds().values() if not k.bindable}
    assert len(names) == 71  # 73 layer types, Input and Output are graph inputs/outputs
    assert names <= set(RULES) | set(NO_MEANING)
    assert not set(RULES) & set(NO_MEANING)


def test_constants_are_not_copied() -> None:
    """nn.constant holds the very array the frontend mapped from the file."""
    e = next(e for e in ARMNN if e["file"].endswith("perlayer_23.08/conv2d_nhwc_k3s1_same_bias_f32.armnn"))
    (graph,) = load(str(CORPUS / e["file"]))
    before = [graph.attrs(n)["value"] for n in graph.nodes() if graph.op(n) == "armnn.Constant"]
    PassManager.from_names("legalize-armnn").run(graph)
    after = [graph.attrs(n)["value"] for n in graph.nodes() if graph.op(n) == "nn.constant"]
    assert len(after) == len(before) == 2
    assert all(any(a is b for b in before) for a in after)


def test_every_op_keeps_its_layers_location() -> None:
    e = next(e for e in ARMNN if e["file"].endswith("perlayer_23.08/lstm_projection_peephole_clip_f32.armnn"))
    (graph,) = load(str(CORPUS / e["file"]))
    (lstm,) = [n for n in graph.nodes() if graph.op(n) == "armnn.Lstm"]
    lstm_loc = graph.loc(lstm)
    PassManager.from_names("legalize-armnn").run(graph)
    ops = [n for n in graph.nodes() if graph.op(n) != INPUT_OP]
    assert all(graph.loc(n) is not None and graph.loc(n).detail.startswith("layer ") for n in ops)
    assert sum(graph.loc(n) == lstm_loc for n in ops) > 20  # the unrolled cell, all at the LSTM layer


def test_quantized_types_are_kept() -> None:
    """A quantized conv legalizes to an nn.conv2d with the file's quantized types (per-axis weights
    included); nothing is dequantized."""
    e = next(e for e in ARMNN if e["file"].endswith("perlayer_23.08/conv2d_nhwc_k3s1_perchannel_qu8.armnn"))
    (graph,) = load(str(CORPUS / e["file"]))
    (conv,) = [n for n in graph.nodes() if graph.op(n) == "armnn.Convolution2d"]
    types = [graph.type_of(v) for v in graph.operands(conv)] + graph.types(conv)
    PassManager.from_names("legalize-armnn").run(graph)
    (nn_conv,) = [n for n in graph.nodes() if graph.op(n) == "nn.conv2d"]
    assert [graph.type_of(v) for v in graph.operands(nn_conv)] + graph.types(nn_conv) == types
    assert types[1].quant.axis == 0 and len(types[1].quant.scales) > 1
    assert not {"nn.dequantize", "nn.quantize"} & set(graph.histogram())


def test_per_axis_depthwise_with_multiplier_becomes_grouped_conv() -> None:
    """[1, H, W, I*M] weights with one scale per output channel cannot keep one quantization axis as
    [H, W, I, M]; the equivalent grouped convolution keeps it on axis 0."""
    e = next(e for e in ARMNN if e["file"].endswith("perlayer_23.08/depthwiseconv2d_nhwc_k3s1_m2_perchannel_qu8.armnn"))
    graph = _legalized(e)
    (conv,) = [n for n in graph.nodes() if graph.op(n) == "nn.conv2d"]
    weights = graph.type_of(graph.operand(conv, 1))
    assert graph.attrs(conv)["groups"] == 3 and weights.shape == (6, 3, 3, 1) and weights.quant.axis == 0


def test_nchw_layers_are_wrapped_in_transposes_that_canonicalize_cancels() -> None:
    e = next(e for e in ARMNN if e["file"].endswith("perlayer_23.08/conv2d_nchw_k3s1_same_bias_f32.armnn"))
    graph = _legalized(e)
    assert graph.histogram()["nn.transpose"] == 3  # input, weights, result
    PassManager.from_names("canonicalize").run(graph)
    assert graph.histogram()["nn.transpose"] == 2  # the weights' one folded; the boundary ones stay


def _mutated(graph, rng: random.Random) -> None:
    """Damage one layer the way a corrupt or hand-made file could: an integer or list attribute
    out of range, or an output shape that contradicts the layer."""
    layers = [n for n in graph.nodes() if graph.op(n).startswith("armnn.") and graph.op(n) != "armnn.Constant"]
    node = rng.choice(layers)
    attrs = graph.attrs(node)
    ints = [k for k, v in attrs.items() if isinstance(v, int) and not isinstance(v, bool)]
    lists = [k for k, v in attrs.items() if isinstance(v, list) and v and all(isinstance(x, int) for x in v)]
    roll = rng.random()
    if ints and roll < 0.45:
        attrs[rng.choice(ints)] = rng.choice([0, -1, 7, 1000, 2 ** 31 - 1, -(2 ** 31)])
    elif lists and roll < 0.8:
        key = rng.choice(lists)
        values = list(attrs[key])
        values[rng.randrange(len(values))] = rng.choice([0, -1, 5, 1000])
        attrs[key] = values[:-1] if rng.random() < 0.3 else values
    elif graph.types(node)[0].rank:
        t = graph.types(node)[0]
        shape = list(t.shape)
        shape[rng.randrange(len(shape))] += rng.choice([1, 5])
        graph.types(node)[0] = t.with_shape(shape)


def test_damaged_layers_are_reported_never_crash() -> None:
    """1,000 random damages to one layer of a file per layer type: the pass legalizes, or raises
    InvalidInputError / UnsupportedError naming the layer; no other exception escapes."""
    one_per_type = {}
    for e in ARMNN:
        for name in set(e["histogram"]) - {"Input", "Output", "Constant"}:
            one_per_type.setdefault(name, e["file"])
    files = sorted(set(one_per_type.values()))
    rng = random.Random(20240607)
    outcomes = {"legalized": 0, "invalid": 0, "unsupported": 0}
    for trial in range(1000):
        (graph,) = load(str(CORPUS / files[trial % len(files)]))
        _mutated(graph, rng)
        try:
            PassManager.from_names("legalize-armnn").run(graph)
            outcomes["legalized"] += 1
        except InvalidInputError as e:
            assert e.where and e.where.startswith("layer "), str(e)
            outcomes["invalid"] += 1
        except UnsupportedError:
            outcomes["unsupported"] += 1
    assert outcomes["invalid"] > 100 and outcomes["legalized"] > 100, outcomes
