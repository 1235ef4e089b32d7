"""Every error jaxport raises on purpose (re-exported from the domain)."""

from .domain.cache_entry import CacheWarning
from .domain.cache_eviction import CacheConfigError
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
    EffectSerializationError,
    ExportError,
    HostCallbackError,
    JaxportError,
    MeshMismatchError,
    NonStringKeyError,
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
    "ArtifactError", "CacheConfigError", "CacheWarning", "CallError", "CallingConventionError", "DeviceCountError",
    "DisallowedCustomCallError", "DtypeMismatchError", "ExportError", "HostCallbackError",
    "BundleError", "BundleMismatchError", "JaxportError", "MeshMismatchError", "NonStringKeyError",
    "PlatformMismatchError", "RankMismatchError",
    "ShapeMismatchError", "ShardingMismatchError", "ShardingPolicyError",
    "TreeDifference", "TreeMismatchError", "VjpUnavailableError",
    "EffectSerializationError", "PartitionerMismatchError",
]
