"""The seed's layout (TOSA 0.90 semantics, stamped 0.100.0 draft): `--tosa-version 0.100-draft`.

No current Arm tool reads it, so it is checked three ways on every graph of test_emit.py:
  (a) our reader reads it back (version 0.100.0 draft) and writing 0.100 again gives the same bytes;
  (b) flatc (25.2.10, from tosa-tools) decodes it with the seed schema, and the decoded fields hold
      what the 1.0 graph had as operands: zero points, shifts, multipliers, tables, pad values, shapes;
  (c) 1.0 -> 0.100 -> 1.0 gives the same reference-model outputs as the original .tosa.
Hand-written seed-layout files (flatc from JSON, independent of our writer) check the reader against
numpy; what 0.90 cannot express is refused with every reason at once.
"""
from __future__ import annotations

import functools
import json
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conftest import run_cli
from test_emit import CASES, Case, built, ml_dtypes, np_rescale, np_resize, our_outputs, run_reference, trm
from test_tosa_reader import FLATC, SCHEMAS, assert_same_outputs, flatc_binary, read_one

from nn2tosa.diagnostics import UnsupportedError
from nn2tosa.frontend import load
from nn2tosa.ir import INPUT_OP, Graph
from nn2tosa.lowering.flatbuffer_0100 import build_flatbuffer_0100
from nn2tosa.tosa_flatbuffer.layout_0100 import LEGACY_OPS, fp8_values
from nn2tosa.lowering.flatbuffer_emitter import build_flatbuffer

# Graphs of test_emit.py that 0.90 cannot express, and the reasons the refusal must give.
REFUSED = {
    "conv2d_f16_f32_accumulator": ["f32 accumulator with a f16 output"],
    "elementwise_f32": ["nan_mode IGNORE"],
    "unary_f32": ["SIN is not a TOSA 0.90 operator", "COS is not a TOSA 0.90 operator"],
}
WRITTEN = [name for name in CASES if name not in REFUSED]


@functools.lru_cache(maxsize=None)
def seed_file(name: str) -> bytes:
    return bytes(build_flatbuffer_0100(built(name)[0].g))


@functools.lru_cache(maxsize=None)
def flatc_json(name: str) -> dict[str, Any]:
    """flatc's own decoding of the 0.100 file with the seed schema."""
    if not FLATC.exists():
        pytest.skip("flatc comes with tosa-tools")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "g.tosa"
        path.write_bytes(seed_file(name))
        subprocess.run([str(FLATC), "--json", "--strict-json", "--defaults-json", "--raw-binary", "-o", tmp,
                        str(SCHEMAS / "tosa_0_100.fbs"), "--", str(path)], check=True, capture_output=True, timeout=60)
        return json.loads((Path(tmp) / "g.json").read_text())


def operators(doc: dict[str, Any], op: str) -> list[dict[str, Any]]:
    return [o for o in doc["regions"][0]["blocks"][0]["operators"] if o["op"] == op]


def tensor_types(doc: dict[str, Any]) -> dict[str, str]:
    return {t["name"]: t["type"] for t in doc["regions"][0]["blocks"][0]["tensors"]}


# ------------------------------------------------------------------------------ the three checks
@pytest.mark.parametrize("name", WRITTEN)
def test_our_reader_reads_it_and_rewrites_the_same_bytes(name):
    g = read_one(seed_file(name))
    assert (g.meta["version"], g.meta["layout"]) == ("0.100.0 draft", "0.100")
    assert bytes(build_flatbuffer_0100(g)) == seed_file(name)


@pytest.mark.parametrize("name", WRITTEN)
def test_flatc_decodes_it_with_the_seed_schema(name):
    doc = flatc_json(name)
    assert doc["version"] == {"_major": 0, "_minor": 100, "_patch": 0, "_draft": True}
    g = built(name)[0].g
    expected = {LEGACY_OPS[g.op(n)].op for n in g.nodes() if g.op(n) not in (INPUT_OP, "tosa.const", "tosa.const_shape")}
    written = {o["op"] for o in doc["regions"][0]["blocks"][0]["operators"]}
    assert expected <= written <= expected | {"CONST", "IDENTITY"}


