"""The record of a serialized module given with its signature, as JAX's back-compatibility data keeps them.

:meth:`jaxport.Exported.from_module` makes an export of it; this module makes
its record and JAX objects (what :func:`~jaxport.adapters.jax.exported.jax_objects.in_process_record`
records for an export made in this process).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
from jax.core import ShapedArray

from jaxport.adapters.mlir.module import MlirStableHlo
from jaxport.domain.artifact.record import ArtifactRecord
from jaxport.domain.artifact.module_format import check_portable_artifact
from jaxport.domain.artifact.platforms import normalize_platforms
from jaxport.domain.artifact.safety import DisabledSafetyCheck
from jaxport.adapters.jax.exported.jax_objects import JaxObjects, in_process_record


def recorded_module(module: bytes, *, in_specs: Sequence[Any], out_specs: Any, platforms: Sequence[str],
                    calling_convention_version: int, nr_devices: int, kwargs_specs: dict[str, Any] | None,
                    fun_name: str, disabled_checks: Sequence[DisabledSafetyCheck]
                    ) -> tuple[ArtifactRecord, JaxObjects]:
    """The record and the JAX objects of ``module``, whose ``main`` takes every argument.

    The arguments are those of :meth:`jaxport.Exported.from_module`.

    Raises:
        ArtifactError: ``module`` is not a StableHLO portable artifact.
    """
    check_portable_artifact(module, newest_readable=MlirStableHlo.newest_readable_version())
    tree_map = jax.tree_util.tree_map
    in_avals, in_tree = jax.tree_util.tree_flatten(
        (tuple(tree_map(_aval, tuple(in_specs))), tree_map(_aval, dict(kwargs_specs or {}))))
    out_avals, out_tree = jax.tree_util.tree_flatten(tree_map(_aval, out_specs))
    plats = normalize_platforms(platforms)
    symbolic = any(not all(isinstance(d, int) for d in a.shape) for a in in_avals)
    objects = JaxObjects(in_tree, tuple(in_avals), out_tree, tuple(out_avals),
                         (None,) * len(in_avals), (None,) * len(out_avals))
    record = in_process_record(
        objects, bytes(module), function_name=fun_name, nr_devices=nr_devices, platforms=plats,
        disabled_checks=tuple(disabled_checks), calling_convention_version=calling_convention_version,
        module_kept_var_idx=tuple(range(len(in_avals))),
        uses_global_constants=symbolic or len(plats) > 1)
    return record, objects


def _aval(spec: Any) -> ShapedArray:
    return ShapedArray(tuple(spec.shape), spec.dtype)
