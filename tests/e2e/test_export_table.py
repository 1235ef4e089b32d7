"""End to end: a table of functions, exported, called, and compared with JAX.

Each function of the table is exported once (the exports are cached for the
module), then called eagerly and under ``jax.jit``; the results must equal
those of ``jax.jit(f)`` on the same concrete inputs. For the same functions,
``jax.export.export`` must produce the same signature and the same bytes.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax
from jax.extend import mlir as jex_mlir
from jax.interpreters import mlir

import jaxport

# --------------------------------------------------------------------------
# The table
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One exported function and the concrete inputs it is called with."""

    name: str
    fun: Callable[..., Any]
    args: tuple[Any, ...]
    kwargs: Mapping[str, Any] = field(default_factory=dict)

    def specs(self) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """``ShapeDtypeStruct``s (and Nones) shaped like the concrete inputs."""
        to_spec = lambda a: jax.ShapeDtypeStruct(np.shape(a), np.asarray(a).dtype)
        return jax.tree.map(to_spec, self.args), jax.tree.map(to_spec, dict(self.kwargs))


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def _f32(*shape: int, seed: int = 0) -> np.ndarray:
    return _rng(seed).standard_normal(shape).astype(np.float32)


_CONSTANT = np.arange(12, dtype=np.float32).reshape(3, 4) / 7.0
_CONSTANT_BIAS = np.array([0.5, -1.5, 2.25, 3.0], np.float32)


def elementwise(x: Any, y: Any) -> Any:
    return jnp.sin(x) * y + jnp.exp(-x * x) - jnp.maximum(x, y)


def matmul(a: Any, b: Any) -> Any:
    return a @ b


def reductions(x: Any) -> Any:
    return jnp.sum(x, axis=0), jnp.max(x, axis=1), jnp.mean(x), jnp.argmin(x, axis=1)


def cond(p: Any, x: Any) -> Any:
    return lax.cond(p > 0, lambda v: v * 2.0, lambda v: jnp.cos(v) - 1.0, x)


def while_loop(x: Any, n: Any) -> Any:
    def body(carry: tuple[Any, Any]) -> tuple[Any, Any]:
        i, acc = carry
        return i + 1, acc * 1.5 + jnp.float32(1.0)

    return lax.while_loop(lambda carry: carry[0] < n, body, (jnp.int32(0), x))


def scan(init: Any, xs: Any) -> Any:
    def step(carry: Any, x: Any) -> tuple[Any, Any]:
        return carry * 0.5 + x, carry * x

    return lax.scan(step, init, xs)


def nested_pytrees(params: dict[str, Any], batch: tuple[Any, None, list[Any]]) -> Any:
    x, _, (u, v) = batch
    h = jnp.tanh(x @ params["w"] + params["b"][0]) * params["b"][1]
    return {"out": h, "aux": [jnp.sum(h), None], "pair": (u - v, u * v), "empty": ()}


def keyword_arguments(x: Any, *, scale: Any, shift: Any) -> Any:
    return x * scale + shift


def unused_argument(x: Any, unused: Any, y: Any) -> Any:
    del unused
    return x * y


def scalar(s: Any) -> Any:
    return s * s + jnp.float32(1.0)


def zero_size(x: Any) -> Any:
    return x * 2.0, jnp.sum(x, axis=0)


def closed_over_constants(x: Any) -> Any:
    return x @ jnp.asarray(_CONSTANT) + _CONSTANT_BIAS


def float16(x: Any) -> Any:
    return jnp.tanh(x) * x + jnp.float16(1.0)


def bfloat16(x: Any, y: Any) -> Any:
    return x * y + jnp.sqrt(jnp.abs(x))


def int8(x: Any, y: Any) -> Any:
    return x + y, x * jnp.int8(3), x // y


def int32(x: Any) -> Any:
    return (x * x - 7) % 5, jnp.cumsum(x), x >> 2


def uint32(x: Any) -> Any:
    return x * jnp.uint32(2654435761), x >> 3, x - jnp.uint32(10)


def boolean(a: Any, b: Any) -> Any:
    return a & ~b, a ^ b, jnp.any(a), jnp.all(b)


def complex64(z: Any) -> Any:
    return jnp.exp(z) * jnp.conj(z), jnp.abs(z)


def cholesky(a: Any) -> Any:
    spd = a @ a.T + 3.0 * jnp.eye(a.shape[0], dtype=a.dtype)
    return jnp.linalg.cholesky(spd)


def qr(a: Any) -> Any:
    q, r = jnp.linalg.qr(a)
    return q, r


def mixed_dtypes(i: Any, x: Any) -> Any:
    return i.astype(jnp.float32) * x, (x > 0).astype(jnp.int8)