@pytest.mark.parametrize("name", WRITTEN)
def test_1_0_to_0100_to_1_0_gives_the_same_reference_outputs(name):
    c, _ = built(name)
    again = bytes(build_flatbuffer(read_one(seed_file(name))))
    assert_same_outputs(list(our_outputs(name)), run_reference(again, c.feeds))


@pytest.mark.parametrize("name", REFUSED)
def test_what_0_90_cannot_express_is_refused_with_every_reason(name):
    with pytest.raises(UnsupportedError) as e:
        build_flatbuffer_0100(built(name)[0].g)
    assert len(e.value.items) == len(REFUSED[name])
    for reason in REFUSED[name]:
        assert reason in str(e.value)


def test_the_reference_model_rejects_the_seed_layout():
    """The fact that makes checks (a)-(c) necessary (FORMATS.md)."""
    c, _ = built("conv2d_f32")
    with pytest.raises(ValueError, match="Invalid TOSA graph"):
        trm.run(seed_file("conv2d_f32"), c.feeds, tosa_level="EIGHTK")


# ------------------------------------------------------------------------------ what the fields hold (flatc's view)
def test_rescale_fields_and_unsigned_types():
    doc = flatc_json("rescale_modes")
    single, double, per_channel, from_u8 = (o["attribute"] for o in operators(doc, "RESCALE"))
    assert (single["multiplier"], single["shift"], single["output_zp"], single["double_round"]) == \
        ([1373724854], [36], -5, False)
    assert double["double_round"] is True
    assert (per_channel["multiplier"], per_channel["shift"], per_channel["per_channel"], per_channel["scale32"]) == \
        ([20000, 16384, 30000], [14, 15, 16], True, False)
    assert (per_channel["input_zp"], per_channel["output_zp"]) == (4, -3)
    assert (from_u8["input_zp"], from_u8["input_unsigned"]) == (128, True)  # the unsigned number, not -128
    assert tensor_types(doc)["u8"] == "UINT8" and tensor_types(doc)["from_u8"] == "INT8"
    assert all(len(o["inputs"]) == 1 for o in operators(doc, "RESCALE"))  # constants folded into fields
    assert not operators(doc, "CONST")


def test_convolution_and_pooling_fields():
    conv = operators(flatc_json("conv2d_i8_zero_points"), "CONV2D")[0]
    assert conv["attribute_type"] == "ConvAttribute"
    assert (conv["attribute"]["input_zp"], conv["attribute"]["weight_zp"], len(conv["inputs"])) == (-3, 5, 3)
    transpose = operators(flatc_json("transpose_conv2d_f32"), "TRANSPOSE_CONV2D")[0]["attribute"]
    assert transpose["output_shape"] == [1, 8, 5, 3]
    doc = flatc_json("pooling_f32_i8")
    avg, = operators(doc, "AVG_POOL2D")
    assert avg["attribute_type"] == "PoolAttribute" and avg["attribute"]["accum_dtype"] == "FP32"
    assert operators(doc, "MAX_POOL2D")[0]["attribute_type"] == "PoolAttribute"
    matmul = operators(flatc_json("matmul_i8_and_f16"), "MATMUL")[0]["attribute"]
    assert (matmul["a_zp"], matmul["b_zp"]) == (2, -1)


