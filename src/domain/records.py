"""Frozen records: what ``@dataclass(frozen=True, slots=True)`` makes, for a fraction of the cost.

``jaxport.inspect`` runs in a fresh process, and importing :mod:`dataclasses`
alone (it imports ``inspect``, ``re``, ``ast``, ``copy``...) took most of its
time, then each dataclass about a millisecond more. The classes on that path
use :func:`record` instead. A record behaves as the frozen, slotted
dataclass with the same fields: the same ``__init__`` (positional or keyword,
defaults, ``__post_init__``), ``__eq__`` (same class and equal fields),
``__hash__``, ``__repr__``, ``__match_args__``, and ``FrozenInstanceError``
on assignment. And it *is* one for :mod:`dataclasses`:
``dataclasses.replace``, ``asdict``, ``fields`` and ``is_dataclass`` work,
the class's ``__dataclass_fields__`` being made (by :mod:`dataclasses`
itself) the first time something asks for them.

Limits, checked when the class is made: fields are annotated in the class
body of a module with ``from __future__ import annotations``; a default is a
plain value (no ``dataclasses.field``); no base class has fields.

>>> @record
... class Point:
...     x: int
...     y: int = 0
>>> Point(1), Point(1) == Point(1, 0), hash(Point(1)) == hash(Point(1, 0))
(Point(x=1, y=0), True, True)
>>> import dataclasses
>>> dataclasses.replace(Point(1), y=2), dataclasses.asdict(Point(1))
(Point(x=1, y=2), {'x': 1, 'y': 0})
"""

from __future__ import annotations

# Not `from typing import ...`: `jaxport.inspect` reads this module, and typing costs it ~10%.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TypeVar

    from typing_extensions import dataclass_transform

    _T = TypeVar("_T")
    _R = TypeVar("_R")

    @dataclass_transform(frozen_default=True)
    def record(cls: type[_T]) -> type[_T]:
        """Makes ``cls`` a frozen record (see the module's docstring)."""
        return cls
else:
    def record(cls):
        """Makes ``cls`` a frozen record (see the module's docstring)."""
        return _make_record(cls)

_DATACLASS_NAMES = ("__dataclass_fields__", "__dataclass_params__")
#: The methods compiled on first use (most records of a process never use them).
_LAZY_METHODS = ("__eq__", "__hash__", "__repr__", "__getstate__")


class _RecordType(type):
    """The type of records: answers :mod:`dataclasses`' questions on first asking."""

    def __getattr__(cls, name: str) -> Any:
        if name not in _DATACLASS_NAMES:
            raise AttributeError(f"type object {cls.__qualname__!r} has no attribute {name!r}")
        _add_dataclass_fields(cls)
        return type.__getattribute__(cls, name)


def _make_record(cls: type[Any]) -> type[Any]:
    if any(isinstance(b, _RecordType) for b in cls.__mro__[1:]):
        raise TypeError(f"record {cls.__qualname__}: a record cannot inherit from a record")
    body = dict(cls.__dict__)
    fields: list[str] = []
    for name, annotation in body.get("__annotations__", {}).items():
        if not isinstance(annotation, str):
            raise TypeError(f"record {cls.__qualname__}: the module of a record needs "
                            "`from __future__ import annotations`")
        if not annotation.startswith(("ClassVar", "typing.ClassVar")):
            fields.append(name)
    defaults = {name: body.pop(name) for name in fields if name in body}
    body.pop("__dict__", None)
    body.pop("__weakref__", None)
    body["__slots__"] = body["__match_args__"] = tuple(fields)
    body["__record_defaults__"] = defaults
    # As dataclass(frozen=True): __hash__ is generated unless the class defines
    # it (Python sets it to None in a class that defines __eq__ alone).
    own_hash = body.get("__hash__") is not None or ("__hash__" in body and "__eq__" not in body)
    lazy = [name for name in _LAZY_METHODS
            if name not in body or (name == "__hash__" and not own_hash)]
    body.setdefault("__init__", _compiled(cls.__qualname__, "__init__", fields, defaults,
                                          "__post_init__" in body))
    body.update(__setattr__=_frozen_setattr, __delattr__=_frozen_delattr,
                __setstate__=_setstate, __getattr__=_instance_getattr)
    made: type[Any] = _RecordType(cls.__name__, cls.__bases__, body)
    for name in lazy:
        type.__setattr__(made, name, _compile_on_first_call(made, name))
    return made


