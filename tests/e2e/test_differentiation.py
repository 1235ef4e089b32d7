"""Reverse and forward mode through exported functions, in process and after serialization."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import jaxport
from jaxport.errors import VjpUnavailableError

RNG = np.random.default_rng(0)


def arr(*shape: int) -> Any:
    return RNG.normal(size=shape).astype(np.float32)


@dataclass(frozen=True)
class Case:
    """A function, its arguments, and which argument the loss is differentiated in."""

    name: str
    fun: Callable[..., Any]
    args: tuple[Any, ...]
    poly: tuple[str | None, ...] | None = None


def mlp_loss(params: dict[str, Any], x: Any) -> Any:
    h = jnp.tanh(x @ params["w1"] + params["b1"])
    return jnp.mean((h @ params["w2"]) ** 2)


def rnn_loss(w: Any, xs: Any) -> Any:
    def step(h: Any, x: Any) -> tuple[Any, Any]:
        h = jnp.tanh(h @ w + x)
        return h, h.sum()
    _, ys = lax.scan(step, jnp.zeros((3,), jnp.float32), xs)
    return jnp.sum(ys ** 2)


def int_scaled(x: Any, k: Any) -> Any:
    return jnp.sum(jnp.sin(x) * k.astype(jnp.float32))


def with_unused(x: Any, unused: Any) -> Any:
    return jnp.sum(x ** 3)


def tuple_out(x: Any, y: Any) -> Any:
    return jnp.sum(jnp.exp(x) * y), jnp.sum(x * y)


CASES = [
    Case("mlp", mlp_loss, ({"w1": arr(4, 5), "b1": arr(5), "w2": arr(5, 2)}, arr(3, 4))),
    Case("rnn_scan", rnn_loss, (arr(3, 3) * 0.3, arr(6, 3))),
    Case("int_argument", int_scaled, (arr(5), np.int32(3))),
    Case("unused_argument", with_unused, (arr(4), arr(2))),
    Case("logsumexp", lambda x: jax.nn.logsumexp(x), (arr(7),)),
    Case("softplus_matmul", lambda w, x: jnp.sum(jax.nn.softplus(x @ w)), (arr(3, 2), arr(4, 3))),
    Case("cumsum_cos", lambda x: jnp.sum(jnp.cos(jnp.cumsum(x))), (arr(6),)),
    Case("norm", lambda x: jnp.linalg.norm(x) ** 2 + jnp.prod(x[:2]), (arr(3, 2),)),
    Case("where", lambda x: jnp.sum(jnp.where(x > 0, x ** 2, -x)), (arr(8),)),
    Case("poly_batch", lambda w, x: jnp.sum(jnp.tanh(x @ w)), (arr(3, 2), arr(5, 3)), poly=(None, "b, 3")),
]


def specs(case: Case) -> list[Any]:
    if case.poly is None:
        return list(case.args)
    return list(jaxport.symbolic_args_specs(case.args, case.poly))


_EXPORTS: dict[str, jaxport.Exported] = {}


def exported(case: Case) -> jaxport.Exported:
    if case.name not in _EXPORTS:
        _EXPORTS[case.name] = jaxport.export(jax.jit(case.fun))(*specs(case))
    return _EXPORTS[case.name]


def first_output(f: Callable[..., Any]) -> Callable[..., Any]:
    def g(*args: Any) -> Any:
        out = f(*args)
        return out[0] if isinstance(out, tuple) else out
    return g


def assert_trees_close(got: Any, want: Any, tol: float = 2e-5) -> None:
    for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want), strict=True):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=tol, atol=tol)


def loaded(case: Case, order: int) -> jaxport.Exported:
    return jaxport.deserialize(exported(case).serialize(vjp_order=order))


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
@pytest.mark.parametrize("where", ["in_process", "deserialized"])
def test_grad_through_call_matches_grad_of_the_original(case: Case, where: str) -> None:
    exp = exported(case) if where == "in_process" else loaded(case, 1)
    want = jax.grad(first_output(case.fun))(*case.args)
    assert_trees_close(jax.grad(first_output(exp.call))(*case.args), want)
    assert_trees_close(jax.jit(jax.grad(first_output(exp.call)))(*case.args), want)


def test_value_and_grad_and_vjp_work_through_call() -> None:
    case = CASES[0]
    exp = loaded(case, 1)
    value, grads = jax.value_and_grad(exp.call)(*case.args)
    want_value, want_grads = jax.value_and_grad(case.fun)(*case.args)
    assert_trees_close((value, grads), (want_value, want_grads))
    out, pullback = jax.vjp(exp.call, *case.args)
    assert_trees_close(pullback(jnp.ones_like(out)), jax.vjp(case.fun, *case.args)[1](jnp.ones_like(out)))


def test_integer_arguments_get_float0_cotangents() -> None:
    case = CASES[2]
    x, k = case.args
    grads = jax.grad(exported(case).call, argnums=(0, 1), allow_int=True)(x, k)
    assert grads[1].dtype == jax.dtypes.float0
    assert_trees_close(grads[0], jax.grad(case.fun)(x, k))


@pytest.mark.parametrize("name", ["logsumexp", "softplus_matmul", "mlp"])
def test_second_order_needs_and_works_with_vjp_order_2(name: str) -> None:
    case = next(c for c in CASES if c.name == name)
    exp = loaded(case, 2)
    scalar = jax.tree_util.tree_leaves(case.args)[0]
    if name == "logsumexp":
        assert_trees_close(jax.hessian(exp.call)(*case.args), jax.hessian(case.fun)(*case.args), 1e-4)
    grad2 = jax.grad(lambda *a: jnp.sum(jax.grad(exp.call)(*a) if name == "logsumexp"
                                        else jax.tree_util.tree_leaves(jax.grad(exp.call)(*a))[0]))
    grad2_ref = jax.grad(lambda *a: jnp.sum(jax.grad(case.fun)(*a) if name == "logsumexp"
                                            else jax.tree_util.tree_leaves(jax.grad(case.fun)(*a))[0]))
    assert_trees_close(grad2(*case.args), grad2_ref(*case.args), 1e-4)
    assert scalar is not None


def test_second_order_with_only_vjp_order_1_says_which_order_is_missing() -> None:
    exp = loaded(CASES[4], 1)
    with pytest.raises(VjpUnavailableError, match="up to order 2"):
        jax.hessian(exp.call)(*CASES[4].args)


def test_grad_without_a_vjp_says_how_to_export_one() -> None:
    exp = loaded(CASES[4], 0)
    with pytest.raises(VjpUnavailableError, match=r"serialize it with a higher vjp_order"):
        jax.grad(exp.call)(*CASES[4].args)


@pytest.mark.parametrize("name", ["softplus_matmul", "mlp", "cumsum_cos", "int_argument"])
def test_jvp_and_jacfwd_of_deserialized_artifacts_with_vjp_order_2(name: str) -> None:
    case = next(c for c in CASES if c.name == name)
    exp = loaded(case, 2)
    tangents = jax.tree_util.tree_map(
        lambda a: np.ones_like(a) if np.issubdtype(np.asarray(a).dtype, np.floating)
        else np.zeros(np.shape(a), jax.dtypes.float0), case.args)
    got = jax.jvp(exp.call, case.args, tangents)
    want = jax.jvp(case.fun, case.args, tangents)
    assert_trees_close(got, want, 1e-4)
    assert_trees_close(jax.jacfwd(exp.call)(*case.args), jax.jacfwd(case.fun)(*case.args), 1e-4)


def test_jvp_without_order_2_is_a_clear_error() -> None:
    exp = loaded(CASES[4], 1)
    with pytest.raises(VjpUnavailableError, match=r"Forward-mode differentiation .* up to order 2"):
        jax.jvp(exp.call, CASES[4].args, (np.ones(7, np.float32),))


def test_serializing_more_vjp_orders_than_available_is_refused() -> None:
    with pytest.raises(VjpUnavailableError, match="vjp_order=2"):
        loaded(CASES[4], 1).serialize(vjp_order=2)


def test_jax_export_differentiates_jaxports_serialized_vjps() -> None:
    case = CASES[0]
    theirs = jax.export.deserialize(exported(case).serialize(vjp_order=1))
    assert_trees_close(jax.grad(theirs.call)(*case.args), jax.grad(case.fun)(*case.args))
