"""`.tosa` files with tensor data after the flatbuffer (TosaTensor offset/size, what files past 2 GB
need): written on request (`--external-data`) and whenever the file would pass 2 GB, read back by
nn2tosa with the same constants, run by the TOSA reference model to the same outputs as the file
with the data inside, and corrupt spans refused with exit 2. The model is the benchmark's synthetic
transformer (bench/synthetic: its weights are 64 KiB and more, so they go after the flatbuffer).

The model past 2 GB (`test_past_2gb_*`) is generated once into a temporary directory and needs
about 3x its 2.2 GB of free disk and 6 GB of free memory; it skips, saying why, where either is short.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import struct
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

import nn2tosa
from nn2tosa.lowering.flatbuffer_emitter import build_flatbuffer, write_flatbuffer
from nn2tosa.schemas import load_schema
from nn2tosa.schemas.flatread import FlatBuffer
from nn2tosa.tosa_flatbuffer.common import EXTERNAL_ALIGNMENT

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from synthetic.mps import write_mps  # noqa: E402
from synthetic.network import transformer  # noqa: E402

NN2TOSA = [sys.executable, "-m", "nn2tosa"]


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(NN2TOSA + list(args), capture_output=True, text=True)


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("external") / "transformer.mpsgraph"
    write_mps(transformer(layers=1, hidden=128, heads=2, seq=4), path)  # weights of 64 and 256 KiB
    return path


@pytest.fixture(scope="module")
def files(model) -> tuple[bytes, bytes]:
    """(the .tosa as written by default, the .tosa with --external-data), both through the CLI."""
    inline, external = model.with_suffix(".tosa"), model.with_name("external.tosa")
    for out, extra in ((inline, []), (external, ["--external-data"])):
        done = cli("convert", str(model), "-o", str(out), *extra)
        assert done.returncode == 0, done.stderr
    return inline.read_bytes(), external.read_bytes()


def external_spans(data: bytes | memoryview) -> list[tuple[str, int, int]]:
    """(name, offset, size) of every tensor keeping its data outside the flatbuffer."""
    fb = FlatBuffer(memoryview(data), load_schema("tosa"), strict_table_size=False)
    return [(t["name"], int(t["offset"]), int(t["size"]))
            for region in fb.root()["regions"] for block in region["blocks"] for t in block["tensors"]
            if int(t["offset"]) > 1]


def constants(graph) -> list[bytes]:
    return [graph.attrs(n)["values"].tobytes() for n in graph.nodes() if graph.op(n) == "tosa.const"]


def test_default_output_keeps_its_data_inside(files):
    inline, _ = files
    assert external_spans(inline) == []


def test_external_data_is_after_the_flatbuffer_aligned_and_exact(files, model):
    inline, external = files
    spans = external_spans(external)
    assert len(spans) >= 4
    result = nn2tosa.convert(str(model))
    by_size = Counter(len(c) for c in constants(result.graph) if len(c) >= 1 << 16)
    assert Counter(size for _, _, size in spans) == by_size  # every large constant, no other tensor
    ends = sorted((offset, offset + size) for _, offset, size in spans)
    assert all(offset % EXTERNAL_ALIGNMENT == 0 for offset, _ in ends)
    assert all(end <= nxt for (_, end), (nxt, _) in zip(ends, ends[1:]))
    assert ends[-1][1] <= len(external)
    # the data starts right after the flatbuffer: the inline file less the data moved out, plus the
    # offset and size fields (and their vtable entries) and the alignment
    flatbuffer = len(inline) - sum(-(-size // 8) * 8 for _, _, size in spans)
    assert flatbuffer <= ends[0][0] < flatbuffer + 24 * len(spans) + EXTERNAL_ALIGNMENT
    assert bytes(build_flatbuffer(result.graph, external_data=True)) == external  # in memory = on disk


def test_external_data_reads_back_to_the_same_graph(files):
    inline, external = files
    a, b = nn2tosa.load(inline), nn2tosa.load(external)
    assert constants(a) == constants(b)
    assert bytes(build_flatbuffer(b)) == inline  # written again without external data: the inline file


def test_the_reference_model_runs_external_data(files):
    """tosa_reference_model (tosa-tools 2026.8.0) follows offset/size: same outputs as the inline file,
    and other outputs once the bytes at those offsets change (so it does not ignore them)."""
    trm = pytest.importorskip("tosa_reference_model", reason="the TOSA reference model comes with tosa-tools")
    inline, external = files
    x = np.random.default_rng(0).standard_normal((1, 4, 128)).astype(np.float32)
    want, status = trm.run(inline, [x], tosa_level="EIGHTK")
    assert status == trm.GraphStatus.TOSA_VALID
    got, status = trm.run(external, [x], tosa_level="EIGHTK")
    assert status == trm.GraphStatus.TOSA_VALID
    assert np.array_equal(np.asarray(got[0]), np.asarray(want[0]))
    scrambled = bytearray(external)
    for _, offset, size in external_spans(external):
        scrambled[offset:offset + size] = bytes(size)
    zeroed, status = trm.run(bytes(scrambled), [x], tosa_level="EIGHTK")
    assert not np.array_equal(np.asarray(zeroed[0]), np.asarray(want[0]))


def test_check_and_run_take_external_data(files, tmp_path):
    _, external = files
    path = tmp_path / "external.tosa"
    path.write_bytes(external)
    done = cli("check", str(path))
    assert done.returncode == 0, done.stderr
    assert "TOSA_VALID" in done.stdout


def test_external_data_needs_tosa_1_0(model, tmp_path):
    done = cli("convert", str(model), "-o", str(tmp_path / "m.tosa"), "--external-data", "--tosa-version", "0.100-draft")
    assert done.returncode == 2
    assert "--external-data needs --tosa-version 1.0" in done.stderr
    assert not (tmp_path / "m.tosa").exists()


# ------------------------------------------------------------------------------ corrupt spans
def _patched(data: bytes, name: str, offset: int | None = None, size: int | None = None) -> bytes:
    """`data` with tensor `name`'s offset and/or size fields rewritten in place."""
    fb = FlatBuffer(memoryview(data), load_schema("tosa"), strict_table_size=False)
    [t] = [t for region in fb.root()["regions"] for block in region["blocks"] for t in block["tensors"]
           if t["name"] == name]
    out = bytearray(data)
    for field, new in (("offset", offset), ("size", size)):
        if new is not None:
            at = t._pos(t._plan(field))  # the field's place in the buffer (flatread's own lookup)
            assert struct.unpack_from("<Q", out, at)[0] == int(t[field])
            struct.pack_into("<Q", out, at, new)
    return bytes(out)


