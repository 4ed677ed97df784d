"""Every quantized file of the corpus (tolerance class "quantized": QAsymmU8, QAsymmS8, QSymmS8
per-axis weights, QSymmS16), lowered to integer TOSA with `semantics="cpuref"` (the integers Arm NN
CpuRef computes; LiteRT's, the default, are tests/corpus/test_litert_corpus.py's):

- the .tosa runs on the reference model with TOSA_VALID and gives Arm NN CpuRef's integers
  exactly, except in the files OFF_BY_ONE lists with the reason CpuRef's float32 arithmetic
  differs (there: at most one unit, and the elements that differ are counted);
- the MLIR passes strict tosa-validate for the target the converter reports, which is pro_int (+
  int16 for 16-bit data) unless float tensors are at the boundary or the op computes in float as
  CpuRef does (FLOAT_COMPUTE);
- for one file per family, tosa-opt --tosa-serialize of our MLIR gives a .tosa with the same
  outputs as ours.

uint8 tensors are fed and read as the same bits in int8 (corpus_harness.to_boundary), which is what
the converted graph takes and gives. Files that cannot be converted are in corpus_harness.KNOWN_GAPS.
"""
from __future__ import annotations

import functools
import os
import subprocess
import sysconfig
from fnmatch import fnmatch
from pathlib import Path

import numpy as np
import pytest

from conftest import requires_corpus
from corpus_harness import (Conversion, convert_entry, entries, entry_id, judge, known_gap, load_expected,
                            load_inputs, run_reference)

pytestmark = requires_corpus
QUANTIZED = entries(lambda e: e["tolerance"] == "quantized")

# Files whose integers may differ from CpuRef's by one unit, with the reason (measured on every
# element: tests/corpus/test_quant_corpus.py's table; the README section "Quantized models" has it too).
FLOAT_SUM = ("CpuRef adds float32 products: where the exact integer result lies within float32 rounding "
             "error of a half, its float sum lands on the other side")
OFF_BY_ONE = {
    "*/pooling2d_average_*": "exact halves in integers (sums of 2, 4 or 6 window elements): CpuRef's float32 "
                             "sum of decoded values lands just below the half and rounds toward zero",
    "*/resize_bilinear_*": "exact halves of the integer interpolation (weights in quarters) are rounded away from "
                           "zero; CpuRef's float32 interpolation lands some of them just off the half",
    "*/conv2d_*_qs16.armnn": FLOAT_SUM,
    "*/depthwiseconv2d_*_qu8.armnn": FLOAT_SUM,
    "*/transposeconv2d_*_qs16.armnn": FLOAT_SUM,
    "*/litert_*/q8_avg_pool_*": "exact halves in integers: CpuRef's float32 average lands just below the half",
    "*/litert_*/q8_resize_bilinear_align.armnn": "exact halves of the integer interpolation: CpuRef's float32 "
                                                 "interpolation lands some of them just off the half",
}
# Quantized files computed partly in f32, as CpuRef computes them, because no integer lowering of
# the op exists yet (quantization.float_fallback): the target adds pro_fp. Everything else is pro_int
# (+ int16) unless a float tensor is at the boundary (Quantize, Dequantize, Cast). These files run
# with semantics "cpuref"; under "litert" the int16 softmax, int8/uint8 L2 normalization and int16
# division files are integer only (TFLite's kernels: tests/lowering/test_litert_softmax_l2norm_div.py).
FLOAT_COMPUTE = ["*/division_*_qs16.armnn", "*/elementwisebinary_div_*_qs16.armnn", "*/elementwisebinary_power_*",
                 "*/l2norm_*", "*/pooling2d_l2_*", "*/pooling3d_l2_*", "*/reduce_prod_*",
                 "*/softmax_*_qs16.armnn", "*/tflm_dtln_noise_suppression.armnn",
                 "*/cast_s32_to_*",  # legalize-armnn converts Signed32 through float
                 "*/qlstm_*"]  # CpuRef's float32 steps between its int16 gate buffers (legalize_armnn/qlstm.py)


# Files whose numbers differ from CpuRef's, with the evidence. They convert to valid TOSA computing
# what the model means; CpuRef computes something else.
MISMATCH = {
    "*/tflm_dtln_noise_suppression.armnn":
        "CpuRef's int8 UnidirectionalSequenceLstm (LstmImpl with quantized scratch encoders) re-quantizes every "
        "gate buffer to the layer output's int8 scale after each multiply-add, saturating most gates of the first "
        "LSTM; the conversion computes the LSTM in f32 between dequantize and quantize (0 of 257 outputs exact, max "
        "200). A numpy emulation of that per-multiply-add requantization reaches 45 of 257 (max 27), so CpuRef "
        "differs further in a way its sources do not show",
}


