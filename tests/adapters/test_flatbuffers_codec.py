"""The flatbuffers artifact codec against jax.export (jax 0.10.2) as the reference.

* The 17 ``Exported`` blobs shipped in jax's wheel decode with the fields
  ``jax.export.deserialize`` gives, and re-encode to bytes that jax reads back
  the same way (byte for byte for the current generation).
* Functions exported by ``jax.export`` now: ``encode(decode(blob)) == blob``
  byte for byte, the fields equal jax's, and the re-encoded bytes, read by
  jax, compute the same results.
"""

from __future__ import annotations

import collections
import dataclasses
import runpy
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import export
from jax._src import dtypes as jax_dtypes
from jax._src.export import _export
from jax._src.export import serialization_generated as jax_fb
from jax._src.lib import xla_client  # type: ignore[attr-defined]
from jax.sharding import AxisType, NamedSharding, PartitionSpec as P

from jaxport.adapters.flatbuffers import wire as W
from jaxport.adapters.flatbuffers.codec import decode_artifact, encode_artifact
from jaxport.domain.artifact.record import ArtifactRecord, AvalRecord, DType, EffectRecord, TreeKind, TreeSpec
from jaxport.domain.artifact.sharding import (
    AbstractDeviceRecord, AbstractMeshRecord, AxisType as WireAxisType, HloShardingRecord, NamedShardingRecord, PartitionSpecRecord
)
from jaxport.domain.errors import ArtifactError
from jaxport.domain.artifact.safety import DisabledSafetyCheck
from tests.helpers.artifacts import MODULE, hlo_record, rich_record

DATA = Path(jax.__file__).parent / "_src/internal_test_util/export_back_compat_test_data"


def shipped_blobs() -> list[tuple[str, int, bytes]]:
    """(file, serialization version, bytes) of every blob in jax's wheel."""
    found = []
    for path in sorted(DATA.glob("export_with_*.py")):
        for entry in runpy.run_path(str(path))["serializations"]:
            found.append((path.stem, entry["serialization_version"],
                          bytes(entry["exported_serialized"])))
    return found


SHIPPED = shipped_blobs()


# --------------------------------------------------------------------------
# Comparing a record with what jax.export.deserialize gives
# --------------------------------------------------------------------------

def dtype_name(dtype: Any) -> str:
    return "float0" if dtype == jax_dtypes.float0 else str(dtype)


def tree_spec_of(treedef: Any) -> TreeSpec:
    """The TreeSpec that jax's writer would write for a PyTreeDef."""
    node_data = treedef.node_data()
    children = tuple(tree_spec_of(c) for c in treedef.children())
    if node_data is None:
        return TreeSpec.leaf()
    node_type, aux = node_data
    simple = {type(None): TreeKind.NONE, tuple: TreeKind.TUPLE, list: TreeKind.LIST}
    if node_type in simple:
        return TreeSpec(simple[node_type], children)
    if node_type is dict:
        return TreeSpec(TreeKind.DICT, children, tuple(aux))
    name, serialize_aux = _export.serialization_registry[node_type]
    return TreeSpec(TreeKind.CUSTOM, children, (), name, bytes(serialize_aux(aux)))


def axes_of(entry: Any) -> tuple[str, ...]:
    if entry is None:
        return ()
    return (entry,) if isinstance(entry, str) else tuple(entry)


