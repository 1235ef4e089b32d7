"""The proof that a module's results do not depend on its SVDs' vector convention
(:mod:`jaxport.adapters.onnx.ops.svd_invariance`), on modules JAX emits and on hand-made ones, accepted and refused."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jaxlib.mlir import ir  # noqa: E402

from jaxport.adapters.mlir.bindings import make_context  # noqa: E402
from jaxport.adapters.onnx.ops.svd_invariance import invariant_svds  # noqa: E402


def proven(text: str) -> int:
    """How many SVD calls of the module ``text`` the proof accepts."""
    with make_context():
        return len(invariant_svds(ir.Module.parse(text).operation))


def emitted(f: Callable[..., Any], *shapes: tuple[int, ...]) -> str:
    text: str = jax.jit(f).lower(*(jax.ShapeDtypeStruct(s, jnp.float32) for s in shapes)).as_text()
    return text


def reduced(a: jax.Array) -> Any:
    return jnp.linalg.svd(a, full_matrices=False)


ACCEPTED: list[tuple[str, Callable[..., Any], list[tuple[int, ...]], int]] = [
    ("pinv tall", jnp.linalg.pinv, [(6, 3)], 1),
    ("pinv wide", jnp.linalg.pinv, [(3, 6)], 1),
    ("pinv square", jnp.linalg.pinv, [(4, 4)], 1),
    ("pinv batched", jnp.linalg.pinv, [(2, 3, 6)], 1),
    ("pinv batched, a batch of one", jnp.linalg.pinv, [(2, 1, 5, 4)], 1),
    ("lstsq, a vector", lambda a, y: jnp.linalg.lstsq(a, y)[0], [(6, 3), (6,)], 1),
    ("lstsq, a matrix, all its results", jnp.linalg.lstsq, [(3, 6), (3, 2)], 1),
    ("two pinvs", lambda a: jnp.linalg.pinv(a) @ jnp.linalg.pinv(a.T).T, [(3, 3)], 2),
    ("U diag(s) VT (s kills the columns of zero values)", lambda a: (
        lambda r: (r[0] * r[1]) @ r[2])(reduced(a)), [(5, 3)], 1),
]

REFUSED: list[tuple[str, Callable[..., Any], list[tuple[int, ...]]]] = [
    ("svd's vectors returned", jnp.linalg.svd, [(4, 3)]),
    ("U returned", lambda a: reduced(a)[0], [(4, 3)]),
    ("U times a vector along k", lambda a, v: reduced(a)[0] @ v, [(4, 3), (3,)]),
    # invariant too (Q^T U^T U Q = I), but it carries Q on two axes, which the proof does not follow
    ("U^T U", lambda a: (lambda u: u.T @ u)(reduced(a)[0]), [(4, 3)]),
    ("U VT (the vectors of a zero value are free apart)", lambda a: (lambda r: r[0] @ r[2])(reduced(a)), [(4, 4)]),
    ("U diag(s + 1) VT", lambda a: (lambda r: (r[0] * (r[1] + 1)) @ r[2])(reduced(a)), [(4, 4)]),
    ("the vectors of two calls multiplied", lambda a, c: reduced(a)[0] @ reduced(c)[2], [(4, 4), (4, 4)]),
    ("U scaled by another call's values", lambda a, c: (lambda r: (r[0] * jnp.linalg.svd(c, compute_uv=False))
                                                         @ r[2])(reduced(a)), [(4, 4), (4, 4)]),
    ("U summed", lambda a: jnp.sum(reduced(a)[0]), [(4, 3)]),
    ("U's signs read", lambda a: reduced(a)[0] > 0, [(4, 3)]),
]


@pytest.mark.parametrize("name, f, shapes, count", ACCEPTED, ids=[c[0] for c in ACCEPTED])
def test_what_does_not_depend_on_the_vectors_is_proven(name: str, f: Callable[..., Any],
                                                        shapes: list[tuple[int, ...]], count: int) -> None:
    assert proven(emitted(f, *shapes)) == count


@pytest.mark.parametrize("name, f, shapes", REFUSED, ids=[c[0] for c in REFUSED])
def test_what_may_depend_on_the_vectors_is_not(name: str, f: Callable[..., Any],
                                              shapes: list[tuple[int, ...]]) -> None:
    assert proven(emitted(f, *shapes)) == 0


_HAND_MADE = """
func.func public @main(%a: tensor<{shape}xf32>) -> tensor<{out}xf32> {{
  %r:5 = stablehlo.custom_call @lapack_sgesdd_ffi(%a) {{mhlo.backend_config = {{mode = {mode} : ui8}}}} :
      (tensor<{shape}xf32>) -> (tensor<{shape}xf32>, tensor<{s}xf32>, tensor<{u}xf32>, tensor<{vt}xf32>, tensor<{info}i32>)
  {body}
}}
"""


def hand_made(body: str, shape: str = "4x4", mode: str = "83", u: str = "4x4", vt: str = "4x4", s: str = "4",
              out: str = "4x4", info: str = "") -> str:
    return _HAND_MADE.format(shape=shape, out=out, mode=mode, s=s, u=u, vt=vt, info=info, body=body)


#: U diag(s) VT, written by hand
_PRODUCT = """%d = stablehlo.broadcast_in_dim %r#1, dims = [1] : (tensor<4xf32>) -> tensor<4x4xf32>
  %us = stablehlo.multiply %r#2, %d : tensor<4x4xf32>
  %p = stablehlo.dot_general %us, %r#3, contracting_dims = [1] x [0] : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  return %p : tensor<4x4xf32>"""


