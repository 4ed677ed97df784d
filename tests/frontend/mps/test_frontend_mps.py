"""The MPS frontend on the corpus: every payload reads, verifies and matches what the corpus records.

The oracles are independent of this code: the manifest (node histograms, inputs/outputs, computed with
flatc-generated readers), the generator's per-payload `.meta.json` (every node's non-id fields), the
flatc-generated Python reader of the schema (constant bytes), and PyTorch's outputs (int4 weights).
"""
from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from conftest import flatc_module
from nn2tosa.frontend import load
from nn2tosa.frontend.mps import dialect, dtypes
from nn2tosa.frontend.mps.dialect import LAYOUTS, node_operands, node_results
from nn2tosa.ir import INPUT_OP, Graph, verify
from nn2tosa.ir.text import parse_ir, print_ir

mps_generated = flatc_module("mps")

CORPUS = Path(__file__).resolve().parents[3].parent / "shared" / "corpus"
MPS = CORPUS / "mps"
pytestmark = pytest.mark.skipif(not (CORPUS / "manifest.json").exists(), reason=f"corpus not found at {CORPUS}")


def _entries() -> list[dict]:
    if not (CORPUS / "manifest.json").exists():
        return []
    return [e for e in json.loads((CORPUS / "manifest.json").read_text())["entries"] if e["format"] == "mps"]


ENTRIES = _entries()


def _load_one(path: Path) -> Graph:
    graphs = load(path)
    assert len(graphs) == 1
    return graphs[0]


def _member_histogram(g: Graph) -> dict[str, int]:
    """mps.X -> MPSX counts, constants left out (they are not union members)."""
    return {"MPS" + op.removeprefix("mps."): n for op, n in g.histogram().items() if op != "mps.constant"}


def _ops(g: Graph, op: str) -> list[int]:
    return [n for n in g.topological() if g.op(n) == op]


# ------------------------------------------------------------------------------------- every payload
def test_corpus_has_the_mps_payloads():
    assert len(ENTRIES) >= 470, "the manifest lists fewer MPS payloads than the corpus README describes"


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: Path(e["file"]).name)
def test_payload_reads_verifies_and_matches_manifest(entry: dict):
    g = _load_one(CORPUS / entry["file"])
    verify(g)
    assert _member_histogram(g) == entry["histogram"]
    assert g.meta["format"] == "mps" and g.meta["dtype_numbering"] == dtypes.CURRENT
    for values, manifest in ((g.input_values(), entry["inputs"]), ([o.value for o in g.outputs], entry["outputs"])):
        assert len(values) == len(manifest)
        for v, m in zip(values, manifest):
            t = g.type_of(v)
            assert list(t.shape) == m["shape"]
            assert t.dtype == dtypes.ELEMENT_TYPES[m["dtype"]]
    # graph inputs stay in input_ids order and are named by position
    assert [g.input_name(n) for n in g.inputs] == [f"input{i}" for i in range(len(entry["inputs"]))]
    assert [g.loc(n).name for n in g.inputs] == [f"value {m['value_id']}" for m in entry["inputs"]]


def test_every_union_member_has_an_op_and_the_corpus_reaches_87():
    assert len(LAYOUTS) == len(dialect.NODE_UNION.members) == 90
    seen = Counter()
    for e in ENTRIES:
        seen.update(e["histogram"])
    # the backend never emits MPSMin, MPSMax and MPSAtan2 (corpus README)
    assert set(LAYOUTS) - set(seen) == {"MPSMin", "MPSMax", "MPSAtan2"}


# ---------------------------------------------------------------- attributes against the generator's record
def _meta_payloads() -> list[tuple[Path, dict]]:
    out = []
    for meta in sorted(MPS.glob("**/*.meta.json")):
        for p in json.loads(meta.read_text()).get("payloads", []):
            if "nodes" in p:
                out.append((meta.parent / p["file"], p))
    return out


def _same(expected, actual) -> bool:
    if isinstance(expected, float):
        return math.isclose(expected, actual, rel_tol=1e-6) or (math.isinf(expected) and expected == actual)
    if isinstance(expected, list) and expected and isinstance(expected[0], float):
        return all(_same(a, b) for a, b in zip(expected, actual)) and len(expected) == len(actual)
    return expected == actual


