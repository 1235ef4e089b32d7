"""jaxport: export JAX functions to portable StableHLO artifacts and call them back.

``import jaxport`` is cheap: the names that need JAX load it on first use, so
tools that only inspect artifacts never import JAX.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .domain.safety import DisabledSafetyCheck

if TYPE_CHECKING:
    from .application.export_service import export as export
    from .application.exported import Exported as Exported
    from .application.exported import call_exported as call_exported

__version__ = "0.1.0"

_LAZY = {
    "export": "jaxport.application.export_service",
    "Exported": "jaxport.application.exported",
    "call_exported": "jaxport.application.exported",
}

__all__ = ["DisabledSafetyCheck", "Exported", "call_exported", "errors", "export"]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    if name == "errors":
        return importlib.import_module("jaxport.errors")
    raise AttributeError(f"module 'jaxport' has no attribute {name!r}")