def assert_same_sharding(mine: Any, named: Any, hlo: Any) -> None:
    if mine is None:
        assert named is None
        return
    if isinstance(mine, HloShardingRecord):
        proto = xla_client.OpSharding()
        proto.ParseFromString(mine.proto)
        assert named is None
        assert xla_client.HloSharding.from_proto(proto) == hlo
        return
    assert isinstance(mine, NamedShardingRecord)
    mesh = named.mesh
    assert mine.mesh.axis_names == tuple(mesh.axis_names)
    assert mine.mesh.axis_sizes == tuple(mesh.axis_sizes)
    assert tuple(t.value for t in mine.mesh.axis_types) == tuple(
        t.name for t in mesh.axis_types)
    device = mesh.abstract_device
    if device is None:
        assert mine.mesh.abstract_device is None
    else:
        assert mine.mesh.abstract_device is not None
        assert (mine.mesh.abstract_device.device_kind, mine.mesh.abstract_device.num_cores,
                mine.mesh.abstract_device.platform) == (
                    device.device_kind, device.num_cores, device.platform)
    assert mine.spec.partitions == tuple(axes_of(e) for e in named.spec)
    assert set(mine.spec.reduced) == set(named.spec.reduced)
    assert set(mine.spec.unreduced) == set(named.spec.unreduced)
    assert mine.memory_kind == named.memory_kind


def assert_same_fields(rec: ArtifactRecord, exp: Any) -> None:
    """Every field of ``rec`` equals the same field of jax's Exported ``exp``."""
    assert rec.function_name == exp.fun_name
    assert rec.in_tree == tree_spec_of(exp.in_tree)
    assert rec.out_tree == tree_spec_of(exp.out_tree)
    for mine, theirs in ((rec.in_avals, exp.in_avals), (rec.out_avals, exp.out_avals)):
        # Before generation 13 (jax 0.12.1) the bytes hold no weak types: every aval reads strong.
        assert [(a.shape, a.dtype.value, a.memory_space.name, a.weak_type) for a in mine] == [
            (tuple(str(d) for d in a.shape), dtype_name(a.dtype),
             a.memory_space.name.upper(), WEAK_WHEEL and bool(a.weak_type)) for a in theirs]
    for mine_s, named, hlo in (
            (rec.in_shardings, exp._in_named_shardings, exp.in_shardings_hlo),
            (rec.out_shardings, exp._out_named_shardings, exp.out_shardings_hlo)):
        assert len(mine_s) == len(named) == len(hlo)
        if NEW_WHEEL:  # jax 0.11.2 and later leave in_shardings_hlo None: compare the named ones
            hlo = tuple(None if n is None else n._to_xla_hlo_sharding(len(a.shape))
                        for n, a in zip(named, exp.in_avals if mine_s is rec.in_shardings else exp.out_avals))
        for m, n, h in zip(mine_s, named, hlo):
            assert_same_sharding(m, n, h)
    # JAX 0.11.2 dropped `_has_named_shardings` with its reading of HLO shardings.
    assert rec.uses_hlo_shardings == (not getattr(exp, "_has_named_shardings", True))
    assert rec.nr_devices == exp.nr_devices
    assert rec.platforms == exp.platforms
    assert [e.type_name for e in rec.ordered_effects] == [
        str(type(e)) for e in exp.ordered_effects]
    assert [e.type_name for e in rec.unordered_effects] == [
        str(type(e)) for e in exp.unordered_effects]
    assert [str(c) for c in rec.disabled_checks] == [
        str(c) for c in exp.disabled_safety_checks]
    assert rec.mlir_module_serialized == exp.mlir_module_serialized
    assert rec.calling_convention_version == exp.calling_convention_version
    assert rec.module_kept_var_idx == tuple(exp.module_kept_var_idx)
    assert rec.uses_global_constants == exp.uses_global_constants
    if rec.vjp is not None:
        assert exp.has_vjp()
        assert_same_fields(rec.vjp, exp.vjp())


def wire_version(blob: bytes) -> int:
    version: int = jax_fb.Exported.GetRootAsExported(bytearray(blob), 0).SerializationVersion()
    return version


# --------------------------------------------------------------------------
# The 17 blobs of jax's wheel
# --------------------------------------------------------------------------

NEW_WHEEL = tuple(int(p) for p in jax.__version__.split(".")[:3]) >= (0, 11, 2)
#: jax 0.12.1 and later write generation 13, with the avals' weak types.
WEAK_WHEEL = tuple(int(p) for p in jax.__version__.split(".")[:3]) >= (0, 12, 1)


