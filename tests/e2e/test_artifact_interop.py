"""End to end: artifacts flow both ways between jaxport and jax.export.

Every function of the corpus is exported by both systems from one call site
(source locations hold the caller's line and column, so that the two modules
can be byte-identical). Then, for each case:

* jaxport's bytes, read by ``jax.export.deserialize``, call like the original;
* jax.export's bytes, read by ``jaxport.deserialize``, call like the original;
* both readers decode the same fields from either system's bytes;
* with a VJP in the artifact, gradients through the deserialized call match
  the gradients of the original (and second-order ones for ``vjp_order=2``);
* without VJPs, jaxport's bytes are jax.export's bytes (for symbolic shapes,
  every field but the module, whose wrapped ``main`` jaxport emits itself).

The symbolic cases are also called with shapes other than the exported ones.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import jaxport
from jaxport.adapters.flatbuffers.codec import decode_artifact, encode_artifact
from jaxport.errors import ArtifactError, VjpUnavailableError

RNG = np.random.default_rng(20240604)


# --------------------------------------------------------------------------
# Pytree node types registered for serialization on both sides
# --------------------------------------------------------------------------
class Point(NamedTuple):
    x: Any
    y: Any


class Scaled:
    """A custom pytree node whose auxdata (a label) travels in the artifact."""

    def __init__(self, value: Any, label: str) -> None:
        self.value = value
        self.label = label


jax.tree_util.register_pytree_node(
    Scaled, lambda s: ((s.value,), s.label), lambda label, children: Scaled(children[0], label))
jax.export.register_namedtuple_serialization(Point, serialized_name="jaxport.tests.Point")
jaxport.register_namedtuple_serialization(Point, serialized_name="jaxport.tests.Point")
for _register in (jax.export.register_pytree_node_serialization, jaxport.register_pytree_node_serialization):
    _register(Scaled, serialized_name="jaxport.tests.Scaled",
              serialize_auxdata=lambda label: label.encode("utf-8"),
              deserialize_auxdata=lambda data: data.decode("utf-8"))


class OnlyJaxKnowsMe(NamedTuple):
    a: Any


class NobodyKnowsMe(NamedTuple):
    a: Any


jax.export.register_namedtuple_serialization(OnlyJaxKnowsMe, serialized_name="jaxport.tests.OnlyJax")


class Unserializable:
    """A pytree node registered with JAX but not for serialization."""

    def __init__(self, value: Any) -> None:
        self.value = value


jax.tree_util.register_pytree_node(Unserializable, lambda u: ((u.value,), None),
                                   lambda _, children: Unserializable(children[0]))


# --------------------------------------------------------------------------
# The corpus
# --------------------------------------------------------------------------
def f32(*shape: int) -> np.ndarray:
    return RNG.uniform(-1.0, 1.0, shape).astype(np.float32)


@dataclasses.dataclass(frozen=True, eq=False)
class Case:
    """One exported function and the arguments to call it with."""

    name: str
    fun: Callable[..., Any]
    args: tuple[Any, ...]
    kwargs: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    platforms: tuple[str, ...] = ("cpu",)
    vjp_order: int = 0
    disable_platform_check: bool = False
    # Symbolic shape specs, one per positional argument, for symbolic cases.
    shapes: tuple[str | None, ...] | None = None
    # More positional arguments to call with (other shapes, for symbolic cases).
    also_called_with: tuple[tuple[Any, ...], ...] = ()

    @property
    def calls(self) -> list[tuple[Any, ...]]:
        return [self.args, *self.also_called_with]

    def __str__(self) -> str:
        return self.name


def per_platform(x: Any) -> Any:
    return lax.platform_dependent(x, cpu=lambda v: jnp.sin(v) + 1.0, cuda=lambda v: v * 2.0,
                                  tpu=lambda v: v - 3.0)


def nested_containers(pair: Any, table: Any) -> Any:
    x, (y, nothing) = pair[0], pair[1]
    assert nothing is None and table["none"] is None
    return {"sum": x + y[0] + table["a"], "parts": (x * 2.0, [y[0] - 1.0, None])}


def ordered(od: Any) -> Any:
    return collections.OrderedDict([("z", od["b"] * 2.0), ("a", od["a"] + od["b"])])


def with_namedtuples(p: Point) -> Point:
    return Point(p.y * 2.0, p.x + p.y)


def with_custom_node(s: Scaled, x: Any) -> Scaled:
    return Scaled(s.value * x, s.label + "!")


def keywords(x: Any, *, scale: Any, shift: Any) -> Any:
    return x * scale + shift


def unused_args(x: Any, unused: Any, y: Any) -> Any:
    return x + y


def ignores_everything(x: Any) -> Any:
    return jnp.arange(3, dtype=jnp.float32)


def bf16_matmul(a: Any, b: Any) -> Any:
    return (a @ b).astype(jnp.bfloat16)


def ints_and_bools(i: Any, mask: Any) -> Any:
    return jnp.where(mask, i, -i), jnp.logical_not(mask), i.astype(jnp.int32).sum()


def complex_and_uint(z: Any, u: Any) -> Any:
    return z * jnp.conj(z), u + jnp.uint8(1)


def loop(x: Any) -> Any:
    return lax.fori_loop(0, 5, lambda i, v: v * 0.5 + jnp.float32(i), x)


def cholesky(a: Any) -> Any:
    return jnp.linalg.cholesky(a @ a.T + 4.0 * jnp.eye(a.shape[0], dtype=a.dtype))


def mlp_loss(params: Any, x: Any) -> Any:
    hidden = jnp.tanh(x @ params["w1"] + params["b1"])
    return jnp.sum((hidden @ params["w2"]) ** 2)


def mixed_dtype_loss(x: Any, count: Any, flag: Any) -> Any:
    return jnp.sum(jnp.where(flag, jnp.sin(x), x) * count.astype(jnp.float32))


def scalar_poly(x: Any, y: Any) -> Any:
    return jnp.sin(x) * x ** 3 + jnp.sum(y) * x ** 2


def scalar_per_platform(x: Any) -> Any:
    return lax.platform_dependent(x, cpu=lambda v: jnp.cos(v) * v, tpu=lambda v: v)


def empty_rows(x: Any) -> Any:
    return x.sum(axis=0), x * 2.0


CASES = [
    Case("sin", jnp.sin, (f32(3),)),
    Case("product_of_two", lambda x, y: x * y, (f32(2, 3), f32(2, 3))),
    Case("three_platforms", per_platform, (f32(4),), platforms=("cpu", "cuda", "tpu")),
    Case("tpu_then_cpu", per_platform, (f32(4),), platforms=("tpu", "cpu")),
    Case("tuples_lists_dicts_none", nested_containers,
         ((f32(2), ([f32(2)], None)), {"a": f32(2), "none": None})),
    Case("ordered_dict", ordered, (collections.OrderedDict([("b", f32(3)), ("a", f32(3))]),)),
    Case("namedtuple", with_namedtuples, (Point(f32(2), f32(2)),)),
    Case("custom_node", with_custom_node, (Scaled(f32(3), "gain"), f32(3))),
    Case("keyword_arguments", keywords, (f32(3),), {"scale": f32(3), "shift": f32()}),
    Case("unused_argument", unused_args, (f32(2), f32(5), f32(2))),
    Case("all_arguments_unused", ignores_everything, (f32(2),)),
    Case("bfloat16", bf16_matmul, (f32(2, 3).astype(jnp.bfloat16), f32(3, 2).astype(jnp.bfloat16))),
    Case("int8_and_bool", ints_and_bools,
         (np.arange(-3, 3, dtype=np.int8), np.array([True, False, True, True, False, False]))),
    Case("complex64_and_uint8", complex_and_uint,
         ((f32(3) + 1j * f32(3)).astype(np.complex64), np.arange(250, 254, dtype=np.uint8))),
    Case("fori_loop", loop, (f32(2, 2),)),
    Case("lapack_custom_call", cholesky, (f32(3, 3),)),
    Case("empty_array", empty_rows, (np.zeros((0, 3), np.float32),)),
    Case("platform_check_disabled", jnp.cos, (f32(3),), platforms=("tpu", "cpu"),
         disable_platform_check=True),
    Case("vjp1_mlp", mlp_loss, ({"w1": f32(3, 4), "b1": f32(4), "w2": f32(4, 2)}, f32(5, 3)), vjp_order=1),
    Case("vjp1_mixed_dtypes", mixed_dtype_loss,
         (f32(4), np.arange(4, dtype=np.int8), np.array([True, False, True, False])), vjp_order=1),
    Case("vjp1_custom_node", lambda s, x: jnp.sum(with_custom_node(s, x).value ** 2),
         (Scaled(f32(3), "w"), f32(3)), vjp_order=1),
    Case("vjp2_scalar", scalar_poly, (np.float32(0.7), f32(3)), vjp_order=2),
    Case("vjp2_multi_platform", scalar_per_platform, (np.float32(-0.4),), platforms=("cpu", "tpu"),
         vjp_order=2),
    Case("symbolic_batch", jnp.sin, (f32(5, 4),), shapes=("b, 4",), also_called_with=((f32(1, 4),),)),
    Case("symbolic_shared_variable", lambda x, y: x * y + 1.0, (f32(6), f32(6)), shapes=("b", "b"),
         also_called_with=((f32(2), f32(2)),)),
    Case("symbolic_multi_platform", per_platform, (f32(3, 2),), platforms=("cpu", "cuda"),
         shapes=("b, 2",), also_called_with=((f32(8, 2),),)),
    Case("symbolic_vjp1", lambda x: jnp.sum(jnp.tanh(x) ** 2), (f32(7, 3),), shapes=("b, _",),
         vjp_order=1, also_called_with=((f32(2, 3),),)),
    Case("symbolic_pytree_kwargs", lambda d, *, k: {"s": d["x"][:, :2] * k, "t": d["y"].sum()},
         ({"x": f32(4, 3), "y": f32(4)},), {"k": f32()}, shapes=("n, ...",),
         also_called_with=(({"x": f32(9, 3), "y": f32(9)},),)),
]


def params(cases: list[Case]) -> list[Any]:
    return [pytest.param(c, id=c.name) for c in cases]


ALL = params(CASES)
WITH_VJP = params([c for c in CASES if c.vjp_order >= 1])
WITH_VJP2 = params([c for c in CASES if c.vjp_order >= 2])
STATIC = params([c for c in CASES if c.shapes is None])


# --------------------------------------------------------------------------
# Exporting a case with both systems
# --------------------------------------------------------------------------
def specs_of(case: Case, system: Any) -> tuple[Any, Any]:
    to_spec = lambda a: jax.ShapeDtypeStruct(np.shape(a), np.asarray(a).dtype)
    kwargs = jax.tree_util.tree_map(to_spec, dict(case.kwargs))
    if case.shapes is None:
        return jax.tree_util.tree_map(to_spec, case.args), kwargs
    return tuple(system.symbolic_args_specs(case.args, case.shapes)), kwargs


def export_case(case: Case, system: Any) -> Any:
    """The export of ``case`` by ``system`` (the module ``jaxport`` or ``jax.export``)."""
    args, kwargs = specs_of(case, system)
    checks = [system.DisabledSafetyCheck.platform()] if case.disable_platform_check else []
    exporter = jaxport.export if system is jaxport else jax.export.export
    return exporter(jax.jit(case.fun), platforms=case.platforms, disabled_checks=checks)(*args, **kwargs)


@functools.cache
def exports(case: Case) -> tuple[jaxport.Exported, jax.export.Exported]:
    """``case`` exported by jaxport and by jax.export, from one call site."""
    ours, theirs = [export_case(case, system) for system in (jaxport, jax.export)]
    return ours, theirs


@functools.cache
def blobs(case: Case) -> tuple[bytes, bytes]:
    """The artifact bytes of ``case`` written by jaxport and by jax.export."""
    ours, theirs = exports(case)
    return bytes(ours.serialize(case.vjp_order)), bytes(theirs.serialize(case.vjp_order))


def expected(case: Case, args: tuple[Any, ...]) -> Any:
    return jax.jit(case.fun)(*args, **case.kwargs)


def assert_trees_close(got: Any, want: Any) -> None:
    got_tree: Any = jax.tree_util.tree_structure(got)
    assert got_tree == jax.tree_util.tree_structure(want)
    for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        g_arr, w_arr = np.asarray(g), np.asarray(w)
        assert (g_arr.shape, g_arr.dtype) == (w_arr.shape, w_arr.dtype)
        if g_arr.dtype == jnp.bfloat16:
            g_arr, w_arr = g_arr.astype(np.float32), w_arr.astype(np.float32)
        np.testing.assert_allclose(g_arr, w_arr, rtol=1e-5, atol=1e-6)


def aval_text(aval: Any) -> tuple[str, bool, str, str]:
    # As text: the two systems' symbolic dimensions are objects of different classes.
    return str(aval), aval.weak_type, str(aval.memory_space), str(aval.sharding)


def decoded_fields(exp: Any) -> dict[str, Any]:
    """The fields that the artifact carries, comparable across the two systems."""
    return {
        "fun_name": exp.fun_name,
        "in_tree": exp.in_tree,
        "out_tree": exp.out_tree,
        "in_avals": [aval_text(a) for a in exp.in_avals],
        "out_avals": [aval_text(a) for a in exp.out_avals],
        "platforms": tuple(exp.platforms),
        "nr_devices": exp.nr_devices,
        "mlir_module_serialized": bytes(exp.mlir_module_serialized),
        "module_kept_var_idx": tuple(exp.module_kept_var_idx),
        "calling_convention_version": exp.calling_convention_version,
        "uses_global_constants": exp.uses_global_constants,
        "disabled_safety_checks": [str(c) for c in exp.disabled_safety_checks],
        "effects": [str(type(e)) for e in (*exp.ordered_effects, *exp.unordered_effects)],
    }


# --------------------------------------------------------------------------
# Interoperability
# --------------------------------------------------------------------------
def test_the_corpus_has_at_least_twenty_static_functions() -> None:
    assert len(STATIC) >= 20
    assert {c.vjp_order for c in CASES} == {0, 1, 2}


@pytest.mark.parametrize("case", ALL)
def test_jaxport_bytes_read_by_jax_export_call_like_the_original(case: Case) -> None:
    ours_blob, _ = blobs(case)
    again = jax.export.deserialize(bytearray(ours_blob))
    for args in case.calls:
        assert_trees_close(again.call(*args, **case.kwargs), expected(case, args))


@pytest.mark.parametrize("case", ALL)
def test_jax_export_bytes_read_by_jaxport_call_like_the_original(case: Case) -> None:
    _, theirs_blob = blobs(case)
    again = jaxport.deserialize(theirs_blob)
    assert isinstance(again, jaxport.Exported)
    for args in case.calls:
        assert_trees_close(again.call(*args, **case.kwargs), expected(case, args))
        assert_trees_close(jax.jit(again.call)(*args, **case.kwargs), expected(case, args))


@pytest.mark.parametrize("case", ALL)
def test_both_readers_decode_the_same_fields_from_either_systems_bytes(case: Case) -> None:
    ours, theirs = exports(case)
    ours_fields, theirs_fields = decoded_fields(ours), decoded_fields(theirs)
    if case.shapes is not None:  # jaxport wraps a symbolic main itself: compare all but the module
        del ours_fields["mlir_module_serialized"], theirs_fields["mlir_module_serialized"]
    assert ours_fields == theirs_fields
    for blob, exported in zip(blobs(case), (ours, theirs)):
        by_jaxport, by_jax = jaxport.deserialize(blob), jax.export.deserialize(bytearray(blob))
        assert decoded_fields(by_jaxport) == decoded_fields(by_jax) == decoded_fields(exported)


@pytest.mark.parametrize("case", WITH_VJP)
def test_gradients_through_a_deserialized_call_match_the_original(case: Case) -> None:
    ours_blob, theirs_blob = blobs(case)
    readers: list[Any] = [jaxport.deserialize(theirs_blob), jaxport.deserialize(ours_blob),
                          jax.export.deserialize(bytearray(ours_blob))]
    for args in case.calls:
        want = jax.grad(case.fun)(*args, **case.kwargs)
        for again in readers:
            assert_trees_close(jax.grad(again.call)(*args, **case.kwargs), want)


@pytest.mark.parametrize("case", WITH_VJP2)
def test_second_order_gradients_through_a_deserialized_call_match_the_original(case: Case) -> None:
    ours_blob, theirs_blob = blobs(case)
    readers: list[Any] = [jaxport.deserialize(theirs_blob), jaxport.deserialize(ours_blob),
                          jax.export.deserialize(bytearray(ours_blob))]
    want = jax.grad(jax.grad(case.fun))(*case.args)
    for again in readers:
        assert_trees_close(jax.grad(jax.grad(again.call))(*case.args), want)


@pytest.mark.parametrize("case", ALL)
def test_serialize_without_vjp_gives_the_bytes_of_jax_export(case: Case) -> None:
    ours, theirs = exports(case)
    if case.shapes is None:
        assert ours.mlir_module_serialized == theirs.mlir_module_serialized
        assert ours.serialize(integrity=False) == theirs.serialize()
    else:
        # jaxport emits the wrapped main of a symbolic module itself, so the
        # module bytes may differ: every other byte of the artifact must not.
        same_module = dataclasses.replace(decode_artifact(ours.serialize(integrity=False)),
                                          mlir_module_serialized=theirs.mlir_module_serialized)
        assert encode_artifact(same_module) == theirs.serialize()


# --------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------
@functools.cache
def sin_with_vjp(order: int) -> bytes:
    return bytes(jaxport.export(jax.jit(jnp.sin))(f32(3)).serialize(vjp_order=order))


def test_a_deserialized_artifact_without_vjp_refuses_gradients() -> None:
    again = jaxport.deserialize(sin_with_vjp(0))
    with pytest.raises(VjpUnavailableError, match=r"exported function 'sin'[^\n]*vjp_order=1"):
        jax.grad(lambda x: again.call(x).sum())(f32(3))


@pytest.mark.parametrize("carried", [0, 1])
def test_serializing_a_higher_vjp_order_than_deserialized_raises_a_clear_error(carried: int) -> None:
    again = jaxport.deserialize(sin_with_vjp(carried))
    assert jaxport.deserialize(again.serialize(vjp_order=carried)).has_vjp() == (carried > 0)
    with pytest.raises(VjpUnavailableError, match=(rf"Cannot serialize 'sin' with vjp_order={carried + 1}: "
                                                   rf"it carries VJPs up to order {carried} only")):
        again.serialize(vjp_order=carried + 1)
    assert issubclass(VjpUnavailableError, ValueError)


@pytest.mark.parametrize("node_type", [NobodyKnowsMe, Unserializable], ids=["namedtuple", "custom_node"])
def test_serializing_an_unregistered_pytree_node_names_the_type_and_the_two_functions(
        node_type: type) -> None:
    exp = jaxport.export(jax.jit(lambda v: jax.tree_util.tree_leaves(v)[0]))(node_type(f32(2)))
    with pytest.raises(ValueError, match=(
            rf"unregistered type `<class '[\w.]*\.{node_type.__name__}'>`\. "
            r"Use `jaxport\.register_pytree_node_serialization` or "
            r"`jaxport\.register_namedtuple_serialization`")):
        exp.serialize()


def test_deserializing_an_unknown_custom_node_name_raises_artifact_error() -> None:
    blob = jax.export.export(jax.jit(lambda p: p.a * 2.0))(OnlyJaxKnowsMe(f32(2))).serialize()
    with pytest.raises(ArtifactError, match=r"`jaxport\.tests\.OnlyJax`, which is not registered"):
        jaxport.deserialize(blob)


@pytest.mark.parametrize("version", [8, 11, 0])
def test_a_calling_convention_outside_the_window_names_found_and_supported_versions(version: int) -> None:
    record = decode_artifact(sin_with_vjp(1))
    blob = encode_artifact(dataclasses.replace(record, calling_convention_version=version))
    with pytest.raises(ArtifactError,
                       match=rf"version {version} is outside the range of supported versions \[9\.\.10\]"):
        jaxport.deserialize(blob)


def test_module_bytes_that_are_not_a_portable_artifact_raise_artifact_error() -> None:
    record = decode_artifact(sin_with_vjp(1))
    blob = encode_artifact(dataclasses.replace(record, mlir_module_serialized=b"HloModule sin\n..."))
    with pytest.raises(ArtifactError, match=r"not a StableHLO portable artifact.*'HloM'"):
        jaxport.deserialize(blob)
