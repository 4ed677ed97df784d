"""Running converted corpus models on the TOSA reference model and judging their outputs.

This module is test infrastructure, independent of the converter: it feeds the corpus' own
`.npy` inputs to a `.tosa` and compares the outputs with the source runtime's, using the
tolerance classes of the corpus README:
  fp32       max |err| / max(1, max |expected|) <= 1e-4
  fp16       the same ratio <= 3e-2
  quantized  integers within 1 unit of the last place (counts of exact / off-by-one / worse kept)
  mixed      integers and booleans exact, floats as fp32
TOSA has no unsigned or 64-bit integer tensors at the boundary: uint8 data travels as the same bits
in int8, and int64 data as int32 (values must fit).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from conftest import CORPUS, corpus_manifest

from nn2tosa.check import FLOAT_BOUND, float_error  # the `check` command's comparison: the corpus README's classes

os.environ.setdefault("TOSA_MODEL_NO_BACKTRACE", "1")


def entries(predicate=lambda e: True) -> list[dict]:
    return [e for e in corpus_manifest() if predicate(e)]


def entry_id(e: dict) -> str:
    return e["file"]


def model_path(e: dict) -> Path:
    return CORPUS / e["file"]


def data_path(e: dict, name: str) -> Path:
    return model_path(e).parent / name


def to_boundary(a: np.ndarray) -> np.ndarray:
    """The array as the TOSA graph's boundary tensor holds it (uint8 as int8 bits, int64 as int32)."""
    if a.dtype == np.uint8:
        return a.view(np.int8)
    if a.dtype == np.uint16:
        return a.view(np.int16)
    if a.dtype == np.int64:
        if a.size and (a.max() > np.iinfo(np.int32).max or a.min() < np.iinfo(np.int32).min):
            raise ValueError("int64 input does not fit int32")
        return a.astype(np.int32)
    return a


def load_inputs(e: dict) -> list[np.ndarray]:
    return [to_boundary(np.load(data_path(e, f))) for f in e["input_files"]]


def load_expected(e: dict) -> list[np.ndarray]:
    return [np.load(data_path(e, f)) for f in e["expected_files"]]


def run_reference(tosa: bytes, inputs: list[np.ndarray]) -> tuple[list[np.ndarray], str]:
    import tosa_reference_model as trm

    outs, status = trm.run(tosa, [np.ascontiguousarray(a) for a in inputs], tosa_level="EIGHTK")
    return list(outs), str(status).rsplit(".", 1)[-1]


@dataclass
class Judgement:
    ok: bool
    max_error: float = 0.0  # floats: relative error; integers: max |difference|
    exact: int = 0
    off_by_one: int = 0
    worse: int = 0
    problems: list[str] = field(default_factory=list)


def judge(expected: list[np.ndarray], actual: list[np.ndarray], tolerance: str) -> Judgement:
    j = Judgement(ok=True)
    if len(expected) != len(actual):
        return Judgement(False, problems=[f"{len(actual)} outputs, expected {len(expected)}"])
    for i, (want, got) in enumerate(zip(expected, actual)):
        got = np.asarray(got)
        if got.size != want.size:
            j.ok = False
            j.problems.append(f"output {i}: {got.size} elements, expected {want.size} ({want.shape})")
            continue
        got = got.reshape(want.shape)
        if want.dtype.kind == "f":
            err, nan_mismatches, inf_mismatches = float_error(want, got)
            j.max_error = max(j.max_error, err)
            if nan_mismatches or inf_mismatches or err > FLOAT_BOUND[tolerance]:
                j.ok = False
                j.problems.append(f"output {i}: relative error {err:.3g}, {nan_mismatches} NaN and "
                                  f"{inf_mismatches} inf mismatches")
        else:
            w = want.astype(np.int64)
            g = (got.view(want.dtype) if got.dtype.itemsize == want.dtype.itemsize and got.dtype != want.dtype
                 else got).astype(np.int64)
            diff = np.abs(w - g)
            j.exact += int((diff == 0).sum())
            j.off_by_one += int((diff == 1).sum())
            j.worse += int((diff > 1).sum())
            j.max_error = max(j.max_error, float(diff.max()) if diff.size else 0.0)
            allowed = 1 if tolerance == "quantized" else 0
            if diff.size and diff.max() > allowed:
                j.ok = False
                j.problems.append(f"output {i}: {int((diff > allowed).sum())} of {diff.size} integers differ by more "
                                  f"than {allowed} (max {int(diff.max())})")
    return j


# ------------------------------------------------------------------------------ converting corpus files
@dataclass
class Conversion:
    """What converting one corpus file gave: the TOSA-level graph and its .tosa, or why not."""

    result: object | None = None  # nn2tosa.api.Result
    tosa: bytes | None = None
    unsupported: list[str] = field(default_factory=list)


def convert_entry(e: dict, **options) -> Conversion:
    from nn2tosa.api import convert
    from nn2tosa.diagnostics import UnsupportedError
    from nn2tosa.lowering.flatbuffer_emitter import build_flatbuffer

    try:
        result = convert(model_path(e), **options)
    except UnsupportedError as err:
        return Conversion(unsupported=[str(i) for i in err.items])
    return Conversion(result, bytes(build_flatbuffer(result.graph)))


# Files whose conversion is expected to report unsupported constructs, with the reason that
# must appear. Everything else in the corpus must convert.
KNOWN_GAPS: dict[str, str] = {
    # slicing 0 elements gives a tensor with a dimension of 0, which TOSA cannot hold
    "mps/perop/ut_slice_copy_dim_0_fp32.mpsgraph": "zero-size tensor",
    # run-time control flow, placeholders and an operation Arm NN itself never defined (all noexec/)
    "switch_*.armnn": "routes its input to one of two outputs by a run-time condition",
    "merge_*.armnn": "forwards whichever input is available",
    "standin_*.armnn": "a placeholder for a layer Arm NN could not represent",
    "normalization_*_localcontrast_*.armnn": "LocalContrast normalization has no defined computation in Arm NN",
}


# Files that convert and run but are known not to reach their tolerance class, with the reason and
# the largest error measured (integers: LSB); the test holds them to that bound so they cannot drift.
KNOWN_MISMATCHES: dict[str, tuple[float, str]] = {
    "armnn/tflite_23.08/tflm_dtln_noise_suppression.armnn": (
        200, "CpuRef's int8 UnidirectionalSequenceLstm re-quantizes every gate buffer to the output's int8 scale "
             "after each multiply-add (saturating most gates); nn2tosa computes the LSTM in f32 between "
             "dequantize and quantize under cpuref (within 2 of LiteRT), and LiteRT's integer kernel under the "
             "default semantics (exact to LiteRT: tests/lowering/test_lstm_integer.py)"),
}


def known_gap(e: dict) -> str | None:
    for pattern, reason in KNOWN_GAPS.items():
        if Path(e["file"]).match(pattern):
            return reason
    return None