def test_the_wheel_ships_the_blobs_of_its_generations() -> None:
    if NEW_WHEEL:  # generation 12 added, 4 and 5 (HLO shardings) dropped
        assert len(SHIPPED) == 16
        assert {version for _, version, _ in SHIPPED} == {6, 8, 9, 10, 11, 12}
    else:
        assert len(SHIPPED) == 17
        assert {version for _, version, _ in SHIPPED} == {4, 5, 6, 8, 9, 10, 11}


@pytest.mark.parametrize(("stem", "version", "blob"), SHIPPED,
                         ids=[f"{s}-v{v}" for s, v, _ in SHIPPED])
def test_shipped_blob_decodes_to_the_fields_jax_deserializes(
        stem: str, version: int, blob: bytes) -> None:
    rec = decode_artifact(blob)
    assert_same_fields(rec, export.deserialize(bytearray(blob)))
    assert rec.serialization_version == wire_version(blob)
    assert rec.uses_hlo_shardings == (version <= 5)


@pytest.mark.parametrize(("stem", "version", "blob"), SHIPPED,
                         ids=[f"{s}-v{v}" for s, v, _ in SHIPPED])
def test_shipped_blob_reencodes_to_bytes_jax_reads_the_same(
        stem: str, version: int, blob: bytes) -> None:
    rec = decode_artifact(blob)
    again = encode_artifact(rec)
    assert_same_fields(rec, export.deserialize(again))
    written = rec if rec.jax_version is not None else dataclasses.replace(rec, serialization_version=3)
    assert decode_artifact(again) == written
    if version in (11, 12, 13):  # the generations jax 0.10.2, 0.11.2-0.12.0.1 and 0.12.1 write
        assert bytes(again) == blob


def test_memory_kinds_and_abstract_devices_of_shipped_blobs_are_read() -> None:
    by_key = {(s, v): decode_artifact(b) for s, v, b in SHIPPED}
    host = by_key[("export_with_memory_space", 11)].in_shardings[0]
    assert isinstance(host, NamedShardingRecord) and host.memory_kind == "pinned_host"
    assert str(by_key[("export_with_memory_space", 11)].in_avals[0]) == "float32<host>[2,3]"
    # v8 wrote no AbstractDevice.platform: it is inferred from the device kind.
    v8 = by_key[("export_with_specified_sharding", 8)].in_shardings[0]
    assert isinstance(v8, NamedShardingRecord) and v8.mesh.abstract_device is not None
    assert v8.mesh.abstract_device.platform == "cpu"
    meshes = by_key[("export_with_multiple_meshes", 11)]
    assert {s.mesh.axis_names for s in meshes.in_shardings
            if isinstance(s, NamedShardingRecord)} == {("x1", "x2"), ("y2", "y1")}


# --------------------------------------------------------------------------
# Functions exported by jax.export now
# --------------------------------------------------------------------------

class Point(NamedTuple):
    x: Any
    y: Any


export.register_namedtuple_serialization(Point, serialized_name="tests.adapters.Point")


class Case(NamedTuple):
    name: str
    fun: Callable[..., Any]
    args: tuple[Any, ...]
    kwargs: dict[str, Any] = {}
    platforms: tuple[str, ...] | None = None
    vjp_order: int = 0
    devices: int = 1
    disabled: tuple[Any, ...] = ()

    def exported(self) -> Any:
        kw: dict[str, Any] = {}
        if self.platforms is not None:
            kw["platforms"] = self.platforms
        if self.disabled:
            kw["disabled_checks"] = list(self.disabled)
        sharded = self.devices > 1
        specs = jax.tree.map(lambda a: jax.ShapeDtypeStruct(
            a.shape, a.dtype, sharding=a.sharding if sharded else None), (self.args, self.kwargs))
        jitted: Any = self.fun if hasattr(self.fun, "lower") else jax.jit(self.fun)
        return export.export(jitted, **kw)(*specs[0], **specs[1])


def f32(*shape: int) -> jax.Array:
    return jnp.arange(np.prod(shape, dtype=int), dtype=jnp.float32).reshape(shape) / 7


