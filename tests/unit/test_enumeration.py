"""An Enumeration behaves as the enum.Enum with the same members."""

from __future__ import annotations

import copy
import enum
import pickle

import pytest

from jaxport.domain.artifact import DType, TreeKind
from jaxport.domain.enumeration import Enumeration


class Kind(Enumeration):
    """Ours."""

    A = "a"
    B = "b"
    ALSO_A = "a"

    def describe(self) -> str:
        return f"kind {self.value}"


class KindEnum(enum.Enum):
    """The standard library's."""

    A = "a"
    B = "b"
    ALSO_A = "a"

    def describe(self) -> str:
        return f"kind {self.value}"


def test_members_are_looked_up_listed_and_shown_as_enum_members() -> None:
    assert Kind("a") is Kind.A is Kind["A"] is Kind.ALSO_A is Kind(Kind.A)
    assert [m.name for m in Kind] == [m.name for m in KindEnum] == ["A", "B"]
    assert [m.name for m in reversed(Kind)] == [m.name for m in reversed(KindEnum)]
    assert len(Kind) == len(KindEnum) == 2
    assert list(Kind.__members__) == list(KindEnum.__members__) == ["A", "B", "ALSO_A"]
    assert (Kind.A.name, Kind.A.value, Kind.A.describe()) == ("A", "a", "kind a")
    for ours, theirs in zip(Kind, KindEnum):
        assert repr(ours) == repr(theirs).replace("KindEnum", "Kind")
        assert str(ours) == str(theirs).replace("KindEnum", "Kind")
        assert f"{ours}|{ours:>8}" == f"{theirs}|{theirs:>12}".replace("KindEnum", "Kind")
        assert hash(ours) == hash(theirs)
    assert repr(Kind) == "<enum 'Kind'>" and repr(KindEnum) == "<enum 'KindEnum'>"
    assert Kind.A in Kind and Kind.A != Kind.B and Kind.A != "a"
    assert isinstance(Kind.A, Kind) and not isinstance(Kind.A, KindEnum)


def test_an_unknown_value_or_name_is_refused_as_by_enum() -> None:
    for cls in (Kind, KindEnum):
        with pytest.raises(ValueError, match=f"'c' is not a valid {cls.__name__}"):
            cls("c")
        with pytest.raises(ValueError, match="is not a valid"):
            cls([1])
        with pytest.raises(KeyError):
            cls["C"]


def test_members_are_constant_and_the_class_final() -> None:
    with pytest.raises(AttributeError):
        Kind.A = Kind.B  # type: ignore[misc, assignment]
    with pytest.raises(AttributeError):
        del Kind.A
    with pytest.raises(AttributeError):
        Kind.A._value_ = "z"
    with pytest.raises(TypeError, match="cannot extend"):
        class More(Kind):  # type: ignore[misc]
            C = "c"


def test_members_copy_and_pickle_to_themselves() -> None:
    for member in (Kind.A, DType.FLOAT32, TreeKind.CUSTOM):
        assert copy.copy(member) is member and copy.deepcopy(member) is member
        assert pickle.loads(pickle.dumps(member)) is member


def test_the_artifact_enumerations_keep_their_values() -> None:
    assert DType("float32") is DType.FLOAT32 and DType.KEY_FRY.value == "key<fry>"
    assert len(DType) == 30 and len({d.value for d in DType}) == 30
    assert [k.value for k in TreeKind] == ["leaf", "none", "tuple", "list", "dict", "custom"]
