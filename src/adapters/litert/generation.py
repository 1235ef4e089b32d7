"""A converted generative model's steps on LiteRT's ``CompiledModel``, the cache kept in its tensor buffers.

:class:`LiteRtStepRunner` is the :class:`~jaxport.domain.generation.ports.StepRunner`
of a LiteRT directory converted from a generative bundle for static shapes:
one model, :data:`~jaxport.domain.targets.litert.SHARED_FILE`, each variant of
the prefill and the decode a signature of it, the weights stored once. Each
step runs the signature whose shapes the step's arrays have, with LiteRT's
own ``TensorBuffer``\\ s: the tokens, positions and mask are written into the
signature's input buffers, the cache's leaves are two sets of buffers that
the step reads from one set and writes to the other (they swap at each
step), and only the logits are read back as NumPy. No cache is allocated,
and none converted to NumPy, during the loop.

``CompiledModel``, not the interpreter's signature runners: those hand each
result back as NumPy, so the cache would cross to the host and back at each
step. A model with dynamic dimensions is run through the directory's checked
calls instead (:func:`jaxport.load_generator` chooses): ai-edge-litert 2.3.0's
``CompiledModel`` fails to invoke a signature whose inputs were resized
(``idx_and_alloc != tensor_idx_to_alloc.end()``).
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any

import numpy as np

# runtime.py first: without the extra, it raises the MissingExtraError that names it.
from jaxport.adapters.litert.runtime import NOISE, _litert_errors
from jaxport.adapters.numpy.steps import HostInput, host_inputs, last_logits, step_arrays
from jaxport.domain.converted.manifest import ConvertedManifest
from jaxport.domain.converted.static_shapes import variant_file
from jaxport.domain.errors import ArtifactError, GenerationError
from jaxport.domain.generation.ports import StepBatch
from jaxport.domain.generation.spec import GenerationSpec, StepInput
from jaxport.domain.targets.litert import SHARED_FILE, shared_signatures, signature_key
from jaxport.adapters.runtime_logs import native_info_silenced
from ai_edge_litert.compiled_model import CompiledModel, CpuKernelMode, CpuOptions, HardwareAccelerator, Options


def runs_compiled(manifest: ConvertedManifest) -> bool:
    """Whether :class:`LiteRtStepRunner` runs the directory: one shared model, every shape static."""
    if shared_signatures(manifest.target_details) is None:
        return False
    return not manifest.target_details["models"][SHARED_FILE].get("dynamic")


class LiteRtStepRunner:
    """Runs a converted directory's prefill and decode with LiteRT's ``CompiledModel`` and tensor buffers.

    Args:
        root: the directory (checked by the loader first: its files, digests and verification).
        manifest: its manifest, with a generation spec, its model shared (:func:`runs_compiled`).
        spec: the generation spec.
        options: the runtime options of :func:`jaxport.load_converted` for LiteRT: ``num_threads``
            (LiteRT's default otherwise) and ``xnnpack`` (False: LiteRT's builtin kernels).

    Attributes:
        cache: the cache's leaves, ``TensorBuffer``\\ s, after the last step (None before :meth:`start`).

    Raises:
        ArtifactError: LiteRT cannot open the model.
    """

    def __init__(self, root: str, manifest: ConvertedManifest, spec: GenerationSpec,
                 options: Mapping[str, Any] | None = None) -> None:
        self._spec = spec
        chosen = dict(options or {})
        threads, xnnpack = chosen.get("num_threads"), chosen.get("xnnpack", True)
        cpu = CpuOptions(num_threads=threads or 0, kernel_mode=None if xnnpack else CpuKernelMode.BUILTIN)
        with _litert_errors(model=SHARED_FILE), native_info_silenced(NOISE):
            self._model = CompiledModel.from_file(os.path.join(root, SHARED_FILE),
                                                  options=Options(HardwareAccelerator.CPU, cpu_options=cpu))
        self._steps: dict[str, list[_Signature]] = {}
        for name, inputs in spec.steps:
            function = manifest.function(name)
            sig = function.signature
            kinds = host_inputs(inputs, sig.in_avals)
            self._steps[name] = [
                _Signature(self._model, signature_key(name, variant_file(name, v.binding, ""), len(function.variants)),
                           kinds, sig.input_names, sig.output_names)
                for v in function.variants]
        self.cache: list[Any] | None = None
        self._spare: list[Any] = []
        self._first = True

    def start(self, batch: int) -> None:
        """Two sets of cache buffers for ``batch`` rows in LiteRT: the empty cache, and where the first
        step writes the next.

        Raises:
            GenerationError: no decode signature takes ``batch`` rows.
        """
        assert self._spec.max_length is not None
        shapes = [leaf.empty_shape(batch, self._spec.max_length) for leaf in self._spec.cache]
        decode = self._steps[self._spec.decode]
        fits = [s for s in decode if s.cache_shapes() == [tuple(x) for x in shapes]]
        if not fits:
            compiled = sorted({s.host_shapes[0][0] for s in decode if s.host_shapes and s.host_shapes[0]})
            raise GenerationError("prompt", f"a batch of {batch} prompts: the decode was compiled for batches "
                                            f"of {compiled} only (convert with dims for this batch size)")
        with self._quiet():
            self.cache = fits[0].cache_buffers(zeros=True)
            self._spare = fits[0].cache_buffers(zeros=False)

    def step(self, function: str, batch: StepBatch) -> np.ndarray:
        """Runs ``function`` on ``batch`` and the cache held; the new cache stays in LiteRT's buffers.

        Raises:
            GenerationError: no signature of ``function`` takes the step's shapes.
            ArtifactCallError: LiteRT failed while running.
        """
        assert self.cache is not None
        candidates = self._steps[function]
        arrays = step_arrays(batch, candidates[0].inputs)
        shapes = [a.shape for a in arrays]
        chosen = next((s for s in candidates if s.host_shapes == shapes), None)
        if chosen is None:
            raise GenerationError("prompt", f"{function!r} was compiled for the input shapes "
                                            f"{[s.host_shapes for s in candidates]}, not {shapes}")
        with self._quiet():
            logits = chosen.run(arrays, self.cache, self._spare)
        self._first = False
        self.cache, self._spare = self._spare, self.cache
        return last_logits(logits, batch.last)

    def __del__(self) -> None:
        """LiteRT's environment goes with the model, saying so on stderr: silenced as its creation was (at the
        process's exit, :func:`~jaxport.adapters.runtime_logs.native_info_silenced` silenced it already)."""
        if sys.is_finalizing() or not hasattr(self, "_steps"):
            return
        with native_info_silenced(NOISE):
            self._steps.clear()
            self.cache, self._spare, self._model = None, [], None

    def _quiet(self) -> AbstractContextManager[None]:
        """LiteRT's noise silenced until the first step has run (it creates its environment at first use)."""
        return native_info_silenced(NOISE) if self._first else contextlib.nullcontext()


