"""Tracing and lowering a JAX function for export (the :class:`~jaxport.domain.ports.Lowerer` port)."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.extend.source_info_util
from jax.core import ShapedArray
from jax.sharding import NamedSharding

import jaxport
from jaxport.domain.errors import HostCallbackError
from jaxport.domain.ports import LoweredModule
from jaxport.adapters.jax import internals as jax_internals

#: A lowered function's closed jaxpr: ``jax.extend.core.ClosedJaxpr`` up to JAX 0.11; JAX 0.12 merged
#: it into ``Jaxpr`` (its ``ClosedJaxpr`` is an alias that type checkers do not see), so the
#: annotation names neither.
ClosedJaxpr = Any

# Source locations in exported modules should point at the user's code, not
# at jaxport's frames between the user and JAX (as with jax.export): the whole package is excluded.
jax.extend.source_info_util.register_exclusion(os.path.dirname(os.path.abspath(jaxport.__file__)))


@dataclass(frozen=True, slots=True, eq=False)
class JaxLowering:
    """What lowering a function for export produced.

    ``module`` is the cached ``ir.Module`` of the lowering; it must not be
    changed (JAX may reuse it), only read or copied.
    """

    fun_name: str
    module: LoweredModule
    in_tree: jax.tree_util.PyTreeDef
    out_tree: jax.tree_util.PyTreeDef
    in_avals: tuple[ShapedArray, ...]
    out_avals: tuple[ShapedArray, ...]
    platforms: tuple[str, ...]
    kept_var_idx: tuple[int, ...]
    nr_devices: int
    ordered_effects: tuple[Any, ...]
    unordered_effects: tuple[Any, ...]
    uses_dim_vars: bool
    has_platform_index: bool
    dim_vars: tuple[str, ...]
    in_shardings: tuple[Any, ...]
    out_shardings: tuple[Any, ...]
    jaxpr: ClosedJaxpr


def as_jitted(fun: Callable[..., Any]) -> jax.stages.Wrapped:
    """``fun`` itself if it is the result of ``jax.jit``, else ``jax.jit(fun)``."""
    if isinstance(fun, jax.stages.Wrapped):
        return fun
    if not callable(fun):
        raise TypeError(f"Function to be exported must be callable, got {type(fun).__name__}")
    return jax.jit(fun)


class JaxLowerer:
    """Lowers a function (jitted here unless it is already) to StableHLO for a set of platforms."""

    def lower(self, fun: Callable[..., Any], platforms: tuple[str, ...],
              args_specs: Sequence[Any], kwargs_specs: Mapping[str, Any],
              override_lowering_rules: tuple[tuple[Any, Any], ...] | None = None) -> JaxLowering:
        """Traces ``fun`` at the given specs and lowers it for ``platforms``.

        Raises:
            TypeError: ``fun`` is not callable.
            HostCallbackError: the function uses host callbacks.
        """
        traced = as_jitted(fun).trace(*args_specs, **kwargs_specs)
        lowered = jax_internals.lower_for_export(traced, platforms, override_lowering_rules)
        module, args, lowered_platforms = jax_internals.lowering_internals(lowered)
        if args.get("host_callbacks") or args.get("keepalive"):
            raise HostCallbackError(traced.fun_name)
        in_avals = tuple(jax.tree_util.tree_leaves(lowered.in_avals))
        kept = args.get("kept_var_idx")
        kept_var_idx = tuple(sorted(kept)) if kept is not None else tuple(range(len(in_avals)))
        poly = args["shape_poly_state"]
        in_shardings = _expand_in_shardings(args["in_shardings"], kept_var_idx, len(in_avals))
        out_avals = tuple(args["global_out_avals"])
        out_shardings = tuple(_specified(s) for s in args["out_shardings"])
        in_tree, out_tree = lowered.in_tree, lowered.out_tree
        high = jax_internals.high_types(lowered)
        if high is not None:  # as jax.export 0.12.1: the user-visible types, trees and shardings' specs
            in_tree, hi_in, out_tree, hi_out = high
            in_avals, in_shardings = _visible(in_avals, in_shardings, hi_in, result=False)
            out_avals, out_shardings = _visible(out_avals, out_shardings, hi_out, result=True)
        return JaxLowering(
            fun_name=traced.fun_name,
            module=module,
            in_tree=in_tree,
            out_tree=out_tree,
            in_avals=in_avals,
            out_avals=out_avals,
            platforms=lowered_platforms,
            kept_var_idx=kept_var_idx,
            nr_devices=int(args["num_devices"]),
            ordered_effects=tuple(args["ordered_effects"]),
            unordered_effects=tuple(args["unordered_effects"]),
            uses_dim_vars=bool(poly.uses_dim_vars),
            has_platform_index=bool(poly.has_platform_index_argument),
            dim_vars=tuple(poly.dim_vars[1:] if poly.has_platform_index_argument else poly.dim_vars),
            in_shardings=in_shardings,
            out_shardings=out_shardings,
            jaxpr=traced.jaxpr,
        )


def _visible(avals: tuple[ShapedArray, ...], shardings: tuple[Any, ...], high: tuple[Any, ...], *, result: bool
             ) -> tuple[tuple[ShapedArray, ...], tuple[Any, ...]]:
    """The avals and shardings a caller sees: each high type (an unreduced-sharded array) for its
    lowered one, a named sharding with the high type's spec (a result without one: the high type's)."""
    visible_avals, visible_shardings = [], []
    for aval, sharding, hi in zip(avals, shardings, high, strict=True):
        if not jax_internals.is_high(hi):
            visible_avals.append(aval)
            visible_shardings.append(sharding)
            continue
        if not isinstance(hi, ShapedArray):
            raise NotImplementedError(f"Exporting the high type {hi} is not supported")
        visible_avals.append(hi)
        visible_shardings.append(sharding.update(spec=hi.sharding.spec) if isinstance(sharding, NamedSharding)
                                 else hi.sharding if result else sharding)
    return tuple(visible_avals), tuple(visible_shardings)


def _specified(sharding: Any) -> Any:
    """``None`` for JAX's "unspecified" sharding marker, else the sharding."""
    return None if jax_internals.is_unspecified_sharding(sharding) else sharding


def _expand_in_shardings(shardings: Sequence[Any], kept: tuple[int, ...], nr_args: int) -> tuple[Any, ...]:
    """One sharding (or None) per argument: the lowering lists only the kept ones."""
    if len(shardings) == nr_args:
        return tuple(_specified(s) for s in shardings)
    by_index = dict(zip(kept, shardings, strict=True))
    return tuple(_specified(by_index[i]) if i in by_index else None for i in range(nr_args))
