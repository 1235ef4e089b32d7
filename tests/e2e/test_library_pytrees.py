"""End to end: Flax NNX states and Equinox partitions exported as they are, stored as plain containers."""

from __future__ import annotations

import collections
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import equinox as eqx
import jax
import jax.export
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

import jaxport
from jaxport.errors import NonStringKeyError

LAYERS = 12  # more than 10: a key "10" sorted as text would come before "2"


class Count(nnx.Variable[jax.Array]):
    """A variable type of the user's own."""


class Net(nnx.Module):
    def __init__(self, rngs: nnx.Rngs) -> None:
        self.layers = nnx.List([nnx.Linear(3, 3, rngs=rngs) for _ in range(LAYERS)])
        self.heads = nnx.Dict({"out": nnx.Linear(3, 2, rngs=rngs), "aux": nnx.Linear(3, 1, rngs=rngs)})
        self.norm = nnx.BatchNorm(3, rngs=rngs)
        self.calls = Count(jnp.zeros((), jnp.int32))

    def __call__(self, x: jax.Array) -> jax.Array:
        for i, layer in enumerate(self.layers):
            x = jnp.tanh(layer(x)) + 0.01 * i
        x = self.norm(x)
        self.calls[...] = self.calls[...] + 1
        return self.heads["out"](x) + self.heads["aux"](x)


def _nnx_model() -> tuple[Any, Any]:
    model = Net(nnx.Rngs(0))
    model.eval()  # BatchNorm uses its running averages
    return nnx.split(model)


def _specs(tree: Any) -> Any:
    return jax.tree.map(lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype), tree)


def _nnx_export() -> tuple[Any, Any, jaxport.Exported]:
    graphdef, state = _nnx_model()

    def fwd(state: Any, x: jax.Array) -> Any:
        model = nnx.merge(graphdef, state)
        y = model(x)
        return y, nnx.state(model)  # the updated state comes back too

    exp = jaxport.export(jax.jit(fwd))(_specs(state), jax.ShapeDtypeStruct((4, 3), jnp.float32))
    return graphdef, state, exp


X = np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)


def test_the_nnx_route_exports_and_the_artifact_holds_plain_containers_in_the_same_leaf_order() -> None:
    graphdef, state, exp = _nnx_export()
    y, new_state = exp.call(state, X)  # the exporting process passes the state as it is
    assert type(new_state).__name__ == "State"
    want_y = nnx.merge(graphdef, state)(X)
    np.testing.assert_allclose(y, want_y, rtol=1e-6)

    plain = jaxport.plain_tree(state)
    assert isinstance(plain, dict) and isinstance(plain["layers"], list) and len(plain["layers"]) == LAYERS
    assert sorted(plain["norm"]) == ["bias", "mean", "scale", "var"]  # parameters and batch statistics
    assert list(plain["calls"]) == ["value"]  # as the key path says: ['calls'].value
    np.testing.assert_array_equal(plain["layers"][10]["kernel"]["value"], state["layers"][10]["kernel"][...])
    for a, b in zip(jax.tree.leaves(plain), jax.tree.leaves(state), strict=True):
        assert a is b

    blob = exp.serialize()
    theirs = jax.export.deserialize(blob)  # jax.export reads it: no class it cannot name
    assert str(theirs.in_tree) == str(jax.tree.structure(((plain, X), {})))
    y2, state2 = theirs.call(plain, X)
    np.testing.assert_allclose(y2, y, rtol=1e-6)
    assert state2["calls"]["value"] == plain["calls"]["value"] + 1 and isinstance(state2["layers"], list)

    loaded = jaxport.deserialize(blob)
    for args in ((plain, X), (state, X)):  # the plain form, or the objects where Flax is at hand
        y3, _ = loaded.call(*args)
        np.testing.assert_allclose(y3, y, rtol=1e-6)
    y4, _ = exp.call(plain, X)  # and the in-process export takes the plain form
    np.testing.assert_allclose(y4, y, rtol=1e-6)


def _eqx_model() -> tuple[Any, Any]:
    class Block(eqx.Module):
        mlp: eqx.nn.MLP
        scale: jax.Array
        name: str = eqx.field(static=True)

        def __call__(self, x: jax.Array) -> jax.Array:
            return jax.vmap(self.mlp)(x) * self.scale

    block = Block(eqx.nn.MLP(3, 2, 5, 2, key=jax.random.key(1)), jnp.asarray([0.5, 2.0]), "block")
    return eqx.partition(block, eqx.is_array)


def test_an_equinox_partition_exports_as_plain_containers_fields_in_their_order() -> None:
    params, static = _eqx_model()
    exp = jaxport.export(jax.jit(lambda p, x: eqx.combine(p, static)(x)))(
        _specs(params), jax.ShapeDtypeStruct((4, 3), jnp.float32))
    want = eqx.combine(params, static)(X)
    np.testing.assert_allclose(exp.call(params, X), want, rtol=1e-6)

    plain = jaxport.plain_tree(params)
    linear = plain["mlp"]["layers"][0]
    assert isinstance(linear, collections.OrderedDict) and list(linear) == ["weight", "bias"]
    assert list(plain) == ["mlp", "scale"]  # None fields (the activation functions) hold no leaf
    theirs = jax.export.deserialize(exp.serialize())
    np.testing.assert_allclose(theirs.call(plain, X), want, rtol=1e-6)
    np.testing.assert_allclose(jaxport.deserialize(exp.serialize()).call(params, X), want, rtol=1e-6)


