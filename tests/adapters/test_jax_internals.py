"""The contract of each JAX internal that jaxport uses (src/adapters/jax/internals.py).

A JAX release that renames or changes one of them fails here, by name, before
the end-to-end tests fail in harder-to-read ways. The three helpers that only
run inside a lowering rule (``lowering_num_devices``, ``eval_dynamic_dim``,
``constrain_to_sharding``) are exercised by the
calls of exported functions in tests/e2e (single-device, symbolic, sharded).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxport.adapters.jax import internals as jax_internals
from jaxport.adapters.jax.lowering.dims import JaxDim
from jaxport.domain.symbolic import SymbolicScope, parse_shape_spec


def lowered_sin(platforms: tuple[str, ...] = ("cpu",)) -> jax.stages.Lowered:
    traced = jax.jit(lambda x, unused: jnp.sin(x)).trace(np.ones(3, np.float32), np.ones(2, np.float32))
    return jax_internals.lower_for_export(traced, platforms)


def test_lowering_for_export_gives_the_module_compile_args_and_platforms() -> None:
    module, args, platforms = jax_internals.lowering_internals(lowered_sin(("cpu", "tpu")))
    assert platforms == ("cpu", "tpu")
    assert "func.func public @main" in str(module)
    for key in ("kept_var_idx", "shape_poly_state", "global_out_avals", "num_devices",
                "ordered_effects", "unordered_effects", "in_shardings", "out_shardings"):
        assert key in args, key
    assert sorted(args["kept_var_idx"]) == [0]  # the unused argument is dropped
    assert int(args["num_devices"]) == 1
    assert args["shape_poly_state"].has_platform_index_argument


def test_the_cpu_backend_serializes_with_shardy() -> None:
    assert jax_internals.backend_serializes_with_sdy() is True


def test_lapack_handlers_can_be_registered_twice() -> None:
    jax_internals.initialize_cpu_lapack()
    jax_internals.initialize_cpu_lapack()


def test_tree_equality_errors_name_the_path_and_both_sides() -> None:
    errors = jax_internals.tree_equality_errors({"a": 1, "b": (1, 2)}, {"a": 1, "b": (1,)})
    assert len(errors) == 1
    path, thing1, thing2, explanation = errors[0]
    assert jax.tree_util.keystr(path) == "['b']" and "length" in explanation
    assert jax_internals.tree_equality_errors((1, 2), (3, 4)) == []


def test_the_unspecified_sharding_marker_is_recognised() -> None:
    _, args, _ = jax_internals.lowering_internals(lowered_sin())
    assert all(jax_internals.is_unspecified_sharding(s) for s in args["out_shardings"])
    sharding = jax.sharding.SingleDeviceSharding(jax.devices()[0])
    assert not jax_internals.is_unspecified_sharding(sharding) and not jax_internals.is_unspecified_sharding(None)


def test_an_aval_takes_a_sharding_and_keeps_it_without_one() -> None:
    aval = jax.core.ShapedArray((8, 2), jnp.float32)
    assert jax_internals.update_aval_with_sharding(aval, None) == aval
    mesh = jax.make_mesh((2,), ("x",), devices=jax.devices()[:2])
    sharding = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("x"))
    updated = jax_internals.update_aval_with_sharding(aval, sharding)
    assert updated.shape == (8, 2) and updated.sharding.spec == jax.sharding.PartitionSpec("x", None)


def test_a_named_sharding_becomes_an_hlo_sharding_that_round_trips_through_its_proto() -> None:
    mesh = jax.make_mesh((2,), ("x",), devices=jax.devices()[:2])
    sharding = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("x"))
    hlo = jax_internals.named_as_hlo_sharding(sharding, 2)
    assert hlo.is_tiled() and hlo.num_devices() == 2
    assert jax_internals.hlo_sharding_from_proto(hlo.to_proto().SerializeToString()) == hlo


def test_memory_spaces_meshes_and_devices_are_there() -> None:
    spaces = jax_internals.memory_space_type()
    assert {"Device", "Host", "Any"} <= {m.name for m in spaces}
    assert jax_internals.empty_abstract_mesh().axis_names == ()
    device = jax_internals.abstract_device("TPU v5", 1, "tpu")
    assert (device.device_kind, device.num_cores, device.platform) == ("TPU v5", 1, "tpu")


def test_the_lowerable_effect_types_are_types() -> None:
    types = jax_internals.lowerable_effect_types()
    assert types and all(isinstance(t, type) for t in types)


def test_a_registered_dimension_class_traces_as_a_dimension_value() -> None:
    aval = jax_internals.dim_value_aval()
    assert aval.shape == () and aval.dtype in (np.dtype(np.int32), np.dtype(np.int64))
    b, = parse_shape_spec("b", scope=SymbolicScope(), expr_class=JaxDim)  # JaxDim registers itself
    out = jax.eval_shape(lambda x: x * x.shape[0], jax.ShapeDtypeStruct((b,), jnp.float32))
    assert out.shape == (b,)


def test_staging_is_seen_under_jit_and_eval_shape_and_eager_only_outside_every_transformation() -> None:
    seen: list[tuple[bool, bool]] = []

    def f(x: jax.Array) -> jax.Array:
        seen.append((jax_internals.is_staging(), jax_internals.is_eager()))
        return x * 2

    f(jnp.float32(1))
    jax.jit(f)(jnp.float32(1))
    jax.eval_shape(f, jax.ShapeDtypeStruct((3,), jnp.float32))  # a shape jit has not traced
    jax.vmap(f)(jnp.ones(2))
    jax.grad(f)(jnp.float32(1))
    assert seen == [(False, True), (True, False), (True, False), (False, False), (False, False)]


def test_each_jax_result_type_is_a_namedtuple_found_by_its_name_and_named_back() -> None:
    for name in jax_internals.JAX_RESULT_TYPES:
        found = jax_internals.jax_result_type(name)
        assert found is not None and issubclass(found, tuple) and hasattr(found, "_fields"), name
        assert jax_internals.jax_result_name(found) == name
    assert jax_internals.jax_result_type("jax.numpy.NotAResult") is None
    assert jax_internals.jax_result_name(tuple) is None


def test_the_primitive_class_and_the_inconclusive_error_are_jax_extend_cores() -> None:
    from jax.extend import core as jex_core

    assert jax_internals.Primitive is jex_core.Primitive
    assert jax_internals.InconclusiveDimensionOperation is jex_core.InconclusiveDimensionOperation
