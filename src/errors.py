"""Every error jaxport raises on purpose (re-exported from the domain)."""

from .domain.errors import (
    ArtifactError,
    BundleError,
    BundleMismatchError,
    CallError,
    CallingConventionError,
    DeviceCountError,
    DisallowedCustomCallError,
    DtypeMismatchError,
    ExportError,
    HostCallbackError,
    JaxportError,
    MeshMismatchError,
    PlatformMismatchError,
    RankMismatchError,
    ShapeMismatchError,
    ShardingMismatchError,
    ShardingPolicyError,
    TreeDifference,
    TreeMismatchError,
    VjpUnavailableError,
)

__all__ = [
    "ArtifactError", "BundleError", "BundleMismatchError", "CallError", "CallingConventionError", "DeviceCountError",
    "DisallowedCustomCallError", "DtypeMismatchError", "ExportError", "HostCallbackError",
    "JaxportError", "MeshMismatchError", "PlatformMismatchError", "RankMismatchError",
    "ShapeMismatchError", "ShardingMismatchError", "ShardingPolicyError",
    "TreeDifference", "TreeMismatchError", "VjpUnavailableError",
]
