"""The ports between a loaded directory called a batch at a time and the engines that drive it.

:class:`BatchPort` is what Ray Serve, Ray Data and Apache Beam's adapters
call (:class:`jaxport.application.serving.batches.BatchFunction` is it);
:class:`RowArrays` the array work that batching needs.

The batch interface (:mod:`jaxport.application.serving.batches`) plans on row
counts (:func:`jaxport.domain.serving.batching.split_rows`) and slices arrays
with ``a[start:stop]``; what it cannot do without an array library is make
one array of several, which this port does (NumPy's:
:class:`jaxport.adapters.array_rows.NumpyRows`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from jaxport.domain.serving.protocol import WireTensor


class RowArrays(Protocol):
    """Makes one batch array of several arrays along the leading (batch) axis."""

    def stack(self, rows: Sequence[Any]) -> Any:
        """The rows (each without the batch axis, all of one shape and dtype) as one batch."""
        ...

    def join(self, arrays: Sequence[Any], padding: int) -> Any:
        """The arrays concatenated along axis 0, then ``padding`` copies of the last real row."""
        ...

    def objects(self, values: Sequence[Any]) -> Any:
        """A column of ``values``, one a row, of any kinds (arrays of different shapes, None, text)."""
        ...


class BatchPort(Protocol):
    """One function of a loaded directory, called a batch at a time by its wire names."""

    @property
    def name(self) -> str:
        """The function's name."""
        ...

    @property
    def inputs(self) -> tuple[WireTensor, ...]:
        """Its inputs on the wire, in flat order."""
        ...

    @property
    def outputs(self) -> tuple[WireTensor, ...]:
        """Its outputs on the wire, in flat order."""
        ...

    @property
    def batch_variable(self) -> str | None:
        """The dimension variable every input and output leads with (None: requests are not joined)."""
        ...

    @property
    def batch_sizes(self) -> tuple[int, ...]:
        """The batch sizes that run without padding (empty: any size does)."""
        ...

    def check(self, batch: Mapping[str, Any]) -> None:
        """Checks a batch (wire input name -> array) with the call front, without running it."""
        ...

    def check_row(self, example: Mapping[str, Any]) -> None:
        """Checks one example (one row, without the batch axis) alone, as a batch of that row."""
        ...

    def __call__(self, batch: Mapping[str, Any]) -> dict[str, Any]:
        """The results of a batch, by wire output name."""
        ...

    def rows(self, examples: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """The results of each example (one row, without the batch axis), by wire output name."""
        ...


#: Loads a directory's functions, by name (run once per replica, actor or worker).
LoadBatches = Callable[[], Mapping[str, BatchPort]]
