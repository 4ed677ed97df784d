"""legalize-mps on every MPS payload of the corpus, judged by the numpy reference evaluator.

For each payload with expected outputs (PyTorch's, recorded by the corpus): read it, legalize (and
legalize + canonicalize), evaluate the nn graph with tests/nn_reference.py on the corpus inputs and
compare with the expected outputs under the manifest's tolerance class. Payloads without expected
outputs (perop/eager_mismatch: the backend serialized something other than what PyTorch computes)
must legalize too, and compute what the file says: the corpus' own independent interpreter of the
payloads measured how far that is from PyTorch (COVERAGE.md, "Eval failures"), and the legalized
graph must land at the same distance.

`PYTHONPATH=tests python tests/passes/test_legalize_mps_corpus.py` prints the per-node-type table (files matched / total).
"""
from __future__ import annotations

import re
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from conftest import CORPUS, corpus_manifest, requires_corpus
from corpus_harness import data_path, judge
from nn2tosa.frontend import load
from nn2tosa.frontend.mps.dialect import NODE_UNION
from nn2tosa.passes import PassManager
from nn2tosa.passes.legalize_mps import RULES

from nn_reference import evaluate

MPS = [e for e in corpus_manifest() if e["format"] == "mps"]
WITH_OUTPUTS = [e for e in MPS if e["expected_files"]]
WITHOUT_OUTPUTS = [e for e in MPS if not e["expected_files"]]


def legalized(entry: dict, pipeline: str):
    (graph,) = load(CORPUS / entry["file"])
    PassManager.from_names(pipeline).run(graph)  # verifies after each pass
    leftover = {graph.op(n) for n in graph.nodes() if graph.op(n).startswith("mps.")}
    assert not leftover, leftover
    return graph


def outputs_of(entry: dict, pipeline: str) -> list[np.ndarray]:
    graph = legalized(entry, pipeline)
    return evaluate(graph, [np.load(data_path(entry, f)) for f in entry["input_files"]])


@requires_corpus
@pytest.mark.parametrize("pipeline", ["legalize-mps", "legalize-mps,canonicalize"])
@pytest.mark.parametrize("entry", WITH_OUTPUTS, ids=lambda e: e["file"])
def test_payload_computes_pytorch_outputs(entry, pipeline):
    expected = [np.load(data_path(entry, f)) for f in entry["expected_files"]]
    verdict = judge(expected, outputs_of(entry, pipeline), entry["tolerance"])
    assert verdict.ok, verdict.problems


def coverage_distances() -> dict[str, float]:
    """COVERAGE.md's "Eval failures": payload name -> max |file semantics - PyTorch| its interpreter measured."""
    text = (CORPUS / "mps" / "perop" / "COVERAGE.md").read_text()
    return {m[1]: float(m[2]) for m in re.finditer(r"^- (\S+)\.mpsgraph: max\|diff\|=\[([0-9.e+-]+)\]", text, re.M)}


@requires_corpus
@pytest.mark.parametrize("entry", WITHOUT_OUTPUTS, ids=lambda e: e["file"])
def test_eager_mismatch_payload_computes_what_the_file_says(entry):
    """The distance to PyTorch's output (.eager0.npy) is the one the corpus measured for the file's own
    semantics: alpha / beta dropped, casts dropped, accumulate ignored. The ConvTranspose2d payload
    (serialized as a forward MPSConv2D the runtime cannot run) has no such figure; its declared result
    is the transposed convolution's, which is what it is converted to, so it matches PyTorch."""
    stem = Path(entry["file"]).name.removesuffix(".mpsgraph")
    (got,) = outputs_of(entry, "legalize-mps")
    eager = np.load(data_path(entry, f"{stem}.eager0.npy"))
    distance = float(np.max(np.abs(got.astype(np.float64) - eager.astype(np.float64))))
    measured = coverage_distances().get(stem)
    if measured is None:
        assert stem == "op_conv_transpose2d_fp32"
        assert distance <= 1e-4 * max(1.0, float(np.max(np.abs(eager))))
    else:
        assert distance == pytest.approx(measured, rel=1e-5, abs=1e-6)


