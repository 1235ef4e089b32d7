"""Every error jaxport raises on purpose (re-exported from the domain)."""

from .domain.errors import (
    ArtifactError,
    CallError,
    CallingConventionError,
    DisallowedCustomCallError,
    DtypeMismatchError,
    ExportError,
    HostCallbackError,
    JaxportError,
    PlatformMismatchError,
    RankMismatchError,
    ShapeMismatchError,
    ShardingPolicyError,
    TreeDifference,
    TreeMismatchError,
    VjpUnavailableError,
)

__all__ = [
    "ArtifactError", "CallError", "CallingConventionError", "DisallowedCustomCallError",
    "DtypeMismatchError", "ExportError", "HostCallbackError", "JaxportError",
    "PlatformMismatchError", "RankMismatchError", "ShapeMismatchError", "ShardingPolicyError",
    "TreeDifference", "TreeMismatchError", "VjpUnavailableError",
]
