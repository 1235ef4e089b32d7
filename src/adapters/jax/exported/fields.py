"""The attributes that ``jax.export.Exported`` users read, on jaxport's :class:`~jaxport.Exported`.

:class:`ExportedFields` is the read-only face of an export under
``jax.export``'s names (``fun_name``, ``in_tree``, ``in_avals``,
``mlir_module_serialized``...), its 2023 names (``lowering_platforms``...)
and its shardings as JAX objects. Each reads the export's record
(:class:`~jaxport.domain.artifact.record.ArtifactRecord`) or the JAX objects made
from it (:class:`~jaxport.adapters.jax.exported.jax_objects.JaxObjects`); none computes
anything of its own. What an export *does* (call, serialize, differentiate)
is :mod:`jaxport.adapters.jax.exported.exported`'s.
"""

from __future__ import annotations

import functools
from typing import Any

import jax
from jax.core import ShapedArray
from jax.sharding import AbstractMesh, Mesh

from jaxport.adapters.jax.records import hlo_sharding
from jaxport.adapters.mlir.module import MlirStableHlo
from jaxport.domain.artifact.record import ArtifactRecord
from jaxport.domain.artifact.safety import DisabledSafetyCheck
from jaxport.adapters.jax import placement
from jaxport.adapters.jax.exported.jax_objects import JaxObjects


class ExportedFields:
    """``jax.export.Exported``'s attributes, read from :attr:`record` and its JAX objects.

    The base of :class:`jaxport.Exported`, which provides both.
    """

    #: What the export is, in the artifact's terms.
    record: ArtifactRecord

    @property
    def _jax(self) -> JaxObjects:
        """The JAX objects of :attr:`record` (made on first use by :class:`jaxport.Exported`)."""
        raise NotImplementedError

    @property
    def fun_name(self) -> str:
        """The name of the exported function, for messages."""
        return self.record.function_name

    @property
    def in_tree(self) -> jax.tree_util.PyTreeDef:
        """The pytree of ``(args, kwargs)`` the function was exported for."""
        return self._jax.in_tree

    @property
    def in_avals(self) -> tuple[ShapedArray, ...]:
        """The flat input abstract values."""
        return self._jax.in_avals

    @property
    def out_tree(self) -> jax.tree_util.PyTreeDef:
        """The pytree of the results."""
        return self._jax.out_tree

    @property
    def out_avals(self) -> tuple[ShapedArray, ...]:
        """The flat output abstract values."""
        return self._jax.out_avals

    @property
    def in_shardings(self) -> tuple[Any, ...]:
        """One sharding per flat input (None: unspecified)."""
        return self._jax.in_shardings

    @property
    def out_shardings(self) -> tuple[Any, ...]:
        """One sharding per flat output (None: unspecified)."""
        return self._jax.out_shardings

    @property
    def ordered_effects(self) -> tuple[Any, ...]:
        """The effects that ``main`` threads a token for, in order."""
        return self._jax.ordered_effects

    @property
    def unordered_effects(self) -> tuple[Any, ...]:
        """The other effects of the module."""
        return self._jax.unordered_effects

    @property
    def nr_devices(self) -> int:
        """The number of devices the module was lowered for."""
        return self.record.nr_devices

    @property
    def platforms(self) -> tuple[str, ...]:
        """The platforms it was lowered for (``"cpu"``, ``"cuda"``...)."""
        return self.record.platforms

    @property
    def disabled_safety_checks(self) -> tuple[DisabledSafetyCheck, ...]:
        """The checks disabled at export."""
        return self.record.disabled_checks

    @property
    def mlir_module_serialized(self) -> bytes:
        """The StableHLO portable artifact (made on first read for an in-process export)."""
        return self.record.mlir_module_serialized

    @property
    def calling_convention_version(self) -> int:
        """The version of ``main``'s calling convention."""
        return self.record.calling_convention_version

    @property
    def module_kept_var_idx(self) -> tuple[int, ...]:
        """The sorted indices of the flat inputs that ``main`` takes."""
        return self.record.module_kept_var_idx

    @property
    def uses_global_constants(self) -> bool:
        """Whether ``main`` needs shape refinement (symbolic dimensions, a platform index)."""
        return self.record.uses_global_constants

    @property
    def lowering_platforms(self) -> tuple[str, ...]:
        """The 2023 name of :attr:`platforms`."""
        return self.platforms

    @property
    def mlir_module_serialization_version(self) -> int:
        """The 2023 name of :attr:`calling_convention_version`."""
        return self.calling_convention_version

    serialization_version = mlir_module_serialization_version

    @property
    def uses_shape_polymorphism(self) -> bool:
        """The 2023 name of :attr:`uses_global_constants`."""
        return self.uses_global_constants

    def mlir_module(self) -> str:
        """The module as StableHLO text."""
        return MlirStableHlo.to_text(self.mlir_module_serialized)

    @functools.cached_property
    def in_shardings_hlo(self) -> tuple[Any, ...]:
        """The flat input shardings as XLA's ``HloSharding``s, None where unspecified.

        As ``jax.export.Exported.in_shardings_hlo`` holds them for a
        deserialized artifact (an export that ``jax.export`` made in the
        process leaves them all None). They name neither the mesh nor its
        devices: to place arguments, use :meth:`in_shardings_jax`.
        """
        return tuple(hlo_sharding(s, a.ndim) for s, a in zip(self.in_shardings, self.in_avals))

    @functools.cached_property
    def out_shardings_hlo(self) -> tuple[Any, ...]:
        """The flat output shardings as XLA's ``HloSharding``s (see :attr:`in_shardings_hlo`)."""
        return tuple(hlo_sharding(s, a.ndim) for s, a in zip(self.out_shardings, self.out_avals))

    def in_shardings_jax(self, mesh: Mesh | AbstractMesh | None = None) -> tuple[Any, ...]:
        """The recorded input shardings over ``mesh``, for ``jax.device_put`` or ``jax.jit``.

        Without ``mesh``, the recorded ones over their abstract mesh (as JAX 0.12's).

        Raises:
            MeshMismatchError: ``mesh``'s axes differ from the exported mesh's.
        """
        return placement.for_mesh(self.in_shardings, mesh)

    def out_shardings_jax(self, mesh: Mesh | AbstractMesh) -> tuple[Any, ...]:
        """The recorded output shardings over ``mesh`` (see :meth:`in_shardings_jax`)."""
        return placement.for_mesh(self.out_shardings, mesh)

    def __str__(self) -> str:
        return f"Exported(fun_name={self.fun_name}, ...)"

    def __repr__(self) -> str:
        ins = ", ".join(str(a.str_short()) for a in self.in_avals)
        outs = ", ".join(str(a.str_short()) for a in self.out_avals)
        return (f"Exported(fun_name={self.fun_name!r}, ({ins}) -> ({outs}), "
                f"platforms={self.platforms}, nr_devices={self.nr_devices})")
