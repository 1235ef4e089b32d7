"""The array work that feeding a function batches needs, as a port: rows stacked, batches joined and padded.

The batch interface (:mod:`jaxport.application.serving.batches`) plans on row
counts (:func:`jaxport.domain.serving.batching.split_rows`) and slices arrays
with ``a[start:stop]``; what it cannot do without an array library is make
one array of several, which this port does (NumPy's:
:class:`jaxport.adapters.array_rows.NumpyRows`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol


class RowArrays(Protocol):
    """Makes one batch array of several arrays along the leading (batch) axis."""

    def stack(self, rows: Sequence[Any]) -> Any:
        """The rows (each without the batch axis, all of one shape and dtype) as one batch."""
        ...

    def join(self, arrays: Sequence[Any], padding: int) -> Any:
        """The arrays concatenated along axis 0, then ``padding`` copies of the last real row."""
        ...
