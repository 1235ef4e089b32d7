"""Smaller pieces of jax.export's API that jaxport offers the same way."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from jax import lax
from jax.extend.mlir.dialects import stablehlo as hlo

import jaxport


def test_the_default_export_platform_is_jax_exports() -> None:
    assert jaxport.default_export_platform() == jax.export.default_export_platform()
    assert jaxport.export(jnp.sin)(1.0).platforms == (jaxport.default_export_platform(),)


def test_override_lowering_rules_replace_a_primitive_lowering_for_one_export() -> None:
    def cosine_rule(ctx: Any, arg: Any, **_: Any) -> list[Any]:
        return [hlo.cosine(arg)]

    f = jax.jit(jnp.sin)
    exp = jaxport.export(f, _override_lowering_rules=((lax.sin_p, cosine_rule),))(42.0)
    assert "stablehlo.cosine" in exp.mlir_module() and "stablehlo.sine" not in exp.mlir_module()
    assert "stablehlo.sine" in jaxport.export(f)(42.0).mlir_module()
