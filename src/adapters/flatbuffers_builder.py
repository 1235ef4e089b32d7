"""A flatbuffer builder that lays out the bytes ``flatbuffers.Builder`` lays out, faster.

The artifact writer (:mod:`.flatbuffers_encode`) needs a handful of the
``flatbuffers.Builder`` (25.x) operations. That class pays several Python
calls per byte-sized step (``Prep``, ``Pad``, ``Place``, ``enforce_number``,
``encode.Write``); this one does the same arithmetic inline, packs whole
vectors and vtables with one ``struct.pack_into``, and so serializes an
artifact's tables several times faster. The layout rules it follows are the
builder's:

* the buffer is written back to front; an offset counts bytes from the end;
* before writing ``size`` bytes that ``additional`` more bytes will follow,
  zero padding aligns the end of those to ``size`` (``Prep``), and the
  largest alignment seen pads the root offset (``Finish``);
* a vector is its elements preceded by their count (``u32``); a string is
  its UTF-8 bytes with a terminating zero, as a byte vector;
* a table is an ``i32`` offset to its vtable followed by its fields, in the
  reverse order of their ``Prepend*Slot`` calls; its vtable (``u16``: own
  size, table size, then one entry per slot up to the last set one) is
  written just before it, unless an identical vtable was written earlier,
  which it then shares.

``tests/adapters/test_flatbuffers_builder.py`` checks, for varied artifact
records, that this builder and ``flatbuffers.Builder`` give the same bytes.
Bytes below ``head`` are never written before ``head`` moves past them, and
a new buffer is all zeros, so padding only moves ``head``.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

_pack_into = struct.pack_into
_U32 = struct.Struct("<I")
_I32 = struct.Struct("<i")
_U16 = struct.Struct("<H")
_U8 = struct.Struct("<B")
_I8 = struct.Struct("<b")
_VECTOR_CODES = {1: "B", 2: "H", 4: "I"}


class OffsetArithmeticError(ValueError):
    """An offset refers to bytes not yet written (a writer's bug)."""


class FastBuilder:
    """Builds one flatbuffer back to front, as ``flatbuffers.Builder`` would.

    Args:
        size: the expected size of the flatbuffer (the buffer grows past it
            when needed).
        spare: bytes of room kept after the flatbuffer, so that a caller can
            append that many to :meth:`output` without a copy.
    """

    __slots__ = ("_buf", "_end", "_head", "_minalign", "_vtable", "_object_end",
                 "_vtables", "_vector_len", "_spare")

    def __init__(self, size: int, spare: int = 0) -> None:
        size = max(size, 16)
        self._buf = bytearray(size + spare)
        self._end = size
        self._head = size
        self._spare = spare
        self._minalign = 1
        self._vtable: list[int] = []
        self._object_end = 0
        self._vtables: dict[tuple[int, ...], int] = {}
        self._vector_len = 0

    # -- layout -------------------------------------------------------------

    def _grow(self, needed: int) -> None:
        """Doubles the buffer until ``needed`` bytes fit before ``head``."""
        used = self._end - self._head
        size = self._end
        while size - used < needed:
            size *= 2
        buf = bytearray(size + self._spare)
        buf[size - used:size] = memoryview(self._buf)[self._head:self._end]
        self._buf, self._end, self._head = buf, size, size - used

    def _prep(self, size: int, additional: int) -> int:
        """Pads so that ``size`` bytes written after ``additional`` more are aligned;
        returns the new head."""
        if size > self._minalign:
            self._minalign = size
        align = (self._head - self._end - additional) & (size - 1)
        if self._head < align + size + additional:
            self._grow(align + size + additional)
        self._head -= align
        return self._head

    def Offset(self) -> int:
        """The current offset, counted from the end of the flatbuffer."""
        return self._end - self._head

    # -- scalars and offsets --------------------------------------------------

    def PrependUOffsetTRelative(self, off: int) -> None:
        """An offset to ``off``, relative to where it is written."""
        head = self._prep(4, 0) - 4
        here = self._end - head
        if off > here - 4:
            raise OffsetArithmeticError("flatbuffers: Offset arithmetic error.")
        _U32.pack_into(self._buf, head, here - off)
        self._head = head

    # -- tables -------------------------------------------------------------

    def StartObject(self, numfields: int) -> None:
        """Starts a table of ``numfields`` vtable slots."""
        self._vtable = [0] * numfields
        self._object_end = self._end - self._head

    def _slot(self, slot: int, fmt: struct.Struct, x: int) -> None:
        head = self._prep(fmt.size, 0) - fmt.size
        fmt.pack_into(self._buf, head, x)
        self._head = head
        self._vtable[slot] = self._end - head

    def PrependUOffsetTRelativeSlot(self, o: int, x: int, d: int) -> None:
        """Field ``o`` of the current table: an offset to ``x``, left out when ``x == d``."""
        if x != d:
            self.PrependUOffsetTRelative(x)
            self._vtable[o] = self._end - self._head

    def PrependInt8Slot(self, o: int, x: int, d: int) -> None:
        """Field ``o``: a signed byte, left out when equal to ``d``."""
        if x != d:
            self._slot(o, _I8, x)

    def PrependBoolSlot(self, o: int, x: bool, d: bool) -> None:
        """Field ``o``: a boolean, left out when equal to ``d``."""
        if x != d:
            self._slot(o, _U8, int(x))

    def PrependUint16Slot(self, o: int, x: int, d: int) -> None:
        """Field ``o``: an unsigned 16-bit value, left out when equal to ``d``."""
        if x != d:
            self._slot(o, _U16, x)

    def PrependUint32Slot(self, o: int, x: int, d: int | None) -> None:
        """Field ``o``: an unsigned 32-bit value, left out when equal to ``d``."""
        if x != d:
            self._slot(o, _U32, x)

    def EndObject(self) -> int:
        """Ends the current table; writes its vtable unless an equal one exists.

        Returns:
            The table's offset.
        """
        head = self._prep(4, 0) - 4  # the table's offset to its vtable, filled in below
        self._head = head
        end = self._end
        here = end - head
        vtable = self._vtable
        n = len(vtable)
        while n and not vtable[n - 1]:
            n -= 1
        entries = [here - e if e else 0 for e in vtable[:n]]
        entries.append(here - self._object_end)  # the table's size, last in the key
        key = tuple(entries)
        found = self._vtables.get(key)
        if found is None:
            vt_bytes = 2 * (n + 2)  # 2-aligned already: nothing to pad
            if head < vt_bytes:
                self._grow(vt_bytes)
                end, head = self._end, self._head
            head -= vt_bytes
            _pack_into(f"<{n + 2}H", self._buf, head, vt_bytes, entries[-1], *entries[:-1])
            self._head = head
            found = end - head
            self._vtables[key] = found
        _I32.pack_into(self._buf, end - here, found - here)
        return here

    # -- vectors -------------------------------------------------------------

    def _end_vector(self) -> int:
        """Ends a vector with its count; returns its offset."""
        head = self._head - 4
        _U32.pack_into(self._buf, head, self._vector_len)
        self._head = head
        return self._end - head

    def CreateString(self, s: str) -> int:
        """A string (UTF-8, zero-terminated); returns its offset."""
        x = s.encode("utf-8")
        n = len(x)
        head = self._prep(4, n + 1) - 1 - n  # the zero byte is there already
        self._buf[head:head + n] = x
        self._head = head
        self._vector_len = n
        return self._end_vector()

    def CreateByteVector(self, x: bytes) -> int:
        """A vector of bytes; returns its offset."""
        n = len(x)
        head = self._prep(4, n) - n
        self._buf[head:head + n] = x
        self._head = head
        self._vector_len = n
        return self._end_vector()

    def CreateOffsetVector(self, offsets: Sequence[int]) -> int:
        """A vector of offsets to ``offsets`` (in order): what ``StartVector(4, n, 4)``,
        ``PrependUOffsetTRelative`` of each in reverse order and ``EndVector`` write."""
        n = len(offsets)
        head = self._prep(4, 4 * n) - 4 * n
        first = self._end - head  # the offset of element 0, once written
        if n and max(offsets) > first - 4 * n:
            raise OffsetArithmeticError("flatbuffers: Offset arithmetic error.")
        _pack_into(f"<{n + 1}I", self._buf, head - 4, n,
                   *[first - 4 * i - off for i, off in enumerate(offsets)])
        self._head = head - 4
        return first + 4

    def CreateScalarVector(self, values: Sequence[int], width: int) -> int:
        """A vector of unsigned ``width``-byte values (1, 2 or 4): what
        ``StartVector(width, n, width)``, one ``Prepend`` per value in reverse
        order and ``EndVector`` write."""
        n = len(values)
        self._prep(4, width * n)
        head = self._prep(width, width * n) - width * n
        _pack_into(f"<I{n}{_VECTOR_CODES[width]}", self._buf, head - 4, n, *values)
        self._head = head - 4
        return self._end - self._head

    # -- the whole buffer -----------------------------------------------------

    def Finish(self, rootTable: int) -> int:
        """Writes the root table's offset (aligned to the largest alignment used)."""
        self._prep(self._minalign, 4)
        self.PrependUOffsetTRelative(rootTable)
        return self._head

    def output(self) -> bytearray:
        """The finished flatbuffer: the builder's own buffer, trimmed in place.

        CPython trims a bytearray's front by moving its start, and its back,
        by less than half, without reallocating; what was trimmed at the back
        (``spare`` bytes) stays allocated for appends.
        """
        out = self._buf
        del out[self._end:]
        del out[:self._head]
        self._buf = bytearray()
        return out
