"""The format of the module bytes that an export carries.

``mlir_module_serialized`` is a StableHLO *portable artifact* (VHLO bytecode,
magic ``ML\\xefR``) serialized for an explicit target version. StableHLO
promises that an artifact written for version V can be read by any consumer
whose StableHLO is at least V and at most 5 years newer.

Target version history:

* ``1.15.0`` (jaxport 0.1, 2026-11): the version jax 0.10.2 targets
  (its "4 weeks old" compatibility requirement), so jaxport and jax.export
  write byte-identical modules and every consumer of jax.export's artifacts
  reads jaxport's.
"""

from __future__ import annotations

STABLEHLO_TARGET_VERSION = "1.15.0"

#: The first bytes of every StableHLO portable artifact (MLIR bytecode).
PORTABLE_ARTIFACT_MAGIC = b"ML\xefR"


def read_producer(module: bytes) -> tuple[int, str] | None:
    """The MLIR bytecode version and producer (``"StableHLO_v1.15.0"``) of a portable artifact.

    Returns None when ``module`` does not start like MLIR bytecode.

    >>> read_producer(b"ML\\xefR\\rStableHLO_v1.15.0\\x00...")
    (6, 'StableHLO_v1.15.0')
    """
    if not module.startswith(PORTABLE_ARTIFACT_MAGIC):
        return None
    pos = len(PORTABLE_ARTIFACT_MAGIC)
    if pos >= len(module):
        return None
    first = module[pos]
    # MLIR's prefix varint: the trailing zero bits of the first byte count the extra bytes.
    extra = (first & -first).bit_length() - 1 if first else 8
    end = pos + 1 + extra
    if end > len(module):
        return None
    value = int.from_bytes(module[pos:end], "little") >> (extra + 1) if first else int.from_bytes(module[pos + 1:end], "little")
    nul = module.find(b"\x00", end, end + 256)
    if nul < 0:
        return None
    try:
        return value, module[end:nul].decode("ascii")
    except UnicodeDecodeError:
        return None


def stablehlo_version(module: bytes) -> str | None:
    """The StableHLO version a portable artifact was written for (``"1.15.0"``), if it says."""
    found = read_producer(module)
    if found is None or not found[1].startswith("StableHLO_v"):
        return None
    return found[1].removeprefix("StableHLO_v")
