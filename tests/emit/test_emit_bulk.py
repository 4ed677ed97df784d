"""The emitters move constant data in bulk: no Python step per element, whatever the size.

Counted, not timed: the flatbuffers Builder calls made for a 4-element and a 4-million-element
constant must be the same number, and the MLIR module must hold the large constant as a
dense_resource blob (built from the numpy buffer) rather than a printed list.
"""
from __future__ import annotations

from collections import Counter

import flatbuffers
import numpy as np
import pytest

from nn2tosa.ir import Builder, Graph, TensorType
from nn2tosa.lowering.flatbuffer_emitter import build_flatbuffer, write_flatbuffer
from nn2tosa.lowering.mlir_emitter import module_text, to_mlir
from nn2tosa.schemas import tosa_generated as fb

# every Builder method that writes a scalar: a per-element writer would call one per element
PER_VALUE_METHODS = sorted(
    name for name in dir(flatbuffers.Builder)
    if name.startswith(("Prepend", "Place")) or name in ("Pad", "CreateNumpyVector", "CreateByteVector")
)


def graph_with_constant(elements: int) -> Graph:
    g = Graph()
    b = Builder(g, constant_dialect="tosa")
    x = g.add_input(TensorType((1, elements), "f32"), "x")
    w = b.constant(np.arange(elements, dtype=np.float32).reshape(1, elements))
    g.add_output(b.op("tosa.add", [x, w], types=[TensorType((1, elements), "f32")]), "y")
    return g


def builder_calls(monkeypatch: pytest.MonkeyPatch, emit) -> Counter:
    calls: Counter = Counter()
    for name in PER_VALUE_METHODS:
        original = getattr(flatbuffers.Builder, name)

        def counting(self, *args, _name=name, _original=original, **kwargs):
            calls[_name] += 1
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(flatbuffers.Builder, name, counting)
    emit()
    monkeypatch.undo()
    return calls


def test_flatbuffer_writer_has_no_per_element_path(monkeypatch, tmp_path):
    small, large = graph_with_constant(4), graph_with_constant(4_000_000)
    small_calls = builder_calls(monkeypatch, lambda: build_flatbuffer(small))
    large_calls = builder_calls(monkeypatch, lambda: build_flatbuffer(large))
    assert sum(small_calls.values()) > 0  # the counting works
    assert large_calls == small_calls
    streamed_calls = builder_calls(monkeypatch, lambda: write_flatbuffer(large, tmp_path / "large.tosa"))
    assert streamed_calls == small_calls
    # and the data arrived, in place, in both the in-memory and the streamed file
    data = bytes(build_flatbuffer(large))
    assert (tmp_path / "large.tosa").read_bytes() == data
    block = fb.TosaGraph.GetRootAs(data, 0).Regions(0).Blocks(0)
    tensors = [block.Tensors(i) for i in range(block.TensorsLength())]
    const = next(t for t in tensors if t.DataLength())
    np.testing.assert_array_equal(const.DataAsNumpy().view("<f4"), np.arange(4_000_000, dtype=np.float32))


def test_mlir_module_holds_large_constants_as_resource_blobs():
    module = to_mlir(graph_with_constant(100_000))
    text = module_text(module, elide_constants=True)
    assert "dense_resource<" in text
    assert "dense<[" not in text