def symbolic_cases() -> list[tuple[str, Callable[..., Any], tuple[Any, ...], tuple[Any, ...]]]:
    """(name, f, symbolic specs, concrete args)."""
    a, b = export.symbolic_shape("a, b")
    return [
        ("symbolic_batch", lambda x: jnp.sin(x) * 2,
         (jax.ShapeDtypeStruct((a, 4), jnp.float32),), (f32(3, 4),)),
        ("symbolic_concat", lambda x, y: jnp.concatenate([x, y, x]),
         (jax.ShapeDtypeStruct((a,), jnp.float32), jax.ShapeDtypeStruct((b,), jnp.float32)),
         (f32(3), f32(5))),
        ("symbolic_reshape", lambda x: x.reshape((-1,)),
         (jax.ShapeDtypeStruct((a, 2 * b + 1), jnp.int32),),
         (jnp.arange(14, dtype=jnp.int32).reshape(2, 7),)),
    ]


def sharded_case(name: str, explicit: bool) -> Case:
    axis_types = (AxisType.Explicit,) if explicit else (AxisType.Auto,)
    mesh = jax.make_mesh((2,), ("x",), axis_types=axis_types)
    rows, repl = NamedSharding(mesh, P("x", None)), NamedSharding(mesh, P())
    a = jax.device_put(f32(8, 4), rows)
    c = jax.device_put(f32(8, 4), repl)
    fun = jax.jit(lambda a, c: (a + c, c * 2),
                  in_shardings=(rows, repl), out_shardings=(repl, rows))
    return Case(name, fun, (a, c), devices=2)


CASES = [
    Case("sin", jnp.sin, (f32(4),)),
    Case("multi_platform", lambda x: jnp.cos(x) + 1, (f32(2, 3),),
         platforms=("cpu", "cuda", "tpu")),
    Case("pytrees", lambda t, l, d, n: {"b": [t[0], l[1]], "a": (d["z"] * 2, None), "n": n},
         ((f32(2), f32(3)), [f32(1), f32(4)], {"z": f32(2), "a": f32(5)}, None)),
    Case("ordered_dict", lambda od: collections.OrderedDict(z=od["b"] + 1, a=od["a"]),
         (collections.OrderedDict(b=f32(2), a=f32(3)),)),
    Case("namedtuple", lambda p: Point(p.y, p.x * 3), (Point(f32(2), f32(3)),)),
    Case("kwargs", lambda x, *, scale, bias: x * scale + bias, (f32(3),),
         {"scale": f32(3), "bias": f32(1)}),
    Case("weak_output", lambda x: (x, 1.0, x.sum()), (f32(),)),
    Case("dtypes", lambda a, b, c, d: (a.astype(jnp.float32), b, c + 1, d),
         (f32(2).astype(jnp.bfloat16), jnp.array([1, -2], jnp.int4),
          jnp.array([True, False]), jnp.ones((2,), jnp.float8_e4m3fn))),
    Case("vjp_order_1", lambda x, i: jnp.sin(x) * i, (f32(3), jnp.int32(2)), vjp_order=1),
    Case("vjp_order_2", lambda x: jnp.sum(jnp.tanh(x) ** 2), (f32(2, 2),), vjp_order=2),
    Case("prng_key", lambda k: jax.random.uniform(k, (3,)), (jax.random.key(0),)),
    Case("disabled_checks", lambda x: x * 2, (f32(2),),
         disabled=(export.DisabledSafetyCheck.platform(),
                   export.DisabledSafetyCheck.custom_call("my_target"))),
    Case("unused_argument", lambda x, y: x + 1, (f32(2), f32(3))),
]


def _all_cases() -> Iterator[Any]:
    for case in CASES:
        yield pytest.param(case, id=case.name)
    for name in ("sharded_auto", "sharded_explicit"):
        yield pytest.param(name, id=name, marks=pytest.mark.skipif(
            jax.device_count() < 2, reason="needs 2 CPU devices"))
    for name, *_ in symbolic_cases():
        yield pytest.param(name, id=name)


