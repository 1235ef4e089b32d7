"""Bounds-checked reading of a flatbuffer whose bytes nobody vouches for.

``flatbuffers.table.Table`` reads wherever an offset points, so a corrupted
artifact makes it raise ``struct.error``/``IndexError`` or, worse, decode
garbage from another part of the buffer. :class:`TableView` implements the same
lookups (vtable slot -> field -> offset -> table, vector or string) but checks
every offset, length and string against the buffer before it reads, and
charges each read (a table and its vtable, a vector, a string) to a work
budget so that tables shared many times over (a "billion laughs" buffer)
cannot make decoding take more than linear time. It needs only
:mod:`struct`, so reading an artifact imports neither flatbuffers nor NumPy.
Each failure is an :class:`ArtifactError` that names the table, its offset
and the field.
"""

from __future__ import annotations

import struct
from typing import Final, TypeVar

from jaxport.domain.errors import ArtifactError
from jaxport.domain.artifact.integrity import trailer_remains

_T = TypeVar("_T")

#: The scalar formats a field can have, by name (little-endian, as every flatbuffer).
SCALARS: Final[dict[str, struct.Struct]] = {
    name: struct.Struct("<" + code) for name, code in (("u8", "B"), ("i8", "b"), ("u16", "H"), ("i16", "h"),
                                                         ("u32", "I"), ("i32", "i"))}
_U32: Final = SCALARS["u32"]
_I32: Final = SCALARS["i32"]
_VTABLE_HEAD: Final = struct.Struct("<HH")
#: ``struct.Struct("<nH")`` by n: a vtable's field entries, read in one call.
_ENTRIES: dict[int, struct.Struct] = {}

#: Decoding may touch at most this many bytes per byte of buffer (plus a
#: constant): an artifact written without sharing touches each byte about once.
WORK_PER_BYTE: Final = 4
WORK_CONSTANT: Final = 4096
#: The longest string any field may hold (names, dimensions, device kinds).
MAX_STRING_BYTES: Final = 1 << 20


#: How many zero bytes of alignment padding may follow the last object.
MAX_END_PADDING: Final = 7


