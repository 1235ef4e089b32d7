"""Compat: the serialized artifacts that ship in jax 0.10.2's wheel.

``jax/_src/internal_test_util/export_back_compat_test_data/export_with_*.py``
hold 17 whole ``Exported.serialize()`` blobs, written by jax.export at
serialization versions 4 to 11 (HLO-sharding protos, named shardings over
abstract meshes, memory spaces, several meshes). jaxport must read each with
the same fields that ``jax.export.deserialize`` gives.

All 17 were exported for 2 devices, and the memory-space ones for tpu, cuda
and rocm only: none is a CPU, 1-device artifact, so all are compared field by
field. The 10 CPU blobs with specified or unspecified shardings are also
called, as jax's own test calls them, in a subprocess that forces exactly 2
CPU devices (whatever this process has); the multiple-meshes blobs need
arguments placed on two different meshes and stay field-by-field.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from typing import Any

import jax
import pytest

import jaxport
from jaxport.adapters.flatbuffers.codec import decode_artifact, encode_artifact
from jaxport.domain.artifact.sharding import HloShardingRecord

DATA = "jax._src.internal_test_util.export_back_compat_test_data"
MODULES = ("export_with_specified_sharding", "export_with_unspecified_sharding",
           "export_with_memory_space", "export_with_multiple_meshes")
CALLED_ON_TWO_CPUS = ("export_with_specified_sharding", "export_with_unspecified_sharding")


def wheel_blobs() -> list[tuple[str, int, bytes]]:
    blobs = []
    for name in MODULES:
        for entry in importlib.import_module(f"{DATA}.{name}").serializations:
            blobs.append((name, entry["serialization_version"], bytes(entry["exported_serialized"])))
    return blobs


BLOBS = wheel_blobs()
BLOB_PARAMS = [pytest.param(blob, id=f"{name}-v{version}") for name, version, blob in BLOBS]


def test_the_wheel_ships_seventeen_blobs() -> None:
    # jax 0.11.2 and later: 16 (generation 12 added, the HLO-sharding generations 4 and 5 dropped).
    assert len(BLOBS) == (16 if tuple(int(p) for p in jax.__version__.split(".")[:3]) >= (0, 11, 2) else 17)
    assert {name for name, _, _ in BLOBS} == set(MODULES)


def aval_text(aval: Any) -> tuple[str, str, str, str]:
    return str(aval), str(aval.dtype), str(aval.memory_space), str(aval.sharding)


def assert_same_shardings(ours: tuple[Any, ...], named: tuple[Any, ...], hlo: tuple[Any, ...]) -> None:
    """jaxport keeps named shardings, or the HLO-sharding protos of artifacts older than 2026-01-15."""
    assert len(ours) == len(named) == len(hlo)
    for mine, their_named, their_hlo in zip(ours, named, hlo):
        if isinstance(mine, HloShardingRecord):
            assert their_named is None
            assert mine.proto == their_hlo.to_proto().SerializeToString()
        elif mine is None:
            assert their_named is None and their_hlo is None
        else:
            assert str(mine) == str(their_named)


@pytest.mark.parametrize("blob", BLOB_PARAMS)
def test_a_wheel_blob_decodes_to_the_fields_jax_export_decodes(blob: bytes) -> None:
    ours, theirs = jaxport.deserialize(blob), jax.export.deserialize(bytearray(blob))
    assert ours.fun_name == theirs.fun_name
    assert ours.in_tree == theirs.in_tree and ours.out_tree == theirs.out_tree
    assert [aval_text(a) for a in ours.in_avals] == [aval_text(a) for a in theirs.in_avals]
    assert [aval_text(a) for a in ours.out_avals] == [aval_text(a) for a in theirs.out_avals]
    assert ours.in_avals == theirs.in_avals and ours.out_avals == theirs.out_avals
    assert ours.platforms == theirs.platforms
    assert ours.nr_devices == theirs.nr_devices == 2
    assert ([str(type(e)) for e in ours.ordered_effects + ours.unordered_effects]
            == [str(type(e)) for e in (*theirs.ordered_effects, *theirs.unordered_effects)])
    assert [str(c) for c in ours.disabled_safety_checks] == [str(c) for c in theirs.disabled_safety_checks]
    assert ours.mlir_module_serialized == theirs.mlir_module_serialized
    assert ours.module_kept_var_idx == theirs.module_kept_var_idx
    assert ours.uses_global_constants == theirs.uses_global_constants
    assert ours.calling_convention_version == theirs.calling_convention_version
    assert_same_shardings(ours.in_shardings, theirs._in_named_shardings, theirs.in_shardings_hlo)
    assert_same_shardings(ours.out_shardings, theirs._out_named_shardings, theirs.out_shardings_hlo)
    assert ours.in_shardings_hlo == tuple(theirs.in_shardings_hlo)
    assert ours.out_shardings_hlo == tuple(theirs.out_shardings_hlo)


@pytest.mark.parametrize("blob", BLOB_PARAMS)
def test_a_wheel_blob_inspects_without_jax_to_the_same_signature(blob: bytes) -> None:
    info, theirs = jaxport.inspect(blob), jax.export.deserialize(bytearray(blob))
    assert info.fun_name == theirs.fun_name
    assert info.platforms == theirs.platforms and info.nr_devices == theirs.nr_devices
    for aval in (*theirs.in_avals, *theirs.out_avals):
        assert str(aval).replace(", ", ",") in info.signature
    assert info.module_size == len(theirs.mlir_module_serialized)


# Runs in a fresh interpreter, because the device count is fixed when JAX starts.
CALL_ON_TWO_CPUS = r"""
import importlib, json, sys
import jax, numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P
import jaxport

