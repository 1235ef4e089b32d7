"""Flax and Equinox pytrees as plain containers, so that artifacts and bundles hold no class of theirs.

An ``nnx.State`` (with its ``Param`` and other ``Variable`` nodes, the
integer-keyed dicts of an ``nnx.List``) or an Equinox module is not a type
that ``jax.export``'s format can name. When an export's signature or a
bundle's weights hold one, it is serialized as the plain containers
(lists, dicts, ``collections.OrderedDict``) that :func:`plain_tree` builds from
its key paths, by the rule of :mod:`jaxport.domain.plain_trees`; the leaves
keep their order, so the module's arguments are unchanged. A process that
loads the artifact needs neither library, and any reader of ``jax.export``'s
format reads it.

The objects are recognized by the module of their class or of a base class
(``flax.*``, ``equinox.*``); neither library is imported.
"""

from __future__ import annotations

import collections
from collections.abc import Sequence
from typing import Any

import jax
from jax.tree_util import PyTreeDef

from jaxport.domain.plain_trees import Container, container_for

#: The libraries whose pytree nodes are serialized as plain containers (top-level package names).
LIBRARIES = frozenset({"flax", "equinox"})


def is_library_type(node_type: type) -> bool:
    """Whether ``node_type`` or one of its base classes is defined in Flax or Equinox."""
    return any(getattr(c, "__module__", "").partition(".")[0] in LIBRARIES for c in node_type.__mro__)


def plain_tree(tree: Any) -> Any:
    """``tree`` as plain containers built from its key paths, with the same leaves in the same order.

    Each node becomes a list (children keyed ``0, 1, ...``), a dict of string
    keys (keys whose texts are in sorted order) or a ``collections.OrderedDict``
    (other keys, in flattening order); see :mod:`jaxport.domain.plain_trees`.
    ``None`` and empty containers, which hold no leaf, are left out; a tree
    without leaves becomes ``{}``. A Flax ``Variable``'s value is under the key
    ``"value"``, as its key path says (``['layers'][0]['kernel'].value``).

    It is what a loaded bundle's ``params`` hold for the Flax or Equinox
    weights it was saved with, and what a user of another pytree library can
    export instead of their objects (rebuilding them inside the function with
    ``jax.tree_util.tree_unflatten(treedef, jax.tree_util.tree_leaves(plain))``).

    Raises:
        NonStringKeyError: a key is neither a string nor an integer, or two
            keys of one node have the same text; the message names its key path.

    >>> plain_tree({"layers": {1: "b", 0: "a"}, "scale": ("c",)})
    {'layers': ['a', 'b'], 'scale': ['c']}
    """
    pairs = jax.tree_util.tree_flatten_with_path(tree)[0]
    if not pairs:
        return {}
    return _nest(pairs, 0, "tree")


def plain_structure(treedef: PyTreeDef) -> PyTreeDef:
    """The structure of :func:`plain_tree` of a tree with structure ``treedef``."""
    placeholders = treedef.unflatten(range(treedef.num_leaves))
    return jax.tree_util.tree_structure(plain_tree(placeholders))


def with_plain_library_nodes(treedef: PyTreeDef) -> PyTreeDef:
    """``treedef`` with every subtree rooted at a Flax or Equinox object replaced by its plain structure."""
    tree = treedef.unflatten(range(treedef.num_leaves))

    def is_library(x: Any) -> bool:
        return is_library_type(type(x))

    plain = jax.tree_util.tree_map(lambda x: plain_tree(x) if is_library(x) else x, tree,
                                   is_leaf=is_library)
    return jax.tree_util.tree_structure(plain)


def _nest(pairs: Sequence[tuple[tuple[Any, ...], Any]], depth: int, where: str) -> Any:
    """The container of the leaves ``pairs`` (key path, leaf), which share their first ``depth`` entries."""
    if len(pairs[0][0]) == depth:
        return pairs[0][1]
    groups: list[tuple[Any, list[tuple[tuple[Any, ...], Any]]]] = []
    for path, leaf in pairs:
        if groups and path[depth] == groups[-1][0]:
            groups[-1][1].append((path, leaf))
        else:
            groups.append((path[depth], [(path, leaf)]))
    kind, names = container_for([key_of(entry) for entry, _ in groups], where)
    children = [_nest(group, depth + 1, where + jax.tree_util.keystr((entry,)))
                for entry, group in groups]
    if kind is Container.LIST:
        return children
    if kind is Container.DICT:
        return dict(zip(names, children))
    return collections.OrderedDict(zip(names, children))


def key_of(entry: Any) -> object:
    """The key that one of JAX's key-path entries holds: a dict key, an index, a field name."""
    for attr in ("key", "idx", "name"):  # DictKey and FlattenedIndexKey, SequenceKey, GetAttrKey
        if hasattr(entry, attr):
            return getattr(entry, attr)
    return entry
