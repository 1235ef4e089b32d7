"""PRNG key arrays, float0 and weak types through export, serialization and call."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxport

IMPLS = ["threefry2x32", "rbg", "unsafe_rbg"]


def split_and_sample(key: Any, x: Any) -> tuple[Any, Any]:
    k1, k2 = jax.random.split(key)
    return k1, jax.random.normal(k2, x.shape) + x


def same_keys(a: Any, b: Any) -> bool:
    return bool(np.array_equal(jax.random.key_data(a), jax.random.key_data(b)))


@pytest.mark.parametrize("impl", IMPLS)
def test_key_arrays_round_trip_through_export_serialization_and_call(impl: str) -> None:
    key = jax.random.key(42, impl=impl)
    x = np.zeros((3,), np.float32)
    exp = jaxport.export(split_and_sample)(key, x)
    assert str(exp.in_avals[0].dtype) == str(key.dtype)
    want_key, want = jax.jit(split_and_sample)(key, x)
    for candidate in (exp, jaxport.deserialize(exp.serialize())):
        got_key, got = candidate.call(key, x)
        assert same_keys(got_key, want_key)
        np.testing.assert_allclose(got, want)
        got_key, got = jax.jit(candidate.call)(key, x)
        assert same_keys(got_key, want_key)


@pytest.mark.parametrize("impl", IMPLS)
def test_jax_export_reads_jaxports_artifacts_with_keys(impl: str) -> None:
    key = jax.random.key(7, impl=impl)
    x = np.ones((2,), np.float32)
    theirs = jax.export.deserialize(jaxport.export(split_and_sample)(key, x).serialize())
    got_key, got = theirs.call(key, x)
    want_key, want = jax.jit(split_and_sample)(key, x)
    assert same_keys(got_key, want_key)
    np.testing.assert_allclose(got, want)


def test_float0_arguments_and_results_round_trip() -> None:
    def f(x: Any, z: Any) -> Any:
        return x * 2, z
    x = np.ones((2,), np.float32)
    z = np.zeros((3,), jax.dtypes.float0)
    exp = jaxport.export(f)(x, z)
    assert exp.in_avals[1].dtype == jax.dtypes.float0
    again = jaxport.deserialize(exp.serialize())
    assert again.in_avals == exp.in_avals and again.out_avals == exp.out_avals
    theirs = jax.export.deserialize(exp.serialize())
    assert theirs.in_avals == exp.in_avals


def test_weak_types_are_kept_as_jax_export_keeps_them() -> None:
    def f(x: Any, y: Any) -> Any:
        return x + y, jnp.sin(y)
    args = (jnp.float32(1.0), 2.0)  # the Python float is weakly typed
    ours = jaxport.export(f)(*args)
    theirs = jax.export.export(jax.jit(f))(*args)
    assert [a.weak_type for a in ours.in_avals] == [a.weak_type for a in theirs.in_avals] == [False, True]
    assert ours.out_avals == theirs.out_avals
    assert jaxport.deserialize(ours.serialize()).in_avals == jax.export.deserialize(theirs.serialize()).in_avals