def test_shape_pad_clamp_mul_table_and_resize_fields():
    doc = flatc_json("data_layout_f32")
    assert operators(doc, "RESHAPE")[0]["attribute"]["new_shape"] == [4, 6]
    assert operators(doc, "SLICE")[0]["attribute"] == {"start": [1, 0, 1], "size": [1, 2, 3]}
    assert operators(doc, "TILE")[0]["attribute"]["multiples"] == [1, 2, 1]
    pad = operators(doc, "PAD")[0]["attribute"]
    assert pad["padding"] == [0, 1, 2, 0, 1, 1]
    assert np.frombuffer(bytes(pad["pad_const_fp"][:4]), "<f4")[0] == 1.5
    assert operators(doc, "CONCAT")[0]["attribute_type"] == "AxisAttribute"
    assert not operators(doc, "CONST_SHAPE")
    doc = flatc_json("small_integers_i8_i16")
    clamp = operators(doc, "CLAMP")[0]["attribute"]
    assert (clamp["min_int"], clamp["max_int"]) == (-20, 30)
    negate = operators(doc, "NEGATE")[0]["attribute"]
    assert (negate["input1_zp"], negate["output_zp"]) == (3, -2)
    bf16_clamp = operators(flatc_json("bf16_arithmetic"), "CLAMP")[0]["attribute"]
    assert np.frombuffer(bytes(bf16_clamp["min_fp"][:4]), "<f4")[0] == np.float32(ml_dtypes.bfloat16(-0.3))
    shifts = [o["attribute"]["shift"] for o in operators(flatc_json("integer_arithmetic_i32"), "MUL")]
    assert shifts == [3]
    table8, table16 = (o["attribute"]["table"] for o in operators(flatc_json("tables_i8_i16"), "TABLE"))
    assert (len(table8), len(table16)) == (256, 513)
    resize = [o["attribute"] for o in operators(flatc_json("resize_i8_bilinear_f32_nearest"), "RESIZE")]
    assert [(r["scale"], r["offset"], r["border"], r["mode"]) for r in resize] == \
        [([2, 1, 2, 1], [0, 0], [1, 1], "BILINEAR"), ([3, 2, 3, 2], [1, -1], [-1, 1], "NEAREST")]


# ------------------------------------------------------------------------------ files our writer did not make
def _seed_doc(tensors: list[dict], operators_: list[dict], inputs: list[str], outputs: list[str]) -> str:
    return json.dumps({"version": {"_major": 0, "_minor": 100, "_patch": 0, "_draft": True},
                       "regions": [{"name": "main", "blocks": [{"name": "main", "tensors": tensors,
                                                                "operators": operators_, "inputs": inputs,
                                                                "outputs": outputs}]}]})


def _t(name: str, shape: list[int], dtype: str, data: np.ndarray | None = None) -> dict:
    t = {"name": name, "shape": shape, "type": dtype}
    if data is not None:
        t["data"] = list(np.ascontiguousarray(data).view(np.uint8).reshape(-1).tolist())
    return t


