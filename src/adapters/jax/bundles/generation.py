"""A generative bundle's steps on JAX: each one jitted once, the cache donated to it.

:class:`JaxStepRunner` is the :class:`~jaxport.domain.generation.ports.StepRunner`
of a loaded :class:`~jaxport.adapters.jax.bundles.loaded.Bundle`. Each step
is ``jax.jit`` of the bundle's function with the cache donated
(``donate_argnums``), so XLA writes the new cache into the old one's buffers
(the module's results alias the donated inputs of the same shape) and the
old cache's arrays are deleted after each step. Where requests join a running
batch (:meth:`JaxStepRunner.prefill_slots`), the prefill of requests that join together runs over an
empty cache of their rows, each row written into its slot of the held cache in the same jitted call
(compiled once per row count), and a decode over the
first rows alone (:meth:`JaxStepRunner.step_first`) runs on a slice of the cache written back in place, in
one jitted call too (compiled once per row count). The step also picks each
row's logits at its last token on the device, so only ``(rows, vocab)``
floats come back to the host.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxport.adapters.jax.bundles.loaded import Bundle
from jaxport.adapters.jax.exported.exported import Exported
from jaxport.adapters.numpy.steps import step_arrays
from jaxport.domain.generation.ports import StepBatch
from jaxport.domain.generation.slots import padded_rows, slot_axes
from jaxport.domain.generation.spec import GenerationSpec, StepInput


class JaxStepRunner:
    """Runs a loaded bundle's prefill and decode with JAX, holding the cache on the device.

    Attributes:
        cache: the cache's flat leaves after the last step (None before :meth:`start`).
        prefills_together: whether :meth:`prefill_slots` takes several rows (the prefill takes any batch).
    """

    def __init__(self, bundle: Bundle, spec: GenerationSpec) -> None:
        self._spec = spec
        self._params = bundle.params
        made = {name: _step(bundle.functions[name], bundle.manifest.function(name).takes_params, inputs)
                for name, inputs in spec.steps}
        self._steps = {name: (jax.jit(run, donate_argnums=(2,)), arrays) for name, (run, arrays, _) in made.items()}
        run, arrays, self.prefills_together = made[spec.prefill]
        self._slot = jax.jit(_into_slots(run, spec), donate_argnums=(2,)), arrays
        decode, decode_arrays, _ = made[spec.decode]
        symbolic = any(not isinstance(d, int) for a in bundle.functions[spec.decode].in_avals for d in a.shape)
        self._first = (jax.jit(_first_rows(decode, spec), donate_argnums=(2,)), decode_arrays) if symbolic else None
        self._axis0 = spec.cache[0].batch_axis or 0
        self.cache: list[jax.Array] | None = None
        self._empty: dict[int, Callable[[], list[jax.Array]]] = {}

    def start(self, batch: int) -> None:
        """An empty cache (zeros) for ``batch`` rows, on the default device."""
        empty = self._empty.get(batch)
        if empty is None:
            max_length = self._spec.max_length
            assert max_length is not None
            shapes = [(leaf.empty_shape(batch, max_length), leaf.dtype) for leaf in self._spec.cache]
            # One jitted call makes every leaf: a jnp.zeros per leaf is a dispatch each, before the first token.
            empty = self._empty[batch] = jax.jit(lambda: [jnp.zeros(shape, dtype) for shape, dtype in shapes])
        self.cache = empty()

    def step(self, function: str, batch: StepBatch) -> np.ndarray:
        """Runs ``function``, donating the cache held; returns the logits of each row's last token."""
        jitted, arrays = self._steps[function]
        logits, self.cache = jitted(self._params, arrays(batch), self.cache, np.asarray(batch.last, np.int32))
        return np.asarray(logits)

    def prefill_slots(self, slots: Sequence[int], function: str, batch: StepBatch) -> np.ndarray:
        """Runs the prefill on ``batch`` (a row per slot) over an empty cache of as many rows and writes
        each row into its slot of the cache held, donated (one jitted call: the other rows stay in place).
        The rows are rounded up to a power of two, the last repeated into its own slot, so that a prompt
        length compiles a few row counts, not one per count.

        Raises:
            GenerationError: a cache leaf has no batch axis (:func:`~jaxport.domain.generation.slots.slot_axes`).
        """
        assert function == self._spec.prefill and self.cache is not None
        rows = 1 << (len(slots) - 1).bit_length()
        padded = padded_rows(batch, rows)
        jitted, arrays = self._slot
        logits, self.cache = jitted(self._params, arrays(padded), self.cache, np.asarray(padded.last, np.int32),
                                    np.asarray(list(slots) + [slots[-1]] * (rows - len(slots)), np.int32))
        return np.asarray(logits)[:len(slots)]

    def step_first(self, function: str, batch: StepBatch) -> np.ndarray:
        """Runs the decode on ``batch`` and the first ``len(batch.tokens)`` rows of the cache held, donated
        (the other rows stay in place); returns the logits of each row's last token. A decode of a fixed
        batch runs every row, ``batch`` padded (:func:`~jaxport.domain.generation.slots.padded_rows`)."""
        assert self.cache is not None
        if self._first is None:  # a decode of a fixed batch: every row runs
            rows = len(batch.tokens)
            return self.step(function, padded_rows(batch, int(self.cache[0].shape[self._axis0])))[:rows]
        assert function == self._spec.decode
        jitted, arrays = self._first
        logits, self.cache = jitted(self._params, arrays(batch), self.cache, np.asarray(batch.last, np.int32))
        return np.asarray(logits)


