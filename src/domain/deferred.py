"""Record fields that may be made on first read (:class:`Deferred`, :class:`DeferredField`).

An export made in this process knows its signature as JAX objects; the
artifact record holds it in wire terms (tree specs, dimension strings, dtype
enums, effect names, the module as a StableHLO portable artifact). Two
conversions must wait until something reads them:

* the module's serialization is most of what an export costs beyond tracing
  and lowering, and nothing needs the bytes until they are read
  (``serialize()``, ``save``, the first call);
* what the artifact format cannot hold (a pytree node type not registered for
  serialization, a dict key that is not a string, an effect that its class
  cannot rebuild, a dtype without a wire code) must not stop an export that is
  only called in this process: only reading the record, which serialization
  does, fails.

Such a field is given as ``Deferred(make)``. Its first read calls ``make``
once, keeps the value and drops the function (and what it holds); readers
always get the value an eager conversion would have given. When ``make``
raises, nothing is kept: a later read calls it again, so a node type
registered for serialization in between is then found.

>>> from dataclasses import dataclass
>>> @dataclass(frozen=True)
... class Box:
...     value: DeferredField[int] = DeferredField(0)
>>> calls = []
>>> box = Box(Deferred(lambda: calls.append(1) or 42))
>>> len(calls), box.value, box.value, len(calls)
(0, 42, 42, 1)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, cast

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Deferred(Generic[T]):
    """A field's value, made by ``make`` when the field is first read."""

    make: Callable[[], T]


class DeferredField(Generic[T]):
    """A data descriptor for a dataclass field that holds a value or a :class:`Deferred` one.

    The instance keeps the field in its ``__dict__`` (the dataclass has no
    ``__slots__``). Reading it on the class gives ``default``, which dataclasses
    take for the field's default.
    """

    def __init__(self, default: T) -> None:
        self._default = default

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name

    def __get__(self, obj: Any, owner: type | None = None) -> T:
        if obj is None:
            return self._default
        value = obj.__dict__[self._name]
        if type(value) is Deferred:
            value = value.make()
            obj.__dict__[self._name] = value
        return cast(T, value)

    def __set__(self, obj: Any, value: T | Deferred[T]) -> None:
        obj.__dict__[self._name] = value
