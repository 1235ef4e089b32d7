"""Call-side checks of ranks, dtypes and constant dimensions."""

from __future__ import annotations

import pytest

from jaxport.domain.calls.front import check_arguments
from jaxport.domain.errors import DtypeMismatchError, RankMismatchError, ShapeMismatchError
from jaxport.domain.specs import ArraySpec

F32_3x4 = ArraySpec((3, 4), "float32")


def test_matching_arguments_pass() -> None:
    check_arguments([F32_3x4, ArraySpec((), "int32")], [F32_3x4, ArraySpec((), "int32", True)],
                    ["args[0]", "args[1]"])


def test_rank_mismatch_names_the_path_and_both_shapes() -> None:
    with pytest.raises(RankMismatchError, match=r"Rank mismatch for args\[0\]: expected \(3, 4\) and called with \(3,\)"):
        check_arguments([F32_3x4], [ArraySpec((3,), "float32")], ["args[0]"])


def test_dtype_mismatch_names_both_dtypes() -> None:
    with pytest.raises(DtypeMismatchError, match=r"Dtype mismatch for kwargs\['x'\]: expected float32 and called with int32"):
        check_arguments([F32_3x4], [ArraySpec((3, 4), "int32")], ["kwargs['x']"])


def test_shape_mismatch_names_the_dimension_in_jax_words() -> None:
    with pytest.raises(ShapeMismatchError) as info:
        check_arguments([F32_3x4], [ArraySpec((3, 5), "float32")], ["args[0]"])
    assert str(info.value) == ("Shape mismatch for args[0].shape[1] (expected same constant): "
                               "expected (3, 4) and called with (3, 5)")


def test_errors_are_value_errors_like_jax_export() -> None:
    with pytest.raises(ValueError):
        check_arguments([F32_3x4], [ArraySpec((4, 4), "float32")], ["args[0]"])
