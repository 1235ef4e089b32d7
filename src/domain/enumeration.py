"""Enumerations that ``jaxport.inspect`` can afford: :class:`enum.Enum` without importing :mod:`enum`.

Importing :mod:`enum` (with the ``functools``, ``collections`` and
``operator`` it imports) and building the enums of the artifact format took
a sixth of ``jaxport.inspect``'s time in a fresh process. The enumerations on
that path derive from :class:`Enumeration`, which the type checker sees as
:class:`enum.Enum` and which behaves as it for what jaxport and its users do
with members: ``Kind.A``, ``Kind("a")`` (``ValueError`` when no member has
that value), ``Kind["A"]``, iteration in definition order, ``len``, ``in``,
``__members__``, ``.name`` and ``.value``, identity, ``hash``, ``repr``
(``<Kind.A: 'a'>``), ``str`` and ``format`` (``Kind.A``), copy and pickle
(the same member). Members are the public names of the class body that are
not functions or descriptors; a value given twice makes the second name an
alias. Not supported: unhashable values, ``enum.auto``, ``_missing_``, mixins, and
``isinstance(member, enum.Enum)`` (false at run time).

>>> class Color(Enumeration):
...     RED = "red"
...     GREEN = "green"
>>> Color("red"), Color["GREEN"], [c.name for c in Color], str(Color.RED)
(<Color.RED: 'red'>, <Color.GREEN: 'green'>, ['RED', 'GREEN'], 'Color.RED')
"""

from __future__ import annotations

# Not `from typing import ...`: `jaxport.inspect` reads this module, and typing costs it ~10%.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping
    from typing import Any

__all__ = ["Enumeration"]

#: ``types.MappingProxyType``, without importing ``types``.
_MappingProxy = type(type.__dict__)


class _EnumerationType(type):
    """The type of enumerations: makes the members and looks them up."""

    _member_map_: dict[str, Any]
    _value2member_map_: dict[Any, Any]

    def __new__(mcs, name: str, bases: tuple[type, ...], body: dict[str, Any]) -> _EnumerationType:
        for base in bases:
            if getattr(base, "_member_map_", None):
                raise TypeError(f"{name}: cannot extend the enumeration {base.__name__!r}")
        values = {key: value for key, value in body.items()
                  if not key.startswith("_") and not hasattr(value, "__get__")}
        for key in values:
            del body[key]
        cls = super().__new__(mcs, name, bases, body)
        members: dict[str, Any] = {}
        by_value: dict[Any, Any] = {}
        for key, value in values.items():
            member = by_value.get(value)
            if member is None:
                member = object.__new__(cls)  # type: ignore[arg-type]
                object.__setattr__(member, "_name_", key)
                object.__setattr__(member, "_value_", value)
                by_value[value] = member
            members[key] = member
            type.__setattr__(cls, key, member)
        type.__setattr__(cls, "_member_map_", members)
        type.__setattr__(cls, "_value2member_map_", by_value)
        return cls

    def __call__(cls, value: Any) -> Any:
        if isinstance(value, cls):
            return value
        try:
            return cls._value2member_map_[value]
        except (KeyError, TypeError):
            raise ValueError(f"{value!r} is not a valid {cls.__qualname__}") from None

    def __getitem__(cls, name: str) -> Any:
        return cls._member_map_[name]

    def __iter__(cls) -> Iterator[Any]:  # the members in definition order, without aliases
        members: Iterator[Any] = iter(cls._value2member_map_.values())
        return members

    def __reversed__(cls) -> Iterator[Any]:
        members: Iterator[Any] = reversed(cls._value2member_map_.values())
        return members

    def __len__(cls) -> int:
        return len(cls._value2member_map_)

    def __contains__(cls, member: object) -> bool:
        return isinstance(member, cls) and member in cls._value2member_map_.values()

    def __bool__(cls) -> bool:
        return True

    @property
    def __members__(cls) -> Mapping[str, Any]:
        return _MappingProxy(cls._member_map_)

    def __repr__(cls) -> str:
        return f"<enum {cls.__name__!r}>"

    def __setattr__(cls, name: str, value: object) -> None:
        if name in cls.__dict__.get("_member_map_", {}):
            raise AttributeError(f"cannot reassign member {name!r}")
        super().__setattr__(name, value)

    def __delattr__(cls, name: str) -> None:
        if name in cls.__dict__.get("_member_map_", {}):
            raise AttributeError(f"cannot delete member {name!r}")
        super().__delattr__(name)


class _Enumeration(metaclass=_EnumerationType):
    """The base of enumerations (see the module's docstring)."""

    __slots__ = ("_name_", "_value_")
    _name_: str
    _value_: Any

    @property
    def name(self) -> str:
        """The member's name."""
        return self._name_

    @property
    def value(self) -> Any:
        """The member's value."""
        return self._value_

    def __repr__(self) -> str:
        return f"<{type(self).__name__}.{self._name_}: {self._value_!r}>"

    def __str__(self) -> str:
        return f"{type(self).__name__}.{self._name_}"

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)

    def __hash__(self) -> int:
        return hash(self._name_)

    def __reduce_ex__(self, protocol: object) -> tuple[object, tuple[object]]:
        return type(self), (self._value_,)

    def __copy__(self) -> _Enumeration:
        return self

    def __deepcopy__(self, memo: object) -> _Enumeration:
        return self

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"cannot set {name!r} of the member {self}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete {name!r} of the member {self}")


if TYPE_CHECKING:
    from enum import Enum as Enumeration
else:
    Enumeration = _Enumeration