def test_node_attributes_equal_the_generator_record():
    """Each node's non-id fields, as the corpus generator recorded them, are the op's attributes."""
    checked = Counter()
    for path, record in _meta_payloads():
        g = _load_one(path)
        ops = [n for n in sorted(g.nodes()) if g.op(n) not in ("mps.constant", INPUT_OP)]
        assert len(ops) == len(record["nodes"]), path.name
        for n, fields in zip(ops, record["nodes"]):
            member = fields["type"]
            assert g.loc(n).detail == member and g.op(n) == dialect.op_name(member)
            attrs = g.attrs(n)
            for name, value in fields.items():
                if name in ("type", "in_place"):
                    continue
                id_field = name.removeprefix("num_")
                if name.startswith("num_") and name not in attrs:  # the record counts a list of ids
                    ids = {**node_operands(g, n), **node_results(g, n)}[id_field]
                    assert len(ids) == value
                elif name == "none_index_positions":  # where the list of indices held -1
                    indices = node_operands(g, n)["indices_id"]
                    assert [k for k, v in enumerate(indices) if v is None] == value
                    assert attrs.get(dialect.absent_attr("indices_id"), []) == value
                elif name == "min_max":  # clamp's bounds
                    assert _same(value["min_value"], attrs["min_value"]) and _same(value["max_value"], attrs["max_value"])
                elif value is None:
                    assert name not in attrs
                else:
                    assert _same(value, attrs[name]), (path.name, member, name, value, attrs.get(name))
            checked[member] += 1
    assert len(checked) == 87


# ---------------------------------------------------------------------------- constants: bytes and views
@pytest.mark.parametrize("name", ["models/cnn_fp16.mpsgraph", "models/qlinear_int4_group32_fp32.mpsgraph",
                                  "perop/ut_bin_add_scalar_int_fp32.mpsgraph", "perop/op_batch_norm2d_fp32.mpsgraph"])
def test_constants_against_the_flatc_generated_reader(name: str):
    """Every constant holds the bytes flatc's generated reader finds at its segment range (int4 and the
    8-byte integer scalars compared through their own rules)."""
    path = MPS / name
    raw = path.read_bytes()
    seg_start = int.from_bytes(raw[8:16], "little")
    graph_fb = mps_generated.MPSGraph.GetRootAs(raw, 24)
    g = _load_one(path)
    constants = {int(g.loc(n).name.split()[1]): n for n in _ops(g, "mps.constant")}
    assert sorted(constants) == sorted(graph_fb.ConstantIdsAsNumpy().tolist())
    compared = 0
    for vid, node in constants.items():
        array, element = g.attrs(node)["value"], g.types(node)[0].dtype
        tensor = graph_fb.MpsValues(vid)
        start = seg_start + tensor.SegmentOffset()
        data = raw[start: start + tensor.ConstantBufferSize()]
        assert list(array.shape) == (tensor.DimsAsNumpy().tolist() if tensor.DimsLength() else [])
        if element == "i4":
            continue  # checked numerically in test_int4_weights_reproduce_pytorch
        if len(data) == 8 and array.size == 1 and array.itemsize < 8:  # an 8-byte integer scalar
            assert int(array.reshape(-1)[0]) == int.from_bytes(data, "little", signed=True)
        else:
            assert array.tobytes() == data
        compared += 1
    assert compared >= 1


def test_constants_are_views_of_the_file_even_unaligned():
    """Constants are read-only views of the mapped file, also where the data is not aligned for its
    type (the one such constant in the corpus is an int64 scalar at an odd multiple of 4)."""
    arrays = []
    for path in (MPS / "models" / "mlp_fp16.mpsgraph", MPS / "perop" / "ut_partitioner_fp32.mpsgraph"):
        g = _load_one(path)
        arrays += [g.attrs(n)["value"] for n in _ops(g, "mps.constant")]
    assert arrays and all(not a.flags.owndata and not a.flags.writeable for a in arrays)
    unaligned = [a for a in arrays if not a.flags.aligned]
    assert len(unaligned) == 1 and unaligned[0].dtype == np.int64