def _compile_on_first_call(cls: type[Any], name: str) -> Any:
    def first_call(self: Any, *args: Any) -> Any:
        method = _compiled(cls.__qualname__, name, cls.__match_args__, {}, False)
        type.__setattr__(cls, name, method)
        return method(self, *args)

    first_call.__qualname__ = f"{cls.__qualname__}.{name}"
    return first_call


def _compiled(qualname: str, name: str, fields: list[str] | tuple[str, ...],
              defaults: dict[str, object], post_init: bool) -> Any:
    """One method, compiled for the fields (so that it runs as fast as a dataclass's)."""
    values = "(" + "".join(f"self.{f}, " for f in fields) + ")"
    if name == "__init__":
        params = "".join(f", {f}=__default_{f}" if f in defaults else f", {f}" for f in fields)
        sets = "".join(f"    __set(self, {f!r}, {f})\n" for f in fields)
        post = "    self.__post_init__()\n" if post_init else ""
        source = f"def __init__(self{params}):\n{sets}{post}    pass\n"
    elif name == "__eq__":
        others = values.replace("self.", "other.")
        source = (f"def __eq__(self, other):\n    if other.__class__ is self.__class__:\n"
                  f"        return {values} == {others}\n    return NotImplemented\n")
    elif name == "__hash__":
        source = f"def __hash__(self):\n    return hash({values})\n"
    elif name == "__repr__":
        shown = ", ".join(f"{f}={{self.{f}!r}}" for f in fields)
        source = f"def __repr__(self):\n    return f'{{self.__class__.__qualname__}}({shown})'\n"
    else:
        source = f"def __getstate__(self):\n    return {values}\n"
    scope: dict[str, Any] = {f"__default_{f}": d for f, d in defaults.items()}
    scope["__set"] = object.__setattr__
    # Our text, made of field names. Not `compile()`: its first call in a process
    # builds the types of the `ast` module (2 ms), which `exec` of a string skips.
    exec(source, scope)
    method = scope[name]
    method.__qualname__ = f"{qualname}.{name}"
    return method


def _setstate(self: Any, state: tuple[object, ...]) -> None:
    for f, v in zip(type(self).__match_args__, state):
        object.__setattr__(self, f, v)


def _instance_getattr(self: Any, name: str) -> Any:
    if name in _DATACLASS_NAMES:  # dataclasses.fields(record) before any class-level question
        return getattr(type(self), name)
    raise AttributeError(f"{type(self).__qualname__!r} object has no attribute {name!r}")


def _frozen_setattr(self: object, name: str, value: object) -> None:
    from dataclasses import FrozenInstanceError

    raise FrozenInstanceError(f"cannot assign to field {name!r}")


def _frozen_delattr(self: object, name: str) -> None:
    from dataclasses import FrozenInstanceError

    raise FrozenInstanceError(f"cannot delete field {name!r}")


def _add_dataclass_fields(cls: type[Any]) -> None:
    """Gives ``cls`` the ``__dataclass_fields__`` of the frozen dataclass with its fields.

    :mod:`dataclasses` makes them, from a twin class with the same
    annotations and defaults; the record keeps its own methods.
    """
    import dataclasses

    fields: tuple[str, ...] = type.__getattribute__(cls, "__slots__")
    annotations = type.__getattribute__(cls, "__annotations__")
    twin_body: dict[str, object] = dict(type.__getattribute__(cls, "__record_defaults__"))
    twin_body["__annotations__"] = {f: annotations[f] for f in fields}
    twin: type[Any] = dataclasses.dataclass(frozen=True)(type(cls.__name__, (), twin_body))
    for name in _DATACLASS_NAMES:
        type.__setattr__(cls, name, getattr(twin, name))


def replace(obj: _R, /, **changes: Any) -> _R:
    """``obj`` with some fields changed, as ``dataclasses.replace`` (without importing it).

    >>> @record
    ... class Pair:
    ...     a: int
    ...     b: int
    >>> replace(Pair(1, 2), b=3)
    Pair(a=1, b=3)
    """
    fields: tuple[str, ...] = type(obj).__match_args__  # type: ignore[attr-defined]
    unknown = set(changes) - set(fields)
    if unknown:
        raise TypeError(f"{type(obj).__qualname__} has no field {sorted(unknown)[0]!r}")
    values = {f: changes[f] if f in changes else getattr(obj, f) for f in fields}
    return type(obj)(**values)