def all_cases() -> list[Any]:
    return list(_all_cases())


_EXPORTS: dict[str, tuple[Any, bytes, tuple[Any, ...], dict[str, Any]]] = {}


def exported(case: Case | str) -> tuple[Any, bytes, tuple[Any, ...], dict[str, Any]]:
    """(jax Exported, its bytes, concrete args, kwargs), cached per case."""
    key = case if isinstance(case, str) else case.name
    if key not in _EXPORTS:
        if isinstance(case, str) and case.startswith("sharded"):
            case = sharded_case(case, explicit=case.endswith("explicit"))
        if isinstance(case, str):
            _, fun, specs, args = next(c for c in symbolic_cases() if c[0] == case)
            exp = export.export(jax.jit(fun))(*specs)
            _EXPORTS[key] = (exp, bytes(exp.serialize()), args, {})
        else:
            exp = case.exported()
            _EXPORTS[key] = (exp, bytes(exp.serialize(vjp_order=case.vjp_order)),
                             case.args, case.kwargs)
    return _EXPORTS[key]


@pytest.mark.parametrize("case", all_cases())
def test_reencoding_a_jax_export_gives_the_same_bytes(case: Case | str) -> None:
    _, blob, _, _ = exported(case)
    assert bytes(encode_artifact(decode_artifact(blob))) == blob


@pytest.mark.parametrize("case", all_cases())
def test_decoded_fields_equal_jax_deserialize(case: Case | str) -> None:
    exp, blob, _, _ = exported(case)
    rec = decode_artifact(blob)
    assert_same_fields(rec, export.deserialize(bytearray(blob)))
    if rec.vjp is None:  # the original's vjp() would lower the VJP once more
        assert_same_fields(rec, exp)
    # jax 0.12.1 writes generation 13, 0.11.2 to 0.12.0.1 12, each with its version; older ones 3.
    assert (rec.serialization_version, rec.jax_version) == (
        (13 if WEAK_WHEEL else 12, jax.__version__) if NEW_WHEEL else (3, None))


@pytest.mark.parametrize("case", all_cases())
def test_jax_calls_the_reencoded_bytes_with_the_same_results(case: Case | str) -> None:
    exp, blob, args, kwargs = exported(case)
    if "cpu" not in exp.platforms:
        pytest.skip("not exported for cpu")
    again = export.deserialize(encode_artifact(decode_artifact(blob)))
    expected = exp.call(*args, **kwargs)
    got = again.call(*args, **kwargs)
    assert str(jax.tree.structure(got)) == str(jax.tree.structure(expected))
    for g, e in zip(jax.tree.leaves(got), jax.tree.leaves(expected)):
        if jnp.issubdtype(g.dtype, jax.dtypes.prng_key):
            g, e = jax.random.key_data(g), jax.random.key_data(e)
        np.testing.assert_array_equal(np.asarray(g), np.asarray(e))


def test_gradients_flow_through_the_reencoded_vjps() -> None:
    exp, blob, args, _ = exported(next(c for c in CASES if c.name == "vjp_order_2"))
    again = export.deserialize(encode_artifact(decode_artifact(blob)))

    def second_order(call: Callable[[jax.Array], jax.Array]) -> Any:
        return jax.grad(lambda x: jnp.sum(jax.grad(call)(x)))(args[0])

    np.testing.assert_allclose(second_order(again.call), second_order(exp.call), rtol=1e-6)


def test_weak_and_strong_scalars_keep_their_two_unique_entries() -> None:
    _, blob, _, _ = exported(next(c for c in CASES if c.name == "weak_output"))
    rec = decode_artifact(blob)
    # Generation 13 tells them apart by their weak type, older ones by the order of the entries.
    assert [(a.weak_type, a.variant) for a in rec.out_avals] == (
        [(False, 0), (True, 0), (False, 0)] if WEAK_WHEEL else [(False, 0), (False, 1), (False, 0)])
    assert rec.out_avals[0] != rec.out_avals[1]
    assert str(rec.out_avals[0]) == str(rec.out_avals[1]) == "float32[]"


