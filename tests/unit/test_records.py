"""A record behaves as the frozen, slotted dataclass with the same fields."""

from __future__ import annotations

import copy
import dataclasses
import pickle

import pytest

from jaxport.domain.records import record, replace


@record
class Point:
    """A point with a default and a check."""

    x: int
    label: str = "origin"
    tags: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.x < 0:
            raise ValueError("x must not be negative")


@dataclasses.dataclass(frozen=True, slots=True)
class PointDataclass:
    """The same fields, as a dataclass."""

    x: int
    label: str = "origin"
    tags: tuple[str, ...] = ()


@record
class Shown:
    """A record that writes its own text and equality."""

    value: int

    def __repr__(self) -> str:
        return f"<{self.value}>"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Shown) and other.value % 10 == self.value % 10


@record
class Hashed:
    """A record that writes its own hash."""

    value: int

    def __hash__(self) -> int:
        return 7


@record
class Empty:
    """A record without fields."""


def test_a_record_is_built_compared_hashed_and_shown_as_the_dataclass() -> None:
    for args, kwargs in [((1,), {}), ((1, "a"), {}), ((), {"x": 2, "tags": ("t",)})]:
        ours, theirs = Point(*args, **kwargs), PointDataclass(*args, **kwargs)  # type: ignore[arg-type]
        assert repr(ours) == repr(theirs).replace("PointDataclass", "Point")
        assert hash(ours) == hash(theirs)
        assert ours == Point(*args, **kwargs)  # type: ignore[arg-type]
    others: list[object] = [Point(2), PointDataclass(1), (1, "origin", ())]
    assert all(Point(1) != other for other in others)
    assert {Point(1), Point(1, "origin")} == {Point(1)}
    assert Point.__match_args__ == PointDataclass.__match_args__ == ("x", "label", "tags")
    assert vars(Point)["__slots__"] == ("x", "label", "tags") and not hasattr(Point(1), "__dict__")
    assert repr(Empty()) == "Empty()" and Empty() == Empty() and hash(Empty()) == hash(())


def test_a_record_checks_its_arguments_as_the_dataclass() -> None:
    with pytest.raises(ValueError, match="must not be negative"):
        Point(-1)
    with pytest.raises(TypeError):
        Point()  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Point(1, "a", (), 4)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Point(1, y=2)  # type: ignore[call-arg]


def test_a_record_is_frozen() -> None:
    point = Point(1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        point.x = 2  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del point.x
    with pytest.raises(AttributeError):
        point.y  # type: ignore[attr-defined]


def test_methods_that_the_class_writes_are_kept() -> None:
    assert repr(Shown(3)) == "<3>" and Shown(3) == Shown(13)
    # As dataclass(frozen=True): __hash__ from the fields, though Python drops
    # it from a class that defines __eq__ alone; one the class writes is kept.
    assert hash(Shown(3)) == hash((3,))
    assert hash(Hashed(3)) == 7


def test_dataclasses_functions_accept_records() -> None:
    # dataclasses.fields on an instance before anything asked the class.
    assert [f.name for f in dataclasses.fields(Point(1))] == ["x", "label", "tags"]
    kinds: list[object] = [Point, Point(1)]
    assert all(dataclasses.is_dataclass(kind) for kind in kinds)
    assert dataclasses.asdict(Point(1, tags=("a",))) == {"x": 1, "label": "origin", "tags": ("a",)}
    assert dataclasses.replace(Point(1), label="b") == Point(1, "b")
    with pytest.raises(ValueError, match="must not be negative"):
        dataclasses.replace(Point(1), x=-1)


def test_replace_changes_fields_without_importing_dataclasses() -> None:
    assert replace(Point(1, "a"), tags=("t",)) == Point(1, "a", ("t",))
    with pytest.raises(TypeError, match="no field 'y'"):
        replace(Point(1), y=2)


def test_records_copy_and_pickle() -> None:
    point = Point(1, "a", ("t",))
    assert copy.copy(point) == point and copy.deepcopy(point) == point
    assert pickle.loads(pickle.dumps(point)) == point


def test_records_match_by_position() -> None:
    match Point(3, "c"):
        case Point(x, label):
            assert (x, label) == (3, "c")
        case _:
            pytest.fail("no match")


def test_a_record_cannot_inherit_fields() -> None:
    class More(Point):
        pass

    with pytest.raises(TypeError, match="cannot inherit from a record"):
        record(More)