def lists_in_and_out(xs: list[Any]) -> Any:
    a, b, c = xs
    return [c, b * 2.0, a + c]


CASES = [
    Case("elementwise", elementwise, (_f32(3, 4, seed=1), _f32(3, 4, seed=2))),
    Case("matmul", matmul, (_f32(4, 3, seed=3), _f32(3, 5, seed=4))),
    Case("reductions", reductions, (_f32(5, 6, seed=5),)),
    Case("cond_true_branch", cond, (np.int32(1), _f32(4, seed=6))),
    Case("cond_false_branch", cond, (np.int32(-1), _f32(4, seed=6))),
    Case("while_loop", while_loop, (_f32(3, seed=7), np.int32(5))),
    Case("scan", scan, (_f32(2, seed=8), _f32(6, 2, seed=9))),
    Case("nested_pytrees", nested_pytrees, (
        {"w": _f32(3, 2, seed=10), "b": [_f32(2, seed=11), _f32(2, seed=12)]},
        (_f32(4, 3, seed=13), None, [_f32(5, seed=14), _f32(5, seed=15)]),
    )),
    Case("keyword_arguments", keyword_arguments, (_f32(3, seed=16),),
         {"scale": np.float32(2.5), "shift": _f32(3, seed=17)}),
    Case("unused_argument", unused_argument,
         (_f32(4, seed=18), np.arange(7, dtype=np.int8), _f32(4, seed=19))),
    Case("scalar", scalar, (np.float32(1.75),)),
    Case("zero_size", zero_size, (np.zeros((0, 3), np.float32),)),
    Case("closed_over_constants", closed_over_constants, (_f32(2, 3, seed=20),)),
    Case("float16", float16, (_f32(6, seed=21).astype(np.float16),)),
    Case("bfloat16", bfloat16, (_f32(6, seed=22).astype(jnp.bfloat16),
                                _f32(6, seed=23).astype(jnp.bfloat16))),
    Case("int8", int8, (np.array([100, 120, -128, 7, -3], np.int8),
                        np.array([100, 9, -1, 2, 4], np.int8))),
    Case("int32", int32, (np.array([-9, 0, 3, 17, 2**20], np.int32),)),
    Case("uint32", uint32, (np.array([0, 1, 9, 2**31, 2**32 - 1], np.uint32),)),
    Case("bool", boolean, (np.array([True, False, True, False]),
                           np.array([True, True, False, False]))),
    Case("complex64", complex64, ((_f32(4, seed=24) + 1j * _f32(4, seed=25)).astype(np.complex64),)),
    Case("cholesky", cholesky, (_f32(4, 4, seed=26),)),
    Case("qr", qr, (_f32(4, 3, seed=27),)),
    Case("mixed_dtypes", mixed_dtypes, (np.array([1, -2, 3], np.int32), _f32(3, seed=28))),
    Case("lists_in_and_out", lists_in_and_out,
         ([_f32(2, seed=29), _f32(2, seed=30), _f32(2, seed=31)],)),
]
CASE_BY_NAME = {case.name: case for case in CASES}
CASE_NAMES = list(CASE_BY_NAME)


# --------------------------------------------------------------------------
# Exports, cached for the module
# --------------------------------------------------------------------------


@functools.cache
def jitted(name: str) -> Any:
    """One ``jax.jit`` of the case's function, shared by every exporter."""
    return jax.jit(CASE_BY_NAME[name].fun)


@functools.cache
def jaxport_export(name: str) -> jaxport.Exported:
    args_specs, kwargs_specs = CASE_BY_NAME[name].specs()
    return jaxport.export(jitted(name))(*args_specs, **kwargs_specs)


@functools.cache
def jax_export(name: str) -> jax.export.Exported:
    args_specs, kwargs_specs = CASE_BY_NAME[name].specs()
    return jax.export.export(jitted(name))(*args_specs, **kwargs_specs)


@functools.cache
def expected_result(name: str) -> Any:
    case = CASE_BY_NAME[name]
    return jitted(name)(*case.args, **case.kwargs)


# --------------------------------------------------------------------------
# Comparison
# --------------------------------------------------------------------------

_TOLERANCE = {
    np.dtype(np.float16): (2e-3, 2e-3),
    np.dtype(jnp.bfloat16): (1e-2, 1e-2),
    np.dtype(np.float32): (1e-5, 1e-6),
    np.dtype(np.complex64): (1e-5, 1e-6),
}


def structure(tree: Any) -> Any:
    """The ``PyTreeDef`` of ``tree`` (typed ``Any``: jaxlib's stub is unusable)."""
    return jax.tree.structure(tree)


