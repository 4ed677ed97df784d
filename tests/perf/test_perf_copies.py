"""Weights are not copied on the way in, copied once on the way out, and no pass does superlinear work.

Counted, never timed (tests/emit/test_emit_bulk.py does the same for single emitter calls):
- zero copies in: after every pass of the pipeline, the large constants of a 27 MB model are views
  of the memory-mapped file, except what constant folding computes (batch norms folded into
  convolution weights: no more bytes than those weights);
- one copy out: tracemalloc's peak while converting a 59 MB model and writing .tosa, MLIR bytecode
  and the module stays far below the model (a copy of the weights would show), and building the
  MLIR module adds no anonymous memory (its blobs are the numpy buffers);
- linear passes: a model with ~10x the ops makes the IR's primitives (operands, users, add_op,
  erase, ...) run ~10x as often, and whole-graph walks (topological sorts, node scans) not more often.
"""
from __future__ import annotations

import collections
import mmap
import sys
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

import nn2tosa
from nn2tosa.api import tosa_pipeline
from nn2tosa.fileio import MADV_POPULATE_READ, map_file, mapping_of, populate
from nn2tosa.frontend import load
from nn2tosa.ir import Graph
from nn2tosa.lowering.flatbuffer_emitter import write_flatbuffer
from nn2tosa.lowering.mlir_emitter import to_mlir, write_mlir
from nn2tosa.passes import parse_pipeline

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from synthetic.armnn import write_armnn  # noqa: E402
from synthetic.mps import write_mps  # noqa: E402
from synthetic.network import resnet50, transformer  # noqa: E402

LARGE = 1 << 16  # constants of at least this many bytes are the weights that matter


def large_constants(g: Graph) -> list[np.ndarray]:
    return [v for n in g.nodes() for v in g.attrs(n).values() if isinstance(v, np.ndarray) and v.nbytes >= LARGE]


def copied_bytes_per_pass(path: Path) -> dict[str, int]:
    """Bytes of large constants that are not views of the mapped file, after reading and each pass."""
    data = map_file(path)
    mapping = mapping_of(data)
    assert mapping is not None
    (g,) = load(data)

    def copied() -> int:
        return sum(a.nbytes for a in large_constants(g) if mapping_of(a) is not mapping)

    result = {"read": copied()}
    for p in parse_pipeline(tosa_pipeline(g.meta["format"])):
        p.run(g)
        result[p.name] = copied()
    assert large_constants(g), "the model has large constants"
    result["viewed at the end"] = sum(a.nbytes for a in large_constants(g) if mapping_of(a) is mapping)
    return result


@pytest.mark.parametrize("generation", ["20.08", "23.08"])
def test_armnn_weights_stay_views_of_the_file_through_every_pass(tmp_path, generation):
    path = tmp_path / "resnet.armnn"
    write_armnn(resnet50(width=32, image=32), path, generation)
    copied = copied_bytes_per_pass(path)
    assert copied.pop("viewed at the end") > 0 and set(copied.values()) == {0}, copied


@pytest.mark.parametrize("fp16", [False, True], ids=["fp32", "fp16"])
def test_transformer_weights_stay_views_of_the_file_through_every_pass(tmp_path, fp16):
    path = tmp_path / "transformer.mpsgraph"
    write_mps(transformer(layers=2), path, fp16=fp16)
    copied = copied_bytes_per_pass(path)
    assert copied.pop("viewed at the end") > 0 and set(copied.values()) == {0}, copied


def test_folding_batch_norms_copies_only_the_weights_it_computes(tmp_path):
    net = resnet50(width=32, image=32, batchnorm=True)
    path = tmp_path / "resnet.mpsgraph"
    write_mps(net, path)
    copied = copied_bytes_per_pass(path)
    assert copied["read"] == copied["legalize-mps"] == 0
    # canonicalize folds each batch norm into its convolution: new weights and biases
    folded = sum(w.nbytes for op in net.ops if op.kind == "conv" for w in op.weights.values() if w.nbytes >= LARGE)
    assert 0 < copied["dce"] <= folded
    fc = next(op for op in net.ops if op.kind == "fc").weights["w"]
    assert copied["viewed at the end"] >= fc.nbytes  # the fully-connected weights, not folded, stay views


