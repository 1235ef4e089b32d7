"""Which pytree node types can be serialized, and how: a registry object.

The names and auxdata encodings are those of ``jax.export``, so a type
registered under the same name on both sides reads across. The registry used
by default (:func:`default_registry`) is the process's, as ``jax.export``'s is:
``jaxport.register_pytree_node_serialization`` and
``jaxport.register_namedtuple_serialization`` register types in it. Flax and
Equinox nodes that are not registered are serialized as plain containers
(:mod:`jaxport.adapters.jax.trees.plain`).
"""

from __future__ import annotations

import collections
import functools
import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import jax
from jax.tree_util import PyTreeDef

from jaxport.adapters.jax import internals as jax_internals
from jaxport.domain.artifact.record import TreeKind, TreeSpec
from jaxport.domain.errors import ArtifactError, NonStringKeyError
from jaxport.adapters.jax.trees.plain import is_library_type, plain_structure

T = TypeVar("T")
SerializeAuxdata = Callable[[Any], bytes]
DeserializeAuxdata = Callable[[bytes], Any]
FromChildren = Callable[[Any, Sequence[Any]], Any]


@dataclass(frozen=True, slots=True)
class _Entry:
    nodetype: type
    name: str
    serialize_auxdata: SerializeAuxdata
    deserialize_auxdata: DeserializeAuxdata
    from_children: FromChildren | None


def _is_namedtuple(nodetype: type) -> bool:
    fields = getattr(nodetype, "_fields", None)
    return (issubclass(nodetype, tuple) and isinstance(fields, Sequence)
            and all(isinstance(f, str) for f in fields))


def _ordered_dict_keys(keys: Any) -> bytes:
    if isinstance(keys, Sequence) and all(isinstance(k, str) for k in keys):
        return json.dumps(list(keys)).encode("utf-8")
    raise NotImplementedError(
        "Serialization of collections.OrderedDict is supported only when the "
        f"keys are strings. Found keys: {keys}.")


class _NonStringKey(Exception):
    """A dict key that is not a string; ``path`` gathers the key path, innermost first."""

    def __init__(self, key: Any) -> None:
        super().__init__(key)
        self.key = key
        self.path = [f"[{key!r}]"]


def _child_key(treedef: PyTreeDef, index: int) -> str:
    """How ``jax.tree_util.keystr`` names child ``index`` of ``treedef``'s root."""
    node_type, aux = treedef.node_data() or (None, ())  # a node with children has node data
    if node_type is dict or node_type is collections.OrderedDict:
        return f"[{list(aux)[index]!r}]"
    if node_type is not None and _is_namedtuple(node_type):
        fields = getattr(node_type, "_fields")
        return f".{fields[index]}"
    return f"[{index}]"


