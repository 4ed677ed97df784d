"""The judge of the corpus tests must itself be able to fail."""
import numpy as np

from corpus_harness import judge, to_boundary


def test_fp32_bound_is_relative_to_the_largest_value():
    want = np.array([1000.0, 1.0], np.float32)
    assert judge([want], [want + np.float32(0.05)], "fp32").ok  # 5e-5 relative
    assert not judge([want], [want + np.float32(0.5)], "fp32").ok


def test_nan_and_inf_must_match():
    want = np.array([np.nan, np.inf, 1.0], np.float32)
    assert judge([want], [want.copy()], "fp32").ok
    assert not judge([want], [np.array([0.0, np.inf, 1.0], np.float32)], "fp32").ok
    assert not judge([want], [np.array([np.nan, -np.inf, 1.0], np.float32)], "fp32").ok


def test_quantized_allows_one_lsb_and_counts():
    want = np.array([0, 10, 255], np.uint8)
    got = np.array([0, 11, 255], np.uint8).view(np.int8)  # uint8 travels as int8 bits
    j = judge([want], [got], "quantized")
    assert j.ok and (j.exact, j.off_by_one, j.worse) == (2, 1, 0)
    assert not judge([want], [np.array([0, 12, 255], np.uint8)], "quantized").ok


def test_mixed_integers_are_exact_and_shapes_count():
    assert not judge([np.array([1, 2], np.int32)], [np.array([1, 3], np.int32)], "mixed").ok
    assert not judge([np.zeros(3, np.float32)], [np.zeros(4, np.float32)], "fp32").ok
    assert not judge([np.zeros(3, np.float32)], [], "fp32").ok


def test_boundary_types():
    assert to_boundary(np.array([200], np.uint8)).dtype == np.int8
    assert to_boundary(np.array([5], np.int64)).dtype == np.int32
