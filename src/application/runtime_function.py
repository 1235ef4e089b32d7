"""An exported function called eagerly through a runtime of the caller's choice.

``RuntimeFunction(record, runtime)(*args, **kwargs)`` flattens the call by
the record's pytree, checks it with the domain (tree, ranks, dtypes,
shapes, dimension variables, constraints), hands the flat arrays to
``runtime.run`` and rebuilds the result pytree. Every runtime (JAX,
TensorFlow, IREE, a fake in tests) refuses a bad call with the same typed
error before it runs anything.
"""

from __future__ import annotations

from typing import Any

from ..domain.artifact import ArtifactRecord
from ..domain.runtime import Runtime
from ..domain.runtime_calls import call_signature, flatten_call, unflatten_results


class RuntimeFunction:
    """A callable exported function, run by ``runtime``.

    Args:
        record: the function's domain record.
        runtime: what runs it (see :mod:`jaxport.domain.runtime`).
        weights_bound: the record is a bundle's function with its weights
            bound by the runtime (:func:`~jaxport.domain.runtime_calls.with_weights_bound`).

    Raises:
        ArtifactError: the record's shapes or constraints do not parse.
    """

    def __init__(self, record: ArtifactRecord, runtime: Runtime, *, weights_bound: bool = False) -> None:
        self.record = record
        self.runtime = runtime
        self.weights_bound = weights_bound
        self._signature = call_signature(record)
        self.__name__ = record.function_name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """The function's result for ``args`` and ``kwargs`` (arrays, in the exported pytree).

        Returns:
            The result pytree of plain tuples, lists, dicts and None, with the
            runtime's host arrays as leaves.

        Raises:
            TreeMismatchError, RankMismatchError, DtypeMismatchError,
            ShapeMismatchError, ShapeAssertionError: the call does not match
                the export (checked before anything runs).
            JaxportError: the runtime cannot run the call (the subclass says why).
        """
        leaves = flatten_call(self.record, args, kwargs, weights_bound=self.weights_bound)
        return self.call_flat(leaves)

    def call_flat(self, leaves: list[Any]) -> Any:
        """The result pytree for the flat arguments ``leaves``, checked as :meth:`__call__` does."""
        return unflatten_results(self.record, self.run_flat(leaves))

    def run_flat(self, leaves: list[Any]) -> list[Any]:
        """The flat results for the flat arguments ``leaves``, checked as :meth:`__call__` does."""
        dims = self._signature.check(leaves)
        return list(self.runtime.run(self.record, leaves, dims))

    def __repr__(self) -> str:
        return f"RuntimeFunction({self.record.function_name!r}, runtime={self.runtime.name!r})"


def jax_runtime() -> Runtime:
    """The JAX runtime, which runs records through :meth:`jaxport.Exported.call` (imports JAX)."""
    from ..adapters.jax_runtime import JaxRuntime
    from .exported import Exported

    return JaxRuntime(Exported)
