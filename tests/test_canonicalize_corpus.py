"""canonicalize on the corpus' whole models after legalization: the graph computes the same (the
numpy reference on the corpus' own inputs), and CNNs keep transposes only at their boundary.

Needs the corpus and the `legalize-<format>` passes; skips with the reason when either is missing.
"""
from __future__ import annotations

import numpy as np
import pytest

from conftest import CORPUS, corpus_manifest, requires_corpus
from nn2tosa.ir import verify
from nn2tosa.passes import PassManager, available_passes
from nn2tosa.passes.canonicalize import canonicalize_graph

from nn_reference import evaluate, supported_ops

WHOLE_MODELS = ("armnn/pyarmnn_", "armnn/tflite_", "mps/models/")
CONV_LAYERS = {"Convolution2d", "DepthwiseConvolution2d", "MPSConv2D", "MPSDepthwiseConv2D"}


def whole_float_models() -> list[dict]:
    return [e for e in corpus_manifest()
            if e["file"].startswith(WHOLE_MODELS) and e["tolerance"] in ("fp32", "fp16") and e["input_files"]]


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
    PassManager.from_names(legalize).run(graph)
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
        for got, want in zip(after, before):
            got, want = got.astype(np.float64), want.astype(np.float64)
            bound = 1e-5 if entry["tolerance"] == "fp32" else 1e-2
            assert np.max(np.abs(got - want)) / max(1.0, np.max(np.abs(want))) <= bound
    if CONV_LAYERS & set(entry["histogram"]):  # a CNN: transposes only at the graph boundary
        for n in graph.nodes():
            if graph.op(n) == "nn.transpose":
                assert reads_an_input(graph, n) or feeds_an_output(graph, n), f"inner transpose %{n}"
    if unsupported:
        pytest.skip(f"numbers not checked: no reference for {sorted(unsupported)}")