def test_hand_written_seed_file_runs_as_numpy_says(tmp_path):
    """CONV2D and FULLY_CONNECTED with zero points, RESCALE of UINT8 data, PAD with a float32
    pad_const_fp, RESHAPE and RESIZE with attribute shapes: written by flatc from JSON."""
    rng = np.random.default_rng(11)
    x = rng.integers(-128, 127, (1, 3, 3, 2), dtype=np.int8)
    w = rng.integers(-127, 127, (2, 1, 1, 2), dtype=np.int8)
    bias = np.array([100, -100], np.int32)
    fc_x = rng.integers(-128, 127, (2, 3), dtype=np.int8)
    fc_w = rng.integers(-127, 127, (4, 3), dtype=np.int8)
    fc_b = np.arange(4, dtype=np.int32)
    u8 = rng.integers(0, 255, (5,), dtype=np.uint8)
    f = rng.uniform(-1, 1, (1, 2, 2, 1)).astype(np.float32)
    doc = _seed_doc(
        [_t("x", [1, 3, 3, 2], "INT8"), _t("w", [2, 1, 1, 2], "INT8", w), _t("b", [2], "INT32", bias),
         _t("conv", [1, 3, 3, 2], "INT32"),
         _t("fc_x", [2, 3], "INT8"), _t("fc_w", [4, 3], "INT8", fc_w), _t("fc_b", [4], "INT32", fc_b),
         _t("fc", [2, 4], "INT32"),
         _t("u8", [5], "UINT8"), _t("s8", [5], "INT8"),
         _t("f", [1, 2, 2, 1], "FP32"), _t("padded", [1, 3, 4, 1], "FP32"), _t("flat", [12], "FP32"),
         _t("big", [1, 4, 4, 1], "FP32")],
        [{"op": "CONST", "outputs": ["w"]}, {"op": "CONST", "outputs": ["b"]},
         {"op": "CONV2D", "attribute_type": "ConvAttribute", "inputs": ["x", "w", "b"], "outputs": ["conv"],
          "attribute": {"pad": [0, 0, 0, 0], "stride": [1, 1], "dilation": [1, 1], "input_zp": -3, "weight_zp": 2}},
         {"op": "CONST", "outputs": ["fc_w"]}, {"op": "CONST", "outputs": ["fc_b"]},
         {"op": "FULLY_CONNECTED", "attribute_type": "FullyConnectedAttribute", "inputs": ["fc_x", "fc_w", "fc_b"],
          "outputs": ["fc"], "attribute": {"input_zp": 5, "weight_zp": 0}},
         {"op": "RESCALE", "attribute_type": "RescaleAttribute", "inputs": ["u8"], "outputs": ["s8"],
          "attribute": {"input_zp": 128, "output_zp": 0, "multiplier": [1 << 30], "shift": [30], "scale32": True}},
         {"op": "PAD", "attribute_type": "PadAttribute", "inputs": ["f"], "outputs": ["padded"],
          "attribute": {"padding": [0, 0, 1, 0, 1, 1, 0, 0],
                        "pad_const_fp": np.array([2.5], "<f4").view(np.uint8).tolist()}},
         {"op": "RESHAPE", "attribute_type": "ReshapeAttribute", "inputs": ["padded"], "outputs": ["flat"],
          "attribute": {"new_shape": [12]}},
         {"op": "RESIZE", "attribute_type": "ResizeAttribute", "inputs": ["f"], "outputs": ["big"],
          "attribute": {"scale": [4, 2, 4, 2], "offset": [0, 0], "border": [2, 2], "mode": "NEAREST"}}],
        ["x", "fc_x", "u8", "f"], ["conv", "fc", "s8", "flat", "big"])
    g = read_one(flatc_binary(doc, "tosa_0_100", tmp_path))
    assert g.histogram()["tosa.conv2d"] == 2  # FULLY_CONNECTED became a 1x1 convolution
    rescale = next(n for n in g.nodes() if g.op(n) == "tosa.rescale")
    assert g.attrs(rescale)["input_unsigned"] is True
    outputs = run_reference(bytes(build_flatbuffer(g)), [x, fc_x, u8.view(np.int8), f])
    conv = (x.astype(np.int32) + 3) @ (w.reshape(2, 2).astype(np.int32) - 2).T + bias
    np.testing.assert_array_equal(outputs[0], conv)
    np.testing.assert_array_equal(outputs[1], (fc_x.astype(np.int32) - 5) @ fc_w.T.astype(np.int32) + fc_b)
    np.testing.assert_array_equal(outputs[2], np_rescale(u8.view(np.int8), 1 << 30, 30, 128, 0, np.int8,
                                                         in_unsigned=True))
    np.testing.assert_array_equal(outputs[3], np.pad(f, ((0, 0), (1, 0), (1, 1), (0, 0)), constant_values=2.5)
                                  .reshape(12))
    np.testing.assert_array_equal(outputs[4], np_resize(f, [4, 2, 4, 2], [0, 0], [2, 2], "NEAREST", integer=False))


