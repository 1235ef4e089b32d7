"""The facts of the artifact format (schema.fbs) as Python constants.

Field ids (vtable slots) per table, the number of slots each table's writer
declares, and the enum codes with their domain counterparts. Both the reader
(:mod:`.decode`) and the writer (:mod:`.encode`) take their numbers from here,
so a change of the format is a change of this module.

Generations that the reader accepts (the ones jax 0.10.2 reads):

* 2023-12 (serialization version 2): ``nr_devices_short``, legacy per-input
  ``in_avals`` / ``in_shardings`` with HLO sharding protos, no custom pytrees.
* 2025-11-23 (v5): 32-bit ``nr_devices``, aval memory spaces.
* 2026-01-15 (v6): ``Sharding.named_sharding`` next to the HLO proto.
* 2026-03-12 (v8): ``AbstractMesh.abstract_device``; v9 drops HLO protos.
* 2026-04-04 (v10): de-duplicated ``unique_*`` tables and ``*_idxs`` vectors.
* 2026-05-15 (v11): ``AbstractDevice.platform``.
"""

from __future__ import annotations

from typing import Final, TypeVar

from jaxport.domain.artifact.record import DType, MemorySpace, TreeKind
from jaxport.domain.artifact.sharding import AxisType
from jaxport.domain.artifact.safety import SafetyCheckKind

#: The first bytes of every StableHLO portable artifact (MLIR bytecode).
PORTABLE_ARTIFACT_MAGIC: Final = b"ML\xefR"


class Root:
    """Slots of the root table (``Exported`` in the schema)."""

    NUM_SLOTS: Final = 27
    #: The slots of format generations 11 and older (without ``jax_version``).
    NUM_SLOTS_11: Final = 26
    SERIALIZATION_VERSION: Final = 0
    FUNCTION_NAME: Final = 1
    IN_TREE: Final = 2
    IN_AVALS: Final = 3
    OUT_TREE: Final = 4
    OUT_AVALS: Final = 5
    NR_DEVICES_SHORT: Final = 6
    IN_SHARDINGS: Final = 7
    OUT_SHARDINGS: Final = 8
    PLATFORMS: Final = 9
    ORDERED_EFFECTS: Final = 10
    UNORDERED_EFFECTS: Final = 11
    DISABLED_CHECKS: Final = 12
    MLIR_MODULE: Final = 13
    CALLING_CONVENTION_VERSION: Final = 14
    MODULE_KEPT_VAR_IDX: Final = 15
    USES_GLOBAL_CONSTANTS: Final = 16
    VJP: Final = 17
    NR_DEVICES: Final = 18
    UNIQUE_AVALS: Final = 19
    UNIQUE_ABSTRACT_MESHES: Final = 20
    UNIQUE_NAMED_SHARDINGS: Final = 21
    IN_AVALS_IDXS: Final = 22
    OUT_AVALS_IDXS: Final = 23
    IN_SHARDINGS_IDXS: Final = 24
    OUT_SHARDINGS_IDXS: Final = 25
    JAX_VERSION: Final = 26


class Tree:
    """Slots of a pytree node."""

    NUM_SLOTS: Final = 5
    KIND: Final = 0
    CHILDREN: Final = 1
    CHILDREN_NAMES: Final = 2
    CUSTOM_NAME: Final = 3
    CUSTOM_AUXDATA: Final = 4


class Aval:
    """Slots of an abstract value."""

    NUM_SLOTS: Final = 4
    KIND: Final = 0
    SHAPE: Final = 1
    DTYPE: Final = 2
    MEMORY_SPACE: Final = 3


class AbstractDevice:
    """Slots of an abstract device."""

    NUM_SLOTS: Final = 3
    DEVICE_KIND: Final = 0
    NUM_CORES: Final = 1
    PLATFORM: Final = 2


class AbstractMesh:
    """Slots of an abstract mesh."""

    NUM_SLOTS: Final = 4
    AXIS_SIZES: Final = 0
    AXIS_NAMES: Final = 1
    AXIS_TYPES: Final = 2
    ABSTRACT_DEVICE: Final = 3