# ------------------------------------------------------------------------------ one copy out
def process_status_bytes(field: str) -> int | None:
    """A memory figure of this process from /proc/self/status ("RssAnon", "RssFile"), in bytes."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def anonymous_memory() -> int | None:
    return process_status_bytes("RssAnon")


def test_conversion_and_writers_never_copy_the_weights(tmp_path):
    path = tmp_path / "resnet.armnn"
    net = resnet50(width=48, image=32)
    write_armnn(net, path)
    size = path.stat().st_size
    largest = max(w.nbytes for op in net.ops for w in op.weights.values())
    del net
    nn2tosa.convert(str(path)).mlir_module()  # imports and MLIR's dialects loaded outside the measurement

    tracemalloc.start()
    try:
        peaks = {}

        def step(name, fn):
            tracemalloc.reset_peak()
            value = fn()
            peaks[name] = tracemalloc.get_traced_memory()[1]
            return value

        result = step("convert", lambda: nn2tosa.convert(str(path)))
        step("write .tosa", lambda: write_flatbuffer(result.graph, tmp_path / "m.tosa"))
        before = anonymous_memory()
        module = step("MLIR module", lambda: to_mlir(result.graph))
        grown = None if before is None else anonymous_memory() - before
        step("write .mlirbc", lambda: write_mlir(module, tmp_path / "m.mlirbc"))
    finally:
        tracemalloc.stop()
    assert size > 50e6 and largest < size / 8
    # nothing of the weights' size passes through Python memory...
    for name in ("convert", "write .tosa", "MLIR module"):
        assert peaks[name] < size / 20, (name, peaks)
    # ...except the bindings' bytecode stream, which hands over one blob at a time
    assert peaks["write .mlirbc"] < largest + size / 20, peaks
    if grown is not None:  # MLIR's blobs are the numpy buffers, not copies (C++ memory: RSS, not tracemalloc)
        assert grown < size / 10, grown
    # and what was written holds the weights
    assert (tmp_path / "m.tosa").stat().st_size > size * 0.99
    assert (tmp_path / "m.mlirbc").stat().st_size > size * 0.99


# ------------------------------------------------------------------------------ linear passes
WHOLE_GRAPH_WALKS = ("topological", "nodes", "copy", "histogram")
PER_OP_PRIMITIVES = ("add_op", "operands", "operand", "users", "erase", "replace_all_uses")


def primitive_calls(monkeypatch: pytest.MonkeyPatch, path: Path, tmp_path: Path) -> tuple[collections.Counter, int]:
    calls: collections.Counter = collections.Counter()
    for name in WHOLE_GRAPH_WALKS + PER_OP_PRIMITIVES:
        original = getattr(Graph, name)

        def counting(self, *args, _name=name, _original=original, **kwargs):
            calls[_name] += 1
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(Graph, name, counting)
    result = nn2tosa.convert(str(path))
    write_flatbuffer(result.graph, tmp_path / "m.tosa")
    write_mlir(to_mlir(result.graph), tmp_path / "m.mlirbc")
    monkeypatch.undo()
    return calls, len(result.graph)


@pytest.mark.parametrize("network", ["resnet", "transformer"])
def test_ten_times_the_ops_is_ten_times_the_work(monkeypatch, tmp_path, network):
    counts = []
    for k in (1, 10):
        if network == "resnet":  # 2 and 20 bottleneck blocks per stage (plus the stem and the head)
            path = tmp_path / f"x{k}.armnn"
            write_armnn(resnet50(width=8, image=32, classes=10, blocks=(2 * k,) * 4), path)
        else:
            path = tmp_path / f"x{k}.mpsgraph"
            write_mps(transformer(layers=2 * k, hidden=32, heads=2, seq=8), path)
        counts.append(primitive_calls(monkeypatch, path, tmp_path))
    (small, small_ops), (large, large_ops) = counts
    growth = large_ops / small_ops
    assert growth > 7
    for name in WHOLE_GRAPH_WALKS:
        assert large[name] == small[name], (name, small[name], large[name])
    for name in PER_OP_PRIMITIVES:
        assert small[name] > 0 and large[name] <= 1.25 * growth * small[name], (name, small[name], large[name])


# ------------------------------------------------------------------------------ populate
def resident_file_pages() -> int | None:
    return process_status_bytes("RssFile")


def test_populate_keeps_exactly_the_pages_the_arrays_view(tmp_path):
    """One call maps the pages the views cover (the writers then stream them without a page fault every
    few pages) and releases the rest of the file (weights a fold replaced are not held in memory);
    arrays of no file and other objects are passed over."""
    path = tmp_path / "data.bin"
    path.write_bytes(np.arange(8 << 20, dtype=np.uint32).tobytes())  # 32 MB
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as probe:
        try:
            probe.madvise(MADV_POPULATE_READ)
        except OSError:
            pytest.skip("this kernel has no MADV_POPULATE_READ (Linux 5.14)")
    data = map_file(path)
    words = np.frombuffer(data, dtype=np.uint32)
    view = words[1 << 20:2 << 20]  # 4 MB from 4 MB on
    assert mapping_of(view) is mapping_of(data) is not None and mapping_of(np.zeros(3)) is None
    start = resident_file_pages()
    if start is None:
        pytest.skip("no /proc/self/status")
    assert int(words.sum(dtype=np.uint64)) == (8 << 20) * ((8 << 20) - 1) // 2  # every page read
    touched = resident_file_pages()
    assert touched - start >= 30 << 20
    populate([view, view[::-2], np.zeros(3), "not an array"])
    kept = resident_file_pages() - start
    assert 4 << 20 <= kept + (64 << 10) and kept <= 5 << 20, kept
    assert int(view[-1]) == (2 << 20) - 1  # released pages of a read-only mapping read back unchanged
    assert int(words[-1]) == (8 << 20) - 1
