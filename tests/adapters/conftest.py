"""Fixtures of the adapter tests."""

from __future__ import annotations

import pytest

from jaxport.adapters import flatbuffers_decode
from jaxport.adapters.flatbuffers_reader import WireReader


@pytest.fixture
def readers(monkeypatch: pytest.MonkeyPatch) -> list[WireReader]:
    """The wire readers that decoding creates during the test, in order.

    Each counts the bytes it read (``work_done``): a measure of the work of
    decoding that, unlike a time, is the same on every machine.
    """
    made: list[WireReader] = []

    class RecordedReader(WireReader):
        __slots__ = ()

        def __init__(self, data: bytes | memoryview, slot_counts: dict[str, int] | None = None) -> None:
            super().__init__(data, slot_counts)
            made.append(self)

    monkeypatch.setattr(flatbuffers_decode, "WireReader", RecordedReader)
    return made
