"""Dynamic batching as arithmetic: which waiting requests join one call, how far it is padded, where rows go back.

A server that joins requests (``jaxport serve --batch predict``) holds the
requests to one function for a moment, then runs several as one call along
their batch dimension: this module plans that, on row counts alone. It
holds no arrays, no clock and no queue (the server's batcher does).

* :func:`plan_groups`: the waiting requests, in arrival order, cut into
  consecutive groups of at most ``max_rows`` rows; a request larger than that
  goes alone, unsplit.
* :func:`padded_rows`: a target compiled per size (IREE modules, one per
  binding) runs a group at the nearest compiled size at or above its rows;
  the server fills the difference with copies of a real row and drops them.
* :func:`row_slices`: where each request's rows are in the joined result.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Sequence


def plan_groups(rows: Sequence[int], max_rows: int) -> list[range]:
    """The waiting requests (``rows[i]`` rows each) cut into groups, as ranges of their indices.

    Groups keep arrival order; each holds at most ``max_rows`` rows, except a
    single request that alone has more.

    >>> plan_groups([1, 2, 3, 1], 4)
    [range(0, 2), range(2, 4)]
    >>> plan_groups([5, 1], 4)
    [range(0, 1), range(1, 2)]

    Raises:
        ValueError: ``max_rows`` is below 1, or a count is below 0.
    """
    if max_rows < 1:
        raise ValueError(f"max_rows must be at least 1, not {max_rows}")
    if any(r < 0 for r in rows):
        raise ValueError(f"row counts cannot be negative: {list(rows)}")
    groups: list[range] = []
    start, total = 0, 0
    for i, count in enumerate(rows):
        if i > start and total + count > max_rows:
            groups.append(range(start, i))
            start, total = i, 0
        total += count
    if start < len(rows):
        groups.append(range(start, len(rows)))
    return groups


def padded_rows(rows: int, compiled: Sequence[int]) -> int:
    """The batch size a group of ``rows`` rows runs at: the nearest compiled size at or above it.

    ``compiled`` empty means any size runs (no padding); a group larger than
    every compiled size runs unpadded (and the runtime refuses it with the
    sizes it has).

    >>> padded_rows(3, [1, 4, 8]), padded_rows(4, [1, 4, 8]), padded_rows(9, [1, 4, 8]), padded_rows(3, [])
    (4, 4, 9, 3)
    """
    sizes = sorted(set(compiled))
    at = bisect.bisect_left(sizes, rows)
    return sizes[at] if at < len(sizes) else rows


def largest_group(max_batch_size: int, compiled: Sequence[int]) -> int:
    """The most rows a group may hold: ``max_batch_size``, capped by the largest compiled size.

    >>> largest_group(32, [1, 8]), largest_group(4, [1, 8]), largest_group(4, [])
    (8, 4, 4)
    """
    return min(max_batch_size, max(compiled)) if compiled else max_batch_size


def row_slices(rows: Sequence[int]) -> list[tuple[int, int]]:
    """The ``(start, stop)`` rows of each request in the joined batch, in order.

    >>> row_slices([2, 1, 3])
    [(0, 2), (2, 3), (3, 6)]
    """
    return [(end - count, end) for count, end in zip(rows, itertools.accumulate(rows))]



def split_rows(rows: int, compiled: Sequence[int], max_rows: int | None = None) -> list[tuple[int, int, int]]:
    """One batch of ``rows`` rows cut into calls: each call's ``(start, stop, size)``.

    An engine hands a function a batch of whatever size its data has; a target
    compiled per size runs it as consecutive slices of at most the largest
    compiled size (capped by ``max_rows``), each padded up to the nearest
    compiled size (``size``; the padding rows are dropped from the results).
    Where any size runs (``compiled`` empty) the batch is one call, or slices
    of ``max_rows``.

    >>> split_rows(11, [1, 4, 8])
    [(0, 8, 8), (8, 11, 4)]
    >>> split_rows(5, []), split_rows(5, [], 2)
    ([(0, 5, 5)], [(0, 2, 2), (2, 4, 2), (4, 5, 1)])

    Raises:
        ValueError: ``rows`` is below 0 or ``max_rows`` below 1.
    """
    if rows < 0:
        raise ValueError(f"a batch cannot have {rows} rows")
    step = largest_group(max_rows, compiled) if max_rows is not None else (max(compiled) if compiled else rows)
    if step < 1:
        return [(0, rows, padded_rows(rows, compiled))]
    return [(start, min(start + step, rows), padded_rows(min(step, rows - start), compiled))
            for start in range(0, rows, step)] or [(0, 0, padded_rows(0, compiled))]
