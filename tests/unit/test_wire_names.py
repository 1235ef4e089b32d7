"""The wire names of flat inputs and outputs (one rule for every target) and their inverse."""

from __future__ import annotations

import pytest

from jaxport.domain.artifact.record import TreeSpec
from jaxport.domain.symbolic.json_trees import evaluate, shape_trees
from jaxport.domain.calls.wire_names import (
    input_wire_names, output_wire_names, parse_wire_name, wire_name
)

TABLE: list[tuple[tuple[str | int, ...], str]] = [
    ((0,), "arg0"),
    ((1, "dense", "w"), "arg1/dense/w"),
    ((0, 0), "arg0/0"),
    (("scale",), "scale"),
    (("_private",), ".5fprivate"),
    (("-x",), ".2dx"),
    ((0, "layer.0"), "arg0/layer.2e0"),
    ((0, "a/b"), "arg0/a.2fb"),
    ((0, ""), "arg0/."),
    ((0, "a b"), "arg0/a.20b"),
    ((0, "ü"), "arg0/.c3.bc"),
    (("arg0",), ".61rg0"),
    (("kebab-case",), "kebab-case"),
]


@pytest.mark.parametrize(("entries", "name"), TABLE)
def test_a_key_path_has_one_wire_name_and_back(entries: tuple[str | int, ...], name: str) -> None:
    assert wire_name(entries) == name
    back = parse_wire_name(name)
    assert back[0] == entries[0]
    assert back[1:] == tuple(str(e) for e in entries[1:])


@pytest.mark.parametrize(("entries", "name"), TABLE)
def test_every_wire_name_is_one_tensorflow_accepts(entries: tuple[str | int, ...], name: str) -> None:
    import re

    assert re.fullmatch(r"[A-Za-z0-9.][A-Za-z0-9_.\-/]*", name), name


def test_no_two_inputs_share_a_wire_name() -> None:
    leaf = TreeSpec.leaf()
    args = TreeSpec.of_tuple(leaf, TreeSpec.of_dict({"a/b": leaf, "a": TreeSpec.of_dict({"b": leaf})}))
    tree = TreeSpec.of_tuple(args, TreeSpec.of_dict({"arg0": leaf, "_k": leaf}))
    names = input_wire_names(tree)
    assert names == ("arg0", "arg1/a/b", "arg1/a.2fb", ".5fk", ".61rg0")
    assert len(set(names)) == len(names)


def test_outputs_are_key_paths_of_a_dict_result_else_numbered() -> None:
    leaf = TreeSpec.leaf()
    assert output_wire_names(TreeSpec.of_dict({"y": leaf, "aux": TreeSpec.of_dict({"loss": leaf})})) == \
        ("aux/loss", "y")
    assert output_wire_names(TreeSpec.of_tuple(leaf, TreeSpec.of_list(leaf))) == ("output_0", "output_1")
    assert output_wire_names(leaf) == ("output_0",)


@pytest.mark.parametrize("bad", ["arg0/.zz", "a b", "arg0/.c3"])
def test_a_name_the_rule_does_not_write_is_refused(bad: str) -> None:
    with pytest.raises(ValueError):
        parse_wire_name(bad)


def test_symbolic_dimensions_and_constraints_have_trees_that_evaluate_as_the_text() -> None:
    dims, constraints = shape_trees(["b", "2*h + 1", "floordiv(b, 2)", "max(h, 3)", "4"], ["b >= 16", "h <= 8"])
    env = {"b": 17, "h": 5}
    assert [evaluate(d, env) for d in dims] == [17, 11, 8, 5, 4]
    assert [c["relation"] for c in constraints] == [">=", ">="]
    assert [evaluate(c["difference"], env) for c in constraints] == [1, 3]
