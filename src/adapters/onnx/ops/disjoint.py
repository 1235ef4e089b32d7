"""Whether a scatter's windows are pairwise disjoint, read from how its indices are made.

Two windows of a scatter cannot overlap where, for every dimension of the
index tensor's batch along which they may differ (its size is not 1), the
operand coordinate of some size-1 window dimension is that position: a
batching dimension (``vmap``'s scatter), or an inserted dimension whose
index is an iota along it (``x.at[jnp.arange(b)[:, None], positions]``, a
decode step writing one row of its cache per sequence, after JAX's wrapping
of negative indices, which leaves an iota as it is). Then every element is
written at most once, whatever the update computation, and ONNX's
``ScatterND`` (whose CPU kernel writes in parallel) may write them into the
operand in its own shape.
"""

from __future__ import annotations

from typing import Any

from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from jaxport.adapters.onnx.builder import I32, I64, int_list, tensor_dtype, tensor_shape
from .common import splat_value

_BROADCASTS = frozenset({"stablehlo.broadcast_in_dim", "stablehlo.dynamic_broadcast_in_dim"})
#: The operations that leave an iota as it is with a splat of this value as their other operand.
_UNIT = {"stablehlo.add": 0, "stablehlo.multiply": 1}


def disjoint_windows(op: Any) -> bool:
    """Whether no two windows of the ``stablehlo.scatter`` ``op`` share an element of its operand."""
    numbers = stablehlo.ScatterDimensionNumbers(op.attributes["scatter_dimension_numbers"])
    indices = op.operands[1]
    shape = tensor_shape(indices)
    vector_dim = int(numbers.index_vector_dim)
    pinned = set(numbers.scatter_indices_batching_dims)
    inserted = set(numbers.inserted_window_dims)
    for column, d in enumerate(numbers.scattered_dims_to_operand_dims):
        if d in inserted:
            axis = _column_iota(indices, column, vector_dim)
            if axis is not None and axis != vector_dim:
                pinned.add(axis)
    return all(d in pinned or shape[d] == 1 for d in range(len(shape)) if d != vector_dim)


def _column_iota(indices: Any, column: int, vector_dim: int) -> int | None:
    """The dimension along which column ``column`` of the index vectors is an iota, if it is one."""
    shape = tensor_shape(indices)
    if vector_dim == len(shape):
        return _iota_axis(indices) if column == 0 else None
    if shape[vector_dim] == 1:
        return _iota_axis(indices)
    owner = _producer(indices)
    if owner is None or owner.name != "stablehlo.concatenate" or int(
            ir.IntegerAttr(owner.attributes["dimension"]).value) != vector_dim:
        return None
    start = 0
    for piece in owner.operands:
        width = tensor_shape(piece)[vector_dim]
        if width is None:
            return None
        if column < start + width:
            return _iota_axis(piece) if width == 1 else None
        start += width
    return None


def _iota_axis(value: Any) -> int | None:
    """A dimension ``a`` such that ``value`` at every index ``i`` is ``i[a]``, where the ops making it show one."""
    owner = _producer(value)
    if owner is None:
        return None
    name = owner.name
    if name in ("stablehlo.iota", "stablehlo.dynamic_iota"):
        return int(ir.IntegerAttr(owner.attributes["iota_dimension"]).value)
    if name in _BROADCASTS:
        source = owner.operands[0]
        axis = _iota_axis(source)
        if axis is None:
            return None
        placed = int_list(owner.attributes["broadcast_dimensions"])[axis]
        # JAX broadcasts a dimension only from a static 1; a symbolic one goes to the same symbol
        return placed if tensor_shape(source)[axis] == tensor_shape(value)[placed] else None
    if name in _UNIT:  # jnp.arange(b) of a symbolic b: 0 + 1 * iota
        x, y = owner.operands
        unit = _UNIT[name]
        return _iota_axis(y) if _splat(x) == unit else _iota_axis(x) if _splat(y) == unit else None
    if name == "stablehlo.convert":
        return _iota_axis(owner.operands[0]) if tensor_dtype(value) in (I32, I64) else None
    if name == "stablehlo.select":  # JAX's wrap of negative indices: select(x < 0, x + n, x)
        predicate, wrapped = _producer(owner.operands[0]), owner.operands[2]
        if (predicate is None or predicate.name != "stablehlo.compare"
                or str(stablehlo.ComparisonDirectionAttr(predicate.attributes["comparison_direction"]).value) != "LT"
                or predicate.operands[0] != wrapped or _splat(predicate.operands[1]) != 0):
            return None
        return _iota_axis(wrapped)
    return None


def _splat(value: Any) -> float | int | bool | None:
    """The splat constant that ``value`` broadcasts, if it is one."""
    owner = _producer(value)
    while owner is not None and owner.name in _BROADCASTS:
        value = owner.operands[0]
        owner = _producer(value)
    return splat_value(value)


def _producer(value: Any) -> Any:
    """The operation making ``value``; None for a block's argument."""
    owner = value.owner
    return owner if isinstance(owner, (ir.Operation, ir.OpView)) else None
