"""End to end: shape-polymorphic functions, exported once, called with many shapes.

Each function of the table is exported once with symbolic shapes (the exports
are cached for the module) and called with at least three concrete shapes,
eagerly and under ``jax.jit``; the results must equal those of ``jax.jit(f)``
on the same inputs. For the same functions and specs, ``jax.export.export``
must produce a signature (``in_avals`` and ``out_avals``) that prints the same.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import jaxport

Shape = tuple[int, ...]

# --------------------------------------------------------------------------
# The table
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class PolyCase:
    """A function, its symbolic specs and the concrete shapes it is called with.

    The last ``len(kwarg_names)`` arguments are passed as keywords.
    """

    name: str
    fun: Callable[..., Any]
    specs: tuple[str | None, ...]
    calls: tuple[tuple[Shape, ...], ...]
    dtypes: tuple[str, ...] = ()
    constraints: tuple[str, ...] = ()
    kwarg_names: tuple[str, ...] = ()
    xfail: str | None = None

    def dtype(self, i: int) -> str:
        return self.dtypes[i] if self.dtypes else "float32"

    def split(self, values: Sequence[Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """Positional and keyword arguments from one value per argument."""
        n = len(values) - len(self.kwarg_names)
        return tuple(values[:n]), dict(zip(self.kwarg_names, values[n:], strict=True))

    def abstract_args(self) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """``ShapeDtypeStruct``s of the first call, for ``_`` and ``...`` in specs."""
        return self.split([jax.ShapeDtypeStruct(s, self.dtype(i)) for i, s in enumerate(self.calls[0])])

    def concrete_args(self, call: int) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """Deterministic inputs of the ``call``-th set of shapes."""
        values = [_concrete(shape, self.dtype(i), seed=10 * call + i)
                  for i, shape in enumerate(self.calls[call])]
        return self.split(values)


def _concrete(shape: Shape, dtype: str, seed: int) -> np.ndarray:
    if np.issubdtype(dtype, np.integer):  # valid indices for the index arguments
        return (np.arange(int(np.prod(shape))) % 2).astype(dtype).reshape(shape)
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def broadcasting(x: Any, y: Any) -> Any:
    return x * y + jnp.sin(x)


def broadcast_to_new_axis(x: Any) -> Any:
    return jnp.broadcast_to(x[:, None, :], (x.shape[0], 3, x.shape[1]))


def reshape_flatten(x: Any) -> Any:
    return x.reshape(-1) * 2.0


def reshape_minus_one_leading(x: Any) -> Any:
    return x.reshape(-1, 3)


def reshape_merge_trailing(x: Any) -> Any:
    return x.reshape(x.shape[0], -1)


def concatenate_two_variables(x: Any, y: Any) -> Any:
    return jnp.concatenate([x, y * 2.0], axis=0)


def concatenate_along_static_axis(x: Any) -> Any:
    return jnp.concatenate([x, jnp.cos(x)], axis=1)


def slice_inner(x: Any) -> Any:
    return x[1:-1]


def slice_to_symbolic_bound(x: Any) -> Any:
    return x[: x.shape[0] - 1] + x[1:]


def slice_strided(x: Any) -> Any:
    return x[::2]


def arange_of_dimension(x: Any) -> Any:
    return x * jnp.arange(x.shape[0], dtype=x.dtype)[:, None]


def pad_constant(x: Any) -> Any:
    return jnp.pad(x, ((1, 2), (0, 1)), constant_values=3.0)


def pad_edge(x: Any) -> Any:
    return jnp.pad(x, ((2, 1), (0, 0)), mode="edge")


def reductions(x: Any) -> Any:
    return jnp.sum(x, axis=0), jnp.max(x, axis=1), jnp.min(x), jnp.argmax(x, axis=0)


def mean_over_symbolic_count(x: Any) -> Any:
    return jnp.mean(x, axis=0), jnp.mean(x), jnp.var(x, axis=0)


def matmul_symbolic_inner(a: Any, b: Any) -> Any:
    return a @ b


def matmul_symbolic_batch(x: Any, w: Any) -> Any:
    return jnp.tanh(x @ w)


def conv_symbolic_batch(x: Any, w: Any) -> Any:
    return lax.conv_general_dilated(x, w, window_strides=(1, 1), padding="SAME",
                                    dimension_numbers=("NCHW", "OIHW", "NCHW"))


def scan_symbolic_length(init: Any, xs: Any) -> Any:
    def step(carry: Any, x: Any) -> tuple[Any, Any]:
        return carry * 0.5 + x, carry * x

    return lax.scan(step, init, xs)


def floordiv_dimension(x: Any) -> Any:
    return x.reshape(x.shape[0] // 2, 2)


def floordiv_of_unknown_parity(x: Any) -> Any:
    half = x.shape[0] // 2
    return x[: 2 * half].reshape(half, 2).sum(axis=1)


def mod_dimension(x: Any) -> Any:
    return jnp.ones((x.shape[0] % 3, 2), x.dtype) * jnp.sum(x)


def min_dimension_from_slice(x: Any) -> Any:
    return x[:4] * 2.0


def max_dimension_in_spec(x: Any, y: Any) -> Any:
    return jnp.sum(x) + y


def einsum_batched(x: Any, w: Any) -> Any:
    return jnp.einsum("bij,jk->bik", x, w)


def einsum_symbolic_contraction(x: Any, y: Any) -> Any:
    return jnp.einsum("ij,kj->ik", x, y)


def take_symbolic_indices(x: Any, idx: Any) -> Any:
    return jnp.take(x, idx, axis=0)


def shared_variable(x: Any, y: Any) -> Any:
    return x * y[:, None] - y.sum()


def linear_spec(x: Any) -> Any:
    h = (x.shape[0] - 1) // 2
    return x[1:].reshape(h, 2, x.shape[1]).sum(axis=1)


def at_least_sixteen(x: Any) -> Any:
    return x[:16] * 2.0 + x[-16:]


def height_twice_width(x: Any, y: Any) -> Any:
    return x + jnp.concatenate([y, y])


def dimension_as_value(x: Any) -> Any:
    return x * x.shape[0] + x.shape[1]


def fori_loop_to_dimension(x: Any) -> Any:
    return lax.fori_loop(0, x.shape[0], lambda i, acc: acc * 0.5 + x[i], jnp.zeros(x.shape[1:], x.dtype))


def keyword_symbolic(x: Any, *, scale: Any) -> Any:
    return x * scale[:, None]


def cumsum_and_sort(x: Any) -> Any:
    return jnp.cumsum(x, axis=0), jnp.sort(x, axis=0)


def gram_matrix(x: Any) -> Any:
    return x.T @ x, x @ x.T


def lower_triangular_mask(x: Any) -> Any:
    n = x.shape[0]
    return jnp.tril(jnp.ones((n, n), x.dtype)) @ x + jnp.eye(n, dtype=x.dtype) @ x


def tile_and_stack(x: Any) -> Any:
    return jnp.tile(x, (2, 1)), jnp.stack([x, -x])


def vmapped_outer(x: Any) -> Any:
    return jax.vmap(jnp.outer)(x, x)


def softmax_over_symbolic_axis(x: Any) -> Any:
    return jax.nn.softmax(x, axis=0)


def split_in_halves(x: Any) -> Any:
    first, second = jnp.split(x, 2, axis=0)
    return first - second


def while_to_dimension(x: Any) -> Any:
    def body(carry: tuple[Any, Any]) -> tuple[Any, Any]:
        i, acc = carry
        return i + 1, acc + x[i]

    return lax.while_loop(lambda carry: carry[0] < x.shape[0], body, (0, jnp.zeros(x.shape[1:], x.dtype)))


def dynamic_slice_symbolic_size(x: Any) -> Any:
    return lax.dynamic_slice_in_dim(x, 1, x.shape[0] - 1, axis=0)


def where_and_iota(x: Any) -> Any:
    return jnp.where(lax.broadcasted_iota(jnp.int32, x.shape, 0) % 2 == 0, x, -x)


def _calls(*shapes: Shape) -> tuple[tuple[Shape, ...], ...]:
    """The calls of a one-argument function, one shape each."""
    return tuple((shape,) for shape in shapes)


CASES: tuple[PolyCase, ...] = (
    PolyCase("broadcasting", broadcasting, ("b, 1", "1, c"),
             (((2, 1), (1, 3)), ((5, 1), (1, 1)), ((1, 1), (1, 4)))),
    PolyCase("broadcast_to_new_axis", broadcast_to_new_axis, ("b, c",), _calls((2, 3), (4, 1), (1, 5))),
    PolyCase("reshape_flatten", reshape_flatten, ("b, 4",), _calls((1, 4), (3, 4), (6, 4))),
    PolyCase("reshape_minus_one_leading", reshape_minus_one_leading, ("b, 6",), _calls((1, 6), (2, 6), (5, 6))),
    PolyCase("reshape_merge_trailing", reshape_merge_trailing, ("b, h, 3",),
             _calls((2, 1, 3), (3, 4, 3), (1, 2, 3))),
    PolyCase("concatenate_two_variables", concatenate_two_variables, ("b, 3", "c, 3"),
             (((1, 3), (2, 3)), ((4, 3), (1, 3)), ((3, 3), (3, 3)))),
    PolyCase("concatenate_along_static_axis", concatenate_along_static_axis, ("b, 2",),
             _calls((1, 2), (3, 2), (7, 2))),
    PolyCase("slice_inner", slice_inner, ("b + 2, 3",), _calls((3, 3), (4, 3), (8, 3))),
    PolyCase("slice_to_symbolic_bound", slice_to_symbolic_bound, ("b + 1",), _calls((2,), (5,), (9,))),
    PolyCase("slice_strided", slice_strided, ("b, 2",), _calls((1, 2), (4, 2), (7, 2))),
    PolyCase("arange_of_dimension", arange_of_dimension, ("b, 3",), _calls((1, 3), (4, 3), (6, 3))),
    PolyCase("pad_constant", pad_constant, ("b, c",), _calls((1, 1), (3, 2), (5, 4))),
    PolyCase("pad_edge", pad_edge, ("b, 3",), _calls((1, 3), (2, 3), (6, 3))),
    PolyCase("reductions", reductions, ("b, c",), _calls((1, 3), (4, 2), (5, 5))),
    PolyCase("mean_over_symbolic_count", mean_over_symbolic_count, ("b, 3",), _calls((1, 3), (2, 3), (7, 3))),
    PolyCase("matmul_symbolic_inner", matmul_symbolic_inner, ("3, k", "k, 2"),
             (((3, 1), (1, 2)), ((3, 4), (4, 2)), ((3, 9), (9, 2)))),
    PolyCase("matmul_symbolic_batch", matmul_symbolic_batch, ("b, 4", "4, 3"),
             (((1, 4), (4, 3)), ((2, 4), (4, 3)), ((6, 4), (4, 3)))),
    PolyCase("conv_symbolic_batch", conv_symbolic_batch, ("b, 2, 5, 5", None),
             (((1, 2, 5, 5), (3, 2, 3, 3)), ((2, 2, 5, 5), (3, 2, 3, 3)), ((4, 2, 5, 5), (3, 2, 3, 3)))),
    PolyCase("scan_symbolic_length", scan_symbolic_length, ("3", "t, 3"),
             (((3,), (1, 3)), ((3,), (4, 3)), ((3,), (7, 3)))),
    PolyCase("floordiv_dimension", floordiv_dimension, ("2*b",), _calls((2,), (6,), (10,))),
    PolyCase("floordiv_of_unknown_parity", floordiv_of_unknown_parity, ("b",), _calls((2,), (5,), (8,))),
    PolyCase("mod_dimension", mod_dimension, ("b",), _calls((2,), (3,), (7,))),
    PolyCase("min_dimension_from_slice", min_dimension_from_slice, ("b, 2",), _calls((2, 2), (4, 2), (7, 2))),
    PolyCase("max_dimension_in_spec", max_dimension_in_spec, ("b", "max(b, 4)"),
             (((2,), (4,)), ((4,), (4,)), ((6,), (6,)))),
    PolyCase("einsum_batched", einsum_batched, ("b, 2, 3", "3, 4"),
             (((1, 2, 3), (3, 4)), ((3, 2, 3), (3, 4)), ((5, 2, 3), (3, 4)))),
    PolyCase("einsum_symbolic_contraction", einsum_symbolic_contraction, ("2, k", "3, k"),
             (((2, 1), (3, 1)), ((2, 5), (3, 5)), ((2, 8), (3, 8)))),
    PolyCase("take_symbolic_indices", take_symbolic_indices, ("b, 3", "n"),
             (((2, 3), (1,)), ((4, 3), (5,)), ((3, 3), (2,))), dtypes=("float32", "int32")),
    PolyCase("shared_variable", shared_variable, ("b, 3", "b"),
             (((1, 3), (1,)), ((4, 3), (4,)), ((6, 3), (6,)))),
    PolyCase("linear_spec", linear_spec, ("2*h + 1, 3",), _calls((3, 3), (7, 3), (11, 3))),
    PolyCase("at_least_sixteen", at_least_sixteen, ("b",), _calls((16,), (17,), (24,)),
             constraints=("b >= 16",)),
    PolyCase("height_twice_width", height_twice_width, ("h", "w"),
             (((2,), (1,)), ((6,), (3,)), ((10,), (5,))), constraints=("h == 2*w",)),
    PolyCase("dimension_as_value", dimension_as_value, ("b, c",), _calls((1, 1), (3, 2), (5, 4))),
    PolyCase("fori_loop_to_dimension", fori_loop_to_dimension, ("b, 3",), _calls((1, 3), (4, 3), (6, 3))),
    PolyCase("keyword_symbolic", keyword_symbolic, ("b, 3", "b"),
             (((1, 3), (1,)), ((3, 3), (3,)), ((5, 3), (5,))), kwarg_names=("scale",)),
    PolyCase("cumsum_and_sort", cumsum_and_sort, ("b, 2",), _calls((1, 2), (3, 2), (6, 2))),
    PolyCase("gram_matrix", gram_matrix, ("b, c",), _calls((1, 2), (3, 3), (5, 1))),
    PolyCase("lower_triangular_mask", lower_triangular_mask, ("b, 2",), _calls((1, 2), (3, 2), (5, 2))),
    PolyCase("tile_and_stack", tile_and_stack, ("b, 2",), _calls((1, 2), (2, 2), (4, 2))),
    PolyCase("vmapped_outer", vmapped_outer, ("b, c",), _calls((1, 2), (3, 3), (4, 1))),
    PolyCase("softmax_over_symbolic_axis", softmax_over_symbolic_axis, ("b, 3",), _calls((1, 3), (3, 3), (8, 3))),
    PolyCase("split_in_halves", split_in_halves, ("2*b, 3",), _calls((2, 3), (4, 3), (8, 3))),
    PolyCase("while_to_dimension", while_to_dimension, ("b, 2",), _calls((1, 2), (3, 2), (6, 2))),
    PolyCase("dynamic_slice_symbolic_size", dynamic_slice_symbolic_size, ("b, 2",),
             _calls((2, 2), (3, 2), (6, 2))),
    PolyCase("where_and_iota", where_and_iota, ("b, _",), _calls((1, 3), (4, 3), (5, 3))),
    PolyCase("ellipsis_spec", broadcasting, ("b, ...", "1, ..."),
             (((2, 3), (1, 3)), ((4, 3), (1, 3)), ((1, 3), (1, 3)))),
)

CASES_BY_NAME = {case.name: case for case in CASES}


def _params(cases: Sequence[PolyCase]) -> list[Any]:
    marks = lambda c: [pytest.mark.xfail(strict=True, reason=c.xfail)] if c.xfail else []
    return [pytest.param(c.name, id=c.name, marks=marks(c)) for c in cases]


@functools.cache
def exported(name: str, exporter: str = "jaxport") -> Any:
    """The case ``name`` exported once by jaxport or by ``jax.export`` with its symbolic specs."""
    case = CASES_BY_NAME[name]
    lib: Any = jaxport if exporter == "jaxport" else jax.export
    export = jaxport.export if exporter == "jaxport" else jax.export.export
    args, kwargs = lib.symbolic_args_specs(case.abstract_args(), case.split(case.specs),
                                           constraints=case.constraints)
    return export(jax.jit(case.fun))(*args, **kwargs)


@functools.cache
def expected(name: str, call: int) -> Any:
    """``jax.jit(f)`` on the inputs of the ``call``-th set of shapes (computed once)."""
    case = CASES_BY_NAME[name]
    args, kwargs = case.concrete_args(call)
    return jax.jit(case.fun)(*args, **kwargs)


def assert_same_results(actual: Any, expected: Any) -> None:
    assert str(jax.tree.structure(actual)) == str(jax.tree.structure(expected))
    for a, e in zip(jax.tree.leaves(actual), jax.tree.leaves(expected), strict=True):
        assert np.shape(a) == np.shape(e) and np.asarray(a).dtype == np.asarray(e).dtype
        np.testing.assert_allclose(np.asarray(a), np.asarray(e), rtol=2e-5, atol=2e-5)


# --------------------------------------------------------------------------
# Calls
# --------------------------------------------------------------------------


def test_the_table_has_at_least_thirty_functions_each_called_with_three_shapes() -> None:
    assert len({case.fun for case in CASES}) >= 30
    assert all(len(set(case.calls)) >= 3 for case in CASES)


@pytest.mark.parametrize("name", _params(CASES))
@pytest.mark.parametrize("mode", ["eagerly", "under_jit"])
def test_each_function_exported_once_matches_jit_at_every_shape(name: str, mode: str) -> None:
    case = CASES_BY_NAME[name]
    exp = exported(name)
    call = exp.call if mode == "eagerly" else jax.jit(exp.call)
    for i in range(len(case.calls)):
        args, kwargs = case.concrete_args(i)
        assert_same_results(call(*args, **kwargs), expected(name, i))


@pytest.mark.parametrize("name", _params(CASES))
def test_the_signature_prints_as_jax_exports_signature(name: str) -> None:
    ours, theirs = exported(name), exported(name, "jax")
    assert [str(a) for a in ours.in_avals] == [str(a) for a in theirs.in_avals]
    assert [str(a) for a in ours.out_avals] == [str(a) for a in theirs.out_avals]
    assert (ours.in_tree, ours.out_tree) == (theirs.in_tree, theirs.out_tree)


def test_a_symbolic_signature_reads_as_written() -> None:
    assert [str(a) for a in exported("linear_spec").in_avals] == ["float32[2*h + 1,3]"]
    assert [str(a) for a in exported("linear_spec").out_avals] == ["float32[h,3]"]
    assert [str(a) for a in exported("min_dimension_from_slice").out_avals] == ["float32[min(b, 4),2]"]
    assert [str(a) for a in exported("at_least_sixteen").out_avals] == ["float32[16]"]


def test_vmap_of_a_polymorphic_call_matches_vmap_of_the_function() -> None:
    exp = exported("shared_variable")
    xs = _concrete((3, 4, 3), "float32", seed=1)
    ys = _concrete((3, 4), "float32", seed=2)
    expected = jax.vmap(shared_variable)(xs, ys)
    assert_same_results(jax.vmap(exp.call)(xs, ys), expected)
    assert_same_results(jax.jit(jax.vmap(exp.call))(xs, ys), expected)


def test_grad_through_a_polymorphic_call_matches_grad_of_the_function() -> None:
    exp = exported("softmax_over_symbolic_axis")
    weights = jnp.arange(3, dtype=jnp.float32)
    for n in (1, 4):
        x = _concrete((n, 3), "float32", seed=n)
        grad = jax.grad(lambda v: (exp.call(v) * weights).sum())(x)
        reference = jax.grad(lambda v: (softmax_over_symbolic_axis(v) * weights).sum())(x)
        assert_same_results(grad, reference)