def off_by_one_reason(e: dict) -> str | None:
    return next((why for pattern, why in OFF_BY_ONE.items() if fnmatch(e["file"], pattern)), None)


@functools.lru_cache(maxsize=None)
def _converted(file: str) -> Conversion:
    return convert_entry(next(e for e in QUANTIZED if e["file"] == file), semantics="cpuref")


@pytest.mark.parametrize("e", QUANTIZED, ids=entry_id)
def test_quantized_file_runs_under_the_default_semantics(e):
    """LiteRT's integers (the default) for every quantized file: it converts, validates strictly for the
    target it reports, and runs TOSA_VALID (how close to LiteRT: tests/corpus/test_litert_corpus.py)."""
    conv = convert_entry(e)
    if known_gap(e) is not None:
        assert conv.unsupported
        return
    assert not conv.unsupported, conv.unsupported
    assert conv.result.validate() == []
    _, status = run_reference(conv.tosa, load_inputs(e))
    assert status == "TOSA_VALID"


@pytest.mark.parametrize("e", QUANTIZED, ids=entry_id)
def test_quantized_file_gives_cpuref_integers(e):
    gap = known_gap(e)
    conv = _converted(e["file"])
    if gap is not None:
        assert any(gap in u for u in conv.unsupported), conv.unsupported
        return
    assert not conv.unsupported, conv.unsupported
    outputs, status = run_reference(conv.tosa, load_inputs(e))
    assert status == "TOSA_VALID"
    if not e["expected_files"]:
        return
    j = judge(load_expected(e), outputs, "quantized")
    mismatch = next((why for pattern, why in MISMATCH.items() if fnmatch(e["file"], pattern)), None)
    if mismatch is not None:
        assert not j.ok, "it matches CpuRef now: take it out of MISMATCH"
        pytest.xfail(mismatch)
    assert j.worse == 0, j.problems
    if off_by_one_reason(e) is None:
        assert j.off_by_one == 0, f"{j.off_by_one} elements off by one: exact was expected"


@pytest.mark.parametrize("e", QUANTIZED, ids=entry_id)
def test_quantized_file_validates_for_its_integer_target(e):
    conv = _converted(e["file"])
    if conv.unsupported:
        pytest.skip("not converted (KNOWN_GAPS)")
    target = conv.result.target
    assert conv.result.validate() == []
    float_boundary = any(t["dtype"] in ("Float32", "Float16") for t in e["inputs"] + e["outputs"])
    computes_in_float = any(fnmatch(e["file"], pattern) for pattern in FLOAT_COMPUTE)
    assert ("pro_fp" in target.profiles) == (float_boundary or computes_in_float), target.reasons


TOSA_OPT = Path(sysconfig.get_paths()["purelib"]) / "bin" / "tosa-opt"
# one file per family of quantized rules
SERIALIZED = ["conv2d_nhwc_k3s1_perchannel_qu8", "conv2d_nhwc_k3s1_same_bias_qs16", "depthwiseconv2d_nhwc_k3s1_m1_qs8",
              "transposeconv2d_nhwc_k3s2_perchannel_qs8", "fullyconnected_bias_transposew_qu8",
              "batchmatmul_plain_3d_qs16", "activation_sigmoid_qs16", "elementwisebinary_add_bcast_qu8",
              "softmax_beta2_axis1_qs8", "pooling2d_average_nhwc_k3s2_asympad_ignorevalue_qu8", "cast_qs8_to_qu8",
              "concat_axis3_3inputs_qu8", "batchnorm_nchw_qu8", "reduce_mean_axes12_keep1_qs16"]


@pytest.mark.skipif(not TOSA_OPT.exists(), reason="tosa-opt comes with tosa-tools")
@pytest.mark.parametrize("name", SERIALIZED)
def test_tosa_opt_serialization_of_our_mlir_agrees(name, tmp_path):
    e = next(e for e in QUANTIZED if e["file"].endswith(f"/{name}.armnn"))
    conv = _converted(e["file"])
    mlir_path, tosa_path = tmp_path / "g.mlir", tmp_path / "g.tosa"
    conv.result.write(str(mlir_path), "mlir")
    subprocess.run([str(TOSA_OPT), f"--tosa-serialize=tosa-flatbuffer-filename={tosa_path} "
                    "retain-graph-input-output-names", str(mlir_path), "-o", os.devnull], check=True, timeout=300)
    inputs = load_inputs(e)
    ours, status = run_reference(conv.tosa, inputs)
    theirs, their_status = run_reference(tosa_path.read_bytes(), inputs)
    assert status == their_status == "TOSA_VALID"
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_array_equal(a, b)


def test_every_listed_pattern_names_files():
    for pattern in [*OFF_BY_ONE, *FLOAT_COMPUTE, *MISMATCH]:
        assert any(fnmatch(e["file"], pattern) for e in QUANTIZED), pattern
