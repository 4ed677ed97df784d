"""LiteRT's integers, the default semantics, on every corpus file that has LiteRT's outputs
(`litert_files` in the manifest: armnn/litert_*, TFLiteConverter models parsed by Arm NN).

Each file converts, runs TOSA_VALID and equals LiteRT's outputs on every element. A file that is not
exact yet is listed in NOT_EXACT with the reason and the largest difference measured; it is held to
that bound, reported as an expected failure (never as a pass), and the test fails once it is exact so
that the list stays true. `python bench/litert_exact.py` prints the per-file table.
"""
from __future__ import annotations

import functools
from fnmatch import fnmatch

import numpy as np
import pytest

from conftest import requires_corpus
from corpus_harness import Conversion, convert_entry, data_path, entries, entry_id, load_inputs, run_reference

pytestmark = requires_corpus
LITERT = entries(lambda e: bool(e.get("litert_files")))

# file pattern -> (largest |difference| from LiteRT measured, why it cannot be exact)
NOT_EXACT: dict[str, tuple[int, str]] = {
    "*/q8_reduce_sum.armnn": (54, "LiteRT's reference SUM kernel reads int8 data as uint8 (reduce.cc passes "
                                  "GetTensorData<uint8_t> whatever the type): the lowering computes the sum LiteRT's "
                                  "builtin kernel computes (0 of 1,800 random elements off)"),
    "*/q8_resize_bilinear_half_pixel.armnn": (56, "the .armnn lost half_pixel_centers (Arm NN's TfLite parser "
                                                  "left it false; CpuRef computes the plain resize too)"),
}


def not_exact(e: dict) -> tuple[int, str] | None:
    return next((v for pattern, v in NOT_EXACT.items() if fnmatch(e["file"], pattern)), None)


@functools.lru_cache(maxsize=None)
def _converted(file: str) -> Conversion:
    return convert_entry(next(e for e in LITERT if e["file"] == file))


@pytest.mark.parametrize("e", LITERT, ids=entry_id)
def test_file_gives_litert_integers(e):
    conv = _converted(e["file"])
    assert not conv.unsupported, conv.unsupported
    outputs, status = run_reference(conv.tosa, load_inputs(e))
    assert status == "TOSA_VALID"
    worst, off, total = 0, 0, 0
    for name, got in zip(e["litert_files"], outputs, strict=True):
        want = np.load(data_path(e, name))
        got = np.asarray(got).reshape(want.shape)
        if got.dtype != want.dtype:  # uint8 data travels as the same bits in int8
            got = got.view(want.dtype)
        diff = np.abs(want.astype(np.int64) - got.astype(np.int64))
        worst, off, total = max(worst, int(diff.max())), off + int((diff > 0).sum()), total + diff.size
    known = not_exact(e)
    if known is None:
        assert worst == 0, f"{off} of {total} elements differ from LiteRT (max {worst})"
        return
    bound, why = known
    assert worst > 0, "exact to LiteRT now: take it out of NOT_EXACT"
    assert worst <= bound, f"{off} of {total} elements differ from LiteRT, max {worst} > the known {bound} ({why})"
    pytest.xfail(f"{off} of {total} elements off, max {worst}: {why}")


# FullyConnected is not among them: LiteRT's reference FULLY_CONNECTED rounds acc * scale once, in double
REQUANTIZING = {"Convolution2d", "DepthwiseConvolution2d", "TransposeConvolution2d"}


@pytest.mark.parametrize("e", LITERT, ids=entry_id)
def test_file_validates_for_its_integer_target(e):
    """Strict tosa-validate for the target reported; TFLite's requantization of a convolution is
    RESCALE's DOUBLE_ROUND, so there the target includes EXT-DOUBLEROUND."""
    result = _converted(e["file"]).result
    assert result.validate() == []
    if REQUANTIZING & set(e["histogram"]):
        assert "doubleround" in result.target.extensions, result.target.reasons


def test_every_listed_pattern_names_files():
    for pattern in NOT_EXACT:
        assert any(fnmatch(e["file"], pattern) for e in LITERT), pattern
