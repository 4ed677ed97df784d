"""bf16_bits, the one float -> bf16 storage rounder (legalization, lowering and both .tosa writers use
it), against ml_dtypes' bfloat16 (round to nearest even), NaNs included."""
from __future__ import annotations

import numpy as np
import pytest

from nn2tosa.ir.types import bf16_bits
from nn2tosa.tosa_flatbuffer import layout_0100, layout_1_0

ml_dtypes = pytest.importorskip("ml_dtypes", reason="ml_dtypes (from tosa-tools) gives numpy a bfloat16")


def _is_nan_bits(bits: np.ndarray) -> np.ndarray:
    return ((bits & 0x7F80) == 0x7F80) & ((bits & 0x007F) != 0)


def test_rounding_matches_ml_dtypes():
    rng = np.random.default_rng(0)
    words = np.concatenate([rng.integers(0, 2**32, 100_000, dtype=np.uint64).astype(np.uint32),
                            np.array([0x3F808000, 0x3F818000, 0x7F7FFFFF, 0xFF7FFFFF, 0x00008000, 0x80000000],
                                     np.uint32)])  # ties to even, the largest floats, subnormal, -0
    values = words.view(np.float32)
    finite = ~np.isnan(values)
    expected = values[finite].astype(ml_dtypes.bfloat16).view(np.uint16)
    np.testing.assert_array_equal(bf16_bits(values[finite]), expected)


@pytest.mark.parametrize("word", [0x7FC00000, 0xFFC00000, 0x7F800001, 0x7FFFFFFF, 0xFFFFFFFF, 0x7F80FFFF])
def test_every_nan_stays_a_nan(word):
    """Rounding a NaN's bits would carry into the exponent (0x7F800001 -> infinity) or the sign
    (0xFFFFFFFF -> 0): every NaN is the quiet NaN instead."""
    value = np.array([word], np.uint32).view(np.float32)
    assert _is_nan_bits(bf16_bits(value)).all()
    assert _is_nan_bits(np.array(bf16_bits(float(value[0])), dtype="<u2")).all()  # one Python float


def test_the_writers_scalars_keep_nan():
    """CLAMP bounds (1.0 writer) and float fields of the 0.100 writer go through the same rounder."""
    scalar = layout_1_0._scalar_bytes(float("nan"), "bf16").view("<u2")
    assert _is_nan_bits(scalar).all()
    assert _is_nan_bits(layout_0100._float_storage(float("nan"), "bf16")).all()