def test_every_union_member_has_a_rule():
    """All 90 MPSNodeUnion members: the 87 the corpus has and MPSMin, MPSMax, MPSAtan2."""
    assert {m.name for m in NODE_UNION.members} - set(RULES) == set()


# ------------------------------------------------------------------------------ the per-node-type table
def node_type_table() -> dict[str, tuple[int, int]]:
    """Node type -> (payloads containing it that match their expected outputs, payloads containing it)."""
    matched, total = Counter(), Counter()
    for entry in WITH_OUTPUTS:
        expected = [np.load(data_path(entry, f)) for f in entry["expected_files"]]
        ok = judge(expected, outputs_of(entry, "legalize-mps"), entry["tolerance"]).ok
        for member in entry["histogram"]:
            total[member] += 1
            matched[member] += ok
    return {m: (matched[m], total[m]) for m in sorted(total)}


if __name__ == "__main__":
    if not MPS:
        sys.exit(f"corpus not found at {CORPUS}")
    table = node_type_table()
    print("| node type | files matched / total |\n| --- | --- |")
    for member, (ok, n) in table.items():
        print(f"| {member} | {ok} / {n} |")
    print(f"\npayloads with expected outputs: {len(WITH_OUTPUTS)}; without (legalized only): {len(WITHOUT_OUTPUTS)}")


# ------------------------------------------------------------------------------ hostile variations
def _mutate(graph, rng) -> None:
    """Change one field of one node at random: an attribute (integers to odd values, floats to NaN or
    inf, lists edited, strings replaced, booleans flipped) or a declared result shape."""
    import math

    from nn2tosa.ir import TensorType

    nodes = [n for n in graph.nodes() if graph.op(n).startswith("mps.") and graph.op(n) != "mps.constant"]
    node = rng.choice(nodes)
    attrs = graph.attrs(node)
    keys = sorted(k for k in attrs if not k.endswith("SegmentSizes") and not k.startswith("absent_"))
    if keys and rng.random() < 0.7:
        key = rng.choice(keys)
        value = attrs[key]
        if isinstance(value, bool):
            attrs[key] = not value
        elif isinstance(value, int):
            attrs[key] = rng.choice([-5, -1, 0, 1, 2, 3, 1 << 40])
        elif isinstance(value, float):
            attrs[key] = rng.choice([math.nan, math.inf, -1.0, 0.0, 1e30])
        elif isinstance(value, str):
            attrs[key] = rng.choice(["", "floor", "mps_data_type_uint4", "mps_data_type_bool", "nonsense"])
        elif isinstance(value, list):
            edited = list(value)
            if edited and rng.random() < 0.5:
                edited[rng.randrange(len(edited))] = rng.choice([-7, -1, 0, 1, 5, 1 << 40])
            elif edited:
                edited.pop()
            else:
                edited.append(3)
            attrs[key] = edited
        return
    types = graph.types(node)
    i = rng.randrange(len(types))
    shape = list(types[i].shape)
    if shape and rng.random() < 0.7:
        shape[rng.randrange(len(shape))] = rng.choice([0, 1, 3, 1 << 40])
    else:
        shape.append(2)
    types[i] = TensorType(tuple(shape), types[i].dtype)


@requires_corpus
def test_mutated_payloads_raise_only_our_errors():
    """Seeded random edits of every corpus payload's nodes: legalization either succeeds (and the result
    verifies) or reports InvalidInputError / UnsupportedError; never another exception, never a huge
    allocation."""
    import random

    from nn2tosa.diagnostics import InvalidInputError, UnsupportedError

    rng = random.Random(5)
    outcomes = Counter()
    for entry in MPS:
        for _ in range(3):
            (graph,) = load(CORPUS / entry["file"])
            _mutate(graph, rng)
            try:
                PassManager.from_names("legalize-mps").run(graph)
                outcomes["legalized"] += 1
            except (InvalidInputError, UnsupportedError) as e:
                outcomes[type(e).__name__] += 1
    assert outcomes["InvalidInputError"] and outcomes["legalized"], outcomes