def assert_same_results(actual: Any, expected: Any) -> None:
    """Same pytree, shapes and dtypes; values equal (exact for ints and bools)."""
    assert structure(actual) == structure(expected)
    for got, want in zip(jax.tree.leaves(actual), jax.tree.leaves(expected), strict=True):
        got_np, want_np = np.asarray(got), np.asarray(want)
        assert got_np.dtype == want_np.dtype
        assert got_np.shape == want_np.shape
        if want_np.dtype in _TOLERANCE:
            rtol, atol = _TOLERANCE[want_np.dtype]
            if want_np.dtype == np.dtype(jnp.bfloat16) or want_np.dtype == np.float16:
                got_np, want_np = got_np.astype(np.float32), want_np.astype(np.float32)
            np.testing.assert_allclose(got_np, want_np, rtol=rtol, atol=atol)
        else:
            np.testing.assert_array_equal(got_np, want_np)


def test_the_table_has_22_cases_or_more_in_eight_dtypes() -> None:
    assert len(CASES) >= 22
    leaves = [leaf for case in CASES for leaf in jax.tree.leaves((case.args, case.kwargs))]
    dtypes = {np.asarray(leaf).dtype for leaf in leaves}
    for wanted in (np.float32, np.float16, jnp.bfloat16, np.int8, np.int32, np.uint32, np.bool_,
                   np.complex64):
        assert np.dtype(wanted) in dtypes


# --------------------------------------------------------------------------
# Calling the exported functions
# --------------------------------------------------------------------------


@pytest.mark.parametrize("name", CASE_NAMES)
def test_an_eager_call_matches_the_jitted_function(name: str) -> None:
    case = CASE_BY_NAME[name]
    result = jaxport_export(name).call(*case.args, **case.kwargs)
    assert_same_results(result, expected_result(name))


@pytest.mark.parametrize("name", CASE_NAMES)
def test_a_call_under_jit_matches_the_jitted_function(name: str) -> None:
    case = CASE_BY_NAME[name]
    result = jax.jit(jaxport_export(name).call)(*case.args, **case.kwargs)
    assert_same_results(result, expected_result(name))


def test_the_unused_argument_is_dropped_from_main_yet_accepted_by_call() -> None:
    exp = jaxport_export("unused_argument")
    assert len(exp.in_avals) == 3
    assert exp.module_kept_var_idx == (0, 2)
    main_signature = next(line for line in exp.mlir_module().splitlines() if "@main(" in line)
    assert main_signature.count("%arg") == 2
    assert "tensor<7xi8>" not in main_signature
    x, unused, y = CASE_BY_NAME["unused_argument"].args
    np.testing.assert_array_equal(exp.call(x, unused, y), x * y)
    with pytest.raises(jaxport.errors.ShapeMismatchError, match=r"args\[1\]"):
        exp.call(x, np.arange(8, dtype=np.int8), y)


def test_the_nested_pytree_signature_is_recorded() -> None:
    exp = jaxport_export("nested_pytrees")
    args, _ = CASE_BY_NAME["nested_pytrees"].specs()
    assert exp.in_tree == structure((args, {}))
    assert exp.out_tree == structure(expected_result("nested_pytrees"))
    assert [a.shape for a in exp.in_avals] == [(2,), (2,), (3, 2), (4, 3), (5,), (5,)]


def test_a_zero_size_array_keeps_its_shape() -> None:
    exp = jaxport_export("zero_size")
    assert exp.in_avals[0].shape == (0, 3)
    assert [a.shape for a in exp.out_avals] == [(0, 3), (3,)]
    np.testing.assert_array_equal(exp.call(np.zeros((0, 3), np.float32))[1], np.zeros(3, np.float32))


def test_the_lapack_cases_call_allowlisted_custom_calls() -> None:
    assert "lapack_spotrf_ffi" in jaxport_export("cholesky").mlir_module()
    assert "lapack_sgeqrf_ffi" in jaxport_export("qr").mlir_module()


# --------------------------------------------------------------------------
# vmap over the exported call
# --------------------------------------------------------------------------


def _row_norm(x: Any) -> Any:
    return jnp.sqrt(jnp.sum(x * x)) + x


def _affine(w: Any, x: Any, b: Any) -> Any:
    return jnp.tanh(x @ w + b), jnp.sum(x)


@functools.cache
def _row_norm_export() -> jaxport.Exported:
    return jaxport.export(jax.jit(_row_norm))(jax.ShapeDtypeStruct((3,), jnp.float32))


@functools.cache
def _affine_export() -> jaxport.Exported:
    return jaxport.export(jax.jit(_affine))(
        jax.ShapeDtypeStruct((3, 2), jnp.float32), jax.ShapeDtypeStruct((3,), jnp.float32),
        jax.ShapeDtypeStruct((2,), jnp.float32))