def test_int4_weights_reproduce_pytorch():
    """y = x @ dequant(w).T + b with our unpacked int4 weights and group scales gives PyTorch's output:
    low nibble first and sign extension are right."""
    stem = MPS / "models" / "qlinear_int4_group32_fp32"
    g = _load_one(stem.with_suffix(".mpsgraph"))
    (dq,) = _ops(g, "mps.DequantizePerChannelGroup")
    ops = node_operands(g, dq)
    assert ops["zero_points_id"] is None and g.attrs(dq)[dialect.OPERAND_SEGMENTS] == [1, 1, 0]
    value = {v: g.attrs(v.node)["value"] for v in (ops["input1_id"], ops["scales_id"])}
    q, scales = value[ops["input1_id"]], value[ops["scales_id"]]
    assert q.dtype == np.int8 and q.min() >= -8 and q.max() <= 7 and g.type_of(ops["input1_id"]).dtype == "i4"
    group = g.attrs(dq)["group_size"]
    w = (q.reshape(q.shape[0], -1, group) * scales[:, :, None]).reshape(q.shape)
    (addmm,) = _ops(g, "mps.Addmm")
    bias = g.attrs(node_operands(g, addmm)["input1_id"].node)["value"]
    x = np.load(stem.with_suffix(".input0.npy"))
    y = x.reshape(-1, x.shape[-1]) @ w.T + bias
    np.testing.assert_allclose(y.reshape(np.load(stem.with_suffix(".expected0.npy")).shape),
                               np.load(stem.with_suffix(".expected0.npy")), rtol=1e-4, atol=1e-4)


def test_integer_scalars_stored_in_8_bytes_read_as_declared():
    g = _load_one(MPS / "perop" / "op_bitwise_and_scalar_fp32.mpsgraph")  # aten.bitwise_and.Scalar(x, 6) int32
    (c,) = _ops(g, "mps.constant")
    assert str(g.types(c)[0]) == "tensor<1xi32>"
    assert g.attrs(c)["value"].tolist() == [6]


# ------------------------------------------------------------------------------- backend conventions
def test_in_place_fp16_casts_become_explicit_casts():
    g = _load_one(MPS / "models" / "mlp_fp16.mpsgraph")
    first, last = _ops(g, "mps.Cast")
    x = g.input_values()[0]
    assert str(g.type_of(x)) == "tensor<2x8xf32>"  # the graph input stays float32
    assert g.operands(first) == [x] and str(g.types(first)[0]) == "tensor<2x8xf16>"
    # every other reader of value 0 reads the cast
    assert [u.node for u in g.users(x)] == [first]
    assert all(g.op(u.node) == "mps.Addmm" for u in g.users(g.results(first)[0]))
    # the output cast: the graph output reads its float32 result
    assert g.outputs[0].value == g.results(last)[0] and str(g.types(last)[0]) == "tensor<2x4xf32>"
    assert g.attrs(first)["dtype"] == "mps_data_type_float16" and g.attrs(last)["dtype"] == "mps_data_type_float32"


def test_multi_result_nodes_and_absent_results():
    g = _load_one(MPS / "perop" / "op_max_pool2d_indices_stride_fp32.mpsgraph")
    (pool,) = _ops(g, "mps.MaxPool2DWithIndices")
    assert [str(t) for t in g.types(pool)] == ["tensor<1x2x2x3xf32>", "tensor<1x2x2x3xi64>"]
    assert [o.value for o in g.outputs] == g.results(pool)
    g = _load_one(MPS / "perop" / "op_avg_pool2d_k2_fp32.mpsgraph")
    (pool,) = _ops(g, "mps.AvgPool2D")
    assert len(g.types(pool)) == 1 and g.attrs(pool)[dialect.RESULT_SEGMENTS] == [1, 0]
    assert node_results(g, pool)["output2_id"] is None
    g = _load_one(MPS / "perop" / "op_batch_norm2d_fp32.mpsgraph")
    (bn,) = _ops(g, "mps.BatchNorm")
    assert len(g.types(bn)) == 3 and g.outputs[0].value == g.results(bn)[0]  # output1_id is the result


