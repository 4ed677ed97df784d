"""The MPS frontend on files built here with flatc from corpus payloads: the legacy dtype numbering, bare
flatbuffers with inline constants, .pte containers (inline and segment delegates, several partitions),
and corrupted files (exit 2, one line, no traceback).

Files are built the way their writers build them: flatc decodes a corpus payload to JSON with the packaged
schema, the test edits the JSON, flatc encodes it again (with the legacy writer's schema where that is the
point), and the 24-byte header or .pte container is put around it here.
"""
from __future__ import annotations

import json
import random
import struct
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

from nn2tosa.diagnostics import InvalidInputError, UnsupportedError
from nn2tosa.frontend import load
from nn2tosa.frontend.mps import pte
from nn2tosa.ir import Graph, verify
from nn2tosa.schemas import schema_text

CORPUS = Path(__file__).resolve().parents[3].parent / "shared" / "corpus"
MPS = CORPUS / "mps"
FLATC = Path(sysconfig.get_paths()["purelib"]) / "bin" / "flatc"
pytestmark = [
    pytest.mark.skipif(not (CORPUS / "manifest.json").exists(), reason=f"corpus not found at {CORPUS}"),
    pytest.mark.skipif(not FLATC.exists(), reason=f"flatc not found at {FLATC} (pip install tosa-tools)"),
]

# The MPSDataType numbers the backend's Python writer used before August 2024 (FORMATS.md: "older:
# bfloat16=3, int8=4, bool=9 ..."), written out here independently of the frontend's table.
LEGACY_ENUM = """enum MPSDataType : short {
  mps_data_type_invalid = 0, mps_data_type_float16 = 1, mps_data_type_float32 = 2, mps_data_type_bfloat16 = 3,
  mps_data_type_int8 = 4, mps_data_type_int16 = 5, mps_data_type_int32 = 6, mps_data_type_int64 = 7,
  mps_data_type_uint8 = 8, mps_data_type_bool = 9, mps_data_type_complex_float16 = 10,
  mps_data_type_complex_float32 = 11,
}"""


# ------------------------------------------------------------------------------------------- helpers
def _legacy_schema(*, bare: bool) -> str:
    """The schema as a legacy writer used it: the old enum numbers; for bare flatbuffers (the oldest
    writers) also a 4-byte constant_buffer_size and no segment fields."""
    text = schema_text("mps")
    start = text.index("enum MPSDataType")
    text = text[:start] + LEGACY_ENUM + text[text.index("}", start) + 1:]
    if bare:
        for old, new in (("constant_buffer_size:uint64;", "constant_buffer_size:int;"),
                         ("segment_offset:uint64;", ""), ("constant_segment:DataSegment;", "")):
            assert old in text
            text = text.replace(old, new)
    return text


class Flatc:
    """flatc in a temporary directory: JSON <-> binary with a given schema text."""

    def __init__(self, tmp: Path):
        self.tmp = tmp
        self.count = 0

    def _schema(self, text: str) -> Path:
        path = self.tmp / f"schema{abs(hash(text))}.fbs"
        path.write_text(text)
        return path

    def to_json(self, binary: bytes, schema: str) -> dict:
        self.count += 1
        path = self.tmp / f"in{self.count}.bin"
        path.write_bytes(binary)
        subprocess.run([str(FLATC), "--json", "--strict-json", "--raw-binary", "-o", str(self.tmp),
                        str(self._schema(schema)), "--", str(path)], check=True, capture_output=True)
        return json.loads(path.with_suffix(".json").read_text())

    def to_binary(self, doc: dict, schema: str) -> bytes:
        self.count += 1
        path = self.tmp / f"out{self.count}.json"
        path.write_text(json.dumps(doc))
        subprocess.run([str(FLATC), "-b", "-o", str(self.tmp), str(self._schema(schema)), str(path)],
                       check=True, capture_output=True)
        # flatc names the output after the schema's file_extension (.bin when it declares none)
        (out,) = [p for p in self.tmp.glob(f"out{self.count}.*") if p.suffix != ".json"]
        return out.read_bytes()