class PytreeSerializationRegistry:
    """Maps pytree node types to serialized names and auxdata codecs.

    ``collections.OrderedDict`` (with string keys) is registered from the start;
    the namedtuples JAX's own functions return (``jnp.linalg.qr``'s ``QRResult``,
    ``SVDResult``, ``EighResult``, ``SlogdetResult``, ``jnp.unique_all``'s, ...;
    :data:`jaxport.adapters.jax.internals.JAX_RESULT_TYPES`) on first use, under
    their public names (``jax.numpy.linalg.QRResult``), unless registered before.
    """

    def __init__(self) -> None:
        self._by_type: dict[type, _Entry] = {}
        self._by_name: dict[str, _Entry] = {}
        self.register_pytree_node_serialization(
            collections.OrderedDict, serialized_name="collections.OrderedDict",
            serialize_auxdata=_ordered_dict_keys,
            deserialize_auxdata=lambda b: json.loads(b.decode("utf-8")))

    def register_pytree_node_serialization(
            self, nodetype: type[T], *, serialized_name: str, serialize_auxdata: SerializeAuxdata,
            deserialize_auxdata: DeserializeAuxdata, from_children: FromChildren | None = None) -> type[T]:
        """Registers how to serialize nodes of ``nodetype`` (a registered pytree node).

        Without ``from_children``, deserialization rebuilds nodes with the
        type's registered pytree unflattening.

        Returns:
            ``nodetype``, so that this can be used as a class decorator.

        Raises:
            ValueError: the type or the name is registered already, or there is
                no ``from_children`` and the type is not a registered pytree node.
        """
        if nodetype in self._by_type:
            raise ValueError(
                f"Duplicate serialization registration for type `{nodetype}`. Previous "
                f"registration was with serialized_name `{self._by_type[nodetype].name}`.")
        if serialized_name in self._by_name:
            raise ValueError(
                f"Duplicate serialization registration for serialized_name `{serialized_name}`. "
                f"Previous registration was for type `{self._by_name[serialized_name].nodetype}`.")
        if from_children is None and not jax_internals.is_registered_pytree_node(nodetype):
            raise ValueError("If `from_children` is not present, you must call first"
                             f"`jax.tree_util.register_pytree_node` for `{nodetype}`")
        entry = _Entry(nodetype, serialized_name, serialize_auxdata, deserialize_auxdata, from_children)
        self._by_type[nodetype] = entry
        self._by_name[serialized_name] = entry
        return nodetype

    def register_namedtuple_serialization(self, nodetype: type[T], *, serialized_name: str) -> type[T]:
        """Registers a ``collections.namedtuple`` type; its field names are the auxdata.

        Raises:
            ValueError: ``nodetype`` is not a namedtuple, or is registered already.
        """
        if not _is_namedtuple(nodetype):
            raise ValueError("Use `jaxport.register_pytree_node_serialization` for "
                             "types other than `collections.namedtuple`.")
        fields = tuple(getattr(nodetype, "_fields"))

        def from_children(aux: Any, children: Sequence[Any]) -> Any:
            if list(aux) != list(fields):
                raise ArtifactError(
                    f"The namedtuple `{serialized_name}` was serialized with fields {list(aux)} "
                    f"but `{nodetype.__name__}` has fields {list(fields)}")
            return nodetype(*children)

        return self.register_pytree_node_serialization(
            nodetype, serialized_name=serialized_name,
            serialize_auxdata=lambda _: json.dumps(list(fields)).encode("utf-8"),
            deserialize_auxdata=lambda b: json.loads(b.decode("utf-8")),
            from_children=from_children)

    def to_spec(self, treedef: PyTreeDef, *, where: str = "tree") -> TreeSpec:
        """The serializable structure of ``treedef``.

        Args:
            treedef: the structure.
            where: how errors name the root, e.g. ``"result"``.

        A subtree rooted at a Flax or Equinox object of a type not registered
        here is given as its plain containers (:func:`.plain_trees.plain_tree`).

        Raises:
            ValueError: it holds a node type that is not registered.
            NonStringKeyError: it holds a dict with a key that is not a string
                (a ``TypeError``, as for ``jax.export``); the message names the
                key path from ``where``.
        """
        try:
            return self._spec(treedef)
        except _NonStringKey as exc:
            raise NonStringKeyError(where + "".join(reversed(exc.path)), exc.key) from None

    def args_spec(self, treedef: PyTreeDef) -> TreeSpec:
        """:meth:`to_spec` of an ``(args, kwargs)`` tree; errors name ``args[0]['w']``, ``kwargs['k']``."""
        try:
            return self._spec(treedef)
        except _NonStringKey as exc:
            head, *rest = reversed(exc.path)  # "[0]" or "[1]": the args or the kwargs
            raise NonStringKeyError(("args" if head == "[0]" else "kwargs") + "".join(rest), exc.key) from None

    def _spec(self, treedef: PyTreeDef) -> TreeSpec:
        node_data = treedef.node_data()
        if node_data is not None and node_data[0] not in self._by_type and is_library_type(node_data[0]):
            return self._plain_spec(treedef)
        specs = []
        for i, child in enumerate(treedef.children()):
            try:
                specs.append(self._spec(child))
            except _NonStringKey as exc:
                exc.path.append(_child_key(treedef, i))
                raise
        children = tuple(specs)
        if node_data is None:
            return TreeSpec.leaf()
        node_type, aux = node_data
        if node_type is type(None):
            return TreeSpec.none()
        if node_type is tuple:
            return TreeSpec(TreeKind.TUPLE, children)
        if node_type is list:
            return TreeSpec(TreeKind.LIST, children)
        if node_type is dict:
            for key in aux:
                if not isinstance(key, str):
                    raise _NonStringKey(key)
            return TreeSpec(TreeKind.DICT, children, tuple(aux))
        entry = self._by_type.get(node_type) or self._jax_result(node_type)
        if entry is None:
            raise ValueError(
                f"Cannot serialize PyTreeDef containing an unregistered type `{node_type}`. "
                "Use `jaxport.register_pytree_node_serialization` or "
                "`jaxport.register_namedtuple_serialization`.")
        auxdata = entry.serialize_auxdata(aux)
        if not isinstance(auxdata, (bytes, bytearray)):
            raise ValueError(f"The custom serialization function for `{node_type}` must return a "
                             f"`bytes` object. It returned a {type(auxdata)}.")
        return TreeSpec(TreeKind.CUSTOM, children, custom_name=entry.name, custom_auxdata=bytes(auxdata))

    def _plain_spec(self, treedef: PyTreeDef) -> TreeSpec:
        """A Flax or Equinox subtree, unless registered here, as plain containers (see plain_trees.py)."""
        try:
            return self._spec(plain_structure(treedef))
        except NonStringKeyError as exc:
            inner = _NonStringKey(exc.key)
            inner.path = [exc.where.removeprefix("tree")]
            raise inner from None

    def to_treedef(self, spec: TreeSpec, leaves: Sequence[Any] | None = None) -> PyTreeDef:
        """The ``PyTreeDef`` of a serialized structure.

        Args:
            spec: the structure.
            leaves: the leaves to build the tree with (custom nodes may look at
                them); placeholders when absent.

        Raises:
            ArtifactError: it holds a custom node whose name is not registered
                here, or whose auxdata does not decode.
        """
        it: Iterator[Any] = iter(leaves) if leaves is not None else iter(lambda: 0.0, None)
        return jax.tree_util.tree_structure(self._build(spec, it))

    def _build(self, spec: TreeSpec, leaves: Iterator[Any]) -> Any:
        children = [self._build(c, leaves) for c in spec.children]
        kind = spec.kind
        if kind is TreeKind.LEAF:
            return next(leaves)
        if kind is TreeKind.NONE:
            return None
        if kind is TreeKind.TUPLE:
            return tuple(children)
        if kind is TreeKind.LIST:
            return children
        if kind is TreeKind.DICT:
            return dict(zip(spec.children_names, children))
        return self._build_custom(spec, children)

    def _jax_result(self, nodetype: type | None = None, name: str | None = None) -> _Entry | None:
        """One of JAX's own result namedtuples (``QRResult``, ...), registered on first use, else None."""
        if name is None and nodetype is not None:
            name = jax_internals.jax_result_name(nodetype)
        if name is None or name in self._by_name:
            return None
        found = nodetype or jax_internals.jax_result_type(name)
        if found is None or found in self._by_type:
            return None
        try:
            self.register_namedtuple_serialization(found, serialized_name=name)
        except ValueError:  # another thread registered it first
            pass
        return self._by_name.get(name)

    def _build_custom(self, spec: TreeSpec, children: list[Any]) -> Any:
        entry = self._by_name.get(spec.custom_name or "") or self._jax_result(name=spec.custom_name)
        if entry is None:
            raise ArtifactError(
                f"Cannot deserialize a PyTreeDef containing the type `{spec.custom_name}`, which "
                "is not registered for serialization here. Use "
                "`jaxport.register_pytree_node_serialization` or "
                "`jaxport.register_namedtuple_serialization` with that serialized_name.")
        try:
            aux = entry.deserialize_auxdata(spec.custom_auxdata)
        except Exception as exc:
            raise ArtifactError(f"The auxdata of the pytree node `{entry.name}` does not "
                                f"deserialize: {exc}") from exc
        if entry.from_children is not None:
            return entry.from_children(aux, children)
        child_defs = [jax.tree_util.tree_structure(c) for c in children]
        node = PyTreeDef.from_node_data_and_children(
            jax.tree_util.default_registry, (entry.nodetype, aux), child_defs)
        return jax.tree_util.tree_unflatten(node, [x for c in children for x in jax.tree_util.tree_leaves(c)])


@functools.cache
def default_registry() -> PytreeSerializationRegistry:
    """The process's registry, which serialization and bundles use when given none."""
    return PytreeSerializationRegistry()


def register_pytree_node_serialization(
        nodetype: type[T], *, serialized_name: str, serialize_auxdata: SerializeAuxdata,
        deserialize_auxdata: DeserializeAuxdata, from_children: FromChildren | None = None) -> type[T]:
    """Registers ``nodetype`` in the default registry (see ``PytreeSerializationRegistry``)."""
    return default_registry().register_pytree_node_serialization(
        nodetype, serialized_name=serialized_name, serialize_auxdata=serialize_auxdata,
        deserialize_auxdata=deserialize_auxdata, from_children=from_children)


def register_namedtuple_serialization(nodetype: type[T], *, serialized_name: str) -> type[T]:
    """Registers a namedtuple type in the default registry."""
    return default_registry().register_namedtuple_serialization(nodetype, serialized_name=serialized_name)
