"""A loaded directory (``jaxport.load_converted``, a bundle on JAX): one model type for every target.

:class:`ConvertedModel` is what :class:`~.loader.ConvertedLoader` gives for any
directory jaxport converted, and :func:`~.jax_model.jax_model` for a bundle or an
artifact run by JAX. Every call is checked in front of the runtime
(:class:`ConvertedCall`), so one bad call gets the same error and message on
every target.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from jaxport.domain.converted.manifest import ConvertedFunction, ConvertedManifest, Variant
from jaxport.domain.calls.front import call_checker, flatten_call, unflatten_results

if TYPE_CHECKING:  # the ports only type: loading a directory creates none of their classes
    from jaxport.domain.generation.ports import StepRunner
    from jaxport.domain.generation.spec import GenerationSpec
    from jaxport.domain.opened_directory import OpenedDirectory
    from jaxport.domain.targets.ports import TargetRuntime


class ConvertedCall:
    """One function of a converted directory: ``model["predict"](x)``.

    Each call is checked first (pytree, dtypes, ranks, shapes, dimension
    variables, constraints, the compiled variant) with the errors of
    :mod:`jaxport.errors`; the runtime only runs. Results are NumPy arrays in
    the function's result pytree (a custom node comes back as a tuple).
    """

    def __init__(self, function: ConvertedFunction, runtime: TargetRuntime) -> None:
        self.function = function
        self.runtime = runtime
        self.signature = function.signature
        self._check = call_checker(self.signature)
        self.__name__ = function.name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """The function's result for ``args`` and ``kwargs``.

        Raises:
            TreeMismatchError, RankMismatchError, DtypeMismatchError,
            ShapeMismatchError, ShapeAssertionError, UncompiledSizeError: the
                call does not match the export or no variant was made for its sizes.
            JaxportError: the runtime failed (the subclass says why).
        """
        leaves = flatten_call(self.signature, args, kwargs)
        return unflatten_results(self.signature, self.run_flat(leaves))

    def call_flat(self, leaves: list[Any]) -> Any:
        """The result pytree for the caller's flat arrays, checked as :meth:`__call__` does."""
        return unflatten_results(self.signature, self.run_flat(leaves))

    def run_flat(self, leaves: list[Any]) -> list[Any]:
        """The flat results for the caller's flat arrays, checked as :meth:`__call__` does."""
        return list(self.runtime.run(self.function.name, self.variant_of(leaves), leaves))

    def variant_of(self, leaves: list[Any]) -> Variant:
        """The variant that runs the caller's flat arrays, checked as :meth:`__call__` does."""
        return self.function.variant_for(self._check.check(leaves))

    def __repr__(self) -> str:
        return f"ConvertedCall({self.function.name!r})"


class ConvertedModel(Mapping[str, ConvertedCall]):
    """The functions of a converted directory, the same type for every target.

    Attributes:
        target: the target's name (``"savedmodel"``, ``"iree"``).
        functions: names -> what was converted of each (signature, variants).
        params: the weights by key path (``"dense/w"``): read-only NumPy views
            of the weights file where the directory keeps one (IREE, ONNX); where
            the target holds them in its own form, what its runtime reads back (a
            SavedModel's variables); empty where they are constants of each model (LiteRT).
        manifest: the directory's manifest.
        directory: the directory it was loaded from, opened (None: a model made of loaded objects).
        options: the runtime options it was loaded with.
    """

    def __init__(self, manifest: ConvertedManifest, runtime: TargetRuntime, params: Mapping[str, Any], *,
                 directory: OpenedDirectory[Any] | None = None, options: Mapping[str, Any] | None = None,
                 steps: Callable[[ConvertedModel, GenerationSpec], StepRunner | None] | None = None) -> None:
        self.manifest = manifest
        self.directory = directory
        self.options: Mapping[str, Any] = types.MappingProxyType(dict(options or {}))
        self._steps = steps
        self.target = manifest.target
        self.functions: Mapping[str, ConvertedFunction] = types.MappingProxyType(
            {f.name: f for f in manifest.functions})
        self.params: Mapping[str, Any] = types.MappingProxyType(dict(params))
        self._calls = {f.name: ConvertedCall(f, runtime) for f in manifest.functions}

    def __getitem__(self, name: str) -> ConvertedCall:
        try:
            return self._calls[name]
        except KeyError:
            raise KeyError(f"The directory has no function {name!r}; it has {sorted(self._calls)}") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._calls)

    def __len__(self) -> int:
        return len(self._calls)

    def own_steps(self, spec: GenerationSpec) -> StepRunner | None:
        """The runner of ``spec``'s steps that keeps the cache in the runtime this model was loaded on (its
        target's own), or None where the steps run through the checked calls."""
        return None if self._steps is None else self._steps(self, spec)

    def __repr__(self) -> str:
        return f"ConvertedModel(target={self.target!r}, functions={list(self._calls)})"
