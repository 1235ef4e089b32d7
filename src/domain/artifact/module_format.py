"""The format of the module bytes that an export carries.

``mlir_module_serialized`` is a StableHLO *portable artifact* (VHLO bytecode,
magic ``ML\\xefR``) serialized for an explicit target version. StableHLO
promises that an artifact written for version V can be read by any consumer
whose StableHLO is at least V and at most 5 years newer.

Target version: the one ``jax.export`` targets with the installed jaxlib (its
"4 weeks old" compatibility requirement), so that jaxport and jax.export write
byte-identical modules on every JAX release: 1.15.0 with jax 0.10.2, 1.16.1
with 0.11.0, 1.18.0 with 0.11.2 and 0.12.0.1 (``adapters.mlir.bindings.export_target_version``).
A consumer reads an artifact only when its own StableHLO is at least the
target (``jaxport check --consumer`` says which): an artifact exported on jax
0.12 is not read by jaxlib 0.10.2, whatever wrote it.

:data:`STABLEHLO_TARGET_VERSION` is the target of the modules jaxport writes
itself for converters (the specialised modules of IREE conversions), the one
that jax 0.10.2 targets, which every runtime jaxport converts to reads.
"""

from __future__ import annotations

from jaxport.domain.errors import ArtifactError
from .producer import release_key

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


def check_portable_artifact(module: bytes, *, newest_readable: str) -> None:
    """Checks a module's header before any MLIR deserializer sees the bytes.

    Args:
        module: the module bytes of an artifact.
        newest_readable: the newest StableHLO version the consumer reads.

    Raises:
        ArtifactError: the bytes are not MLIR bytecode, or were written for a
            StableHLO version newer than ``newest_readable``.
    """
    head = bytes(module[:300])
    if read_producer(head) is None:
        raise ArtifactError(
            f"The module bytes ({len(module)} bytes, starting {bytes(module[:8])!r}) are not a "
            f"StableHLO portable artifact: they lack the MLIR bytecode header "
            f"{PORTABLE_ARTIFACT_MAGIC!r} + version + producer")
    version = stablehlo_version(head)
    if version is not None and release_key(version) > release_key(newest_readable):
        raise ArtifactError(
            f"The module was serialized for StableHLO {version}, but this jaxlib reads StableHLO "
            f"up to {newest_readable}; load it with a newer jaxlib.")
