"""Ports of the export service: what it needs from the adapters that read and write modules.

Each is a port because the service is tested with a fake of it
(tests/e2e/test_export_service.py) as well as wired with its MLIR adapter
(:mod:`jaxport.application.wiring`). Modules travel through them as opaque
objects: only the adapter that made one knows what it is. The runtime port is
:mod:`jaxport.domain.calls.host_arrays`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from jaxport.domain.artifact.module_policy import OpSite


class ModuleInspector(Protocol):
    """The read side of the abstract IR: what the export policy looks at."""

    def sites(self, module: object) -> Iterable[OpSite]:
        """The custom calls, functions and sharding constraints of ``module``."""
        ...


class ModuleSerializer(Protocol):
    """Turns a lowered module into portable bytes."""

    def serialize(self, module: object, *, target_version: str, uses_global_constants: bool) -> bytes:
        """The portable artifact of ``module`` for a StableHLO ``target_version``."""
        ...