def test_hand_made_modules() -> None:
    assert proven(hand_made(_PRODUCT)) == 1
    assert proven(hand_made(_PRODUCT, mode="65")) == 1  # 'A' of a square matrix: the same freedom
    # the values broadcast along the wrong axis: they scale U's rows, not its columns
    assert proven(hand_made(_PRODUCT.replace("dims = [1]", "dims = [0]"))) == 0
    # contracting U's rows with VT's rows: no cancellation
    assert proven(hand_made(_PRODUCT.replace("contracting_dims = [1] x [0]", "contracting_dims = [0] x [0]"))) == 0
    # the matrix the call overwrites (LAPACK's work) read
    assert proven(hand_made("return %r#0 : tensor<4x4xf32>")) == 0
    # batched: U's batch b paired with VT's batch b, or not paired (every pair of batches mixed)
    batched = """%d = stablehlo.broadcast_in_dim %r#1, dims = [0, 2] : (tensor<2x4xf32>) -> tensor<2x4x4xf32>
  %us = stablehlo.multiply %r#2, %d : tensor<2x4x4xf32>
  %p = stablehlo.dot_general %us, %r#3, batching_dims = [0] x [0], contracting_dims = [2] x [1] :
      (tensor<2x4x4xf32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  return %p : tensor<2x4x4xf32>"""
    sizes = dict(shape="2x4x4", u="2x4x4", vt="2x4x4", s="2x4", out="2x4x4", info="2x")
    assert proven(hand_made(batched, **sizes)) == 1
    mixed = batched.replace("batching_dims = [0] x [0], contracting_dims = [2] x [1]", "contracting_dims = [2] x [1]")
    mixed = mixed.replace("-> tensor<2x4x4xf32>\n  return %p : tensor<2x4x4xf32>",
                          "-> tensor<2x4x2x4xf32>\n  return %p : tensor<2x4x2x4xf32>")
    assert proven(hand_made(mixed, **{**sizes, "out": "2x4x2x4"})) == 0


def test_an_svd_reached_from_inside_a_loop_is_not_proven() -> None:
    def looped(a: jax.Array) -> jax.Array:
        result: jax.Array = jax.lax.fori_loop(0, 2, lambda i, x: jnp.linalg.pinv(jnp.linalg.pinv(x)), a)
        return result

    assert "lapack_sgesdd_ffi" in emitted(looped, (4, 4))
    assert proven(emitted(looped, (4, 4))) == 0
    assert proven(emitted(lambda a: (looped(a), jnp.linalg.pinv(a)), (4, 4))) == 0


def test_full_vectors_of_a_matrix_that_is_not_square_are_not_proven() -> None:
    """``'A'`` with ``m != n``: U's extra columns are free apart from V's; only the values are read here."""
    values = "return %r#1 : tensor<3xf32>"
    assert proven(hand_made(values, shape="5x3", mode="83", u="5x3", vt="3x3", s="3", out="3")) == 1
    assert proven(hand_made(values, shape="5x3", mode="65", u="5x5", vt="3x3", s="3", out="3")) == 0


def test_a_factor_reshaped_across_the_axis_of_q_is_not_taken_for_a_constant() -> None:
    """U (4 x 4) times a vector of 16 reshaped to 4 x 4: it varies along k."""
    body = """%w = stablehlo.iota dim = 0 : tensor<16xf32>
  %f = stablehlo.reshape %w : (tensor<16xf32>) -> tensor<4x4xf32>
  %d = stablehlo.broadcast_in_dim %r#1, dims = [1] : (tensor<4xf32>) -> tensor<4x4xf32>
  %us = stablehlo.multiply %r#2, %d : tensor<4x4xf32>
  %uf = stablehlo.multiply %us, %f : tensor<4x4xf32>
  %p = stablehlo.dot_general %uf, %r#3, contracting_dims = [1] x [0] : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  return %p : tensor<4x4xf32>"""
    assert proven(hand_made(body)) == 0
    assert proven(hand_made(body.replace("%uf = stablehlo.multiply %us, %f", "%uf = stablehlo.add %us, %us"))) == 1


def test_an_integer_one_does_not_fold_a_logical_or_and_total_order_is_not_folded() -> None:
    from jaxport.adapters.onnx.ops.svd_invariance import _arithmetic, _zero

    assert _zero("or", [1.0, 2.0], None) is None  # an integer or of known 1: not True (1 | 2 == 3)
    assert _zero("and", [0.0, 2.0], None) is None
    assert _zero("or", [True, None], None) is True
    with make_context():
        module = ir.Module.parse(
            "func.func @f(%a: tensor<f32>, %b: tensor<f32>) -> tensor<i1> {\n"
            "  %c = stablehlo.compare EQ, %a, %b, TOTALORDER : (tensor<f32>, tensor<f32>) -> tensor<i1>\n"
            "  return %c : tensor<i1>\n}")
        compare = module.body.operations[0].regions[0].blocks[0].operations[0]
        assert _arithmetic("compare", [0.0, -0.0], compare) is None  # -0 and +0 differ in total order
