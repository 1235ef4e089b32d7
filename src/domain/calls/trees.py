"""The structure of a pytree without its leaves, as the artifact format (jax 0.10.2) records it.

A :class:`TreeSpec` is a node kind and its children (a dict's keys in sorted
order, as JAX flattens dicts; a custom node's registered name and auxdata).
The call front (:mod:`.front`) flattens a caller's plain containers against one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum


class TreeKind(Enum):
    """The kind of one pytree node."""

    LEAF = "leaf"
    NONE = "none"
    TUPLE = "tuple"
    LIST = "list"
    DICT = "dict"
    CUSTOM = "custom"


@dataclass(frozen=True, slots=True)
class TreeSpec:
    """The structure of a pytree, without its leaves.

    Attributes:
        kind: the node kind.
        children: the child nodes, in flattening order.
        children_names: the keys of a ``DICT`` node, one per child (sorted
            order, as JAX flattens dicts); empty for other kinds.
        custom_name: the serialized name of a ``CUSTOM`` node's type
            (``"collections.OrderedDict"``, a namedtuple's registered name).
        custom_auxdata: the serialized auxiliary data of a ``CUSTOM`` node.

    >>> spec = TreeSpec.of_tuple(TreeSpec.leaf(), TreeSpec.of_dict({"b": TreeSpec.leaf()}))
    >>> spec.num_leaves
    2
    """

    kind: TreeKind
    children: tuple[TreeSpec, ...] = ()
    children_names: tuple[str, ...] = ()
    custom_name: str | None = None
    custom_auxdata: bytes = b""

    def __post_init__(self) -> None:
        if self.kind in (TreeKind.LEAF, TreeKind.NONE) and self.children:
            raise ValueError(f"a {self.kind.value} pytree node has no children")
        if self.kind is TreeKind.DICT and len(self.children_names) != len(self.children):
            raise ValueError(
                f"a dict pytree node has {len(self.children)} children but "
                f"{len(self.children_names)} keys")
        if self.kind is not TreeKind.DICT and self.children_names:
            raise ValueError(f"a {self.kind.value} pytree node has no keys")
        if (self.kind is TreeKind.CUSTOM) != (self.custom_name is not None):
            raise ValueError("a custom pytree node, and only a custom one, has a custom_name")
        if self.kind is not TreeKind.CUSTOM and self.custom_auxdata:
            raise ValueError(f"a {self.kind.value} pytree node has no auxdata")

    @staticmethod
    def leaf() -> TreeSpec:
        """A leaf (one array)."""
        return TreeSpec(TreeKind.LEAF)

    @staticmethod
    def none() -> TreeSpec:
        """A ``None`` node (no leaves)."""
        return TreeSpec(TreeKind.NONE)

    @staticmethod
    def of_tuple(*children: TreeSpec) -> TreeSpec:
        """A tuple node."""
        return TreeSpec(TreeKind.TUPLE, children)

    @staticmethod
    def of_list(*children: TreeSpec) -> TreeSpec:
        """A list node."""
        return TreeSpec(TreeKind.LIST, children)

    @staticmethod
    def of_dict(entries: dict[str, TreeSpec]) -> TreeSpec:
        """A dict node; its entries are ordered by sorted key, as JAX flattens dicts."""
        keys = tuple(sorted(entries))
        return TreeSpec(TreeKind.DICT, tuple(entries[k] for k in keys), keys)

    @property
    def num_leaves(self) -> int:
        """The number of leaves under this node (iterative: safe for deep trees)."""
        count = 0
        pending: list[TreeSpec] = [self]
        while pending:
            node = pending.pop()
            count += node.kind is TreeKind.LEAF
            pending.extend(node.children)
        return count

    def leaf_keys(self) -> tuple[tuple[str | int, ...], ...]:
        """The key path of each leaf, in flattening order: dict keys, and indices of the other nodes.

        >>> TreeSpec.of_tuple(TreeSpec.leaf(), TreeSpec.of_dict({"w": TreeSpec.leaf()})).leaf_keys()
        ((0,), (1, 'w'))
        """
        keys: list[tuple[str | int, ...]] = []
        pending: list[tuple[TreeSpec, tuple[str | int, ...]]] = [(self, ())]
        while pending:
            node, path = pending.pop()
            if node.kind is TreeKind.LEAF:
                keys.append(path)
                continue
            entries: Sequence[str | int] = node.children_names or range(len(node.children))
            pending.extend((child, (*path, entry)) for child, entry in
                           reversed(list(zip(node.children, entries))))
        return tuple(keys)
