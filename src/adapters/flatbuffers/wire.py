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
* 2026-07-29 (v12): the real ``serialization_version`` and ``jax_version``.
* 2026-10-30 (v13): ``AbstractValue.weak_type``.
"""

from __future__ import annotations

from typing import Final, TypeVar

from jaxport.domain.artifact.record import DType, MemorySpace, TreeKind
from jaxport.domain.artifact.sharding import AxisType
from jaxport.domain.artifact.safety import SafetyCheckKind

# Each table's slots (a field's vtable slot is its place in the table, as schema.fbs lists the
# fields: the schema gives no explicit ids), then the number of slots its writer declares.


class Root:
    """Slots of the root table (``Exported`` in the schema)."""

    (SERIALIZATION_VERSION, FUNCTION_NAME, IN_TREE, IN_AVALS, OUT_TREE, OUT_AVALS, NR_DEVICES_SHORT,
     IN_SHARDINGS, OUT_SHARDINGS, PLATFORMS, ORDERED_EFFECTS, UNORDERED_EFFECTS, DISABLED_CHECKS,
     MLIR_MODULE, CALLING_CONVENTION_VERSION, MODULE_KEPT_VAR_IDX, USES_GLOBAL_CONSTANTS, VJP, NR_DEVICES,
     UNIQUE_AVALS, UNIQUE_ABSTRACT_MESHES, UNIQUE_NAMED_SHARDINGS, IN_AVALS_IDXS, OUT_AVALS_IDXS,
     IN_SHARDINGS_IDXS, OUT_SHARDINGS_IDXS, JAX_VERSION) = range(27)
    NUM_SLOTS: Final = 27
    #: The slots of format generations 11 and older (without ``jax_version``).
    NUM_SLOTS_11: Final = 26


class Tree:
    """Slots of a pytree node."""

    KIND, CHILDREN, CHILDREN_NAMES, CUSTOM_NAME, CUSTOM_AUXDATA = range(5)
    NUM_SLOTS: Final = 5


class Aval:
    """Slots of an abstract value."""

    KIND, SHAPE, DTYPE, MEMORY_SPACE, WEAK_TYPE = range(5)
    NUM_SLOTS: Final = 5


class AbstractDevice:
    """Slots of an abstract device."""

    DEVICE_KIND, NUM_CORES, PLATFORM = range(3)
    NUM_SLOTS: Final = 3


class AbstractMesh:
    """Slots of an abstract mesh."""

    AXIS_SIZES, AXIS_NAMES, AXIS_TYPES, ABSTRACT_DEVICE = range(4)
    NUM_SLOTS: Final = 4


class PartitionSpecOneAxis:
    """Slots of one dimension of a partition spec."""

    AXES: Final = 0
    NUM_SLOTS: Final = 1


class PartitionSpec:
    """Slots of a partition spec."""

    PARTITIONS, REDUCED, UNREDUCED = range(3)
    NUM_SLOTS: Final = 3


class NamedSharding:
    """Slots of a named sharding."""

    MESH, SPEC, MEMORY_KIND, ABSTRACT_MESH_IDX = range(4)
    NUM_SLOTS: Final = 4


class Sharding:
    """Slots of a legacy sharding."""

    KIND, HLO_SHARDING_PROTO, NAMED_SHARDING = range(3)
    NUM_SLOTS: Final = 3
    KIND_HLO_SHARDING: Final = 1


class Effect:
    """Slots of an effect."""

    TYPE_NAME: Final = 0
    NUM_SLOTS: Final = 1


class DisabledCheck:
    """Slots of a disabled safety check."""

    KIND, CUSTOM_CALL_TARGET = range(2)
    NUM_SLOTS: Final = 2


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
