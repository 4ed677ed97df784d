"""canonicalize on the corpus after legalization: the graph computes the same (the numpy reference
on the corpus' own inputs, before and after), whole models still give the source runtime's outputs,
and CNNs keep transposes only at their boundary.

Needs the corpus and the `legalize-<format>` passes; skips with the reason when either is missing.
"""
from __future__ import annotations

import numpy as np
import pytest

from conftest import CORPUS, corpus_manifest, requires_corpus
from nn2tosa.diagnostics import UnsupportedError
from nn2tosa.ir import verify
from nn2tosa.passes import PassManager, available_passes
from nn2tosa.passes.canonicalize import canonicalize_graph

from nn_reference import evaluate, supported_ops

WHOLE_MODELS = ("armnn/pyarmnn_", "armnn/tflite_", "mps/models/")
CONV_LAYERS = {"Convolution2d", "DepthwiseConvolution2d", "MPSConv2D", "MPSDepthwiseConv2D"}


def whole_float_models() -> list[dict]:
    return [e for e in corpus_manifest()
            if e["file"].startswith(WHOLE_MODELS) and e["tolerance"] in ("fp32", "fp16") and e["input_files"]]


def sampled_small_models() -> list[dict]:
    """Every fourth per-layer / per-op file that has inputs (a deterministic sample: the legalization
    tests cover them all; this one is about canonicalize keeping their numbers)."""
    small = [e for e in corpus_manifest() if not e["file"].startswith(WHOLE_MODELS) and e["input_files"]]
    return small[::4]


def relative_error(got: np.ndarray, want: np.ndarray) -> float:
    got, want = got.astype(np.float64), want.astype(np.float64)
    if not got.size:
        return 0.0
    if not np.array_equal(np.isnan(got), np.isnan(want)):
        return float("inf")
    return float(np.nanmax(np.abs(got - want)) / max(1.0, np.nanmax(np.abs(want))))


def assert_close(got: list[np.ndarray], want: list[np.ndarray], float_bound: float, int_bound: int = 0) -> None:
    for i, (a, b) in enumerate(zip(got, want)):
        if b.dtype.kind == "f":
            assert relative_error(a, b) <= float_bound, f"output {i}: {relative_error(a, b)}"
        elif a.size:
            assert np.max(np.abs(a.astype(np.int64) - b.astype(np.int64))) <= int_bound, f"output {i}"


# a boundary transpose may sit behind the input's cast (fp16 models) or in front of the output's
PER_ELEMENT = {"nn.cast", "nn.quantize", "nn.dequantize"}


def reads_an_input(graph, node: int) -> bool:
    v = graph.operands(node)[0]
    while graph.op(v.node) in PER_ELEMENT:
        v = graph.operands(v.node)[0]
    return v.node in graph.inputs


def feeds_an_output(graph, node: int) -> bool:
    outputs = {o.value.node for o in graph.outputs}
    while node not in outputs:
        users = graph.users(graph.results(node)[0])
        if len(users) != 1 or graph.op(users[0].node) not in PER_ELEMENT:
            return False
        node = users[0].node
    return True


def legalized(entry: dict):
    from nn2tosa.frontend import load

    legalize = f"legalize-{entry['format']}"
    if legalize not in available_passes():
        pytest.skip(f"{legalize} is not registered yet")
    graphs = load(CORPUS / entry["file"])
    if len(graphs) != 1:
        pytest.skip("multi-partition file")
    graph = graphs[0]
    try:
        PassManager.from_names(legalize).run(graph)
    except UnsupportedError as e:
        pytest.skip(f"not legalized: {e}")
    return graph


@requires_corpus
@pytest.mark.parametrize("entry", whole_float_models(), ids=lambda e: e["file"])
def test_corpus_model_keeps_its_numbers_and_boundary_transposes(entry):
    graph = legalized(entry)
    unsupported = {graph.op(n) for n in graph.nodes()} - supported_ops() - {"graph.input"}
    inputs = [np.load((CORPUS / entry["file"]).parent / f) for f in entry["input_files"]]
    before = None if unsupported else evaluate(graph, inputs)
    canonicalize_graph(graph)
    verify(graph)
    if before is not None:
        after = evaluate(graph, inputs)
        assert_close(after, before, 1e-5 if entry["tolerance"] == "fp32" else 1e-2)
        expected = [np.load((CORPUS / entry["file"]).parent / f) for f in entry["expected_files"]]
        assert_close([a.reshape(b.shape) for a, b in zip(after, expected)], expected,
                     1e-4 if entry["tolerance"] == "fp32" else 3e-2)  # the corpus' own tolerance classes
    if CONV_LAYERS & set(entry["histogram"]):  # a CNN: transposes only at the graph boundary
        for n in graph.nodes():
            if graph.op(n) == "nn.transpose":
                assert reads_an_input(graph, n) or feeds_an_output(graph, n), f"inner transpose %{n}"
    if unsupported:
        pytest.skip(f"numbers not checked: no reference for {sorted(unsupported)}")


@requires_corpus
@pytest.mark.parametrize("entry", sampled_small_models(), ids=lambda e: e["file"])
def test_corpus_layer_keeps_its_numbers(entry):
    graph = legalized(entry)
    unsupported = {graph.op(n) for n in graph.nodes()} - supported_ops() - {"graph.input"}
    if unsupported:
        pytest.skip(f"no reference for {sorted(unsupported)}")
    inputs = [np.load((CORPUS / entry["file"]).parent / f) for f in entry["input_files"]]
    before = evaluate(graph, inputs)
    canonicalize_graph(graph)
    verify(graph)
    # folding batch norms or scales into weights rounds once more, as do x*x*x for pow(x, 3) (passes/power.py):
    # fp16 results (or fp32 results of fp16 arithmetic) may move by an ulp or so; quantized results may cross
    # a rounding boundary by one
    fp16 = any(a.dtype == np.float16 for a in before) or entry["tolerance"] == "fp16"
    assert_close(evaluate(graph, inputs), before, 2e-3 if fp16 else 1e-5, 1 if entry["tolerance"] == "quantized" else 0)