def _corrupt_cases(data: bytes) -> dict[str, tuple[bytes, str]]:
    (first, o1, s1), (second, o2, _) = sorted(external_spans(data), key=lambda t: t[1])[:2]
    return {
        "past the end": (_patched(data, second, offset=len(data) - 8), "past the end of the file"),
        "size past the end": (_patched(data, first, size=len(data)), "past the end of the file"),
        "overlapping": (_patched(data, second, offset=o1 + EXTERNAL_ALIGNMENT), f"inside that of tensor {first!r}"),
        "unaligned": (_patched(data, first, offset=o1 + 4), "not 8-byte aligned"),
    }


@pytest.mark.parametrize("case", ["past the end", "size past the end", "overlapping", "unaligned"])
def test_corrupt_external_data_is_exit_2(files, tmp_path, case):
    _, external = files
    corrupt, message = _corrupt_cases(external)[case]
    path = tmp_path / "corrupt.tosa"
    path.write_bytes(corrupt)
    done = cli("convert", str(path), "-o", str(tmp_path / "out.mlir"))
    assert done.returncode == 2, done.stderr
    assert message in done.stderr and "tensor '" in done.stderr
    assert not (tmp_path / "out.mlir").exists()


# ------------------------------------------------------------------------------ past 2 GB
BIG_LAYERS = 28  # hidden 2048, FFN 5632, fp16: 80 MB a layer, 2.23 GB in all


def _free_memory() -> int:
    with open("/proc/meminfo") as f:
        fields = dict(line.split(":", 1) for line in f)
    return int(fields["MemAvailable"].split()[0]) * 1024 if "MemAvailable" in fields else 0


@pytest.fixture(scope="module")
def big_model(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("past2gb")
    size = BIG_LAYERS * 80_000_000
    free = shutil.disk_usage(folder).free
    if free < 3 * size:
        pytest.skip(f"the model past 2 GB needs 3 x {size / 1e9:.1f} GB of free disk; {free / 1e9:.1f} GB free")
    if sys.platform == "linux" and _free_memory() < 6 * 10**9:
        pytest.skip(f"the model past 2 GB needs 6 GB of free memory; {_free_memory() / 1e9:.1f} GB available")
    path = folder / "big.mpsgraph"
    code = ("import sys, numpy as np; sys.path.insert(0, sys.argv[1]); from synthetic.mps import write_mps; "
            "from synthetic.network import transformer; "
            "write_mps(transformer(layers=int(sys.argv[3]), hidden=2048, heads=16, ffn=5632, seq=8, "
            "weight_dtype=np.float16, random_bits=True), sys.argv[2], fp16=True)")
    # in a child, so that this process does not keep the generator's 2.2 GB of weights
    subprocess.run([sys.executable, "-c", code, str(Path(__file__).resolve().parents[2] / "bench"), str(path),
                    str(BIG_LAYERS)], check=True)
    assert path.stat().st_size > 2**31
    return path


def _digests(graph) -> Counter:
    return Counter(hashlib.sha256(graph.attrs(n)["values"].view(np.uint8).reshape(-1)).hexdigest()
                   for n in graph.nodes() if graph.op(n) == "tosa.const")


def test_past_2gb_tosa_keeps_every_constant(big_model):
    out = big_model.with_suffix(".tosa")
    done = cli("convert", str(big_model), "-o", str(out))
    assert done.returncode == 0, done.stderr
    try:
        data = memoryview(np.memmap(out, dtype=np.uint8, mode="r"))
        spans = external_spans(data)
        assert sum(size for _, _, size in spans) > 2**31 - 2**27
        written = nn2tosa.convert(str(big_model)).graph
        read = nn2tosa.load(str(out))
        assert _digests(read) == _digests(written)
        assert sum(read.attrs(n)["values"].nbytes for n in read.nodes() if read.op(n) == "tosa.const") > 2**31
    finally:
        os.unlink(out)


def test_the_draft_layout_past_2gb_is_refused_before_the_conversion():
    """The 0.100 layout has no offset/size: a model whose constants pass 2 GB is refused from what was
    read, before any pass runs (a broadcast view stands in for 2 GB of weights without the memory)."""
    from nn2tosa.api import refuse_past_2gb
    from nn2tosa.diagnostics import UnsupportedError
    from nn2tosa.ir import Graph, TensorType

    g = Graph("big")
    weights = np.broadcast_to(np.zeros(1, np.float16), (2**30 + 1,))
    g.add_op("nn.constant", (), [TensorType(weights.shape, "f16")], {"value": weights})
    with pytest.raises(UnsupportedError, match="past 2 GB, which the TOSA 0.100-draft layout cannot hold"):
        refuse_past_2gb([g], "big.mpsgraph", "the TOSA 0.100-draft layout")
    refuse_past_2gb([Graph("small")], "small.mpsgraph", "the TOSA 0.100-draft layout")  # nothing to say
