"""The arrays that runtimes take and give: host arrays, as the runtime port speaks them.

The runtime port itself is :class:`~jaxport.domain.targets.ports.TargetRuntime` (function
names, variants and flat arrays): one adapter per technology
(``adapters/jax/exported/runtime.py``, ``adapters/savedmodel/runtime.py``,
``adapters/iree/runtime.py``), each the only file that imports its
technology, each handed calls that the front
(:class:`jaxport.application.conversion.model.ConvertedCall`) has checked
already. Calls under ``jax.jit``, ``jax.grad`` and ``jax.vmap`` stay JAX's
primitive and never go through it.
"""

from __future__ import annotations

from typing import Protocol


class HostArray(Protocol):
    """An array in host memory, as runtimes take and give them (a NumPy array, for one).

    ``str(dtype)`` is the NumPy-style dtype name (``"float32"``, ``"bfloat16"``).
    """

    @property
    def shape(self) -> tuple[int, ...]:
        """The concrete dimensions."""
        ...

    @property
    def dtype(self) -> object:
        """The element type."""
        ...
