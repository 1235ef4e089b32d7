"""Every error jaxport raises on purpose (re-exported from the domain)."""

from .domain.errors import (
    ArtifactCallError,
    ArtifactCallValueError,
    ArtifactError,
    CallError,
    CallingConventionError,
    DeviceCountError,
    DisallowedCustomCallError,
    DtypeMismatchError,
    BundleError,
    BundleMismatchError,
    CacheConfigError,
    EffectSerializationError,
    ExportError,
    HostCallbackError,
    JaxportError,
    MeshMismatchError,
    PartitionerMismatchError,
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
    "ArtifactCallError", "ArtifactCallValueError",
    "ArtifactError", "CacheConfigError", "CallError", "CallingConventionError", "DeviceCountError",
    "DisallowedCustomCallError", "DtypeMismatchError", "ExportError", "HostCallbackError",
    "BundleError", "BundleMismatchError", "JaxportError", "MeshMismatchError", "PlatformMismatchError", "RankMismatchError",
    "ShapeMismatchError", "ShardingMismatchError", "ShardingPolicyError",
    "TreeDifference", "TreeMismatchError", "VjpUnavailableError",
    "EffectSerializationError", "PartitionerMismatchError",
]
