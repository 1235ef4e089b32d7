"""The runtime port: run one exported function eagerly on flat host arrays.

One small interface with an adapter per technology, chosen by the caller
(like httpx's transports): ``adapters/jax_runtime.py`` (JAX, through
``Exported.call``), ``adapters/tf_runtime.py`` (TensorFlow's
``XlaCallModule``, for SavedModels) and ``adapters/iree_runtime.py`` (IREE's
ahead-of-time modules). Each adapter is the only file that imports its
technology.

The port serves eager, array-in array-out calls (``jaxport run``, a bundle
called on another runtime, loaded IREE models, numerics checks). Calls under
``jax.jit``, ``jax.grad`` and ``jax.vmap`` stay JAX's primitive and never go
through it.

A runtime is handed calls that jaxport's domain code has already checked
(pytree structure, dtypes, ranks, shapes, dimension variables solved, user
constraints), so it may assume matching arguments: a runtime that does not
check shape assertions itself still refuses nothing less.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from .artifact import ArtifactRecord


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


class Runtime(Protocol):
    """Runs exported functions on flat host arrays."""

    #: The runtime's name in messages and reports (``"jax"``, ``"tf"``, ``"iree"``).
    name: str

    def run(self, function: ArtifactRecord, args: Sequence[HostArray],
            dims: Mapping[str, int]) -> list[HostArray]:
        """The flat results of ``function`` for its flat arguments ``args``.

        Args:
            function: the record of the function to run (one table: its own
                ``vjp`` is not used).
            args: one array per flat input of ``function``, already checked
                against its signature.
            dims: the value of each dimension variable, solved from ``args``
                (empty for a static function), for runtimes that run one
                compiled variant per binding.

        Raises:
            JaxportError: the runtime cannot run this call (the subclass and
                message say why: a platform it lacks, a size not compiled for).
        """
        ...
