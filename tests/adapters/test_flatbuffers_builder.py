"""jaxport's flatbuffer builder lays out the same bytes as the ``flatbuffers`` package's ``Builder``.

The artifact encoder runs once with each builder on records that use every
field (and on random sequences of builder calls); the bytes must be equal.
The codec's own tests compare whole artifacts with ``jax.export``'s.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable, Sequence

import flatbuffers  # type: ignore[import-untyped]
import pytest

from jaxport.adapters.flatbuffers import encode
from jaxport.adapters.flatbuffers.builder import Builder
from jaxport.domain.artifact.record import ArtifactRecord
from tests.helpers.artifacts import MODULE, hlo_record, rich_record

RECORDS: dict[str, Callable[[], ArtifactRecord]] = {
    "rich, VJP of order 3": lambda: rich_record(3),
    "HLO shardings": hlo_record,
    "odd-sized module": lambda: dataclasses.replace(rich_record(1), mlir_module_serialized=MODULE + b"xyz"),
    "with a JAX version": lambda: dataclasses.replace(rich_record(1), jax_version="0.12.0"),
}


class ReferenceBuilder(flatbuffers.Builder):  # type: ignore[misc]
    """The ``flatbuffers`` package's builder, with the two vector writes of :class:`Builder` made of its own calls."""

    def CreateOffsetVector(self, offsets: Sequence[int]) -> int:  # noqa: N802
        self.StartVector(4, len(offsets), 4)
        for off in reversed(offsets):
            self.PrependUOffsetTRelative(off)
        return int(self.EndVector())

    def CreateUintVector(self, values: Sequence[int], width: int) -> int:  # noqa: N802
        prepend = {1: self.PrependUint8, 2: self.PrependUint16, 4: self.PrependUint32}[width]
        self.StartVector(width, len(values), width)
        for value in reversed(values):
            prepend(value)
        return int(self.EndVector())


def built(builder: encode.ArtifactBuilder, record: ArtifactRecord) -> bytes:
    builder.Finish(encode._exported(builder, record))
    return bytes(builder.Output())


@pytest.mark.parametrize("make", RECORDS.values(), ids=RECORDS.keys())
@pytest.mark.parametrize("initial_size", [1, 1 << 20])  # growing from one byte, and never growing
def test_a_record_is_laid_out_as_the_flatbuffers_builder_lays_it_out(
        make: Callable[[], ArtifactRecord], initial_size: int) -> None:
    record = make()
    assert built(Builder(initial_size), record) == built(ReferenceBuilder(initial_size), record)


def random_calls(rng: random.Random, builders: tuple[encode.ArtifactBuilder, ...]) -> None:
    """The same random tables, vectors and strings, made with each builder."""
    made: list[int] = []  # offsets of the objects made so far (equal for both builders)
    for _ in range(rng.randrange(1, 40)):
        what = rng.randrange(5)
        if what == 0:
            text = "".join(rng.choice("ab\u00e9") for _ in range(rng.randrange(8)))
            offsets = {b.CreateString(text) for b in builders}
        elif what == 1:
            data = rng.randbytes(rng.choice([rng.randrange(12), rng.randrange(4090, 4200)]))  # small and kept apart
            offsets = {b.CreateByteVector(data) for b in builders}
        elif what == 2:
            width = rng.choice([1, 2, 4])
            values = [rng.randrange(1 << (8 * width)) for _ in range(rng.randrange(6))]
            offsets = {b.CreateUintVector(values, width) for b in builders}
        elif what == 3:
            targets = [rng.choice(made) for _ in range(rng.randrange(5))] if made else []
            offsets = {b.CreateOffsetVector(targets) for b in builders}
        else:
            slots = rng.randrange(1, 7)
            fields = [(slot, rng.randrange(5), rng.randrange(3)) for slot in rng.sample(range(slots), rng.randrange(slots + 1))]
            children = [rng.choice(made) if made else 0 for _ in fields]
            offsets = set()
            for b in builders:
                b.StartObject(slots)
                for (slot, kind, value), child in zip(fields, children):
                    if kind == 0:
                        b.PrependUOffsetTRelativeSlot(slot, child, 0)
                    elif kind == 1:
                        b.PrependInt8Slot(slot, value, 0)
                    elif kind == 2:
                        b.PrependBoolSlot(slot, value % 2, 0)
                    elif kind == 3:
                        b.PrependUint16Slot(slot, value * 1000, 0)
                    else:
                        b.PrependUint32Slot(slot, value * 70000, None)
                offsets.add(b.EndObject())
        assert len(offsets) == 1
        made.append(offsets.pop())
    for b in builders:
        b.Finish(made[-1])


@pytest.mark.parametrize("seed", range(200))
def test_random_calls_give_the_bytes_of_the_flatbuffers_builder(seed: int) -> None:
    size = random.Random(seed).choice([1, 64, 4096])
    ours, theirs = Builder(size), ReferenceBuilder(size)
    random_calls(random.Random(seed), (ours, theirs))
    assert ours.Output() == theirs.Output()


@pytest.mark.parametrize("width", [1, 2, 4])
def test_a_vector_element_out_of_range_is_the_type_error_of_the_flatbuffers_builder(width: int) -> None:
    for builder in (Builder(), ReferenceBuilder()):
        with pytest.raises(TypeError, match=f"bad number {1 << (8 * width)} for type uint{8 * width}"):
            builder.CreateUintVector([1, 1 << (8 * width), 2], width)


@pytest.mark.parametrize("prepend, type_name, value", [
    ("PrependUint16Slot", "uint16", 1 << 16), ("PrependUint32Slot", "uint32", -1), ("PrependInt8Slot", "int8", 128),
    ("PrependBoolSlot", "bool", 2),
])
def test_a_number_out_of_range_is_the_type_error_of_the_flatbuffers_builder(
        prepend: str, type_name: str, value: int) -> None:
    for builder in (Builder(), ReferenceBuilder()):
        builder.StartObject(1)
        with pytest.raises(TypeError, match=f"bad number {value} for type {type_name}"):
            getattr(builder, prepend)(0, value, 0)