@pytest.fixture
def flatc(tmp_path: Path) -> Flatc:
    return Flatc(tmp_path)


def split_payload(raw: bytes) -> tuple[bytes, bytes]:
    """(the flatbuffer, the constant segment) of a payload with the 24-byte header."""
    offset, size = struct.unpack_from("<QQ", raw, 8)
    return raw[24:offset], raw[offset: offset + size]


def make_payload(flatbuffer: bytes, segment: bytes) -> bytes:
    """A payload the way the backend lays it out: header, flatbuffer padded to 16, constant segment."""
    start = (24 + len(flatbuffer) + 15) // 16 * 16
    header = struct.pack("<I4sQQ", 0, b"MP00", start, len(segment))
    return header + flatbuffer + bytes(start - 24 - len(flatbuffer)) + segment


def rebuilt(flatc: Flatc, name: str, edit: Callable[[dict], Any]) -> bytes:
    """The corpus payload `name` with its JSON edited by `edit` (in place)."""
    fb, segment = split_payload((MPS / name).read_bytes())
    doc = flatc.to_json(fb, schema_text("mps"))
    edit(doc)
    return make_payload(flatc.to_binary(doc, schema_text("mps")), segment)


def to_legacy(doc: dict, segment: bytes, *, inline: bool) -> dict:
    """Rewrite a current-numbering JSON as the legacy writer would have written it: dtype numbers of the
    old enum, integer scalars as 4-byte int32 (its define_scalar used ctypes.c_int32), and, with
    `inline`, constants inside constant_buffer (no segment)."""
    legacy = {name: i for i, name in enumerate(
        "invalid float16 float32 bfloat16 int8 int16 int32 int64 uint8 bool complex_float16 complex_float32".split())}
    number = lambda name: legacy[name.removeprefix("mps_data_type_")]  # noqa: E731
    constants = set(doc.get("constant_ids", []))
    for vid, v in enumerate(doc["mps_values"]):
        v["datatype"] = number(v.get("datatype", "mps_data_type_invalid"))
        size, offset = v.get("constant_buffer_size", 0), v.pop("segment_offset", 0)
        if vid in constants and inline:
            data = segment[offset: offset + size]
            if size == 8 and v.get("dims") == [1] and v["datatype"] in (legacy["int32"], legacy["int16"], legacy["int8"]):
                data = data[:4]  # the old writer's int scalars were 4 bytes
            v["constant_buffer"] = {"storage": list(data)}
            v["constant_buffer_size"] = len(data)
        elif not inline:
            v["segment_offset"] = offset
    for node in doc["mps_nodes"]:
        for key in ("dtype", "output_dtype"):
            if key in node["mpsnode_union"]:
                node["mpsnode_union"][key] = number(node["mpsnode_union"][key])
    if inline:
        doc.pop("constant_segment", None)
    return doc


def assert_same_graph(a: Graph, b: Graph) -> None:
    """Same ops, attributes, types, wiring and constant values (meta aside)."""
    assert a.histogram() == b.histogram()
    for x, y in zip(a.topological(), b.topological()):
        assert (a.op(x), a.types(x), a.loc(x)) == (b.op(y), b.types(y), b.loc(y))
        ax, by = a.attrs(x), b.attrs(y)
        assert ax.keys() == by.keys()
        for k in ax:
            if isinstance(ax[k], np.ndarray):
                assert ax[k].dtype == by[k].dtype and np.array_equal(ax[k], by[k]), (a.loc(x), k)
            else:
                assert ax[k] == by[k]
    assert [a.type_of(o.value) for o in a.outputs] == [b.type_of(o.value) for o in b.outputs]


