"""A flatbuffer writer that lays out bytes exactly as ``flatbuffers.Builder`` does, with less Python.

Why not the package's builder, which :mod:`.encode` was written against (and
which the tests still take as the reference, byte for byte): each of its
operations runs four to six Python functions (``Prep``, ``Pad``, ``Place``,
``enforce_number``, ``encode.Write``, ``Offset``), about 2,300 calls for one
artifact, whatever its size. Measured on the benchmarks' MLP of 2,000
operations (a 290 KB module, jax 0.12, ``benchmarks/test_artifacts.py``),
writing with that builder took 415 us of CPU, as long as all of
``jax.export``'s ``serialize()`` (484 us), and the SHA-256 of jaxport's trailer
adds 165 us to it; this writer writes the same bytes in 120 to 180 us
(``tests/adapters/test_flatbuffers_writer.py`` checks that they are the same).

It implements the operations of :class:`.encode.ArtifactBuilder` with the
same semantics: data is prepended from the end of a zero-filled buffer, each
value aligned to its size relative to the buffer's end (so growing the buffer
never changes the bytes), equal vtables are written once, a vtable's trailing
empty slots are trimmed, and fields equal to their default are left out.
Values out of their type's range raise ``struct.error``, where the package's
builder raises a ``TypeError`` (:func:`.encode.encode_artifact` translates).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Final

from .reader import SCALARS

_U8, _I8, _U16, _U32, _I32 = (SCALARS[kind] for kind in ("u8", "i8", "u16", "u32", "i32"))
_BOOL: Final = struct.Struct("<?")
#: Bytes of spare capacity after the buffer's end (see ``__init__``).
_TAIL_ROOM: Final = 4096


class FlatbufferWriter:
    """Writes one flatbuffer, back to front, as ``flatbuffers.Builder(size)`` would.

    Args:
        size: the buffer's first size (it doubles when more is needed).
    """

    __slots__ = ("_buf", "_head", "_minalign", "_vtable", "_object_end", "_vtables", "_count")

    def __init__(self, size: int) -> None:
        # Room after the end too, kept by CPython when the end is cut off: the trailer that
        # seal() appends to the output then fits without a copy of the whole artifact.
        self._buf = bytearray(max(size, 64) + _TAIL_ROOM)
        del self._buf[-_TAIL_ROOM:]
        self._head = len(self._buf)
        self._minalign = 1
        self._vtable: list[int] = []
        self._object_end = 0
        self._vtables: dict[tuple[int, ...], int] = {}
        self._count = 0

    def _grow(self, needed: int) -> None:
        """Doubles the buffer until ``needed`` bytes fit before the head (the data keeps its end)."""
        old = len(self._buf)
        new = old
        while new - old + self._head < needed:
            new *= 2
        grown = bytearray(new)
        grown[new - old:] = self._buf
        self._buf = grown
        self._head += new - old

    def _prep(self, size: int, additional: int) -> int:
        """Aligns for a ``size``-byte value after ``additional`` bytes, with room for both: the new head.

        The padding is left as the buffer's zeros (nothing is ever written below the head).
        """
        if size > self._minalign:
            self._minalign = size
        head = self._head
        pad = -(len(self._buf) - head + additional) & (size - 1)
        if head < pad + size + additional:
            self._grow(pad + size + additional)
            head = self._head
        head -= pad
        self._head = head
        return head

    def _prepend(self, fmt: struct.Struct, value: object) -> None:
        head = self._prep(fmt.size, 0) - fmt.size
        fmt.pack_into(self._buf, head, value)
        self._head = head

    def StartObject(self, numfields: int) -> None:
        self._vtable = [0] * numfields
        self._object_end = len(self._buf) - self._head

    def EndObject(self) -> int:
        """Writes the object's vtable, or points it to an equal one written before."""
        self._prepend(_I32, 0)  # the offset to the vtable, filled in below
        buf = self._buf
        object_offset = len(buf) - self._head
        slots = self._vtable
        used = len(slots)
        while used and not slots[used - 1]:
            used -= 1
        entries = [object_offset - at if at else 0 for at in slots[:used]]
        object_size = object_offset - self._object_end
        key = (*entries, object_size)
        found = self._vtables.get(key)
        if found is None:
            count = used + 2
            head = self._prep(2, 2 * count) - 2 * count  # aligned already: a no-op but for the room
            struct.pack_into(f"<{count}H", buf := self._buf, head, 2 * count, object_size, *entries)
            self._head = head
            found = len(buf) - head
            self._vtables[key] = found
        _I32.pack_into(self._buf, len(self._buf) - object_offset, found - object_offset)
        self._vtable = []
        return object_offset

    def CreateString(self, s: str) -> int:
        return self._vector_of(s.encode("utf-8"), terminated=True)

    def CreateByteVector(self, x: bytes) -> int:
        return self._vector_of(x, terminated=False)

    def _vector_of(self, data: bytes, terminated: bool) -> int:
        n = len(data)
        head = self._prep(4, n + terminated) - terminated - n
        self._buf[head:head + n] = data
        head -= 4
        _U32.pack_into(self._buf, head, n)
        self._head = head
        return len(self._buf) - head

    def StartVector(self, elemSize: int, numElems: int, alignment: int) -> int:
        self._count = numElems
        self._prep(4, elemSize * numElems)
        if alignment > 4:  # aligned to 4 with the room, the head is aligned to 2 and 1 too
            self._prep(alignment, elemSize * numElems)
        return len(self._buf) - self._head

    def EndVector(self) -> int:
        head = self._head - 4
        _U32.pack_into(self._buf, head, self._count)
        self._head = head
        return len(self._buf) - head

    def PrependUOffsetTRelative(self, off: int) -> None:
        # _prep(4, 0) inlined where the room is there already (the call is most of an encode).
        buf = self._buf
        head = self._head
        end = len(buf)
        pad = -(end - head) & 3
        if head < pad + 4:
            head = self._prep(4, 0)
            buf = self._buf
            end = len(buf)
        else:
            if self._minalign < 4:
                self._minalign = 4
            head -= pad
        head -= 4
        _U32.pack_into(buf, head, end - head - off)
        self._head = head

    def PrependUOffsetTRelatives(self, offsets: Sequence[int]) -> None:
        """The elements of a vector of offsets that :meth:`StartVector` began, last first.

        ``StartVector(4, len(offsets), 4)`` left the room for them, aligned: each is
        written where :meth:`PrependUOffsetTRelative` would write it.
        """
        buf = self._buf
        head = self._head
        end = len(buf)
        for off in reversed(offsets):
            head -= 4
            _U32.pack_into(buf, head, end - head - off)
        self._head = head

    def PrependUint8(self, x: int) -> None:
        self._prepend(_U8, x)

    def PrependUint16(self, x: int) -> None:
        self._prepend(_U16, x)

    def PrependUint32(self, x: int) -> None:
        self._prepend(_U32, x)

    def PrependUOffsetTRelativeSlot(self, o: int, x: int, d: int) -> None:
        if x != d:
            self.PrependUOffsetTRelative(x)
            self._vtable[o] = len(self._buf) - self._head

    def PrependInt8Slot(self, o: int, x: int, d: int) -> None:
        self._scalar_slot(_I8, o, x, d)

    def PrependUint16Slot(self, o: int, x: int, d: int) -> None:
        self._scalar_slot(_U16, o, x, d)

    def PrependUint32Slot(self, o: int, x: int, d: int | None) -> None:
        self._scalar_slot(_U32, o, x, d)

    def PrependBoolSlot(self, o: int, x: bool, d: bool) -> None:
        self._scalar_slot(_BOOL, o, x, d)

    def _scalar_slot(self, fmt: struct.Struct, o: int, x: object, d: object) -> None:
        """A scalar field in slot ``o``, left out when it equals its default ``d``."""
        if x != d:
            self._prepend(fmt, x)
            self._vtable[o] = len(self._buf) - self._head

    def Finish(self, rootTable: int) -> int:
        self._prep(self._minalign, 4)
        self.PrependUOffsetTRelative(rootTable)
        return self._head

    def Output(self) -> bytearray:
        """The finished buffer (the writer's own bytes: the writer is not used afterwards)."""
        buf = self._buf
        del buf[:self._head]  # CPython moves the start of a bytearray without copying
        self._head = 0
        return buf
