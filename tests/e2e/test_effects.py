"""Ordered and unordered effects: tokens in main, threading in callers, serialization."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import jax
import numpy as np
import pytest
from jax._src import core, effects  # test-defined effects need JAX's registries, as JAX's own tests do
from jax.extend.mlir.dialects import stablehlo as hlo
from jax.interpreters import mlir

import jaxport
from jaxport.adapters.flatbuffers.codec import decode_artifact, encode_artifact
from jaxport.domain.artifact.record import EffectRecord
from jaxport.errors import ArtifactError, EffectSerializationError


@dataclasses.dataclass(frozen=True)
class FirstOrderedEffect(effects.Effect):
    pass


@dataclasses.dataclass(frozen=True)
class SecondOrderedEffect(effects.Effect):
    pass


@dataclasses.dataclass(frozen=True)
class AnUnorderedEffect(effects.Effect):
    pass


class AnOrderedEffectWithArguments(effects.Effect):
    def __init__(self, level: int) -> None:
        self.level = level


class AnOrderedEffectWithoutEquality(effects.Effect):
    pass  # identity equality: a new instance is a different effect


EFFECTS: dict[str, Any] = {"first": FirstOrderedEffect(), "second": SecondOrderedEffect(),
                           "unordered": AnUnorderedEffect(),
                           "with_arguments": AnOrderedEffectWithArguments(3),
                           "without_equality": AnOrderedEffectWithoutEquality()}
for _effect in EFFECTS.values():
    effects.lowerable_effects.add_type(type(_effect))
    effects.control_flow_allowed_effects.add_type(type(_effect))
    effects.custom_derivatives_allowed_effects.add_type(type(_effect))
    if "Ordered" in type(_effect).__name__ and "Unordered" not in type(_effect).__name__:
        effects.ordered_effects.add_type(type(_effect))

# Doubles its argument, with an effect; ordered effects thread their token.
effectful_double_p = core.Primitive("jaxport_test_effectful_double")
effectful_double_p.def_effectful_abstract_eval(lambda aval, *, effect: (aval, {EFFECTS[effect]}))


def _lower_effectful_double(ctx: Any, x: Any, *, effect: str) -> list[Any]:
    if effect != "unordered":
        token = ctx.tokens_in.get(EFFECTS[effect])
        ctx.set_tokens_out(mlir.TokenSet({EFFECTS[effect]: token}))
    return [hlo.add(x, x)]


mlir.register_lowering(effectful_double_p, _lower_effectful_double)


def two_effects(x: Any) -> Any:
    return effectful_double_p.bind(effectful_double_p.bind(x, effect="first"), effect="second") + 1


X = np.arange(3, dtype=np.float32)


@pytest.fixture(scope="module")
def exported() -> jaxport.Exported:
    return jaxport.export(two_effects)(X)


def test_ordered_effects_are_recorded_and_get_tokens_in_main(exported: jaxport.Exported) -> None:
    assert exported.ordered_effects == (EFFECTS["first"], EFFECTS["second"])
    assert exported.unordered_effects == ()
    main = re.search(r"func\.func public @main\((.*)\) ->", exported.mlir_module())
    assert main is not None
    assert main.group(1).count("!stablehlo.token") == 2


def test_two_calls_in_a_jitted_caller_thread_the_tokens_in_program_order(exported: jaxport.Exported) -> None:
    caller = jax.jit(lambda x: exported.call(exported.call(x)))
    np.testing.assert_allclose(caller(X), jax.jit(lambda x: two_effects(two_effects(x)))(X))
    text = caller.lower(X).as_text()
    first, second = re.findall(r"(%\S+):3 = call @call_exported_two_effects\(([^)]*)\)", text)[:2]
    # The second call takes the tokens the first call returned.
    assert second[1].startswith(f"{first[0]}#0, {first[0]}#1")


def test_unordered_effects_are_recorded_and_take_no_token() -> None:
    exp = jaxport.export(lambda x: effectful_double_p.bind(x, effect="unordered"))(X)
    assert exp.unordered_effects == (EFFECTS["unordered"],) and exp.ordered_effects == ()
    np.testing.assert_allclose(jax.jit(exp.call)(X), 2 * X)


def test_effects_round_trip_through_jax_export_and_jaxport(exported: jaxport.Exported) -> None:
    blob = exported.serialize()
    theirs = jax.export.deserialize(blob)
    ours = jaxport.deserialize(blob)
    assert theirs.ordered_effects == ours.ordered_effects == exported.ordered_effects
    want = jax.jit(two_effects)(X)
    np.testing.assert_allclose(jax.jit(theirs.call)(X), want)
    np.testing.assert_allclose(jax.jit(ours.call)(X), want)


def test_an_effect_not_registered_here_is_an_error_naming_it(exported: jaxport.Exported) -> None:
    record = decode_artifact(exported.serialize())
    unknown = dataclasses.replace(record, ordered_effects=(EffectRecord("<class 'elsewhere.Effect'>"),
                                                           record.ordered_effects[1]))
    with pytest.raises(ArtifactError, match=r"elsewhere\.Effect.*not registered"):
        jaxport.deserialize(encode_artifact(unknown))


@pytest.mark.parametrize(("effect", "message"), [
    ("with_arguments", "must have a nullary constructor to be serializable"),
    ("without_equality", "must have a nullary class constructor that produces an equal effect object"),
])
def test_an_effect_that_its_class_cannot_rebuild_is_refused_at_serialization(effect: str, message: str) -> None:
    def f(x: Any) -> Any:
        return effectful_double_p.bind(x, effect=effect)

    exp = jaxport.export(jax.jit(f))(X)
    with pytest.raises(EffectSerializationError, match=message):
        exp.serialize()
    with pytest.raises(NotImplementedError, match=message):
        jax.export.export(jax.jit(f))(X).serialize()