class _Signature:
    """One signature of the shared model: its buffers for the step's host inputs and logits, and how
    the cache binds to it."""

    def __init__(self, model: Any, key: str, inputs: Sequence[HostInput], input_names: Sequence[str],
                 output_names: Sequence[str]) -> None:
        self.model = model
        self.key = key
        self.inputs = list(inputs)
        with _litert_errors(model=SHARED_FILE):
            listed = model.get_signature_list().get(key)
            if listed is None:
                raise ArtifactError(f"{SHARED_FILE}: the LiteRT model has no signature {key!r}")
            self._in = model.get_input_tensor_details(key)
            self._out = model.get_output_tensor_details(key)
        cache_at = [kind for kind, _, _ in inputs].index(StepInput.CACHE)
        count = len(input_names) - (len(inputs) - 1)
        self.host_names = list(input_names[:cache_at]) + list(input_names[cache_at + count:])
        self.cache_inputs = list(input_names[cache_at:cache_at + count])
        self.logits = output_names[0]
        self.cache_outputs = list(output_names[1:])
        self.host_shapes = [tuple(self._in[n]["shape"]) for n in self.host_names]
        self._host_buffers: list[Any] = []
        self._logits_buffer: Any = None

    def cache_shapes(self) -> list[tuple[int, ...]]:
        """The shape of each cache input."""
        return [tuple(self._in[n]["shape"]) for n in self.cache_inputs]

    def cache_buffers(self, *, zeros: bool) -> list[Any]:
        """A new set of buffers for the cache's leaves (zeros: filled with zeros, the empty cache)."""
        made = []
        with _litert_errors(model=SHARED_FILE):
            for name in self.cache_inputs:
                buffer = self.model.create_input_buffer_by_name(self.key, name)
                if zeros:
                    details = self._in[name]
                    buffer.write(np.zeros(details["shape"], details["dtype"]))
                made.append(buffer)
        return made

    def run(self, arrays: Sequence[np.ndarray], cache: Sequence[Any], into: Sequence[Any]) -> np.ndarray:
        """Runs the signature: ``arrays`` and ``cache`` in, the new cache into ``into``; the logits back."""
        with _litert_errors(self.key):
            if self._logits_buffer is None:
                self._host_buffers = [self.model.create_input_buffer_by_name(self.key, n) for n in self.host_names]
                self._logits_buffer = self.model.create_output_buffer_by_name(self.key, self.logits)
            for buffer, array in zip(self._host_buffers, arrays):
                buffer.write(array)
            self.model.run_by_name(self.key, {**dict(zip(self.host_names, self._host_buffers)),
                                              **dict(zip(self.cache_inputs, cache))},
                                   {self.logits: self._logits_buffer, **dict(zip(self.cache_outputs, into))})
            details = self._out[self.logits]
            flat = self._logits_buffer.read(int(np.prod(details["shape"])), np.dtype(details["dtype"]))
        logits: np.ndarray = np.asarray(flat).reshape(details["shape"])
        return logits