def _first_rows(run: Callable[..., Any], spec: GenerationSpec) -> Callable[..., Any]:
    """``run`` (a decode) over the first rows of the cache, as many as its batch has, written back into
    them (along each leaf's batch axis: :func:`slot_axes` refuses a model without, when it is traced)."""
    def first(params: Any, arrays: list[jax.Array], cache: list[jax.Array], last: jax.Array
              ) -> tuple[jax.Array, list[jax.Array]]:
        rows, axes = last.shape[0], slot_axes(spec)
        part = [jax.lax.slice_in_dim(whole, 0, rows, axis=axis) for whole, axis in zip(cache, axes)]
        # The slices taken before the step reads them: else XLA copies every row of the cache to keep
        # what the slice reads apart from what the write back writes.
        logits, new = run(params, arrays, jax.lax.optimization_barrier(part), last)
        return logits, [jax.lax.dynamic_update_slice_in_dim(whole, part, 0, axis)
                        for whole, part, axis in zip(cache, new, axes)]

    return first


def _into_slots(run: Callable[..., Any], spec: GenerationSpec) -> Callable[..., Any]:
    """``run`` (a prefill) over an empty cache of as many rows as it has slots, each row of that cache
    written into its slot of a larger one (along each leaf's batch axis: :func:`slot_axes` refuses a model
    without, whose rows cannot be told apart, when it is traced)."""
    max_length = spec.max_length
    assert max_length is not None

    def into(params: Any, arrays: list[jax.Array], cache: list[jax.Array], last: jax.Array, slots: jax.Array
             ) -> tuple[jax.Array, list[jax.Array]]:
        rows, axes = slots.shape[0], slot_axes(spec)
        logits, new = run(params, arrays, [jnp.zeros(leaf.empty_shape(rows, max_length), leaf.dtype)
                                           for leaf in spec.cache], last)
        for i in range(rows):
            cache = [jax.lax.dynamic_update_slice_in_dim(whole, jax.lax.slice_in_dim(part, i, i + 1, axis=axis),
                                                         slots[i], axis)
                     for whole, part, axis in zip(cache, new, axes)]
        return logits, cache

    return into


def _step(exported: Exported, takes_params: bool, inputs: Sequence[StepInput]
          ) -> tuple[Callable[..., Any], Callable[[StepBatch], list[np.ndarray]], bool]:
    """The step of ``exported`` (to be jitted), the maker of its non-cache inputs from a batch, and
    whether it takes any batch (its tokens' first dimension is symbolic)."""
    args_tree = exported.in_tree.children()[0].children()
    skip = 1 if takes_params else 0
    cache_tree = args_tree[skip + list(inputs).index(StepInput.CACHE)]
    avals = list(exported.in_avals)
    at = sum(t.num_leaves for t in args_tree[:skip])
    kinds: list[tuple[StepInput, Any]] = []
    for kind, tree in zip(inputs, args_tree[skip:]):
        kinds.append((kind, avals[at]))
        at += tree.num_leaves

    def run(params: Any, arrays: list[jax.Array], cache: list[jax.Array], last: jax.Array
            ) -> tuple[jax.Array, list[jax.Array]]:
        given = iter(arrays)
        call = [jax.tree_util.tree_unflatten(cache_tree, cache) if kind is StepInput.CACHE else next(given)
                for kind, _ in kinds]
        logits, new_cache = exported.call(params, *call) if takes_params else exported.call(*call)
        if logits.ndim == 3:
            logits = logits[jnp.arange(logits.shape[0]), last]
        return logits.astype(jnp.float32), jax.tree_util.tree_leaves(new_cache)

    def arrays(batch: StepBatch) -> list[np.ndarray]:
        return step_arrays(batch, [(kind, str(aval.dtype), len(aval.shape)) for kind, aval in kinds])

    any_batch = any(kind is StepInput.TOKENS and not isinstance(aval.shape[0], int) for kind, aval in kinds)
    return run, arrays, any_batch