def test_vmap_over_axis_one_matches_vmap_of_the_function() -> None:
    xs = _f32(3, 5, seed=40)
    got = jax.vmap(_row_norm_export().call, in_axes=1, out_axes=1)(xs)
    want = jax.vmap(_row_norm, in_axes=1, out_axes=1)(xs)
    assert got.shape == (3, 5)
    assert_same_results(got, want)


def test_vmap_with_batched_and_unbatched_arguments_matches_vmap_of_the_function() -> None:
    w, xs, b = _f32(3, 2, seed=41), _f32(3, 4, seed=42), _f32(2, seed=43)
    in_axes = (None, 1, None)
    got = jax.vmap(_affine_export().call, in_axes=in_axes)(w, xs, b)
    want = jax.vmap(_affine, in_axes=in_axes)(w, xs, b)
    assert got[0].shape == (4, 2)
    assert_same_results(got, want)


def test_vmap_under_jit_matches_vmap_of_the_function() -> None:
    w, xs, b = _f32(3, 2, seed=44), _f32(6, 3, seed=45), _f32(6, 2, seed=46)
    in_axes = (None, 0, 0)
    got = jax.jit(jax.vmap(_affine_export().call, in_axes=in_axes))(w, xs, b)
    want = jax.vmap(_affine, in_axes=in_axes)(w, xs, b)
    assert_same_results(got, want)


def test_vmap_over_pytrees_with_unbatched_parameters_matches_vmap_of_the_function() -> None:
    params, (x, none, (u, v)) = CASE_BY_NAME["nested_pytrees"].args
    batch = (np.stack([x, x * 2.0, -x]), none, [np.stack([u, v, u]), np.stack([v, u, v])])
    in_axes = (None, (0, None, [0, 0]))
    got = jax.vmap(jaxport_export("nested_pytrees").call, in_axes=in_axes)(params, batch)
    want = jax.vmap(nested_pytrees, in_axes=in_axes)(params, batch)
    assert got["out"].shape == (3, 4, 2)
    assert_same_results(got, want)


def test_vmap_with_an_unused_argument_matches_vmap_of_the_function() -> None:
    x, unused, y = CASE_BY_NAME["unused_argument"].args
    xs, ys = np.stack([x, -x]), np.stack([y, y + 1.0])
    in_axes = (0, None, 0)
    got = jax.vmap(jaxport_export("unused_argument").call, in_axes=in_axes)(xs, unused, ys)
    assert_same_results(got, jax.vmap(unused_argument, in_axes=in_axes)(xs, unused, ys))


# --------------------------------------------------------------------------
# The same functions through jax.export
# --------------------------------------------------------------------------


@pytest.mark.parametrize("name", CASE_NAMES)
def test_the_signature_equals_that_of_jax_export(name: str) -> None:
    ours, theirs = jaxport_export(name), jax_export(name)
    assert ours.fun_name == theirs.fun_name
    assert ours.in_avals == theirs.in_avals
    assert ours.out_avals == theirs.out_avals
    assert ours.in_tree == theirs.in_tree
    assert ours.out_tree == theirs.out_tree
    assert ours.module_kept_var_idx == theirs.module_kept_var_idx
    assert ours.platforms == theirs.platforms
    assert ours.nr_devices == theirs.nr_devices
    assert ours.calling_convention_version == theirs.calling_convention_version
    assert ours.uses_global_constants == theirs.uses_global_constants


@pytest.mark.parametrize("name", CASE_NAMES)
def test_the_serialized_module_is_byte_identical_to_jax_export(name: str) -> None:
    assert jaxport_export(name).mlir_module_serialized == jax_export(name).mlir_module_serialized


def _module_text_without_locations(serialized: bytes) -> str:
    with mlir.make_ir_context():
        module = jex_mlir.deserialize_portable_artifact(serialized)
        return str(module.operation.get_asm(enable_debug_info=False))


@pytest.mark.parametrize(
    "name", ["elementwise", "nested_pytrees", "unused_argument", "cholesky", "closed_over_constants"])
def test_independent_lowerings_give_the_same_module_up_to_locations(name: str) -> None:
    # The byte comparison above shares JAX's lowering cache (same jitted
    # function); here jax.export lowers a distinct function object itself.
    case = CASE_BY_NAME[name]
    args_specs, kwargs_specs = case.specs()
    fresh = functools.wraps(case.fun)(lambda *a, **k: case.fun(*a, **k))
    theirs = jax.export.export(jax.jit(fresh))(*args_specs, **kwargs_specs)
    ours = jaxport_export(name)
    assert theirs.mlir_module_serialized != b""
    assert (_module_text_without_locations(ours.mlir_module_serialized)
            == _module_text_without_locations(theirs.mlir_module_serialized))
