"""Building an :class:`Exported` from a raw StableHLO module and its signature."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import jax
from jax.core import ShapedArray

from ..adapters.mlir_module import StableHloSerializer
from ..domain.module_format import check_portable_artifact
from ..domain.platforms import normalize_platforms
from ..domain.safety import DisabledSafetyCheck

if TYPE_CHECKING:  # Exported.from_module passes its class in: no import cycle
    from .exported import Exported


def _aval(spec: Any) -> ShapedArray:
    return ShapedArray(tuple(spec.shape), spec.dtype)


def exported_from_module(
        cls: type[Exported], module: bytes, *, in_specs: Sequence[Any], out_specs: Any, platforms: Sequence[str],
        calling_convention_version: int, nr_devices: int = 1, kwargs_specs: dict[str, Any] | None = None,
        fun_name: str = "module", disabled_checks: Sequence[DisabledSafetyCheck] = ()) -> Exported:
    """An :class:`Exported` for a serialized module recorded with its signature.

    This is how JAX's back-compatibility data records modules: the portable
    artifact, the argument and result specs, the platform and the calling
    convention. The module's ``main`` must take every argument (none was
    dropped as unused). The calling-convention version is recorded as given,
    without the window check that deserialization applies, so that modules
    recorded with older conventions (6, 7) can still be run.

    Args:
        module: the StableHLO portable artifact.
        in_specs: the positional arguments: a pytree of objects with ``shape``
            and ``dtype`` (``jax.ShapeDtypeStruct``, NumPy arrays).
        out_specs: the results, a pytree of the same kind.
        platforms: the platforms the module was lowered for.
        calling_convention_version: the convention of its ``main``.
        nr_devices: the number of devices it was lowered for.
        kwargs_specs: keyword arguments, if ``main`` takes some.
        fun_name: a name for messages.
        disabled_checks: safety checks to skip when calling.

    Raises:
        ArtifactError: ``module`` is not a StableHLO portable artifact.
    """
    check_portable_artifact(module, newest_readable=StableHloSerializer.newest_readable_version())
    in_avals, in_tree = jax.tree_util.tree_flatten(
        (tuple(jax.tree_util.tree_map(_aval, tuple(in_specs))),
         jax.tree_util.tree_map(_aval, dict(kwargs_specs or {}))))
    out_avals, out_tree = jax.tree_util.tree_flatten(jax.tree_util.tree_map(_aval, out_specs))
    plats = normalize_platforms(platforms)
    symbolic = any(not all(isinstance(d, int) for d in a.shape) for a in in_avals)
    return cls(
        fun_name=fun_name,
        in_tree=in_tree,
        in_avals=tuple(in_avals),
        out_tree=out_tree,
        out_avals=tuple(out_avals),
        in_shardings=(None,) * len(in_avals),
        out_shardings=(None,) * len(out_avals),
        nr_devices=nr_devices,
        platforms=plats,
        ordered_effects=(),
        unordered_effects=(),
        disabled_safety_checks=tuple(disabled_checks),
        mlir_module_serialized=bytes(module),
        calling_convention_version=calling_convention_version,
        module_kept_var_idx=tuple(range(len(in_avals))),
        uses_global_constants=symbolic or len(plats) > 1,
    )
