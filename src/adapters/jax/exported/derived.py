"""What an in-process export derives from its jaxpr, exported lazily when first needed: its VJP and its vmapped versions."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
from jax.extend import core as jex_core

from jaxport.adapters.jax.lowering.lower import ClosedJaxpr
from jaxport.domain.artifact.safety import DisabledSafetyCheck
from jaxport.adapters.jax.exported.exported import Exported
from jaxport.adapters.jax.placement import default_placements

#: ``jaxport.export``'s signature: the export service passes itself in, so this
#: module does not import it (no import cycle).
Exporter = Callable[..., Callable[..., Exported]]


def vjp_exporter(jaxpr: ClosedJaxpr, platforms: tuple[str, ...],
                 disabled_checks: Sequence[DisabledSafetyCheck], *,
                 export: Exporter) -> Callable[[Exported], Exported]:
    """A function that exports, with ``export``, the VJP of the primal whose jaxpr is ``jaxpr``.

    The VJP takes the flat primal arguments followed by one cotangent per
    flat primal output (``float0`` for integer outputs) and returns the
    cotangents of the flat primal inputs, as ``jax.export`` defines it.
    """

    def get_vjp(primal: Exported) -> Exported:
        fun = jex_core.jaxpr_as_fun(jaxpr)
        nr_primals = len(primal.in_avals)

        def vjp_flat(*args_and_cts: Any) -> Any:
            primals, cts = args_and_cts[:nr_primals], args_and_cts[nr_primals:]
            _, pullback = jax.vjp(fun, *primals)
            return pullback(list(cts))

        vjp_flat.__name__ = f"vjp_{primal.fun_name}"
        in_specs = [jax.ShapeDtypeStruct(a.shape, a.dtype) for a in primal.in_avals]
        ct_specs = [jax.ShapeDtypeStruct(a.shape, jex_core.primal_dtype_to_tangent_dtype(a.dtype))
                    for a in primal.out_avals]
        return export(_jit_with_primal_shardings(vjp_flat, primal), platforms=platforms,
                      disabled_checks=disabled_checks)(*in_specs, *ct_specs)

    return get_vjp


def _jit_with_primal_shardings(vjp_flat: Callable[..., Any], primal: Exported) -> Any:
    """``jax.jit`` of the VJP, laid out as the primal: inputs and cotangents as
    the primal's inputs and outputs, input cotangents as the primal's inputs."""
    if primal.nr_devices <= 1 or all(s is None for s in (*primal.in_shardings, *primal.out_shardings)):
        return jax.jit(vjp_flat)
    ins = default_placements(primal.in_shardings, primal.fun_name)
    outs = default_placements(primal.out_shardings, primal.fun_name)
    return jax.jit(vjp_flat, in_shardings=(*ins, *outs), out_shardings=ins)


#: Builds the export of the function mapped over axis 0 of the arguments
#: marked True, for one batch size.
BatchedExporter = Callable[[tuple[bool, ...], int], Exported]


def batched_exporter(fun_name: str, jaxpr: ClosedJaxpr, platforms: tuple[str, ...],
                     disabled_checks: Sequence[DisabledSafetyCheck],
                     in_avals: Sequence[Any], *, export: Exporter) -> BatchedExporter:
    """A function that exports, with ``export``, ``jax.vmap`` of the primal whose jaxpr is ``jaxpr``.

    The result maps over axis 0 of the flat arguments marked True and
    returns every result batched along axis 0. It is exact: it is JAX's own
    batching of the original function, lowered once per batch size.
    """
    cache: dict[tuple[tuple[bool, ...], int], Exported] = {}

    def get_batched(batched: tuple[bool, ...], size: int) -> Exported:
        key = (batched, size)
        if key not in cache:
            fun = jex_core.jaxpr_as_fun(jaxpr)

            def flat(*args: Any) -> tuple[Any, ...]:
                return tuple(fun(*args))

            flat.__name__ = f"vmap_{fun_name}"
            vmapped = jax.vmap(flat, in_axes=tuple(0 if b else None for b in batched))
            specs = [jax.ShapeDtypeStruct(((size,) if b else ()) + tuple(a.shape), a.dtype)
                     for a, b in zip(in_avals, batched)]
            cache[key] = export(jax.jit(vmapped), platforms=platforms,
                                disabled_checks=disabled_checks)(*specs)
        return cache[key]

    return get_batched
