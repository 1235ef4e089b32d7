"""``jaxport.register_pytree_node_serialization`` and ``jaxport.register_namedtuple_serialization``:
registering types in the default pytree serialization registry."""

from __future__ import annotations

from typing import TypeVar

from .pytree_registry import DeserializeAuxdata, FromChildren, SerializeAuxdata
from .wiring import default_registry

T = TypeVar("T")


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
