"""A converted generative model's steps on TensorFlow, the cache kept in TensorFlow's tensors.

:class:`TfStepRunner` is the :class:`~jaxport.domain.generation.ports.StepRunner`
of a SavedModel directory converted from a generative bundle. Each step calls
the function's serving signature (:meth:`TfRuntime.tensors`) with the tokens,
positions and mask made on the host and the cache's leaves as the tensors
that the previous step returned: the cache stays where TensorFlow put it
(its device), and only the logits come back as NumPy. A request that joins
a running batch (:meth:`TfStepRunner.prefill_slots`; those that join together
in one run where the prefill takes any batch) has its cache row written into
its slot by TensorFlow (a new cache, once per prefill; tensors are immutable).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from jaxport.adapters.numpy.steps import HostInput, any_batch, flat_step, host_inputs, last_logits
from jaxport.domain.converted.manifest import ConvertedManifest
from jaxport.domain.generation.ports import StepBatch
from jaxport.domain.generation.slots import padded_rows, slot_axes
from jaxport.domain.generation.spec import GenerationSpec
from .runtime import TfRuntime, _tensorflow_errors
from .tensorflow_import import tf as _tf


class TfStepRunner:
    """Runs a SavedModel directory's prefill and decode with TensorFlow, the cache in its tensors.

    Args:
        runtime: the directory's runtime, loaded (its signatures checked against the manifest).
        manifest: its manifest, with a generation spec.
        spec: that spec.

    Attributes:
        cache: the cache's leaves, TensorFlow's tensors, after the last step (empty before :meth:`start`).
        prefills_together: whether :meth:`prefill_slots` takes several rows (the prefill takes any batch).
    """

    def __init__(self, runtime: TfRuntime, manifest: ConvertedManifest, spec: GenerationSpec) -> None:
        self._runtime = runtime
        self._spec = spec
        self._inputs: dict[str, list[HostInput]] = {}
        self.prefills_together = False
        for name, kinds in spec.steps:
            sig = manifest.function(name).signature
            self._inputs[name] = host_inputs(kinds, sig.in_avals)
            if name == spec.prefill:
                self.prefills_together = any_batch(kinds, [a.shape for a in sig.in_avals])
        self.cache: list[Any] = []
        self._rows = 0

    def start(self, batch: int) -> None:
        """An empty cache (zeros) for ``batch`` rows, made by TensorFlow."""
        assert self._spec.max_length is not None
        zeros = _tf().zeros
        self.cache = [zeros(leaf.empty_shape(batch, self._spec.max_length), leaf.dtype) for leaf in self._spec.cache]
        self._rows = batch

    def step(self, function: str, batch: StepBatch) -> np.ndarray:
        """Runs ``function`` on ``batch`` and the cache held; the new cache stays in TensorFlow."""
        results = self._runtime.tensors(function, flat_step(batch, self._inputs[function], self.cache))
        self.cache = results[1:]
        with _tensorflow_errors(function):
            logits = results[0].numpy()
        return last_logits(logits, batch.last)

    def step_first(self, function: str, batch: StepBatch) -> np.ndarray:
        """The decode on ``batch``, the first rows of the cache held: run over every row, ``batch`` padded
        (:func:`~jaxport.domain.generation.slots.padded_rows`), as a fixed-batch decode runs; the rows in
        use alone (as the JAX and ONNX runners run them) are not done on TensorFlow yet."""
        return self.step(function, padded_rows(batch, self._rows))[:len(batch.tokens)]

    def prefill_slots(self, slots: Sequence[int], function: str, batch: StepBatch) -> np.ndarray:
        """Runs the prefill on ``batch`` (a row per slot) over an empty cache of as many rows and writes
        each row into its slot of the cache held (the other rows as they were)."""
        axes = slot_axes(self._spec)
        assert self._spec.max_length is not None
        zeros = _tf().zeros
        empty = [zeros(leaf.empty_shape(len(slots), self._spec.max_length), leaf.dtype) for leaf in self._spec.cache]
        results = self._runtime.tensors(function, flat_step(batch, self._inputs[function], empty))
        source = {slot: i for i, slot in enumerate(slots)}
        concat = _tf().concat
        with _tensorflow_errors(function):
            self.cache = [concat([_row(new, source[s], axis) if s in source else _row(whole, s, axis)
                                  for s in range(self._rows)], axis)
                          for whole, new, axis in zip(self.cache, results[1:], axes)]
            logits = results[0].numpy()
        return last_logits(logits, batch.last)


def _row(tensor: Any, index: int, axis: int) -> Any:
    """Row ``index`` of ``tensor`` along ``axis``, the axis kept."""
    return tensor[(slice(None),) * axis + (slice(index, index + 1),)]
