"""A loaded model: its exported functions, its weights bound, its metadata."""

from __future__ import annotations

import types
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import jax

from ..domain.bundle_manifest import Manifest
from .bundle_weights import checked_leaves, place_leaves
from .exported import Exported
from .pytree_registry import default_registry


class BoundFunction:
    """A bundle's function with the bundle's weights bound as its first argument.

    Calling it calls ``exported.call(params, *args, **kwargs)`` (or, for a
    function that takes no weights, ``exported.call(*args, **kwargs)``):
    eagerly, under ``jax.jit``, ``jax.vmap``, ``jax.grad`` with respect to
    the other arguments, and with symbolic shapes.
    """

    def __init__(self, exported: Exported, params: Any, takes_params: bool) -> None:
        self.exported = exported
        self.params = params
        self.takes_params = takes_params
        self.__name__ = exported.fun_name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.takes_params:
            return self.exported.call(self.params, *args, **kwargs)
        return self.exported.call(*args, **kwargs)

    def __repr__(self) -> str:
        return f"BoundFunction({self.exported!r}, takes_params={self.takes_params})"


class Bundle(Mapping[str, BoundFunction]):
    """A model loaded by :func:`jaxport.load_bundle`: a mapping of names to bound functions.

    ``bundle["predict"](x)`` calls ``predict`` with the bundle's weights;
    ``bundle.functions["predict"]`` is the :class:`Exported` that takes the
    weights explicitly (so ``jax.grad`` with respect to the weights works,
    when the bundle was saved with ``vjp_order >= 1``).

    Attributes:
        functions: names -> :class:`Exported` (read-only).
        params: the weights pytree, as JAX arrays.
        metadata: the metadata given at save (read-only).
        manifest: the bundle's manifest record.
    """

    def __init__(self, manifest: Manifest, functions: Mapping[str, Exported], params: Any,
                 placements: Sequence[Any]) -> None:
        self.manifest = manifest
        self.functions: Mapping[str, Exported] = types.MappingProxyType(dict(functions))
        self.params = params
        self.metadata: Mapping[str, Any] = types.MappingProxyType(dict(manifest.metadata))
        self._placements = tuple(placements)
        self._bound = {e.name: BoundFunction(self.functions[e.name], params, e.takes_params)
                       for e in manifest.functions}

    def __getitem__(self, name: str) -> BoundFunction:
        try:
            return self._bound[name]
        except KeyError:
            raise KeyError(f"The bundle has no function {name!r}; it has {sorted(self._bound)}") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._bound)

    def __len__(self) -> int:
        return len(self._bound)

    def with_params(self, params: Any) -> Bundle:
        """The same functions with other weights, checked like at save and placed like these.

        Raises:
            BundleMismatchError: the new weights' tree, shapes or dtypes differ
                from the bundle's; the message names the key path.
        """
        leaves = checked_leaves(self.manifest.params_tree, self.manifest.weights, params,
                                default_registry())
        placed = place_leaves(leaves, self._placements)
        tree = jax.tree_util.tree_structure(self.params)
        return Bundle(self.manifest, self.functions, jax.tree_util.tree_unflatten(tree, placed),
                      self._placements)

    def __repr__(self) -> str:
        size = self.manifest.total_weight_bytes
        return f"Bundle(functions={list(self._bound)}, weights={len(self.manifest.weights)} arrays, {size} bytes)"