class WireReader:
    """One buffer, its size, its work budget and what is left of it, and how far reads reached.

    The budget is :data:`WORK_PER_BYTE` bytes read per byte of buffer plus
    :data:`WORK_CONSTANT`; a read that would overspend it fails with
    :meth:`over_budget`, so :attr:`work_done` never exceeds the budget by
    more than one read (a table and its vtable: twice the buffer's size).

    Args:
        data: the buffer (a ``memoryview`` reads the caller's bytes in place;
            every value read is copied out of it).
        slot_counts: the number of vtable slots the schema knows for each
            table name; a slot past those is a field of a newer schema,
            whose data no read reaches (see :meth:`check_end`).

    Attributes:
        newer_reach: the furthest byte that a field of a newer schema may
            point to: the largest target of a slot past the schema's last,
            read as an offset (-1 when no table read fills such a slot).
    """

    __slots__ = ("data", "size", "budget", "work_left", "reached", "_slot_counts", "newer_reach")

    def __init__(self, data: bytes | memoryview,
                 slot_counts: dict[str, int] | None = None) -> None:
        self.data = data
        self.size = len(data)
        self.budget = WORK_PER_BYTE * self.size + WORK_CONSTANT
        self.work_left = self.budget
        self.reached = 0
        self._slot_counts = slot_counts or {}
        self.newer_reach = -1

    @property
    def work_done(self) -> int:
        """The bytes read so far, counting a table and its vtable each time it is read."""
        return self.budget - self.work_left

    def check_end(self) -> None:
        """Refuses bytes after the last object that any read reached.

        A flatbuffer's writer ends the buffer with the first object it wrote
        (plus at most :data:`MAX_END_PADDING` zero bytes) and aligns its size
        to 4: anything further is appended data, such as a jaxport trailer
        whose footer was damaged, and a size that is not aligned means bytes
        were cut (the alignment padding itself, say). A newer schema's
        writer may put the objects of fields this reader does not know
        there too (it writes from the buffer's end, the first object
        first), so such bytes are let be when a slot past the schema's last
        points into them (:attr:`newer_reach`). What is left of a jaxport
        trailer (:func:`trailer_remains`) is refused always, even where
        damage made reads reach over it.

        Raises:
            ArtifactError: there are such bytes.
        """
        if self.size % 4:
            raise self.fail(f"offset {self.size}", (
                f"the buffer's size {self.size} is not a multiple of 4, as every finished "
                "flatbuffer's is: it was cut short or appended to"))
        if trailer_remains(self.data, self.reached):
            raise self._damaged_trailer(self.reached)
        extra = bytes(self.data[self.reached:])
        if len(extra) <= MAX_END_PADDING and not extra.strip(b"\0"):
            return
        if self.newer_reach >= self.reached:
            return
        raise self.fail(f"offset {self.reached}", (
            f"{len(extra)} bytes follow the artifact's last object; they are neither "
            "padding nor an intact jaxport trailer (the artifact was damaged or appended to)"))

    def check_footer(self) -> None:
        """Refuses a buffer that ends with a jaxport footer but for its magic, before any read.

        What is left of such a trailer is refused by :meth:`check_end` too, but
        only once the reads are done, and the damage that hit the magic may hit
        a field first (a vtable's length, say, that makes a field this schema
        reads point into the trailer): the trailer is the damage to name.

        Raises:
            ArtifactError: the buffer ends so.
        """
        if trailer_remains(self.data, self.size):
            raise self._damaged_trailer(self.size)

    def _damaged_trailer(self, at: int) -> ArtifactError:
        return self.fail(f"offset {at}", (
            "the artifact holds a jaxport trailer that is not intact (its footer was "
            "changed, cut, or followed by appended bytes): it was damaged after jaxport "
            "sealed it, and its digest cannot be checked"))

    def _note_newer_fields(self, pos: int, offsets: tuple[int, ...], obj_size: int) -> None:
        """Raises :attr:`newer_reach` to the targets of the table at ``pos``'s
        slots past the schema's last (``offsets``: their vtable entries)."""
        data, size, reach = self.data, self.size, self.newer_reach
        for off in offsets:
            if 4 <= off <= obj_size - 4:
                target = pos + off + _U32.unpack_from(data, pos + off)[0]
                if reach < target < size:
                    reach = target
        self.newer_reach = reach

    def fail(self, where: str, what: str) -> ArtifactError:
        """The error for a problem ``what`` at ``where``."""
        return ArtifactError(f"{where}: {what}")

    def over_budget(self, where: str) -> ArtifactError:
        """The error once the work budget is spent (callers check ``work_left``)."""
        return self.fail(where, (
            f"the artifact refers to its data too many times (more than "
            f"{WORK_PER_BYTE} times its {self.size} bytes); it is corrupted"))

    def root(self, name: str) -> TableView:
        """The root table (the buffer starts with its offset; no file identifier).

        Raises:
            ArtifactError: the buffer is too short or the offset is bad.
        """
        if self.size < 8:
            raise self.fail(f"root offset of table {name}",
                            f"a {self.size}-byte buffer is too short to be an artifact")
        return self.table_at(_U32.unpack_from(self.data, 0)[0], name, None, "")

    def table_at(self, pos: int, name: str, parent: TableView | None, field: str,
                 index: int = -1) -> TableView:
        """The table starting at ``pos``, referred to by ``field`` of ``parent``
        (``None`` for the root; element ``index`` when ``field`` is a vector),
        with its vtable checked.

        Raises:
            ArtifactError: the table or its vtable lies outside the buffer.
        """
        size = self.size
        problem = None
        if pos + 4 > size:
            problem = f"table {name} at offset {pos} lies past the end of the {size}-byte buffer"
        else:
            vtable = pos - _I32.unpack_from(self.data, pos)[0]
            if vtable < 0 or vtable + 4 > size:
                problem = (f"the vtable of table {name} at offset {pos} points to {vtable}, "
                           f"outside the {size}-byte buffer")
            else:
                vt_len, obj_size = _VTABLE_HEAD.unpack_from(self.data, vtable)
                if vt_len < 4 or vt_len % 2 or vtable + vt_len > size:
                    problem = (f"the vtable of table {name} at offset {pos} has a bad length "
                               f"{vt_len} for the {size}-byte buffer")
                elif obj_size < 4 or pos + obj_size > size:
                    problem = (f"table {name} at offset {pos} claims {obj_size} bytes, past "
                               f"the end of the {size}-byte buffer")
                else:
                    # The vtable too: a large one shared by many tables would
                    # otherwise be unpacked again for each of them, unpaid.
                    self.work_left -= obj_size + vt_len
                    end = pos + obj_size if pos + obj_size > vtable + vt_len else vtable + vt_len
                    if end > self.reached:
                        self.reached = end
                    if self.work_left >= 0:
                        count = (vt_len - 4) >> 1
                        entries = _ENTRIES.get(count)
                        if entries is None:
                            entries = _ENTRIES.setdefault(count, struct.Struct(f"<{count}H"))
                        offsets = entries.unpack_from(self.data, vtable + 4)
                        known = self._slot_counts.get(name, count)
                        if count > known and any(offsets[known:]):
                            self._note_newer_fields(pos, offsets[known:], obj_size)
                        return TableView(self, pos, name, offsets, obj_size)
        field = _element(field, index)
        where = parent.where(field) if parent is not None else f"root offset of table {name}"
        if problem is None:
            raise self.over_budget(where)
        raise self.fail(where, problem)


