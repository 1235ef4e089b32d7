"""``jaxport.Exported(...)`` built from ``jax.export.Exported``'s keyword fields, as JAX's tools build one."""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import export as jax_export

import jaxport
from jaxport.adapters.jax.exported.fields import installed_fields
from jaxport.errors import ExportedFieldError

X = np.linspace(-1.0, 1.0, 6, dtype=np.float32).reshape(2, 3)


def f(x: Any) -> Any:
    return jnp.sin(x) * jnp.float32(2.0)


def fields_of(exp: jaxport.Exported, **changes: Any) -> dict[str, Any]:
    """The keyword fields of the installed JAX's ``jax.export.Exported`` for ``exp``, with changes."""
    n_in, n_out = len(exp.in_avals), len(exp.out_avals)
    fields: dict[str, Any] = dict(
        fun_name="stored", in_tree=exp.in_tree, in_avals=exp.in_avals, out_tree=exp.out_tree,
        out_avals=exp.out_avals, _in_named_shardings=(None,) * n_in, _out_named_shardings=(None,) * n_out,
        in_shardings_hlo=(None,) * n_in, out_shardings_hlo=(None,) * n_out, nr_devices=1,
        platforms=exp.platforms, ordered_effects=(), unordered_effects=(), disabled_safety_checks=(),
        mlir_module_serialized=exp.mlir_module_serialized,
        calling_convention_version=exp.calling_convention_version,
        module_kept_var_idx=exp.module_kept_var_idx, uses_global_constants=exp.uses_global_constants,
        _get_vjp=lambda _: exp.vjp())
    if "_has_named_shardings" in installed_fields():
        fields["_has_named_shardings"] = True
    fields.update(changes)
    return fields


@pytest.fixture(scope="module")
def exported() -> jaxport.Exported:
    return jaxport.export(jax.jit(f))(jax.ShapeDtypeStruct(X.shape, X.dtype))


def test_the_fields_are_those_of_the_installed_jax_export() -> None:
    assert installed_fields() == tuple(field.name for field in dataclasses.fields(jax_export.Exported))


def test_an_export_from_fields_calls_differentiates_and_serializes_as_the_export(
        exported: jaxport.Exported) -> None:
    built = jaxport.Exported(**fields_of(exported))
    assert built.fun_name == "stored" and built.in_avals == exported.in_avals
    np.testing.assert_allclose(built.call(X), f(X), rtol=1e-6)
    np.testing.assert_allclose(jax.grad(lambda x: built.call(x).sum())(X), 2 * np.cos(X), rtol=1e-6)
    blob = built.serialize(vjp_order=1)
    for again in (jaxport.deserialize(blob), jax_export.deserialize(blob)):
        np.testing.assert_allclose(again.call(X), f(X), rtol=1e-6)
        np.testing.assert_allclose(jax.grad(lambda x: again.call(x).sum())(X), 2 * np.cos(X), rtol=1e-6)


def test_the_same_fields_make_a_jax_export_that_agrees(exported: jaxport.Exported) -> None:
    peer = jax_export.Exported(**fields_of(exported, _get_vjp=None))
    ours = jaxport.Exported(**fields_of(exported, _get_vjp=None))
    np.testing.assert_array_equal(ours.call(X), peer.call(X))
    assert not ours.has_vjp()


def test_symbolic_dimensions_of_jax_export_are_read_as_jaxports() -> None:
    b, = jax_export.symbolic_shape("b")
    spec = jax.ShapeDtypeStruct((b, 3), np.float32)
    peer = jax_export.export(jax.jit(f))(spec)
    built = jaxport.Exported(**fields_of(peer, _get_vjp=None))  # type: ignore[arg-type]
    for rows in (1, 5):
        x = np.ones((rows, 3), np.float32)
        np.testing.assert_allclose(built.call(x), f(x), rtol=1e-6)
    assert str(built.in_avals[0].shape[0]) == "b"


def test_disabled_checks_of_jax_export_are_read_as_jaxports(exported: jaxport.Exported) -> None:
    built = jaxport.Exported(**fields_of(exported, disabled_safety_checks=(
        jax_export.DisabledSafetyCheck.platform(),)))
    assert built.disabled_safety_checks == (jaxport.DisabledSafetyCheck.platform(),)


@pytest.mark.parametrize(("changes", "field", "message"), [
    ({"fun": "f"}, "fun", "has no such field"),
    ({"nr_devices": None}, "nr_devices", "missing"),
    ({"fun_name": 3}, "fun_name", "must be str"),
    ({"in_avals": ()}, "in_avals", "holds 0 abstract values, and in_tree has 1 leaves"),
    ({"out_avals": ("f32[2,3]",)}, "out_avals", "entry 0 must be a jax.core.ShapedArray"),
    ({"_in_named_shardings": ()}, "_in_named_shardings", "holds 0 entries"),
    ({"in_shardings_hlo": ("replicated",)}, "in_shardings_hlo", "entry 0 must be an HloSharding"),
    ({"nr_devices": 0}, "nr_devices", "must be an int >= 1"),
    ({"platforms": ()}, "platforms", "non-empty"),
    ({"disabled_safety_checks": ("platform",)}, "disabled_safety_checks", "DisabledSafetyCheck"),
    ({"mlir_module_serialized": b"not a module"}, "mlir_module_serialized", "not a StableHLO portable"),
    ({"module_kept_var_idx": (1,)}, "module_kept_var_idx", "sorted distinct indices below 1"),
    ({"uses_global_constants": 1}, "uses_global_constants", "must be bool"),
    ({"_get_vjp": "vjp"}, "_get_vjp", "None or a function"),
])
def test_a_bad_field_is_a_typed_error_naming_it(exported: jaxport.Exported, changes: dict[str, Any],
                                                field: str, message: str) -> None:
    fields = fields_of(exported, **changes)
    if changes.get(field, 0) is None and message == "missing":
        del fields[field]
    with pytest.raises(ExportedFieldError, match=f"field '{field}': .*{message}") as caught:
        jaxport.Exported(**fields)
    assert caught.value.field == field
    assert isinstance(caught.value, TypeError) and isinstance(caught.value, ValueError)


def test_the_in_tree_must_be_that_of_args_and_kwargs(exported: jaxport.Exported) -> None:
    with pytest.raises(ExportedFieldError, match=r"field 'in_tree': must be the pytree of \(args, kwargs\)"):
        jaxport.Exported(**fields_of(exported, in_tree=exported.out_tree))


def test_a_record_and_fields_together_are_refused(exported: jaxport.Exported) -> None:
    with pytest.raises(ExportedFieldError, match="field 'fun_name': .*not both"):
        jaxport.Exported(exported.record, fun_name="g")


def test_a_vjp_that_is_not_a_jaxport_export_is_refused_when_asked_for(exported: jaxport.Exported) -> None:
    built = jaxport.Exported(**fields_of(exported, _get_vjp=lambda _: "no"))
    with pytest.raises(ExportedFieldError, match="field '_get_vjp': gave str"):
        built.vjp()


def test_replace_keeps_an_export_from_fields(exported: jaxport.Exported) -> None:
    again = dataclasses.replace(jaxport.Exported(**fields_of(exported)))
    np.testing.assert_allclose(again.call(X), f(X), rtol=1e-6)
