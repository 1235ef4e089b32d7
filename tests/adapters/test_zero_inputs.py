"""The verifying child's inputs, for every dtype a target's table holds: zeros that the call front accepts.

Where a converted directory has no golden examples, the child calls each variant on
:func:`~jaxport.adapters.array_compare.zeros` of
:func:`~jaxport.domain.converted.smallest_inputs.smallest_inputs`; the first versions of the
child handed ``zeros`` the record's ``DType`` and made none, so that every variant was skipped.
"""

from __future__ import annotations

import numpy as np
import pytest

from jaxport.adapters.array_compare import zeros
from jaxport.domain.artifact.record import AvalRecord, DType, TreeSpec
from jaxport.domain.calls.front import check_call
from jaxport.domain.calls.signature import Signature
from jaxport.domain.converted.manifest import ConvertedFunction, Variant
from jaxport.domain.converted.smallest_inputs import smallest_inputs
from jaxport.domain.errors import ArtifactError
from jaxport.domain.targets.registry import TARGETS

#: Every dtype some target holds at its boundary (float, int, bool, complex, bfloat16, the 8-bit floats).
HELD = sorted({d for entry in TARGETS.values() for d in entry.plan.dtypes.dtypes}, key=lambda d: d.value)


def test_the_targets_hold_the_dtypes_the_child_must_make() -> None:
    names = {d.value for d in HELD}
    assert {"float32", "int64", "bool", "bfloat16", "float8_e4m3fn", "float8_e5m2", "complex64"} <= names


@pytest.mark.parametrize("dtype", HELD, ids=lambda d: d.value)
def test_the_child_makes_zeros_of_every_held_dtype_that_the_call_front_accepts(dtype: DType) -> None:
    leaf = TreeSpec.leaf()
    signature = Signature("f", TreeSpec.of_tuple(TreeSpec.of_tuple(leaf, leaf), TreeSpec.of_dict({})),
                          (AvalRecord(("b", "3"), dtype), AvalRecord((), dtype)), leaf,
                          (AvalRecord(("b",), dtype),), ("b >= 2",))
    variant = Variant("f.model")
    (specs,) = smallest_inputs(ConvertedFunction(signature, (variant,)), variant)
    arrays = [zeros([int(d) for d in s.shape], s.dtype) for s in specs]
    assert [(a.shape, str(a.dtype)) for a in arrays] == [((2, 3), dtype.value), ((), dtype.value)]
    wide = np.complex128 if dtype.value.startswith("complex") else np.float64
    assert not any(a.astype(wide).any() for a in arrays)
    assert check_call(signature, arrays) == {"b": 2}


@pytest.mark.parametrize("dtype", [DType.FLOAT0, DType.KEY_FRY])
def test_a_dtype_no_array_library_here_has_is_a_typed_refusal(dtype: DType) -> None:
    with pytest.raises(ArtifactError, match=f"no array of the dtype '{dtype.value}' can be made"):
        zeros((2,), dtype.value)