class TableView:
    """Checked access to the fields of one table."""

    __slots__ = ("reader", "pos", "name", "_entries", "_obj_size")

    def __init__(self, reader: WireReader, pos: int, name: str,
                 entries: tuple[int, ...], obj_size: int) -> None:
        self.reader = reader
        self.pos = pos
        self.name = name
        self._entries = entries  # the vtable's field offsets, by slot
        self._obj_size = obj_size

    def where(self, field: str) -> str:
        """Names a field of this table for an error message."""
        return f"field '{field}' of table {self.name} at offset {self.pos}"

    def fail(self, field: str, what: str) -> ArtifactError:
        """The error for a problem ``what`` with ``field``."""
        return self.reader.fail(self.where(field), what)

    def _field(self, slot: int, width: int, field: str) -> int:
        """The absolute position of a field's inline value, 0 when absent."""
        entries = self._entries
        if slot >= len(entries):
            return 0
        off = entries[slot]
        if off == 0:
            return 0
        if off < 4 or off + width > self._obj_size:
            raise self.fail(field, f"the field's offset {off} lies outside its "
                                   f"{self._obj_size}-byte table")
        return self.pos + off

    def _target(self, slot: int, field: str) -> int:
        """Where an offset field points, 0 when the field is absent."""
        entries = self._entries
        off = entries[slot] if slot < len(entries) else 0
        if off == 0:
            return 0
        if off < 4 or off + 4 > self._obj_size:
            raise self.fail(field, f"the field's offset {off} lies outside its "
                                   f"{self._obj_size}-byte table")
        at = self.pos + off
        reader = self.reader
        target: int = at + _U32.unpack_from(reader.data, at)[0]
        if target + 4 > reader.size:
            raise self.fail(field, f"offset points to {target}, past the end of the "
                                   f"{reader.size}-byte buffer")
        return target

    def scalar(self, slot: int, kind: str, field: str, default: int) -> int:
        """A scalar field (``kind`` one of :data:`SCALARS`), or ``default`` when absent."""
        entries = self._entries
        if slot >= len(entries) or entries[slot] == 0:
            return default
        fmt = SCALARS[kind]
        value: int = fmt.unpack_from(self.reader.data, self._field(slot, fmt.size, field))[0]
        return value

    def optional_scalar(self, slot: int, kind: str, field: str) -> int | None:
        """A scalar field without default: None when absent."""
        return self.scalar(slot, kind, field, 0) if self.has(slot) else None

    def table(self, slot: int, name: str, field: str) -> TableView | None:
        """A sub-table, or None when absent."""
        target = self._target(slot, field)
        if target == 0:
            return None
        return self.reader.table_at(target, name, self, field)

    def required_table(self, slot: int, name: str, field: str) -> TableView:
        """A sub-table that must be present."""
        return self.present(self.table(slot, name, field), field)

    def present(self, value: _T | None, field: str) -> _T:
        """``value``, read from ``field``, which must be present (not None)."""
        if value is None:
            raise self.fail(field, "the field is missing")
        return value

    def _vector(self, slot: int, width: int, field: str) -> tuple[int, int]:
        """(start of the elements, count) of a vector field; (0, 0) when absent."""
        vec = self._target(slot, field)
        if vec == 0:
            return 0, 0
        reader = self.reader
        count = _U32.unpack_from(reader.data, vec)[0]
        end = vec + 4 + count * width
        if end > reader.size:
            raise self.fail(field, f"vector of {count} elements extends past the end of "
                                   f"the {reader.size}-byte buffer")
        reader.work_left -= 4 + count * width
        if end > reader.reached:
            reader.reached = end
        if reader.work_left < 0:
            raise reader.over_budget(self.where(field))
        return vec + 4, count

    def bytes_field(self, slot: int, field: str) -> bytes | None:
        """A ``[ubyte]`` field, or None when absent."""
        start, count = self._vector(slot, 1, field)
        if start == 0:
            return None
        return bytes(self.reader.data[start:start + count])

    def has(self, slot: int) -> bool:
        """Whether the field of ``slot`` is present (its value is not checked here)."""
        entries = self._entries
        return slot < len(entries) and entries[slot] != 0

    def has_fields_after(self, slot: int) -> bool:
        """Whether a field of a slot above ``slot`` is present."""
        return any(self._entries[slot + 1:])

    def uints(self, slot: int, kind: str, field: str) -> tuple[int, ...]:
        """A vector of ``u8``/``i8``/``u16``/``u32`` (empty when absent)."""
        if not self.has(slot):
            return ()
        fmt = SCALARS[kind]
        start, count = self._vector(slot, fmt.size, field)
        if count == 0:
            return ()
        return struct.unpack_from(f"<{count}{fmt.format[-1]}", self.reader.data, start)

    def string(self, slot: int, field: str) -> str | None:
        """A string field, or None when absent."""
        target = self._target(slot, field)
        return None if target == 0 else self._string_at(target, field)

    def required_string(self, slot: int, field: str) -> str:
        """A string field that must be present."""
        return self.present(self.string(slot, field), field)

    def _string_at(self, pos: int, field: str, index: int = -1) -> str:
        """The string at ``pos`` (where its length lies, within the buffer);
        element ``index`` of ``field`` when ``field`` is a vector."""
        reader = self.reader
        data = reader.data
        length = _U32.unpack_from(data, pos)[0]
        end = pos + 4 + length
        if length > MAX_STRING_BYTES:
            raise self.fail(_element(field, index), f"string of {length} bytes is longer "
                                                    f"than the limit of {MAX_STRING_BYTES}")
        if end + 1 > reader.size:
            raise self.fail(_element(field, index), f"string of {length} bytes extends past "
                                                    f"the end of the {reader.size}-byte buffer")
        if data[end] != 0:
            raise self.fail(_element(field, index), "string is not terminated by a zero byte")
        reader.work_left -= 5 + length
        if end + 1 > reader.reached:
            reader.reached = end + 1
        if reader.work_left < 0:
            raise reader.over_budget(self.where(_element(field, index)))
        try:
            return str(data[pos + 4:end], "utf-8")
        except UnicodeDecodeError as exc:
            raise self.fail(_element(field, index), f"string is not valid UTF-8 ({exc.reason} "
                                                    f"at byte {exc.start})") from None

    def _offsets(self, slot: int, field: str) -> list[int]:
        """The targets of a vector of offsets, each checked to lie in the buffer (empty when absent)."""
        start, count = self._vector(slot, 4, field)
        if count == 0:
            return []
        rel = struct.unpack_from(f"<{count}I", self.reader.data, start)
        targets = [r + at for r, at in zip(rel, range(start, start + 4 * count, 4))]
        limit = self.reader.size - 4
        if max(targets) > limit:
            i, target = next((i, t) for i, t in enumerate(targets) if t > limit)
            raise self.fail(f"{field}[{i}]", f"offset points to {target}, past the end "
                                             f"of the {self.reader.size}-byte buffer")
        return targets

    def strings(self, slot: int, field: str) -> tuple[str, ...]:
        """A vector of strings (empty when absent)."""
        if not self.has(slot):
            return ()
        string_at = self._string_at
        return tuple([string_at(target, field, i)
                      for i, target in enumerate(self._offsets(slot, field))])

    def tables(self, slot: int, name: str, field: str) -> list[TableView]:
        """A vector of tables (empty when absent)."""
        if not self.has(slot):
            return []
        table_at = self.reader.table_at
        return [table_at(target, name, self, field, i)
                for i, target in enumerate(self._offsets(slot, field))]


def _element(field: str, index: int) -> str:
    """The name of element ``index`` of vector ``field`` (of ``field`` itself when -1)."""
    return field if index < 0 else f"{field}[{index}]"