mesh = jax.make_mesh((2,), ("x",))
a = np.arange(16 * 4, dtype=np.float32).reshape((16, 4))
results = []
for name in sys.argv[1:]:
    for entry in importlib.import_module(f"{DATA}.{name}").serializations:
        blob = entry["exported_serialized"]
        with jax.set_mesh(mesh):
            x = jax.device_put(a, NamedSharding(mesh, P("x", None)))
            outs = [system.deserialize(blob).call(x) for system in (jaxport, jax.export)]
        results.append(dict(
            blob=f"{name}-v{entry['serialization_version']}",
            equal=bool(np.array_equal(outs[0], outs[1])), doubled=bool(np.array_equal(outs[0], a * 2)),
            shards=[[str(s.index) for s in out.addressable_shards] for out in outs]))
print(json.dumps(results))
""".replace("{DATA}", DATA)


def test_the_cpu_blobs_called_on_two_devices_give_what_jax_export_gives() -> None:
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=2", JAX_PLATFORMS="cpu")
    done = subprocess.run([sys.executable, "-c", CALL_ON_TWO_CPUS, *CALLED_ON_TWO_CPUS],
                          capture_output=True, text=True, env=env, timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(results) == sum(name in CALLED_ON_TWO_CPUS for name, _, _ in BLOBS)  # 10; 8 on jax 0.11.2+
    for result in results:
        assert result["equal"] and result["doubled"], result["blob"]
        ours, theirs = result["shards"]
        assert ours == theirs and len(ours) == 2, result["blob"]


@pytest.mark.parametrize("blob", [p for p, (_, version, _) in zip(BLOB_PARAMS, BLOBS) if version >= 11])
def test_a_blob_of_the_newest_layouts_re_encodes_byte_for_byte(blob: bytes) -> None:
    """Versions 11 and 12 (the unique mesh and sharding tables, the abstract device's platform, the
    JAX version): the record re-encodes to the very bytes; older layouts re-encode to the newest."""
    assert bytes(encode_artifact(decode_artifact(blob))) == blob
