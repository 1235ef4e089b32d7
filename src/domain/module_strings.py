"""The string table of a StableHLO portable artifact, read without MLIR.

MLIR bytecode keeps every string that the module's attributes use (symbol
names, custom-call targets, dialect names) in one *string section*. Reading
that table tells a converter which custom-call targets a module may call and
whether it uses the Shardy dialect, before any deserializer of the target
runtime sees the bytes. A string in the table is only a candidate (a
function could be named like a target): callers intersect it with the
targets they know of.

The layout (MLIR's ``BytecodeReader``): the magic ``ML\\xefR``, a varint
version, the producer (NUL-terminated), then sections, each an id byte
(bit 7: aligned), a varint length, an optional varint alignment and padding,
and the data. The string section (id 0) holds the number of strings, their
sizes in reverse order (each counting its NUL), and the strings back to back
at its end.
"""

from __future__ import annotations

from .errors import ArtifactError
from .module_format import PORTABLE_ARTIFACT_MAGIC

_STRING_SECTION = 0


class _Reader:
    def __init__(self, data: bytes, pos: int = 0) -> None:
        self.data = data
        self.pos = pos

    def byte(self) -> int:
        if self.pos >= len(self.data):
            raise ArtifactError("The module's MLIR bytecode ends inside a section header")
        value = self.data[self.pos]
        self.pos += 1
        return value

    def varint(self) -> int:
        """MLIR's prefix varint: the trailing zero bits of the first byte count the bytes that follow."""
        first = self.byte()
        extra = (first & -first).bit_length() - 1 if first else 8
        end = self.pos + extra
        if end > len(self.data):
            raise ArtifactError("The module's MLIR bytecode ends inside a number")
        if not first:
            value = int.from_bytes(self.data[self.pos:end], "little")
        else:
            value = int.from_bytes(self.data[self.pos - 1:end], "little") >> (extra + 1)
        self.pos = end
        return value


def module_strings(module: bytes) -> frozenset[str]:
    """The strings of a portable artifact's string section.

    Raises:
        ArtifactError: the bytes are not MLIR bytecode, or a section runs
            past the end of the module.
    """
    data = bytes(module)
    if not data.startswith(PORTABLE_ARTIFACT_MAGIC):
        raise ArtifactError("The module bytes are not MLIR bytecode (they lack its magic number)")
    reader = _Reader(data, len(PORTABLE_ARTIFACT_MAGIC))
    reader.varint()  # the bytecode version
    producer_end = data.find(b"\x00", reader.pos)
    if producer_end < 0:
        raise ArtifactError("The module's MLIR bytecode has no producer string")
    reader.pos = producer_end + 1
    while reader.pos < len(data):
        header = reader.byte()
        length = reader.varint()
        if header & 0x80:
            alignment = reader.varint()
            if alignment & (alignment - 1) or not alignment:
                raise ArtifactError(f"The module's MLIR bytecode has a section alignment of {alignment}")
            reader.pos += -reader.pos % alignment
        start, end = reader.pos, reader.pos + length
        if end > len(data):
            raise ArtifactError("A section of the module's MLIR bytecode runs past its end")
        if header & 0x7F == _STRING_SECTION:
            return _strings(data[start:end])
        reader.pos = end
    return frozenset()


def _strings(section: bytes) -> frozenset[str]:
    reader = _Reader(section)
    count = reader.varint()
    if count > len(section):
        raise ArtifactError(f"The module's string section claims {count} strings in {len(section)} bytes")
    sizes = [reader.varint() for _ in range(count)]
    end = len(section)
    strings: set[str] = set()
    for size in sizes:  # the sizes are stored last string first
        if size < 1 or size > end - reader.pos:
            raise ArtifactError("The module's string section holds a string that does not fit")
        strings.add(section[end - size:end - 1].decode("utf-8", errors="replace"))
        end -= size
    return frozenset(strings)