def test_a_key_that_cannot_be_a_string_is_refused_naming_its_key_path() -> None:
    class Table(eqx.Module):
        rows: dict[Any, jax.Array]

    table = Table({(1, 2): jnp.ones(2)})
    exp = jaxport.export(jax.jit(lambda t: t.rows[(1, 2)] * 2))(table)
    with pytest.raises(NonStringKeyError, match=re.escape("at args[0].rows[(1, 2)]")):
        exp.serialize()


LOAD_WITHOUT_THE_LIBRARIES = """
import json, sys
import numpy as np
import jaxport
out = {}
for name in ("nnx", "eqx"):
    bundle = jaxport.load_bundle(sys.argv[1] + "/" + name)
    x = np.load(sys.argv[1] + "/x.npy")
    y = bundle["fwd"](x)
    y = y[0] if isinstance(y, tuple) else y
    out[name] = {"y": np.asarray(y).tolist(), "params": type(bundle.params).__name__,
                 "first": type(next(iter(bundle.params.values()))).__name__}
out["modules"] = sorted(m for m in sys.modules if m.split(".")[0] in ("flax", "equinox"))
print(json.dumps(out))
"""


def test_a_bundle_saved_with_flax_and_equinox_objects_loads_and_runs_where_neither_is_imported(
        tmp_path: Path) -> None:
    graphdef, state, exp = _nnx_export()
    jaxport.save_bundle(tmp_path / "nnx", {"fwd": exp}, state)
    params, static = _eqx_model()
    eqx_exp = jaxport.export(jax.jit(lambda p, x: eqx.combine(p, static)(x)))(
        _specs(params), jax.ShapeDtypeStruct((4, 3), jnp.float32))
    jaxport.save_bundle(tmp_path / "eqx", {"fwd": eqx_exp}, params)
    np.save(tmp_path / "x.npy", X)

    done = subprocess.run([sys.executable, "-c", LOAD_WITHOUT_THE_LIBRARIES, str(tmp_path)], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["modules"] == []
    np.testing.assert_allclose(out["nnx"]["y"], nnx.merge(graphdef, state)(X), rtol=1e-6)
    np.testing.assert_allclose(out["eqx"]["y"], eqx.combine(params, static)(X), rtol=1e-6)
    assert out["nnx"]["params"] == "dict" and out["eqx"]["params"] == "dict"
    assert out["nnx"]["first"] == "dict" and out["eqx"]["first"] == "dict"

    loaded = jaxport.load_bundle(tmp_path / "nnx")  # here, where Flax is imported, the same
    assert loaded.params["layers"][11]["bias"]["value"].shape == (3,)
    assert loaded.with_params(state)["fwd"](X)[0].shape == (4, 2)
    names = [w.name for w in loaded.manifest.weights]
    assert names[:2] == ["calls/value", "heads/aux/bias/value"] and "layers/10/kernel/value" in names


class Dropped(nnx.Module):
    def __init__(self, rngs: nnx.Rngs) -> None:
        self.lin = nnx.Linear(4, 3, rngs=rngs)
        self.drop = nnx.Dropout(0.1, rngs=rngs)

    def __call__(self, x: Any) -> Any:
        return self.drop(self.lin(x), deterministic=True)


def test_an_nnx_rng_streams_key_among_the_weights_is_refused_at_save_naming_it_and_the_filter(
        tmp_path: Path) -> None:
    model = Dropped(nnx.Rngs(0))
    graphdef, state = nnx.split(model)
    exp = jaxport.export(jax.jit(lambda s, x: nnx.merge(graphdef, s)(x)))(
        state, jax.ShapeDtypeStruct((2, 4), jnp.float32))
    with pytest.raises(jaxport.errors.BundleError,
                       match=r"The weight 'drop/rngs/key/value' is the key of an NNX RNG stream .*"
                             r"nnx\.split\(model, nnx\.Param, \.\.\.\)"):
        jaxport.save_bundle(tmp_path / "refused", {"predict": exp}, state)
    assert not (tmp_path / "refused").exists()
    split: tuple[Any, ...] = nnx.split(model, nnx.Param, ...)  # what the message says
    graphdef, params, rest = split
    exp = jaxport.export(jax.jit(lambda p, x: nnx.merge(graphdef, p, rest)(x)))(
        params, jax.ShapeDtypeStruct((2, 4), jnp.float32))
    jaxport.save_bundle(tmp_path / "saved", {"predict": exp}, params)
    x = np.ones((2, 4), np.float32)
    np.testing.assert_allclose(jaxport.load_bundle(tmp_path / "saved")["predict"](x), model(x), rtol=1e-6)