def test_key_float0_and_narrow_dtypes_are_decoded() -> None:
    key_rec = decode_artifact(exported(next(c for c in CASES if c.name == "prng_key"))[1])
    assert key_rec.in_avals[0].dtype is DType.KEY_FRY
    vjp_rec = decode_artifact(exported(next(c for c in CASES if c.name == "vjp_order_1"))[1])
    assert vjp_rec.vjp is not None
    assert DType.FLOAT0 in {a.dtype for a in vjp_rec.vjp.out_avals}
    dtypes_rec = decode_artifact(exported(next(c for c in CASES if c.name == "dtypes"))[1])
    assert [a.dtype for a in dtypes_rec.in_avals] == [
        DType.BFLOAT16, DType.INT4, DType.BOOL, DType.FLOAT8_E4M3FN]


def test_the_wire_codes_are_jax_schema_codes() -> None:
    assert {d.value: W.DTYPE_CODES[d] for d in DType} == {
        dtype_name(dt): code for dt, code in _dtype_codes().items()}
    assert len(W.DTYPE_CODES) == 30
    for kind, code in W.TREE_KIND_CODES.items():
        assert getattr(jax_fb.PyTreeDefKind, kind.value) == code
    for space, code in W.MEMORY_SPACE_CODES.items():
        assert getattr(jax_fb.MemorySpace, space.name.capitalize()) == code
    for axis_type, code in W.AXIS_TYPE_CODES.items():
        assert getattr(jax_fb.AxisType, axis_type.value) == code
    for check, code in W.SAFETY_CHECK_CODES.items():
        assert getattr(jax_fb.DisabledSafetyCheckKind, check.value) == code


def _dtype_codes() -> dict[Any, int]:
    from jax._src.export import serialization
    jax.random.key(0, impl="rbg"), jax.random.key(0, impl="unsafe_rbg")  # registers keys
    codes: dict[Any, int] = serialization._dtype_to_dtype_kind
    return codes


def test_explicit_sharding_avals_keep_jax_table_of_unique_avals() -> None:
    if jax.device_count() < 2:
        pytest.skip("needs 2 CPU devices")
    rec = decode_artifact(exported("sharded_explicit")[1])
    assert [a.variant for a in rec.in_avals + rec.out_avals] == [0, 1, 1, 0]


def synthetic_record(hlo: bool) -> ArtifactRecord:
    """Every kind of field jax 0.10.2 reads, with effects jax knows by name."""
    from jax._src import debugging
    device = AbstractDeviceRecord("TPU v5 lite", 1, "tpu")
    mesh = AbstractMeshRecord((2, 2), ("x", "y"), (WireAxisType.AUTO, WireAxisType.EXPLICIT), device)
    rows = NamedShardingRecord(mesh, PartitionSpecRecord((("x",), ())), "device")
    cols = NamedShardingRecord(mesh, PartitionSpecRecord(((), ("x", "y"))), None)
    proto = xla_client.OpSharding()
    proto.type = xla_client.OpSharding.Type.REPLICATED
    replicated = HloShardingRecord(proto.SerializeToString())
    avals = (AvalRecord(("8", "b"), DType.FLOAT32), AvalRecord(("4", "4"), DType.INT8))
    return ArtifactRecord(
        function_name="synthetic",
        in_tree=TreeSpec.of_tuple(TreeSpec.of_tuple(TreeSpec.leaf(), TreeSpec.leaf()),
                                  TreeSpec.of_dict({})),
        in_avals=avals,
        out_tree=TreeSpec.of_list(TreeSpec.leaf()),
        out_avals=avals[:1],
        in_shardings=(replicated, None) if hlo else (rows, cols),
        out_shardings=(replicated,) if hlo else (rows,),
        nr_devices=4,
        platforms=("tpu", "cuda"),
        ordered_effects=(EffectRecord(str(debugging.OrderedDebugEffect)),),
        unordered_effects=(EffectRecord(str(debugging.DebugEffect)),),
        disabled_checks=(DisabledSafetyCheck.platform(), DisabledSafetyCheck.custom_call("t")),
        mlir_module_serialized=exported(CASES[0])[0].mlir_module_serialized,
        calling_convention_version=9,
        module_kept_var_idx=(1,),
        uses_global_constants=True,
    )


