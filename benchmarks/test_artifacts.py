"""Artifacts: serialize, deserialize and inspect, jaxport next to jax.export.

The model is the MLP of about 2,000 StableHLO operations with a symbolic
batch, exported by both. The report shows, per group (kind ``"artifact"``),
the median of each and their ratio jaxport / jax.export (below 1: jaxport is
faster):

* ``serialize``: ``exp.serialize()`` (no VJP) of the same function exported
  both ways, in ``CHUNKS`` chunks per role in this process. jaxport's default
  output is sealed, so it also pays one SHA-256 of the bytes, which
  ``jax.export`` does not write;
* ``deserialize``: ``jaxport.deserialize(blob)`` and
  ``jax.export.deserialize(blob)`` of the same bytes, ``jax.export``'s
  serialization with ``vjp_order=1`` (two modules and symbolic shapes to
  parse), likewise in chunks, as a ``bytearray`` (what ``jax.export``'s
  signature asks for) and as ``bytes`` (what ``jaxport.load`` reads). From
  ``bytes`` both decode the VJP's table when ``vjp()`` is first called; a
  ``bytearray``, which its owner may change, jaxport reads whole before it
  returns (its VJP module copied out too), where ``jax.export`` keeps reading
  the caller's buffer;
* ``inspect in a fresh process``: ``python -c 'import jaxport;
  jaxport.inspect(path)'`` against ``python -c 'import jax;
  jax.export.deserialize(...)'``, each round a new interpreter, the way a
  registry or a CI check without JAX in memory reads an artifact's
  signature. The interpreter's start-up, which both pay, is the floor of
  this ratio; without byte-compiled files (``PYTHONDONTWRITEBYTECODE=1`` in a
  source checkout) each start also compiles the jaxport modules it imports.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import pytest
from jax import export as jax_export
from pytest_benchmark.fixture import BenchmarkFixture

import jaxport

from .conftest import PEERS, Label, Role
from .models import FEATURES, LAYERS_2K, MlpFactory

ROLES: tuple[Role, ...] = PEERS
CHUNKS = 3


@dataclass(frozen=True)
class Artifacts:
    """One function exported both ways, and its bytes on disk."""

    ours: jaxport.Exported
    theirs: jax_export.Exported
    blob: bytes
    path: Path


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory: pytest.TempPathFactory) -> Artifacts:
    f = jax.jit(MlpFactory.with_layers(LAYERS_2K).make())
    b, = jaxport.symbolic_shape("b")
    jb, = jax_export.symbolic_shape("b")
    ours = jaxport.export(f)(jax.ShapeDtypeStruct((b, FEATURES), jnp.float32))
    theirs = jax_export.export(f)(jax.ShapeDtypeStruct((jb, FEATURES), jnp.float32))
    blob = bytes(theirs.serialize(vjp_order=1))
    path = tmp_path_factory.mktemp("artifacts") / "mlp.jaxport"
    path.write_bytes(blob)
    return Artifacts(ours, theirs, blob, path)


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("chunk", range(1, CHUNKS + 1), ids=lambda c: f"chunk{c}")
def test_serialize(benchmark: BenchmarkFixture, label: Label, artifacts: Artifacts,
                   chunk: int, role: Role) -> None:
    # vjp_order=0: jax.export re-exports the VJP on every serialize(vjp_order=1)
    # where jaxport caches it, and that export would swamp the codec's time.
    label(group="serialize (MLP 2k ops)", kind="artifact", role=role, baseline="-", chunk=chunk)
    exp = artifacts.ours if role == "jaxport" else artifacts.theirs
    benchmark.pedantic(lambda: exp.serialize(), rounds=20, iterations=5, warmup_rounds=1)


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("chunk", range(1, CHUNKS + 1), ids=lambda c: f"chunk{c}")
@pytest.mark.parametrize("buffer", [bytearray, bytes], ids=["bytearray", "bytes"])
def test_deserialize(benchmark: BenchmarkFixture, label: Label, artifacts: Artifacts,
                     chunk: int, role: Role, buffer: type[bytes | bytearray]) -> None:
    suffix = "" if buffer is bytearray else ", bytes"
    label(group=f"deserialize (MLP 2k ops, vjp_order=1{suffix})", kind="artifact", role=role,
          baseline="-", chunk=chunk)
    read = jaxport.deserialize if role == "jaxport" else jax_export.deserialize
    blob: Any = buffer(artifacts.blob)  # jax.export.deserialize is typed for bytearray only
    benchmark.pedantic(lambda: read(blob), rounds=20, iterations=5, warmup_rounds=1)


PROBES = {
    "jaxport": "import sys, jaxport; jaxport.inspect(sys.argv[1])",
    "jax.export": "import sys, jax; jax.export.deserialize(bytearray(open(sys.argv[1], 'rb').read()))",
}


@pytest.mark.parametrize("role", ROLES)
def test_inspect_in_a_fresh_process(benchmark: BenchmarkFixture, label: Label,
                                    artifacts: Artifacts, role: Role) -> None:
    label(group="inspect in a fresh process", kind="artifact", role=role, baseline="-")
    command = [sys.executable, "-c", PROBES[role], str(artifacts.path)]
    benchmark.pedantic(lambda: subprocess.run(command, check=True), rounds=5, iterations=1,
                       warmup_rounds=1)
