"""Exporting the batched (vmapped) version of an exported function, lazily, in process."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
from jax.extend import core as jex_core

from jaxport.adapters.jax.lowering.lower import ClosedJaxpr
from jaxport.domain.artifact.safety import DisabledSafetyCheck
from jaxport.adapters.jax.exported.exported import Exported
from jaxport.adapters.jax.exported.vjp import Exporter

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
