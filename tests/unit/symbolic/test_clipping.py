"""The note for a dimension clipped by a constant: which constraints decide each min/max."""

from __future__ import annotations

from jaxport.domain.symbolic.clipping import clipping_note, clips_in


def test_a_min_of_a_constant_and_a_variable_is_decided_by_either_bound() -> None:
    (clip,) = clips_in("mul got incompatible shapes for broadcasting: (b, t, 1), (1, min(1024, t), min(1024, t)).")
    assert (clip.expression, clip.to_operand, clip.to_constant) == ("min(1024, t)", "t <= 1024", "t >= 1024")


def test_a_max_is_decided_the_other_way_round_and_expressions_keep_their_text() -> None:
    assert [(c.expression, c.to_operand, c.to_constant) for c in clips_in("shape (max(8, 2*t + 1), 3)")] == [
        ("max(8, 2*t + 1)", "2*t + 1 >= 8", "2*t + 1 <= 8")]


def test_nested_and_repeated_clips_are_each_named_once() -> None:
    found = [c.expression for c in clips_in("(min(512, max(16, t)), min(512, max(16, t)), max(s, 4))")]
    assert found == ["min(512, max(16, t))", "max(16, t)", "max(s, 4)"]


def test_text_without_clips_gives_no_note() -> None:
    for text in ("'b' >= '4' is inconclusive", "max(t, s) and min(3, 4)", "jnp.max(x, axis=(0", "min(a b)",
                 "max(1, t)"):  # t >= 1 always: max(1, t) is t and is never printed
        assert clipping_note(text) is None, text


def test_the_note_names_the_constraints_to_add() -> None:
    note = clipping_note("'min(1024, t)' < 't'")
    assert note is not None and 'add constraints=("t <= 1024",)' in note and 'constraints=("t >= 1024",)' in note
