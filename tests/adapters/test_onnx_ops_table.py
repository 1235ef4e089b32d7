"""The ONNX translation table: every family of ``jaxport.adapters.onnx.ops`` registered, each operation by exactly one.

``common`` holds what the families share; a module that only serves others has no table.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Sequence
from typing import Any

import pytest

pytest.importorskip("onnx", reason="the ONNX tests need the jaxport[onnx] extra (onnx)")

import jaxport.adapters.onnx.ops  # noqa: E402
from jaxport.adapters.onnx.ops import table as onnx_ops  # noqa: E402


def _translation(b: Any, op: Any, args: Sequence[str]) -> list[str]:
    return list(args)


def test_a_name_registered_by_two_modules_is_refused_naming_both() -> None:
    with pytest.raises(ValueError, match=r"stablehlo\.add is registered by both first and second"):
        onnx_ops.merged({"first": {"stablehlo.add": _translation}, "second": {"stablehlo.add": _translation}})


def test_every_family_table_is_in_the_translations_once() -> None:
    names = [m.name for m in pkgutil.iter_modules(jaxport.adapters.onnx.ops.__path__)
             if m.name not in ("common", "table")]
    families = [importlib.import_module(f"jaxport.adapters.onnx.ops.{name}") for name in names]
    registered: dict[str, str] = {}
    for family in families:
        for name, translation in getattr(family, "TABLE", {}).items():  # a module serving others has none
            assert name not in registered, f"{name}: {registered.get(name)} and {family.__name__}"
            registered[name] = family.__name__
            assert onnx_ops.TRANSLATIONS[name] is translation
    assert set(registered) == set(onnx_ops.TRANSLATIONS)


def test_the_lapack_kernels_translated_are_those_the_onnx_plan_lets_through() -> None:
    from jaxport.adapters.onnx.ops import eigh, lapack, svd
    from jaxport.domain.targets.onnx import LAPACK_TRANSLATED, PLAN

    families = (lapack.CUSTOM_CALLS, eigh.CUSTOM_CALLS, svd.CUSTOM_CALLS)
    assert set().union(*families) == set(LAPACK_TRANSLATED) <= set(onnx_ops.CUSTOM_CALLS)
    assert LAPACK_TRANSLATED <= PLAN.custom_calls
