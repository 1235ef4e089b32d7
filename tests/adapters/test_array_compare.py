"""Comparing an output with the recorded one, with NumPy: the largest error and scale, per dtype."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np

from jaxport.adapters.array_compare import compare


def test_floats_give_the_largest_absolute_error_and_the_largest_recorded_magnitude() -> None:
    want = np.array([[1.0, -4.0], [0.5, 0.0]], np.float32)
    got = want + np.array([[0.0, 0.25], [-0.5, 0.0]], np.float32)
    assert compare(got, want) == (0.5, 4.0, None)
    assert compare(np.float32(2.0), np.asarray(np.float32(2.5))) == (0.5, 2.5, None)


def test_nan_matches_nan_and_infinity_the_same_infinity_only() -> None:
    want = np.array([np.nan, np.inf, 1.0], np.float32)
    assert compare(want.copy(), want) == (0.0, 1.0, None)
    assert compare(np.array([0.0, np.inf, 1.0], np.float32), want)[0] == math.inf
    assert compare(np.array([np.nan, -np.inf, 1.0], np.float32), want)[0] == math.inf


def test_integers_that_differ_are_at_least_one_apart_and_bools_compare_as_numbers() -> None:
    big = np.array([2**62 + 1], np.int64)
    assert compare(big, np.array([2**62], np.int64))[0] >= 1.0
    assert compare(np.array([True, False]), np.array([True, True]))[0] == 1.0


def test_narrow_floats_and_complex_values_are_compared_widened() -> None:
    bf16 = np.dtype(ml_dtypes.bfloat16)
    assert compare(np.array([1.0, 2.0], bf16), np.array([1.0, 2.5], bf16)) == (0.5, 2.5, None)
    assert compare(np.array([1 + 1j], np.complex64), np.array([1 + 0j], np.complex64)) == (1.0, 1.0, None)


def test_another_shape_or_dtype_cannot_be_compared() -> None:
    assert compare(np.zeros((2, 3)), np.zeros((3, 2)))[2] == "the runtime returned shape (2, 3) where the example has (3, 2)"
    assert compare(np.zeros(2, np.float64), np.zeros(2, np.float32))[2] == \
        "the runtime returned dtype float64 where the example has float32"
    assert compare(np.zeros((0, 2), np.float32), np.zeros((0, 2), np.float32)) == (0.0, 0.0, None)