def test_seed_content_without_a_1_0_form_is_unsupported_all_at_once(tmp_path):
    doc = _seed_doc(
        [_t("u8", [4], "UINT8"), _t("sum", [4], "UINT8"), _t("s", [1], "INT32"), _t("d", [1], "INT32")],
        [{"op": "ADD", "inputs": ["u8", "u8"], "outputs": ["sum"]},
         {"op": "DIM", "inputs": ["u8"], "outputs": ["d"]}],
        ["u8", "s"], ["sum", "d"])
    with pytest.raises(UnsupportedError) as e:
        load(flatc_binary(doc, "tosa_0_100", tmp_path))
    assert [i.what for i in e.value.items] == ["ADD", "DIM"]
    assert "UINT8 tensor 'u8'" in str(e.value) and "no TOSA 1.0 counterpart" in str(e.value)


# ------------------------------------------------------------------------------ refusals
def _refused_graph() -> Graph:
    c = Case()
    x = c.input("x", np.ones((2, 2), np.float32))
    c.output(c.op("sin", [x], (2, 2), "f32"), "sin", np.zeros(1))
    c.output(c.op("cos", [x], (2, 2), "f32"), "cos", np.zeros(1))
    c.output(c.op("minimum", [x, x], (2, 2), "f32", nan_mode="IGNORE"), "min", np.zeros(1))
    q = c.input("q", np.ones((3,), np.int32))
    c.output(c.op("rescale", [q, c.const([1 << 30], "i32"), c.const([30], "i8"), c.zp("i32"), c.zp("i8")], (3,), "i8",
                  scale32=True, rounding_mode="INEXACT_ROUND", per_channel=False, input_unsigned=False,
                  output_unsigned=False), "r", np.zeros(1))
    u = c.input("u", np.ones((3,), np.int8))
    c.output(c.op("rescale", [u, c.const([1 << 30], "i32"), c.const([30], "i8"), c.zp("i8", -128), c.zp("i8")], (3,),
                  "i8", scale32=True, rounding_mode="SINGLE_ROUND", per_channel=False, input_unsigned=True,
                  output_unsigned=False), "from_u8", np.zeros(1))
    c.output(c.op("reverse", [u], (3,), "i8", axis=0), "u_reversed", np.zeros(1))
    return c.g


def test_every_refusal_is_listed_at_once_and_the_cli_exits_3(tmp_path):
    g = _refused_graph()
    with pytest.raises(UnsupportedError) as e:
        build_flatbuffer_0100(g)
    message = str(e.value)
    assert len(e.value.items) == 5
    for reason in ("SIN is not", "COS is not", "nan_mode IGNORE", "rounding_mode INEXACT_ROUND",
                   "reads a value a RESCALE treats as unsigned"):
        assert reason in message
    source = tmp_path / "g.tosa"
    source.write_bytes(bytes(build_flatbuffer(g)))
    r = run_cli("convert", str(source), "--tosa-version", "0.100-draft", "-o", str(tmp_path / "old.tosa"))
    assert r.returncode == 3 and r.stderr.decode().count("\n") == 1
    assert "5 unsupported constructs" in r.stderr.decode()
    assert not (tmp_path / "old.tosa").exists()


def test_cli_writes_the_seed_layout(tmp_path):
    source = tmp_path / "g.tosa"
    source.write_bytes(built("data_layout_i8_i16")[1])
    r = run_cli("convert", str(source), "--tosa-version", "0.100-draft", "-o", str(tmp_path / "old.tosa"))
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "old.tosa").read_bytes() == seed_file("data_layout_i8_i16")
    r = run_cli("inspect", "--json", str(tmp_path / "old.tosa"))
    assert json.loads(r.stdout)["version"] == "0.100.0 draft"


def test_fp8_values_match_ml_dtypes():
    for element_type, numpy_type in (("f8E4M3FN", ml_dtypes.float8_e4m3fn), ("f8E5M2", ml_dtypes.float8_e5m2)):
        expected = np.arange(256, dtype=np.uint8).view(numpy_type).astype(np.float32)
        np.testing.assert_array_equal(fp8_values(element_type), expected)
