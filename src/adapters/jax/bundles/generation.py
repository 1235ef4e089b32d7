"""A generative bundle's steps on JAX: each one jitted once, the cache donated to it.

:class:`JaxStepRunner` is the :class:`~jaxport.domain.generation.ports.StepRunner`
of a loaded :class:`~jaxport.adapters.jax.bundles.loaded.Bundle`. Each step
is ``jax.jit`` of the bundle's function with the cache donated
(``donate_argnums``), so XLA writes the new cache into the old one's buffers
(the module's results alias the donated inputs of the same shape) and the
old cache's arrays are deleted after each step. The step also picks each
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
from jaxport.domain.generation.spec import GenerationSpec, StepInput


class JaxStepRunner:
    """Runs a loaded bundle's prefill and decode with JAX, holding the cache on the device.

    Attributes:
        cache: the cache's flat leaves after the last step (None before :meth:`start`).
    """

    def __init__(self, bundle: Bundle, spec: GenerationSpec) -> None:
        self._spec = spec
        self._params = bundle.params
        self._steps = {name: _step(bundle.functions[name], bundle.manifest.function(name).takes_params, inputs)
                       for name, inputs in spec.steps}
        self.cache: list[jax.Array] | None = None

    def start(self, batch: int) -> None:
        """An empty cache (zeros) for ``batch`` rows, on the default device."""
        assert self._spec.max_length is not None
        self.cache = [jnp.zeros(leaf.empty_shape(batch, self._spec.max_length), leaf.dtype)
                      for leaf in self._spec.cache]

    def step(self, function: str, batch: StepBatch) -> np.ndarray:
        """Runs ``function``, donating the cache held; returns the logits of each row's last token."""
        jitted, arrays = self._steps[function]
        logits, self.cache = jitted(self._params, arrays(batch), self.cache, np.asarray(batch.last, np.int32))
        return np.asarray(logits)


def _step(exported: Exported, takes_params: bool, inputs: Sequence[StepInput]
          ) -> tuple[Callable[..., Any], Callable[[StepBatch], list[np.ndarray]]]:
    """The jitted step of ``exported`` and the maker of its non-cache inputs from a batch."""
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

    return jax.jit(run, donate_argnums=(2,)), arrays