# ------------------------------------------------------------------------------ legacy dtype numbering
# Payloads with non-float dtypes: bool results, int64 indices and constants, int32 scalars.
LEGACY_CASES = ["perop/op_eq_tensor_fp32.mpsgraph", "perop/op_embedding_fp32.mpsgraph",
                "perop/op_max_pool2d_indices_stride_fp32.mpsgraph", "perop/ut_bin_add_scalar_int_fp32.mpsgraph",
                "perop/op_bitwise_not_bool_fp32.mpsgraph", "models/shape_ops_fp32.mpsgraph",
                "models/cnn_fp16.mpsgraph"]


@pytest.mark.parametrize("name", LEGACY_CASES)
def test_legacy_bare_flatbuffer_reads_like_its_current_twin(flatc: Flatc, name: str):
    raw = (MPS / name).read_bytes()
    fb, segment = split_payload(raw)
    doc = to_legacy(flatc.to_json(fb, schema_text("mps")), segment, inline=True)
    legacy_file = flatc.to_binary(doc, _legacy_schema(bare=True))
    assert legacy_file[4:8] == b"MP00" and legacy_file[:4] != bytes(4)  # bare: the root offset comes first
    (g,) = load(legacy_file)
    verify(g)
    assert g.meta["dtype_numbering"] == "legacy" and g.meta["container"] == "flatbuffer"
    (current,) = load(raw)
    assert_same_graph(current, g)


# A legacy payload with the header: the numbering must come from the facts alone.
@pytest.mark.parametrize("name", ["perop/op_eq_tensor_fp32.mpsgraph", "perop/op_embedding_fp32.mpsgraph",
                                  "perop/op_max_pool2d_indices_stride_fp32.mpsgraph",
                                  "models/shape_ops_fp32.mpsgraph"])
def test_legacy_payload_with_header_is_detected_by_structure(flatc: Flatc, name: str):
    raw = (MPS / name).read_bytes()
    fb, segment = split_payload(raw)
    doc = to_legacy(flatc.to_json(fb, schema_text("mps")), segment, inline=False)
    (g,) = load(make_payload(flatc.to_binary(doc, _legacy_schema(bare=False)), segment))
    assert g.meta["dtype_numbering"] == "legacy" and g.meta["container"] == "payload"
    assert_same_graph(load(raw)[0], g)


def test_bare_flatbuffer_in_the_current_numbering(flatc: Flatc):
    """A bare flatbuffer whose facts say "current" (bool comparison results numbered 15) is read so."""
    raw = (MPS / "perop" / "op_eq_tensor_fp32.mpsgraph").read_bytes()
    fb, segment = split_payload(raw)
    doc = flatc.to_json(fb, schema_text("mps"))
    for vid in doc.get("constant_ids", []):
        v = doc["mps_values"][vid]
        v["constant_buffer"] = {"storage": list(segment[v.get("segment_offset", 0):][: v["constant_buffer_size"]])}
    (g,) = load(flatc.to_binary(doc, schema_text("mps")))
    assert g.meta["dtype_numbering"] == "current" and g.meta["container"] == "flatbuffer"
    assert_same_graph(load(raw)[0], g)


def test_nodes_listed_after_their_readers(flatc: Flatc):
    """The file's node order need not be an execution order: reversed, the graph is the same."""
    name = "models/cnn_fp32.mpsgraph"
    data = rebuilt(flatc, name, lambda doc: doc["mps_nodes"].reverse())
    (g,) = load(data)
    verify(g)
    (original,) = load(MPS / name)

    def signatures(graph: Graph) -> list[str]:
        """Each output as the expression that computes it (ops, types, operands), whatever the order."""
        memo: dict[int, str] = {}
        for n in graph.topological():
            operands = ", ".join(f"{memo[v.node]}#{v.index}" for v in graph.operands(n))
            memo[n] = f"{graph.op(n)}{[str(t) for t in graph.types(n)]}({operands})"
        return [memo[o.value.node] for o in graph.outputs]

    assert signatures(g) == signatures(original)
    # node 0 of the file is now the last step, reading values that later-listed nodes define
    (first,) = [n for n in g.nodes() if g.loc(n) and g.loc(n).name == "node 0"]
    assert any(v.node > first for v in g.operands(first))


