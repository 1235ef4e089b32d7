"""Artifacts: serialize, deserialize and inspect, jaxport next to jax.export.

Groups (kind ``"artifact"``, shown by the report with jaxport / jax.export):

* ``serialize``: ``exp.serialize()`` of the same function exported both ways;
* ``deserialize``: ``jaxport.deserialize(blob)`` and ``jax.export.deserialize(blob)``
  of the same bytes;
* ``inspect in a fresh process``: ``python -c 'import jaxport; jaxport.inspect(path)'``
  against ``python -c 'import jax; jax.export.deserialize(...)'``, the way a
  registry or a CI check without JAX in memory reads an artifact's signature.
  Its floor is the interpreter's start-up, which both sides pay. Measured on
  2026-12-01 on the 2-core machine, busy with other work (jaxport
  byte-compiled as ``pip install`` and ``make install`` leave it):
  ``python -c pass`` 10 ms, ``import jaxport`` 18 ms (``typing``), the whole
  inspect probe 33 ms at best, against 360 to 560 ms at best for jax.export's
  probe; by this group's medians 0.05x to 0.09x. About 18 ms of the probe are
  the standard library that the domain's records use (``typing``,
  ``dataclasses`` with the ``inspect``, ``ast`` and ``tokenize`` it imports,
  ``enum``) and building the artifact format's dataclasses and enums; with
  home-made stand-ins for them (until 2026-12-01) the probe took 14 ms, 0.03x
  to 0.04x. Without byte-compiled files (``PYTHONDONTWRITEBYTECODE=1`` in a
  source checkout) each start also compiles jaxport's modules on that path,
  10 to 20 ms more.

The model is the MLP of about 2,000 StableHLO operations with a symbolic
batch, exported with its VJP (``vjp_order=1``), so each artifact holds two
modules and symbolic shapes to parse.

Where ``deserialize`` stands (2026-11-30, interleaved in one process, 150
rounds of 5 calls, CPU time): jaxport reads and checks every table of the
VJP chain before it returns (a damaged VJP table is refused by
``deserialize``, not by a later ``vjp()``); ``jax.export`` decodes the VJP
table only when ``vjp()`` is first called. For this artifact jaxport takes
355 us (min) / 407-445 us (median) against 295 / 324-427 us (before the
reader and codec work of 2026-11-30: 460 / 550 us); the same function
serialized without its VJP (``vjp_order=0``) takes 225 / 282 us against
293 / 341 us (0.77x; before: 308 / 427 us). The VJP table's decoding and
checks, about 125 us, are the difference: on a quiet machine this group's
median ratio is about 1.2x, under load it wanders between 0.9x and 1.3x.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

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
    # (about 1.6 s here) where jaxport caches it, which would swamp the codec.
    label(group="serialize (MLP 2k ops)", kind="artifact", role=role, baseline="-", chunk=chunk)
    exp = artifacts.ours if role == "jaxport" else artifacts.theirs
    benchmark.pedantic(lambda: exp.serialize(), rounds=20, iterations=5, warmup_rounds=1)


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("chunk", range(1, CHUNKS + 1), ids=lambda c: f"chunk{c}")
def test_deserialize(benchmark: BenchmarkFixture, label: Label, artifacts: Artifacts,
                     chunk: int, role: Role) -> None:
    label(group="deserialize (MLP 2k ops, vjp_order=1)", kind="artifact", role=role,
          baseline="-", chunk=chunk)
    read = jaxport.deserialize if role == "jaxport" else jax_export.deserialize
    blob = bytearray(artifacts.blob)
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
