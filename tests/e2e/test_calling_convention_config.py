"""JAX's `jax_export_calling_convention_version` configuration, honoured as jax.export does."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax._src import config

import jaxport


@pytest.mark.parametrize("version", [jaxport.minimum_supported_calling_convention_version,
                                     jaxport.maximum_supported_calling_convention_version])
def test_the_configured_version_is_recorded_and_runs(version: int) -> None:
    with config.jax_export_calling_convention_version(version):
        exp = jaxport.export(jnp.sin)(jax.ShapeDtypeStruct(jaxport.symbolic_shape("w, h"), np.float32))
        peer = jax.export.export(jax.jit(jnp.sin))(jax.ShapeDtypeStruct(jax.export.symbolic_shape("w, h"), np.float32))
    assert exp.calling_convention_version == peer.calling_convention_version == version
    x = np.arange(30, dtype=np.float32).reshape((5, 6))
    np.testing.assert_allclose(jaxport.deserialize(exp.serialize()).call(x), np.sin(x), rtol=1e-6)


@pytest.mark.parametrize("version", [jaxport.minimum_supported_calling_convention_version - 1,
                                     jaxport.maximum_supported_calling_convention_version + 1])
def test_a_configured_version_outside_the_window_is_refused_with_jax_words(version: int) -> None:
    with config.jax_export_calling_convention_version(version):
        with pytest.raises(ValueError, match=(
                f"The requested export calling convention version {version} is outside the range of "
                r"supported versions \[9..10\]")):
            jaxport.export(jnp.sin)(jax.ShapeDtypeStruct((3,), np.float32))