class PartitionSpecOneAxis:
    """Slots of one dimension of a partition spec."""

    NUM_SLOTS: Final = 1
    AXES: Final = 0


class PartitionSpec:
    """Slots of a partition spec."""

    NUM_SLOTS: Final = 3
    PARTITIONS: Final = 0
    REDUCED: Final = 1
    UNREDUCED: Final = 2


class NamedSharding:
    """Slots of a named sharding."""

    NUM_SLOTS: Final = 4
    MESH: Final = 0
    SPEC: Final = 1
    MEMORY_KIND: Final = 2
    ABSTRACT_MESH_IDX: Final = 3


class Sharding:
    """Slots of a legacy sharding."""

    NUM_SLOTS: Final = 3
    KIND: Final = 0
    HLO_SHARDING_PROTO: Final = 1
    NAMED_SHARDING: Final = 2
    KIND_HLO_SHARDING: Final = 1


class Effect:
    """Slots of an effect."""

    NUM_SLOTS: Final = 1
    TYPE_NAME: Final = 0


class DisabledCheck:
    """Slots of a disabled safety check."""

    NUM_SLOTS: Final = 2
    KIND: Final = 0
    CUSTOM_CALL_TARGET: Final = 1


AVAL_KIND_SHAPED_ARRAY: Final = 0

TREE_KIND_CODES: Final[dict[TreeKind, int]] = {
    TreeKind.LEAF: 0, TreeKind.NONE: 1, TreeKind.TUPLE: 2,
    TreeKind.LIST: 3, TreeKind.DICT: 4, TreeKind.CUSTOM: 5,
}

DTYPE_CODES: Final[dict[DType, int]] = {
    DType.BOOL: 0, DType.INT8: 1, DType.INT16: 2, DType.INT32: 3, DType.INT64: 4,
    DType.UINT8: 5, DType.UINT16: 6, DType.UINT32: 7, DType.UINT64: 8,
    DType.FLOAT16: 9, DType.FLOAT32: 10, DType.FLOAT64: 11,
    DType.COMPLEX64: 12, DType.COMPLEX128: 13, DType.BFLOAT16: 14,
    DType.INT4: 15, DType.UINT4: 16, DType.FLOAT8_E4M3B11FNUZ: 17,
    DType.FLOAT8_E4M3FN: 18, DType.FLOAT8_E4M3FNUZ: 19, DType.FLOAT8_E5M2: 20,
    DType.FLOAT8_E5M2FNUZ: 21, DType.FLOAT0: 22, DType.FLOAT8_E4M3: 23,
    DType.FLOAT8_E3M4: 24, DType.FLOAT8_E8M0FNU: 25, DType.FLOAT4_E2M1FN: 26,
    DType.KEY_FRY: 27, DType.KEY_RBG: 28, DType.KEY_UNSAFE_RBG: 29,
}

MEMORY_SPACE_CODES: Final[dict[MemorySpace, int]] = {
    MemorySpace.DEVICE: 1, MemorySpace.HOST: 2, MemorySpace.ANY: 3,
}
#: Artifacts from before 2025-11-23 write no memory space: 0 reads as device.
MEMORY_SPACE_MISSING: Final = 0

AXIS_TYPE_CODES: Final[dict[AxisType, int]] = {
    AxisType.AUTO: 1, AxisType.EXPLICIT: 2, AxisType.MANUAL: 3,
}

SAFETY_CHECK_CODES: Final[dict[SafetyCheckKind, int]] = {
    SafetyCheckKind.PLATFORM: 0, SafetyCheckKind.CUSTOM_CALL: 1,
    SafetyCheckKind.SHAPE_ASSERTIONS: 2,
}


_K = TypeVar("_K")


def inverse(codes: dict[_K, int]) -> dict[int, _K]:
    """The code-to-value table of a value-to-code table."""
    return {code: value for value, code in codes.items()}
