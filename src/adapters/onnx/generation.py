"""A converted generative model's steps on ONNX Runtime, the cache kept in its own buffers.

:class:`OnnxStepRunner` is the :class:`~jaxport.domain.generation.ports.StepRunner`
of an ONNX directory converted from a generative bundle. Each step runs with
I/O binding: the tokens, positions and mask are bound from the host, the
cache's leaves are bound as ``OrtValue``\\ s (ONNX Runtime's buffers) in and
out, and only the logits come back as NumPy. The cache's outputs are bound
to a second set of buffers of the same shapes, and the two sets swap at each
step: no cache is allocated, and none converted to NumPy, during the loop.
Each buffer is host memory wrapped by its ``OrtValue``, so a request that joins
a running batch (:meth:`OnnxStepRunner.prefill_slots`; those that join together
in one run where the prefill takes any batch) has its cache row copied into its
slot of the held cache in place, and a decode over the first rows alone
(:meth:`OnnxStepRunner.step_first`) binds views of those rows where the batch axis is each leaf's first.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

# runtime.py first: without the extra, it raises the MissingExtraError that names it.
from jaxport.adapters.onnx.runtime import OnnxTargetRuntime, _onnx_runtime_errors
import onnxruntime as ort
from jaxport.adapters.numpy.steps import HostInput, any_batch, host_inputs, last_logits, step_arrays
from jaxport.domain.converted.manifest import ConvertedManifest
from jaxport.domain.generation.ports import StepBatch
from jaxport.domain.generation.slots import padded_rows, slot_axes
from jaxport.domain.generation.spec import GenerationSpec, StepInput


class OnnxStepRunner:
    """Runs a converted directory's prefill and decode with ONNX Runtime's I/O binding.

    Args:
        runtime: the directory loaded (:func:`~jaxport.adapters.onnx.runtime.load`): the steps run in the
            sessions its calls run in, so that a directory served and generating from is opened once.
        manifest: its manifest, with a generation spec.

    Attributes:
        cache: the cache's leaves, ``OrtValue``\\ s, after the last step (None before :meth:`start`).
        prefills_together: whether :meth:`prefill_slots` takes several rows (the prefill takes any batch).

    Raises:
        ArtifactError: ONNX Runtime cannot open a step's model.
    """

    def __init__(self, runtime: OnnxTargetRuntime, manifest: ConvertedManifest, spec: GenerationSpec) -> None:
        self._spec = spec
        self._steps: dict[str, _Step] = {}
        for name, inputs in spec.steps:
            function = manifest.function(name)
            sig = function.signature
            kinds = host_inputs(inputs, sig.in_avals)
            self._steps[name] = _Step(name, runtime.session(function.variants[0].file), kinds, sig.input_names,
                                      sig.output_names)
        decode = manifest.function(spec.decode)
        prefill = manifest.function(spec.prefill)
        shapes = [a.shape for a in prefill.signature.in_avals]
        self.prefills_together = any_batch(dict(spec.steps)[spec.prefill], shapes) and not prefill.variants[0].dims
        # A decode exported for a fixed batch, or converted for one (a variant's dims), runs every row.
        self._sliced = (all(leaf.batch_axis == 0 for leaf in spec.cache) and decode.signature.is_symbolic
                        and not decode.variants[0].dims)
        self.cache: list[Any] | None = None
        self._spare: list[Any] = []
        self._held = _Buffers([], [], 0)  # the host memory under ``cache``, then under the spare set
        self._empty: dict[int, _Buffers] = {}  # per row count, an empty cache in and out, for :meth:`prefill_slots`

    def start(self, batch: int) -> None:
        """Two sets of cache buffers for ``batch`` rows in ONNX Runtime: the empty cache, and where
        the first step writes the next."""
        self._held = _Buffers.empty(self._spec, batch)
        self.cache, self._spare = self._held.values()

    def step(self, function: str, batch: StepBatch) -> np.ndarray:
        """Runs ``function`` on ``batch`` and the cache held; the new cache stays in ONNX Runtime."""
        assert self.cache is not None
        logits = self._steps[function].run(batch, self.cache, self._spare)
        self.cache, self._spare = self._spare, self.cache
        self._held.swap()
        return last_logits(logits, batch.last)

    def prefill_slots(self, slots: Sequence[int], function: str, batch: StepBatch) -> np.ndarray:
        """Runs the prefill on ``batch`` (a row per slot) over an empty cache of as many rows (buffers of
        its own, made once per row count) and copies each row into its slot of the held cache's buffers,
        in place."""
        axes = slot_axes(self._spec)
        assert self.cache is not None
        empty = self._empty.get(len(slots))
        if empty is None:
            empty = self._empty[len(slots)] = _Buffers.empty(self._spec, len(slots))
        logits = self._steps[function].run(batch, *empty.values())
        for whole, rows, axis in zip(self._held.arrays, empty.spare, axes):
            for i, slot in enumerate(slots):
                np.moveaxis(whole, axis, 0)[slot] = np.moveaxis(rows, axis, 0)[i]
        return last_logits(logits, batch.last)

    def step_first(self, function: str, batch: StepBatch) -> np.ndarray:
        """Runs the decode on ``batch`` and the first ``len(batch.tokens)`` rows of the cache held: over
        views of those rows where every leaf's batch axis is its first and the decode takes any batch (the
        two sets swap, as after :meth:`step`: the rows past the batch, free slots, are left as the spare
        set held them, not copied), else over every row, ``batch`` padded
        (:func:`~jaxport.domain.generation.slots.padded_rows`)."""
        assert self.cache is not None
        rows = len(batch.tokens)
        if not self._sliced:  # every row runs
            return self.step(function, padded_rows(batch, self._held.rows))[:rows]
        held, spare = self._held.first(rows)
        logits = self._steps[function].run(batch, held, spare)
        self.cache, self._spare = self._spare, self.cache
        self._held.swap()
        return last_logits(logits, batch.last)


class _Buffers:
    """Two sets of host arrays, each leaf's wrapped (not copied) by an ``OrtValue``: what ONNX
    Runtime reads the cache from and writes it into, which the host can fill one row of."""

    def __init__(self, arrays: list[np.ndarray], spare: list[np.ndarray], rows: int) -> None:
        self.arrays = arrays
        self.spare = spare
        self.rows = rows
        self._swapped = False
        self._values = ([ort.OrtValue.ortvalue_from_numpy(a) for a in arrays],
                        [ort.OrtValue.ortvalue_from_numpy(a) for a in spare])
        self._first: dict[tuple[bool, int], tuple[list[Any], list[Any]]] = {}

    @staticmethod
    def empty(spec: GenerationSpec, batch: int) -> _Buffers:
        """An empty cache for ``batch`` rows (zeros), and a set of the same shapes to write into."""
        assert spec.max_length is not None
        shapes = [(leaf.empty_shape(batch, spec.max_length), np.dtype(leaf.dtype)) for leaf in spec.cache]
        return _Buffers([np.zeros(s, d) for s, d in shapes], [np.zeros(s, d) for s, d in shapes], batch)

    def values(self) -> tuple[list[Any], list[Any]]:
        """The ``OrtValue``\\ s of :attr:`arrays` and of :attr:`spare`."""
        return self._values

    def first(self, rows: int) -> tuple[list[Any], list[Any]]:
        """``OrtValue``\\ s of the first ``rows`` rows (along the first axis) of :attr:`arrays` and of
        :attr:`spare`, views of their memory (made once per row count and set)."""
        key = (self._swapped, rows)
        if key not in self._first:  # each OrtValue keeps its view (and so the memory) alive
            self._first[key] = ([ort.OrtValue.ortvalue_from_numpy(a[:rows]) for a in self.arrays],
                                [ort.OrtValue.ortvalue_from_numpy(a[:rows]) for a in self.spare])
        return self._first[key]

    def swap(self) -> None:
        """The spare set holds the cache now."""
        self.arrays, self.spare = self.spare, self.arrays
        self._swapped = not self._swapped
        self._values = (self._values[1], self._values[0])


class _Step:
    """One function's session and how a step's inputs and outputs bind to it."""

    def __init__(self, name: str, session: Any, inputs: Sequence[HostInput], input_names: Sequence[str],
                 output_names: Sequence[str]) -> None:
        self.name = name
        self.session = session
        self.inputs = list(inputs)
        cache_at = [kind for kind, _, _ in inputs].index(StepInput.CACHE)
        count = len(input_names) - (len(inputs) - 1)
        self.host_names = [n for n in input_names[:cache_at]] + list(input_names[cache_at + count:])
        self.cache_inputs = list(input_names[cache_at:cache_at + count])
        self.logits = output_names[0]
        self.cache_outputs = list(output_names[1:])

    def run(self, batch: StepBatch, cache: Sequence[Any], into: Sequence[Any]) -> np.ndarray:
        binding = self.session.io_binding()
        for name, array in zip(self.host_names, step_arrays(batch, self.inputs)):
            binding.bind_cpu_input(name, array)
        for name, value in zip(self.cache_inputs, cache):
            binding.bind_ortvalue_input(name, value)
        binding.bind_output(self.logits, "cpu")
        for name, value in zip(self.cache_outputs, into):
            binding.bind_ortvalue_output(name, value)
        with _onnx_runtime_errors(self.name):
            self.session.run_with_iobinding(binding)
        logits: np.ndarray = binding.get_outputs()[0].numpy()
        return logits
