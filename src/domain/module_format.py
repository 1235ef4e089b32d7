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
