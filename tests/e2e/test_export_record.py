"""One record of an export: ``Exported.record`` is what serialization writes and what
deserialization reads back, and the JAX objects are made from it."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxport
from jaxport.adapters.flatbuffers.codec import decode_artifact
from jaxport.domain.artifact.record import ArtifactRecord
from jaxport.errors import ArtifactError

X = np.linspace(-1.0, 1.0, 12, dtype=np.float32).reshape(4, 3)


def symbolic() -> jaxport.Exported:
    b, = jaxport.symbolic_shape("b", constraints=("b >= 2",))
    return jaxport.export(jax.jit(lambda x, *, s: {"y": jnp.sin(x) * s, "n": x.sum()}))(
        jax.ShapeDtypeStruct((b, 3), jnp.float32), s=np.float32(2))


def test_an_in_process_export_records_what_its_artifact_holds() -> None:
    exp = symbolic()
    assert isinstance(exp.record, ArtifactRecord) and exp.record.vjp is None
    # What the bytes add is the versions that wrote them (a sealed artifact's trailer says).
    written = decode_artifact(exp.serialize())
    assert written.producer is not None and dataclasses.replace(written, producer=None) == exp.record
    assert dataclasses.replace(jaxport.deserialize(exp.serialize()).record, producer=None) == exp.record
    assert exp.record.constraints == ("b >= 2",) and exp.record.in_avals[0].shape == ("b", "3")


def test_the_attributes_read_the_record() -> None:
    again = jaxport.deserialize(symbolic().serialize())
    record = again.record
    assert again.mlir_module_serialized is record.mlir_module_serialized
    assert (again.fun_name, again.platforms, again.module_kept_var_idx, again.disabled_safety_checks) == (
        record.function_name, record.platforms, record.module_kept_var_idx, record.disabled_checks)


def test_a_loaded_vjp_chain_is_the_records_and_an_in_process_one_is_exported_on_demand() -> None:
    exp = symbolic()
    assert exp.has_vjp() and exp.record.vjp is None
    again = jaxport.deserialize(exp.serialize(vjp_order=2))
    assert again.record.vjp_order == 2 and again.vjp().record is again.record.vjp
    assert again.vjp().vjp().record is again.record.vjp.vjp
    # The VJP exported here is the one written.
    assert jaxport.deserialize(exp.serialize(vjp_order=1)).record.vjp == exp.vjp().record
    assert jaxport.deserialize(again.serialize(vjp_order=1)).record.vjp_order == 1


def test_the_exported_of_a_record_makes_its_jax_objects_on_first_use() -> None:
    exp = symbolic()
    made = jaxport.Exported(exp.record)
    assert [a.str_short() for a in made.in_avals] == [a.str_short() for a in exp.in_avals]
    assert [c.text for c in made.in_avals[0].shape[0].scope.constraints] == ["b >= 2"]
    outside = jaxport.Exported(dataclasses.replace(exp.record, calling_convention_version=1))
    assert outside.fun_name == exp.fun_name
    with pytest.raises(ArtifactError, match="version 1 is outside the range"):
        _ = outside.in_avals


def test_an_export_of_a_dtype_the_format_lacks_is_called_but_not_serialized() -> None:
    x = np.zeros((4,), jnp.int2)
    exp = jaxport.export(jax.jit(lambda x: x))(x)
    np.testing.assert_array_equal(exp.call(x), x)
    with pytest.raises(ValueError, match="The dtype int2 cannot be serialized"):
        exp.serialize()


def test_a_replaced_exported_is_a_fresh_object_of_the_same_export() -> None:
    exp = symbolic()
    again = dataclasses.replace(exp)  # as with jax.export.Exported: new caches, one record
    assert again is not exp and again.record is exp.record
    assert again.call_target is not exp.call_target and again.has_vjp()
    np.testing.assert_allclose(again.call(X, s=np.float32(2))["y"], np.sin(X) * 2, rtol=1e-6)
