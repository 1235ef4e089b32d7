"""What :func:`jaxport.load_bundle` gives back: a :class:`Bundle` of :class:`BoundFunction`\\ s."""

from __future__ import annotations

import functools
import types
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import jax
from jax.core import ShapedArray

from ..adapters.jax_avals import tree_differences
from ..domain.bundle import Manifest
from ..domain.errors import TreeMismatchError
from .bundle_placement import placed_leaves
from .exported import Exported


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

    @functools.cached_property
    def in_tree(self) -> jax.tree_util.PyTreeDef:
        """The pytree of ``(args, kwargs)`` that the caller gives (the weights left out)."""
        if not self.takes_params:
            return self.exported.in_tree
        args, kwargs = self.exported.in_tree.children()
        return jax.tree_util.treedef_tuple([jax.tree_util.treedef_tuple(args.children()[1:]), kwargs])

    @property
    def in_avals(self) -> tuple[ShapedArray, ...]:
        """The flat abstract values of the caller's arguments (the weights left out)."""
        avals = self.exported.in_avals
        return avals[len(avals) - self.in_tree.num_leaves:]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Calls the function with the weights bound.

        Raises:
            TreeMismatchError: the arguments' pytree differs from the caller's
                part of the exported one; the message counts and names the
                caller's arguments only. And what :meth:`Exported.call` raises.
        """
        if not self.takes_params:
            return self.exported.call(*args, **kwargs)
        try:
            return self.exported.call(self.params, *args, **kwargs)
        except TreeMismatchError:
            actual = jax.tree_util.tree_structure((args, kwargs))
            if actual == self.in_tree:
                raise  # the difference is not the caller's
            raise TreeMismatchError(self.exported.fun_name, tree_differences(actual, self.in_tree),
                                    weights_bound=True) from None

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
        placed = placed_leaves(self.manifest, params, self._placements)
        tree = jax.tree_util.tree_structure(self.params)
        return Bundle(self.manifest, self.functions, jax.tree_util.tree_unflatten(tree, placed),
                      self._placements)

    def __repr__(self) -> str:
        size = self.manifest.total_weight_bytes
        return f"Bundle(functions={list(self._bound)}, weights={len(self.manifest.weights)} arrays, {size} bytes)"
