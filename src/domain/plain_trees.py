"""Which plain container a pytree node becomes, from the keys of its children.

Objects of pytree libraries (Flax NNX's ``nnx.State`` and ``Variable`` nodes,
Equinox modules) are stored in artifacts and bundles as plain containers built
from the tree's key paths: one container per node, one entry per key-path
entry, the leaves unchanged and in the same order. ``jax.export``'s format
stores lists, string-keyed dicts and ``collections.OrderedDict``\\ s of string
keys (JAX flattens a dict by sorted key, an ``OrderedDict`` in insertion order),
so the container of a node whose children are keyed ``k0, k1, ...`` (in
flattening order) is:

* a list, when the keys are the integers ``0, 1, ..., n-1`` in that order
  (a tuple field, an ``nnx.List``'s layers: the integer-keyed dicts of a
  state);
* otherwise a dict whose keys are the keys as strings (an integer by its
  decimal digits), when those strings are in sorted order;
* otherwise an ``OrderedDict`` with those strings in flattening order (an
  Equinox module's fields ``weight, bias``; integer keys ``2, 10``, which a
  dict would reorder, as ``"10"`` sorts before ``"2"``).

Only strings and integers can be keys; two keys with the same text (``1`` and
``"1"``) cannot both be. This module knows no JAX: the caller,
:mod:`jaxport.adapters.jax.trees.plain`, gives the keys.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum

from jaxport.domain.errors import NonStringKeyError


class Container(Enum):
    """The plain container of one node."""

    LIST = "list"
    DICT = "dict"
    ORDERED_DICT = "collections.OrderedDict"


def container_for(keys: Sequence[object], where: str) -> tuple[Container, tuple[str, ...]]:
    """The container of a node whose children have ``keys`` (in flattening order), and their names.

    Args:
        keys: one key per child: a string or an integer.
        where: the node's key path, for errors (``"params['layers']"``).

    Returns:
        The container and each child's name (for a list, its index as text).

    Raises:
        NonStringKeyError: a key is neither a string nor an integer, or two
            keys have the same text; the message names the entry.

    >>> container_for([0, 1, 2], "x")
    (<Container.LIST: 'list'>, ('0', '1', '2'))
    >>> container_for(["bias", "kernel"], "x")
    (<Container.DICT: 'dict'>, ('bias', 'kernel'))
    >>> container_for(["weight", "bias"], "x")
    (<Container.ORDERED_DICT: 'collections.OrderedDict'>, ('weight', 'bias'))
    >>> container_for([2, 10], "x")[0]
    <Container.ORDERED_DICT: 'collections.OrderedDict'>
    """
    names: list[str] = []
    seen: set[str] = set()
    for key in keys:
        if isinstance(key, bool) or not isinstance(key, (str, int)) or str(key) in seen:
            raise NonStringKeyError(f"{where}[{key!r}]", key)
        names.append(str(key))
        seen.add(names[-1])
    if list(keys) == list(range(len(keys))):
        return Container.LIST, tuple(names)
    if names == sorted(names):
        return Container.DICT, tuple(names)
    return Container.ORDERED_DICT, tuple(names)
