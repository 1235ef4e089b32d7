"""A generative model's step inputs as NumPy arrays, and the steps of any runtime that takes them.

:func:`step_arrays` makes a step's tokens, positions and mask as the function
declares them (its dtype; the decode's tokens of rank 1 or 2);
:class:`HostStepRunner` runs the steps of any converted directory through its
flat call (``ConvertedCall.run_flat``, or IREE's calls whose results stay on
its device), the cache held as the runtime's results between steps: the
runtime for targets without a runner of their own.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from jaxport.domain.artifact.record import AvalRecord
from jaxport.domain.generation.ports import StepBatch
from jaxport.domain.generation.spec import GenerationSpec, StepInput

#: A step input other than the cache: its kind, its dtype name and its rank.
HostInput = tuple[StepInput, str, int]


def host_inputs(kinds: Sequence[StepInput], avals: Sequence[AvalRecord]) -> list[HostInput]:
    """Each step input of a function whose caller's flat arguments are ``avals`` (its signature's: the cache's
    leaves, however many, are the ones that the other inputs leave; the cache is one entry).

    >>> from jaxport.domain.artifact.record import DType
    >>> host_inputs([StepInput.TOKENS, StepInput.CACHE], [AvalRecord(("b", "s"), DType.INT32),
    ...                                                   AvalRecord(("b", "8", "4"), DType.FLOAT32)])
    [(<StepInput.TOKENS: 'tokens'>, 'int32', 2), (<StepInput.CACHE: 'cache'>, '', 0)]
    """
    made: list[HostInput] = []
    at = 0
    for kind in kinds:
        if kind is StepInput.CACHE:
            made.append((kind, "", 0))
            at += len(avals) - (len(kinds) - 1)
        else:
            made.append((kind, avals[at].dtype.value, len(avals[at].shape)))
            at += 1
    return made


def any_batch(kinds: Sequence[StepInput], shapes: Sequence[Sequence[object]]) -> bool:
    """Whether a step whose inputs are ``kinds`` and whose flat arguments (after the weights) have
    ``shapes`` takes any number of rows: its tokens' first dimension is symbolic (neither an int nor
    the digits of one, as a converted manifest writes it).

    >>> any_batch([StepInput.CACHE, StepInput.TOKENS], [("b", 4), ("b", 4), ("b", "s")])
    True
    >>> any_batch([StepInput.TOKENS, StepInput.CACHE], [(1, "s"), (1, 4)]), any_batch([StepInput.TOKENS], [("1",)])
    (False, False)
    """
    at = list(kinds).index(StepInput.TOKENS)
    if StepInput.CACHE in kinds[:at]:
        at += len(shapes) - len(kinds)
    first = shapes[at][0]
    return not (isinstance(first, int) or str(first).isdigit())


def step_arrays(batch: StepBatch, inputs: Sequence[HostInput]) -> list[np.ndarray]:
    """The arrays of ``inputs`` for ``batch``, in order.

    >>> step_arrays(StepBatch(((1,), (2,)), ((3,), (4,)), (), (0, 0)),
    ...             [(StepInput.TOKENS, "int32", 1), (StepInput.POSITIONS, "int64", 2)])
    [array([1, 2], dtype=int32), array([[3],
           [4]])]
    """
    made = []
    for kind, dtype, rank in inputs:
        if kind is StepInput.CACHE:
            continue
        rows = {StepInput.TOKENS: batch.tokens, StepInput.POSITIONS: batch.positions,
                StepInput.MASK: batch.mask}[kind]
        array = np.asarray(rows, dtype=dtype)
        made.append(array.reshape(array.shape[0]) if rank == 1 else array)
    return made


def flat_step(batch: StepBatch, inputs: Sequence[HostInput], cache: Sequence[Any]) -> list[Any]:
    """A step's flat arguments after the weights: the arrays of ``inputs`` for ``batch``, the cache's
    leaves (whatever the runtime holds them as) where the cache goes."""
    arrays = iter(step_arrays(batch, inputs))
    flat: list[Any] = []
    for kind, _, _ in inputs:
        flat.extend(cache if kind is StepInput.CACHE else [next(arrays)])
    return flat


def last_logits(logits: Any, last: Sequence[int]) -> np.ndarray:
    """Each row's logits at its index in ``last`` (logits of rank 3), as float32."""
    array = np.asarray(logits)
    if array.ndim == 3:
        array = array[np.arange(array.shape[0]), np.asarray(last)]
    return np.asarray(array, np.float32)


class HostStepRunner:
    """Runs the steps through flat calls of host arrays (a converted directory's ``run_flat``).

    Args:
        spec: the model's generation spec.
        calls: per function name, its flat call (the caller's flat arrays in, the flat results out).
        inputs: per function name, each argument after the weights: its kind, dtype and rank.
    """

    def __init__(self, spec: GenerationSpec, calls: Mapping[str, Callable[[list[Any]], list[Any]]],
                 inputs: Mapping[str, Sequence[HostInput]]) -> None:
        self._spec = spec
        self._calls = dict(calls)
        self._inputs = {name: list(kinds) for name, kinds in inputs.items()}
        self.cache: list[Any] = []

    def start(self, batch: int) -> None:
        """An empty cache (zeros) for ``batch`` rows."""
        assert self._spec.max_length is not None
        self.cache = [np.zeros(leaf.empty_shape(batch, self._spec.max_length), leaf.dtype) for leaf in self._spec.cache]

    def step(self, function: str, batch: StepBatch) -> np.ndarray:
        """Runs ``function`` on ``batch`` and the cache held; keeps the cache it returns."""
        results = self._calls[function](flat_step(batch, self._inputs[function], self.cache))
        self.cache = list(results[1:])
        return last_logits(results[0], batch.last)
