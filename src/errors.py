"""Every error jaxport raises on purpose, each of which prints as ``jaxport.errors.X``.

The classes are defined next to the code that raises them (the domain's in
:mod:`jaxport.domain.errors`, the symbolic-shape domain's, the command line's
specs) and re-exported here; a test checks that every subclass of
:class:`JaxportError` that jaxport defines is.
"""

from .domain.arg_specs import ArgSpecError
from .domain.errors import (
    ArrayFileError,
    ArtifactCallError,
    ArtifactCallValueError,
    ArtifactError,
    CallError,
    CallingConventionError,
    ConsumerMismatchError,
    ConversionError,
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
    MissingExtraError,
    NonStringKeyError,
    PartitionerMismatchError,
    PlatformMismatchError,
    RankMismatchError,
    ShapeMismatchError,
    ShardingMismatchError,
    ShardingPolicyError,
    TreeDifference,
    TreeMismatchError,
    UnsupportedOperationError,
    UsageError,
    VjpUnavailableError,
)
from jaxport.domain.calls.errors import TargetMismatchError, UncompiledSizeError
from .domain.symbolic.errors import (
    ConstraintError,
    DimensionEvaluationError,
    DimensionPowerError,
    InconclusiveDimensionError,
    ScopeMixingError,
    ShapeAssertionError,
    ShapeSpecSyntaxError,
    ShapeSpecTypeError,
    UnsolvableDimensionError,
)

__all__ = [
    "ArtifactCallError", "ArtifactCallValueError",
    "ArtifactError", "CacheConfigError", "CallError", "CallingConventionError", "ConsumerMismatchError",
    "DeviceCountError",
    "DisallowedCustomCallError", "DtypeMismatchError", "ExportError", "HostCallbackError",
    "BundleError", "BundleMismatchError", "JaxportError", "MeshMismatchError", "NonStringKeyError",
    "PlatformMismatchError", "RankMismatchError",
    "ShapeMismatchError", "ShardingMismatchError", "ShardingPolicyError",
    "TreeDifference", "TreeMismatchError", "VjpUnavailableError",
    "EffectSerializationError", "PartitionerMismatchError",
    "ArgSpecError", "ArrayFileError", "UsageError", "ConversionError", "MissingExtraError", "UnsupportedOperationError",
    "TargetMismatchError", "UncompiledSizeError",
    "ConstraintError", "DimensionEvaluationError", "DimensionPowerError", "InconclusiveDimensionError",
    "ScopeMixingError", "ShapeAssertionError", "ShapeSpecSyntaxError", "ShapeSpecTypeError",
    "UnsolvableDimensionError",
]