# ----------------------------------------------------------------------------------------------- .pte
def make_pte(flatc: Flatc, payloads: list[tuple[bytes, str]], *, backend: str = "MPSBackend",
             operators: tuple[str, ...] = ()) -> bytes:
    """A .pte with one plan whose delegates carry `payloads`, each "inline" or in a "segment" (then the
    file gets ExecuTorch's extended header and the segments after the program, 1024-aligned)."""
    inline, segments, delegates = [], [], []
    for data, where in payloads:
        if where == "inline":
            delegates.append({"id": backend, "processed": {"location": "INLINE", "index": len(inline)}})
            inline.append({"data": list(data)})
        else:
            delegates.append({"id": backend, "processed": {"location": "SEGMENT", "index": len(segments)}})
            segments.append(data)
    offsets, cursor = [], 0
    for data in segments:
        offsets.append({"offset": cursor, "size": len(data)})
        cursor = (cursor + len(data) + 1023) // 1024 * 1024
    doc = {"version": 0, "execution_plan": [{"name": "forward", "delegates": delegates,
                                            "operators": [{"name": o} for o in operators]}],
           "backend_delegate_data": inline, "segments": offsets}
    program = flatc.to_binary(doc, schema_text("pte"))
    if not segments:
        return program
    # ExecuTorch puts its extended header at byte 8; everything after shifts by 32 bytes, so the root
    # offset (the only absolute one) moves by 32 too.
    root = struct.unpack_from("<I", program)[0] + 32
    size = len(program) + 32
    base = (size + 1023) // 1024 * 1024
    header = struct.pack("<4sIQQ", b"eh00", 24, size, base) + bytes(8)
    out = bytearray(struct.pack("<I", root) + program[4:8] + header + program[8:])
    out += bytes(base - len(out))
    for data, off in zip(segments, offsets):
        out += bytes(base + off["offset"] - len(out)) + data
    return bytes(out)


def test_corpus_pte_holds_the_corpus_payload():
    """The real .pte from ExecuTorch: its inline delegate is byte for byte the .mpsgraph payload."""
    (g,) = load(MPS / "models" / "mlp_fp32.extract0.pte")
    assert g.meta["container"] == "pte" and g.meta["delegate_data"] == "inline" and g.name == "main"
    assert_same_graph(load(MPS / "models" / "mlp_fp32.mpsgraph")[0], g)


def test_pte_with_segments_and_several_partitions(flatc: Flatc):
    parts = [(MPS / "models" / f"partitioned_cumsum_fp32.part{k}.mpsgraph").read_bytes() for k in (0, 1)]
    data = make_pte(flatc, [(parts[0], "segment"), (parts[1], "inline"), (parts[0], "segment")],
                    operators=("aten::cumsum",))
    assert data[8:12] == b"eh00"
    graphs = load(data)
    assert [g.name for g in graphs] == ["partition0", "partition1", "partition2"]
    assert [g.meta["delegate_data"] for g in graphs] == ["segment", "inline", "segment"]
    assert all(g.meta["cpu_operators"] == "aten::cumsum" for g in graphs)
    assert [g.meta["partition"] for g in graphs] == [0, 1, 2]
    for g, raw in zip(graphs, [parts[0], parts[1], parts[0]]):
        verify(g)
        assert_same_graph(load(raw)[0], g)


