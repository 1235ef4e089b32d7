"""The versions that wrote an artifact or a bundle: in the trailer's extension and in the manifest."""

from __future__ import annotations

import json

import pytest

from jaxport.domain.artifact.record import TreeSpec
from jaxport.domain.bundle.manifest import FunctionEntry, Manifest
from jaxport.domain.artifact.integrity import Extension, seal, unseal
from jaxport.domain.artifact.producer import Producer

PRODUCER = Producer(jaxport="0.1.0", jax="0.10.2", jaxlib="0.10.2", stablehlo="1.15.0")


def test_the_trailer_records_the_producer_and_reads_it_back() -> None:
    sealed = seal(b"FLATBUFFER", Extension((("n >= 1",),), PRODUCER))
    assert unseal(sealed).extension == Extension((("n >= 1",),), PRODUCER)
    assert unseal(seal(b"FLATBUFFER", Extension())).extension == Extension()


def test_readers_skip_keys_they_do_not_know_in_the_extension_and_in_the_producer() -> None:
    doc = {"constraints": [[]], "producer": {**PRODUCER.to_json(), "cuda": "12"}, "later": 1}
    assert Extension.from_bytes(json.dumps(doc).encode()) == Extension(((),), PRODUCER)


@pytest.mark.parametrize("producer", [[], {"jaxport": "0.1.0"}, {**PRODUCER.to_json(), "jax": 10},
                                      {**PRODUCER.to_json(), "jaxlib": "x" * 200}])
def test_a_producer_this_jaxport_cannot_read_is_left_out_and_the_artifact_still_reads(producer: object) -> None:
    doc = {"constraints": [["n >= 1"]], "producer": producer}
    assert Extension.from_bytes(json.dumps(doc).encode()) == Extension((("n >= 1",),))


def test_the_manifest_records_the_producer_and_older_manifests_have_none() -> None:
    m = Manifest((FunctionEntry("f", "f.jaxport"),), TreeSpec.of_dict({}), (), producer=PRODUCER)
    doc = json.loads(m.to_json())
    assert doc["producer"] == {"jaxport": "0.1.0", "jax": "0.10.2", "jaxlib": "0.10.2", "stablehlo": "1.15.0"}
    assert Manifest.from_json(m.to_json()) == m
    del doc["producer"]
    assert Manifest.from_json(json.dumps(doc).encode()).producer is None
