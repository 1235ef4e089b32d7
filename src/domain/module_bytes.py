"""Module bytes that may be made on first read (``Exported.mlir_module_serialized``).

An in-process export holds its lowered module; turning it into a StableHLO
portable artifact is most of what an export costs beyond tracing and
lowering, and nothing needs the bytes until they are read (``serialize()``,
``save``, the first call). The field therefore accepts either the bytes or a
function that makes them; the first read calls the function once, keeps the
bytes and drops the function (and the module it holds). Readers always get
the same bytes an eager serialization would have given. The bytes' SHA-256
is kept too once asked for (:meth:`ModuleBytes.digest`), so that keying an
export's executables hashes the module once per export.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

ModuleSource = bytes | Callable[[], bytes]


class ModuleBytes:
    """A data descriptor for a dataclass field of bytes that may be made lazily.

    As a dataclass field it has no default (its class access raises
    ``AttributeError``, which dataclasses read as "no default").
    """

    def __set_name__(self, owner: type, name: str) -> None:
        self._slot = f"_{name}_source"
        self._digest_slot = f"_{name}_sha256"

    def __get__(self, obj: Any, owner: type | None = None) -> bytes:
        if obj is None:
            raise AttributeError("a required field")
        source = obj.__dict__[self._slot]
        if isinstance(source, bytes):
            return source
        made = bytes(source())
        obj.__dict__[self._slot] = made
        return made

    def __set__(self, obj: Any, value: ModuleSource) -> None:
        if isinstance(value, (bytearray, memoryview)):
            value = bytes(value)
        if not isinstance(value, bytes) and not callable(value):
            raise TypeError(f"mlir_module_serialized must be bytes, got {type(value).__name__}")
        obj.__dict__[self._slot] = value
        obj.__dict__.pop(self._digest_slot, None)

    def digest(self, obj: Any) -> bytes:
        """The SHA-256 (32 bytes) of the bytes, computed on first use and kept."""
        known: bytes | None = obj.__dict__.get(self._digest_slot)
        if known is None:
            known = hashlib.sha256(self.__get__(obj)).digest()
            obj.__dict__[self._digest_slot] = known
        return known

    def source(self, obj: Any) -> ModuleSource:
        """The bytes, or the function that will make them, without making them."""
        source: ModuleSource = obj.__dict__[self._slot]
        return source

    def is_made(self, obj: Any) -> bool:
        """Whether the bytes exist already (were given, or read once)."""
        return isinstance(obj.__dict__[self._slot], bytes)
