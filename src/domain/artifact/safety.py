"""Safety checks that an export may disable, as typed values."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class SafetyCheckKind(Enum):
    """Which safety check a :class:`DisabledSafetyCheck` turns off."""

    PLATFORM = "platform"
    CUSTOM_CALL = "custom_call"
    SHAPE_ASSERTIONS = "shape_assertions"


@dataclass(frozen=True, slots=True)
class DisabledSafetyCheck:
    """A safety check to skip, at export (custom calls) or at call (platform).

    Build one with :meth:`platform`, :meth:`custom_call` or
    :meth:`shape_assertions`; ``str()`` gives the wire form that ``jax.export``
    uses (``"platform"``, ``"custom_call:<target>"``, ``"shape_assertions"``).

    >>> str(DisabledSafetyCheck.custom_call("my_kernel"))
    'custom_call:my_kernel'
    >>> DisabledSafetyCheck.platform() == DisabledSafetyCheck.platform()
    True
    """

    kind: SafetyCheckKind
    target: str | None = None

    def __post_init__(self) -> None:
        if (self.kind is SafetyCheckKind.CUSTOM_CALL) != (self.target is not None):
            raise ValueError("only a custom_call check names a target, and it must name one")
        if self.target == "":
            raise ValueError("the custom-call target of a DisabledSafetyCheck must not be empty")

    @classmethod
    def platform(cls) -> DisabledSafetyCheck:
        """Allows calling on a platform the function was not exported for."""
        return cls(SafetyCheckKind.PLATFORM)

    @classmethod
    def custom_call(cls, target_name: str) -> DisabledSafetyCheck:
        """Allows exporting a custom call to ``target_name`` (``"ALL"`` allows any)."""
        return cls(SafetyCheckKind.CUSTOM_CALL, target_name)

    @classmethod
    def shape_assertions(cls) -> DisabledSafetyCheck:
        """Leaves out the run-time shape assertions of a polymorphic export.

        The 2023 API had this check; jax.export 0.10.2 dropped it and its reader
        refuses artifacts that record it ("unknown kind: 2"), so use it only for
        artifacts that jaxport (or an older jax) will read.
        """
        return cls(SafetyCheckKind.SHAPE_ASSERTIONS)

    @classmethod
    def parse(cls, wire: str) -> DisabledSafetyCheck:
        """Reads the wire form written by ``str()``.

        Raises:
            ValueError: ``wire`` is not a known safety check.
        """
        if wire in (SafetyCheckKind.PLATFORM.value, SafetyCheckKind.SHAPE_ASSERTIONS.value):
            return cls(SafetyCheckKind(wire))
        prefix = "custom_call:"
        if wire.startswith(prefix) and len(wire) > len(prefix):
            return cls.custom_call(wire[len(prefix):])
        raise ValueError(f"Unknown disabled safety check {wire!r}")

    def is_custom_call(self) -> str | None:
        """The custom-call target this check allows, or None for other kinds."""
        return self.target

    def __str__(self) -> str:
        if self.kind is SafetyCheckKind.CUSTOM_CALL:
            return f"custom_call:{self.target}"
        return str(self.kind.value)

    def __repr__(self) -> str:
        return f"DisabledSafetyCheck({str(self)!r})"
