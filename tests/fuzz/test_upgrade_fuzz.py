"""A bounded, seeded fuzz of ``jaxport upgrade``: mutated artifacts are renewed whole or refused by a
typed error, and a refusal writes nothing.

Seeds: a sealed artifact with its VJP, the same unsealed, and a sharded one as JAX 0.8.x
wrote it (HLO sharding protos, format version 3), sealed and not; the campaign's
mutations (:mod:`tests.fuzz.mutations`: bit flips, cuts, splices, interesting 32-bit
values...), half of those of sealed seeds applied to the flatbuffer and sealed again, so
that the digest passes and the decoder and the upgrade decide. 300 cases, the same
ones on every run.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import jax
import numpy as np
import pytest

import jaxport
from jaxport.adapters.flatbuffers.codec import decode_artifact
from jaxport.domain.artifact.integrity import Extension, is_sealed, seal, unseal
from jaxport.domain.errors import JaxportError
from tests.fuzz.mutations import mutate
from tests.helpers.upgrade_artifacts import hlo_era_bytes, sharded_export

SEED = 61
CASES = 300


@pytest.fixture(scope="module")
def seeds() -> list[bytes]:
    b, = jaxport.symbolic_shape("b")
    exp = jaxport.export(jax.jit(lambda a: jax.numpy.tanh(a).sum(axis=-1)))(jax.ShapeDtypeStruct((b, 3), np.float32))
    hlo = hlo_era_bytes(sharded_export().record)
    return [bytes(exp.serialize(vjp_order=1)), bytes(exp.serialize(vjp_order=1, integrity=False)),
            hlo, bytes(seal(hlo, Extension(((),))))]


def test_mutated_artifacts_are_renewed_whole_or_refused_by_type_with_nothing_written(
        seeds: list[bytes], tmp_path: Path) -> None:
    rng = random.Random(SEED)
    outcomes: dict[str, int] = {}
    for case in range(CASES):
        blob = seeds[case % len(seeds)]
        record = decode_artifact(blob)
        start = blob.index(record.mlir_module_serialized)
        span = (start, start + len(record.mlir_module_serialized))
        if is_sealed(blob) and case % 8 < 4:  # re-sealed: the digest passes, the decoder and the upgrade decide
            flat = bytes(unseal(blob).flatbuffer)
            extension = unseal(blob).extension
            assert extension is not None
            mutated = bytes(seal(mutate(flat, rng, seeds[1], span), extension))
        else:
            mutated = mutate(blob, rng, seeds[(case + 1) % len(seeds)], span)
        old, new = tmp_path / f"{case}.bin", tmp_path / f"{case}.jaxport"
        old.write_bytes(mutated)
        try:
            jaxport.upgrade(old, new)
        except JaxportError as exc:
            outcomes[type(exc).__name__] = outcomes.get(type(exc).__name__, 0) + 1
            assert not new.exists(), f"case {case}: {exc}"
        else:
            outcomes["renewed"] = outcomes.get("renewed", 0) + 1
            written = new.read_bytes()
            assert is_sealed(written)
            assert decode_artifact(written).signature == decode_artifact(mutated).signature, f"case {case}"
            new.unlink()
        old.unlink()
        assert os.listdir(tmp_path) == [], f"case {case} left {os.listdir(tmp_path)}"
    assert outcomes.get("ArtifactError", 0) > CASES // 2, outcomes  # most mutations break the bytes