@pytest.mark.parametrize("hlo", [False, True], ids=["named", "hlo"])
def test_jax_reads_every_field_jaxport_writes(hlo: bool) -> None:
    rec = synthetic_record(hlo)
    if hlo and NEW_WHEEL:  # jax 0.11.2 and later refuse HLO shardings (older than 6 months)
        with pytest.raises(ValueError, match="6-month"):
            export.deserialize(encode_artifact(rec))
        return
    assert_same_fields(rec, export.deserialize(encode_artifact(rec)))


def test_decoding_imports_neither_jax_nor_numpy_nor_flatbuffers() -> None:
    script = (
        "import sys, runpy\n"
        "from jaxport.adapters.flatbuffers.codec import decode_artifact\n"
        f"blob = runpy.run_path({str(DATA / 'export_with_multiple_meshes.py')!r})"
        "['serializations'][-1]['exported_serialized']\n"
        "assert decode_artifact(blob).function_name == 'f'\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('jax', 'jaxlib', 'numpy', 'flatbuffers')))\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("kind", ["bytearray", "memoryview"])
def test_decoding_reads_the_callers_buffer_in_place_and_lets_it_go(kind: str) -> None:
    # Unsealed bytes are read without a copy of the whole buffer; afterwards the
    # caller's bytearray can be resized again, also after a refused artifact.
    _, blob, _, _ = exported(CASES[0])
    buffer = bytearray(blob)
    given: bytearray | memoryview = buffer if kind == "bytearray" else memoryview(buffer)
    record = decode_artifact(given)
    assert type(record.mlir_module_serialized) is bytes
    assert bytes(encode_artifact(record)) == blob
    buffer[-40:] = b"\xff" * 40  # damage the last tables: refused
    with pytest.raises(ArtifactError):
        decode_artifact(given)
    if isinstance(given, memoryview):
        given.release()  # the caller's own view
    buffer += b"\0" * 8  # raises BufferError while a view of the buffer is alive
    buffer[:] = b""
    assert record.mlir_module_serialized == exported(CASES[0])[0].mlir_module_serialized


def test_a_buffer_of_wider_items_is_read_as_its_bytes() -> None:
    _, blob, _, _ = exported(CASES[0])
    padded = blob + b"\0" * (-len(blob) % 4)
    as_words = memoryview(bytearray(padded)).cast("I")
    assert decode_artifact(as_words) == decode_artifact(padded)


REWRITTEN: dict[str, Callable[[], ArtifactRecord]] = {
    "rich, VJP of order 3": lambda: rich_record(3),
    "HLO shardings": hlo_record,
    "odd-sized module": lambda: dataclasses.replace(rich_record(1), mlir_module_serialized=MODULE + b"xyz"),
    "module larger than the first buffer": lambda: dataclasses.replace(
        rich_record(1), mlir_module_serialized=MODULE + bytes(300_001)),
    "with a JAX version": lambda: dataclasses.replace(rich_record(1), jax_version="0.12.0"),
}


@pytest.mark.parametrize("make", REWRITTEN.values(), ids=REWRITTEN.keys())
def test_records_using_every_field_are_rewritten_to_their_own_bytes(make: Callable[[], ArtifactRecord]) -> None:
    blob = encode_artifact(make())
    assert encode_artifact(decode_artifact(blob)) == blob


def test_a_number_out_of_range_is_a_type_error_as_jax_export_raises() -> None:
    with pytest.raises(TypeError, match="uint16"):
        encode_artifact(dataclasses.replace(rich_record(0), calling_convention_version=1 << 16))
