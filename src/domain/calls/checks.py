"""The call-side checks of an exported function's arguments.

These run when an :class:`Exported` is called (eagerly or while tracing), on
the flat abstract values of the arguments, before anything is executed.
"""

from __future__ import annotations

from collections.abc import Sequence

from jaxport.domain.artifact.sharding import NamedShardingRecord
from jaxport.domain.errors import (
    DtypeMismatchError, RankMismatchError, ShapeMismatchError, ShardingMismatchError
)
from jaxport.domain.specs import ArraySpec, Shape, format_shape


def check_arguments(expected: Sequence[ArraySpec], actual: Sequence[ArraySpec],
                    paths: Sequence[str]) -> None:
    """Checks rank, dtype and every constant dimension of each flat argument.

    Args:
        expected: the exported input specs.
        actual: the specs of the call's flat arguments, in the same order.
        paths: how each flat argument is named in messages (``"args[0]"``).

    Raises:
        RankMismatchError, DtypeMismatchError, ShapeMismatchError: with the
            argument path and both values.
    """
    for path, exp, got in zip(paths, expected, actual, strict=True):
        if exp.ndim != got.ndim:
            raise RankMismatchError(path, format_shape(exp.shape), format_shape(got.shape))
        if exp.dtype != got.dtype:
            raise DtypeMismatchError(path, exp.dtype, got.dtype)
        for dim_idx, (e, g) in enumerate(zip(exp.shape, got.shape)):
            if isinstance(e, int) and (not isinstance(g, int) or e != g):
                raise ShapeMismatchError(f"{path}.shape[{dim_idx}]",
                                         format_shape(exp.shape), format_shape(got.shape))


def check_shardings_divide(shapes: Sequence[Shape], shardings: Sequence[NamedShardingRecord | None],
                           paths: Sequence[str]) -> None:
    """Checks that each constant dimension splits evenly over its sharded mesh axes.

    Raises:
        ShardingMismatchError: naming the argument, the dimension and the axes.
    """
    for path, shape, sharding in zip(paths, shapes, shardings, strict=True):
        if sharding is None:
            continue
        sizes = dict(zip(sharding.mesh.axis_names, sharding.mesh.axis_sizes))
        for dim, (size, axes) in enumerate(zip(shape, sharding.spec.partitions)):
            parts = 1
            for axis in axes:
                parts *= sizes.get(axis, 1)
            if isinstance(size, int) and size % parts:
                raise ShardingMismatchError(path, dim, size, axes, parts)
