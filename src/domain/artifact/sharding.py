"""How an export's arguments and results are sharded, as the artifact records it.

Since 2026-01-15 ``jax.export`` records a :class:`NamedShardingRecord`: an
abstract mesh (axis sizes, names and types, and the kind of device it was
made for) with a partition spec per array. Older artifacts record a
:class:`HloShardingRecord`: a serialized ``xla.OpSharding`` protocol buffer.
These records change when JAX changes how it describes a sharding; the rest
of the record (:mod:`.record`) does not.

>>> mesh = AbstractMeshRecord((2,), ("x",), (AxisType.EXPLICIT,))
>>> NamedShardingRecord(mesh, PartitionSpecRecord((("x",), ()))).spec.partitions
(('x',), ())
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, TypeAlias

from jaxport.domain.errors import ShardingMismatchError

if TYPE_CHECKING:  # reading a record (jaxport.inspect) needs no symbolic shapes
    from jaxport.domain.symbolic.plan import Shape


class AxisType(Enum):
    """How a mesh axis is partitioned."""

    AUTO = "Auto"
    EXPLICIT = "Explicit"
    MANUAL = "Manual"


@dataclass(frozen=True, slots=True)
class AbstractDeviceRecord:
    """The kind of device an abstract mesh was made for.

    Attributes:
        device_kind: the device kind string (``"cpu"``, ``"TPU v5 lite"``).
        num_cores: cores per device, when recorded.
        platform: ``"cpu"``, ``"gpu"``, ``"tpu"``, ...
    """

    device_kind: str
    num_cores: int | None
    platform: str


@dataclass(frozen=True, slots=True)
class AbstractMeshRecord:
    """A device mesh by its axes only (no concrete devices)."""

    axis_sizes: tuple[int, ...]
    axis_names: tuple[str, ...]
    axis_types: tuple[AxisType, ...]
    abstract_device: AbstractDeviceRecord | None = None

    def __post_init__(self) -> None:
        if not len(self.axis_sizes) == len(self.axis_names) == len(self.axis_types):
            raise ValueError(
                f"an abstract mesh has {len(self.axis_sizes)} axis sizes, "
                f"{len(self.axis_names)} axis names and {len(self.axis_types)} axis types")


@dataclass(frozen=True, slots=True)
class PartitionSpecRecord:
    """How each dimension of an array is split over mesh axes.

    Attributes:
        partitions: per dimension, the mesh axes it is split over: ``()`` for
            ``None`` (replicated), ``("x",)`` for ``'x'``, ``("x", "y")`` for
            ``('x', 'y')``.
        reduced: the ``reduced`` axes, in wire order.
        unreduced: the ``unreduced`` axes, in wire order.
    """

    partitions: tuple[tuple[str, ...], ...]
    reduced: tuple[str, ...] = ()
    unreduced: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class NamedShardingRecord:
    """A sharding over an abstract mesh (artifacts since 2026-01-15)."""

    mesh: AbstractMeshRecord
    spec: PartitionSpecRecord
    memory_kind: str | None = None


@dataclass(frozen=True, slots=True)
class HloShardingRecord:
    """A legacy sharding: a serialized ``xla.OpSharding`` protocol buffer."""

    proto: bytes


#: One flat argument's or result's sharding; ``None`` stands for unspecified.
ShardingRecord: TypeAlias = NamedShardingRecord | HloShardingRecord


def check_shardings_divide(shapes: Sequence[Shape], shardings: Sequence[NamedShardingRecord | None],
                           paths: Sequence[str]) -> None:
    """Checks that each constant dimension splits evenly over its sharded mesh axes (an export's
    call checks it, eagerly or while tracing, before anything runs).

    Raises:
        ShardingMismatchError: naming the argument, the dimension and the axes.
    """
    for path, shape, sharding in zip(paths, shapes, shardings, strict=True):
        if sharding is None:
            continue
        sizes = dict(zip(sharding.mesh.axis_names, sharding.mesh.axis_sizes))
        for dim, (size, axes) in enumerate(zip(shape, sharding.spec.partitions)):
            parts = math.prod(sizes.get(axis, 1) for axis in axes)
            if isinstance(size, int) and size % parts:
                raise ShardingMismatchError(path, dim, size, axes, parts)
