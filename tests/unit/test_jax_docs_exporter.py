"""A converted directory's calls cite JAX's pages where the JAX that exported its source cites them."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pytest

from jaxport.domain import jax_docs
from jaxport.domain.artifact import AvalRecord, DType, TreeSpec
from jaxport.domain.converted import ConvertedFunction, ConvertedManifest, Signature, Variant


@pytest.fixture
def restored() -> Iterator[None]:
    pages, follows = dataclasses.replace(jax_docs.PAGES), jax_docs._FOLLOWS_JAX
    yield
    jax_docs._cite(pages)
    jax_docs._FOLLOWS_JAX = follows


def test_without_jax_the_exporters_pages_are_cited(restored: None) -> None:
    jax_docs._FOLLOWS_JAX = False
    jax_docs.follow_exporter("0.12.0.1")
    assert jax_docs.PAGES.shape_poly == "https://docs.jax.dev/en/latest/501/shape-polymorphism.html"
    jax_docs.follow_exporter("0.11.2")
    assert jax_docs.PAGES.shape_poly == "https://docs.jax.dev/en/latest/export/shape_poly.html"


def test_with_jax_in_the_process_its_own_pages_stay(restored: None) -> None:
    jax_docs.follow_jax((0, 10, 2))
    jax_docs.follow_exporter("0.12.0.1")
    assert jax_docs.PAGES.export == "https://docs.jax.dev/en/latest/export/export.html"


def _manifest(jax_version: str | None) -> ConvertedManifest:
    aval = AvalRecord(("2",), DType.FLOAT32)
    tree = TreeSpec.of_tuple(TreeSpec.of_tuple(TreeSpec.leaf()), TreeSpec.of_dict({}))
    sig = Signature("f", tree, (aval,), TreeSpec.leaf(), (aval,))
    return ConvertedManifest("onnx", {}, (ConvertedFunction(sig, (Variant("f.onnx"),)),), jax_version=jax_version)


def test_the_manifest_records_the_exporting_jax_and_older_manifests_have_none() -> None:
    assert ConvertedManifest.from_json(_manifest("0.12.0.1").to_json()).jax_version == "0.12.0.1"
    assert b"jax_version" not in _manifest(None).to_json()
    assert ConvertedManifest.from_json(_manifest(None).to_json()).jax_version is None
