"""``jaxport.errors`` holds every error jaxport defines, each printing and pickling as ``jaxport.errors.X``."""

from __future__ import annotations

import importlib
import pickle
import traceback

import jax
import jax.numpy as jnp
import pytest

import jaxport
import jaxport.errors
from jaxport.domain import errors as domain_errors
from jaxport.domain import errors as domain_errors
from jaxport.errors import JaxportError
from tests.helpers.extras import importable_modules


def errors_defined_in_jaxport() -> set[type[JaxportError]]:
    """Every subclass of JaxportError in jaxport's modules, found by importing them all."""
    for name in importable_modules():
        importlib.import_module(name)
    found: set[type[JaxportError]] = {JaxportError}
    todo: list[type[JaxportError]] = [JaxportError]
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub not in found:
                found.add(sub)
                todo.append(sub)
    return {cls for cls in found if cls.__module__.startswith("jaxport")}  # not the tests' own


DEFINED = sorted(errors_defined_in_jaxport(), key=lambda cls: (cls.__name__, cls.__mro__[1].__name__))


def public_class(cls: type[JaxportError]) -> type[JaxportError]:
    """The class of ``jaxport.errors`` that ``cls`` prints as."""
    public = getattr(jaxport.errors, cls.__qualname__)
    assert isinstance(public, type) and issubclass(cls, public)
    return public


def test_all_lists_every_error_that_jaxport_defines() -> None:
    exported = {name for name in jaxport.errors.__all__
                if isinstance(getattr(jaxport.errors, name), type)
                and issubclass(getattr(jaxport.errors, name), JaxportError)}
    assert exported == {cls.__qualname__ for cls in DEFINED}
    assert len(jaxport.errors.__all__) == len(set(jaxport.errors.__all__))
    assert {"InconclusiveDimensionError", "ShapeAssertionError", "ArgSpecError", "UsageError"} <= exported


def test_the_public_names_are_the_classes_where_they_are_defined() -> None:
    assert jaxport.errors.ShapeMismatchError is domain_errors.ShapeMismatchError
    assert jaxport.errors.InconclusiveDimensionError is domain_errors.InconclusiveDimensionError
    assert jaxport.errors.ScopeMixingError is domain_errors.ScopeMixingError
    from jaxport.application.cli.common import UsageError

    assert jaxport.errors.UsageError is UsageError


@pytest.mark.parametrize("cls", DEFINED, ids=lambda cls: f"{cls.__mro__[0].__name__}-{cls.__mro__[1].__name__}")
def test_each_error_prints_and_pickles_as_jaxport_errors(cls: type[JaxportError]) -> None:
    public = public_class(cls)
    assert cls.__module__ == "jaxport.errors" and public.__module__ == "jaxport.errors"
    error = sample(cls)
    assert traceback.format_exception_only(error) == [f"jaxport.errors.{cls.__qualname__}: {error}\n"]
    again = pickle.loads(pickle.dumps(error))
    assert type(again) is public and again.args == error.args and str(again) == str(error)


def sample(cls: type[JaxportError]) -> JaxportError:
    """An instance of ``cls`` with a message, whatever fields its ``__init__`` takes."""
    if issubclass(cls, jax.errors.JaxRuntimeError):  # its str() needs JAX's __init__
        from jaxport.adapters.jax.exported.call import call_failure

        failure = call_failure("f", jax.errors.JaxRuntimeError("what went wrong"))
        assert type(failure) is cls
        return failure
    error = cls.__new__(cls, "what went wrong")
    error.args = ("what went wrong",)
    return error


def test_errors_whose_init_takes_fields_pickle_with_their_message_and_fields() -> None:
    shape = jaxport.errors.ShapeMismatchError("args[0].shape[0]", "(3,)", "(4,)")
    bundle = jaxport.errors.BundleMismatchError("predict", "dense/w", "float32[3] vs float32[4]")
    for error in (shape, bundle, jaxport.errors.PartitionerMismatchError()):
        again = pickle.loads(pickle.dumps(error))
        assert type(again) is type(error) and str(again) == str(error)
        assert vars(again) == vars(error)
    assert pickle.loads(pickle.dumps(bundle)).key_path == "dense/w"


def test_an_inconclusive_comparison_under_jax_prints_as_the_public_error_and_is_jaxs_too() -> None:
    b, = jaxport.symbolic_shape("b")

    def f(x: jax.Array) -> jax.Array:
        return x if x.shape[0] >= 16 else -x

    with pytest.raises(jaxport.errors.InconclusiveDimensionError) as caught:
        jaxport.export(jax.jit(f))(jax.ShapeDtypeStruct((b,), jnp.float32))
    error = caught.value
    assert isinstance(error, jax.errors.InconclusiveDimensionOperation)
    assert traceback.format_exception_only(error)[0].startswith(
        "jaxport.errors.InconclusiveDimensionError: Symbolic dimension comparison")
    again = pickle.loads(pickle.dumps(error))  # as the public class: loadable without JAX
    assert type(again) is jaxport.errors.InconclusiveDimensionError and again.args == error.args
