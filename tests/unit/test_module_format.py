"""The header of StableHLO portable artifacts, read without MLIR."""

from __future__ import annotations

import pytest

from jaxport.domain.errors import ArtifactError
from jaxport.domain.artifact.module_format import check_portable_artifact, read_producer, stablehlo_version

CURRENT = b"ML\xefR\rStableHLO_v1.15.0\x00\x01\x02"


def test_the_producer_and_version_are_read_from_the_header() -> None:
    assert read_producer(CURRENT) == (6, "StableHLO_v1.15.0")
    assert stablehlo_version(CURRENT) == "1.15.0"
    assert stablehlo_version(b"ML\xefR\x03MLIRxxx-trunk\x00") is None


@pytest.mark.parametrize("bad", [b"", b"ML\xefR", b"MLIR\x0dStableHLO", b"\x00" * 40,
                                 b"ML\xefR\rStableHLO_v1.15.0"])
def test_bytes_without_a_complete_header_are_refused(bad: bytes) -> None:
    with pytest.raises(ArtifactError, match="not a StableHLO portable artifact"):
        check_portable_artifact(bad, newest_readable="1.17.0")


def test_a_module_for_a_newer_stablehlo_names_both_versions() -> None:
    newer = b"ML\xefR\rStableHLO_v2.1.0\x00\x01"
    with pytest.raises(ArtifactError, match=r"StableHLO 2\.1\.0, but this jaxlib reads StableHLO up to 1\.17\.0"):
        check_portable_artifact(newer, newest_readable="1.17.0")
    check_portable_artifact(CURRENT, newest_readable="1.17.0")