def test_pte_inspect_json_reports_every_partition(flatc: Flatc, tmp_path: Path):
    parts = [(MPS / "models" / f"partitioned_cumsum_fp32.part{k}.mpsgraph").read_bytes() for k in (0, 1)]
    path = tmp_path / "two.pte"
    path.write_bytes(make_pte(flatc, [(parts[0], "segment"), (parts[1], "segment")]))
    result = subprocess.run([sys.executable, "-m", "nn2tosa", "inspect", "--json", str(path)],
                            capture_output=True, timeout=120)
    assert result.returncode == 0, result.stderr
    info = json.loads(result.stdout)
    assert [p["name"] for p in info["partitions"]] == ["partition0", "partition1"]
    # facts shared by both partitions at the top, each partition's own in its entry
    assert info["format"] == "mps" and info["container"] == "pte" and "partition" not in info
    assert [(p["partition"], p["delegate"]) for p in info["partitions"]] == [(0, 0), (1, 1)]
    assert [t["partition"] for t in info["inputs"]] == [0, 1]
    assert sum(info["ops"].values()) == sum(sum(p["ops"].values()) for p in info["partitions"])


def test_pte_without_mps_delegates_is_unsupported(flatc: Flatc):
    data = make_pte(flatc, [(b"\x01\x02\x03\x04", "inline")], backend="XnnpackBackend")
    with pytest.raises(UnsupportedError, match="no MPSBackend delegate.*XnnpackBackend"):
        load(data)


def test_pte_segment_outside_the_file(flatc: Flatc):
    part = (MPS / "models" / "mlp_fp32.mpsgraph").read_bytes()
    data = make_pte(flatc, [(part, "segment")])
    with pytest.raises(InvalidInputError, match="runs past the end of the file"):
        load(data[: len(data) - 100])


# ------------------------------------------------------------------------------------ corrupted files
def _cli(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "nn2tosa", "inspect", str(path)], capture_output=True, timeout=120)


def _set_first_node(field: str, value: Any) -> Callable[[dict], None]:
    def edit(doc: dict) -> None:
        doc["mps_nodes"][0]["mpsnode_union"][field] = value
    return edit


def _make_cycle(doc: dict) -> None:
    # mlp: node 1 (addmm) reads value 2 from node 0 (permute); let node 0 read node 2's output (5)
    doc["mps_nodes"][0]["mpsnode_union"]["input1_id"] = 5


def _undefined_value(doc: dict) -> None:
    # a value that exists in mps_values but that no input, constant or node defines
    doc["mps_values"].append({"datatype": "mps_data_type_float32", "num_dims": 1, "dims": [3]})
    doc["mps_nodes"][0]["mpsnode_union"]["input1_id"] = len(doc["mps_values"]) - 1


CORRUPTIONS = {
    "value id out of range": ("models/mlp_fp32.mpsgraph", _set_first_node("input1_id", 999),
                              r"node 0 \(MPSPermute\).*input1_id 999 is out of range"),
    "reads a value nobody defines": ("models/mlp_fp32.mpsgraph", _undefined_value,
                                     r"node 0 \(MPSPermute\).*reads value 10, which no graph input"),
    "cycle": ("models/mlp_fp32.mpsgraph", _make_cycle, r"cycle"),
    "constant outside the segment": (
        "models/mlp_fp32.mpsgraph",
        lambda doc: doc["mps_values"][doc["constant_ids"][0]].update(segment_offset=10**9),
        r"value 1.*outside the constant segment"),
    "constant of the wrong size": (
        "models/mlp_fp32.mpsgraph",
        lambda doc: doc["mps_values"][doc["constant_ids"][0]].update(constant_buffer_size=12),
        r"value 1.*holds 12 bytes, expected 512"),
    "value defined twice": ("models/mlp_fp32.mpsgraph", _set_first_node("output_id", 0),
                            r"node 0 \(MPSPermute\).*redefines value 0"),
    "graph output out of range": ("models/mlp_fp32.mpsgraph", lambda doc: doc.update(output_ids=[77]),
                                  r"output_ids\[0\].*out of range"),
}


@pytest.mark.parametrize("case", sorted(CORRUPTIONS))
def test_inconsistent_graphs_are_invalid_input(flatc: Flatc, case: str):
    name, edit, message = CORRUPTIONS[case]
    data = rebuilt(flatc, name, edit)
    with pytest.raises(InvalidInputError, match=message):
        load(data)


