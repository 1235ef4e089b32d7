"""Batches made of rows and of other batches, with NumPy: the :class:`~jaxport.domain.serving.engine_ports.RowArrays` port."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


class NumpyRows:
    """Stacks rows and joins batches along axis 0 as NumPy arrays."""

    def stack(self, rows: Sequence[Any]) -> Any:
        """The rows as one batch (``numpy.stack``).

        >>> NumpyRows().stack([np.zeros(2), np.ones(2)]).shape
        (2, 2)
        """
        return np.stack([np.asarray(r) for r in rows])

    def join(self, arrays: Sequence[Any], padding: int) -> Any:
        """See :func:`join_rows`."""
        return join_rows(arrays, padding)

    def objects(self, values: Sequence[Any]) -> Any:
        """The values as one array of objects, one a row (NumPy would otherwise merge arrays into more axes).

        >>> column = NumpyRows().objects([np.zeros(2), None, "text"])
        >>> column.dtype, column.shape, column[1] is None
        (dtype('O'), (3,), True)
        """
        column = np.empty(len(values), dtype=object)
        for i, value in enumerate(values):
            column[i] = value
        return column


def join_rows(arrays: Sequence[Any], padding: int) -> Any:
    """The arrays concatenated along axis 0, then ``padding`` copies of the last real row.

    >>> join_rows([np.array([1, 2]), np.array([3])], 2).tolist()
    [1, 2, 3, 3, 3]
    """
    parts = [np.asarray(a) for a in arrays]
    real = [p for p in parts if len(p)]
    if padding and real:
        parts.append(np.repeat(real[-1][-1:], padding, axis=0))
    return parts[0] if len(parts) == 1 else np.concatenate(parts, axis=0)