def test_absent_operands_are_left_out_and_recorded():
    g = _load_one(MPS / "perop" / "op_layer_norm_noaffine_fp16.mpsgraph")
    (ln,) = _ops(g, "mps.LayerNorm")
    assert len(g.operands(ln)) == 1 and g.attrs(ln)[dialect.OPERAND_SEGMENTS] == [1, 0, 0]
    assert node_operands(g, ln) == {"input1_id": g.operands(ln)[0], "weight_id": None, "bias_id": None}
    g = _load_one(MPS / "perop" / "op_conv2d_nobias_fp32.mpsgraph")
    (conv,) = _ops(g, "mps.Conv2D")
    assert g.attrs(conv)[dialect.OPERAND_SEGMENTS] == [1, 1, 0]


def test_variadic_operands_and_results():
    g = _load_one(MPS / "perop" / "op_split_with_sizes_fp32.mpsgraph")
    (split,) = _ops(g, "mps.SplitWithSizes")
    assert len(g.types(split)) == 3 and len(node_results(g, split)["output_ids"]) == 3
    g = _load_one(MPS / "perop" / "op_cat_fp32.mpsgraph")
    (cat,) = _ops(g, "mps.Cat")
    assert len(node_operands(g, cat)["input_ids"]) == len(g.operands(cat)) >= 2


def test_phantom_ids_are_not_operands():
    """MPSReLU's table has input2_id and MPSFull's has input1_id; the backend never writes them."""
    g = _load_one(MPS / "perop" / "op_relu_fp32.mpsgraph")
    (relu,) = _ops(g, "mps.ReLU")
    assert len(g.operands(relu)) == 1
    g = _load_one(MPS / "perop" / "op_full_fp32.mpsgraph")
    (full,) = _ops(g, "mps.Full")
    assert g.operands(full) == []


def test_scalars_keep_their_declared_shape():
    shapes = Counter()
    for path in sorted((MPS / "perop").glob("op_*scalar*_fp32.mpsgraph")):
        g = _load_one(path)
        shapes.update(str(g.types(n)[0]) for n in _ops(g, "mps.constant"))
    assert "tensor<1xi32>" in shapes or "tensor<1xf32>" in shapes
    g = _load_one(MPS / "models" / "cnn_fp32.mpsgraph")
    assert all(g.types(n)[0].rank >= 1 for n in _ops(g, "mps.constant"))


def test_zero_dim_constants_are_rank_0():
    ranks = Counter()
    for e in ENTRIES[:200]:
        g = _load_one(CORPUS / e["file"])
        ranks.update(g.types(n)[0].rank for n in _ops(g, "mps.constant"))
    assert ranks[0] > 0 and ranks[1] > 0


def test_value_ids_out_of_topological_order_are_fine():
    """Some payloads read values defined by later value ids; the IR is still in dependency order."""
    g = _load_one(MPS / "models" / "cnn_fp32.mpsgraph")
    order = g.topological()
    assert all(order.index(v.node) < order.index(n) for n in order for v in g.operands(n))


def test_ir_text_round_trips_through_mlir():
    g = _load_one(MPS / "models" / "qlinear_int4_group32_fp32.mpsgraph")
    (back,) = parse_ir(print_ir(g))
    verify(back)
    assert back.histogram() == g.histogram() and back.meta == g.meta
    for a, b in zip(_ops(g, "mps.constant"), _ops(back, "mps.constant")):
        assert np.array_equal(g.attrs(a)["value"], back.attrs(b)["value"]) and g.types(a) == back.types(b)
    for a, b in zip(_ops(g, "mps.DequantizePerChannelGroup"), _ops(back, "mps.DequantizePerChannelGroup")):
        assert g.attrs(a) == back.attrs(b)


def test_metal_kernel_partitions_are_graphs_too():
    kinds = Counter(_load_one(CORPUS / e["file"]).meta["graph_type"] for e in ENTRIES
                    if "index_tensor" in e["file"] or "indexing_get" in e["file"])
    assert kinds["metal_kernel"] >= 1
