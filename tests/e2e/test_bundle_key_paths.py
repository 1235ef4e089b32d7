"""Property: any weights pytree saves as a bundle and loads back with the same key paths and leaves."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any, NamedTuple

import jax
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from safetensors import safe_open

import jaxport
from jaxport.domain.leaf_names import name_entries


class Point(NamedTuple):
    x: Any
    y: Any


class Keyed:
    """A custom node whose children have keys (GetAttrKey)."""

    def __init__(self, left: Any, right: Any) -> None:
        self.left, self.right = left, right


class Unkeyed:
    """A custom node flattened without keys (FlattenedIndexKey)."""

    def __init__(self, *children: Any) -> None:
        self.children = children


jaxport.register_namedtuple_serialization(Point, serialized_name="tests.key_paths.Point")
jax.tree_util.register_pytree_with_keys(
    Keyed, lambda k: (((jax.tree_util.GetAttrKey("left"), k.left), (jax.tree_util.GetAttrKey("right"), k.right)), None),
    lambda _, children: Keyed(*children), flatten_func=lambda k: ((k.left, k.right), None))
jaxport.register_pytree_node_serialization(Keyed, serialized_name="tests.key_paths.Keyed",
                                           serialize_auxdata=lambda _: b"", deserialize_auxdata=lambda _: None)
jax.tree_util.register_pytree_node(Unkeyed, lambda u: (u.children, len(u.children)),
                                   lambda _, children: Unkeyed(*children))
jaxport.register_pytree_node_serialization(Unkeyed, serialized_name="tests.key_paths.Unkeyed",
                                           serialize_auxdata=lambda n: str(n).encode(),
                                           deserialize_auxdata=lambda b: int(b.decode()))

KEYS = st.text(alphabet=st.sampled_from("ab/~0_é"), max_size=4).filter(lambda k: k != "__metadata__")
DTYPES = ("float32", "bfloat16", "int8", "bool")


@st.composite
def arrays(draw: st.DrawFn) -> Any:
    shape = tuple(draw(st.lists(st.integers(0, 3), max_size=2)))
    dtype = draw(st.sampled_from(DTYPES))
    values = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape) + draw(st.integers(0, 9))
    return jax.numpy.asarray(values).astype(dtype)


def trees(leaves: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.recursive(leaves | st.none(), lambda children: st.one_of(
        st.dictionaries(KEYS, children, max_size=3),
        st.lists(children, max_size=3),
        st.lists(children, max_size=3).map(tuple),
        st.builds(Point, children, children),
        st.builds(Keyed, children, children),
        st.lists(children, max_size=3).map(lambda c: Unkeyed(*c)),
    ), max_leaves=8)


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(trees(arrays()))
def test_key_path_names_round_trip_through_a_bundle(params: Any) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "b"
        jaxport.save_bundle(path, {}, params)
        loaded = jaxport.load_bundle(path).params
        with safe_open(path / "params.safetensors", framework="np") as f:
            stored = set(f.keys())
        names = [w.name for w in jaxport.inspect(path).weights]  # type: ignore[union-attr]
    want, want_def = jax.tree_util.tree_flatten_with_path(params)
    got, got_def = jax.tree_util.tree_flatten_with_path(loaded)
    assert str(got_def) == str(want_def)
    assert stored == set(names) and len(set(names)) == len(names)
    for name, (want_path, want_leaf), (got_path, got_leaf) in zip(names, want, got):
        assert got_path == want_path
        assert name_entries(name) == tuple(jaxport_entry(e) for e in want_path)
        assert got_leaf.dtype == want_leaf.dtype
        np.testing.assert_array_equal(np.asarray(got_leaf), np.asarray(want_leaf))


def jaxport_entry(entry: Any) -> str:
    for attr in ("key", "idx", "name"):
        if hasattr(entry, attr):
            return str(getattr(entry, attr))
    raise AssertionError(f"unknown key entry {entry!r}")
