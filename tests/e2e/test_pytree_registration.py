"""Pytree serialization as jax.export does it: nodes whose auxiliary data
depends on their arrays' shapes, and the registration errors."""

from __future__ import annotations

import collections
import re
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import jax.scipy.stats
import numpy as np
import pytest
from jax import tree_util

import jaxport
from jaxport.errors import NonStringKeyError


@tree_util.register_pytree_node_class
class Described:
    """An array with one description per element: its auxiliary data must match its shape."""

    def __init__(self, array: Any, descriptions: tuple[str, ...]) -> None:
        assert len(array.shape) == 1 and len(descriptions) == array.shape[0]
        self.array = array
        self.descriptions = descriptions

    def tree_flatten(self) -> tuple[tuple[Any], tuple[str, ...]]:
        return (self.array,), self.descriptions

    @classmethod
    def tree_unflatten(cls, aux: tuple[str, ...], children: Any) -> Described:
        return cls(children[0], aux)


jaxport.register_pytree_node_serialization(
    Described, serialized_name="tests.e2e.test_pytree_registration.Described",
    serialize_auxdata=lambda aux: "/".join(aux).encode("utf-8"),
    deserialize_auxdata=lambda b: tuple(b.decode("utf-8").split("/")))


def described(n: int) -> Described:
    return Described(np.arange(n, dtype=np.float32), tuple(str(i) for i in range(n)))


def test_nodes_whose_auxdata_depends_on_the_shapes_round_trip_and_call() -> None:
    x = {"a": [described(2), described(3)], "b": described(4)}
    exp = jaxport.export(jax.jit(lambda t: t))(x)
    again = jaxport.deserialize(exp.serialize())
    out = again.call(x)
    assert out["b"].descriptions == ("0", "1", "2", "3")
    np.testing.assert_array_equal(out["a"][1].array, np.arange(3))


def test_a_namedtuple_must_be_registered_as_one() -> None:
    T = collections.namedtuple("T", ("a", "b"))
    with pytest.raises(ValueError, match="Cannot serialize .* unregistered type .*T"):
        jaxport.export(jax.jit(lambda x: x))(T(a=1, b=2)).serialize()
    with pytest.raises(ValueError, match="If `from_children` is not present.* must call.*register_pytree_node"):
        jaxport.register_pytree_node_serialization(
            T, serialized_name="tests.T", serialize_auxdata=lambda _: b"", deserialize_auxdata=lambda _: None)
    with pytest.raises(ValueError, match="Use .*register_pytree_node_serialization"):
        jaxport.register_namedtuple_serialization(str, serialized_name="n/a")


def test_a_dict_with_integer_keys_is_refused_naming_its_key_path_and_what_to_do() -> None:
    layers = {0: {"w": np.ones(3, np.float32)}, 1: {"w": np.ones(3, np.float32)}}  # as nnx.List state
    exp = jaxport.export(jax.jit(lambda p, x: x * p["layers"][1]["w"]))({"layers": layers}, np.ones(3, np.float32))
    with pytest.raises(NonStringKeyError, match=re.escape(
            "Found key 0 of type <class 'int'> at args[0]['layers'][0]")) as refused:
        exp.serialize()
    assert isinstance(refused.value, TypeError)  # what jax.export raises
    assert "stores dict keys as strings only" in str(refused.value) and "list" in str(refused.value)
    out = jaxport.export(jax.jit(lambda x: {"h": (x, {2: x})}))(np.ones(3, np.float32))
    with pytest.raises(NonStringKeyError, match=re.escape("at result['h'][1][2]")):
        out.serialize()
    kw = jaxport.export(jax.jit(lambda *, k: k[7]))(k={7: np.ones(3, np.float32)})
    with pytest.raises(NonStringKeyError, match=re.escape("at kwargs['k'][7]")):
        kw.serialize()


class LateNode(collections.namedtuple("LateNode", ("a", "b"))):
    """A namedtuple registered for serialization only after it was exported."""


def test_an_unregistered_node_is_called_under_transformations_and_serializes_once_registered() -> None:
    x = np.arange(3, dtype=np.float32)
    exp = jaxport.export(jax.jit(lambda t: t.a * t.b))(LateNode(x, x))
    np.testing.assert_allclose(exp.call(LateNode(x, x)), x * x)
    np.testing.assert_allclose(jax.jit(exp.call)(LateNode(x, x)), x * x)
    np.testing.assert_allclose(jax.grad(lambda t: exp.call(t).sum())(LateNode(x, 2 * x)).a, 2 * x)
    np.testing.assert_allclose(jax.vmap(exp.call)(LateNode(np.stack([x, x]), np.stack([x, x]))), [x * x] * 2)
    with pytest.raises(ValueError, match="unregistered type .*LateNode"):
        exp.serialize()
    jaxport.register_namedtuple_serialization(LateNode, serialized_name="tests.e2e.LateNode")
    again = jaxport.deserialize(exp.serialize(vjp_order=1))
    assert again.in_tree == exp.in_tree
    np.testing.assert_allclose(jax.grad(lambda t: again.call(t).sum())(LateNode(2 * x, x)).b, 2 * x)


def test_jax_own_result_namedtuples_export_save_read_in_jax_export_and_convert(tmp_path: Path) -> None:
    a = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]], np.float32)

    def decompositions(m: Any) -> Any:
        return (jnp.linalg.qr(m), jnp.linalg.svd(m), jnp.linalg.eigh(m), jnp.linalg.slogdet(m))

    exp = jaxport.export(jax.jit(decompositions))(a)
    again = jaxport.deserialize(exp.serialize())
    qr, svd, eigh, slogdet = again.call(a)
    assert [type(r).__name__ for r in (qr, svd, eigh, slogdet)] == ["QRResult", "SVDResult", "EighResult",
                                                                     "SlogdetResult"]
    np.testing.assert_allclose(qr.Q @ qr.R, a, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(slogdet.logabsdet, np.log(abs(np.linalg.det(a))), rtol=1e-5)
    # jax.export reads the artifact where it registers the same names (JAX does not)
    for result in (qr, svd, eigh, slogdet):
        jax.export.register_namedtuple_serialization(
            type(result), serialized_name=f"jax.numpy.linalg.{type(result).__name__}")
    theirs = jax.export.deserialize(bytearray(exp.serialize()))
    assert type(theirs.call(a)[0]).__name__ == "QRResult"
    # a function returning one saves and converts to ONNX (its tree in the manifest)
    mode = jaxport.export(jax.jit(lambda x: jax.scipy.stats.mode(x, axis=0)))(np.zeros((5,), np.float32))
    path = tmp_path / "mode.jaxport"
    path.write_bytes(mode.serialize())
    jaxport.convert(path, tmp_path / "onnx", to="onnx")
    converted = jaxport.load_converted(tmp_path / "onnx")
    (call,) = converted.values()
    got = call(np.array([3.0, 1.0, 3.0, 2.0, 1.0], np.float32))
    assert got == (1.0, 2)  # the runtime side, without JAX, gives a custom node as the tuple of its children
