"""What :func:`jaxport.load_bundle` gives back: a :class:`Bundle` of :class:`BoundFunction`\\ s."""

from __future__ import annotations

import functools
import types
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import jax
from jax.core import ShapedArray

from jaxport.domain.bundle.manifest import Manifest
from jaxport.domain.errors import CallError
from jaxport.domain.calls.front import CallChecker, call_checker, flatten_call, with_weights_bound
from jaxport.domain.calls.signature import Signature
from jaxport.domain.symbolic import ShapeAssertionError
from jaxport.adapters.jax.bundles.weights import placed_leaves
from jaxport.adapters.jax.exported.exported import Exported


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

        A bad eager call raises what the call front of every target raises
        for it (:class:`~jaxport.application.conversion.model.ConvertedCall`,
        :func:`~jaxport.application.conversion.jax_model.jax_model`): the same type and
        message, naming the caller's arguments only (``args[0]`` is the first
        one after the weights). Under a JAX transformation, JAX's checks.

        Raises:
            TreeMismatchError, RankMismatchError, DtypeMismatchError,
                ShapeMismatchError, ShapeAssertionError: the call does not
                match the export. And what :meth:`Exported.call` raises.
        """
        try:
            if not self.takes_params:
                return self.exported.call(*args, **kwargs)
            return self.exported.call(self.params, *args, **kwargs)
        except (CallError, ShapeAssertionError):
            # A good call pays nothing for this: only a refused one is checked again by the front.
            self._check_eager(args, kwargs)
            raise

    @functools.cached_property
    def _front(self) -> tuple[Signature, CallChecker]:
        """The caller's signature (the weights left out) and its parsed checks, as the call front has them."""
        caller = with_weights_bound(self.exported.record.signature, len(jax.tree_util.tree_leaves(self.params)),
                                    takes_weights=self.takes_params)
        return caller, call_checker(caller)

    def _check_eager(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """Raises the call front's error for a call's tree, and for an eager call of arrays the
        front's other checks (the leaves of a traced call are tracers: JAX's error stands)."""
        caller, check = self._front
        leaves, tree = jax.tree_util.tree_flatten((args, kwargs))
        if tree != self.in_tree:
            leaves = flatten_call(caller, args, kwargs, weights_bound=self.takes_params)
        if not any(isinstance(leaf, jax.core.Tracer) or not hasattr(leaf, "dtype") for leaf in leaves):
            check.check(leaves)

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

    @property
    def weight_leaves(self) -> list[Any]:
        """The weights' leaves, in the order the functions take them."""
        return jax.tree_util.tree_leaves(self.params)

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