def test_unknown_union_type(flatc: Flatc):
    """A node type number past the union's 90 members (written by flatc with an extended schema)."""
    fb, segment = split_payload((MPS / "models" / "mlp_fp32.mpsgraph").read_bytes())
    doc = flatc.to_json(fb, schema_text("mps"))
    doc["mps_nodes"][2]["mpsnode_union_type"] = "MPSFuture"
    extended = schema_text("mps").replace("    MPSDequantizePerChannelGroup,\n}",
                                          "    MPSDequantizePerChannelGroup,\n    MPSFuture: _MPSNode1x1,\n}")
    assert extended != schema_text("mps")
    with pytest.raises(InvalidInputError, match=r"node 2: unknown node type 91"):
        load(make_payload(flatc.to_binary(doc, extended), segment))


HEADER_CORRUPTIONS = {
    "constant offset past the end": (8, struct.pack("<Q", 10**6), "constant data offset"),
    "constant offset inside the header": (8, struct.pack("<Q", 4), "constant data offset"),
    "constant size past the end": (16, struct.pack("<Q", 10**6), "runs past the end of the payload"),
    "root offset past the end": (24, struct.pack("<I", 10**6), "root table offset"),
}


@pytest.mark.parametrize("case", sorted(HEADER_CORRUPTIONS))
def test_bad_header(case: str):
    at, patch, message = HEADER_CORRUPTIONS[case]
    data = bytearray((MPS / "models" / "mlp_fp32.mpsgraph").read_bytes())
    data[at: at + len(patch)] = patch
    with pytest.raises(InvalidInputError, match=message):
        load(bytes(data))


SMALL = ["models/mlp_fp16.mpsgraph", "models/qlinear_int4_group32_fp32.mpsgraph",
         "perop/op_index_tensor_dim1_fp32.mpsgraph", "perop/op_split_with_sizes_fp32.mpsgraph",
         "models/mlp_fp32.extract0.pte"]


@pytest.mark.parametrize("name", SMALL)
def test_every_truncation_is_invalid_input(name: str):
    raw = (MPS / name).read_bytes()
    for size in range(0, len(raw), max(1, len(raw) // 300)):
        try:
            load(raw[:size])
        except InvalidInputError:
            continue
        except UnsupportedError:
            continue
        pytest.fail(f"{name} cut to {size} bytes read without error")


@pytest.mark.parametrize("name", SMALL)
def test_random_byte_mutations_raise_only_our_errors(name: str):
    """Flip random bytes (seeded): reading either succeeds with a graph that verifies or raises
    InvalidInputError/UnsupportedError, never anything else."""
    raw = (MPS / name).read_bytes()
    rng = random.Random(name)
    for _ in range(300):
        data = bytearray(raw)
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        try:
            for g in load(bytes(data)):
                verify(g)
        except (InvalidInputError, UnsupportedError):
            pass


@pytest.mark.parametrize("case", ["cycle", "value id out of range", "constant outside the segment"])
def test_cli_reports_corruption_in_one_line_with_exit_2(flatc: Flatc, tmp_path: Path, case: str):
    name, edit, message = CORRUPTIONS[case]
    path = tmp_path / "bad.mpsgraph"
    path.write_bytes(rebuilt(flatc, name, edit))
    result = _cli(path)
    err = result.stderr.decode()
    assert result.returncode == 2, err
    assert err.count("\n") == 1 and err.startswith("nn2tosa: error: ") and str(path) in err
    assert "Traceback" not in err and result.stdout == b""


def test_cli_truncated_pte_exit_2(tmp_path: Path):
    path = tmp_path / "cut.pte"
    path.write_bytes((MPS / "models" / "mlp_fp32.extract0.pte").read_bytes()[:300])
    result = _cli(path)
    assert result.returncode == 2 and result.stderr.decode().count("\n") == 1
