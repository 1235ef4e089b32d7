"""``jaxport.export``: the export service of the composition root, for a JAX function."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from jaxport.adapters.jax import internals as jax_internals
from jaxport.adapters.jax.exported.exported import Exported
from jaxport.adapters.jax.installed import require_jax
from jaxport.application import wiring
from jaxport.domain.artifact.safety import DisabledSafetyCheck


def default_export_platform() -> str:
    """The platform an export targets when none is given: the default backend's,
    one of ``'cpu'``, ``'cuda'``, ``'rocm'``, ``'tpu'`` (as ``jax.export.default_export_platform``).
    """
    return jax_internals.default_export_platform()


def export(fun: Callable[..., Any], *, platforms: Sequence[str] | None = None,
           disabled_checks: Sequence[DisabledSafetyCheck] = (),
           lowering_platforms: Sequence[str] | None = None,
           _override_lowering_rules: Sequence[tuple[Any, Any]] | None = None) -> Callable[..., Exported]:
    """Exports a JAX function for serialization and later calls.

    Args:
        fun: the result of ``jax.jit`` (its shardings and static arguments are
            respected) or any callable, which is jitted first.
        platforms: the platforms to lower for, a subset of ``"cpu"``,
            ``"cuda"``, ``"rocm"``, ``"tpu"``; default: the default backend.
            With more than one, ``main`` takes the platform index first.
        disabled_checks: safety checks to skip.
        lowering_platforms: the 2023 name of ``platforms``.
        _override_lowering_rules: private, as in ``jax.export``: pairs of a
            primitive and a lowering rule that replaces JAX's for this export.

    Returns:
        A function of ``*args_specs, **kwargs_specs`` (pytrees of
        ``jax.ShapeDtypeStruct`` or arrays) that returns an :class:`Exported`.

    >>> import jax.numpy as jnp, numpy as np
    >>> exp = export(jnp.sin)(np.zeros((4,), np.float32))
    >>> exp.in_avals
    (ShapedArray(float32[4]),)

    Raises:
        MissingExtraError: the installed JAX is outside the range jaxport is tested on (at once,
            not from the function returned; without JAX, ``jaxport.export`` itself raises it).
    """
    require_jax()
    if platforms is not None and lowering_platforms is not None:
        raise ValueError("Pass platforms= or its 2023 name lowering_platforms=, not both")
    chosen = platforms if platforms is not None else lowering_platforms
    if isinstance(chosen, str):
        raise TypeError(f"platforms= must be a sequence of platform names, got the string {chosen!r}")
    return wiring.export_service().exporter(fun, platforms=chosen, disabled_checks=disabled_checks,
                                            override_lowering_rules=_override_lowering_rules)
